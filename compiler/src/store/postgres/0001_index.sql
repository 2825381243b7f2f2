-- The knowledge index on Postgres, migration 1 (docs/deployment.md, "The index on Postgres").
-- Each project (repository) is a scope: every row names its project, and a build replaces only its own.
-- A build publishes its committed SQLite index here; readers (`knowledge search` and the server) read it.

CREATE EXTENSION IF NOT EXISTS vector;

-- One row per project: the SQLite index's meta table as JSON (principals, purposes, the embeddings
-- generation and its settings, the last run), so readers judge permissions as the local index would.
CREATE TABLE knowledge_projects (
    project TEXT PRIMARY KEY,
    last_run TEXT,                      -- the build whose index this copy holds
    embedded_run TEXT,                  -- the build that last completed the embeddings generation
    chunks BIGINT NOT NULL DEFAULT 0,   -- how many chunks the project holds, for search's idf weights
    meta JSONB NOT NULL,
    published_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE knowledge_sources (
    id BIGSERIAL PRIMARY KEY,
    project TEXT NOT NULL REFERENCES knowledge_projects(project) ON DELETE CASCADE,
    path TEXT NOT NULL,
    uri TEXT NOT NULL,
    kind TEXT NOT NULL,
    mime TEXT NOT NULL,
    size BIGINT NOT NULL,
    revision TEXT NOT NULL,
    title TEXT NOT NULL,
    outline TEXT NOT NULL,              -- JSON, as the local index holds it
    lint_facts TEXT NOT NULL,           -- JSON: context packs report the contradiction markers it holds
    labels TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    indexed_run TEXT NOT NULL,
    state TEXT NOT NULL,                -- revision, derived run, labels and ready vectors: a publish sends the
                                        -- source again when the local index's differs
    UNIQUE (project, path)
);
-- Readers look up labelled sources on every request; most projects have none.
CREATE INDEX knowledge_sources_labelled ON knowledge_sources(project) WHERE labels <> '';

-- Chunks with their keyword document: title over text over identifiers, as the SQLite index weighs them.
-- Only chunks of their source's current revision are published, and each carries its source's path, so a
-- ranking query filters by kind and permission on this table alone and joins only its top rows.
CREATE TABLE knowledge_chunks (
    seq BIGSERIAL PRIMARY KEY,
    source_id BIGINT NOT NULL REFERENCES knowledge_sources(id) ON DELETE CASCADE,
    project TEXT NOT NULL,
    path TEXT NOT NULL,
    id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    revision TEXT NOT NULL,
    hash TEXT NOT NULL,
    heading_path TEXT NOT NULL,         -- JSON array of heading titles
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    identifiers TEXT NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    entity TEXT,
    document TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', text), 'B')
        || setweight(to_tsvector('english', identifiers), 'C')
    ) STORED
);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks USING gin (document);
CREATE INDEX knowledge_chunks_by_source ON knowledge_chunks(source_id, ordinal);
-- Graph expansion finds a cited source's chunks by path.
CREATE INDEX knowledge_chunks_by_path ON knowledge_chunks(project, path, ordinal);

-- How many of a project's chunks hold each lexeme: search's idf weights, kept by each publish for the chunks
-- it adds and removes (a count over the GIN index costs a scan of every match: 130 ms for a common word in
-- a million chunks). A lexeme no chunk holds any more keeps its row, at 0.
CREATE TABLE knowledge_terms (
    project TEXT NOT NULL REFERENCES knowledge_projects(project) ON DELETE CASCADE,
    lexeme TEXT NOT NULL,
    chunks BIGINT NOT NULL,
    PRIMARY KEY (project, lexeme)
);

-- One vector per chunk of the project's generation. HNSW indexes are made per dimension count when a
-- generation of that size first arrives (`vector` columns of mixed size cannot share one).
CREATE TABLE knowledge_vectors (
    chunk_seq BIGINT PRIMARY KEY REFERENCES knowledge_chunks(seq) ON DELETE CASCADE,
    project TEXT NOT NULL,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    embedding vector NOT NULL
);
CREATE INDEX knowledge_vectors_by_project ON knowledge_vectors(project, model);

-- The wiki graph search uses: pages' names, what each quotes, and which sources each lists.
CREATE TABLE knowledge_pages (
    project TEXT NOT NULL REFERENCES knowledge_projects(project) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    aliases TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (project, slug)
);
CREATE TABLE knowledge_citations (
    project TEXT NOT NULL,
    page TEXT NOT NULL,
    note INTEGER NOT NULL,
    source_ref TEXT NOT NULL,
    path TEXT NOT NULL,
    revision TEXT NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    signal TEXT NOT NULL,
    FOREIGN KEY (project, page) REFERENCES knowledge_pages(project, slug) ON DELETE CASCADE
);
CREATE INDEX knowledge_citations_by_page ON knowledge_citations(project, page, note);
CREATE INDEX knowledge_citations_by_source ON knowledge_citations(project, source_ref);
CREATE TABLE knowledge_page_sources (
    project TEXT NOT NULL,
    page TEXT NOT NULL,
    path TEXT NOT NULL,
    FOREIGN KEY (project, page) REFERENCES knowledge_pages(project, slug) ON DELETE CASCADE
);
CREATE INDEX knowledge_page_sources_by_path ON knowledge_page_sources(project, path);
CREATE TABLE knowledge_backlinks (
    project TEXT NOT NULL,
    page TEXT NOT NULL,
    from_ref TEXT NOT NULL,
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    FOREIGN KEY (project, page) REFERENCES knowledge_pages(project, slug) ON DELETE CASCADE
);
CREATE INDEX knowledge_backlinks_by_page ON knowledge_backlinks(project, page);

-- The run ledger, as each build recorded it.
CREATE TABLE knowledge_runs (
    project TEXT NOT NULL REFERENCES knowledge_projects(project) ON DELETE CASCADE,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    status TEXT NOT NULL,
    summary JSONB NOT NULL,
    PRIMARY KEY (project, id)
);
CREATE TABLE knowledge_run_events (
    project TEXT NOT NULL,
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    old_revision TEXT,
    new_revision TEXT,
    labels TEXT NOT NULL,
    PRIMARY KEY (project, run_id, seq),
    FOREIGN KEY (project, run_id) REFERENCES knowledge_runs(project, id) ON DELETE CASCADE
);
