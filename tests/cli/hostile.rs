//! Trust, round 2 (issue 40): what a hostile pull request, a careless user or a flood of clients tried on
//! 632acd5 and got through. Each test here failed on that commit; the comment above it names the item.

use std::io::{Read, Write};

use serde_json::Value;

use crate::trust::{INITIALIZE, StdioServer, http_server, post};
use crate::{CliTest, stderr, stdout};

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

/// A project whose two notes link `[[Foo]]`, built: the page `wiki/general/foo.md` is generated.
fn built() -> CliTest {
    let test = CliTest::new();
    test.write("docs/a.md", "# A\n\nSee [[Foo]].\n");
    test.write("docs/b.md", "# B\n\nAlso [[Foo]].\n");
    test.build();
    test
}

// 3. Bytes that are not UTF-8 get a parse error over stdio; the server keeps serving.
#[test]
fn a_line_that_is_not_utf8_gets_a_parse_error_and_stdio_keeps_serving() {
    let test = built();
    let mut server = StdioServer::start(&test);
    server.stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\"}\n").unwrap();
    assert_eq!(server.reply()["error"]["code"], -32700);
    // A line longer than the body limit is refused whole, without holding it.
    let long = format!("{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"{}\"}}\n", "x".repeat(5 << 20));
    server.stdin.write_all(long.as_bytes()).unwrap();
    assert_eq!(server.reply()["error"]["code"], -32700);
    writeln!(server.stdin, r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call"}}"#).unwrap();
    assert_eq!(server.reply()["error"]["code"], -32602, "tools/call without params (item 16)");
    writeln!(server.stdin, r#"{{"jsonrpc":"2.0","id":5,"method":"tools/list"}}"#).unwrap();
    let tools = server.reply();
    assert_eq!(tools["id"], 5);
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    server.stop();
}

// 8. --allow-remote turns the Host and Origin checks off: it needs a token on any address.
#[test]
fn allow_remote_needs_a_token_on_loopback_too() {
    let test = built();
    for address in ["127.0.0.1:0", "0.0.0.0:0"] {
        let stderr = test.fails(&["serve", "--http", address, "--allow-remote"], "without a bearer token");
        assert!(stderr.contains("--token-env"), "{stderr}");
    }
}

// 16. Over HTTP, what rmcp would refuse as plain text gets a JSON-RPC error.
#[test]
fn odd_ids_batches_and_duplicate_keys_get_json_rpc_errors_over_http() {
    let test = built();
    let (mut server, port) = http_server(&test, 1024);
    for (message, code) in [
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#, -32600),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#, -32600),
        (r#"{"jsonrpc":"2.0","id":4,"id":4,"method":"tools/list"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":6,"method":"tools/call"}"#, -32602),
    ] {
        let (status, response) = post(port, message, "");
        assert_eq!(status, 400, "{message}: {response}");
        let body: Value = serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["error"]["code"], code, "{message}: {body}");
        assert_eq!(body["jsonrpc"], "2.0");
    }
    server.kill().unwrap();
    let _ = server.wait();
}

/// The `mcp-session-id` header of an HTTP response.
fn session_id(response: &str) -> String {
    let head = response.split("\r\n\r\n").next().unwrap();
    let line = head.lines().find(|line| line.to_ascii_lowercase().starts_with("mcp-session-id:")).unwrap();
    line.split_once(':').unwrap().1.trim().to_string()
}

// 4. A flood of `initialize` keeps a bounded number of sessions: the least recently used goes.
#[test]
fn a_flood_of_sessions_evicts_the_least_recently_used() {
    let test = built();
    let (mut server, port) = http_server(&test, 1024);
    let first = session_id(&post(port, INITIALIZE, "").1);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let with = |id: &str| format!("Mcp-Session-Id: {id}\r\n");
    let mut last = String::new();
    for _ in 0..300 {
        let (status, response) = post(port, INITIALIZE, "");
        assert_eq!(status, 200, "{response}");
        last = session_id(&response);
    }
    let (status, response) = post(port, list, &with(&first));
    assert_eq!(status, 404, "the oldest session was closed for newer ones: {response}");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post(port, initialized, &with(&last)).0, 202);
    let (status, response) = post(port, list, &with(&last));
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("knowledge_search"), "{response}");
    server.kill().unwrap();
    let _ = server.wait();
}

// 5. Idle connections cannot hold every slot: a real client is served, and an idle one is closed.
#[test]
fn idle_connections_do_not_keep_real_clients_out() {
    let test = built();
    let (mut server, port) = http_server(&test, 4096);
    let idle: Vec<std::net::TcpStream> =
        (0..520).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (status, response) = post(port, INITIALIZE, "");
    assert_eq!(status, 200, "{response}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "served after {:?}", started.elapsed());
    // The oldest idle connections were closed to make room.
    let mut first = idle.into_iter().next().unwrap();
    first.set_read_timeout(Some(std::time::Duration::from_secs(15))).unwrap();
    let mut buffer = [0u8; 16];
    assert_eq!(first.read(&mut buffer).unwrap_or(0), 0, "a connection that sent nothing is closed");
    server.kill().unwrap();
    let _ = server.wait();
}

/// Whether a human output holds a character a terminal or a CI log would act on.
pub(crate) fn acts_on_a_terminal(output: &str) -> Option<char> {
    output.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

// 12. One escaping rule for every human output: snippets, packs, get, ask, lint annotations, errors.
#[test]
fn control_and_bidirectional_characters_never_reach_a_terminal_raw() {
    let test = CliTest::new();
    test.write(
        "docs/evil.md",
        "# Evil \u{85}heading \u{202e}txt.md\n\nThe reactor manual says \u{1b}[2J clear, \u{1b}]8;;https://x.example\u{7}link\u{1b}]8;;\u{7} \
         and rings \u{7} the reactor bell \u{202e} reversed.\n\nSee [the \u{1b}[31mmissing](gone\u{1b}[2J.md).\n",
    );
    test.build();
    let chunk = test.search("reactor bell")["results"][0]["id"].as_str().unwrap().to_string();
    for args in [
        &["search", "reactor bell"][..],
        &["search", "zzzz reactor"],
        &["context", "pack", "reactor bell"],
        &["get", "docs/evil.md"],
        &["get", &chunk],
        &["get", "docs/evil.md#L3-L3"],
        &["ask", "what does the reactor manual say?"],
        &["lint"],
        &["lint", "--format", "github"],
        &["list", "sources"],
    ] {
        let output = test.run(args);
        for text in [stdout(&output), stderr(&output)] {
            assert_eq!(acts_on_a_terminal(&text), None, "`knowledge {}`: {text:?}", args.join(" "));
        }
    }
    // An error quoting what it was given is escaped too.
    let output = test.run(&["get", "docs/\u{1b}[2Jnone.md"]);
    assert_eq!(acts_on_a_terminal(&stderr(&output)), None, "{:?}", stderr(&output));
}

/// Every folder under the output folder's `wiki/` and `indexes/`, relative to the output folder.
fn generated_folders(test: &CliTest) -> Vec<String> {
    let root = test.path(".hasna/knowledge");
    let mut found = Vec::new();
    let mut folders = vec![root.join("wiki"), root.join("indexes")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            if entry.file_type().unwrap().is_dir() {
                found.push(entry.path().strip_prefix(&root).unwrap().to_string_lossy().into_owned());
                folders.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

// 14. A section no page is in any more leaves no empty folder behind: the same folders as a clean build.
#[test]
fn a_section_that_empties_leaves_no_folder() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[wiki]\nsection_field = \"section\"\n");
    test.write("docs/a.md", "---\nsection: alpha\n---\n# Foo\n\nFoo is the thing the notes discuss.\n");
    test.write("docs/b.md", "# B\n\nSee [[Foo]].\n");
    test.write("docs/c.md", "# C\n\nAlso [[Foo]].\n");
    test.build();
    assert!(generated_folders(&test).contains(&"wiki/alpha".to_string()), "{:?}", generated_folders(&test));
    test.write("docs/a.md", "---\nsection: beta\n---\n# Foo\n\nFoo is the thing the notes discuss.\n");
    test.build();
    let incremental = generated_folders(&test);
    assert!(!incremental.contains(&"wiki/alpha".to_string()), "{incremental:?}");
    std::fs::remove_dir_all(test.path(".hasna")).unwrap();
    test.build();
    assert_eq!(incremental, generated_folders(&test), "incremental and clean builds leave the same folders");
}

// 10. A query's terms are capped, and the answer says when some were left out.
#[test]
fn a_query_past_the_term_cap_says_so() {
    let test = built();
    let long: String = (0..40).map(|n| format!("word{n} ")).collect();
    let response = test.search(&long);
    assert_eq!(response["terms"].as_array().unwrap().len(), 32, "{response}");
    assert_eq!(response["terms_dropped"], true);
    assert!(test.search("foo")["terms_dropped"].is_null(), "a short query says nothing");
    assert!(test.ok(&["search", &long]).contains("only its first 32 were"));
}

/// Makes a named pipe at `path`.
fn plant_pipe(path: &std::path::Path) {
    let mode = rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR;
    rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, mode, 0).unwrap();
}

/// Runs `knowledge ARGS` and waits at most a minute for it: a build that blocks reading a named pipe would
/// otherwise hang the test suite rather than fail it.
fn run_within_a_minute(test: &CliTest, args: &[&str]) -> std::process::Output {
    let child = test.command(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn();
    let mut child = child.expect("run knowledge");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("`knowledge {}` still running after a minute", args.join(" "));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

// A hostile pass on the file sync (2026-12-06): a named pipe or a link planted where a generated page goes is
// never read (a pipe blocked the build forever) nor written through; the build finishes, says it did not
// write there, `--check` calls it blocked, and once it is gone the page is written again.
#[test]
fn a_pipe_or_a_link_where_a_page_goes_is_neither_read_nor_replaced() {
    let test = built();
    let page = test.path(".hasna/knowledge/wiki/general/foo.md");
    let written = std::fs::read_to_string(&page).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "theirs").unwrap();
    let link = |path: &std::path::Path| std::os::unix::fs::symlink(outside.path(), path).unwrap();
    for (what, plant) in [("a named pipe", &plant_pipe as &dyn Fn(&std::path::Path)), ("a link", &link)] {
        std::fs::remove_file(&page).unwrap();
        plant(&page);
        // An edit makes the build compare the page's file with what it should hold.
        test.write("docs/b.md", format!("# B\n\nAlso [[Foo]], with {what}.\n"));
        let output = run_within_a_minute(&test, &["build"]);
        assert!(output.status.success(), "{what}: {}", stderr(&output));
        assert!(stderr(&output).contains("not writing `wiki/general/foo.md`"), "{what}: {}", stderr(&output));
        let check = run_within_a_minute(&test, &["build", "--check"]);
        assert!(stdout(&check).contains("blocked: wiki/general/foo.md"), "{what}: {}", stdout(&check));
        assert!(!std::fs::symlink_metadata(&page).unwrap().is_file(), "{what} is left in place");
        assert_eq!(std::fs::read_to_string(outside.path()).unwrap(), "theirs");
        std::fs::remove_file(&page).unwrap();
        test.build();
        let back = std::fs::read_to_string(&page).unwrap();
        assert!(back.contains("Foo") && back.lines().next() == written.lines().next(), "{what}: the page is back");
    }
}

// The same pass: a named pipe in the stat cache's place blocked every build forever; it is no cache, and the
// build writes the cache in its place.
#[test]
fn a_pipe_in_the_stat_caches_place_is_no_cache() {
    let test = built();
    let cache = test.path(".hasna/knowledge/artifacts.stat");
    std::fs::remove_file(&cache).unwrap();
    plant_pipe(&cache);
    test.write("docs/b.md", "# B\n\nAlso [[Foo]], again.\n");
    let output = run_within_a_minute(&test, &["build"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::symlink_metadata(&cache).unwrap().is_file(), "the cache is a plain file again");
    assert_eq!(run_within_a_minute(&test, &["build", "--check"]).status.code(), Some(0));
}
