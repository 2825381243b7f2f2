//! Golden tests: each `golden/<case>/input/` (a `kc.toml` and its sources) is built in a temporary copy,
//! and the whole output tree is compared with `golden/<case>/expected/`. The SQLite index is compared as a
//! sorted text dump without timestamps, run ids or mtimes. `KC_BLESS=1 cargo test --test golden` rewrites
//! the expected files (and deletes orphans); CI never blesses.
//!
//! A case may have `steps/NN/`: files to overlay (an empty file named `NAME.deleted` deletes `NAME`), built
//! after the previous step and compared with `expected-NN/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use knowledge::build::{BuildSummary, Compiler, Silent};
use knowledge::config::Project;

/// One test per case, so a failure names its case and the others still run.
macro_rules! golden_cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                golden_case(stringify!($case));
            }
        )*
        /// The cases the macro made a test for.
        const CASES: &[&str] = &[$(stringify!($case)),*];
    };
}

golden_cases!(basic, code, wiki);

/// A case folder without a test would never run: every folder under `golden/` is named above.
#[test]
fn every_golden_case_has_a_test() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden");
    let folders: Vec<String> =
        sorted_dirs(&golden).iter().map(|case| case.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(folders, CASES, "add the new case to `golden_cases!`");
}

fn golden_case(name: &str) {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden").join(name);
    let bless = std::env::var_os("KC_BLESS").is_some_and(|v| v == "1");
    if let Err(message) = run_case(&case, bless) {
        panic!("golden mismatch in `{name}` (re-bless with KC_BLESS=1 after review):\n{message}");
    }
}

fn run_case(case: &Path, bless: bool) -> Result<(), String> {
    let work = tempfile::tempdir().unwrap();
    copy_tree(&case.join("input"), work.path());
    let mut compiler = Compiler::new();
    let mut outcome = Ok(());
    let summary = build(&mut compiler, work.path());
    check(&render(work.path(), &summary), &case.join("expected"), bless, &mut outcome);

    // The inputs alone, step by step, for a clean build to compare each incremental one with.
    let inputs = tempfile::tempdir().unwrap();
    copy_tree(&case.join("input"), inputs.path());
    let steps = case.join("steps");
    if steps.is_dir() {
        for step in sorted_dirs(&steps) {
            let name = step.file_name().unwrap().to_string_lossy().into_owned();
            overlay(&step, work.path());
            let summary = build(&mut compiler, work.path());
            let incremental = render(work.path(), &summary);
            check(&incremental, &case.join(format!("expected-{name}")), bless, &mut outcome);

            overlay(&step, inputs.path());
            let clean = tempfile::tempdir().unwrap();
            copy_tree(inputs.path(), clean.path());
            let clean_summary = build(&mut Compiler::new(), clean.path());
            if let Err(difference) = same_derived_output(&incremental, &render(clean.path(), &clean_summary)) {
                outcome = Err(format!(
                    "{}{}: step {name} built incrementally differs from a clean build: {difference}\n",
                    outcome.err().unwrap_or_default(),
                    case.display()
                ));
            }
        }
    }
    outcome
}

/// Incremental output equals a clean build's (the invariant): every generated file, and the index's
/// chunks, pages and citations. Run history (runs, events, revisions seen, logs, counters) differs by
/// design.
fn same_derived_output(incremental: &BTreeMap<String, String>, clean: &BTreeMap<String, String>) -> Result<(), String> {
    let derived = |files: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = files
            .iter()
            .filter(|(path, _)| ["wiki/", "indexes/", "schemas/"].iter().any(|prefix| path.starts_with(prefix)))
            .map(|(path, text)| (path.clone(), text.clone()))
            .collect();
        let dump = &files["knowledge.db.txt"];
        for table in ["chunks", "wiki_pages", "citations", "wiki_backlinks", "storage_objects", "artifact_texts"] {
            out.insert(format!("[{table}]"), dump_section(dump, table));
        }
        out
    };
    let (incremental, clean) = (derived(incremental), derived(clean));
    for (key, text) in &clean {
        if incremental.get(key) != Some(text) {
            return Err(format!("{key}:\n{}", diff(text, incremental.get(key).map_or("", String::as_str))));
        }
    }
    match incremental.keys().find(|key| !clean.contains_key(*key)) {
        Some(extra) => Err(format!("{extra}: only in the incremental build")),
        None => Ok(()),
    }
}

/// The lines of one `[table]` section of an index dump.
fn dump_section(dump: &str, table: &str) -> String {
    let header = format!("[{table}]");
    dump.lines()
        .skip_while(|line| *line != header)
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .collect::<Vec<_>>()
        .join("\n")
}

fn build(compiler: &mut Compiler, root: &Path) -> BuildSummary {
    let project = Project::load(&root.join("kc.toml")).expect("the case's kc.toml loads");
    compiler.build(&project, &Silent).expect("the case builds")
}

/// The output tree as files: every file under the output folder (the index as a text dump) plus the
/// build summary's counters.
fn render(root: &Path, summary: &BuildSummary) -> BTreeMap<String, String> {
    let project = Project::load(&root.join("kc.toml")).unwrap();
    let output = project.output_dir();
    let mut files = BTreeMap::new();
    let mut tree = String::new();
    for entry in walk(&output) {
        let relative = entry.strip_prefix(&output).unwrap().to_string_lossy().replace('\\', "/");
        if relative.starts_with("knowledge.db-") {
            continue; // WAL and shared-memory files come and go with connections.
        }
        // The day's log is named by the date and its records carry run ids: both are normalized.
        let (relative, is_log) = match relative.strip_prefix("logs/") {
            Some(dated) if dated.len() > 4 => {
                (format!("logs/{}", if dated.ends_with(".jsonl") { "DAY.jsonl" } else { "DATE" }), true)
            }
            _ => (relative, false),
        };
        let kind = if entry.is_dir() { "dir " } else { "file" };
        if !tree.contains(&format!("{kind} {relative}\n")) {
            writeln!(tree, "{kind} {relative}").unwrap();
        }
        // The stat cache records mtimes, the lock file a pid, and the spare the last file a build replaced:
        // their presence is compared, their contents are not.
        let volatile = [knowledge::wiki::STAT_CACHE, knowledge::store::LOCK_FILE, knowledge::wiki::SPARE];
        if entry.is_file() && relative != "knowledge.db" && !volatile.contains(&relative.as_str()) {
            let text = std::fs::read_to_string(&entry).unwrap();
            files.insert(relative, if is_log { normalize_log(&text) } else { text });
        }
    }
    files.insert("tree.txt".to_string(), tree);
    files.insert("knowledge.db.txt".to_string(), dump_index(&output.join("knowledge.db")));
    let mut counters = serde_json::json!({
        "full_rebuild": summary.full_rebuild,
        "wrote": summary.wrote,
        "sources": summary.sources,
        "chunks": summary.chunks,
        "entities": summary.entities,
        "queries": summary.queries,
        "skipped": summary.skipped,
        "pages": summary.pages,
        "shards": summary.shards,
    });
    counters["sources"]["scanned"] = summary.sources.scanned.into();
    files.insert("summary.json".to_string(), serde_json::to_string_pretty(&counters).unwrap() + "\n");
    files
}

/// Log records without their run id and time.
fn normalize_log(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        record["run_id"] = "RUN".into();
        record["at"] = "TIME".into();
        writeln!(out, "{record}").unwrap();
    }
    out
}

/// The index as sorted text rows, without timestamps, run ids, mtimes, row ids or the fingerprint (which
/// hashes the compiler's own source).
fn dump_index(path: &Path) -> String {
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut out = String::new();
    let sections: [(&str, &str); 13] = [
        (
            "meta",
            "SELECT key, value FROM meta WHERE key NOT IN ('embedded_run', 'fingerprint', 'last_run', 'log_due', 'log_due_end', 'scan_started_ns', 'schema_hash', 'wiki_config') ORDER BY key",
        ),
        (
            "sources",
            "SELECT path, uri, kind, mime, size, revision, title, chunk_count, outline, lint_facts FROM sources ORDER BY path",
        ),
        ("source_revisions", "SELECT path, revision, size FROM source_revisions ORDER BY path, revision"),
        (
            "chunks",
            "SELECT s.path, c.ordinal, c.id, c.revision, c.hash, c.heading_path, c.title, c.start_offset, c.end_offset,
                    c.start_line, c.end_line, c.identifiers, c.text, p.provenance
             FROM chunks c JOIN sources s ON s.id = c.source_id JOIN chunk_provenance p ON p.chunk_id = c.id
             ORDER BY s.path, c.ordinal",
        ),
        (
            "wiki_pages",
            "SELECT slug, title, section, path, aliases, source_count, summary, hash FROM wiki_pages ORDER BY slug",
        ),
        (
            "entities",
            "SELECT s.path, e.slug, e.type, e.name, e.start_line, e.end_line, e.start_offset, e.end_offset, e.hash, e.payload
             FROM entities e JOIN sources s ON s.id = e.source_id ORDER BY s.path, e.start_offset, e.slug",
        ),
        (
            "entity_changes (latest run)",
            "SELECT slug, type, change, path, labels, old_value, new_value FROM entity_changes
             WHERE run_id = (SELECT value FROM meta WHERE key = 'last_run') ORDER BY slug",
        ),
        ("citations", "SELECT * FROM citations ORDER BY page, note"),
        ("wiki_backlinks", "SELECT * FROM wiki_backlinks ORDER BY page, from_ref, line"),
        ("page_sources", "SELECT * FROM page_sources ORDER BY page, path"),
        ("artifact_texts", "SELECT uri, length(text) FROM artifact_texts ORDER BY uri"),
        ("storage_objects", "SELECT uri, kind, path, hash, size, metadata FROM storage_objects ORDER BY uri"),
        (
            "run_events (latest run)",
            "SELECT kind, path, old_revision, new_revision, detail FROM run_events
             WHERE run_id = (SELECT value FROM meta WHERE key = 'last_run') ORDER BY seq",
        ),
    ];
    for (name, sql) in sections {
        writeln!(out, "[{name}]").unwrap();
        dump_rows(&conn, sql, &mut out);
        if name == "chunks" {
            dump_signals(&conn, &mut out);
        }
    }
    let runs: i64 = conn.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).unwrap();
    writeln!(out, "[runs]\n  count={runs}").unwrap();
    out
}

/// The catalog's signals as rows, one per signal, decoded from their per-source blobs.
fn dump_signals(conn: &rusqlite::Connection, out: &mut String) {
    writeln!(out, "[concept_signals]").unwrap();
    for (path, (signals, excerpts)) in knowledge::store::signals_by_path(conn).unwrap() {
        for (signal, e) in signals.into_iter().zip(excerpts) {
            let other = signal.other.as_ref().map_or("NULL".to_string(), |other| format!("{other:?}"));
            writeln!(
                out,
                "  path={path:?} | kind={:?} | label={:?} | other={other} | chunk={} | start_offset={} | end_offset={} | start_line={} | end_line={}",
                signal.kind.as_str(),
                signal.label(),
                e.chunk,
                e.start,
                e.end,
                e.start_line,
                e.end_line
            )
            .unwrap();
        }
    }
}

/// The rows `sql` selects, each as `column=value` pairs.
fn dump_rows(conn: &rusqlite::Connection, sql: &str, out: &mut String) {
    let mut statement = conn.prepare(sql).unwrap();
    let columns: Vec<String> = statement.column_names().map(str::to_string).collect();
    let mut rows = statement.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let values: Vec<String> = (0..columns.len())
            .map(|i| {
                let value = match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(v) => {
                        format!("{:?}", String::from_utf8_lossy(v))
                    }
                    rusqlite::types::ValueRef::Blob(v) => format!("blob({} bytes)", v.len()),
                };
                format!("{}={value}", columns[i])
            })
            .collect();
        writeln!(out, "  {}", values.join(" | ")).unwrap();
    }
}

fn check(actual: &BTreeMap<String, String>, expected_dir: &Path, bless: bool, outcome: &mut Result<(), String>) {
    if bless {
        let _ = std::fs::remove_dir_all(expected_dir);
        for (name, contents) in actual {
            let path = expected_dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, contents).unwrap();
        }
        return;
    }
    let mut expected = BTreeMap::new();
    for path in walk(expected_dir).into_iter().filter(|p| p.is_file()) {
        let name = path.strip_prefix(expected_dir).unwrap().to_string_lossy().replace('\\', "/");
        expected.insert(name, std::fs::read_to_string(&path).unwrap());
    }
    let mut problems = Vec::new();
    for name in expected.keys().filter(|k| !actual.contains_key(*k)) {
        problems.push(format!("{name}: expected but not produced (orphaned expected file?)"));
    }
    for (name, contents) in actual {
        match expected.get(name) {
            None => problems.push(format!("{name}: produced but not expected")),
            Some(want) if want != contents => problems.push(format!("{name} differs:\n{}", diff(want, contents))),
            Some(_) => {}
        }
    }
    if !problems.is_empty() && outcome.is_ok() {
        *outcome = Err(format!("{}:\n{}", expected_dir.display(), problems.join("\n")));
    }
}

/// The first differing lines, enough to see what changed.
fn diff(want: &str, got: &str) -> String {
    let mut out = String::new();
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate().filter(|(_, (w, g))| w != g).take(5) {
        writeln!(out, "  line {}:\n    - {w}\n    + {g}", i + 1).unwrap();
    }
    if want.lines().count() != got.lines().count() {
        writeln!(out, "  line count {} → {}", want.lines().count(), got.lines().count()).unwrap();
    }
    out
}

fn overlay(step: &Path, root: &Path) {
    for path in walk(step).into_iter().filter(|p| p.is_file()) {
        let relative = path.strip_prefix(step).unwrap();
        let target = root.join(relative);
        if let Some(deleted) = relative.to_string_lossy().strip_suffix(".deleted") {
            std::fs::remove_file(root.join(deleted)).unwrap();
        } else {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            copy_dated_back(&path, &target);
        }
    }
}

/// Copies a file dated a second back: a file modified within a clock tick of a build's scan is "racy" and
/// read again by the next build whatever its stat, so a copy made just before a build would make the next
/// build's counters depend on how fast this machine copied (a loaded machine re-read all 23 files of a case).
/// A person's edits come well before a build; `racy_build_reads_a_fresh_file_again` tests the racy case.
fn copy_dated_back(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
    let a_second_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    std::fs::File::options().write(true).open(to).unwrap().set_modified(a_second_ago).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    for path in walk(from) {
        let target = to.join(path.strip_prefix(from).unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            copy_dated_back(&path, &target);
        }
    }
}

/// Every path under `dir`, sorted, folders included.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        out.push(path.clone());
        if path.is_dir() {
            out.extend(walk(&path));
        }
    }
    out
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|e| e.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}
