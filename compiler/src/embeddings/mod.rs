//! Embeddings: the providers, one generation per model, vectors reused by content hash, and the vector
//! index searches scan.
//!
//! After its commit, a build embeds every chunk that has no ready entry for its current revision in the
//! configured model: the query graph says which they are from the committed index's chunks and entries
//! (`EmbeddingPlan`, over `knowledge_queries::embeddings`), it asks the provider with no
//! transaction open (`embed`), and writes the vectors in a transaction of its own (`apply`). The embedded
//! text is the chunk's title, a blank line and its text, and a vector is keyed by (model, hash of that
//! text), so an edit embeds only changed chunks and a rename embeds nothing. A provider that fails leaves
//! its chunks `pending`; the build finishes, says it is degraded, and the next one retries them.

use std::collections::HashMap;

use rusqlite::Connection;
use serde::Serialize;

use crate::config::{EmbeddingProvider, Project};

#[cfg(feature = "local-embeddings")]
mod bert;
#[cfg(feature = "local-embeddings")]
mod local;
mod nibbles;
#[cfg(feature = "local-embeddings")]
pub use local::run_elementwise_inline;
mod providers;
mod stage;
mod vector_file;
mod vectors;
#[cfg(feature = "local-embeddings")]
mod weights;

pub use providers::*;
pub use stage::*;
pub use vector_file::*;
pub use vectors::*;

/// Why texts could not be embedded, or an embedder not made.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the provider is unreachable (failpoint `embed`)")]
    Failpoint,
    #[error("the environment variable `{0}` is not set")]
    MissingKey(String),
    #[error(transparent)]
    Http(#[from] crate::providers::http::HttpError),
    #[error("an answer that is not embeddings: {0}")]
    NotEmbeddings(serde_json::Error),
    #[error("{got} vectors for {expected} texts")]
    Count { got: usize, expected: usize },
    #[error("no vector for the query")]
    NoQueryVector,
    #[error(transparent)]
    Local(#[from] LocalModelError),
}

/// Why the local model could not be read, loaded or run. Kept whole (it is cloned to every caller of a model
/// that failed to load once), so it holds the causes' messages.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LocalModelError {
    #[error("`{}`: {error}", path.display())]
    File { path: std::path::PathBuf, error: String },
    #[error("loading the model: {0}")]
    Load(String),
    #[error("tokenizer truncation: {0}")]
    Tokenizer(String),
    #[error("the local model failed: {0}")]
    Run(String),
    #[error("this binary was built without the `local-embeddings` feature")]
    NotBuilt,
}

/// Turns texts into vectors.
pub trait Embedder: Sync {
    /// The generation's id: provider and model, and whatever changes the vectors (`fake:256`).
    fn model(&self) -> &str;
    fn provider(&self) -> &'static str;
    fn dimensions(&self) -> usize;
    /// One L2-normalized vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// The vector of a search query (some models embed queries differently from documents).
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed(&[query])?;
        if vectors.len() == 1 { Ok(vectors.remove(0)) } else { Err(EmbedError::NoQueryVector) }
    }
    /// The settings that reproduce this embedder for queries, without secrets: stored in the index.
    fn settings(&self) -> serde_json::Value;
}

/// Counts per generation for `knowledge reindex status`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
    let chunks = crate::store::embeddable_chunks(conn)?;
    let mut counts: HashMap<String, GenerationStatus> = HashMap::new();
    for row in crate::store::entry_counts(conn)? {
        let entry = counts.entry(row.model.clone()).or_insert_with(|| GenerationStatus {
            current: row.model == current,
            model: row.model.clone(),
            queued: 0,
            provider: String::new(),
            dimensions: 0,
            ready: 0,
            pending: 0,
            missing: 0,
            stale: 0,
            vectors: 0,
        });
        entry.provider = row.provider;
        entry.dimensions = row.dimensions.cast_unsigned();
        entry.stale += row.stale.cast_unsigned();
        if row.status == "ready" {
            entry.ready += row.count.cast_unsigned();
        } else {
            entry.pending += row.count.cast_unsigned();
        }
    }
    let mut generations: Vec<GenerationStatus> = counts.into_values().collect();
    for generation in &mut generations {
        generation.missing = chunks.saturating_sub(generation.ready + generation.pending);
        generation.queued = crate::store::queued_jobs(conn, &generation.model)?;
        generation.vectors = crate::store::vector_count(conn, &generation.model)?;
    }
    generations.sort_by(|a, b| b.current.cmp(&a.current).then(a.model.cmp(&b.model)));
    Ok(generations)
}
