//! What search reads from an index: the SQLite index here, the Postgres store in `postgres.rs`. Ranking,
//! fusion, page placement, dedupe and snippets are the same code over either; only these reads differ.

use rustc_hash::FxHashSet;

use rusqlite::Connection;

use crate::store;

use super::pool::SearchCache;
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
    fn fresh_paths(&mut self, paths: &[&str]) -> Result<FxHashSet<String>, Self::Error>;
    /// Whether a page quotes bytes of this chunk (at row `seq`, from `uri` at `revision`).
    fn quoted(&mut self, seq: i64, uri: &str, revision: &str, citation: &Citation) -> Result<bool, Self::Error>;
    /// The chunks holding a page's quotes (and their sources' paths), in footnote order.
    fn cited_chunks(&mut self, page: &str) -> Result<Vec<(Option<i64>, String)>, Self::Error>;
    /// The first chunk of each page that lists the source at `path` (and the page's path).
    fn quoting_pages(&mut self, path: &str) -> Result<Vec<(Option<i64>, String)>, Self::Error>;
    /// For context packs: the build the index holds and when it finished.
    fn index_run(&mut self) -> Result<(Option<String>, Option<String>), Self::Error>;
    /// For context packs: a source's current revision and its lint facts (JSON), when it is indexed.
    fn source_state(&mut self, source: &ResultSource) -> Result<Option<(String, String)>, Self::Error>;
}

/// The SQLite index, through a read-only connection, and what that connection's searches read before.
pub(crate) struct SqliteIndex<'a> {
    conn: &'a Connection,
    cache: &'a mut SearchCache,
}

impl<'a> SqliteIndex<'a> {
    /// The index `conn` reads, through `cache`, emptied first when a build committed since it was filled (a
    /// search reads in one transaction, so what it keeps stays true for the rest of the search).
    pub(crate) fn new(conn: &'a Connection, cache: &'a mut SearchCache) -> rusqlite::Result<SqliteIndex<'a>> {
        if cache.keeps() {
            cache.follow(conn)?;
        }
        Ok(SqliteIndex { conn, cache })
    }
}

impl SearchIndex for SqliteIndex<'_> {
    type Error = rusqlite::Error;

    fn chunk_total(&mut self) -> rusqlite::Result<f64> {
        store::chunk_total(self.conn)
    }

    fn word_frequencies(&mut self, words: &[String]) -> rusqlite::Result<Vec<Option<f64>>> {
        self.cache.word_frequencies(self.conn, words)
    }

    fn keyword_pool(
        &mut self,
        request: &SearchRequest,
        access: &Access,
        terms: &[String],
        pool: usize,
    ) -> rusqlite::Result<Vec<SearchResult>> {
        let Some(scope) = store::keyword_scope(&request.wanted_kinds(), access.hidden_sources()) else {
            return Ok(Vec::new());
        };
        let scored = |mut result: SearchResult, bm25: f64| {
            result.score = bm25;
            (result.scores.keyword, result.scores.bm25) = (bm25, bm25);
            result
        };
        if !self.cache.keeps() {
            let pool = store::keyword_pool(self.conn, &scope, terms, pool)?;
            return Ok(pool.into_iter().map(|(hit, bm25)| scored(unscored(hit), bm25)).collect());
        }
        let mut results = Vec::with_capacity(pool);
        for (seq, bm25) in self.cache.best_chunks(self.conn, &scope, terms, pool)? {
            // A chunk whose source no longer holds its revision is left out, as the uncached pool leaves it.
            if let Some(result) = self.chunk(seq)? {
                results.push(scored(result, bm25));
            }
        }
        Ok(results)
    }

    fn semantic(&mut self, request: &SearchRequest, access: &Access, k: usize) -> rusqlite::Result<Semantic> {
        let Some(embedder) = crate::embeddings::for_index(self.conn)? else {
            return Ok(Semantic::Unavailable(NO_EMBEDDINGS.to_string()));
        };
        let query_vector = match embedder.embed_query(&request.query) {
            Ok(vector) => vector,
            Err(error) => return Ok(Semantic::Unavailable(format!("the embeddings provider failed: {error}"))),
        };
        let index = crate::embeddings::vector_index(self.conn, embedder.model())?;
        // Kinds and permissions are checked row by row inside the scan: what a principal may not read is
        // never scored.
        let allowed =
            |path: &str, entity: Option<&str>| access.can_read_path(path) && request.wants_chunk(path, entity);
        let mut results = Vec::new();
        for hit in index.search(&query_vector, k, &allowed) {
            // The row is checked again as the index holds it (its source's path, its permissions, its kind):
            // the scan read a vector file, which only the build writes but anyone with the folder could.
            let result = self.chunk(hit.seq)?.filter(|result| {
                let entity = result.entity.as_ref().map(|entity| entity.slug.as_str());
                result.source.path == hit.path && allowed(&result.source.path, entity)
            });
            if let Some(mut result) = result {
                result.scores.semantic = Some(f64::from(hit.similarity));
                result.score = f64::from(hit.similarity);
                results.push(result);
            }
        }
        Ok(Semantic::Ranked { model: embedder.model().to_string(), provider: embedder.provider().to_string(), results })
    }

    fn chunk(&mut self, seq: i64) -> rusqlite::Result<Option<SearchResult>> {
        Ok(self.cache.chunk_hit(self.conn, seq)?.map(unscored))
    }

    fn entry_page(&mut self, seq: i64) -> rusqlite::Result<Option<String>> {
        self.cache.entry_page(self.conn, seq)
    }

    fn page_sources(&mut self, page: &str) -> rusqlite::Result<Vec<(String, bool)>> {
        self.cache.page_sources(self.conn, page)
    }

    fn page_names(&mut self, page: &str) -> rusqlite::Result<Option<(String, String)>> {
        self.cache.page_names(self.conn, page)
    }

    fn fresh_paths(&mut self, paths: &[&str]) -> rusqlite::Result<FxHashSet<String>> {
        self.cache.fresh_paths(self.conn, paths)
    }

    fn quoted(&mut self, seq: i64, uri: &str, revision: &str, citation: &Citation) -> rusqlite::Result<bool> {
        self.cache.quoted(self.conn, seq, |conn| {
            store::quoted(conn, uri, revision, citation.start_offset, citation.end_offset)
        })
    }

    fn cited_chunks(&mut self, page: &str) -> rusqlite::Result<Vec<(Option<i64>, String)>> {
        store::cited_chunks(self.conn, page)
    }

    fn quoting_pages(&mut self, path: &str) -> rusqlite::Result<Vec<(Option<i64>, String)>> {
        store::quoting_pages(self.conn, path)
    }

    fn index_run(&mut self) -> rusqlite::Result<(Option<String>, Option<String>)> {
        store::index_run(self.conn)
    }

    fn source_state(&mut self, source: &ResultSource) -> rusqlite::Result<Option<(String, String)>> {
        store::source_state(self.conn, &source.path)
    }
}
