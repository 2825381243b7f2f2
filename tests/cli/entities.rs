//! Code entities (`[code]`): the catalog of a polyglot repository, relationships, impact and test plans,
//! dependency resolution across repositories, the delta log, permissions and bad input.

use std::path::Path;

use serde_json::Value;

use super::CliTest;

/// The polyglot fixture the golden `code` case builds: a Cargo workspace (rustc-hash, trimmed, and `app`),
/// a TypeScript package, a Python package, a Go module and two decision records.
fn fixture() -> CliTest {
    let test = CliTest::empty();
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden/code/input"), test.root());
    test
}

fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn json(test: &CliTest, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&test.ok(&args)).expect("--json prints JSON")
}

fn slugs(values: &Value) -> Vec<String> {
    values.as_array().unwrap().iter().map(|v| v["slug"].as_str().unwrap().to_string()).collect()
}

fn edges(detail: &Value, relation: &str, direction: &str) -> Vec<String> {
    detail["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["relation"] == relation && e["direction"] == direction)
        .map(|e| e["slug"].as_str().or(e["coordinate"].as_str()).unwrap().to_string())
        .collect()
}

#[test]
fn a_polyglot_repository_compiles_to_components_symbols_tests_and_decisions() {
    let test = fixture();
    let summary = test.build();
    assert!(summary["entities"]["added"].as_u64().unwrap() > 90, "{summary}");

    let components = slugs(&json(&test, &["entity", "list", "component"]));
    assert_eq!(
        components,
        [
            "component/workspace",
            "component/app",
            "component/rustc-hash",
            "component/ledger",
            "component/example.com/svc",
            "component/@fixture/web",
        ]
    );
    let tests = slugs(&json(&test, &["entity", "list", "test"]));
    for expected in [
        "test/crates/app/src/lib.rs#tests::normalize_strips_punctuation",
        "test/crates/app/tests/counting.rs#counts_each_word",
        "test/py/tests/test_book.py#test_balance_sums_entries",
        "test/svc/store_test.go#TestGetMissing",
        "test/web/test/format.test.ts#formatCount.keeps the digits",
    ] {
        assert!(tests.contains(&expected.to_string()), "{expected} in {tests:?}");
    }
    // `api` is the public symbols: `normalize` and the private Python and TypeScript members are not.
    let api = slugs(&json(&test, &["entity", "list", "api"]));
    assert!(api.contains(&"symbol/crates/app/src/lib.rs#Counter::add".to_string()));
    assert!(
        !api.iter()
            .any(|s| s.ends_with("#normalize") || s.ends_with("#Book._audit") || s.ends_with("#Formatter.reset"))
    );

    let app = json(&test, &["entity", "get", "component/app"]);
    assert_eq!(app["payload"]["ecosystem"], "cargo");
    assert_eq!(
        edges(&app, "depends_on", "outgoing"),
        ["component/rustc-hash", "crates.io:serde@1", "crates.io:tempfile@3"]
    );
    assert_eq!(edges(&app, "governs", "incoming"), ["decision/0001-fast-hashing"]);
    assert_eq!(
        edges(&app, "covers", "incoming"),
        [
            "test/crates/app/src/lib.rs#tests::normalize_strips_punctuation",
            "test/crates/app/tests/counting.rs#counts_each_word"
        ]
    );
    // The counts agree with the catalog and with each entity's own edges.
    let stats = json(&test, &["entity", "stats"]);
    let all = json(&test, &["entity", "list"]);
    for entity_type in ["component", "symbol", "test", "decision"] {
        let listed = all.as_array().unwrap().iter().filter(|e| e["type"] == entity_type).count();
        assert_eq!(stats["entities"][entity_type].as_u64().unwrap() as usize, listed, "{stats}");
    }
    // `[workspace.dependencies]` are what members may inherit, not edges of the workspace.
    assert_eq!(stats["edges"]["depends_on"], 10, "{stats}");
    assert_eq!(stats["external_dependencies"], 9, "{stats}");
    assert!(edges(&json(&test, &["entity", "get", "component/workspace"]), "depends_on", "outgoing").is_empty());
    let governs: usize = ["decision/0001-fast-hashing", "decision/0002-ledger-in-python"]
        .iter()
        .map(|slug| edges(&json(&test, &["entity", "get", slug]), "governs", "outgoing").len())
        .sum();
    assert_eq!(stats["edges"]["governs"].as_u64().unwrap() as usize, governs, "{stats}");
    // A component can be named by its folder too.
    assert_eq!(json(&test, &["entity", "get", "component/py"])["slug"], "component/ledger");

    // Every anchor is a byte range of the revision it names, and its ref resolves to those lines.
    for entity in json(&test, &["entity", "list"]).as_array().unwrap() {
        let anchor = &entity["anchor"];
        let text = std::fs::read_to_string(test.path(anchor["path"].as_str().unwrap())).unwrap();
        let (start, end) =
            (anchor["start_offset"].as_u64().unwrap() as usize, anchor["end_offset"].as_u64().unwrap() as usize);
        assert!(start < end && end <= text.len(), "{entity}");
        assert_eq!(anchor["revision"].as_str().unwrap(), knowledge_queries::content_hash(text.as_bytes()));
        let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
        assert_eq!(anchor["start_line"].as_u64().unwrap() as usize, line_of(start), "{entity}");
    }
    let counter = json(&test, &["entity", "get", "symbol/crates/app/src/lib.rs#Counter"]);
    let resolved = json(&test, &["get", counter["anchor"]["source_ref"].as_str().unwrap()]);
    assert!(resolved.to_string().contains("pub struct Counter"), "{resolved}");
}

#[test]
fn impact_and_test_plans_name_what_an_edit_reaches_and_the_tests_it_needs() {
    let test = fixture();
    test.build();
    let impact = json(&test, &["entity", "impact", "component/rustc-hash"]);
    let affected: Vec<(String, String)> = impact["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["relation"].as_str().unwrap().to_string(), a["slug"].as_str().unwrap().to_string()))
        .collect();
    assert!(affected.contains(&("affects".into(), "component/app".into())), "{affected:?}");
    assert!(affected.contains(&("governs".into(), "decision/0001-fast-hashing".into())), "{affected:?}");
    // Its public API is affected; its tests' helper (`tests::test_hash`, private) is not.
    assert!(affected.iter().any(|(r, s)| r == "implemented_by" && s.ends_with("#FxHasher")));
    assert!(!affected.iter().any(|(_, s)| s.contains("tests::")));
    assert_eq!(impact["outbound"][0]["coordinate"], "crates.io:rand@0.9");

    let plan = json(&test, &["entity", "test-plan", "symbol/crates/app/src/report.rs#top"]);
    let targets = plan["targets"].as_array().unwrap();
    assert_eq!(plan["gaps"], serde_json::json!(["symbol/crates/app/src/report.rs#top"]));
    assert_eq!(targets[0]["action"], "add");
    assert_eq!(targets[0]["target"], "crates/app/src/report.rs (a new `#[cfg(test)] mod tests`)");
    assert_eq!(targets[0]["command"], "cargo test -p app");
    assert!(targets.iter().any(|t| t["action"] == "run" && t["target"] == "component/app"), "{plan}");

    let plan = json(&test, &["entity", "test-plan", "symbol/py/src/ledger/book.py#open_book"]);
    assert_eq!(plan["targets"][0]["target"], "py/tests/test_book.py");
    assert_eq!(plan["targets"][0]["command"], "pytest py/tests/test_book.py");
    // A covered symbol has no gap; the plan runs the test that covers it.
    let plan = json(&test, &["entity", "test-plan", "symbol/svc/store.go#Store.Get"]);
    assert!(!plan["gaps"].as_array().unwrap().contains(&Value::from("symbol/svc/store.go#Store.Get")), "{plan}");
    assert!(plan["targets"].as_array().unwrap().iter().any(|t| t["target"] == "test/svc/store_test.go#TestGetMissing"
        && t["command"] == "go test ./svc -run '^TestGetMissing$'"));

    let coverage = json(&test, &["entity", "coverage", "component/example.com/svc"]);
    assert_eq!((coverage["public_symbols"].as_u64(), coverage["covered_public_symbols"].as_u64()), (Some(4), Some(2)));
    assert_eq!(coverage["uncovered"], serde_json::json!(["symbol/svc/store.go#Store", "symbol/svc/store.go#Getter"]));
    test.fails(&["entity", "coverage", "symbol/svc/store.go#Store"], "is not a component");
    test.fails(&["entity", "get", "component/nothing"], "no entity `component/nothing`");
    test.fails(&["entity", "list", "class"], "unknown entity type `class`");
}

#[test]
fn a_name_a_test_imports_from_another_crate_covers_nothing_here() {
    let test = fixture();
    test.write(
        "crates/app/tests/std_lock.rs",
        "use std::sync::Mutex as Counter;\n\n#[test]\nfn a_std_lock_is_not_ours() {\n    let lock = Counter::new(0);\n    \
         assert_eq!(*lock.lock().unwrap(), 0);\n}\n",
    );
    test.build();
    let foreign = json(&test, &["entity", "get", "test/crates/app/tests/std_lock.rs#a_std_lock_is_not_ours"]);
    assert_eq!(edges(&foreign, "covers", "outgoing"), ["component/app"], "only the crate its file is in");
    // The same names imported from this repository's crate do cover its symbols.
    let ours = json(&test, &["entity", "get", "test/crates/app/tests/counting.rs#counts_each_word"]);
    assert!(edges(&ours, "covers", "outgoing").contains(&"symbol/crates/app/src/lib.rs#Counter::new".to_string()));
}

/// A crate shaped like tokio's and salsa's: a library, integration tests with a shared `tests/common`
/// module, a library test under `src/tests/`, and an example.
fn locks_crate() -> CliTest {
    let test = CliTest::empty();
    test.write("kc.toml", "version = 1\n[code]\nenabled = true\n");
    test.write("Cargo.toml", "[package]\nname = \"locks\"\nversion = \"0.1.0\"\n");
    test.write(
        "src/lib.rs",
        "pub mod sync;\n#[cfg(test)]\nmod tests;\n\npub trait Database {\n    fn synthetic_write(&self) {}\n}\n\n\
         fn private_helper() {}\n",
    );
    test.write(
        "src/sync.rs",
        "pub struct Mutex;\n\nimpl Mutex {\n    pub fn new() -> Mutex {\n        Mutex\n    }\n\n    \
         pub fn lock(&self) {}\n}\n",
    );
    test.write("src/tests/loom_lock.rs", "#[test]\nfn lock_races() {\n    crate::sync::Mutex::new().lock();\n}\n");
    test.write("tests/common/mod.rs", "pub struct MyInput;\n\npub fn setup() -> MyInput {\n    MyInput\n}\n");
    test.write(
        "tests/sync_mutex.rs",
        "use locks::Database;\nuse locks::sync::Mutex;\n\nmod common;\nuse common::MyInput;\n\n#[test]\n\
         fn straight() {\n    let m = Mutex::new();\n    m.lock();\n}\n\n#[test]\nfn writes() {\n    \
         let db = common::setup();\n    db.synthetic_write();\n}\n",
    );
    test.write(
        "tests/other.rs",
        "mod nested {\n    use std::sync::Mutex;\n    static TEST_MUTEX: Mutex<()> = Mutex::new(());\n\n    \
         #[test]\n    fn std_lock() {\n        let _g = TEST_MUTEX.lock();\n    }\n}\n\n#[test]\n\
         fn unreached() {\n    private_helper();\n    let _ = MyInput;\n}\n",
    );
    test.write("examples/demo.rs", "pub struct Program;\n\nfn main() {}\n");
    test.write("src/task.rs", "pub fn spawn() {}\n");
    test.write(
        "tests/spawning.rs",
        "use tokio_test::task;\n\n#[test]\nfn spawns_through_another_crate() {\n    task::spawn(1);\n}\n\n\
         #[test]\nfn spawns_ours() {\n    locks::task::spawn();\n}\n",
    );
    test
}

#[test]
fn a_rust_test_covers_only_what_its_crate_can_reach() {
    let test = locks_crate();
    test.build();
    let covers = |slug: &str| edges(&json(&test, &["entity", "get", slug]), "covers", "outgoing");
    // A method is covered when its type is named: in the body, or by the file's imports (a trait method is
    // in scope through its trait's `use`); a shared module the file declares (`mod common;`) is its own.
    let straight = covers("test/tests/sync_mutex.rs#straight");
    assert!(straight.contains(&"symbol/src/sync.rs#Mutex::lock".to_string()), "{straight:?}");
    let writes = covers("test/tests/sync_mutex.rs#writes");
    for covered in ["symbol/src/lib.rs#Database::synthetic_write", "symbol/tests/common/mod.rs#setup"] {
        assert!(writes.contains(&covered.to_string()), "{covered}: {writes:?}");
    }
    // A std `Mutex` named inside another word (`TEST_MUTEX`), imported in a nested module, is not ours;
    // an integration test cannot call a private function of the library, nor reach a module it does not
    // declare.
    // A function called through another crate's module (`tokio_test::task`) is that crate's.
    let foreign = covers("test/tests/spawning.rs#spawns_through_another_crate");
    assert_eq!(foreign, ["component/locks"]);
    let ours = covers("test/tests/spawning.rs#spawns_ours");
    assert!(ours.contains(&"symbol/src/task.rs#spawn".to_string()), "{ours:?}");
    let std_lock = covers("test/tests/other.rs#nested::std_lock");
    assert_eq!(std_lock, ["symbol/tests/other.rs#nested::TEST_MUTEX", "component/locks"]);
    assert_eq!(covers("test/tests/other.rs#unreached"), ["component/locks"]);

    // The library's API leaves out the items of tests and examples, which are crates of their own, and so do
    // the component's impact and its gaps.
    let api = slugs(&json(&test, &["entity", "list", "api"]));
    assert!(api.contains(&"symbol/src/sync.rs#Mutex::lock".to_string()), "{api:?}");
    assert!(!api.iter().any(|s| s.contains("tests/") || s.contains("examples/")), "{api:?}");
    let impact = json(&test, &["entity", "impact", "component/locks"]);
    let affected = slugs(&impact["affected"]);
    assert!(!affected.iter().any(|s| s.contains("tests/") || s.contains("examples/")), "{affected:?}");
    assert!(!impact["gaps"].to_string().contains("examples/"), "{impact}");

    // An integration test runs as its own target; a library test under `src/tests/` does not.
    let plan = json(&test, &["entity", "test-plan", "symbol/src/sync.rs#Mutex::lock"]);
    let commands: Vec<&str> =
        plan["targets"].as_array().unwrap().iter().map(|t| t["command"].as_str().unwrap()).collect();
    assert!(commands.contains(&"cargo test -p locks --test sync_mutex straight"), "{commands:?}");
    assert!(commands.contains(&"cargo test -p locks lock_races"), "{commands:?}");
    // An edit of one item lists no dependency outside the project: its crate's dependencies stay as they are.
    assert_eq!(plan["outbound"], serde_json::json!([]));
}

#[test]
fn an_entitys_detail_lists_at_most_a_hundred_of_each_relation_and_counts_the_rest() {
    let test = locks_crate();
    let functions: String = (0..130).map(|n| format!("pub fn f{n}() {{}}\n")).collect();
    test.write("src/many.rs", functions);
    test.build();
    let implemented = |detail: &Value| edges(detail, "implemented_by", "outgoing").len();
    // Every symbol of the crate's files is implemented by it: the 130 functions and the fixture's others.
    let symbols = slugs(&json(&test, &["entity", "list", "symbol"])).len();
    assert!(symbols > 130);
    let capped = json(&test, &["entity", "get", "component/locks"]);
    assert_eq!(implemented(&capped), 100, "{capped}");
    assert_eq!(capped["omitted"], serde_json::json!({"implemented_by outgoing": symbols - 100}));
    let human = test.ok(&["entity", "get", "component/locks"]);
    assert!(human.contains(&format!("… {} more implemented_by outgoing", symbols - 100)), "{human}");
    let whole = json(&test, &["entity", "get", "component/locks", "--limit", "0"]);
    assert_eq!(implemented(&whole), symbols);
    assert!(whole.get("omitted").is_none(), "{whole}");
    // Under the limit nothing is left out, and the relations listed are the same.
    let small = json(&test, &["entity", "get", "symbol/src/sync.rs#Mutex::lock"]);
    assert!(small.get("omitted").is_none(), "{small}");
}

#[test]
fn a_cargo_dependency_is_internal_only_by_path() {
    let test = CliTest::empty();
    test.write("kc.toml", "version = 1\n[code]\nenabled = true\n");
    test.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/*\"]\n\n[workspace.dependencies]\nshared = { path = \"crates/shared\" }\n",
    );
    test.write("crates/shared/Cargo.toml", "[package]\nname = \"shared\"\nversion = \"1.0.0\"\n");
    test.write("crates/hash/Cargo.toml", "[package]\nname = \"hash\"\nversion = \"0.1.0\"\n");
    test.write("crates/util/Cargo.toml", "[package]\nname = \"util\"\nversion = \"0.1.0\"\n");
    // `hash = "2"` is crates.io's crate of that name, whatever sits in the tree; the others are by path.
    test.write(
        "crates/app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nhash = \"2\"\n\
         shared.workspace = true\nutil = { path = \"../util\" }\n",
    );
    test.build();
    let app = json(&test, &["entity", "get", "component/app"]);
    let mut depends = edges(&app, "depends_on", "outgoing");
    depends.sort();
    assert_eq!(depends, ["component/shared", "component/util", "crates.io:hash@2"], "{app}");
    assert!(edges(&json(&test, &["entity", "get", "component/hash"]), "affects", "outgoing").is_empty());
}

#[test]
fn a_root_package_that_is_also_the_workspace_resolves_its_members_and_its_fixtures_are_no_components() {
    // Cargo's own layout: the root manifest is a package and the workspace; its members inherit by
    // `workspace = true`, and its `tests/` hold packages a test builds.
    let test = CliTest::empty();
    test.write("kc.toml", "version = 1\n[code]\nenabled = true\n");
    test.write(
        "Cargo.toml",
        "[package]\nname = \"cargo\"\nversion = \"0.1.0\"\n\n[dependencies]\ncargo-util.workspace = true\n\
         anyhow.workspace = true\n\n[workspace]\nmembers = [\"crates/*\"]\n\n[workspace.dependencies]\n\
         anyhow = \"1.0.102\"\ncargo-util = { version = \"0.2.32\", path = \"crates/cargo-util\" }\n",
    );
    test.write("crates/cargo-util/Cargo.toml", "[package]\nname = \"cargo-util\"\nversion = \"0.2.32\"\n");
    test.write("crates/cargo-util/src/lib.rs", "pub fn read() {}\n");
    for case in ["add_basic", "add_path"] {
        test.write(&format!("tests/testsuite/cargo_add/{case}/in/Cargo.toml"), "[package]\nname = \"foo\"\n");
    }
    test.write("tests/testsuite/cargo_add/add_basic/in/src/lib.rs", "pub fn fixture() {}\n");
    test.build();

    let cargo = json(&test, &["entity", "get", "component/cargo"]);
    let mut depends = edges(&cargo, "depends_on", "outgoing");
    depends.sort();
    assert_eq!(depends, ["component/cargo-util", "crates.io:anyhow@1.0.102"], "{cargo}");
    let impact = json(&test, &["entity", "impact", "component/cargo-util"]);
    let affected: Vec<&str> =
        impact["affected"].as_array().unwrap().iter().map(|a| a["slug"].as_str().unwrap()).collect();
    assert!(affected.contains(&"component/cargo"), "{impact}");

    // The fixtures are the root package's test files, not components of their own.
    let listed = json(&test, &["entity", "list", "component"]);
    assert_eq!(slugs(&listed), ["component/cargo", "component/cargo-util"], "{listed}");
    let fixture = json(&test, &["entity", "get", "symbol/tests/testsuite/cargo_add/add_basic/in/src/lib.rs#fixture"]);
    assert_eq!(fixture["component"], "component/cargo", "{fixture}");
}

#[test]
fn dependencies_resolve_to_this_project_to_mapped_repositories_or_nowhere() {
    let other = CliTest::empty();
    other.write("kc.toml", "version = 1\n[code]\nenabled = true\n");
    other.write("Cargo.toml", "[package]\nname = \"shared-lib\"\nversion = \"1.2.0\"\n");
    other.write("src/lib.rs", "pub fn shared() {}\n");
    other.build();
    let test = fixture();
    let config = std::fs::read_to_string(test.path("kc.toml")).unwrap();
    let relative = other.root().display().to_string();
    test.write("kc.toml", format!("{config}\n[dependencies]\nshared = {relative:?}\nmissing = \"no/such/repo\"\n"));
    test.build();

    let resolved = json(&test, &["entity", "resolve", "crates.io:shared-lib@1"]);
    assert_eq!((resolved["status"].as_str(), resolved["repository"].as_str()), (Some("mapped"), Some("shared")));
    assert_eq!(resolved["entity"]["anchor"]["path"], "Cargo.toml");
    assert_eq!(json(&test, &["entity", "resolve", "rustc-hash"])["status"], "internal");
    let external = test.run(&["entity", "resolve", "npm:react@^18"]);
    assert_eq!(external.status.code(), Some(1), "an external coordinate exits 1");
    assert!(super::stdout(&external).contains("external"));
}

#[test]
fn the_delta_log_records_each_entity_change_with_the_build_that_made_it() {
    let test = fixture();
    let github = [("GITHUB_ACTIONS", "true"), ("GITHUB_SHA", "abc123"), ("GITHUB_REF", "refs/pull/42/merge")];
    assert!(test.run_with_env(&["build"], &github).status.success());
    // One function's body: that file alone is derived again, and one entity changes.
    let report = std::fs::read_to_string(test.path("crates/app/src/report.rs")).unwrap();
    test.write("crates/app/src/report.rs", report.replace(".map(|w| w.to_string())", ".map(|w| (*w).to_owned())"));
    let summary = test.build();
    assert_eq!(summary["queries"]["by_query"]["entities"], 1, "{summary}");
    assert_eq!(summary["entities"], serde_json::json!({ "added": 0, "changed": 1, "removed": 0 }));

    let changes = json(&test, &["entity", "changes", "--limit", "1"]);
    assert_eq!(changes[0]["slug"], "symbol/crates/app/src/report.rs#top");
    assert_eq!(changes[0]["change"], "changed");
    assert_ne!(changes[0]["old_value"]["hash"], changes[0]["new_value"]["hash"]);
    let introduced = json(&test, &["entity", "introduced", "symbol/crates/app/src/report.rs#top"]);
    assert_eq!((introduced["pull_request"].as_str(), introduced["commit"].as_str()), (Some("42"), Some("abc123")));
    assert_eq!(introduced["later_changes"].as_array().unwrap().len(), 1);

    // A move that leaves the function as it was (a line added above it) changes nothing.
    let report = std::fs::read_to_string(test.path("crates/app/src/report.rs")).unwrap();
    test.write("crates/app/src/report.rs", format!("// Reports.\n{report}"));
    assert_eq!(test.build()["entities"], serde_json::json!({ "added": 0, "changed": 0, "removed": 0 }));
}

#[test]
fn entities_of_sources_a_principal_may_not_read_and_their_edges_are_hidden() {
    let test = fixture();
    let config = std::fs::read_to_string(test.path("kc.toml")).unwrap();
    test.write("kc.toml", format!("{config}\n[permissions.principals]\nstaff = [\"internal\"]\n"));
    let adr = std::fs::read_to_string(test.path("docs/adr/0001-fast-hashing.md")).unwrap();
    test.write("docs/adr/0001-fast-hashing.md", adr.replacen("---\n", "---\nvisibility: internal\n", 1));
    test.build();

    test.fails(&["entity", "get", "decision/0001-fast-hashing"], "no entity");
    assert!(edges(&json(&test, &["entity", "get", "component/app"]), "governs", "incoming").is_empty());
    let impact = json(&test, &["entity", "impact", "component/app"]);
    assert!(!impact.to_string().contains("0001-fast-hashing"), "{impact}");
    let changes = json(&test, &["entity", "changes", "--limit", "1000"]);
    assert!(!changes.to_string().contains("0001-fast-hashing"));

    let staff = json(&test, &["--as", "staff", "entity", "get", "component/app"]);
    assert_eq!(edges(&staff, "governs", "incoming"), ["decision/0001-fast-hashing"]);
}

#[test]
fn code_is_off_by_default_and_a_broken_manifest_defines_nothing() {
    let test = fixture();
    let config = std::fs::read_to_string(test.path("kc.toml")).unwrap();
    test.write("kc.toml", config.replace("[code]\nenabled = true\n", ""));
    test.build();
    assert_eq!(json(&test, &["entity", "list"]), serde_json::json!([]));
    assert!(test.search("FxHasher")["results"].as_array().unwrap().is_empty(), "code is not a source unless enabled");

    test.write("kc.toml", &config);
    test.write("web/package.json", "{ \"name\": \"@fixture/web\", ");
    let summary = test.build();
    assert_eq!(summary["sources"]["skipped"], 0);
    let components = slugs(&json(&test, &["entity", "list", "component"]));
    assert!(!components.contains(&"component/@fixture/web".to_string()), "{components:?}");
    // The TypeScript symbols are still there, now outside any component; code is searchable as text.
    let format = json(&test, &["entity", "get", "symbol/web/src/format.ts#formatCount"]);
    assert!(format.get("component").is_none(), "{format}");
    assert!(!test.search("FxHasher")["results"].as_array().unwrap().is_empty());

    test.write("kc.toml", format!("{config}decisions = [\"docs/{{adr,rfc}}/*.md\"]\n"));
    test.fails(&["build"], "may use only `*`, `**`, `?` and literal text");
}

/// `knowledge search ARGS --json`, parsed, as its list of results.
fn results(test: &CliTest, args: &[&str]) -> Vec<Value> {
    let mut args = [&["search"], args].concat();
    args.push("--json");
    serde_json::from_str::<Value>(&test.ok(&args)).unwrap()["results"].as_array().unwrap().clone()
}

#[test]
fn entities_are_search_results_that_cite_their_own_bytes() {
    let test = fixture();
    test.build();

    // A symbol is found by the words of its documentation, which its anchor now holds.
    let found = results(&test, &["speedy polynomial hash algorithm", "--kind", "entity"]);
    assert_eq!(found[0]["entity"]["slug"], "symbol/crates/rustc-hash/src/lib.rs#FxHasher", "{found:?}");
    assert!(found[0]["title"].as_str().unwrap().starts_with("struct FxHasher"), "{found:?}");
    // Every result is an entity whose text is exactly the bytes it cites, and `entity get` knows its slug.
    for result in &found {
        assert_eq!(result["kind"], "entity");
        let path = result["source"]["path"].as_str().unwrap();
        let text = std::fs::read_to_string(test.path(path)).unwrap();
        let (start, end) = (
            result["citation"]["start_offset"].as_u64().unwrap() as usize,
            result["citation"]["end_offset"].as_u64().unwrap() as usize,
        );
        assert_eq!(result["text"].as_str().unwrap(), &text[start..end], "{result}");
        assert_eq!(result["source"]["revision"].as_str().unwrap(), knowledge_queries::content_hash(text.as_bytes()));
        let slug = result["entity"]["slug"].as_str().unwrap();
        assert_eq!(json(&test, &["entity", "get", slug])["slug"], slug);
        let chunk = json(&test, &["get", result["id"].as_str().unwrap()]);
        assert_eq!(chunk["chunk"]["provenance"]["source_ref"], format!("file://{path}"), "{chunk}");
    }

    // `--entity-type` narrows to one type and implies `--kind entity`; `--kind source_chunk` has none.
    let tests = results(&test, &["hash", "--entity-type", "test", "-n", "50"]);
    assert!(!tests.is_empty());
    assert!(tests.iter().all(|r| r["entity"]["type"] == "test"), "{tests:?}");
    let components = results(&test, &["version", "--entity-type", "component", "--entity-type", "decision"]);
    assert!(components.iter().any(|r| r["entity"]["slug"] == "component/ledger"), "{components:?}");
    assert!(components.iter().all(|r| ["component", "decision"].contains(&r["entity"]["type"].as_str().unwrap())));
    let text = results(&test, &["FxHasher", "--kind", "source_chunk", "-n", "50"]);
    assert!(!text.is_empty() && text.iter().all(|r| r["kind"] == "source_chunk" && r.get("entity").is_none()));
    // With no filter both come back; a source's chunk listing holds only its text's chunks.
    let all = results(&test, &["FxHasher", "-n", "50"]);
    assert!(all.iter().any(|r| r["kind"] == "entity") && all.iter().any(|r| r["kind"] == "source_chunk"));
    let source = json(&test, &["get", "crates/rustc-hash/src/lib.rs"]);
    let listed = source["source"]["chunks"].as_array().unwrap();
    assert!(!listed.is_empty() && listed.iter().all(|c| c["title"] == "lib"), "{listed:?}");

    // An edit re-derives the excerpt: the old body is no longer found, the new one is, at the new revision.
    let report = std::fs::read_to_string(test.path("crates/app/src/report.rs")).unwrap();
    test.write("crates/app/src/report.rs", report.replace(".map(|w| w.to_string())", ".map(|w| w.to_uppercase())"));
    test.build();
    let top = results(&test, &["to_uppercase", "--kind", "entity"]);
    assert_eq!(top[0]["entity"]["slug"], "symbol/crates/app/src/report.rs#top", "{top:?}");
    assert!(
        results(&test, &["to_string", "--entity-type", "symbol", "-n", "50"])
            .iter()
            .all(|r| r["entity"]["slug"] != "symbol/crates/app/src/report.rs#top")
    );
}

#[test]
fn hybrid_search_returns_entities_and_hidden_ones_reach_no_ranker() {
    let test = fixture();
    let config = std::fs::read_to_string(test.path("kc.toml")).unwrap();
    test.write(
        "kc.toml",
        format!("{config}\n[embeddings]\nprovider = \"fake\"\ndimensions = 256\n\n[permissions.principals]\nstaff = [\"internal\"]\n"),
    );
    let adr = std::fs::read_to_string(test.path("docs/adr/0001-fast-hashing.md")).unwrap();
    test.write("docs/adr/0001-fast-hashing.md", adr.replacen("---\n", "---\nvisibility: internal\n", 1));
    test.build();

    for mode in ["semantic", "hybrid"] {
        let found = results(&test, &["fast hashing decision", "--mode", mode, "--kind", "entity", "-n", "50"]);
        assert!(!found.is_empty(), "{mode}");
        assert!(found.iter().all(|r| r["kind"] == "entity"), "{mode}: {found:?}");
        assert!(found.iter().any(|r| r["scores"]["semantic"].is_number()), "{mode}: {found:?}");
        let hidden = |r: &Value| r["entity"]["slug"] == "decision/0001-fast-hashing";
        assert!(!found.iter().any(hidden), "{mode}: a reader without the label never sees it: {found:?}");
        let staff = json(
            &test,
            &["--as", "staff", "search", "fast hashing", "--mode", mode, "--entity-type", "decision", "-n", "50"],
        );
        assert!(staff["results"].as_array().unwrap().iter().any(hidden), "{mode}: {staff}");
    }
}

#[test]
fn a_package_name_two_folders_share_is_refused_with_the_folders_that_tell_them_apart() {
    let test = locks_crate();
    for folder in ["containers/apache/bar", "containers/sshd/bar"] {
        test.write(&format!("{folder}/Cargo.toml"), "[package]\nname = \"bar\"\nversion = \"1.0.0\"\n");
        test.write(&format!("{folder}/src/lib.rs"), format!("pub fn {}() {{}}\n", folder.replace('/', "_")));
    }
    test.build();
    let listed = slugs(&json(&test, &["entity", "list", "component"]));
    assert_eq!(listed.iter().filter(|slug| *slug == "component/bar").count(), 2, "{listed:?}");
    for command in [&["entity", "get", "component/bar"][..], &["entity", "impact", "component/bar"]] {
        let message = test.fails(command, "names 2 entities");
        assert!(message.contains("component/containers/apache/bar, component/containers/sshd/bar"), "{message}");
    }
    // Each folder names its own package, with its own code.
    for folder in ["containers/apache/bar", "containers/sshd/bar"] {
        let detail = json(&test, &["entity", "get", &format!("component/{folder}")]);
        assert_eq!(detail["anchor"]["path"], format!("{folder}/Cargo.toml"), "{detail}");
        let symbols = edges(&detail, "implemented_by", "outgoing");
        assert!(symbols.iter().any(|slug| slug.contains(&folder.replace('/', "_"))), "{symbols:?}");
    }
}
