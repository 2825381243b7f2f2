//! `knowledge eval`: retrieval quality on a test collection with graded judgments (BEIR layout).
//!
//! The corpus is compiled into a temporary index with the project's settings, every judged query is run
//! through the same search function agents use, and the ranking is scored: nDCG@10 with exponential gain,
//! Recall@10, Recall@100, MRR@10, and in-process latency.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::build::{Compiler, Silent};
use crate::config::Project;
use crate::retrieval::search::{self, Highlight, SearchRequest};
use crate::store;

pub mod judged;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Parse { path: std::path::PathBuf, line: usize, message: String },
    #[error(
        "mode `{0}` needs an embeddings provider; `[embeddings] provider` is `none`, so only `keyword` can be evaluated"
    )]
    Unavailable(&'static str),
    #[error("the corpus could not be embedded: {0}")]
    Embeddings(String),
    #[error(transparent)]
    Build(#[from] crate::build::BuildError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("search failed")]
    Search(#[source] rusqlite::Error),
    #[error(transparent)]
    StoreSearch(#[from] search::StoreReadError),
    #[error(transparent)]
    Postgres(#[from] store::postgres::PostgresError),
    #[error("cannot create a temporary folder")]
    Temp(#[source] std::io::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Keyword,
    Semantic,
    Hybrid,
}

impl Mode {
    #[must_use]
    pub fn search_mode(self) -> crate::retrieval::search::SearchMode {
        match self {
            Mode::Keyword => crate::retrieval::search::SearchMode::Keyword,
            Mode::Semantic => crate::retrieval::search::SearchMode::Semantic,
            Mode::Hybrid => crate::retrieval::search::SearchMode::Hybrid,
        }
    }
}

/// Scores over every judged query, averaged.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub mode: Mode,
    pub documents: usize,
    /// Queries with at least one relevant judgment; the others cannot be scored.
    pub queries: usize,
    pub ndcg_at_10: f64,
    pub recall_at_10: f64,
    pub recall_at_100: f64,
    pub mrr_at_10: f64,
    /// In-process latency of a 10-result search, per query.
    pub latency_ms: Latency,
    pub build_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p95: f64,
}

impl Latency {
    /// The median and 95th percentile of some timings, in milliseconds (0 for none).
    #[must_use]
    pub fn of(mut samples: Vec<f64>) -> Latency {
        samples.sort_by(f64::total_cmp);
        let percentile =
            |p: usize| samples.get((samples.len() * p / 100).min(samples.len().saturating_sub(1))).copied();
        Latency { p50: percentile(50).unwrap_or(0.0), p95: percentile(95).unwrap_or(0.0) }
    }
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p50 {:.2} ms, p95 {:.2} ms", self.p50, self.p95)
    }
}

#[derive(Deserialize)]
struct Document {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct Query {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

/// The collection's documents written as Markdown files in a temporary project with `settings`' chunking and
/// providers (no wiki: the documents are scored, not pages made from them), and built: the folder (kept
/// for the searches), the project and the build's milliseconds.
fn build_collection(
    settings: &Project,
    documents: &[Document],
) -> Result<(tempfile::TempDir, Project, u64), EvalError> {
    let work = tempfile::tempdir().map_err(EvalError::Temp)?;
    for document in documents {
        let path = work.path().join("corpus").join(format!("{}.md", file_name(&document.id)));
        let text = format!("# {}\n\n{}\n", document.title.trim(), document.text.trim());
        write_file(&path, &text)?;
    }
    let mut project = settings.clone();
    project.root = work.path().to_path_buf();
    project.config.sources = crate::config::SourcesConfig::default();
    project.config.sources.include = vec![toml::Spanned::new(0..0, "corpus/*.md".to_string())];
    project.config.output.dir = toml::Spanned::new(0..0, "index".to_string());
    // The collection's documents are scored, not pages generated from them.
    project.config.wiki.enabled = false;
    project.config.store.project = Some("eval".to_string());
    let clock = Instant::now();
    let built = Compiler::new().build(&project, &Silent)?;
    if let Some(reason) = built.embeddings.as_ref().and_then(|e| e.degraded.clone()) {
        return Err(EvalError::Embeddings(reason));
    }
    let build_ms = crate::elapsed_ms(clock);
    Ok((work, project, build_ms))
}

/// What the default principal reads in the index behind `conn`.
fn default_access(conn: &rusqlite::Connection) -> Result<crate::retrieval::access::Access, EvalError> {
    crate::retrieval::access::Access::load(conn, None).map_err(|e| match e {
        crate::retrieval::access::AccessError::Sqlite(e) => EvalError::Search(e),
        crate::retrieval::access::AccessError::Unknown { .. } => unreachable!("the default principal always exists"),
    })
}

/// Runs the evaluation. `settings` supplies the chunking and the other sections; its sources and output
/// are replaced by the temporary corpus.
pub fn evaluate(
    settings: &Project,
    corpus: &Path,
    queries: &Path,
    qrels: &Path,
    mode: Mode,
) -> Result<EvalReport, EvalError> {
    let search_mode = mode.search_mode();
    if mode != Mode::Keyword && settings.config.embeddings.provider == crate::config::EmbeddingProvider::None {
        return Err(EvalError::Unavailable(if mode == Mode::Semantic { "semantic" } else { "hybrid" }));
    }
    let documents: Vec<Document> = read_jsonl(corpus)?;
    let queries: Vec<Query> = read_jsonl(queries)?;
    let judgments = read_qrels(qrels)?;

    let (_work, project, build_ms) = build_collection(settings, &documents)?;

    let conn = store::open_read_only(&project.output_dir().join(store::DB_FILE))?;
    let access = default_access(&conn)?;
    // With a Postgres store (`KNOWLEDGE_STORE_URL`), the build published the collection there, and the
    // searches read it: the store's ranking is scored instead of the SQLite index's.
    let mut postgres = project.store_url().map(|url| store::postgres::PgStore::connect_reader(&url)).transpose()?;
    let projects = [project.store_project()];
    let mut run = |request: &SearchRequest| -> Result<search::SearchResponse, EvalError> {
        match postgres.as_mut() {
            Some(pg) => Ok(search::search_postgres(pg, &projects, request, None)?),
            None => search::search(&conn, request, &access).map_err(EvalError::Search),
        }
    };
    let ids: HashMap<String, &str> =
        documents.iter().map(|d| (format!("corpus/{}.md", file_name(&d.id)), d.id.as_str())).collect();
    let mut totals = [0.0_f64; 4];
    let mut latencies = Vec::new();
    let mut scored = 0;
    for query in &queries {
        let Some(relevant) = judgments.get(&query.id).filter(|j| j.values().any(|&grade| grade > 0)) else {
            continue;
        };
        // Latency is that of the call agents make (10 results); the ranking is scored 100 deep.
        let mut request = SearchRequest {
            query: query.text.clone(),
            mode: search_mode,
            limit: 10,
            kinds: Vec::new(),
            entity_types: Vec::new(),
            highlight: Highlight::Markdown,
        };
        let clock = Instant::now();
        run(&request)?;
        latencies.push(clock.elapsed().as_secs_f64() * 1000.0);
        request.limit = 100;
        let response = run(&request)?;
        if let Some(reason) = response.degraded_reason.clone().filter(|_| response.degraded) {
            return Err(EvalError::Embeddings(reason));
        }
        let scores = score(&document_ranking(&response, &ids), relevant);
        for (total, value) in totals.iter_mut().zip(scores) {
            *total += value;
        }
        scored += 1;
    }
    let mean = |total: f64| if scored == 0 { 0.0 } else { total / f64::from(scored) };
    Ok(EvalReport {
        mode,
        documents: documents.len(),
        queries: scored as usize,
        ndcg_at_10: mean(totals[0]),
        recall_at_10: mean(totals[1]),
        recall_at_100: mean(totals[2]),
        mrr_at_10: mean(totals[3]),
        latency_ms: Latency::of(latencies),
        build_ms,
    })
}

/// The collection's documents in the order a search ranks them: a document split into several chunks counts
/// once, at its best rank.
fn document_ranking<'a>(response: &search::SearchResponse, ids: &HashMap<String, &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    response.results.iter().filter_map(|r| ids.get(&r.source.path).copied()).filter(|id| seen.insert(*id)).collect()
}

/// nDCG@10 (gain 2^grade − 1, discount log2(rank + 1)), Recall@10, Recall@100 and MRR@10 of one ranking.
/// A grade above 0 is relevant.
#[must_use]
pub fn score(ranking: &[&str], judged: &HashMap<String, u32>) -> [f64; 4] {
    let gain = |grade: u32| f64::from((1_u32 << grade.min(16)) - 1);
    let discount = |rank: usize| (rank as f64 + 2.0).log2();
    let dcg: f64 = ranking
        .iter()
        .take(10)
        .enumerate()
        .map(|(rank, id)| gain(judged.get(*id).copied().unwrap_or(0)) / discount(rank))
        .sum();
    let mut ideal: Vec<u32> = judged.values().copied().collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(rank, &grade)| gain(grade) / discount(rank)).sum();
    let relevant = judged.values().filter(|&&grade| grade > 0).count();
    let found = |depth: usize| ranking.iter().take(depth).filter(|id| judged.get(**id).is_some_and(|&g| g > 0)).count();
    let recall = |depth: usize| if relevant == 0 { 0.0 } else { found(depth) as f64 / relevant as f64 };
    let first = ranking.iter().take(10).position(|id| judged.get(*id).is_some_and(|&g| g > 0));
    [
        if idcg > 0.0 { dcg / idcg } else { 0.0 },
        recall(10),
        recall(100),
        first.map_or(0.0, |rank| 1.0 / (rank as f64 + 1.0)),
    ]
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read { path: path.to_path_buf(), source })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|e| EvalError::Parse {
                path: path.to_path_buf(),
                line: index + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

/// `query-id <tab> corpus-id <tab> score`, with a header line.
fn read_qrels(path: &Path) -> Result<HashMap<String, HashMap<String, u32>>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read { path: path.to_path_buf(), source })?;
    let mut judgments: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        if index == 0 && fields.first().is_some_and(|f| f.contains("query")) || line.trim().is_empty() {
            continue;
        }
        let parsed = match fields.as_slice() {
            [query, document, grade] => grade.parse::<i64>().ok().map(|g| (query, document, g)),
            _ => None,
        };
        let Some((query, document, grade)) = parsed else {
            return Err(EvalError::Parse {
                path: path.to_path_buf(),
                line: index + 1,
                message: "expected `query-id<TAB>corpus-id<TAB>score`".to_string(),
            });
        };
        let grade = u32::try_from(grade.max(0)).unwrap_or(0);
        judgments.entry((*query).to_string()).or_default().insert((*document).to_string(), grade);
    }
    Ok(judgments)
}

/// A document id as a safe file name.
fn file_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

fn write_file(path: &Path, text: &str) -> Result<(), EvalError> {
    let wrap = |source| EvalError::Read { path: path.to_path_buf(), source };
    std::fs::create_dir_all(path.parent().unwrap_or(path)).map_err(wrap)?;
    std::fs::write(path, text).map_err(wrap)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::score;

    fn judged(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
        pairs.iter().map(|(id, grade)| ((*id).to_string(), *grade)).collect()
    }

    #[test]
    fn a_perfect_ranking_scores_one_and_misses_score_zero() {
        let j = judged(&[("a", 3), ("b", 1), ("x", 0)]);
        assert_eq!(score(&["a", "b"], &j), [1.0, 1.0, 1.0, 1.0]);
        assert_eq!(score(&["x", "y"], &j), [0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn metrics_follow_their_definitions() {
        let j = judged(&[("a", 3), ("b", 1)]);
        // b at rank 1, a at rank 2: DCG = 1/log2(2) + 7/log2(3); IDCG = 7/log2(2) + 1/log2(3).
        let [ndcg, r10, r100, mrr] = score(&["b", "a"], &j);
        let expected = (1.0 + 7.0 / 3f64.log2()) / (7.0 + 1.0 / 3f64.log2());
        assert!((ndcg - expected).abs() < 1e-12, "{ndcg} vs {expected}");
        assert_eq!((r10, r100, mrr), (1.0, 1.0, 1.0));
        // The only relevant document at rank 12: outside the top 10, inside the top 100.
        let ranking: Vec<String> = (0..11).map(|i| format!("n{i}")).chain(["a".to_string()]).collect();
        let ranking: Vec<&str> = ranking.iter().map(String::as_str).collect();
        assert_eq!(score(&ranking, &judged(&[("a", 2)])), [0.0, 0.0, 1.0, 0.0]);
        assert_eq!(score(&["n", "a"], &judged(&[("a", 2)]))[3], 0.5);
    }
}
