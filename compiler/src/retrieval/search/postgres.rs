//! Search over the Postgres store (`[store] url`): the same pipeline as over the SQLite index, reading the
//! keyword pool from Postgres full-text search (`ts_rank` over the chunks' weighted `tsvector`, GIN
//! indexed) and the semantic ranking from pgvector, exact below [`crate::store::postgres::EXACT_BELOW`] vectors and through the
//! HNSW index above. Permission filters are conditions of the ranking query, as in SQLite. Several projects
//! may be searched at once: each result names its project, and each project's own principals decide what
//! a principal may read there.

use rustc_hash::FxHashSet;

use super::*;
use crate::store::postgres::{PgSearch, PgStore, PostgresError, project_meta};

/// Runs a search over `projects` in the Postgres store, as `principal` may read them. With one project an
/// unknown principal is an error; across several, projects that do not know the principal are left out.
pub fn search_postgres(
    store: &mut PgStore,
    projects: &[String],
    request: &SearchRequest,
    principal: Option<&str>,
) -> Result<SearchResponse, StoreReadError> {
    let scope = StoreScope::of(store, projects, principal)?;
    let mut index = PgIndex::new(store, scope.projects, scope.generation);
    search_in(&mut index, request, &scope.access).map_err(|source| index.error(source).into())
}

/// What a principal reads in a store: the projects that know it, its access over their sources (by the
/// store's source ids), and the first embeddings generation among them (model, settings).
pub(crate) struct StoreScope {
    pub(crate) projects: Vec<String>,
    pub(crate) access: Access,
    pub(crate) generation: Option<(String, Option<String>)>,
}

impl StoreScope {
    /// With one project an unknown principal is an error; across several, projects that do not know the
    /// principal are left out. Each project's own principals and purposes decide.
    pub(crate) fn of(
        store: &mut PgStore,
        projects: &[String],
        principal: Option<&str>,
    ) -> Result<StoreScope, StoreReadError> {
        let mut scope = StoreScope { projects: Vec::new(), access: Access::default(), generation: None };
        for (at, readable) in ProjectScope::each(store, projects, principal)?.into_iter().enumerate() {
            if at == 0 {
                scope.access = readable.access;
            } else {
                scope.access.hide_also(readable.access);
            }
            if scope.generation.is_none()
                && let Some(model) = readable.meta.get("embeddings_model").filter(|model| !model.is_empty())
            {
                scope.generation = Some((model.clone(), readable.meta.get("embeddings_settings").cloned()));
            }
            scope.projects.push(readable.project);
        }
        Ok(scope)
    }
}

/// One project of a store as a principal reads it: its published meta and the principal's access there.
pub(crate) struct ProjectScope {
    pub(crate) project: String,
    pub(crate) meta: std::collections::HashMap<String, String>,
    pub(crate) access: Access,
}

impl ProjectScope {
    /// Each of `projects` the principal may read, in order. With one project an unknown principal is an
    /// error; across several, projects that do not know the principal are left out.
    pub(crate) fn each(
        store: &mut PgStore,
        projects: &[String],
        principal: Option<&str>,
    ) -> Result<Vec<ProjectScope>, StoreReadError> {
        let mut readable = Vec::new();
        for project in projects {
            let meta = project_meta(store, project)?;
            let labelled = crate::store::postgres::labelled_sources(store, project).map_err(|e| store.error(e))?;
            let principals = meta.get("principals").map(String::as_str);
            let purposes = meta.get("purposes").map(String::as_str);
            let access = match Access::of(principals, purposes, principal, Some("knowledge_answer"), labelled) {
                Ok(access) => access,
                Err(error) if projects.len() == 1 => return Err(error.into()),
                Err(_) => continue,
            };
            readable.push(ProjectScope { project: project.clone(), meta, access });
        }
        Ok(readable)
    }
}

/// Why a read of the Postgres store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreReadError {
    #[error(transparent)]
    Store(#[from] PostgresError),
    #[error(transparent)]
    Access(#[from] crate::retrieval::access::AccessError),
    #[error(transparent)]
    Reader(#[from] crate::retrieval::reader::ReaderError),
    /// What the store does not hold, and where to read it instead.
    #[error("{0}")]
    NotInStore(&'static str),
}

pub(crate) struct PgIndex<'a> {
    reads: PgSearch<'a>,
    /// The embeddings generation searched: the first project's that has one (model, settings).
    generation: Option<(String, Option<String>)>,
}

impl<'a> PgIndex<'a> {
    pub(crate) fn new(
        store: &'a mut PgStore,
        projects: Vec<String>,
        generation: Option<(String, Option<String>)>,
    ) -> PgIndex<'a> {
        PgIndex { reads: PgSearch::new(store, projects), generation }
    }

    /// A Postgres error with the store it came from.
    pub(crate) fn error(&self, source: ::postgres::Error) -> PostgresError {
        self.reads.store.error(source)
    }
}

impl SearchIndex for PgIndex<'_> {
    type Error = ::postgres::Error;

    fn chunk_total(&mut self) -> Result<f64, ::postgres::Error> {
        self.reads.chunk_total()
    }

    fn word_frequencies(&mut self, words: &[String]) -> Result<Vec<Option<f64>>, ::postgres::Error> {
        self.reads.word_frequencies(words)
    }

    fn keyword_pool(
        &mut self,
        request: &SearchRequest,
        access: &Access,
        terms: &[String],
        pool: usize,
    ) -> Result<Vec<SearchResult>, ::postgres::Error> {
        let phrases: Vec<Vec<String>> = terms.iter().map(|term| words(term)).collect();
        let pool = self.reads.keyword_pool(&request.wanted_kinds(), access.hidden_sources(), &phrases, pool)?;
        Ok(pool
            .into_iter()
            .map(|(hit, rank)| {
                let mut result = unscored(hit);
                result.score = rank;
                (result.scores.keyword, result.scores.bm25) = (rank, rank);
                result
            })
            .collect())
    }

    fn semantic(&mut self, request: &SearchRequest, access: &Access, k: usize) -> Result<Semantic, ::postgres::Error> {
        let embedder = self
            .generation
            .as_ref()
            .and_then(|(model, settings)| crate::embeddings::for_settings(Some(model), settings.as_deref()));
        let Some(embedder) = embedder else { return Ok(Semantic::Unavailable(NO_EMBEDDINGS.to_string())) };
        let query_vector = match embedder.embed_query(&request.query) {
            Ok(vector) => vector,
            Err(error) => return Ok(Semantic::Unavailable(format!("the embeddings provider failed: {error}"))),
        };
        let (model, provider) = (embedder.model().to_string(), embedder.provider().to_string());
        let nearest = self.reads.nearest(&model, &query_vector, k, &request.wanted_kinds(), access.hidden_sources())?;
        let results = nearest
            .into_iter()
            .map(|(hit, similarity)| {
                let mut result = unscored(hit);
                result.scores.semantic = Some(similarity);
                result.score = similarity;
                result
            })
            .collect();
        Ok(Semantic::Ranked { model, provider, results })
    }

    fn chunk(&mut self, seq: i64) -> Result<Option<SearchResult>, ::postgres::Error> {
        Ok(self.reads.chunk(seq)?.map(unscored))
    }

    fn entry_page(&mut self, seq: i64) -> Result<Option<String>, ::postgres::Error> {
        self.reads.entry_page(seq)
    }

    fn page_sources(&mut self, page: &str) -> Result<Vec<(String, bool)>, ::postgres::Error> {
        self.reads.page_sources(page)
    }

    fn page_names(&mut self, page: &str) -> Result<Option<(String, String)>, ::postgres::Error> {
        self.reads.page_names(page)
    }

    fn fresh_paths(&mut self, paths: &[&str]) -> Result<FxHashSet<String>, ::postgres::Error> {
        Ok(self.reads.fresh_paths(paths)?.into_iter().collect())
    }

    fn quoted(&mut self, _seq: i64, uri: &str, revision: &str, citation: &Citation) -> Result<bool, ::postgres::Error> {
        self.reads.quoted(uri, revision, citation.start_offset, citation.end_offset)
    }

    fn cited_chunks(&mut self, page: &str) -> Result<Vec<(Option<i64>, String)>, ::postgres::Error> {
        self.reads.cited_chunks(page)
    }

    fn quoting_pages(&mut self, path: &str) -> Result<Vec<(Option<i64>, String)>, ::postgres::Error> {
        self.reads.quoting_pages(path)
    }

    fn index_run(&mut self) -> Result<(Option<String>, Option<String>), ::postgres::Error> {
        self.reads.index_run()
    }

    fn source_state(&mut self, source: &ResultSource) -> Result<Option<(String, String)>, ::postgres::Error> {
        self.reads.source_state(source.project.as_deref().unwrap_or_default(), &source.path)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_query_term_is_its_words() {
        let terms = ["std::fs::read", "it's", "--"];
        let phrases: Vec<Vec<String>> = terms.iter().map(|term| super::words(term)).collect();
        assert_eq!(phrases, [vec!["std", "fs", "read"], vec!["it", "s"], vec![]]);
    }
}
