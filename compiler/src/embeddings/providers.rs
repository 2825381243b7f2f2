//! The providers: `fake` (hashed words, for tests), `openai` (any OpenAI-compatible endpoint) and `local`
//! (the in-process model, feature `local-embeddings`), chosen from `kc.toml` for a build or from the index's
//! stored settings for a search.

use rusqlite::Connection;
use serde::Serialize;

use super::*;

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

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Tests stand in for a provider outage with `KNOWLEDGE_FAILPOINT=embed`.
        if std::env::var_os("KNOWLEDGE_FAILPOINT").is_some_and(|v| v == "embed") {
            return Err(EmbedError::Failpoint);
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

pub(super) fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The embedder `kc.toml` configures, or `None` for `provider = "none"`. A local model that cannot be
/// loaded is an error naming the file.
pub fn configured(project: &Project) -> Result<Option<Box<dyn Embedder>>, LocalModelError> {
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
fn local_model(dir: &std::path::Path) -> Result<Option<Box<dyn Embedder>>, LocalModelError> {
    let identity = local::identity(dir)?;
    Ok(Some(Box::new(LazyLocal { identity, dir: dir.to_path_buf(), loaded: std::sync::OnceLock::new() })))
}

/// The local model of `dir`, loaded once per process: searches embed every query with it, and loading
/// reads the whole weights file.
#[cfg(feature = "local-embeddings")]
fn loaded_local_model(dir: &std::path::Path) -> Result<std::sync::Arc<local::LocalEmbedder>, LocalModelError> {
    type Loaded = std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, std::sync::Arc<local::LocalEmbedder>>>;
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
    loaded: std::sync::OnceLock<Result<std::sync::Arc<local::LocalEmbedder>, LocalModelError>>,
}

#[cfg(feature = "local-embeddings")]
impl LazyLocal {
    fn model(&self) -> Result<&std::sync::Arc<local::LocalEmbedder>, LocalModelError> {
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

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.model()?.embed(texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
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

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        T::embed(self, texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        T::embed_query(self, query)
    }

    fn settings(&self) -> serde_json::Value {
        T::settings(self)
    }
}

/// Without the `local-embeddings` feature the configuration is refused before a build starts.
#[cfg(not(feature = "local-embeddings"))]
fn local_model(_dir: &std::path::Path) -> Result<Option<Box<dyn Embedder>>, LocalModelError> {
    Err(LocalModelError::NotBuilt)
}

/// The embedder an index's vectors were made with (from the settings the build stored), to embed queries
/// the same way; `None` when the index has no generation.
pub fn for_index(conn: &Connection) -> rusqlite::Result<Option<Box<dyn Embedder>>> {
    let model = crate::store::meta(conn, "embeddings_model")?;
    let settings = crate::store::meta(conn, "embeddings_settings")?;
    Ok(for_settings(model.as_deref(), settings.as_deref()))
}

/// The embedder of a generation, from its model and settings as the index stores them (meta
/// `embeddings_model`, `embeddings_settings`): `None` without a generation or when it cannot be made here.
#[must_use]
pub fn for_settings(model: Option<&str>, settings: Option<&str>) -> Option<Box<dyn Embedder>> {
    let model = model.filter(|m| !m.is_empty())?;
    let settings: serde_json::Value = settings.and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
    match settings["provider"].as_str() {
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
    }
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
    client: crate::providers::http::Client,
}

impl OpenAiEmbedder {
    #[must_use]
    pub fn new(settings: OpenAiSettings) -> OpenAiEmbedder {
        let id = match settings.dimensions {
            Some(dimensions) => format!("openai:{}:{dimensions}", settings.model),
            None => format!("openai:{}", settings.model),
        };
        let client = crate::providers::http::Client::new(settings.timeout_seconds, settings.max_retries);
        OpenAiEmbedder { settings, id, client }
    }

    fn request(&self, model: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let base = self.settings.base_url.trim_end_matches('/');
        let url = match &self.settings.api_version {
            Some(version) => format!("{base}/openai/deployments/{model}/embeddings?api-version={version}"),
            None => format!("{base}/embeddings"),
        };
        let mut headers = Vec::new();
        if let Some(variable) = &self.settings.api_key_env {
            let key = std::env::var(variable).map_err(|_| EmbedError::MissingKey(variable.clone()))?;
            headers.push(if self.settings.api_version.is_some() {
                ("api-key", key)
            } else {
                ("Authorization", format!("Bearer {key}"))
            });
        }
        let mut body = serde_json::json!({"model": model, "input": texts, "encoding_format": "float"});
        if let Some(dimensions) = self.settings.dimensions {
            body["dimensions"] = dimensions.into();
        }
        let text = self.client.post_json(&url, &headers, &body)?;
        parse_embeddings(&text, texts.len())
    }
}

/// The vectors of an embeddings answer, in input order, L2-normalized.
fn parse_embeddings(text: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        data: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        embedding: Vec<f32>,
        index: usize,
    }
    let mut answer: Answer = serde_json::from_str(text).map_err(EmbedError::NotEmbeddings)?;
    answer.data.sort_by_key(|item| item.index);
    if answer.data.len() != expected || answer.data.iter().enumerate().any(|(at, item)| item.index != at) {
        return Err(EmbedError::Count { got: answer.data.len(), expected });
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

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.request(&self.settings.model, texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let model = self.settings.query_model.as_deref().unwrap_or(&self.settings.model);
        self.request(model, &[query])?.pop().ok_or(EmbedError::NoQueryVector)
    }

    fn settings(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.settings).expect("settings serialize");
        value["provider"] = "openai".into();
        value
    }
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
}
