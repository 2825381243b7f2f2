-- Migration 3: each chunk's title as a `tsvector` of its own, GIN indexed, so a keyword search whose terms match
-- many chunks ranks those whose title holds a term without reading every match (`PgSearch::keyword_pool`).
CREATE INDEX knowledge_chunks_title ON knowledge_chunks USING gin (to_tsvector('english', title));
