//! Build and search benchmarks on the shared corpora: `cargo bench -p knowledge --bench build [CORPUS...]`.
//!
//! For each corpus under `../shared/corpora` it copies the files into a temporary project (the shared copy
//! is never written) and measures, in this process unless noted:
//! - cold build: a fresh index, median of 3;
//! - the floor: the same chunk rows inserted raw into an FTS5 table with the same tokenizer, in one
//!   transaction with a prepared statement (WAL, `synchronous=normal`), median of 3;
//! - no-op rebuild with a fresh `Compiler`, as a new process would start, median of 5, and the same
//!   through the `knowledge build` binary, so process start-up is counted;
//! - one-file-edit rebuild (an appended line), median of 5, each on a different file;
//! - `knowledge search` process time over 50 queries drawn from the corpus' own headings: p50 and p95;
//! - the same queries in process on one read-only connection, 200 calls: p50 and p95.
//!
//! It prints a Markdown table for `docs/performance.md`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use knowledge::build::{Compiler, Silent};

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{copy_markdown, walk_files};
use knowledge::config::Project;

fn main() {
    println!("{}\n", corpus::provenance());
    println!(
        "| corpus | files | MB | cold build | MB/s | FTS5 floor | ratio | no-op (in-process) | no-op (process) | one-file edit | edit / no-op | search p50 (process) | search p95 (process) | search p50 (in-process) | search p95 (in-process) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut wiki_rows = Vec::new();
    for (name, source) in corpus::selected(&corpus::BUILD_CORPORA) {
        wiki_rows.push(bench_corpus(name, &source));
    }
    println!();
    println!(
        "| corpus | pages | cold build | cold, wiki off | wiki share of cold | hybrid search p50 (in-process, fake 384-d) | p95 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in wiki_rows {
        println!("{row}");
    }
}

/// Prints the corpus' row of the main table and returns its row of the wiki table.
fn bench_corpus(name: &str, source: &Path) -> String {
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let (files, bytes) = copy_markdown(source, &root.join("corpus"));
    std::fs::write(root.join("kc.toml"), "version = 1\n[sources]\ninclude = [\"corpus/**/*.md\"]\n").unwrap();
    let project = Project::load(&root.join("kc.toml")).unwrap();
    let index_dir = project.output_dir();

    let mut pages = 0;
    let mut cold_build = |project: &Project| {
        let _ = std::fs::remove_dir_all(&index_dir);
        let start = Instant::now();
        let summary = Compiler::new().build(project, &Silent).unwrap();
        assert_eq!(summary.sources.added as usize, files);
        pages = summary.pages.rendered;
        start.elapsed()
    };
    // The wiki's share: the same cold build with `[wiki] enabled = false`.
    std::fs::write(
        root.join("kc.toml"),
        "version = 1\n[sources]\ninclude = [\"corpus/**/*.md\"]\n[wiki]\nenabled = false\n",
    )
    .unwrap();
    let without_wiki = Project::load(&root.join("kc.toml")).unwrap();
    let cold_no_wiki = median(3, || cold_build(&without_wiki));
    std::fs::write(root.join("kc.toml"), "version = 1\n[sources]\ninclude = [\"corpus/**/*.md\"]\n").unwrap();
    let cold = median(3, || cold_build(&project));
    let floor = median(3, || fts5_floor(&index_dir.join("knowledge.db"), &root.join("floor.db")));
    let noop = median(5, || {
        let start = Instant::now();
        let summary = Compiler::new().build(&project, &Silent).unwrap();
        assert!(!summary.wrote);
        start.elapsed()
    });
    let binary = env!("CARGO_BIN_EXE_knowledge");
    let noop_process = median(5, || {
        let start = Instant::now();
        let status = Command::new(binary).args(["-C", root.to_str().unwrap(), "build", "--json"]).output().unwrap();
        assert!(status.status.success());
        start.elapsed()
    });
    let targets = edit_targets(&root.join("corpus"), 5);
    let mut edits = targets.iter().map(|path| {
        let mut text = std::fs::read_to_string(path).unwrap();
        text.push_str("\nAn appended line for the one-file-edit benchmark.\n");
        std::fs::write(path, text).unwrap();
        let start = Instant::now();
        let summary = Compiler::new().build(&project, &Silent).unwrap();
        assert_eq!(summary.sources.changed, 1);
        start.elapsed()
    });
    let edit = median(targets.len(), || edits.next().unwrap());

    let queries = sample_queries(&index_dir.join("knowledge.db"), 50);
    let mut search_times: Vec<Duration> = queries
        .iter()
        .map(|query| {
            let start = Instant::now();
            let output = Command::new(binary)
                .args(["-C", root.to_str().unwrap(), "search", query, "--json", "--limit", "10"])
                .output()
                .unwrap();
            assert!(output.status.success());
            start.elapsed()
        })
        .collect();
    let (p50, p95) = percentiles(&mut search_times);

    let in_process = |mode| {
        let conn = knowledge::store::open_read_only(&index_dir.join("knowledge.db")).unwrap();
        let access = knowledge::retrieval::access::Access::load(&conn, None).unwrap();
        let mut times: Vec<Duration> = queries
            .iter()
            .cycle()
            .take(200)
            .map(|query| {
                let start = Instant::now();
                let request = knowledge::retrieval::search::SearchRequest {
                    query: query.clone(),
                    mode,
                    limit: 10,
                    kinds: Vec::new(),
                    entity_types: Vec::new(),
                    highlight: knowledge::retrieval::search::Highlight::Markdown,
                };
                let response = knowledge::retrieval::search::search(&conn, &request, &access).unwrap();
                assert!(!response.degraded);
                start.elapsed()
            })
            .collect();
        percentiles(&mut times)
    };
    let (in_p50, in_p95) = in_process(knowledge::retrieval::search::SearchMode::Keyword);
    // Hybrid, with the `fake` provider's 384-dimension vectors (the query embeds in process, so this is the
    // retrieval and fusion cost without a model's): the generation is built, then searched 200 times.
    std::fs::write(
        root.join("kc.toml"),
        "version = 1\n[sources]\ninclude = [\"corpus/**/*.md\"]\n[embeddings]\nprovider = \"fake\"\ndimensions = 384\n",
    )
    .unwrap();
    Compiler::new().build(&Project::load(&root.join("kc.toml")).unwrap(), &Silent).unwrap();
    let (hybrid_p50, hybrid_p95) = in_process(knowledge::retrieval::search::SearchMode::Hybrid);

    let mb = bytes as f64 / 1e6;
    println!(
        "| {name} | {files} | {mb:.1} | {} | {:.1} | {} | {:.2}× | {} | {} | {} | {:.2}× | {} | {} | {} | {} |",
        ms(cold),
        mb / cold.as_secs_f64(),
        ms(floor),
        cold.as_secs_f64() / floor.as_secs_f64(),
        ms(noop),
        ms(noop_process),
        ms(edit),
        edit.as_secs_f64() / noop.as_secs_f64(),
        ms(p50),
        ms(p95),
        ms(in_p50),
        ms(in_p95),
    );
    format!(
        "| {name} | {pages} | {} | {} | {:.0}% | {} | {} |",
        ms(cold),
        ms(cold_no_wiki),
        100.0 * (cold.as_secs_f64() - cold_no_wiki.as_secs_f64()).max(0.0) / cold.as_secs_f64(),
        ms(hybrid_p50),
        ms(hybrid_p95),
    )
}

fn percentiles(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[(times.len() * 95 / 100).min(times.len() - 1)])
}

/// Inserts the index's chunk rows into a fresh FTS5 table: what any FTS-backed indexer must at least do.
fn fts5_floor(index: &Path, floor: &Path) -> Duration {
    let source = rusqlite::Connection::open(index).unwrap();
    let rows: Vec<(String, String, String)> = source
        .prepare("SELECT title, text, identifiers FROM chunks")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", floor.display()));
    }
    let start = Instant::now();
    let mut conn = rusqlite::Connection::open(floor).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "synchronous", "normal").unwrap();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(title, text, identifiers, tokenize = 'porter unicode61 remove_diacritics 2')",
    )
    .unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut insert = tx.prepare("INSERT INTO t (title, text, identifiers) VALUES (?1, ?2, ?3)").unwrap();
        for (title, text, identifiers) in &rows {
            insert.execute([title, text, identifiers]).unwrap();
        }
    }
    tx.commit().unwrap();
    start.elapsed()
}

/// Queries made from the corpus' own section titles, so that every query has real matches.
fn sample_queries(index: &Path, count: usize) -> Vec<String> {
    let conn = rusqlite::Connection::open(index).unwrap();
    let titles: Vec<String> = conn
        .prepare("SELECT DISTINCT title FROM chunks ORDER BY hash LIMIT ?1")
        .unwrap()
        .query_map([count as i64], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    titles.into_iter().map(|t| t.rsplit(" > ").next().unwrap_or(&t).to_string()).collect()
}

fn edit_targets(dir: &Path, count: usize) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walk_files(dir);
    files.sort();
    let step = (files.len() / count).max(1);
    files.into_iter().step_by(step).take(count).collect()
}

fn median(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| f()).collect();
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1000.0)
    }
}
