//! What search reads from an index: the SQLite index here, the Postgres store in `postgres.rs`. Ranking,
//! fusion, page placement, dedupe and snippets are the same code over either; only these reads differ.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, params};

use super::*;

/// The semantic ranking of a query, or why there is none (the search then degrades to keyword).
pub(crate) enum Semantic {
    Unavailable(String),
    Ranked {
        model: String,
        provider: String,
        /// Best first, each scored by its similarity.
        results: Vec<SearchResult>,
    },
}

/// The reads one search makes. Each filters by `access` (and the request's kinds) inside the query that
/// ranks, so nothing a principal may not read is scored.
pub(crate) trait SearchIndex {
    type Error;
    /// The number of chunks, and of chunks holding each of `words` (`None` for a word the keyword index
    /// leaves out), for the query's idf weights.
    fn chunk_total(&mut self) -> Result<f64, Self::Error>;
    fn word_frequencies(&mut self, words: &[String]) -> Result<Vec<Option<f64>>, Self::Error>;
    /// The keyword candidate pool for the query's words, best first, scored by the engine's rank
    /// (`scores.keyword`, `scores.bm25`); empty when the request wants no kind the index has.
    fn keyword_pool(
        &mut self,
        request: &SearchRequest,
        access: &Access,
        terms: &[String],
        pool: usize,
    ) -> Result<Vec<SearchResult>, Self::Error>;
    /// The nearest chunks to the query by the index's embeddings generation.
    fn semantic(&mut self, request: &SearchRequest, access: &Access, k: usize) -> Result<Semantic, Self::Error>;
    /// One chunk as an unscored result, by its row, when its source still holds its revision.
    fn chunk(&mut self, seq: i64) -> Result<Option<SearchResult>, Self::Error>;
    /// The page an index entry (a shard's chunk) lists.
    fn entry_page(&mut self, seq: i64) -> Result<Option<String>, Self::Error>;
    /// The sources a page quotes, each with whether the page quotes it for its title.
    fn page_sources(&mut self, page: &str) -> Result<Vec<(String, bool)>, Self::Error>;
    /// A page's title and aliases (JSON).
    fn page_names(&mut self, page: &str) -> Result<Option<(String, String)>, Self::Error>;
    /// Which of `paths` the last build added or changed.
    fn fresh_paths(&mut self, paths: &[&str]) -> Result<HashSet<String>, Self::Error>;
    /// Whether a page quotes bytes of this chunk.
    fn quoted(&mut self, uri: &str, revision: &str, citation: &Citation) -> Result<bool, Self::Error>;
    /// The chunks holding a page's quotes (and their sources' paths), in footnote order.
    fn cited_chunks(&mut self, page: &str) -> Result<Vec<(Option<i64>, String)>, Self::Error>;
    /// The first chunk of each page that lists the source at `path` (and the page's path).
    fn quoting_pages(&mut self, path: &str) -> Result<Vec<(Option<i64>, String)>, Self::Error>;
    /// For context packs: the build the index holds and when it finished.
    fn index_run(&mut self) -> Result<(Option<String>, Option<String>), Self::Error>;
    /// For context packs: a source's current revision and its lint facts (JSON), when it is indexed.
    fn source_state(&mut self, source: &ResultSource) -> Result<Option<(String, String)>, Self::Error>;
}

/// The SQLite index, through a read-only connection.
pub(crate) struct SqliteIndex<'a> {
    pub(crate) conn: &'a Connection,
}

impl SearchIndex for SqliteIndex<'_> {
    type Error = rusqlite::Error;

    fn chunk_total(&mut self) -> rusqlite::Result<f64> {
        self.conn.prepare_cached("SELECT count(*) FROM chunks")?.query_row([], |row| row.get(0))
    }

    fn word_frequencies(&mut self, words: &[String]) -> rusqlite::Result<Vec<Option<f64>>> {
        let mut statement = self.conn.prepare_cached("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1")?;
        words.iter().map(|word| statement.query_row([format!("\"{word}\"")], |row| row.get(0).map(Some))).collect()
    }

    fn keyword_pool(
        &mut self,
        request: &SearchRequest,
        access: &Access,
        terms: &[String],
        pool: usize,
    ) -> rusqlite::Result<Vec<SearchResult>> {
        keyword::sqlite_pool(self.conn, request, access, terms, pool)
    }

    fn semantic(&mut self, request: &SearchRequest, access: &Access, k: usize) -> rusqlite::Result<Semantic> {
        let Some(embedder) = crate::embeddings::for_index(self.conn)? else {
            return Ok(Semantic::Unavailable(NO_EMBEDDINGS.to_string()));
        };
        let query_vector = match embedder.embed_query(&request.query) {
            Ok(vector) => vector,
            Err(error) => return Ok(Semantic::Unavailable(format!("the embeddings provider failed: {error}"))),
        };
        let index: std::sync::Arc<dyn crate::embeddings::VectorIndex> =
            crate::embeddings::MatrixIndex::cached(self.conn, embedder.model())?;
        // Kinds and permissions are checked row by row inside the scan: what a principal may not read is
        // never scored.
        let allowed =
            |path: &str, entity: Option<&str>| access.can_read_path(path) && request.wants_chunk(path, entity);
        let mut results = Vec::new();
        for (seq, similarity) in index.search(&query_vector, k, &allowed) {
            if let Some(mut result) = self.chunk(seq)? {
                result.scores.semantic = Some(f64::from(similarity));
                result.score = f64::from(similarity);
                results.push(result);
            }
        }
        Ok(Semantic::Ranked { model: embedder.model().to_string(), provider: embedder.provider().to_string(), results })
    }

    fn chunk(&mut self, seq: i64) -> rusqlite::Result<Option<SearchResult>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RESULT_COLUMNS}
                 FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.seq = ?1 AND c.revision = s.revision"
            ))?
            .query_row([seq], result_from_row)
            .optional()
    }

    fn entry_page(&mut self, seq: i64) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT identifiers FROM chunks WHERE seq = ?1")?
            .query_row([seq], |row| row.get(0))
            .optional()
    }

    fn page_sources(&mut self, page: &str) -> rusqlite::Result<Vec<(String, bool)>> {
        self.conn
            .prepare_cached("SELECT DISTINCT path, signal = 'title' FROM citations WHERE page = ?1")?
            .query_map([page], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect()
    }

    fn page_names(&mut self, page: &str) -> rusqlite::Result<Option<(String, String)>> {
        self.conn
            .prepare_cached("SELECT title, aliases FROM wiki_pages WHERE slug = ?1")?
            .query_row([page], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()
    }

    fn fresh_paths(&mut self, paths: &[&str]) -> rusqlite::Result<HashSet<String>> {
        let listed = serde_json::to_string(paths).unwrap_or_default();
        let mut statement = self.conn.prepare_cached(
            "SELECT DISTINCT path FROM run_events
             WHERE run_id = (SELECT value FROM meta WHERE key = 'last_run')
                   AND kind IN ('source_added', 'source_changed') AND path IN (SELECT value FROM json_each(?1))",
        )?;
        statement.query_map([listed], |row| row.get(0))?.collect()
    }

    fn quoted(&mut self, uri: &str, revision: &str, citation: &Citation) -> rusqlite::Result<bool> {
        self.conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM citations WHERE source_ref = ?1 AND revision = ?2
                                AND start_offset < ?4 AND end_offset > ?3)",
            )?
            .query_row(params![uri, revision, citation.start_offset, citation.end_offset], |row| row.get(0))
    }

    fn cited_chunks(&mut self, page: &str) -> rusqlite::Result<Vec<(Option<i64>, String)>> {
        self.conn
            .prepare_cached(
                "SELECT DISTINCT (SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id
                                  WHERE s.path = t.path AND c.start_offset <= t.start_offset
                                        AND t.start_offset < c.end_offset AND c.entity IS NULL
                                  ORDER BY c.ordinal LIMIT 1), t.path
                 FROM citations t WHERE t.page = ?1 ORDER BY t.note",
            )?
            .query_map([page], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect()
    }

    fn quoting_pages(&mut self, path: &str) -> rusqlite::Result<Vec<(Option<i64>, String)>> {
        let page = Origin::Page.prefix();
        self.conn
            .prepare_cached(&format!(
                "SELECT (SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id
                         WHERE s.path = '{page}' || p.page ORDER BY c.ordinal LIMIT 1), '{page}' || p.page
                 FROM page_sources p WHERE p.path = ?1 ORDER BY p.page",
            ))?
            .query_map([path], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect()
    }

    fn index_run(&mut self) -> rusqlite::Result<(Option<String>, Option<String>)> {
        let run = crate::store::meta(self.conn, "last_run")?;
        let finished = match &run {
            Some(run) => self
                .conn
                .prepare_cached("SELECT finished_at FROM runs WHERE id = ?1")?
                .query_row([run], |row| row.get(0))
                .optional()?,
            None => None,
        };
        Ok((run, finished))
    }

    fn source_state(&mut self, source: &ResultSource) -> rusqlite::Result<Option<(String, String)>> {
        self.conn
            .prepare_cached("SELECT revision, lint_facts FROM sources WHERE path = ?1")?
            .query_row([&source.path], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()
    }
}
