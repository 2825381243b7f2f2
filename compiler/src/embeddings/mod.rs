//! Embeddings: the providers, one generation per model, vectors reused by content hash, and the vector
//! index searches scan.
//!
//! After its commit, a build embeds every chunk that has no ready entry for its current revision in the
//! configured model: it reads them from the committed index (`EmbeddingPlan`), asks the provider with no
//! transaction open (`embed`), and writes the vectors in a transaction of its own (`apply`). The embedded
//! text is the chunk's title, a blank line and its text, and a vector is keyed by (model, hash of that
//! text), so an edit embeds only changed chunks and a rename embeds nothing. A provider that fails leaves
//! its chunks `pending`; the build finishes, says it is degraded, and the next one retries them.

use std::collections::HashMap;

use knowledge_queries::content_hash;
use rayon::prelude::*;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::config::{EmbeddingProvider, Project};
use knowledge_queries::Origin;

#[cfg(feature = "local-embeddings")]
mod local;

/// Turns texts into vectors.
pub trait Embedder: Sync {
    /// The generation's id: provider and model, and whatever changes the vectors (`fake:256`).
    fn model(&self) -> &str;
    fn provider(&self) -> &'static str;
    fn dimensions(&self) -> usize;
    /// One L2-normalized vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
    /// The vector of a search query (some models embed queries differently from documents).
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
        let mut vectors = self.embed(&[query])?;
        if vectors.len() == 1 { Ok(vectors.remove(0)) } else { Err("no vector for the query".to_string()) }
    }
    /// The settings that reproduce this embedder for queries, without secrets: stored in the index.
    fn settings(&self) -> serde_json::Value;
}

/// Deterministic vectors from hashed words (feature hashing with signs): texts that share words point the
/// same way. For tests and offline checks, never for quality.
pub struct FakeEmbedder {
    model: String,
    dimensions: usize,
}

impl FakeEmbedder {
    #[must_use]
    pub fn new(dimensions: usize) -> FakeEmbedder {
        FakeEmbedder { model: format!("fake:{dimensions}"), dimensions }
    }
}

impl Embedder for FakeEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &'static str {
        "fake"
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({"provider": "fake", "dimensions": self.dimensions})
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        // Tests stand in for a provider outage with `KNOWLEDGE_FAILPOINT=embed`.
        if std::env::var_os("KNOWLEDGE_FAILPOINT").is_some_and(|v| v == "embed") {
            return Err("the provider is unreachable (failpoint `embed`)".to_string());
        }
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0_f32; self.dimensions];
                for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1) {
                    let hash = word.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                        (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0000_01b3)
                    });
                    // FNV's low bits are weak; SplitMix64's finalizer spreads them before the modulo.
                    let hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    let hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    let hash = hash ^ (hash >> 31);
                    let slot = (hash % self.dimensions as u64) as usize;
                    vector[slot] += if hash >> 63 == 0 { 1.0 } else { -1.0 };
                }
                normalize(&mut vector);
                vector
            })
            .collect())
    }
}

fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The embedder `kc.toml` configures, or `None` for `provider = "none"`. A local model that cannot be
/// loaded is an error naming the file.
pub fn configured(project: &Project) -> Result<Option<Box<dyn Embedder>>, String> {
    let config = &project.config.embeddings;
    let dimensions = config.dimensions.as_ref().map(|d| *d.get_ref() as usize);
    Ok(match config.provider {
        EmbeddingProvider::None => None,
        EmbeddingProvider::Fake => Some(Box::new(FakeEmbedder::new(dimensions.unwrap_or(256)))),
        EmbeddingProvider::Local => {
            local_model(&project.root.join(config.model_dir.as_ref().map_or("", |d| d.get_ref().as_str())))?
        }
        EmbeddingProvider::OpenAi => Some(Box::new(OpenAiEmbedder::new(OpenAiSettings {
            base_url: config.base_url.clone().unwrap_or_default(),
            model: config.model.clone().unwrap_or_default(),
            query_model: config.query_model.clone(),
            dimensions,
            api_key_env: config.api_key_env.clone(),
            api_version: config.api_version.clone(),
            timeout_seconds: config.timeout_seconds,
            max_retries: config.max_retries,
        }))),
    })
}

/// The local model of `dir`: named at once, loaded on its first embedding (a no-op build loads nothing).
#[cfg(feature = "local-embeddings")]
fn local_model(dir: &std::path::Path) -> Result<Option<Box<dyn Embedder>>, String> {
    let identity = local::identity(dir)?;
    Ok(Some(Box::new(LazyLocal { identity, dir: dir.to_path_buf(), loaded: std::sync::OnceLock::new() })))
}

/// The local model of `dir`, loaded once per process: searches embed every query with it, and loading
/// reads the whole weights file.
#[cfg(feature = "local-embeddings")]
fn loaded_local_model(dir: &std::path::Path) -> Result<std::sync::Arc<local::LocalEmbedder>, String> {
    type Loaded = std::sync::Mutex<HashMap<std::path::PathBuf, std::sync::Arc<local::LocalEmbedder>>>;
    static LOADED: std::sync::OnceLock<Loaded> = std::sync::OnceLock::new();
    let loaded = LOADED.get_or_init(Loaded::default);
    let mut loaded = loaded.lock().expect("the model cache lock is never poisoned");
    if let Some(model) = loaded.get(dir) {
        return Ok(model.clone());
    }
    let model = std::sync::Arc::new(local::LocalEmbedder::load(dir)?);
    loaded.insert(dir.to_path_buf(), model.clone());
    Ok(model)
}

/// A local model known by its identity until something is embedded.
#[cfg(feature = "local-embeddings")]
struct LazyLocal {
    identity: local::Identity,
    dir: std::path::PathBuf,
    loaded: std::sync::OnceLock<Result<std::sync::Arc<local::LocalEmbedder>, String>>,
}

#[cfg(feature = "local-embeddings")]
impl LazyLocal {
    fn model(&self) -> Result<&std::sync::Arc<local::LocalEmbedder>, String> {
        self.loaded.get_or_init(|| loaded_local_model(&self.dir)).as_ref().map_err(Clone::clone)
    }
}

#[cfg(feature = "local-embeddings")]
impl Embedder for LazyLocal {
    fn model(&self) -> &str {
        &self.identity.id
    }

    fn provider(&self) -> &'static str {
        "local"
    }

    fn dimensions(&self) -> usize {
        self.identity.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.model()?.embed(texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
        self.model()?.embed_query(query)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({"provider": "local", "model_dir": self.dir})
    }
}

/// A shared embedder is an embedder.
impl<T: Embedder + Send> Embedder for std::sync::Arc<T> {
    fn model(&self) -> &str {
        T::model(self)
    }

    fn provider(&self) -> &'static str {
        T::provider(self)
    }

    fn dimensions(&self) -> usize {
        T::dimensions(self)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        T::embed(self, texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
        T::embed_query(self, query)
    }

    fn settings(&self) -> serde_json::Value {
        T::settings(self)
    }
}

/// Without the `local-embeddings` feature the configuration is refused before a build starts.
#[cfg(not(feature = "local-embeddings"))]
fn local_model(_dir: &std::path::Path) -> Result<Option<Box<dyn Embedder>>, String> {
    Err("this binary was built without the `local-embeddings` feature".to_string())
}

/// The embedder an index's vectors were made with (from the settings the build stored), to embed queries
/// the same way; `None` when the index has no generation.
pub fn for_index(conn: &Connection) -> rusqlite::Result<Option<Box<dyn Embedder>>> {
    let Some(model) = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty()) else { return Ok(None) };
    let settings: serde_json::Value = crate::store::meta(conn, "embeddings_settings")?
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    Ok(match settings["provider"].as_str() {
        Some("openai") => serde_json::from_value::<OpenAiSettings>(settings)
            .ok()
            .map(|settings| Box::new(OpenAiEmbedder::new(settings)) as Box<dyn Embedder>),
        Some("local") => {
            settings["model_dir"].as_str().and_then(|dir| local_model(std::path::Path::new(dir)).ok().flatten())
        }
        _ => model
            .strip_prefix("fake:")
            .and_then(|dims| dims.parse().ok())
            .map(|dims| Box::new(FakeEmbedder::new(dims)) as Box<dyn Embedder>),
    })
}

/// An OpenAI-compatible endpoint's settings, as `kc.toml` gives them (the key's variable, never the key).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct OpenAiSettings {
    pub base_url: String,
    pub model: String,
    pub query_model: Option<String>,
    pub dimensions: Option<usize>,
    pub api_key_env: Option<String>,
    pub api_version: Option<String>,
    pub timeout_seconds: u32,
    pub max_retries: u32,
}

/// Any OpenAI-compatible `/v1/embeddings` endpoint: OpenAI, Azure OpenAI (deployment URL, `api-version`,
/// `api-key` header), or a local server. Retries timeouts, connection failures, 429 and 5xx with
/// exponential backoff; a 4xx is an error at once, with the endpoint's message.
pub struct OpenAiEmbedder {
    settings: OpenAiSettings,
    id: String,
    agent: ureq::Agent,
}

impl OpenAiEmbedder {
    #[must_use]
    pub fn new(settings: OpenAiSettings) -> OpenAiEmbedder {
        let id = match settings.dimensions {
            Some(dimensions) => format!("openai:{}:{dimensions}", settings.model),
            None => format!("openai:{}", settings.model),
        };
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(u64::from(settings.timeout_seconds.max(1)))))
            .http_status_as_error(false)
            .build()
            .into();
        OpenAiEmbedder { settings, id, agent }
    }

    fn request(&self, model: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let base = self.settings.base_url.trim_end_matches('/');
        let url = match &self.settings.api_version {
            Some(version) => format!("{base}/openai/deployments/{model}/embeddings?api-version={version}"),
            None => format!("{base}/embeddings"),
        };
        let key = match &self.settings.api_key_env {
            Some(variable) => {
                Some(std::env::var(variable).map_err(|_| format!("the environment variable `{variable}` is not set"))?)
            }
            None => None,
        };
        let mut body = serde_json::json!({"model": model, "input": texts, "encoding_format": "float"});
        if let Some(dimensions) = self.settings.dimensions {
            body["dimensions"] = dimensions.into();
        }
        let mut attempt = 0;
        loop {
            let mut request = self.agent.post(&url).header("Content-Type", "application/json");
            if let Some(key) = &key {
                request = if self.settings.api_version.is_some() {
                    request.header("api-key", key)
                } else {
                    request.header("Authorization", format!("Bearer {key}"))
                };
            }
            let retryable = match request.send_json(&body) {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let text = response.into_body().read_to_string().map_err(|e| format!("reading the answer: {e}"))?;
                    if status == 200 {
                        return parse_embeddings(&text, texts.len());
                    }
                    let message = serde_json::from_str::<serde_json::Value>(&text)
                        .ok()
                        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                        .unwrap_or_else(|| text.chars().take(200).collect());
                    let error = format!("{url} answered {status}: {message}");
                    if status != 429 && status < 500 {
                        return Err(error);
                    }
                    error
                }
                Err(error) => format!("{url}: {error}"),
            };
            if attempt >= self.settings.max_retries {
                return Err(format!("{retryable} (after {} attempts)", attempt + 1));
            }
            std::thread::sleep(std::time::Duration::from_millis(200 << attempt.min(6)));
            attempt += 1;
        }
    }
}

/// The vectors of an embeddings answer, in input order, L2-normalized.
fn parse_embeddings(text: &str, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        data: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        embedding: Vec<f32>,
        index: usize,
    }
    let mut answer: Answer =
        serde_json::from_str(text).map_err(|e| format!("an answer that is not embeddings: {e}"))?;
    answer.data.sort_by_key(|item| item.index);
    if answer.data.len() != expected || answer.data.iter().enumerate().any(|(at, item)| item.index != at) {
        return Err(format!("{} vectors for {expected} texts", answer.data.len()));
    }
    Ok(answer
        .data
        .into_iter()
        .map(|item| {
            let mut vector = item.embedding;
            normalize(&mut vector);
            vector
        })
        .collect())
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &'static str {
        "openai"
    }

    fn dimensions(&self) -> usize {
        self.settings.dimensions.unwrap_or(0)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.request(&self.settings.model, texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
        let model = self.settings.query_model.as_deref().unwrap_or(&self.settings.model);
        self.request(model, &[query])?.pop().ok_or_else(|| "no vector for the query".to_string())
    }

    fn settings(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.settings).expect("settings serialize");
        value["provider"] = "openai".into();
        value
    }
}

/// What a build did to the embeddings of its generation. Printed in `knowledge build --json`.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EmbeddingCounters {
    pub model: String,
    pub provider: &'static str,
    /// Vectors the provider computed this build.
    pub computed: u64,
    /// Chunks that got a vector another chunk (or an earlier build) had computed for the same text.
    pub reused: u64,
    /// Chunks left without a vector because the provider failed; the next build retries them.
    pub pending: u64,
    /// Entries of chunks that no longer exist.
    pub deleted: u64,
    /// Why the generation is incomplete, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    /// The vectors are the `fake` provider's: fine for tests, meaningless for search quality.
    pub fake: bool,
    /// Wall time spent in the provider this build; `computed` over it is the provider's speed.
    pub ms: u64,
}

/// Why a build must run the embedding stage even with no source changed (another model, a provider turned
/// off, pending entries to retry, or a queued job), or `None` when it need not. `model` is the configured
/// generation's id, known without loading a model.
pub fn needs_stage(conn: &Connection, model: Option<&str>) -> rusqlite::Result<Option<String>> {
    let stored = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let Some(model) = model else {
        return Ok(
            stored.map(|stored| format!("the provider was turned off: the vectors of `{stored}` would be dropped"))
        );
    };
    if stored.as_deref() != Some(model) {
        return Ok(Some(match stored {
            Some(stored) => format!("the embedding model changed from `{stored}` to `{model}`"),
            None => format!("nothing is embedded with `{model}` yet"),
        }));
    }
    // The embedding stage commits after the build: a build stopped in between left chunks without vectors.
    if crate::store::meta(conn, "embedded_run")? != crate::store::meta(conn, "last_run")? {
        return Ok(Some("the last build's embedding stage did not finish".to_string()));
    }
    let (pending, queued): (bool, bool) = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM vector_index_entries WHERE model = ?1 AND status = 'pending'),
                EXISTS (SELECT 1 FROM reindex_queue WHERE model = ?1 AND status = 'queued')",
        [model],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    Ok(if pending {
        Some("chunks a provider failed on are pending".to_string())
    } else if queued {
        Some("a reindex job is queued".to_string())
    } else {
        None
    })
}

/// Drops the vectors of an index whose provider was turned off; inside the build's transaction (no
/// provider is called).
pub fn drop_if_turned_off(conn: &Connection) -> rusqlite::Result<()> {
    if crate::store::meta(conn, "embeddings_model")?.is_some_and(|model| !model.is_empty()) {
        conn.execute_batch("DELETE FROM vector_index_entries; DELETE FROM chunk_embeddings;")?;
        // As if there had never been a provider: a clean build without one has neither key.
        conn.execute("DELETE FROM meta WHERE key IN ('embeddings_model', 'embeddings_settings', 'embedded_run')", [])?;
    }
    Ok(())
}

/// A chunk whose current revision has no ready entry in the generation.
struct Missing {
    chunk_id: String,
    text: String,
    hash: String,
    source_ref: String,
    revision: String,
    start: u32,
    end: u32,
}

/// What the embedding stage must do, read from the committed index: the chunks without a ready entry for
/// their current revision and offsets (a chunk re-cut by a `[chunking]` change may keep its id and move),
/// and which of their texts have no vector yet.
pub struct EmbeddingPlan {
    model: String,
    /// A queued full reindex: the generation is dropped and every chunk embedded again.
    full: bool,
    missing: Vec<Missing>,
    /// Indexes into `missing` of the texts to send to the provider (one per distinct text).
    to_embed: Vec<usize>,
    /// The dimensions of the vectors already stored, when any are reused.
    known_dimensions: Option<usize>,
    reused: u64,
}

impl EmbeddingPlan {
    /// Reads what the stage must do for `model` from the index as the build committed it.
    pub fn read(conn: &Connection, model: &str) -> rusqlite::Result<EmbeddingPlan> {
        let full: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM reindex_queue WHERE model = ?1 AND status = 'queued' AND full = 1)",
            [model],
            |row| row.get(0),
        )?;
        // A full reindex embeds every chunk again, as if no entry or vector existed.
        let missing: Vec<Missing> = conn
            .prepare(&format!(
                "SELECT c.id, c.title, c.text, s.uri, c.revision, c.start_offset, c.end_offset
                 FROM chunks c JOIN sources s ON s.id = c.source_id
                 WHERE NOT {}
                   AND (?2 OR NOT EXISTS (SELECT 1 FROM vector_index_entries e
                                          WHERE e.chunk_id = c.id AND e.model = ?1 AND e.status = 'ready'
                                                AND e.revision = c.revision
                                                AND e.start_offset = c.start_offset
                                                AND e.end_offset = c.end_offset))",
                Origin::Note.sql_condition("s.path")
            ))?
            .query_map(params![model, full], |row| {
                let title: String = row.get(1)?;
                let body: String = row.get(2)?;
                let text = format!("{title}\n\n{body}");
                Ok(Missing {
                    chunk_id: row.get(0)?,
                    hash: content_hash(text.as_bytes()),
                    text,
                    source_ref: row.get(3)?,
                    revision: row.get(4)?,
                    start: row.get(5)?,
                    end: row.get(6)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut have =
            conn.prepare_cached("SELECT dimensions FROM chunk_embeddings WHERE model = ?1 AND text_hash = ?2")?;
        let mut plan = EmbeddingPlan {
            model: model.to_string(),
            full,
            missing: Vec::new(),
            to_embed: Vec::new(),
            known_dimensions: None,
            reused: 0,
        };
        let mut queued: std::collections::HashSet<String> = std::collections::HashSet::new();
        for (index, item) in missing.iter().enumerate() {
            let stored = if full {
                None
            } else {
                have.query_row(params![model, item.hash], |row| row.get::<_, i64>(0)).optional()?
            };
            if let Some(stored) = stored {
                plan.known_dimensions = usize::try_from(stored).ok();
                plan.reused += 1;
            } else if queued.insert(item.hash.clone()) {
                plan.to_embed.push(index);
            } else {
                // The same text twice in this build: one vector serves both.
                plan.reused += 1;
            }
        }
        plan.missing = missing;
        Ok(plan)
    }
}

/// The provider's answers for a plan: computed with no transaction open, so a slow or failing provider
/// never holds the index's write lock.
pub struct Embedded {
    vectors: Vec<(String, Vec<f32>)>,
    failed: std::collections::HashSet<String>,
    degraded: Option<String>,
    /// Wall time spent in the provider.
    ms: u64,
}

impl EmbeddingPlan {
    /// Texts the provider will be asked for.
    #[must_use]
    pub fn texts(&self) -> usize {
        self.to_embed.len()
    }
}

/// Calls the provider for the plan's texts, `batch_size` at a time, telling `done` how many texts each
/// batch held (a progress bar's steps). A failure leaves the rest of the texts failed too (they become
/// `pending` entries the next build retries).
#[must_use]
pub fn embed(plan: &EmbeddingPlan, embedder: &dyn Embedder, batch_size: usize, done: &dyn Fn(usize)) -> Embedded {
    let clock = std::time::Instant::now();
    let mut embedded =
        Embedded { vectors: Vec::new(), failed: std::collections::HashSet::new(), degraded: None, ms: 0 };
    for batch in plan.to_embed.chunks(batch_size.max(1)) {
        let items: Vec<&Missing> = batch.iter().map(|&i| &plan.missing[i]).collect();
        if embedded.degraded.is_some() {
            embedded.failed.extend(items.iter().map(|item| item.hash.clone()));
            continue;
        }
        let texts: Vec<&str> = items.iter().map(|item| item.text.as_str()).collect();
        match embedder.embed(&texts) {
            Ok(vectors) if vectors.len() == items.len() => {
                embedded.vectors.extend(items.iter().map(|item| item.hash.clone()).zip(vectors));
            }
            Ok(vectors) => {
                embedded.degraded =
                    Some(format!("the provider returned {} vectors for {} texts", vectors.len(), items.len()));
                embedded.failed.extend(items.iter().map(|item| item.hash.clone()));
            }
            Err(error) => {
                embedded.degraded = Some(format!("the provider failed: {error}"));
                embedded.failed.extend(items.iter().map(|item| item.hash.clone()));
            }
        }
        done(batch.len());
    }
    embedded.ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
    embedded
}

/// Writes a plan's vectors and entries, in the stage's own transaction: drops the generation for a full
/// reindex, marks queued jobs done, removes entries of chunks that are gone and vectors no entry uses, and
/// records the generation (`embeddings_model`, `embeddings_settings`) and the run whose chunks it covers
/// (`embedded_run`).
pub fn apply(
    conn: &Connection,
    embedder: &dyn Embedder,
    plan: &EmbeddingPlan,
    embedded: &Embedded,
    run_id: &str,
) -> rusqlite::Result<EmbeddingCounters> {
    let model = plan.model.as_str();
    if plan.full {
        conn.execute("DELETE FROM vector_index_entries WHERE model = ?1", [model])?;
        conn.execute("DELETE FROM chunk_embeddings WHERE model = ?1", [model])?;
    }
    conn.execute(
        "UPDATE reindex_queue SET status = 'done', done_run = ?2 WHERE model = ?1 AND status = 'queued'",
        params![model, run_id],
    )?;
    let mut counters = EmbeddingCounters {
        model: model.to_string(),
        provider: embedder.provider(),
        fake: embedder.provider() == "fake",
        reused: plan.reused,
        degraded: embedded.degraded.clone(),
        ms: embedded.ms,
        ..EmbeddingCounters::default()
    };
    // Other generations are kept (a model switch builds beside them), but not for chunks that are gone.
    counters.deleted = conn.execute(
        "DELETE FROM vector_index_entries WHERE model = ?1 AND chunk_id NOT IN (SELECT id FROM chunks)",
        [model],
    )? as u64;
    conn.execute("DELETE FROM vector_index_entries WHERE chunk_id NOT IN (SELECT id FROM chunks)", [])?;

    let mut insert_vector = conn.prepare_cached(
        "INSERT OR REPLACE INTO chunk_embeddings (model, text_hash, dimensions, vector, created_run)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    // An endpoint may choose the dimensions; the vectors say what they are.
    let mut dimensions = plan.known_dimensions.unwrap_or_else(|| embedder.dimensions());
    for (hash, vector) in &embedded.vectors {
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        insert_vector.execute(params![model, hash, vector.len() as i64, bytes, run_id])?;
        counters.computed += 1;
        dimensions = vector.len();
    }
    let mut upsert_entry = conn.prepare_cached(
        "INSERT OR REPLACE INTO vector_index_entries (chunk_id, model, provider, dimensions, source_ref, revision,
                                                       text_hash, start_offset, end_offset, status, updated_run,
                                                       updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    )?;
    for item in &plan.missing {
        let status = if embedded.failed.contains(&item.hash) { "pending" } else { "ready" };
        if status == "pending" {
            counters.pending += 1;
        }
        upsert_entry.execute(params![
            item.chunk_id,
            model,
            embedder.provider(),
            dimensions as i64,
            item.source_ref,
            item.revision,
            item.hash,
            item.start,
            item.end,
            status,
            run_id,
        ])?;
    }
    // Vectors no entry uses any more: the text is gone from every chunk.
    conn.execute(
        "DELETE FROM chunk_embeddings WHERE NOT EXISTS (SELECT 1 FROM vector_index_entries e
            WHERE e.model = chunk_embeddings.model AND e.text_hash = chunk_embeddings.text_hash)",
        [],
    )?;
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embeddings_model', ?1)", [model])?;
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('embeddings_settings', ?1)",
        [embedder.settings().to_string()],
    )?;
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embedded_run', ?1)", [run_id])?;
    Ok(counters)
}

/// Nearest-vector search over one generation. Searches and their output depend only on this interface:
/// [`MatrixIndex`] scans; an ANN index or pgvector can take its place.
pub trait VectorIndex: Send + Sync {
    /// How many vectors it holds.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `k` rows most similar to `query` (cosine: the vectors are normalized) among those `allow`
    /// accepts (by source path), best first, as (`chunks.seq`, similarity). `allow` is applied inside the
    /// search, never to its results.
    fn search(&self, query: &[f32], k: usize, allow: &(dyn Fn(&str) -> bool + Sync)) -> Vec<(i64, f32)>;
}

/// The vectors of one generation as one contiguous matrix, scanned in parallel.
pub struct MatrixIndex {
    dimensions: usize,
    /// Row i's vector is `matrix[i * dimensions..(i + 1) * dimensions]`.
    matrix: Vec<f32>,
    /// The chunk's row in `chunks` (`seq`), and its source's path, for filters.
    rows: Vec<(i64, String)>,
}

impl MatrixIndex {
    /// The ready vectors of `model`, from a cache that lives as long as the process and holds the latest
    /// index state it saw: a search after a new build (another `last_run`) loads again. Every principal
    /// shares it; permissions are applied by the scan.
    pub fn cached(conn: &Connection, model: &str) -> rusqlite::Result<std::sync::Arc<MatrixIndex>> {
        type Cache = std::sync::Mutex<HashMap<(String, String), (String, std::sync::Arc<MatrixIndex>)>>;
        static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let file = conn.path().unwrap_or_default().to_string();
        let run = crate::store::meta(conn, "last_run")?.unwrap_or_default();
        let cache = CACHE.get_or_init(Cache::default);
        let key = (file, model.to_string());
        if let Some((seen, index)) = cache.lock().expect("the cache lock is never poisoned").get(&key)
            && *seen == run
        {
            return Ok(index.clone());
        }
        let index = std::sync::Arc::new(MatrixIndex::load(conn, model)?);
        cache.lock().expect("the cache lock is never poisoned").insert(key, (run, index.clone()));
        Ok(index)
    }

    /// Loads the ready vectors of `model`.
    pub fn load(conn: &Connection, model: &str) -> rusqlite::Result<MatrixIndex> {
        let mut statement = conn.prepare(
            "SELECT c.seq, s.path, v.vector, v.dimensions
             FROM vector_index_entries e
             JOIN chunk_embeddings v ON v.model = e.model AND v.text_hash = e.text_hash
             JOIN chunks c ON c.id = e.chunk_id JOIN sources s ON s.id = c.source_id
             WHERE e.model = ?1 AND e.status = 'ready'",
        )?;
        let mut index = MatrixIndex { dimensions: 0, matrix: Vec::new(), rows: Vec::new() };
        let mut rows = statement.query([model])?;
        while let Some(row) = rows.next()? {
            let bytes: Vec<u8> = row.get(2)?;
            let dimensions = usize::try_from(row.get::<_, i64>(3)?).unwrap_or(0);
            if dimensions == 0
                || bytes.len() != dimensions * 4
                || (index.dimensions != 0 && dimensions != index.dimensions)
            {
                continue;
            }
            index.dimensions = dimensions;
            index.matrix.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            index.rows.push((row.get(0)?, row.get(1)?));
        }
        Ok(index)
    }

    /// An index over vectors already in memory (`matrix` holds `rows.len()` vectors of `dimensions`), for
    /// benchmarks and tests. `rows` are (`chunks.seq`, source path).
    #[must_use]
    pub fn from_matrix(dimensions: usize, matrix: Vec<f32>, rows: Vec<(i64, String)>) -> MatrixIndex {
        assert_eq!(matrix.len(), dimensions * rows.len(), "one vector per row");
        MatrixIndex { dimensions, matrix, rows }
    }
}

impl VectorIndex for MatrixIndex {
    fn len(&self) -> usize {
        self.rows.len()
    }

    /// Each block of rows keeps its own best `k` (in parallel), checking `allow` for the rows that would
    /// enter it, and the blocks' lists are merged.
    fn search(&self, query: &[f32], k: usize, allow: &(dyn Fn(&str) -> bool + Sync)) -> Vec<(i64, f32)> {
        const BLOCK: usize = 4096;
        if query.len() != self.dimensions || k == 0 || self.rows.is_empty() {
            return Vec::new();
        }
        let best = self
            .matrix
            .par_chunks(self.dimensions * BLOCK)
            .enumerate()
            .map(|(block, vectors)| {
                let mut top = TopK::new(k);
                for (at, vector) in vectors.chunks_exact(self.dimensions).enumerate() {
                    let row = block * BLOCK + at;
                    let score = dot(vector, query);
                    if top.admits(score) && allow(&self.rows[row].1) {
                        top.push(row, score);
                    }
                }
                top
            })
            .reduce(|| TopK::new(k), TopK::merge);
        best.into_sorted().into_iter().map(|(row, score)| (self.rows[row].0, score)).collect()
    }
}

/// The best `k` (row, score) pairs seen so far.
struct TopK {
    k: usize,
    items: Vec<(usize, f32)>,
    /// The worst score kept, once `k` are kept.
    floor: f32,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK { k, items: Vec::with_capacity(k + 1), floor: f32::NEG_INFINITY }
    }

    fn admits(&self, score: f32) -> bool {
        self.items.len() < self.k || score > self.floor
    }

    fn push(&mut self, row: usize, score: f32) {
        self.items.push((row, score));
        if self.items.len() > self.k {
            let worst = self.items.iter().enumerate().min_by(|a, b| a.1.1.total_cmp(&b.1.1)).map(|(at, _)| at);
            if let Some(worst) = worst {
                self.items.swap_remove(worst);
            }
        }
        if self.items.len() == self.k {
            self.floor = self.items.iter().map(|item| item.1).fold(f32::INFINITY, f32::min);
        }
    }

    fn merge(mut self, other: TopK) -> TopK {
        for (row, score) in other.items {
            if self.admits(score) {
                self.push(row, score);
            }
        }
        self
    }

    fn into_sorted(mut self) -> Vec<(usize, f32)> {
        self.items.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        self.items
    }
}

/// A dot product in eight lanes, which the compiler turns into SIMD (one running sum could not be
/// reordered, so it would stay scalar).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_lanes, a_rest) = a.as_chunks::<8>();
    let (b_lanes, b_rest) = b.as_chunks::<8>();
    let mut sums = [0.0_f32; 8];
    for (x, y) in a_lanes.iter().zip(b_lanes) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum::<f32>()
}

/// Counts per generation for `knowledge reindex status`.
#[derive(Debug, Clone, Serialize)]
pub struct GenerationStatus {
    pub model: String,
    /// Jobs queued for this generation and not yet done by a build.
    pub queued: u64,
    pub provider: String,
    pub dimensions: u64,
    pub ready: u64,
    pub pending: u64,
    /// Chunks of the index with no entry in this generation.
    pub missing: u64,
    /// Entries whose chunk's revision is not its source's current one (after a complete build: none).
    pub stale: u64,
    pub vectors: u64,
    /// The generation the last build embedded with, which searches use.
    pub current: bool,
}

/// Every generation in the index, with its counts.
pub fn status(conn: &Connection) -> rusqlite::Result<Vec<GenerationStatus>> {
    let current = crate::store::meta(conn, "embeddings_model")?.unwrap_or_default();
    // Notes are not embedded, so they are never missing.
    let chunks: u64 = conn
        .query_row(
            &format!(
                "SELECT count(*) FROM chunks c JOIN sources s ON s.id = c.source_id WHERE NOT {}",
                Origin::Note.sql_condition("s.path")
            ),
            [],
            |row| row.get::<_, i64>(0),
        )?
        .cast_unsigned();
    let mut counts: HashMap<String, GenerationStatus> = HashMap::new();
    let mut statement = conn.prepare(
        "SELECT e.model, e.provider, e.dimensions, e.status, count(*),
                sum(CASE WHEN c.revision != s.revision THEN 1 ELSE 0 END)
         FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id JOIN sources s ON s.id = c.source_id
         GROUP BY e.model, e.provider, e.dimensions, e.status",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let model: String = row.get(0)?;
        let entry = counts.entry(model.clone()).or_insert_with(|| GenerationStatus {
            current: model == current,
            model,
            queued: 0,
            provider: String::new(),
            dimensions: 0,
            ready: 0,
            pending: 0,
            missing: 0,
            stale: 0,
            vectors: 0,
        });
        entry.provider = row.get(1)?;
        entry.dimensions = row.get::<_, i64>(2)?.cast_unsigned();
        let (status, count): (String, i64) = (row.get(3)?, row.get(4)?);
        entry.stale += row.get::<_, i64>(5)?.cast_unsigned();
        if status == "ready" {
            entry.ready += count.cast_unsigned();
        } else {
            entry.pending += count.cast_unsigned();
        }
    }
    let mut generations: Vec<GenerationStatus> = counts.into_values().collect();
    for generation in &mut generations {
        generation.missing = chunks.saturating_sub(generation.ready + generation.pending);
        generation.queued = conn
            .query_row(
                "SELECT count(*) FROM reindex_queue WHERE model = ?1 AND status = 'queued'",
                [&generation.model],
                |row| row.get::<_, i64>(0),
            )?
            .cast_unsigned();
        generation.vectors = conn
            .query_row("SELECT count(*) FROM chunk_embeddings WHERE model = ?1", [&generation.model], |row| {
                row.get::<_, i64>(0)
            })?
            .cast_unsigned();
    }
    generations.sort_by(|a, b| b.current.cmp(&a.current).then(a.model.cmp(&b.model)));
    Ok(generations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_vectors_are_deterministic_normalized_and_closer_for_shared_words() {
        let fake = FakeEmbedder::new(64);
        let vectors = fake.embed(&["ownership rules memory", "memory ownership", "lifetimes of references"]).unwrap();
        assert_eq!(
            vectors,
            fake.embed(&["ownership rules memory", "memory ownership", "lifetimes of references"]).unwrap()
        );
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!((dot(&vectors[0], &vectors[0]) - 1.0).abs() < 1e-5);
        assert!(dot(&vectors[0], &vectors[1]) > dot(&vectors[0], &vectors[2]));
    }

    #[test]
    fn the_scan_keeps_the_best_k_and_applies_the_filter_inside() {
        let index = MatrixIndex {
            dimensions: 2,
            matrix: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8, -1.0, 0.0],
            rows: vec![(10, "a.md".into()), (11, "b.md".into()), (12, "secret.md".into()), (13, "d.md".into())],
        };
        assert_eq!(index.search(&[1.0, 0.0], 2, &|_| true), [(10, 1.0), (12, 0.6)]);
        assert_eq!(index.search(&[1.0, 0.0], 2, &|path| path != "secret.md"), [(10, 1.0), (11, 0.0)]);
    }
}
