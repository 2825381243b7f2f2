//! `knowledge init` and `knowledge build`: incremental across process runs, atomic, and tolerant of bad files.

use std::time::SystemTime;

use serde_json::json;

use crate::{CliTest, stderr};

fn fixture() -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value has an owner.\n\n## Borrowing\n\nReferences borrow values.\n",
    );
    test.write("docs/lifetimes.md", "# Lifetimes\n\nLifetimes name scopes.\n");
    test.write("notes/todo.txt", "Remember the milk.\n\nAnd the quokka.\n");
    test
}

fn modified(path: &std::path::Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

#[test]
fn init_writes_a_config_and_starter_pages_and_refuses_to_overwrite() {
    let test = CliTest::empty();
    let out = test.ok(&["init"]);
    assert!(out.contains("kc.toml"), "{out}");
    let config = std::fs::read_to_string(test.path("kc.toml")).unwrap();
    assert!(config.contains("[chunking]") && config.contains("# "), "a commented default");
    assert!(test.path(".hasna/knowledge/wiki/README.md").is_file());
    assert!(test.path(".hasna/knowledge/indexes/root.md").is_file());

    let again = test.run(&["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("already exists"), "{}", stderr(&again));
    test.ok(&["init", "--force"]);

    // The starter wiki page is a source like any other; the rest of the output folder is not.
    test.write("guide.md", "# Guide\n\nHello quokka.\n");
    let summary = test.build();
    assert_eq!(summary["sources"]["added"], 2, "{summary:#}");
    assert_eq!(test.result_paths("overwrites"), [".hasna/knowledge/wiki/README.md"]);
}

#[test]
fn first_build_indexes_everything_and_lays_out_the_output_folder() {
    let test = fixture();
    let summary = test.build();
    assert_eq!(summary["full_rebuild"], true);
    assert_eq!(summary["wrote"], true);
    assert_eq!(
        summary["sources"],
        json!({"scanned": 3, "added": 3, "changed": 0, "removed": 0, "skipped": 0, "unchanged": 0, "hashed": 3})
    );
    assert_eq!(summary["chunks"], json!({"computed": 4, "reused": 0, "deleted": 0, "total": 4}));
    assert_eq!(summary["queries"]["executed"], 12, "parse, outline, chunks and lint_facts for each of 3 files");
    for dir in ["wiki", "indexes", "schemas", "logs", "runs", "cache", "exports", "artifacts"] {
        assert!(test.path(&format!(".hasna/knowledge/{dir}")).is_dir(), "{dir}");
    }
}

#[test]
fn a_second_build_with_nothing_changed_does_no_work_and_writes_nothing() {
    let test = fixture();
    test.build();
    let index = test.index();
    let bytes = std::fs::read(&index).unwrap();
    let mtime = modified(&index);

    let summary = test.build();
    assert_eq!(summary["wrote"], false);
    assert_eq!(summary["run_id"], json!(null));
    assert_eq!(summary["queries"]["executed"], 0);
    assert_eq!(summary["sources"]["hashed"], 0, "no file is even read");
    assert_eq!(summary["sources"]["unchanged"], 3);
    assert_eq!(summary["chunks"], json!({"computed": 0, "reused": 4, "deleted": 0, "total": 4}));
    assert_eq!(std::fs::read(&index).unwrap(), bytes);
    assert_eq!(modified(&index), mtime);
}

#[test]
fn editing_one_file_rederives_only_that_file() {
    let test = fixture();
    test.build();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value has exactly one owner, a wombat.\n\n## Borrowing\n\nReferences borrow values.\n",
    );
    let summary = test.build();
    assert_eq!(summary["full_rebuild"], false);
    assert_eq!(summary["sources"]["changed"], 1);
    assert_eq!(summary["sources"]["unchanged"], 2);
    assert_eq!(summary["sources"]["hashed"], 1);
    assert_eq!(summary["queries"]["executed"], 4, "parse, outline, chunks and lint_facts of the edited file only");
    assert_eq!(
        summary["chunks"],
        json!({"computed": 1, "reused": 3, "deleted": 1, "total": 4}),
        "the untouched Borrowing chunk keeps its id"
    );
    assert_eq!(test.result_paths("wombat"), ["docs/ownership.md"]);
    let results = test.search("owner");
    let texts: Vec<&str> = results["results"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert!(!texts.is_empty() && texts.iter().all(|t| !t.contains("has an owner.")), "the old text is gone: {texts:?}");
}

#[test]
fn touching_a_file_without_changing_it_rederives_nothing() {
    let test = fixture();
    test.build();
    let path = test.path("docs/lifetimes.md");
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    drop(file);
    let summary = test.build();
    assert_eq!(summary["sources"]["hashed"], 1, "the moved mtime makes it read and hashed");
    assert_eq!(summary["sources"]["unchanged"], 3);
    assert_eq!(summary["queries"]["executed"], 0);
    assert_eq!(summary["chunks"]["computed"], 0);
    // The new mtime is recorded, so the next build does not even read it.
    assert_eq!(test.build()["sources"]["hashed"], 0);
}

#[test]
fn deleting_a_file_removes_its_rows() {
    let test = fixture();
    test.build();
    assert_eq!(test.result_paths("quokka"), ["notes/todo.txt"]);
    test.remove("notes/todo.txt");
    let summary = test.build();
    assert_eq!(summary["sources"]["removed"], 1);
    assert_eq!(summary["chunks"]["deleted"], 1);
    assert_eq!(summary["chunks"]["total"], 3);
    assert!(test.result_paths("quokka").is_empty());
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT count(*) FROM sources WHERE path = 'notes/todo.txt'"), 0);
    assert_eq!(count("SELECT count(*) FROM chunks"), 3);
    assert_eq!(count("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'quokka'"), 0);
    assert_eq!(count("SELECT count(*) FROM run_events WHERE kind = 'source_removed'"), 1);
}

#[test]
fn changing_chunking_rechunks_everything() {
    let test = fixture();
    test.build();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[chunking]\ntarget_bytes = 64\noverlap_bytes = 0\n",
    );
    let summary = test.build();
    assert_eq!(summary["full_rebuild"], true);
    assert_eq!(summary["sources"]["changed"], 3);
    assert_eq!(summary["queries"]["executed"], 12);
    assert_eq!(test.build()["wrote"], false, "and the next build is a no-op again");
}

#[test]
fn an_index_from_another_binary_or_format_is_not_trusted() {
    let test = fixture();
    test.build();
    {
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        conn.execute("UPDATE meta SET value = 'from-another-binary' WHERE key = 'fingerprint'", []).unwrap();
    }
    let summary = test.build();
    assert_eq!(summary["full_rebuild"], true);
    assert_eq!(summary["sources"]["changed"], 3, "every source is re-derived");
    assert_eq!(summary["chunks"]["total"], 4);

    {
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'format_version'", []).unwrap();
    }
    let search = test.run(&["search", "owner"]);
    assert_eq!(search.status.code(), Some(2), "a reader refuses an index in another format");
    assert!(stderr(&search).contains("format version 0"), "{}", stderr(&search));
    let summary = test.build();
    assert_eq!(summary["sources"]["added"], 3, "the index is rebuilt from scratch");
    assert_eq!(test.result_paths("owner"), ["docs/ownership.md"]);
}

#[test]
fn a_build_killed_before_commit_leaves_the_previous_index_intact() {
    let test = fixture();
    test.build();
    test.write("docs/lifetimes.md", "# Lifetimes\n\nLifetimes name scopes, says the platypus.\n");
    test.remove("notes/todo.txt");
    let killed = test.run_with_env(&["build", "--json"], &[("KNOWLEDGE_FAILPOINT", "before-commit")]);
    assert!(!killed.status.success(), "the failpoint aborts the process");

    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    assert_eq!(test.result_paths("quokka"), ["notes/todo.txt"], "the old content is still served");
    assert!(test.result_paths("platypus").is_empty(), "and none of the killed build's");

    let summary = test.build();
    assert_eq!(summary["sources"]["changed"], 1);
    assert_eq!(summary["sources"]["removed"], 1);
    assert_eq!(test.result_paths("platypus"), ["docs/lifetimes.md"]);
}

#[test]
fn bad_files_are_skipped_with_a_warning_that_names_them() {
    let test = fixture();
    test.write("docs/binary.md", b"# Bin\n\x00\x01\x02");
    test.write("docs/latin1.md", b"# Fine\n\nline two\ncaf\xe9\n");
    test.write("kc.toml", "version = 1\n[sources]\nmax_file_bytes = 1000\n");
    test.write("docs/huge.md", "word ".repeat(400));
    #[cfg(unix)]
    std::os::unix::fs::symlink(test.root().join("docs"), test.path("docs/loop")).unwrap();

    let output = test.run(&["build", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let warnings = stderr(&output);
    assert!(warnings.contains("warning: skipped `docs/binary.md`: binary file"), "{warnings}");
    assert!(warnings.contains("warning: skipped `docs/latin1.md`: invalid UTF-8 at line 4"), "{warnings}");
    assert!(warnings.contains("warning: skipped `docs/huge.md`: too large: 2000 bytes"), "{warnings}");
    let expected_skips = if cfg!(unix) { 4 } else { 3 };
    #[cfg(unix)]
    assert!(warnings.contains("warning: skipped `docs/loop`: symlink loop back to `docs`"), "{warnings}");
    assert_eq!(summary["sources"]["skipped"], expected_skips);
    assert_eq!(summary["sources"]["added"], 3, "the good files are still compiled");
    assert_eq!(test.result_paths("quokka"), ["notes/todo.txt"]);
}

#[test]
fn a_file_that_turns_binary_loses_its_rows() {
    let test = fixture();
    test.build();
    test.write("notes/todo.txt", b"quokka\x00\x00");
    let summary = test.build();
    assert_eq!(summary["sources"]["skipped"], 1);
    assert_eq!(summary["sources"]["removed"], 1);
    assert!(test.result_paths("quokka").is_empty());
}

#[test]
fn gitignore_and_exclude_globs_are_respected() {
    let test = fixture();
    test.write(".gitignore", "ignored/\n");
    test.write("ignored/secret.md", "# Secret\n\nzebra\n");
    test.write("drafts/draft.md", "# Draft\n\nzebra\n");
    test.write(".hidden/visible.md", "# Hidden folder\n\nzebra\n");
    test.write("kc.toml", "version = 1\n[sources]\ninclude = [\"**/*.md\"]\nexclude = [\"drafts/**\"]\n");
    test.build();
    assert_eq!(test.result_paths("zebra"), [".hidden/visible.md"], "dot folders are sources, unlike in qmd");
}

#[test]
fn a_reader_keeps_a_consistent_snapshot_while_a_build_commits() {
    let test = fixture();
    test.build();
    let reader =
        rusqlite::Connection::open_with_flags(test.index(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let count = |sql: &str| reader.query_row(sql, [], |row| row.get::<_, i64>(0)).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    assert_eq!(count("SELECT count(*) FROM sources"), 3);

    test.write("docs/new.md", "# New\n\nA new page about the numbat.\n");
    test.remove("notes/todo.txt");
    let summary = test.build();
    assert_eq!((summary["sources"]["added"].as_u64(), summary["sources"]["removed"].as_u64()), (Some(1), Some(1)));

    // The open read transaction still sees the index as it was, whole.
    assert_eq!(count("SELECT count(*) FROM sources"), 3);
    assert_eq!(count("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'quokka'"), 1);
    assert_eq!(count("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'numbat'"), 0);
    reader.execute_batch("COMMIT").unwrap();
    // A new read sees the whole new build.
    assert_eq!(count("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'quokka'"), 0);
    assert_eq!(count("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'numbat'"), 1);
}

#[test]
fn an_index_whose_schema_differs_is_rebuilt_even_with_the_same_format_version() {
    let test = fixture();
    test.build();
    {
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        conn.execute("UPDATE meta SET value = 'an-older-schema' WHERE key = 'schema_hash'", []).unwrap();
    }
    let search = test.run(&["search", "owner"]);
    assert_eq!(search.status.code(), Some(2));
    assert!(stderr(&search).contains("format version 1 with another schema"), "{}", stderr(&search));
    let lint = test.run(&["lint", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&lint.stdout).unwrap();
    assert_eq!(report["summary"]["parsed"], 3, "lint does not trust the index either, and still works");
    let summary = test.build();
    assert_eq!(summary["sources"]["added"], 3, "the index is rebuilt from scratch");
    assert_eq!(test.result_paths("owner"), ["docs/ownership.md"]);
}

#[test]
fn build_check_writes_nothing_and_says_whether_the_index_is_current() {
    let test = fixture();
    let missing = test.run(&["build", "--check"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        crate::stdout(&missing).contains("every source would be re-derived: no index"),
        "{}",
        crate::stdout(&missing)
    );
    assert!(!test.path(".hasna").exists(), "--check creates nothing");

    test.build();
    let bytes = std::fs::read(test.index()).unwrap();
    let current = test.run(&["build", "--check"]);
    assert_eq!(current.status.code(), Some(0));
    assert_eq!(crate::stdout(&current), "the index is up to date\n");

    test.write("docs/lifetimes.md", "# Lifetimes\n\nEdited.\n");
    test.write("docs/new.md", "# New\n");
    test.remove("notes/todo.txt");
    let stale = test.run(&["build", "--check", "--json"]);
    assert_eq!(stale.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&stale.stdout).unwrap();
    assert_eq!(report["added"], json!(["docs/new.md"]));
    assert_eq!(report["changed"], json!(["docs/lifetimes.md"]));
    assert_eq!(report["removed"], json!(["notes/todo.txt"]));
    assert_eq!(std::fs::read(test.index()).unwrap(), bytes, "and writes nothing");
}
