//! Trust, round 2 (issue 40): what a hostile pull request, a careless user or a flood of clients tried on
//! 632acd5 and got through. Each test here failed on that commit; the comment above it names the item.

use serde_json::Value;

use crate::{CliTest, stderr};

fn ingested_entry(reference: &str, file: &str) -> Value {
    serde_json::json!({
        "ref": reference, "resolver": "file", "owner": "file", "revision_id": "r", "mime": "text/markdown",
        "title": "T", "labels": [], "retrieved_at": "2026-01-01T00:00:00Z", "file": file, "hash": "h",
    })
}

// 1. A committed `ingested.json` arrives with a pull request: its `file` fields must stay in `ingested/`.
#[test]
fn an_ingested_list_that_names_files_elsewhere_reads_and_deletes_nothing_there() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nThe project's own page.\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("secret.txt");
    std::fs::write(&secret, "# Secret\n\nzanzibar passphrase\n").unwrap();
    test.write("victim.txt", "a file of the project's own\n");
    test.write(".hasna/knowledge/ingested/fine.md", "# Fine\n\nquartz ingested text\n");
    let list = serde_json::json!({ "version": 1, "sources": [
        ingested_entry("file:///absolute", &secret.display().to_string()),
        ingested_entry("file:///climbs", "../../victim.txt"),
        ingested_entry("file:///inside-but-climbs", "ingested/../../../victim.txt"),
        ingested_entry("file:///fine", "ingested/fine.md"),
    ]});
    test.write(".hasna/knowledge/ingested.json", serde_json::to_string(&list).unwrap());

    let output = test.run(&["build"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let warnings = stderr(&output);
    for reference in ["file:///absolute", "file:///climbs", "file:///inside-but-climbs"] {
        assert!(warnings.contains(&format!("skipped `{reference}`")), "{reference}: {warnings}");
    }
    assert!(warnings.contains("not a file in `ingested/`"), "{warnings}");
    assert!(test.result_paths("zanzibar passphrase").is_empty(), "a file outside the project was indexed");
    assert_eq!(test.result_paths("quartz"), ["file:///fine"], "an entry inside the folder is still indexed");

    let stderr = test.fails(&["ingest", "rm", "file:///climbs"], "not a file in `ingested/`");
    assert!(stderr.contains("file:///climbs"), "the error names the entry: {stderr}");
    assert!(test.path("victim.txt").exists(), "`ingest rm` deleted a file outside the output folder");
    test.fails(&["ingest", "rm", "file:///absolute"], "refused");
    assert!(secret.exists());
    // The list is untouched by a refused removal; a good entry is removed as before.
    test.ok(&["ingest", "rm", "file:///fine"]);
    assert!(!test.path(".hasna/knowledge/ingested/fine.md").exists());
    assert!(test.ok(&["ingest", "list"]).contains("file:///climbs"));
}

// 1. An `ingested/` folder that is a link leads nowhere either.
#[test]
fn an_ingested_folder_that_is_a_link_is_not_followed() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n");
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("x.md"), "# X\n\nzanzibar linked text\n").unwrap();
    std::fs::create_dir_all(test.path(".hasna/knowledge")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), test.path(".hasna/knowledge/ingested")).unwrap();
    let list = serde_json::json!({ "version": 1, "sources": [ingested_entry("file:///linked", "ingested/x.md")] });
    test.write(".hasna/knowledge/ingested.json", serde_json::to_string(&list).unwrap());
    let output = test.run(&["build"]);
    assert!(stderr(&output).contains("symbolic link"), "{}", stderr(&output));
    assert!(test.result_paths("zanzibar").is_empty());
    test.fails(&["ingest", "rm", "file:///linked"], "symbolic link");
    assert!(elsewhere.path().join("x.md").exists());
}

// 6. Writers of a stored file take turns: nothing that exits 0 is lost.
#[test]
fn parallel_adds_and_ingests_all_keep_what_they_stored() {
    let test = CliTest::empty();
    test.write(
        "kc.toml",
        "version = 1\n[sources]\ninclude = [\"docs/**/*.md\"]\n[ingest]\nfile_roots = [\"outside\"]\n",
    );
    const WRITERS: usize = 12;
    for i in 0..WRITERS {
        test.write(&format!("outside/f{i}.md"), format!("# File {i}\n\ntext {i}\n"));
    }
    let spawn = |args: Vec<String>| {
        std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"))
            .arg("-C")
            .arg(test.root())
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let outside = test.path("outside").canonicalize().unwrap();
    let mut children: Vec<_> = (0..WRITERS).map(|i| spawn(vec!["add".into(), format!("note number {i}")])).collect();
    children.extend(
        (0..WRITERS)
            .map(|i| spawn(vec!["ingest".into(), "source".into(), format!("file://{}/f{i}.md", outside.display())])),
    );
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let notes = test.ok(&["notes", "list"]);
    for i in 0..WRITERS {
        assert!(notes.contains(&format!("note number {i}")), "note {i} was lost:\n{notes}");
    }
    let ingested = test.ok(&["ingest", "list"]);
    assert_eq!(ingested.lines().filter(|line| line.contains("file://")).count(), WRITERS, "{ingested}");
    let files = std::fs::read_dir(test.path(".hasna/knowledge/ingested")).unwrap().count();
    assert_eq!(files, WRITERS, "every stored text is listed: no orphan files");
}

// 15. A file of the user's own where the lock goes is neither overwritten nor taken for a lock.
#[test]
fn a_users_own_build_lock_is_refused_and_kept() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n");
    test.write(".hasna/knowledge/build.lock", "my own notes, not a pid\n");
    let stderr = test.fails(&["build"], "is not a lock file of this tool");
    assert!(stderr.contains("build.lock"), "{stderr}");
    assert_eq!(std::fs::read_to_string(test.path(".hasna/knowledge/build.lock")).unwrap(), "my own notes, not a pid\n");
}

// 7. An output folder that leads out of the project through a link is refused by every writer, and nothing
// is written where it points.
#[test]
fn an_output_folder_linked_out_of_the_project_is_refused() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nSee [[Foo]].\n");
    test.write("docs/b.md", "# B\n\nAlso [[Foo]].\n");
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), test.path(".hasna")).unwrap();
    for args in [&["build"][..], &["build", "--check"], &["add", "a note"], &["search", "foo"]] {
        let stderr = test.fails(args, "outside the project");
        assert!(stderr.contains("kc.toml") && stderr.contains("symbolic link"), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing was written through the link");

    // A link that stays inside the project is fine.
    std::fs::remove_file(test.path(".hasna")).unwrap();
    std::fs::create_dir_all(test.path("build-output")).unwrap();
    std::os::unix::fs::symlink(test.path("build-output"), test.path(".hasna")).unwrap();
    test.write("kc.toml", "version = 1\n[sources]\ninclude = [\"docs/**/*.md\"]\n");
    test.build();
    assert!(test.path("build-output/knowledge/knowledge.db").exists());

    // A link planted among the generated pages: the build refuses to write through it.
    std::fs::remove_file(test.path(".hasna")).unwrap();
    std::fs::remove_dir_all(test.path("build-output")).unwrap();
    test.build();
    let section = test.path(".hasna/knowledge/wiki/general");
    std::fs::remove_dir_all(&section).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &section).unwrap();
    let output = test.run(&["build"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("symbolic link"), "{}", stderr(&output));
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing was written through the link");
}
