//! The build's promises, tried as a hostile or unlucky user would: incremental output equal to a clean
//! build's, files that follow the index after a kill, nothing from outside the project, `--check` that
//! answers exactly, one writer at a time, and a server that keeps serving. Each test here failed before
//! the fix it names (issue 12).

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{CliTest, assert_every_chunk_resolves, stderr, stdout};

/// Three notes that name one concept, Foo, so it gets a page and a shard row.
fn vault() -> CliTest {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nSee [[Foo]].\n");
    test.write("docs/b.md", "# B\n\nAlso [[Foo]].\n");
    test
}

const FOO_PAGE: &str = ".hasna/knowledge/wiki/general/foo.md";
/// The output folder's spare file, which every generated file is written through and builds keep.
const SPARE: &str = knowledge::wiki::SPARE;

fn check(test: &CliTest) -> (i32, String) {
    let output = test.run(&["build", "--check"]);
    (output.status.code().unwrap(), stdout(&output))
}

/// Every file under the output folder, relative to it, except the index and its journal files.
fn output_files(test: &CliTest) -> Vec<String> {
    let root = test.path(".hasna/knowledge");
    let mut files = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path.strip_prefix(&root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

// 1.
#[test]
fn an_index_entry_follows_its_shard_row_when_a_page_gains_a_source() {
    let test = vault();
    test.build();
    test.write("docs/c.md", "# C\n\nAnd [[Foo]] too.\n");
    test.build();
    let found: Value = serde_json::from_str(&test.ok(&["search", "foo", "--kind", "index_entry", "--json"])).unwrap();
    let entry = &found["results"][0];
    let text = entry["text"].as_str().unwrap();
    assert!(text.contains("| 3 |"), "the row counts three sources: {text}");
    let shard = std::fs::read_to_string(test.path(".hasna/knowledge/indexes/general.md")).unwrap();
    let (start, end) =
        (entry["citation"]["start_offset"].as_u64().unwrap(), entry["citation"]["end_offset"].as_u64().unwrap());
    assert_eq!(&shard[start as usize..end as usize], text);
    assert_every_chunk_resolves(&test);
    assert_eq!(check(&test).0, 0);
}

// 2.
#[test]
fn a_build_killed_before_it_deletes_a_page_leaves_it_for_the_next_build() {
    let test = vault();
    test.build();
    assert!(test.path(FOO_PAGE).is_file());
    test.remove("docs/b.md");
    let killed = test.run_with_env(&["build"], &[("KNOWLEDGE_FAILPOINT", "unlink")]);
    assert!(!killed.status.success(), "the failpoint aborts the build");
    assert!(test.path(FOO_PAGE).is_file(), "the kill came before the unlink");

    let (code, out) = check(&test);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stale: wiki/general/foo.md (generated)"), "{out}");
    let summary = test.build();
    assert_eq!(summary["wrote"], false, "the index was committed; only files follow");
    assert!(!test.path(FOO_PAGE).exists(), "the next build finishes the sync");
    assert_eq!(check(&test).0, 0);
}

// 3.
/// A build killed between filling the output folder's spare and putting it in place leaves the spare, which
/// builds keep, and the page it was for, which `--check` reports and the next build writes. A temporary file
/// of a write killed elsewhere (`.NAME.PID.tmp`, a folder's own where the spare cannot serve) is reported and
/// removed by the next build.
#[test]
fn temporary_files_of_a_killed_build_are_removed_by_the_next() {
    let test = vault();
    test.build();
    test.write("docs/c.md", "# C\n\nAnd [[Foo]] too.\n");
    let killed = test.run_with_env(&["build"], &[("KNOWLEDGE_FAILPOINT", "rename")]);
    assert!(!killed.status.success());
    let temporary: Vec<String> = output_files(&test).into_iter().filter(|f| f.ends_with(".tmp")).collect();
    assert_eq!(temporary, [SPARE], "the kill left the spare alone");
    let stray = "wiki/general/.kc-spare.4242.tmp";
    test.write(&format!(".hasna/knowledge/{stray}"), "half a page");
    let (code, out) = check(&test);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("stale: {stray} (generated)")), "{out}");
    assert!(!out.contains(SPARE), "the spare is the tool's own, not drift: {out}");

    test.build();
    let temporary: Vec<String> = output_files(&test).into_iter().filter(|f| f.ends_with(".tmp")).collect();
    assert!(temporary.iter().all(|f| f == SPARE), "{temporary:?}");
    assert_eq!(check(&test).0, 0);
    assert_every_chunk_resolves(&test);
}

// 4.
#[test]
fn an_output_folder_the_tool_cannot_own_is_refused_with_its_location() {
    for (dir, says) in [
        (".", "project root"),
        ("", "project root"),
        ("./", "project root"),
        ("docs", "holds sources"),
        (".git", "inside `.git`"),
        (".git/knowledge", "inside `.git`"),
        ("~", "`~` is not expanded"),
        ("~/knowledge", "`~` is not expanded"),
        ("/tmp/knowledge-output", "relative path inside the project"),
        ("../elsewhere", "relative path inside the project"),
    ] {
        let test = CliTest::new();
        test.write("kc.toml", format!("version = 1\n\n[output]\ndir = {dir:?}\n"));
        test.write("docs/a.md", "# A\n\nText.\n");
        test.write("indexes/root.md", "# My own index\n");
        test.write("schemas/v1.md", "# My own schema\n");
        for args in [&["build"][..], &["build", "--check"][..]] {
            let output = test.run(args);
            assert_eq!(output.status.code(), Some(2), "dir = {dir:?}: {}", stderr(&output));
            assert!(stderr(&output).contains("kc.toml:4:7:"), "dir = {dir:?}: {}", stderr(&output));
            assert!(stderr(&output).contains(says), "dir = {dir:?}: {}", stderr(&output));
        }
        assert_eq!(std::fs::read_to_string(test.path("indexes/root.md")).unwrap(), "# My own index\n");
        assert_eq!(std::fs::read_to_string(test.path("schemas/v1.md")).unwrap(), "# My own schema\n");
    }
}

// 4: the tool's own files in its folder are not sources, whatever the globs select.
#[test]
fn the_tools_own_files_do_not_count_as_sources_in_its_folder() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[sources]\ninclude = [\"**/*\"]\n");
    test.write("docs/a.md", "# A\n\nSee [[Foo]].\n");
    test.write("docs/b.md", "# B\n\nAlso [[Foo]].\n");
    test.ok(&["add", "a note"]);
    test.build();
    let second = test.build();
    assert_eq!(second["wrote"], false, "{second}");
    assert_eq!(check(&test).0, 0);
}

// 4, second half.
#[test]
fn a_file_the_build_did_not_generate_is_never_overwritten() {
    let test = vault();
    test.write(".hasna/knowledge/indexes/root.md", "# Notes I keep here\n");
    let output = test.run(&["build"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("not writing `indexes/root.md`"), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(test.path(".hasna/knowledge/indexes/root.md")).unwrap(),
        "# Notes I keep here\n"
    );
    let (code, out) = check(&test);
    assert_eq!(code, 1);
    assert!(out.contains("blocked: indexes/root.md (generated)"), "{out}");
    // Out of the way, the file is generated.
    test.remove(".hasna/knowledge/indexes/root.md");
    test.build();
    assert_eq!(check(&test).0, 0);
}

// 5.
#[test]
fn symlinks_out_of_the_project_are_skipped_with_a_warning_whatever_follow_symlinks_says() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# Secret\n\nroot bash nologin zqxv\n").unwrap();
    for follow in [true, false] {
        let test = CliTest::new();
        test.write("kc.toml", format!("version = 1\n[sources]\nfollow_symlinks = {follow}\n"));
        test.write("docs/a.md", "# A\n\nInside.\n");
        test.write("docs/inner.md", "# Inner\n\nLinked from inside.\n");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), test.path("passwd.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), test.path("elsewhere")).unwrap();
        std::os::unix::fs::symlink(test.path("docs/inner.md"), test.path("alias.md")).unwrap();
        let output = test.run(&["build", "--json"]);
        assert!(output.status.success());
        let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
        let skipped: Vec<&str> =
            summary["skipped"].as_array().unwrap().iter().map(|s| s["path"].as_str().unwrap()).collect();
        assert_eq!(skipped, ["elsewhere", "passwd.md"], "follow_symlinks = {follow}");
        assert!(summary["skipped"][1]["reason"].as_str().unwrap().contains("outside the project"));
        assert!(test.result_paths("zqxv").is_empty(), "follow_symlinks = {follow}: nothing from outside is served");
        let inside = test.result_paths("linked from inside");
        assert_eq!(
            inside.contains(&"alias.md".to_string()),
            follow,
            "a link inside the project is a source when followed"
        );
    }
}

// 6.
#[test]
fn build_check_agrees_with_the_build_for_every_kind_of_change() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[embeddings]\nprovider = \"fake\"\ndimensions = 256\n");
    test.write("docs/a.md", "# Alpha\n\nAlpha leans on [[Beta]].\n");
    test.write("docs/b.md", "# Beta\n\nBeta is alone. [[Alpha]] too.\n");
    test.write("docs/c.md", "# Gamma\n\nGamma cites [[Beta]] and [[Alpha]].\n");
    test.build();
    assert_eq!(check(&test).0, 0);

    // Each settings change adds a section to the last one's `kc.toml`.
    let config = |sections: &str, dimensions: u32| {
        format!("version = 1\n{sections}[embeddings]\nprovider = \"fake\"\ndimensions = {dimensions}\n")
    };
    let chunking = "[chunking]\ntarget_bytes = 800\n";
    let wiki = "[wiki]\nmin_sources = 3\n";
    let templates = "[wiki]\nmin_sources = 3\ntemplates_dir = \"tpl\"\n";
    let lint = "[lint]\non_build = true\n";
    type Change = Box<dyn Fn(&CliTest)>;
    let changes: Vec<(&str, Change, &str)> = vec![
        ("a new source", Box::new(|t| t.write("docs/d.md", "# Delta\n\nNew.\n")), "added: docs/d.md"),
        ("an edit", Box::new(|t| t.write("docs/d.md", "# Delta\n\nEdited.\n")), "changed: docs/d.md"),
        ("a deletion", Box::new(|t| t.remove("docs/d.md")), "removed: docs/d.md"),
        (
            "[chunking]",
            Box::new(move |t| t.write("kc.toml", config(chunking, 256))),
            "every source would be re-derived",
        ),
        (
            "[wiki] min_sources",
            Box::new(move |t| t.write("kc.toml", config(&format!("{chunking}{wiki}"), 256))),
            "would run: the [wiki] settings or templates changed",
        ),
        (
            "a template",
            Box::new(move |t| {
                t.write("kc.toml", config(&format!("{chunking}{templates}"), 256));
                t.write("tpl/root.md.j2", "---\ngenerated: true\n---\n\n# Our index: {{ pages }} pages\n");
            }),
            "would run: the [wiki] settings or templates changed",
        ),
        (
            "[lint]",
            Box::new(move |t| t.write("kc.toml", config(&format!("{chunking}{templates}{lint}"), 256))),
            "would run: the [lint] settings changed",
        ),
        (
            "[embeddings] dimensions",
            Box::new(move |t| t.write("kc.toml", config(&format!("{chunking}{templates}{lint}"), 128))),
            "would run: embeddings: the embedding model changed from `fake:256` to `fake:128`",
        ),
        (
            "a queued reindex",
            Box::new(|t| {
                t.ok(&["reindex", "enqueue"]);
            }),
            "would run: embeddings: a reindex job is queued",
        ),
        (
            "pending embeddings",
            Box::new(|t| {
                t.write("docs/e.md", "# Epsilon\n\nNew while the provider is down.\n");
                assert!(t.run_with_env(&["build"], &[("KNOWLEDGE_FAILPOINT", "embed")]).status.success());
            }),
            "would run: embeddings: chunks a provider failed on are pending",
        ),
        (
            "a hand-edited generated file",
            Box::new(|t| t.write(".hasna/knowledge/indexes/root.md", "---\ngenerated: true\n---\nedited\n")),
            "modified: indexes/root.md (generated)",
        ),
        (
            "a deleted generated file",
            Box::new(|t| t.remove(".hasna/knowledge/schemas/v1.md")),
            "missing: schemas/v1.md (generated)",
        ),
    ];
    for (name, change, says) in changes {
        change(&test);
        let (code, out) = check(&test);
        assert_eq!(code, 1, "{name}: --check must see it\n{out}");
        assert!(out.contains(says), "{name}: --check says what: {out}");
        let summary = test.build();
        let declared = summary["artifacts"].as_object().unwrap().values();
        let files_written = [&summary["pages"], &summary["shards"]]
            .into_iter()
            .chain(declared)
            .map(|counters| counters["written"].as_u64().unwrap())
            .sum::<u64>();
        assert!(summary["wrote"] == true || files_written > 0, "{name}: the build does what --check said: {summary}");
        let (code, out) = check(&test);
        assert_eq!(code, 0, "{name}: after the build, --check is satisfied\n{out}");
        assert_eq!(test.build()["wrote"], false, "{name}: and a second build does nothing");
    }
    // A touch moves only the stat: nothing a build would change.
    let file = std::fs::File::options().write(true).open(test.path("docs/a.md")).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3)).unwrap();
    assert_eq!(check(&test).0, 0);
}

// 7.
#[test]
fn an_index_does_not_depend_on_the_folder_it_sits_in() {
    let parent = tempfile::tempdir().unwrap();
    let first = parent.path().join("checkout-one");
    std::fs::create_dir_all(first.join("docs")).unwrap();
    // No [project] name: it defaults to the folder's, which must not matter.
    std::fs::write(first.join("kc.toml"), "version = 1\n").unwrap();
    std::fs::write(first.join("docs/a.md"), "# A\n\nSee [[Foo]].\n").unwrap();
    std::fs::write(first.join("docs/b.md"), "# B\n\nAlso [[Foo]].\n").unwrap();
    let knowledge = |dir: &std::path::Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_knowledge")).arg("-C").arg(dir).args(args).output().unwrap()
    };
    assert!(knowledge(&first, &["build"]).status.success());
    std::thread::sleep(std::time::Duration::from_millis(50));
    let second = parent.path().join("elsewhere-two");
    std::fs::rename(&first, &second).unwrap();
    let checked = knowledge(&second, &["build", "--check"]);
    assert_eq!(checked.status.code(), Some(0), "{}", stdout(&checked));
    let summary: Value = serde_json::from_slice(&knowledge(&second, &["build", "--json"]).stdout).unwrap();
    assert_eq!((summary["full_rebuild"].as_bool(), summary["wrote"].as_bool()), (Some(false), Some(false)));
}

// 8.
#[test]
fn a_second_build_waits_for_the_first() {
    let test = vault();
    test.build();
    // Hold the writer's lock as a running build would.
    let lock = std::fs::File::options().read(true).write(true).open(test.path(".hasna/knowledge/build.lock")).unwrap();
    lock.lock().unwrap();
    std::fs::write(test.path(".hasna/knowledge/build.lock"), "4242").unwrap();
    test.write("docs/c.md", "# C\n\nAnd [[Foo]] too.\n");
    let mut waiting = Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .arg("-C")
        .arg(test.root())
        .args(["build", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    std::io::BufReader::new(waiting.stderr.take().unwrap()).read_line(&mut said).unwrap();
    assert_eq!(said, "waiting for another build to finish (pid 4242)\n");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(waiting.try_wait().unwrap().is_none(), "it waits while the lock is held");
    drop(lock);
    let output = waiting.wait_with_output().unwrap();
    assert!(output.status.success());
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["sources"]["added"], 1);

    // Two real builds at once: both succeed, one after the other, and the index is whole.
    test.write("docs/d.md", "# D\n\nAnd [[Foo]] again.\n");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_knowledge"))
            .arg("-C")
            .arg(test.root())
            .args(["build", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn(), spawn());
    let (one, two) = (one.wait_with_output().unwrap(), two.wait_with_output().unwrap());
    assert!(one.status.success(), "{}", stderr(&one));
    assert!(two.status.success(), "{}", stderr(&two));
    assert_every_chunk_resolves(&test);
    assert_eq!(check(&test).0, 0);
}

// 9.
#[test]
fn lint_refuses_missing_paths_and_paths_outside_the_project() {
    let test = vault();
    let missing = test.run(&["lint", "nonexistent.md"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no such file or folder: `nonexistent.md`"), "{}", stderr(&missing));
    let outside = test.run(&["lint", "../../../../../../etc/passwd"]);
    assert_eq!(outside.status.code(), Some(2));
    assert!(stderr(&outside).contains("is outside the project"), "{}", stderr(&outside));
    assert_eq!(stdout(&outside), "", "nothing is linted");

    test.write("picture.png", [0x89, b'P', b'N', b'G', 0, 0, 0, 13]);
    test.write("docs/blob.md", b"# Blob\n\0\0binary");
    let binary = test.run(&["lint", "picture.png", "docs/blob.md"]);
    assert_eq!(binary.status.code(), Some(0));
    assert!(stderr(&binary).contains("not linted: `picture.png`"), "{}", stderr(&binary));
    assert!(stderr(&binary).contains("skipped `docs/blob.md`: binary file"), "{}", stderr(&binary));
}

// 10.
#[test]
fn control_characters_in_file_names_never_reach_output_raw() {
    let test = CliTest::new();
    let evil = "evil\n::error file=INJECTED.md,line=1::pwned\n.md";
    test.write(evil, "# Evil\n\nA [broken](missing.md) link.\n");
    test.write("bad\u{1b}[31mname.md", [0xff, 0xfe, b'x']);
    let lint = test.run(&["lint"]);
    assert_eq!(lint.status.code(), Some(1));
    for output in [stdout(&lint), stderr(&lint)] {
        assert!(output.lines().all(|line| !line.starts_with("::")), "{output}");
        assert!(!output.contains('\u{1b}'), "{output:?}");
    }
    assert!(stdout(&lint).contains("evil\\n::error file=INJECTED.md,line=1::pwned\\n.md:3:3:"), "{}", stdout(&lint));

    let github = stdout(&test.run(&["lint", "--format", "github"]));
    assert_eq!(github.lines().count(), 1, "one finding, one line: {github}");
    assert!(
        github.starts_with("::error file=evil%0A%3A%3Aerror file=INJECTED.md%2Cline=1%3A%3Apwned%0A.md,"),
        "{github}"
    );

    let sarif: Value = serde_json::from_str(&stdout(&test.run(&["lint", "--format", "sarif"]))).unwrap();
    let uri = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
    assert_eq!(uri, "evil%0A%3A%3Aerror%20file%3DINJECTED.md%2Cline%3D1%3A%3Apwned%0A.md");

    let build = test.run(&["build"]);
    assert!(stderr(&build).contains("warning: skipped `bad\\u{1b}[31mname.md`: invalid UTF-8"), "{}", stderr(&build));
    let listed = stdout(&test.run(&["list", "sources"]));
    assert!(listed.lines().all(|line| !line.starts_with("::")), "{listed}");
}

/// `knowledge serve --http 127.0.0.1:0` under a file-descriptor limit, with its port.
pub(crate) fn http_server(test: &CliTest, descriptors: u32) -> (std::process::Child, u16) {
    let mut server = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {descriptors} && exec \"$0\" -C \"$1\" serve --http 127.0.0.1:0"))
        .arg(env!("CARGO_BIN_EXE_knowledge"))
        .arg(test.root())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().trim_end_matches("/mcp").rsplit(':').next().unwrap().parse().unwrap();
    (server, port)
}

/// One HTTP POST to `/mcp` with `headers`; the status code and the body.
pub(crate) fn post(port: u16, body: &str, headers: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response)
}

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

// 11 and 12 over HTTP.
#[test]
fn the_http_server_survives_running_out_of_descriptors_and_checks_origin_and_envelopes() {
    let test = vault();
    test.build();
    let (mut server, port) = http_server(&test, 64);
    let idle: Vec<std::net::TcpStream> =
        (0..150).filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).ok()).collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(server.try_wait().unwrap().is_none(), "the server outlives running out of descriptors");
    drop(idle);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (status, body) = post(port, INITIALIZE, "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""serverInfo""#), "{body}");

    let (status, body) = post(port, INITIALIZE, "Origin: https://evil.example\r\n");
    assert_eq!(status, 403, "a page from elsewhere is refused: {body}");
    let (status, _) = post(port, INITIALIZE, "Origin: http://localhost:3000\r\n");
    assert_eq!(status, 200, "a loopback page is served");

    for (message, id) in [
        (r#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#, "2"),
        (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, "3"),
        (r#"{"jsonrpc":"2.0","id":"four","method":"tools/list","params":[1]}"#, r#""four""#),
    ] {
        let (status, body) = post(port, message, "");
        assert_eq!(status, 400, "{body}");
        assert!(body.contains(r#""code":-32600"#) && body.contains(&format!(r#""id":{id}"#)), "{body}");
    }
    server.kill().unwrap();
    let _ = server.wait();
}

/// `knowledge serve` over stdio on `test`'s index, initialized.
pub(crate) struct StdioServer {
    server: std::process::Child,
    pub(crate) stdin: std::process::ChildStdin,
    replies: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl StdioServer {
    pub(crate) fn start(test: &CliTest) -> StdioServer {
        let mut server = Command::new(env!("CARGO_BIN_EXE_knowledge"))
            .arg("-C")
            .arg(test.root())
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = server.stdin.take().unwrap();
        let replies = std::io::BufReader::new(server.stdout.take().unwrap()).lines();
        let mut started = StdioServer { server, stdin, replies };
        writeln!(started.stdin, "{INITIALIZE}").unwrap();
        assert_eq!(started.reply()["id"], 1);
        writeln!(started.stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        started
    }

    pub(crate) fn reply(&mut self) -> Value {
        serde_json::from_str(&self.replies.next().unwrap().unwrap()).unwrap()
    }

    pub(crate) fn stop(self) {
        let StdioServer { mut server, stdin, .. } = self;
        drop(stdin);
        let _ = server.wait();
    }
}

// 12 over stdio.
#[test]
fn a_bad_envelope_over_stdio_gets_an_error_reply_and_the_server_keeps_serving() {
    let test = vault();
    test.build();
    let mut server = StdioServer::start(&test);
    for (message, id) in [
        (r#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#, json!(2)),
        (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, json!(3)),
        (r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}"#, json!(4)),
    ] {
        writeln!(server.stdin, "{message}").unwrap();
        let error = server.reply();
        assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (id, json!(-32600)), "{error}");
    }
    writeln!(server.stdin, "not json").unwrap();
    assert_eq!(server.reply()["error"]["code"], -32700);
    writeln!(server.stdin, r#"{{"jsonrpc":"2.0","id":5,"method":"tools/list"}}"#).unwrap();
    let tools = server.reply();
    assert_eq!(tools["id"], 5);
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    server.stop();
}

// 13.
#[cfg(feature = "local-embeddings")]
#[test]
fn the_local_model_is_loaded_only_when_there_is_something_to_embed() {
    let model = crate::minilm::model_dir();
    let test = CliTest::new();
    // The real configuration and tokenizer, and weights that cannot load: any attempt to load them fails.
    for name in ["config.json", "tokenizer.json"] {
        std::fs::copy(model.join(name), test.path(name)).unwrap();
    }
    test.write("model.safetensors", "not weights");
    test.write("kc.toml", "version = 1\n[embeddings]\nprovider = \"local\"\nmodel_dir = \".\"\n");
    let first = test.build();
    assert_eq!(first["embeddings"]["computed"], 0, "an empty project: nothing to embed, nothing loaded");
    assert!(first["embeddings"]["degraded"].is_null(), "{first}");
    let second = test.build();
    assert_eq!(second["wrote"], false, "a no-op build does not load the model");
    test.write("docs/a.md", "# A\n\nSomething to embed.\n");
    let output = test.run(&["build"]);
    assert!(stderr(&output).contains("model.safetensors"), "now it loads, and says why it cannot: {}", stderr(&output));
}

// Found by the long differential run: lint inside a build judged a link into the output folder by the
// disk, where the page the build was removing still stood.
#[test]
fn a_builds_lint_judges_links_to_generated_pages_by_the_index_it_commits() {
    let test = vault();
    test.write("kc.toml", "version = 1\n[lint]\non_build = true\n");
    test.write(".hasna/knowledge/wiki/mine.md", "# Mine\n\nSee [the Foo page](general/foo.md).\n");
    let findings = |test: &CliTest| -> Vec<String> { test.column("SELECT code || ' ' || message FROM lint_results") };
    test.build();
    assert!(!findings(&test).iter().any(|f| f.starts_with("broken_link")), "{:?}", findings(&test));
    test.remove("docs/b.md");
    test.build();
    assert!(!test.path(FOO_PAGE).exists());
    assert!(
        findings(&test).iter().any(|f| f == "broken_link link to `general/foo.md`: no such file or folder"),
        "{:?}",
        findings(&test)
    );
}
