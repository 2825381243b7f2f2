-- Migration 5: the approximate index of a vector size is made before a publish's transaction, not inside it. Made
-- inside, `CREATE INDEX IF NOT EXISTS` asked for the vectors' `SHARE` lock at every publish that wrote vectors, even
-- with the index there: two publishes of different projects at once (each holding its written vectors' lock, each
-- then asking for that one) deadlocked, and one publish held every other's writes until it ended.
-- `knowledge_vectors_index(size)` makes the index when there is none, in a transaction of its own; two first
-- publishes of a size at once are ordered by an advisory lock, and the second finds the index made.
CREATE OR REPLACE FUNCTION knowledge_vectors_index(size INTEGER) RETURNS void
LANGUAGE plpgsql AS $function$
BEGIN
    IF to_regclass('knowledge_vectors_hnsw_' || size) IS NOT NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('knowledge_vectors_hnsw'), size);
    IF EXISTS (SELECT 1 FROM pg_class WHERE relname = 'knowledge_vectors_hnsw_' || size) THEN
        RETURN;
    END IF;
    EXECUTE format('CREATE INDEX knowledge_vectors_hnsw_%s ON knowledge_vectors
                    USING hnsw ((embedding::vector(%s)) vector_cosine_ops) WHERE dimensions = %s', size, size, size);
END
$function$;
