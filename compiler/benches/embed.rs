//! The `local` provider's speed against a matrix-multiply floor:
//! `cargo bench -p knowledge --features local-embeddings --bench embed [-- COUNT]`.
//!
//! Embeds the first COUNT (default 256) chunk texts of the Rust book (`../shared/corpora/rust-book`,
//! compiled with the default settings) with all-MiniLM-L6-v2 in process, and reports chunks/s and
//! tokens/s. The floor is the model's arithmetic for those exact token counts (the six layers' matrix
//! products, 2·tokens·parameters, plus attention's 4·tokens²·hidden per layer) at the best rate this
//! machine's matrix multiply reaches in candle on one of the model's own shapes (tokens × 384 by 384 ×
//! 1536), on every core. No runtime can beat it; the ratio is what is left to gain.

use std::time::Instant;

#[path = "../../tests/support/minilm.rs"]
mod minilm;
// One corpus, named here: the corpus selection the other benches share goes unused.
#[allow(dead_code)]
#[path = "support/corpus.rs"]
mod support;

use candle_core::{Device, Tensor};

// The allocator the binary uses (main.rs), so the bench measures what a build gets.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // As the binary does (main.rs), so the bench measures what a build gets.
    // SAFETY: the bench's first statement, before any thread starts.
    #[allow(unsafe_code)]
    unsafe {
        knowledge::embeddings::run_elementwise_inline();
    }
    let count: usize =
        std::env::args().filter(|a| !a.starts_with('-')).nth(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let corpus = support::shared_corpora().join("rust-book/src");
    let work = tempfile::tempdir().unwrap();
    support::copy_markdown(&corpus, &work.path().join("src"));
    std::fs::write(
        work.path().join("kc.toml"),
        "version = 1\n[sources]\ninclude = [\"src/**/*.md\"]\n[wiki]\nenabled = false\n",
    )
    .unwrap();
    let project = knowledge::config::Project::discover(work.path()).unwrap();
    knowledge::build::Compiler::new().build(&project, &knowledge::build::Silent).unwrap();
    let conn = rusqlite::Connection::open(project.output_dir().join("knowledge.db")).unwrap();
    let texts: Vec<String> = conn
        .prepare("SELECT text FROM chunks ORDER BY id LIMIT ?1")
        .unwrap()
        .query_map([count as i64], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();

    let model = minilm::model_dir();
    let mut with_model = project.clone();
    with_model.config.embeddings.provider = knowledge::config::EmbeddingProvider::Local;
    with_model.config.embeddings.model_dir = Some(toml::Spanned::new(0..0, model.display().to_string()));
    let embedder = knowledge::embeddings::configured(&with_model).unwrap().unwrap();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    embedder.embed(&refs[..refs.len().min(8)]).unwrap(); // load and warm up
    let clock = Instant::now();
    for batch in refs.chunks(64) {
        embedder.embed(batch).unwrap();
    }
    let seconds = clock.elapsed().as_secs_f64();

    // Token counts as the model sees them: the tokenizer's, truncated at 256.
    let mut tokenizer = tokenizers::Tokenizer::from_file(model.join("tokenizer.json")).unwrap();
    tokenizer.with_padding(None);
    tokenizer.with_truncation(None).unwrap();
    let tokens: Vec<f64> =
        refs.iter().map(|text| tokenizer.encode(*text, true).unwrap().get_ids().len().min(256) as f64).collect();
    let config: serde_json::Value = serde_json::from_slice(&std::fs::read(model.join("config.json")).unwrap()).unwrap();
    let hidden = config["hidden_size"].as_f64().unwrap();
    let layers = config["num_hidden_layers"].as_f64().unwrap();
    let inner = config["intermediate_size"].as_f64().unwrap();
    let per_layer = 4.0 * hidden * hidden + 2.0 * hidden * inner;
    let flops: f64 = tokens.iter().map(|t| layers * (2.0 * t * per_layer + 4.0 * t * t * hidden)).sum();

    // The multiply's best rate on the model's feed-forward shape, fastest of 10.
    let a = Tensor::randn(0f32, 1.0, (256, hidden as usize), &Device::Cpu).unwrap();
    let b = Tensor::randn(0f32, 1.0, (hidden as usize, inner as usize), &Device::Cpu).unwrap();
    let best = (0..10)
        .map(|_| {
            let clock = Instant::now();
            for _ in 0..20 {
                a.matmul(&b).unwrap();
            }
            clock.elapsed().as_secs_f64() / 20.0
        })
        .fold(f64::INFINITY, f64::min);
    let rate = 2.0 * 256.0 * hidden * inner / best;
    let floor = flops / rate;
    let total_tokens: f64 = tokens.iter().sum();
    println!("machine: {} cores", std::thread::available_parallelism().map_or(1, |n| n.get()));
    println!(
        "embedded {} chunks ({} tokens, {:.0} per chunk) in {seconds:.2} s: {:.1} chunks/s, {:.0} tokens/s",
        refs.len(),
        total_tokens,
        total_tokens / refs.len() as f64,
        refs.len() as f64 / seconds,
        total_tokens / seconds
    );
    println!(
        "floor: {:.2} GFLOP at {:.1} GFLOP/s (candle matmul 256x{hidden}x{inner}) = {floor:.2} s, {:.1} chunks/s; measured/floor {:.2}x",
        flops / 1e9,
        rate / 1e9,
        refs.len() as f64 / floor,
        seconds / floor
    );
}
