-- The floor under `replicas.py`: a hybrid search's own SQL against the Postgres store, with no MCP client, no
-- server and no build, run by pgbench (shipped with Postgres) from as many clients as the replica benchmark has:
--
--   pgbench -h HOST -U USER -n -M prepared -r -c 16 -j 2 -T 30 \
--     -D project=scale-0 -D lo=FIRST_SEQ -D hi=LAST_SEQ -f compiler/benches/postgres_floor.sql DATABASE
--
-- FIRST_SEQ and LAST_SEQ bound where the project's vectors' `chunk_seq` lie densely (`SELECT min(chunk_seq),
-- percentile_disc(0.99) WITHIN GROUP (ORDER BY chunk_seq) FROM knowledge_vectors WHERE project = 'scale-0'`): a
-- source published again since takes new numbers after other projects' rows, and a range reaching them makes the
-- first statement below walk those rows (14 searches/s instead of 119 on a store edited meanwhile). Each transaction is what `knowledge_search` asks the store for
-- two of the replica benchmark's words (the statements of `PgSearch::keyword_pool` and `PgSearch::nearest`, with
-- no permission filter, the pool of 50 and the rest of it asked for 100), with a stored vector of the project as
-- the query's. The idf weights' and the page lookups' small reads are left out, so this is a floor: tps is
-- searches per second.
\set i random(1, 16)
\set j random(1, 16)
\set s random(:lo, :hi)
SELECT embedding::text AS qv FROM knowledge_vectors WHERE project = :project AND chunk_seq >= :s ORDER BY chunk_seq LIMIT 1 \gset
SELECT (ARRAY['build','memory','ownership','network','error','proposal','install','parser','lifetime','token','archive','compress','thread','vector','permission','directory'])[:i] || ' ' || (ARRAY['build','memory','ownership','network','error','proposal','install','parser','lifetime','token','archive','compress','thread','vector','permission','directory'])[:j] AS words \gset
SELECT c.seq, c.id, c.title, c.text, c.hash, c.revision, c.start_offset, c.end_offset, c.start_line, c.end_line, s.uri, s.path, c.entity, s.project, top.score FROM ( SELECT c.seq, ts_rank('{0.1, 0.25, 0.5, 1.0}', c.document, q, 1)::float8 AS score FROM knowledge_chunks c, to_tsquery('english', replace(:words, ' ', ' | ')) AS q WHERE c.project = ANY(ARRAY[:project]) AND c.document @@ to_tsquery('english', replace(:words, ' ', ' & ')) AND TRUE AND TRUE ORDER BY score DESC, c.seq LIMIT 50 ) AS top JOIN knowledge_chunks c ON c.seq = top.seq JOIN knowledge_sources s ON s.id = c.source_id ORDER BY top.score DESC, c.seq;
SELECT c.seq, c.id, c.title, c.text, c.hash, c.revision, c.start_offset, c.end_offset, c.start_line, c.end_line, s.uri, s.path, c.entity, s.project, top.score FROM ( SELECT c.seq, ts_rank('{0.1, 0.25, 0.5, 1.0}', c.document, q, 1)::float8 AS score FROM knowledge_chunks c, to_tsquery('english', replace(:words, ' ', ' | ')) AS q WHERE c.project = ANY(ARRAY[:project]) AND c.document @@ q AND TRUE AND TRUE ORDER BY score DESC, c.seq LIMIT 100 ) AS top JOIN knowledge_chunks c ON c.seq = top.seq JOIN knowledge_sources s ON s.id = c.source_id ORDER BY top.score DESC, c.seq;
BEGIN;
SET LOCAL hnsw.iterative_scan = relaxed_order;
SET LOCAL hnsw.ef_search = 100;
SELECT c.seq, c.id, c.title, c.text, c.hash, c.revision, c.start_offset, c.end_offset, c.start_line, c.end_line, s.uri, s.path, c.entity, s.project, nearest.distance FROM ( SELECT v.chunk_seq, (v.embedding::vector(384) <=> :qv::text::vector(384))::float8 AS distance FROM knowledge_vectors v JOIN knowledge_chunks c ON c.seq = v.chunk_seq WHERE v.project = ANY(ARRAY[:project]) AND v.model = 'fake:384' AND v.dimensions = 384 AND TRUE AND TRUE ORDER BY v.embedding::vector(384) <=> :qv::text::vector(384) LIMIT 50 ) AS nearest JOIN knowledge_chunks c ON c.seq = nearest.chunk_seq JOIN knowledge_sources s ON s.id = c.source_id ORDER BY nearest.distance, c.seq;
COMMIT;
