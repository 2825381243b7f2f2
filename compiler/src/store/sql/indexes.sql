-- Secondary indexes of the knowledge index. A fresh index creates them after inserting its rows, which is
-- faster than maintaining them row by row; an existing index keeps them.
CREATE UNIQUE INDEX sources_by_path ON sources(path);
-- Every build reads every source's stat row (`read_prior`): from this index, not from a table whose rows
-- carry each source's outline and lint facts (rust-rfcs: 18 pages of index against 540 of table).
CREATE INDEX sources_stat ON sources(path, size, mtime_ns, revision, chunk_count);
CREATE UNIQUE INDEX source_revisions_by_path ON source_revisions(path, revision);
CREATE UNIQUE INDEX chunks_by_id ON chunks(id);
CREATE INDEX chunks_by_source ON chunks(source_id, ordinal);
-- The embedding stage reads the chunks of the sources a build derived (a one-file edit at 69,000 chunks
-- otherwise scans them all: 240 ms).
CREATE INDEX sources_by_run ON sources(indexed_run);
-- Near-duplicate lint reads every signed chunk's MinHash signature (`read_chunk_texts`): from this index alone,
-- not from a table whose rows carry each chunk's text (`entity`, always NULL here, is a column so that the
-- read's condition on it needs no table row).
CREATE INDEX chunks_signatures ON chunks(source_id, start_line, end_line, minhash, entity)
    WHERE entity IS NULL AND minhash IS NOT NULL;
-- Search's kind filter names entity excerpts; few projects have any.
CREATE INDEX chunks_of_entities ON chunks(entity) WHERE entity IS NOT NULL;
CREATE INDEX lint_results_by_path ON lint_results(path, line, col);
-- Readers look up labelled sources on every request; most projects have none.
CREATE INDEX sources_labelled ON sources(id) WHERE labels != '';
CREATE INDEX entities_by_source ON entities(source_id);
CREATE INDEX entities_by_slug ON entities(slug);
CREATE INDEX citations_by_page ON citations(page, note);
CREATE INDEX citations_by_source ON citations(source_ref);
CREATE INDEX wiki_backlinks_by_page ON wiki_backlinks(page);
CREATE INDEX wiki_backlinks_by_origin ON wiki_backlinks(from_ref);
CREATE INDEX page_sources_by_path ON page_sources(path);
-- A page stored again reads and replaces its own rows (without it, each page scanned every page's).
CREATE INDEX page_sources_by_page ON page_sources(page);
-- The build drops vectors no entry uses any more: without this, a lookup per vector scanned every entry
-- (69,000 chunks: four minutes a build).
CREATE INDEX vector_entries_by_text ON vector_index_entries(model, text_hash);
-- A publish to a Postgres store finds the entries written by runs the store has not seen (without it,
-- reading each entry's run cost 170 ms at 69,000 entries).
CREATE INDEX vector_entries_by_run ON vector_index_entries(model, updated_run);
-- A declared kind reads its own few artifacts' rows (without it, each of the five kinds scanned every
-- page's row of the catalog, every edit that reaches a page).
CREATE INDEX storage_objects_by_kind ON storage_objects(kind);
