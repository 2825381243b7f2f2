//! Search over the Postgres store (`[store] url`): the same pipeline as over the SQLite index, reading the
//! keyword pool from Postgres full-text search (`ts_rank` over the chunks' weighted `tsvector`, GIN
//! indexed) and the semantic ranking from pgvector, exact below [`EXACT_BELOW`] vectors and through the
//! HNSW index above. Permission filters are conditions of the ranking query, as in SQLite. Several projects
//! may be searched at once: each result names its project, and each project's own principals decide what
//! a principal may read there.

use std::collections::HashSet;

use super::*;
use crate::store::postgres::{PgStore, PostgresError, project_meta};

/// Below this many vectors in the store, a semantic search scans them exactly (it costs a few
/// milliseconds, and HNSW is approximate); above, it asks the HNSW index.
pub const EXACT_BELOW: f64 = 20_000.0;

/// The columns [`pg_result`] reads, first in a query over `knowledge_chunks c JOIN knowledge_sources s`.
const PG_RESULT_COLUMNS: &str = "c.seq, c.id, c.title, c.text, c.hash, c.revision, c.start_offset, c.end_offset,
                                 c.start_line, c.end_line, s.uri, s.path, c.entity, s.project";

/// `ts_rank`'s weights for {D, C, B, A}: identifiers (C) half of text (B), title (A) twice it, as the
/// SQLite index's BM25 column weights.
const RANK_WEIGHTS: &str = "'{0.1, 0.25, 0.5, 1.0}'";

/// `ts_rank`'s length normalization: 1 divides by 1 + log(length), BM25's length penalty in spirit. On
/// Cranfield it scored best of `ts_rank_cd` with 0, 1, 2, 4, 8 and 16 and `ts_rank` with 0, 1 and 16, and
/// cost half `ts_rank_cd`'s time (docs/performance.md).
const RANK_NORMALIZATION: u32 = 1;

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
    search_in(&mut index, request, &scope.access).map_err(|source| index.store.error(source).into())
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
            let labelled: Vec<(i64, String, String)> = store
                .rows(
                    "SELECT id, path, labels FROM knowledge_sources WHERE project = $1 AND labels <> '' ORDER BY id",
                    &[project],
                )
                .map_err(|source| store.error(source))?
                .into_iter()
                .map(|row| (row.get(0), row.get(1), row.get(2)))
                .collect();
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
    store: &'a mut PgStore,
    projects: Vec<String>,
    /// The embeddings generation searched: the first project's that has one (model, settings).
    generation: Option<(String, Option<String>)>,
}

impl<'a> PgIndex<'a> {
    pub(crate) fn new(
        store: &'a mut PgStore,
        projects: Vec<String>,
        generation: Option<(String, Option<String>)>,
    ) -> PgIndex<'a> {
        PgIndex { store, projects, generation }
    }

    /// A Postgres error with the store it came from.
    pub(crate) fn error(&self, source: ::postgres::Error) -> PostgresError {
        self.store.error(source)
    }

    /// The SQL condition on `knowledge_chunks c` alone that keeps chunks of readable sources of a wanted
    /// kind.
    fn filter(request: &SearchRequest, access: &Access) -> Option<String> {
        let kinds = match request.kind_filter("c.path") {
            KindFilter::All => "TRUE".to_string(),
            KindFilter::Except(condition) => format!("NOT ({condition})"),
            KindFilter::Only(condition) => format!("({condition})"),
            KindFilter::Nothing => return None,
        };
        let hidden = access.hidden_sources();
        let readable = if hidden.is_empty() {
            "TRUE".to_string()
        } else {
            // The ids come from the store itself, so inlining them is safe.
            let ids: Vec<String> = hidden.iter().map(i64::to_string).collect();
            format!("c.source_id NOT IN ({})", ids.join(","))
        };
        Some(format!("{readable} AND {kinds}"))
    }

    /// The `pool` best chunks for a `to_tsquery` text by `ts_rank`, among those `filter` keeps.
    fn pool(&mut self, query: &str, filter: &str, pool: usize) -> Result<Vec<SearchResult>, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            &format!(
                "SELECT {PG_RESULT_COLUMNS}, top.score FROM (
                     SELECT c.seq, ts_rank({RANK_WEIGHTS}, c.document, q, {RANK_NORMALIZATION})::float8 AS score
                     FROM knowledge_chunks c, to_tsquery('english', $2) AS q
                     WHERE c.project = ANY($1) AND c.document @@ q AND {filter}
                     ORDER BY score DESC, c.seq LIMIT $3
                 ) AS top JOIN knowledge_chunks c ON c.seq = top.seq JOIN knowledge_sources s ON s.id = c.source_id
                 ORDER BY top.score DESC, c.seq"
            ),
            &[&projects, &query, &i64::try_from(pool).unwrap_or(i64::MAX)],
        )?;
        Ok(rows
            .iter()
            .map(|row| {
                let mut result = pg_result(row);
                let rank: f64 = row.get(14);
                result.score = rank;
                (result.scores.keyword, result.scores.bm25) = (rank, rank);
                result
            })
            .collect())
    }

    fn rows(
        &mut self,
        sql: &str,
        params: &[&(dyn ::postgres::types::ToSql + Sync)],
    ) -> Result<Vec<::postgres::Row>, ::postgres::Error> {
        self.store.rows(sql, params)
    }
}

/// The query's terms as a `to_tsquery` text: each term's words as a phrase, the terms joined by OR (a
/// sentence-length question never requires all its words). Words are letters and digits only, so no
/// query text is ever read as tsquery syntax.
fn tsquery(terms: &[String]) -> String {
    let phrases: Vec<String> = terms
        .iter()
        .map(|term| words(term).join(" <-> "))
        .filter(|phrase| !phrase.is_empty())
        .map(|phrase| format!("({phrase})"))
        .collect();
    phrases.join(" | ")
}

fn pg_result(row: &::postgres::Row) -> SearchResult {
    let entity: Option<String> = row.get(12);
    let path: String = row.get(11);
    let offset = |at: usize| u32::try_from(row.get::<_, i32>(at)).unwrap_or(0);
    SearchResult {
        rowid: row.get(0),
        kind: if entity.is_some() { ResultKind::Entity } else { result_kind(&path) },
        id: row.get(1),
        title: row.get(2),
        text: row.get(3),
        snippet: String::new(),
        score: 0.0,
        scores: Scores { keyword: 0.0, bm25: 0.0, coverage: 0.0, semantic: None, fused: None },
        source: ResultSource {
            uri: row.get(10),
            path,
            revision: row.get(5),
            hash: row.get(4),
            project: Some(row.get(13)),
        },
        citation: Citation {
            start_offset: offset(6),
            end_offset: offset(7),
            start_line: offset(8),
            end_line: offset(9),
        },
        reason: Vec::new(),
        also_in: Vec::new(),
        entity: entity.map(EntityMatch::from_slug),
        page: None,
    }
}

impl SearchIndex for PgIndex<'_> {
    type Error = ::postgres::Error;

    fn chunk_total(&mut self) -> Result<f64, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT coalesce(sum(chunks), 0)::int8 FROM knowledge_projects WHERE project = ANY($1)",
            &[&projects],
        )?;
        Ok(rows[0].get::<_, i64>(0) as f64)
    }

    fn word_frequencies(&mut self, words: &[String]) -> Result<Vec<Option<f64>>, ::postgres::Error> {
        // Each word's lexeme, counted by the publish (`knowledge_terms`); a stop word has none.
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT (SELECT min(coalesce((SELECT sum(t.chunks) FROM knowledge_terms t
                                         WHERE t.project = ANY($1) AND t.lexeme = l), 0))::int8
                     FROM unnest(tsvector_to_array(to_tsvector('english', w.word))) AS l)
             FROM unnest($2::text[]) WITH ORDINALITY AS w(word, at) ORDER BY w.at",
            &[&projects, &words],
        )?;
        Ok(rows.iter().map(|row| row.get::<_, Option<i64>>(0).map(|n| n as f64)).collect())
    }

    fn keyword_pool(
        &mut self,
        request: &SearchRequest,
        access: &Access,
        terms: &[String],
        pool: usize,
    ) -> Result<Vec<SearchResult>, ::postgres::Error> {
        let (Some(filter), query) = (PgIndex::filter(request, access), tsquery(terms)) else { return Ok(Vec::new()) };
        if query.is_empty() {
            return Ok(Vec::new());
        }
        // Rank on the chunks alone and join only the pool, as the SQLite index does. Ranking costs a
        // `ts_rank` per match, and an OR of common words matches much of a large store (48,000 of a million
        // chunks for "build memory": 240 ms), so the chunks holding every term are ranked first, and the
        // OR of the terms only when they are fewer than the pool.
        if query.contains(" | ") {
            let every = self.pool(&query.replace(" | ", " & "), &filter, pool)?;
            if every.len() >= pool {
                return Ok(every);
            }
        }
        self.pool(&query, &filter, pool)
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
        let Some(filter) = PgIndex::filter(request, access) else {
            return Ok(Semantic::Ranked { model, provider, results: Vec::new() });
        };
        let literal = format!("[{}]", query_vector.iter().map(f32::to_string).collect::<Vec<_>>().join(","));
        let dimensions = query_vector.len();
        // The planner's estimate of the table's size decides: a count would itself scan.
        let estimate = self.rows("SELECT reltuples::float8 FROM pg_class WHERE relname = 'knowledge_vectors'", &[])?;
        let estimate: f64 = estimate.first().map_or(0.0, |row| row.get(0));
        let distance = if estimate < EXACT_BELOW {
            "v.embedding <=> $2::text::vector".to_string()
        } else {
            format!("v.embedding::vector({dimensions}) <=> $2::text::vector({dimensions})")
        };
        let sql = format!(
            "SELECT {PG_RESULT_COLUMNS}, nearest.distance FROM (
                 SELECT v.chunk_seq, ({distance})::float8 AS distance
                 FROM knowledge_vectors v JOIN knowledge_chunks c ON c.seq = v.chunk_seq
                 WHERE v.project = ANY($1) AND v.model = $3 AND v.dimensions = $5 AND {filter}
                 ORDER BY {distance} LIMIT $4
             ) AS nearest JOIN knowledge_chunks c ON c.seq = nearest.chunk_seq
               JOIN knowledge_sources s ON s.id = c.source_id
             ORDER BY nearest.distance, c.seq"
        );
        let statement = self.store.prepared(&sql)?;
        let projects = self.projects.clone();
        let mut tx = self.store.client.transaction()?;
        // HNSW filtered by project, kind and permission: keep scanning until k rows pass the filter.
        tx.batch_execute("SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 100")?;
        let rows = tx.query(
            &statement,
            &[
                &projects,
                &literal,
                &model,
                &i64::try_from(k).unwrap_or(i64::MAX),
                &i32::try_from(dimensions).unwrap_or(i32::MAX),
            ],
        )?;
        tx.commit()?;
        let results = rows
            .iter()
            .map(|row| {
                let mut result = pg_result(row);
                let similarity = 1.0 - row.get::<_, f64>(14);
                result.scores.semantic = Some(similarity);
                result.score = similarity;
                result
            })
            .collect();
        Ok(Semantic::Ranked { model, provider, results })
    }

    fn chunk(&mut self, seq: i64) -> Result<Option<SearchResult>, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            &format!(
                "SELECT {PG_RESULT_COLUMNS} FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
                 WHERE c.seq = $1 AND c.project = ANY($2)"
            ),
            &[&seq, &projects],
        )?;
        Ok(rows.first().map(pg_result))
    }

    fn entry_page(&mut self, seq: i64) -> Result<Option<String>, ::postgres::Error> {
        let rows = self.rows("SELECT identifiers FROM knowledge_chunks WHERE seq = $1", &[&seq])?;
        Ok(rows.first().map(|row| row.get(0)))
    }

    fn page_sources(&mut self, page: &str) -> Result<Vec<(String, bool)>, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT DISTINCT path, signal = 'title' FROM knowledge_citations WHERE project = ANY($1) AND page = $2",
            &[&projects, &page],
        )?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    fn page_names(&mut self, page: &str) -> Result<Option<(String, String)>, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT title, aliases FROM knowledge_pages WHERE project = ANY($1) AND slug = $2 ORDER BY project LIMIT 1",
            &[&projects, &page],
        )?;
        Ok(rows.first().map(|row| (row.get(0), row.get(1))))
    }

    fn fresh_paths(&mut self, paths: &[&str]) -> Result<HashSet<String>, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT DISTINCT e.path FROM knowledge_run_events e
             JOIN knowledge_projects p ON p.project = e.project AND p.last_run = e.run_id
             WHERE e.project = ANY($1) AND e.kind IN ('source_added', 'source_changed') AND e.path = ANY($2)",
            &[&projects, &paths],
        )?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    fn quoted(&mut self, uri: &str, revision: &str, citation: &Citation) -> Result<bool, ::postgres::Error> {
        let offset = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
        let (start, end) = (offset(citation.start_offset), offset(citation.end_offset));
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT EXISTS (SELECT 1 FROM knowledge_citations WHERE project = ANY($1) AND source_ref = $2
                            AND revision = $3 AND start_offset < $5 AND end_offset > $4)",
            &[&projects, &uri, &revision, &start, &end],
        )?;
        Ok(rows[0].get(0))
    }

    fn cited_chunks(&mut self, page: &str) -> Result<Vec<(Option<i64>, String)>, ::postgres::Error> {
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT (SELECT c.seq FROM knowledge_chunks c
                     WHERE c.project = t.project AND c.path = t.path AND c.start_offset <= t.start_offset
                           AND t.start_offset < c.end_offset AND c.entity IS NULL
                     ORDER BY c.ordinal LIMIT 1), t.path
             FROM knowledge_citations t WHERE t.project = ANY($1) AND t.page = $2 ORDER BY t.note",
            &[&projects, &page],
        )?;
        let mut seen = HashSet::new();
        Ok(rows
            .iter()
            .map(|row| (row.get::<_, Option<i64>>(0), row.get::<_, String>(1)))
            .filter(|neighbour| seen.insert(neighbour.clone()))
            .collect())
    }

    fn quoting_pages(&mut self, path: &str) -> Result<Vec<(Option<i64>, String)>, ::postgres::Error> {
        let page = Origin::Page.prefix();
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT (SELECT c.seq FROM knowledge_chunks c
                     WHERE c.project = p.project AND c.path = $3::text || p.page ORDER BY c.ordinal LIMIT 1),
                    $3::text || p.page
             FROM knowledge_page_sources p WHERE p.project = ANY($1) AND p.path = $2 ORDER BY p.page",
            &[&projects, &path, &page],
        )?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    fn index_run(&mut self) -> Result<(Option<String>, Option<String>), ::postgres::Error> {
        // Across several projects, the first one's build names the pack's freshness.
        let projects = self.projects.clone();
        let rows = self.rows(
            "SELECT p.last_run, r.finished_at FROM knowledge_projects p
             LEFT JOIN knowledge_runs r ON r.project = p.project AND r.id = p.last_run
             WHERE p.project = ANY($1) ORDER BY array_position($1, p.project) LIMIT 1",
            &[&projects],
        )?;
        Ok(rows.first().map_or((None, None), |row| (row.get(0), row.get(1))))
    }

    fn source_state(&mut self, source: &ResultSource) -> Result<Option<(String, String)>, ::postgres::Error> {
        let project = source.project.clone().unwrap_or_default();
        let rows = self.rows(
            "SELECT revision, lint_facts FROM knowledge_sources WHERE project = $1 AND path = $2",
            &[&project, &source.path],
        )?;
        Ok(rows.first().map(|row| (row.get(0), row.get(1))))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_words_become_tsquery_phrases_joined_by_or() {
        let terms = vec!["std::fs::read".to_string(), "it's".to_string(), "--".to_string()];
        assert_eq!(super::tsquery(&terms), "(std <-> fs <-> read) | (it <-> s)");
    }
}
