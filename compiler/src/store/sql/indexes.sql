-- Secondary indexes of the knowledge index. A fresh index creates them after inserting its rows, which is
-- faster than maintaining them row by row; an existing index keeps them.
CREATE UNIQUE INDEX sources_by_path ON sources(path);
CREATE UNIQUE INDEX source_revisions_by_path ON source_revisions(path, revision);
CREATE UNIQUE INDEX chunks_by_id ON chunks(id);
CREATE INDEX chunks_by_source ON chunks(source_id, ordinal);
CREATE INDEX lint_results_by_path ON lint_results(path, line, col);
-- Readers look up labelled sources on every request; most projects have none.
CREATE INDEX sources_labelled ON sources(id) WHERE labels != '';
