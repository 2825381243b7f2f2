//! `knowledge build --watch` edit-to-index latency: `cargo bench -p knowledge --bench watch [CORPUS...]`.
//!
//! For each corpus it copies the Markdown files into a temporary project, builds it once, starts
//! `knowledge build --watch --json` (the release binary) and makes 20 edits of different kinds, one at a
//! time: a line appended, a paragraph inserted mid-file, a title changed, a wikilink added, a file added,
//! a file deleted, a file renamed. Each is timed from just before the write to the moment the watch prints
//! that build's line, which it does after the index is committed and the files are synced. The watch's own
//! figure (from the first file event) is reported beside it, and the watching process's CPU per edit (from
//! `/proc`, Linux only), steadier than wall time for comparing two binaries. Prints a Markdown table for
//! `docs/performance.md`. `KNOWLEDGE_BENCH_BINARY=PATH` measures another build of the binary instead;
//! `KNOWLEDGE_BENCH_EXTRA_CONFIG` is appended to the project's `kc.toml` (for example `[lint]` with
//! `on_build = true`); `KNOWLEDGE_BENCH_WATCH_PREFIX` runs the watching process under a command (a profiler),
//! stopped with SIGTERM before the project is removed.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{copy_markdown, walk_files};

const CORPORA: [(&str, &str); 2] = [("rust-rfcs", "rust-rfcs/text"), ("dendron-vault", "dendron-vault/vault")];

fn main() {
    println!("{}\n", corpus::provenance());
    println!(
        "| corpus | files | edits | write to index p50 | p95 | first event to index p50 | p95 | watch CPU per edit | kinds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, source) in corpus::selected(&CORPORA) {
        bench_corpus(name, &source);
    }
}

fn bench_corpus(name: &str, source: &Path) {
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let (files, _) = copy_markdown(source, &root.join("corpus"));
    let extra = std::env::var("KNOWLEDGE_BENCH_EXTRA_CONFIG").unwrap_or_default();
    let config = format!("version = 1\n[sources]\ninclude = [\"corpus/**/*.md\"]\n{extra}");
    std::fs::write(root.join("kc.toml"), config).unwrap();
    // `KNOWLEDGE_BENCH_BINARY` runs another build of the binary on the same edits, for A/B comparisons.
    let binary =
        std::env::var("KNOWLEDGE_BENCH_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_knowledge").to_string());
    let binary = binary.as_str();
    assert!(Command::new(binary).args(["-C", root.to_str().unwrap(), "build"]).output().unwrap().status.success());

    // `KNOWLEDGE_BENCH_WATCH_PREFIX` runs the watching process under a command (`valgrind --tool=callgrind
    // …`, `watch_instructions.py`), which is stopped with SIGTERM, so that it writes what it measured before
    // the project is removed (not SIGINT: a shell without job control starts a background command with
    // SIGINT ignored, and the watch then never stopped).
    let prefix = std::env::var("KNOWLEDGE_BENCH_WATCH_PREFIX").unwrap_or_default();
    let mut command: Vec<&str> = prefix.split_whitespace().collect();
    command.push(binary);
    let mut watch = Command::new(command[0])
        .args(&command[1..])
        .args(["-C", root.to_str().unwrap(), "build", "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (sender, lines) = std::sync::mpsc::channel::<(Instant, String)>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    let next = || lines.recv_timeout(Duration::from_secs(60)).expect("a build line");
    next();
    // Let the tree settle: the first build's own events are behind us.
    std::thread::sleep(Duration::from_millis(300));
    while lines.try_recv().is_ok() {}

    let mut targets = walk_files(&root.join("corpus"));
    targets.sort();
    let step = (targets.len() / 20).max(1);
    let targets: Vec<PathBuf> = targets.into_iter().step_by(step).take(20).collect();
    let kinds = ["append", "insert", "title", "wikilink", "add", "delete", "rename"];
    let (mut wall, mut reported) = (Vec::new(), Vec::new());
    // The watch's CPU over the edits (user and system, every thread): steadier than wall time on a shared
    // machine, for paired comparisons of two binaries.
    let cpu_before = process_cpu(watch.id());
    for (n, path) in targets.iter().enumerate() {
        let kind = kinds[n % kinds.len()];
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let start = Instant::now();
        match kind {
            "append" => std::fs::write(path, format!("{text}\nAn appended line for the watch benchmark.\n")).unwrap(),
            "insert" => {
                let middle = text[..text.len() / 2].rfind('\n').map_or(0, |at| at + 1);
                std::fs::write(
                    path,
                    format!("{}A paragraph inserted mid-file.\n\n{}", &text[..middle], &text[middle..]),
                )
                .unwrap();
            }
            "title" => std::fs::write(path, format!("# A retitled page {n}\n\n{text}")).unwrap(),
            "wikilink" => std::fs::write(path, format!("{text}\nSee [[Overview]] and [[Lookup]].\n")).unwrap(),
            "add" => std::fs::write(path.with_file_name(format!("added-{n}.md")), "# Added\n\nA new page.\n").unwrap(),
            "delete" => std::fs::remove_file(path).unwrap(),
            _ => std::fs::rename(path, path.with_file_name(format!("renamed-{n}.md"))).unwrap(),
        }
        let (arrived, line) = next();
        let summary: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(summary["error"].is_null(), "{line}");
        wall.push(arrived - start);
        // `KNOWLEDGE_BENCH_VERBOSE=1`: each edit's kind, time and what the build reported.
        if std::env::var_os("KNOWLEDGE_BENCH_VERBOSE").is_some() {
            let (stages, queries, pages) = (&summary["stages_ms"], &summary["queries"]["by_query"], &summary["pages"]);
            eprintln!("{kind:8} {:6.1} ms  stages {stages}  pages {pages}  queries {queries}", ms_f(arrived - start));
        }
        reported.push(Duration::from_secs_f64(summary["latency_ms"].as_f64().unwrap() / 1000.0));
        // The next edit starts on a quiet tree.
        std::thread::sleep(Duration::from_millis(100));
        while lines.try_recv().is_ok() {}
    }
    let cpu = process_cpu(watch.id()).zip(cpu_before).map(|(after, before)| (after - before) / targets.len() as u32);
    if prefix.is_empty() {
        let _ = watch.kill();
    } else {
        let _ = Command::new("kill").args(["-TERM", &watch.id().to_string()]).status();
    }
    let _ = watch.wait();
    let (p50, p95) = percentiles(&mut wall);
    let (r50, r95) = percentiles(&mut reported);
    println!(
        "| {name} | {files} | {} | {} | {} | {} | {} | {} | {} |",
        targets.len(),
        ms(p50),
        ms(p95),
        ms(r50),
        ms(r95),
        cpu.map_or_else(|| "n/a".to_string(), ms),
        kinds.join(", ")
    );
}

/// A process's CPU time so far (user and system, every thread), from `/proc`; `None` elsewhere.
#[cfg(target_os = "linux")]
fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) in parentheses; utime and stime are the
    // 14th and 15th of the line, in the kernel's clock ticks.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / rustix::param::clock_ticks_per_second() as f64))
}

#[cfg(not(target_os = "linux"))]
fn process_cpu(_pid: u32) -> Option<Duration> {
    None
}

fn ms_f(time: Duration) -> f64 {
    time.as_secs_f64() * 1000.0
}

fn percentiles(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[(times.len() * 95 / 100).min(times.len() - 1)])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
