//! `knowledge ingest` and `knowledge source resolve --purpose`: sources from outside the tree (`file:///`,
//! `https://` on a loopback server, `s3://` on a moto server, `open-files://`), indexed and cited by their
//! refs, re-ingested by revision, and the gates that keep ingest inside what kc.toml allows.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::{CliTest, read_request, stderr};

/// A project whose `[ingest]` lets `file://` read `outside/` (a folder of the temporary directory that
/// holds no project source), with `extra` appended to kc.toml.
fn project(extra: &str) -> CliTest {
    let test = CliTest::empty();
    test.write(
        "kc.toml",
        format!(
            "version = 1\n[sources]\ninclude = [\"docs/**/*.md\"]\n[ingest]\nfile_roots = [\"outside\"]\n\
             open_files_manifest = \"open-files.jsonl\"\n{extra}"
        ),
    );
    test.write("docs/local.md", "# Local\n\nA page of the project itself.\n");
    test
}

fn ingest(test: &CliTest, reference: &str, labels: &[&str]) -> Value {
    let mut args = vec!["ingest", "source", reference, "--json"];
    for label in labels {
        args.extend(["--label", label]);
    }
    serde_json::from_str(&test.ok(&args)).unwrap()
}

fn file_ref(test: &CliTest, relative: &str) -> String {
    format!("file://{}", test.path(relative).canonicalize().unwrap().display())
}

#[test]
fn open_files_refs_name_a_files_newest_revision_a_pinned_one_or_a_source_path() {
    let test = project("[permissions.purposes.knowledge_index]\ndeny_labels = [\"do-not-index\"]\n");
    let line = |id: &str, revision: &str, extra: &str, text: &str| {
        format!(r#"{{"id":"{id}","revision_id":"{revision}","mime":"text/plain",{extra}"text":"{text}"}}"#)
    };
    let manifest = [
        line("f1", "r1", "", "The pump runs at forty litres."),
        line("f2", "r1", r#""source_id":"drive","path":"ops/runbook.md","#, "The runbook says to vent the valve."),
        line("f1", "r2", "", "The pump runs at sixty litres."),
    ];
    test.write("open-files.jsonl", manifest.join("\n") + "\n");
    let newest = ingest(&test, "open-files://file/f1", &[]);
    assert_eq!(newest["revision_id"], "r2", "{newest}");
    let pinned = ingest(&test, "open-files://file/f1/revision/r1", &[]);
    assert_eq!(pinned["revision_id"], "r1", "{pinned}");
    let by_path = ingest(&test, "open-files://source/drive/path/ops/runbook.md", &[]);
    assert_eq!((by_path["revision_id"].as_str(), by_path["title"].as_str()), (Some("r1"), Some("ops/runbook.md")));
    test.build();
    let cited = |query: &str| test.search(query)["results"][0]["source"]["uri"].as_str().unwrap().to_string();
    assert_eq!(cited("pump sixty litres"), "open-files://file/f1");
    assert_eq!(cited("pump forty litres"), "open-files://file/f1/revision/r1");
    assert_eq!(cited("vent the valve"), "open-files://source/drive/path/ops/runbook.md");

    // A new revision reaches the file's ref; the pinned one stays where it was.
    let mut newer = manifest.to_vec();
    newer.push(line("f1", "r3", "", "The pump runs at eighty litres."));
    test.write("open-files.jsonl", newer.join("\n") + "\n");
    assert_eq!(ingest(&test, "open-files://file/f1", &[])["outcome"], "changed");
    assert_eq!(ingest(&test, "open-files://file/f1/revision/r1", &[])["outcome"], "unchanged");
    test.fails(&["ingest", "source", "open-files://file/f1/revision/r9"], "no entry `file/f1/revision/r9`");
    test.fails(&["ingest", "source", "open-files://source/drive/ops"], "name a file as `open-files://file/ID`");

    // The design's `--purpose knowledge_index`: a denied label is refused before anything is read.
    let purpose = ["ingest", "source", "open-files://file/f2", "--purpose", "knowledge_index"];
    assert_eq!(
        serde_json::from_str::<Value>(&test.ok(&[&purpose[..], &["--json"]].concat())).unwrap()["outcome"],
        "added"
    );
    test.fails(&[&purpose[..], &["--label", "Do-Not-Index"]].concat(), "keeps out of the index");
    test.fails(&["ingest", "source", "open-files://file/f2", "--purpose", "knowledge_answer"], "for `knowledge_index`");
}

#[test]
fn file_and_open_files_sources_are_indexed_cited_and_reingested_by_revision() {
    let test = project("");
    // Its relative link leads nowhere here: lint judges the project's files, not copies of others'.
    test.write("outside/handbook.md", "# Handbook\n\nThe compressor stall margin is twelve percent. See [x](x.md).\n");
    test.write(
        "open-files.jsonl",
        r#"{"id":"memo-7","revision_id":"r1","hash":"h1","mime":"text/html","owner":"ops-drive","text":"<title>Ops memo</title><h1>Rotor care</h1><p>Rotor blades need inspection every 400 hours.</p>"}"#,
    );
    let handbook = file_ref(&test, "outside/handbook.md");
    let report = ingest(&test, &handbook, &[]);
    assert_eq!((report["outcome"].as_str(), report["resolver"].as_str()), (Some("added"), Some("file")));
    let memo = ingest(&test, "open-files://memo-7", &[]);
    assert_eq!((memo["title"].as_str(), memo["revision_id"].as_str()), (Some("Ops memo"), Some("r1")));

    let built = test.build();
    assert_eq!(built["sources"]["added"], 3, "{built}");
    test.ok(&["lint"]);
    let results = test.search("rotor inspection");
    let first = &results["results"][0];
    assert_eq!(first["source"]["uri"], "open-files://memo-7", "{results}");
    assert_eq!(first["kind"], "source_chunk");
    let handbook_hit = &test.search("compressor stall")["results"][0];
    assert_eq!(handbook_hit["source"]["uri"].as_str(), Some(handbook.as_str()));

    // The chunk's provenance names where it came from, and its text is the stored text's bytes.
    let chunk: Value = serde_json::from_str(&test.ok(&["get", first["id"].as_str().unwrap(), "--json"])).unwrap();
    let provenance = &chunk["chunk"]["provenance"];
    assert_eq!(provenance["resolver"], "open-files", "{chunk}");
    assert_eq!(provenance["source_owner"], "ops-drive");
    assert_eq!(provenance["revision_id"], "r1");
    let stored = std::fs::read(test.path(".hasna/knowledge").join(memo["file"].as_str().unwrap())).unwrap();
    let (start, end) = (
        chunk["chunk"]["citation"]["start_offset"].as_u64().unwrap() as usize,
        chunk["chunk"]["citation"]["end_offset"].as_u64().unwrap() as usize,
    );
    assert_eq!(&stored[start..end], chunk["chunk"]["text"].as_str().unwrap().as_bytes());

    // Again with nothing changed upstream: nothing to re-derive.
    assert_eq!(ingest(&test, &handbook, &[])["outcome"], "unchanged");
    assert_eq!(ingest(&test, "open-files://memo-7", &[])["outcome"], "unchanged");
    let again = test.build();
    assert_eq!(
        (again["sources"]["changed"].as_u64(), again["sources"]["added"].as_u64()),
        (Some(0), Some(0)),
        "{again}"
    );

    // A new revision upstream: that source alone is derived again.
    test.write("outside/handbook.md", "# Handbook\n\nThe compressor stall margin is fifteen percent.\n");
    assert_eq!(ingest(&test, &handbook, &[])["outcome"], "changed");
    test.write(
        "open-files.jsonl",
        r#"{"id":"memo-7","revision_id":"r2","hash":"h2","mime":"text/plain","text":"Rotor blades need inspection every 300 hours."}"#,
    );
    assert_eq!(ingest(&test, "open-files://memo-7", &[])["outcome"], "changed");
    let edited = test.build();
    assert_eq!(edited["sources"]["changed"], 2, "{edited}");
    assert!(test.ok(&["search", "compressor stall"]).contains("fifteen"));

    // Forgotten: the next build drops it.
    test.ok(&["ingest", "rm", "open-files://memo-7"]);
    assert_eq!(test.build()["sources"]["removed"], 1);
    assert!(test.search("rotor inspection")["results"].as_array().unwrap().is_empty());
}

#[test]
fn file_ingest_stays_inside_its_roots() {
    let test = project("");
    test.write("outside/ok.md", "# Fine\n");
    test.write("elsewhere/secret.md", "# Secret\n\ntop secret words\n");
    let secret = file_ref(&test, "elsewhere/secret.md");
    let stderr = test.fails(&["ingest", "source", &secret], "is outside `[ingest] file_roots`");
    assert!(stderr.contains("secret.md"), "{stderr}");
    // A link inside a root that leads out of it is judged by where it leads.
    std::os::unix::fs::symlink(test.path("elsewhere/secret.md"), test.path("outside/link.md")).unwrap();
    let link = format!("file://{}/link.md", test.path("outside").canonicalize().unwrap().display());
    test.fails(&["ingest", "source", &link], "is outside `[ingest] file_roots`");
    test.fails(&["ingest", "source", "file://docs/local.md"], "project files are sources already");
    test.fails(&["ingest", "source", "ftp://example.org/x"], "ingest reads file:///");
    test.write("open-files.jsonl", r#"{"id":"a","revision_id":"1","mime":"text/plain","text":"A."}"#);
    test.fails(&["ingest", "source", "open-files://nope"], "no entry `nope`");
    assert!(test.ok(&["ingest", "list"]).is_empty(), "a refused ref stores nothing");
    test.build();
    assert!(!test.ok(&["search", "secret"]).contains("top secret"));
}

/// A loopback web server: each request's path and head are recorded, and `route` answers it.
fn web_server(route: impl Fn(&str, &str) -> Vec<u8> + Send + Sync + 'static) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (head, _) = read_request(&stream);
            let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
            log.lock().unwrap().push(head.clone());
            let _ = stream.write_all(&route(&path, &head));
        }
    });
    (port, seen)
}

fn answer(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut text = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text.into_bytes()
}

#[test]
fn https_ingest_reads_allowed_hosts_within_its_limits_and_no_page_leads_it_to_a_local_file() {
    let page = "<html><head><title>Turbine guide</title></head><body><h1>Blades</h1>\
                <p>Turbine blades are balanced at the factory.</p>\
                <img src=\"file:///etc/passwd\"><a href=\"file:///etc/hostname\">more</a></body></html>";
    let (port, seen) = web_server(move |path, head| match path {
        "/guide" if head.contains("if-none-match: \"v1\"") => answer("304 Not Modified", &[("ETag", "\"v1\"")], ""),
        "/guide" => answer("200 OK", &[("Content-Type", "text/html; charset=utf-8"), ("ETag", "\"v1\"")], page),
        "/moved" => answer("301 Moved Permanently", &[("Location", "/guide")], ""),
        "/to-file" => answer("302 Found", &[("Location", "file:///etc/passwd")], ""),
        "/to-other-host" => answer("302 Found", &[("Location", "http://localhost:9/x")], ""),
        "/big" => answer("200 OK", &[("Content-Type", "text/plain")], &"x".repeat(2000)),
        "/binary" => answer("200 OK", &[("Content-Type", "application/octet-stream")], "MZ"),
        "/slow" => {
            std::thread::sleep(std::time::Duration::from_secs(4));
            answer("200 OK", &[("Content-Type", "text/plain")], "late")
        }
        _ => answer("404 Not Found", &[], ""),
    });
    let test = project("allow_domains = [\"127.0.0.1\"]\nallow_http = true\nmax_bytes = 1000\ntimeout_seconds = 2\n");
    let base = format!("http://127.0.0.1:{port}");

    let report = ingest(&test, &format!("{base}/guide"), &[]);
    assert_eq!((report["outcome"].as_str(), report["revision_id"].as_str()), (Some("added"), Some("\"v1\"")));
    assert_eq!(report["title"], "Turbine guide");
    // Again: the stored ETag is sent, and the 304 keeps the stored text.
    assert_eq!(ingest(&test, &format!("{base}/guide"), &[])["outcome"], "unchanged");
    assert!(seen.lock().unwrap().last().unwrap().contains("if-none-match: \"v1\""));
    // A redirect on the same host is followed.
    assert_eq!(ingest(&test, &format!("{base}/moved"), &[])["title"], "Turbine guide");

    test.fails(&["ingest", "source", &format!("{base}/to-file")], "which ingest does not follow");
    test.fails(
        &["ingest", "source", &format!("{base}/to-other-host")],
        "host `localhost` is not in `[ingest] allow_domains`",
    );
    test.fails(&["ingest", "source", &format!("http://localhost:{port}/guide")], "not in `[ingest] allow_domains`");
    test.fails(&["ingest", "source", &format!("{base}/big")], "over the limit of 1000");
    test.fails(&["ingest", "source", &format!("{base}/binary")], "content type `application/octet-stream`");
    test.fails(&["ingest", "source", &format!("{base}/missing")], "answered 404");
    let requests_before = seen.lock().unwrap().len();
    test.fails(&["ingest", "source", &format!("{base}/slow")], "/slow");
    assert!(seen.lock().unwrap().len() > requests_before);

    // Only what was read is stored; nothing the page links or embeds was fetched or read.
    let listed: Value = serde_json::from_str(&test.ok(&["ingest", "list", "--json"])).unwrap();
    let refs: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["ref"].as_str().unwrap()).collect();
    assert_eq!(refs, [format!("{base}/guide"), format!("{base}/moved")]);
    test.ok(&["ingest", "rm", &format!("{base}/moved")]);
    assert!(seen.lock().unwrap().iter().all(|head| !head.contains("passwd") && !head.contains("hostname")));
    test.build();
    let hit = &test.search("turbine blades balanced")["results"][0];
    assert_eq!(hit["source"]["uri"].as_str(), Some(format!("{base}/guide").as_str()));
    let everything = test.ok(&["search", "root", "--limit", "50"]);
    assert!(!everything.contains("root:x:0:0"), "no local file reached the index: {everything}");

    // Without `allow_http`, http:// is refused; without allowed domains, https:// is off.
    let strict = project("allow_domains = [\"127.0.0.1\"]\n");
    strict.fails(&["ingest", "source", &format!("{base}/guide")], "allow_http");
    let closed = project("");
    closed.fails(&["ingest", "source", "https://example.org/"], "not in `[ingest] allow_domains`");
}

#[test]
fn s3_ingest_reads_an_object_with_the_environments_credentials() {
    let moto = crate::Moto::start();
    let endpoint = moto.endpoint.clone();
    let put = |key: &str, body: &str| assert_eq!(moto.put(&format!("team-docs/{key}"), body), 200);
    assert_eq!(moto.put("team-docs", ""), 200);
    put("runbooks/pump.md", "# Pump runbook\n\nPrime the pump before the first start.\n");

    let credentials = [
        ("AWS_ACCESS_KEY_ID", "test-key"),
        ("AWS_SECRET_ACCESS_KEY", "test-secret"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    // Closed until `[ingest] allow_buckets` opens it, whatever the environment holds (issue 40, item 11).
    let closed = project("");
    let refused = closed.run_with_env(&["ingest", "source", "s3://team-docs/runbooks/pump.md"], &credentials);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("`s3://` ingest is off"), "{}", stderr(&refused));
    let other = project("allow_buckets = [\"other\"]\n");
    let refused = other.run_with_env(&["ingest", "source", "s3://team-docs/runbooks/pump.md"], &credentials);
    assert!(stderr(&refused).contains("`team-docs` is not in `[ingest] allow_buckets`"), "{}", stderr(&refused));
    assert!(closed.ok(&["ingest", "list"]).is_empty() && other.ok(&["ingest", "list"]).is_empty());

    let test = project("allow_buckets = [\"team-docs\"]\n");
    let run = |args: &[&str]| test.run_with_env(args, &credentials);
    let ingested = run(&["ingest", "source", "s3://team-docs/runbooks/pump.md", "--json"]);
    assert!(ingested.status.success(), "{}", stderr(&ingested));
    let report: Value = serde_json::from_slice(&ingested.stdout).unwrap();
    assert_eq!((report["outcome"].as_str(), report["resolver"].as_str()), (Some("added"), Some("s3")), "{report}");
    assert_eq!(report["title"], "Pump runbook");
    let again: Value =
        serde_json::from_slice(&run(&["ingest", "source", "s3://team-docs/runbooks/pump.md", "--json"]).stdout)
            .unwrap();
    assert_eq!(again["outcome"], "unchanged", "the object's ETag is unchanged");
    put("runbooks/pump.md", "# Pump runbook\n\nPrime the pump and open the valve before the first start.\n");
    let changed: Value =
        serde_json::from_slice(&run(&["ingest", "source", "s3://team-docs/runbooks/pump.md", "--json"]).stdout)
            .unwrap();
    assert_eq!(changed["outcome"], "changed");
    test.build();
    let hit = &test.search("prime the pump valve")["results"][0];
    assert_eq!(hit["source"]["uri"], "s3://team-docs/runbooks/pump.md");

    let missing = run(&["ingest", "source", "s3://team-docs/runbooks/none.md"]);
    assert!(stderr(&missing).contains("answered 404"), "{}", stderr(&missing));
    let no_key =
        test.run_with_env(&["ingest", "source", "s3://team-docs/runbooks/pump.md"], &[("AWS_ACCESS_KEY_ID", "")]);
    assert!(stderr(&no_key).contains("`AWS_ACCESS_KEY_ID` is not set"), "{}", stderr(&no_key));
    drop(moto);
}

#[test]
fn purposes_keep_labelled_sources_out_of_the_index_or_out_of_answers_and_resolve_records_each_decision() {
    let test = project(
        "[permissions.principals]\nops = [\"ops\", \"restricted\"]\n\
         [permissions.purposes.knowledge_index]\ndeny_labels = [\"do-not-index\"]\n\
         [permissions.purposes.knowledge_answer]\ndeny_labels = [\"restricted\"]\n",
    );
    test.write("docs/private.md", "---\nlabels: [do-not-index]\n---\n# Private\n\nThe vault combination is 1234.\n");
    test.write("docs/ops.md", "---\nlabels: [ops]\n---\n# Ops\n\nValve checks happen on Mondays.\n");
    test.write(
        "docs/restricted.md",
        "---\nlabels: [restricted]\n---\n# Restricted\n\nValve audits happen on Fridays.\n",
    );
    let built = test.build();
    let skipped = built["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["path"] == "docs/private.md" && s["reason"].as_str().unwrap().contains("do-not-index")),
        "{built}"
    );
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let indexed: i64 =
        conn.query_row("SELECT count(*) FROM chunks WHERE text LIKE '%vault%'", [], |r| r.get(0)).unwrap();
    assert_eq!(indexed, 0, "a source knowledge_index denies is not in the index at all");
    // Nor does its path reach a principal through the run's events (issue 40, item 13): the event carries
    // the labels the build read in its front matter.
    for args in [&["changes", "--json"][..], &["changes"]] {
        let seen = test.ok(&[&["--as", "ops"][..], args].concat());
        assert!(!seen.contains("docs/private.md"), "`{}`: {seen}", args.join(" "));
    }
    let labels: String =
        conn.query_row("SELECT labels FROM run_events WHERE path = 'docs/private.md'", [], |r| r.get(0)).unwrap();
    assert!(labels.split(',').any(|label| label == "do-not-index"), "{labels}");

    // The restricted source is indexed, but no answer reads it, even for a principal granted its label.
    let found = test.ok(&["--as", "ops", "search", "valve"]);
    assert!(found.contains("docs/ops.md") && !found.contains("docs/restricted.md"), "{found}");

    let allowed =
        test.run(&["--as", "ops", "source", "resolve", "docs/ops.md", "--purpose", "knowledge_answer", "--json"]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    let decision: Value = serde_json::from_slice(&allowed.stdout).unwrap();
    assert_eq!(decision["provenance"]["resolver"], "project");
    assert_eq!(decision["provenance"]["stale_status"], "current");
    let denied = test.run(&["--as", "ops", "source", "resolve", "docs/restricted.md", "--purpose", "knowledge_answer"]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&denied.stdout).contains("denied for knowledge_answer"));
    // A source the principal may not read resolves as missing, as everywhere.
    test.fails(&["source", "resolve", "docs/ops.md", "--purpose", "knowledge_answer"], "no chunk or source matches");
    test.fails(&["source", "resolve", "docs/ops.md", "--purpose", "gossip"], "unknown purpose `gossip`");

    test.write("docs/ops.md", "---\nlabels: [ops]\n---\n# Ops\n\nValve checks happen on Tuesdays.\n");
    let stale: Value = serde_json::from_str(&test.ok(&[
        "--as",
        "ops",
        "source",
        "resolve",
        "docs/ops.md",
        "--purpose",
        "knowledge_index",
        "--json",
    ]))
    .unwrap();
    assert_eq!(stale["provenance"]["stale_status"], "changed");

    let decisions: Vec<(String, String)> = conn
        .prepare("SELECT r.status, e.detail FROM runs r JOIN run_events e ON e.run_id = r.id WHERE r.kind = 'resolve' ORDER BY r.id, e.seq")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let statuses: Vec<&str> = decisions.iter().map(|(status, _)| status.as_str()).collect();
    assert_eq!(statuses, ["allowed", "denied", "allowed"], "{decisions:?}");
    assert!(decisions[1].1.contains("\"principal\":\"ops\"") && decisions[1].1.contains("knowledge_answer"));
}

#[test]
fn an_ingested_documents_own_front_matter_titles_it_and_keeps_its_labels() {
    let test = project("[permissions.principals]\nstaff = [\"internal\"]\n");
    test.write(
        "outside/eip.md",
        "---\ntitle: Fee market change\nvisibility: internal\nstatus: Final\n---\n## Abstract\n\nThe base fee per gas is burned.\n",
    );
    let report = ingest(&test, &file_ref(&test, "outside/eip.md"), &[]);
    assert_eq!(report["title"], "Fee market change", "the front matter's title, not the file name");
    test.build();
    assert!(test.search("base fee burned")["results"].as_array().unwrap().is_empty(), "internal stays internal");
    let found: Value =
        serde_json::from_str(&test.ok(&["--as", "staff", "search", "base fee burned", "--json"])).unwrap();
    assert_eq!(found["results"][0]["title"], "Fee market change > Abstract", "{found}");
    // Unchanged upstream: the same stored text.
    assert_eq!(ingest(&test, &file_ref(&test, "outside/eip.md"), &[])["outcome"], "unchanged");
}

#[test]
fn an_ingested_source_is_cited_in_its_own_lines_not_below_the_provenance_block() {
    let test = project("");
    let lines = [
        r#"{"id":"pump","revision_id":"r1","mime":"text/plain","title":"Pump","text":"The pump runs at forty litres.\nIt is serviced monthly.\nThe valve is red."}"#,
        r#"{"id":"guide","revision_id":"r1","mime":"text/markdown","text":"---\ntitle: Guide\nowner: ops\n---\n\n# Guide\n\nThe boiler is checked yearly.\n"}"#,
    ];
    test.write("open-files.jsonl", lines.join("\n") + "\n");
    ingest(&test, "open-files://file/pump", &[]);
    ingest(&test, "open-files://file/guide", &[]);
    test.build();
    let hit = |query: &str| test.search(query)["results"][0].clone();
    let pump = hit("valve red");
    assert_eq!(pump["source"]["uri"], "open-files://file/pump");
    assert_eq!(
        (pump["citation"]["start_line"].as_u64(), pump["citation"]["end_line"].as_u64()),
        (Some(1), Some(3)),
        "{pump}"
    );
    // The document's own front matter and blank line come before its body: line 6 is the heading.
    let guide = hit("boiler checked yearly");
    assert_eq!(guide["citation"]["start_line"], 6, "{guide}");
    // A context pack's ref resolves to those lines.
    let lines: Value = serde_json::from_str(&test.ok(&["get", "open-files://file/pump#L3", "--json"])).unwrap();
    assert_eq!(lines["lines"]["text"], "The valve is red.", "{lines}");
    let pack: Value = serde_json::from_str(&test.ok(&["context", "pack", "valve red", "--json"])).unwrap();
    assert!(pack["items"][0]["ref"].as_str().unwrap().ends_with("#L1-L3"), "{pack}");
}
