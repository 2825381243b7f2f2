-- The knowledge index, format version 1. Documented in docs/schema.md.
-- Every table is created in one transaction with the first build; a format change rebuilds the index.
-- The secondary indexes are in indexes.sql: a fresh index creates them after its rows are in.

-- A rowid table, its keys in their own index: a value can be large (`log_due`, the lines a build owes the day's
-- log, is half a megabyte after a first build of rust-rfcs), and a table without rowids keeps whole rows in its
-- key's b-tree, so a lookup of any key read each overflowing row it compared with whole.
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per current source file.
CREATE TABLE sources (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,                 -- relative to the project root, '/'-separated; unique (indexes.sql)
    uri TEXT NOT NULL,                  -- the stable source ref: 'file://' || path, or an ingested source's ref
    kind TEXT NOT NULL,                 -- 'markdown' | 'text'
    mime TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    revision TEXT NOT NULL,             -- content hash (BLAKE3, 128 bits, hex)
    title TEXT NOT NULL,
    labels TEXT NOT NULL,               -- permission labels, sorted and comma-separated; '' when none
    chunk_count INTEGER NOT NULL,
    indexed_run TEXT NOT NULL,          -- the run that last derived this source's rows
    -- The large columns last: a column stored after one that overflows its page is read through the
    -- overflow pages, so the small ones (read for every source a page or a filter looks at) come first.
    outline TEXT NOT NULL,              -- JSON: kind, title, headings, links, front_matter
    lint_facts TEXT NOT NULL            -- JSON: the links, wikilinks, footnotes, anchors and markers lint checks
);

-- Every revision a source has had while indexed: an append-only history.
CREATE TABLE source_revisions (
    path TEXT NOT NULL,
    revision TEXT NOT NULL,             -- unique per path (indexes.sql)
    size INTEGER NOT NULL,
    first_run TEXT NOT NULL
);

-- When each line of each source first appeared: an append-only history, one row per source and run that
-- wrote lines it had never held, keyed by each line's words (`knowledge_queries::passages::line_key`);
-- `knowledge introduced` reads it with `runs`.
CREATE TABLE passage_origins (
    path TEXT NOT NULL,
    first_run TEXT NOT NULL,
    line_keys BLOB NOT NULL,            -- the new lines' keys: 64-bit little-endian integers
    PRIMARY KEY (path, first_run)
-- A rowid table, its keys in their own index: a long document's keys (1.6 KB on average in rust-rfcs) are
-- more than a key's b-tree keeps of a row on its page, and a lookup there read whole each row it compared.
);

CREATE TABLE chunks (
    seq INTEGER PRIMARY KEY,            -- the FTS rowid
    id TEXT NOT NULL,                   -- stable chunk id; unique (indexes.sql)
    source_id INTEGER NOT NULL REFERENCES sources(id),
    ordinal INTEGER NOT NULL,
    revision TEXT NOT NULL,             -- the source revision the offsets refer to
    hash TEXT NOT NULL,                 -- content hash of text
    heading_path TEXT NOT NULL,         -- JSON array of heading titles
    title TEXT NOT NULL,                -- document title and heading path, as indexed
    text TEXT NOT NULL,                 -- exactly source[start_offset..end_offset]
    identifiers TEXT NOT NULL,          -- de-dotted parts of compound identifiers, as indexed
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    minhash BLOB,                       -- MinHash signature for near-duplicate lint; NULL when too short
    -- The code entity (its slug) this row is the search excerpt of (docs/code.md), NULL for a chunk of the
    -- text. An excerpt is the start of the entity's span, so `text` is still exactly the cited bytes; readers
    -- that rebuild a source from its chunks skip these rows.
    entity TEXT
);

-- The provenance of every chunk as the design's JSON object, derived from the columns it restates, so it
-- can never disagree with them. An ingested source (its path a ref such as 'https://…') takes its owner,
-- resolver and upstream revision from the front matter ingest wrote; a project file's resolver is
-- 'project', and its revision is its content hash.
CREATE VIEW chunk_provenance AS
SELECT c.id AS chunk_id,
       json_object(
           'source_owner', CASE WHEN s.path LIKE '%://%' AND s.path NOT LIKE 'knowledge://%'
                                THEN json_extract(s.outline, '$.front_matter.source_owner')
                                ELSE (SELECT value FROM meta WHERE key = 'source_owner') END,
           'resolver', CASE WHEN s.path LIKE '%://%' AND s.path NOT LIKE 'knowledge://%'
                            THEN json_extract(s.outline, '$.front_matter.resolver')
                            WHEN s.path LIKE 'knowledge://%' THEN 'knowledge'
                            ELSE 'project' END,
           'revision_id', CASE WHEN s.path LIKE '%://%' AND s.path NOT LIKE 'knowledge://%'
                               THEN json_extract(s.outline, '$.front_matter.revision_id')
                               ELSE c.revision END,
           'source_ref', s.uri,
           'source_uri', s.uri || '#L' || c.start_line || '-L' || c.end_line,
           'source_kind', s.kind,
           'revision', c.revision,
           'hash', c.hash,
           'offsets', json_object('start', c.start_offset, 'end', c.end_offset),
           'lines', json_object('start', c.start_line, 'end', c.end_line),
           'read_only', json('true'),
           'citation_required', json('true'),
           'stale', json(CASE WHEN c.revision = s.revision THEN 'false' ELSE 'true' END)
       ) AS provenance
FROM chunks c JOIN sources s ON s.id = c.source_id;

-- Keyword index over chunks. External content: the text lives once, in `chunks`.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, text, identifiers,
    content = 'chunks', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- The findings of `knowledge lint` over the sources the last writing build committed (see docs/lint.md).
CREATE TABLE lint_results (
    run_id TEXT NOT NULL,
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    col INTEGER NOT NULL,
    severity TEXT NOT NULL,             -- error | warning | info
    code TEXT NOT NULL,
    message TEXT NOT NULL
);

-- One row per build that changed the index, and one per `knowledge ask` (kind 'ask').
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'build', -- build | ask | resolve
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    status TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vcs TEXT NOT NULL,                  -- JSON: commit, branch, ci, pull_request, ci_run (when known)
    summary TEXT NOT NULL               -- JSON: the counters `knowledge build --json` prints
);

CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,                 -- source_added | source_changed | source_removed | source_skipped | source_resolved | …
    path TEXT NOT NULL,
    old_revision TEXT,
    new_revision TEXT,
    detail TEXT,
    labels TEXT NOT NULL,               -- the source's permission labels, so readers can filter events
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- What each source says about concepts: the signals the wiki compiler plans pages from (docs/wiki.md), one
-- blob per source that has any (store/signals.rs: each signal's kind, label, other, excerpt, quotable,
-- weight and rank by place), since every read takes a source's signals whole.
CREATE TABLE concept_signals (
    source_id INTEGER PRIMARY KEY REFERENCES sources(id),
    signals BLOB NOT NULL
);

-- Code entities (docs/code.md): what each source defines, with its anchor in that revision. Edges are not
-- stored: readers resolve them from the payloads, so they always join the entities the index holds.
CREATE TABLE entities (
    source_id INTEGER NOT NULL REFERENCES sources(id),
    slug TEXT NOT NULL,                 -- component/NAME, symbol/PATH#NAME, test/PATH#NAME, decision/STEM
    type TEXT NOT NULL,                 -- component | symbol | test | decision
    name TEXT NOT NULL,
    payload TEXT NOT NULL,              -- JSON: the type's fields
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    hash TEXT NOT NULL                  -- the content hash of the entity's text
);

-- The entity delta log: per run, each entity added, changed (name or payload) or removed, old -> new. With the
-- run's version-control context it answers "which change introduced this".
CREATE TABLE entity_changes (
    run_id TEXT NOT NULL REFERENCES runs(id),
    slug TEXT NOT NULL,
    type TEXT NOT NULL,
    change TEXT NOT NULL,               -- added | changed | removed
    path TEXT NOT NULL,                 -- the source that defines (or defined) it
    labels TEXT NOT NULL,               -- that source's permission labels, so readers can filter the log
    old_value TEXT,                     -- JSON {name, hash, payload}
    new_value TEXT,
    PRIMARY KEY (run_id, slug)
) WITHOUT ROWID;

-- One row per generated concept page. Its Markdown is also a source row (path 'knowledge://wiki/' || slug),
-- so its chunks are searchable as `wiki_page` results.
CREATE TABLE wiki_pages (
    slug TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    section TEXT NOT NULL,
    path TEXT NOT NULL,                 -- relative to the output folder: wiki/<section>/<slug>.md
    aliases TEXT NOT NULL,              -- JSON array
    source_count INTEGER NOT NULL,      -- sources that mention the concept
    summary TEXT NOT NULL,              -- the first sentence of the lead, for the index shards
    model_hash TEXT NOT NULL,           -- hash of what the page shows and the template: equal means not re-rendered
    text_key TEXT NOT NULL,             -- hash of the model's inputs less its cited revisions, its quotes' texts, the template
    hash TEXT NOT NULL,                 -- content hash of markdown
    view_hash TEXT NOT NULL,            -- the view's content hash (PageView::stored_hash), which every build compares:
                                        -- before the view, so that reading it reads no overflow page
    view TEXT NOT NULL,                 -- JSON: the planner's view of the page (knowledge_queries::wiki::StoredView)
    run_id TEXT NOT NULL,               -- the run that last rendered it
    writing TEXT,                       -- page_writings.key its lead summary was written from (or refused); NULL: extractive
    writing_owed INTEGER NOT NULL,      -- 1: the [wiki] writer's budget or a provider failure left it extractive for now
    markdown TEXT NOT NULL              -- last, as in `sources`: the columns before it are read without its overflow
-- A rowid table, its slugs in their own index: a table without rowids keeps whole rows in its key's b-tree,
-- and a lookup by slug reads each row it compares with whole (markdown included) when the row overflows.
);

-- What the `[wiki] writer`'s provider wrote for a page, keyed by what it was written from (the writer, its
-- prompt's version, the page's title and its quotes' hashes): a page whose quotes come back finds its writing
-- here without a call. Kept while a page names it.
CREATE TABLE page_writings (
    key TEXT PRIMARY KEY,
    writer TEXT NOT NULL,               -- PROVIDER/MODEL
    sentences TEXT NOT NULL,            -- JSON: [{text, notes, problem}] as checked against the quotes they cite
    accepted INTEGER NOT NULL,          -- 1: enough sentences held up for the page to show them
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL,                      -- from the provider's prices in kc.toml, when it has them
    created_run TEXT NOT NULL
) WITHOUT ROWID;

-- Each page's row in its section's index shard, kept apart from the page's large row so that a build in a
-- fresh process reads a section's rows from a few pages of the file.
CREATE TABLE shard_rows (
    slug TEXT PRIMARY KEY,              -- wiki_pages.slug
    section TEXT NOT NULL,
    digest TEXT NOT NULL,               -- hash of the row the section's Markdown shows (ShardRow::digest)
    json TEXT NOT NULL                  -- the row as the section's JSON file holds it (ShardRow::json)
) WITHOUT ROWID;

-- Documents that link to a page's concept, and pages that list it as related.
CREATE TABLE wiki_backlinks (
    page TEXT NOT NULL,                 -- wiki_pages.slug
    from_ref TEXT NOT NULL,             -- file://PATH, or knowledge://wiki/SLUG for a related page
    line INTEGER NOT NULL,              -- 0 for a related page
    kind TEXT NOT NULL                  -- wikilink | link | related
);

-- Every source a page's content depends on (quoted, listed, linking): an edit to a source no page lists,
-- which changes none of its signals, cannot change the wiki.
CREATE TABLE page_sources (
    page TEXT NOT NULL,                 -- wiki_pages.slug
    path TEXT NOT NULL
);

-- Every quote on every page, with what it resolves to.
CREATE TABLE citations (
    page TEXT NOT NULL,                 -- wiki_pages.slug
    note INTEGER NOT NULL,              -- the footnote number on the page
    note_line INTEGER NOT NULL,         -- the line of that footnote's definition in the page file
    source_ref TEXT NOT NULL,
    path TEXT NOT NULL,
    revision TEXT NOT NULL,             -- the source revision the offsets refer to
    hash TEXT NOT NULL,                 -- content hash of the quoted text
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    signal TEXT NOT NULL                -- how the source mentions the concept
);

-- Every generated artifact file, so builds can tell a current one from a stale, edited or missing one.
CREATE TABLE storage_objects (
    uri TEXT PRIMARY KEY,               -- knowledge://wiki/SLUG, knowledge://index/SECTION[.json], ...
    kind TEXT NOT NULL,                 -- page | shard | shard_json | a declared kind (root, schema, llms)
    path TEXT NOT NULL,                 -- relative to the output folder
    hash TEXT NOT NULL,                 -- content hash of the file
    size INTEGER NOT NULL,
    metadata TEXT NOT NULL,             -- JSON: title, section, source count
    run_id TEXT NOT NULL                -- the run that last changed it
) WITHOUT ROWID;

-- The text of each artifact of a declared kind whose text the index keeps (the sections' Markdown shards, the root
-- index, `llms.txt`, the schema document): the file sync restores a missing or edited file from it. A section's JSON
-- shard has none: it is joined from its pages' shard_rows.json, so a page edit writes one small row, not the file.
CREATE TABLE artifact_texts (
    uri TEXT PRIMARY KEY,               -- its storage_objects row
    stamp TEXT NOT NULL,                -- what the text was made from (a shard's: its rows and templates): equal means not made again
    text TEXT NOT NULL
) WITHOUT ROWID;

-- Embedding vectors, keyed by content: (model, hash of the embedded text). A renamed file or a moved chunk
-- reuses its vector; a vector no entry uses is deleted in the build that drops its last entry.
-- A rowid table, its keys in their own index: a row (a 384-dimension vector is 1.5 KB) is larger than a
-- b-tree keyed by it keeps on its page, so without rowids each row spilled onto an overflow page of its own
-- (8.7 MB for the Rust book's 2.8 MB of vectors) and each lookup or insert read whole the rows it compared with.
CREATE TABLE chunk_embeddings (
    model TEXT NOT NULL,                -- the generation: provider and model id, e.g. 'fake:256'
    text_hash TEXT NOT NULL,            -- content hash of the embedded text (title, blank line, chunk text)
    dimensions INTEGER NOT NULL,
    vector BLOB NOT NULL,               -- little-endian f32 × dimensions, L2-normalized
    created_run TEXT NOT NULL,
    PRIMARY KEY (model, text_hash)
);

-- One entry per chunk and generation: which vector a chunk has, or that it is still pending.
CREATE TABLE vector_index_entries (
    chunk_id TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,             -- 'fake'
    dimensions INTEGER NOT NULL,
    source_ref TEXT NOT NULL,
    revision TEXT NOT NULL,             -- the source revision the chunk was read from
    text_hash TEXT NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    status TEXT NOT NULL,               -- ready | pending (the provider failed; the next build retries)
    updated_run TEXT NOT NULL,
    updated_at TEXT NOT NULL,           -- when that build wrote the entry (UTC, RFC 3339)
    PRIMARY KEY (chunk_id, model)
) WITHOUT ROWID;

-- Embedding jobs asked for with `knowledge reindex`: idempotent (one row per job id), done by the next build.
CREATE TABLE reindex_queue (
    job TEXT PRIMARY KEY,               -- 'embeddings:MODEL' or 'embeddings:MODEL:full'
    kind TEXT NOT NULL,                 -- 'embeddings'
    model TEXT NOT NULL,
    full INTEGER NOT NULL,              -- 1: drop the generation's vectors and embed everything again
    status TEXT NOT NULL,               -- queued | done
    queued_at TEXT NOT NULL,
    done_run TEXT                       -- the build that did it
) WITHOUT ROWID;
