//! `knowledge build --watch`: one process, one kept salsa database, a build after each change with one
//! line per build, and only the queries an edit reaches run again.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::Value;

use crate::CliTest;

/// A running `knowledge build --watch --json` and its lines.
struct Watching {
    child: Child,
    lines: Receiver<String>,
}

impl Watching {
    fn start(test: &CliTest) -> Watching {
        let mut child = Command::new(env!("CARGO_BIN_EXE_knowledge"))
            .arg("-C")
            .arg(test.root())
            .args(["build", "--watch", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Watching { child, lines }
    }

    /// The next build's line.
    fn next(&self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(20)).expect("a build within 20 s");
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `text` to the project's `relative` path whole, as editors save: into a temporary file outside the
/// project, then renamed into place. A write in place is a truncation and a write, two events that a loaded
/// machine can part by more than the watch's quiet time, so the watch would build twice (rightly: the first
/// build read the file half written) and the test would read the second build as the next step's.
fn save(test: &CliTest, relative: &str, text: &str) {
    let mut file = tempfile::NamedTempFile::new_in(test.root().parent().unwrap()).unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    file.persist(test.path(relative)).unwrap();
}

fn ran(line: &Value, query: &str) -> u64 {
    line["queries"]["by_query"][query].as_u64().unwrap_or(0)
}

#[test]
fn a_watch_rebuilds_each_change_and_reruns_only_what_it_reaches() {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nSee [[Foo]].\n\nA paragraph of its own.\n");
    test.write("docs/b.md", "# B\n\nAlso [[Foo]] and [[Bar]].\n");
    test.write("docs/c.md", "# C\n\nOnly [[Baz]].\n");
    test.write("docs/d.md", "# D\n\nAnd [[Baz]].\n");
    let watching = Watching::start(&test);
    let first = watching.next();
    assert_eq!(first["sources"]["added"], 4);
    assert_eq!(first["pages"]["rendered"], 2, "Foo and Baz");
    assert_eq!(first["walked"], true, "the first build walks the project");
    let baz = test.path(".hasna/knowledge/wiki/general/baz.md");
    let baz_mtime = std::fs::metadata(&baz).unwrap().modified().unwrap();

    // An edit inside a paragraph: that file's queries, and the one page that quotes it.
    save(&test, "docs/a.md", "# A\n\nSee [[Foo]].\n\nA paragraph of its own, edited.\n");
    let edit = watching.next();
    assert_eq!(edit["changed"], serde_json::json!(["docs/a.md"]));
    assert_eq!(edit["sources"]["changed"], 1);
    assert_eq!(edit["walked"], false, "the watcher named the one file to look at");
    for query in ["lint_facts", "concept_signals"] {
        assert_eq!(ran(&edit, query), 1, "{query} of docs/a.md only: {}", edit["queries"]);
    }
    // Foo's page quotes the line above the edit, so it changes only in the revision it cites: its text is the
    // stored one with that revision replaced, not rendered, and its source row the stored one restamped: only
    // docs/a.md is parsed and chunked.
    assert_eq!(ran(&edit, "render_page"), 0, "Foo's page, which quotes docs/a.md: {}", edit["queries"]);
    for query in ["parse", "outline", "chunks"] {
        assert_eq!(ran(&edit, query), 1, "{query} of docs/a.md alone: {}", edit["queries"]);
    }
    // Its signals' texts are unchanged, so the plan does not run again; Foo's model does, as it quotes it.
    for query in ["page_model", "page_model_hash", "page_text_hash"] {
        assert_eq!(ran(&edit, query), 1, "{query}: {}", edit["queries"]);
    }
    assert_eq!(ran(&edit, "planned_pages"), 0, "the plan is not run again: {}", edit["queries"]);
    // Foo's page has a new hash, which only its section's JSON shows: the shard's rows, Markdown and entries
    // are as they were. The JSON's catalog row follows them, and the page's is made from its kept text.
    for query in ["shard_json", "shard_json_artifact"] {
        assert_eq!(ran(&edit, query), 1, "{query}: {}", edit["queries"]);
    }
    // `llms.txt` is stamped by its rows' digests, and Foo's (its title and summary) is as it was: no entry is
    // read, and neither the stamp nor the list is made again.
    let llms = (ran(&edit, "llms_entry"), ran(&edit, "llms_stamp"), ran(&edit, "llms_text"));
    assert_eq!(llms, (0, 0, 0), "{}", edit["queries"]);
    assert_eq!(edit["queries"]["executed"], 10, "nothing else: {}", edit["queries"]);
    assert_eq!(test.result_paths("edited").first().map(String::as_str), Some("docs/a.md"), "the index is current");

    // A new wikilink: the concept it makes (Bar, now named by two sources) gets its page; Baz is untouched.
    save(&test, "docs/a.md", "# A\n\nSee [[Foo]] and [[Bar]].\n\nA paragraph of its own, edited.\n");
    let link = watching.next();
    assert!(test.path(".hasna/knowledge/wiki/general/bar.md").is_file(), "{link}");
    assert_eq!(ran(&link, "planned_pages"), 1, "a new mention plans again: {}", link["queries"]);
    assert_eq!(ran(&link, "page_model"), 2, "Bar's new page and Foo's, which quotes docs/a.md: {}", link["queries"]);
    assert!(ran(&link, "render_page") <= 2, "Bar's and Foo's pages at most: {}", link["queries"]);
    assert_eq!(ran(&link, "shard_markdown"), 1, "the one section's shard, with Bar's new row: {}", link["queries"]);
    assert_eq!(std::fs::metadata(&baz).unwrap().modified().unwrap(), baz_mtime, "Baz's page is not written again");

    // A broken kc.toml is reported and the watch goes on; fixing it builds again. Each is saved whole (a
    // rename into place, as editors save): a write in two steps could be seen half done, empty.
    save(&test, "kc.toml", "version = 1\n[chunking\n");
    let broken = watching.next();
    assert!(broken["error"].as_str().unwrap().contains("kc.toml:2:10"), "{broken}");
    save(&test, "kc.toml", "version = 1\n[project]\nname = \"fixture\"\n");
    let fixed = watching.next();
    assert!(fixed["error"].is_null(), "{fixed}");
    assert_eq!(fixed["wrote"], false, "the same settings as before: nothing to rebuild");

    // A deletion, and a hand-written page in the output folder's wiki/, are changes too.
    std::fs::remove_file(test.path("docs/d.md")).unwrap();
    let removed = watching.next();
    assert_eq!(removed["sources"]["removed"], 1);
    assert_eq!(removed["walked"], false, "a removed source needs no walk");
    assert!(!baz.exists(), "Baz has one source left: its page goes");
    save(&test, ".hasna/knowledge/wiki/notes.md", "# Notes\n\nBy hand about [[Baz]].\n");
    let hand = watching.next();
    assert_eq!(hand["changed"], serde_json::json!([".hasna/knowledge/wiki/notes.md"]));
    assert_eq!(hand["sources"]["added"], 1);
    assert_eq!(hand["walked"], false, "a new file: only the folders on its way are walked");
    let after = watching.lines.recv_timeout(Duration::from_millis(500));
    assert!(after.is_err(), "the build's own writes start no build: {after:?}");
}

#[test]
fn a_watch_indexes_what_ingest_stores() {
    let test = CliTest::new();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[ingest]\nopen_files_manifest = \"manifest.jsonl\"\n",
    );
    test.write("docs/a.md", "# A\n\nSomething local.\n");
    test.write(
        "manifest.jsonl",
        r#"{"id":"m1","revision_id":"r1","mime":"text/plain","text":"The turbine manual says to grease the bearings weekly."}"#,
    );
    let watching = Watching::start(&test);
    watching.next();
    test.ok(&["ingest", "source", "open-files://m1"]);
    // Ingest writes the source's text, then the list that names it, each whole: a loaded machine can part the
    // two by more than the watch's quiet time, and a build between them finds the text alone, which is no
    // source until the list names it, and writes nothing. The list's build adds it.
    loop {
        let line = watching.next();
        if line["sources"]["added"] == 1 {
            break;
        }
        assert_eq!(line["wrote"], false, "a build between ingest's two writes writes nothing: {line}");
    }
    assert!(test.ok(&["search", "grease the bearings"]).contains("open-files://m1"));
    // The manifest itself is a project file only if the globs select it; re-ingesting it unchanged stores
    // nothing, so no build follows.
    test.ok(&["ingest", "source", "open-files://m1"]);
    let line = watching.lines.recv_timeout(Duration::from_millis(800));
    assert!(
        line.as_ref().is_err() || serde_json::from_str::<Value>(line.as_ref().unwrap()).unwrap()["wrote"] == false,
        "{line:?}"
    );
}
