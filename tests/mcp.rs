//! `knowledge serve` driven by the official MCP Python SDK (`tests/mcp/client.py`), as agents use it.
//!
//! The test needs Python 3.10+ with the `mcp` package; `support/python.rs` finds or installs it.

#[path = "support/postgres.rs"]
mod pg_server;
#[path = "support/python.rs"]
mod python;

use std::path::Path;
use std::process::Command;

#[test]
fn an_mcp_client_can_use_every_tool_and_resource_over_stdio() {
    run_client("stdio");
}

#[test]
fn an_mcp_client_can_use_every_tool_and_resource_over_http() {
    run_client("http");
}

/// The same client, every check, against a server whose project publishes to a Postgres store
/// (`[store] url`): searches, gets, context packs, extractive answers, listings of sources and builds, recent
/// changes, run status, lint findings and statistics come from the store, the pages, shards, storage and
/// purpose decisions from the local output folder, and the client cannot tell.
#[test]
fn an_mcp_client_gets_the_same_answers_from_a_postgres_store() {
    run_client_with("stdio", Some(&pg_server::Postgres::start()));
}

#[test]
fn http_refuses_a_non_loopback_address_without_allow_remote() {
    let output = Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .args(["serve", "--db", "missing.db", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a loopback address (pass --allow-remote"), "{stderr}");
}

fn run_client(transport: &str) {
    run_client_with(transport, None);
}

fn run_client_with(transport: &str, store: Option<&pg_server::Postgres>) {
    let project = tempfile::tempdir().unwrap();
    fixture(project.path());
    if let Some(pg) = store {
        let config = project.path().join("kc.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{text}\n[store]\nurl = \"{}\"\n", pg.url)).unwrap();
    }
    // Two files of the open-files manifest are ingested (one labelled for no reader of this server), one
    // is not.
    for (reference, label) in [("open-files://memo", None), ("open-files://classified", Some("internal"))] {
        let mut args = vec!["-C", project.path().to_str().unwrap(), "ingest", "source", reference];
        args.extend(label.iter().flat_map(|label| ["--label", label]));
        let ingest = Command::new(env!("CARGO_BIN_EXE_knowledge")).args(&args).output().unwrap();
        assert!(ingest.status.success(), "{}", String::from_utf8_lossy(&ingest.stderr));
    }
    // One note, for the `knowledge://item/{id}` resource.
    let note = Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .args(["-C", project.path().to_str().unwrap(), "add", "The turbine logbook is kept in the control room."])
        .output()
        .unwrap();
    assert!(note.status.success(), "{}", String::from_utf8_lossy(&note.stderr));
    let build = Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .args(["-C", project.path().to_str().unwrap(), "build", "--json"])
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
    if let Some(pg) = store {
        let index = project.path().join(".hasna/knowledge/knowledge.db");
        assert_eq!(pg.mirror_difference(&index, "mcp-fixture"), None, "the build published the fixture");
    }
    // One recorded purpose decision, for the decisions resource and `knowledge_run_status`.
    let resolve = Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .args([
            "-C",
            project.path().to_str().unwrap(),
            "source",
            "resolve",
            "book/ownership.md",
            "--purpose",
            "knowledge_answer",
        ])
        .output()
        .unwrap();
    assert!(resolve.status.success(), "{}", String::from_utf8_lossy(&resolve.stderr));
    if let Some(pg) = store {
        // The decision's run reaches the store with the next build, which changes nothing else.
        let build = Command::new(env!("CARGO_BIN_EXE_knowledge"))
            .args(["-C", project.path().to_str().unwrap(), "build", "--json"])
            .output()
            .unwrap();
        assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&build.stdout).unwrap();
        assert_eq!(summary["store"]["runs_written"], 1, "{}", summary["store"]);
        assert_eq!(summary["store"]["sources_written"], 0, "{}", summary["store"]);
        let index = project.path().join(".hasna/knowledge/knowledge.db");
        assert_eq!(pg.mirror_difference(&index, "mcp-fixture"), None);
    }

    let python = python::with_packages(&["mcp==2.3.0"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/client.py");
    let output = Command::new(&python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_knowledge"))
        .arg(project.path())
        .arg(transport)
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the MCP client failed over {transport}:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

fn fixture(root: &Path) {
    let write = |relative: &str, text: &str| {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "kc.toml",
        "version = 1\n[project]\nname = \"mcp-fixture\"\n[lint]\non_build = true\n\
         [sources]\ninclude = [\"**/*.md\", \"**/*.txt\"]\n\
         [ingest]\nopen_files_manifest = \"manifest/open-files.jsonl\"\n[code]\nenabled = true\n",
    );
    // Code: a crate with one tested function and one untested, and a decision no principal here may read.
    write("Cargo.toml", "[package]\nname = \"turbine\"\nversion = \"0.1.0\"\n\n[dependencies]\nserde = \"1\"\n");
    write(
        "src/lib.rs",
        "/// Balances a blade.\npub fn balance(weight: u32) -> u32 {\n    weight / 2\n}\n\npub fn spin() {}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn balances_half() {\n        assert_eq!(super::balance(4), 2);\n    }\n}\n",
    );
    write(
        "docs/adr/0001-turbine-plan.md",
        "---\nvisibility: internal\nstatus: accepted\n---\n# Xenomorphic turbine plan\n\nThe turbine crate follows the xenomorphic plan.\n",
    );
    write(
        "manifest/open-files.jsonl",
        concat!(
            r#"{"id":"memo","revision_id":"r1","hash":"h1","mime":"text/plain","owner":"ops-drive","title":"Turbine memo","text":"Turbine blades are balanced at the factory."}"#,
            "\n",
            r#"{"id":"draft","revision_id":"r1","hash":"h2","mime":"text/plain","title":"Draft","text":"Not ingested yet."}"#,
            "\n",
            r#"{"id":"classified","revision_id":"r1","hash":"h3","mime":"text/plain","title":"Xenomorphic dossier","text":"The xenomorphic dossier."}"#,
            "\n",
        ),
    );
    write("notes/broken.md", "# Broken\n\nSee [the missing page](missing.md).\n");
    // Readable by no principal of this server: its words must never appear in any answer.
    write(
        "secret/plan.md",
        "---\nvisibility: internal\n---\n# Xenomorphic ownership rules\n\nThe xenomorphic memory plan: ownership \
         rules, borrowing and scope, for internal eyes only.\n",
    );
    write(
        "book/ownership.md",
        "# Understanding Ownership\n\nOwnership is a set of rules that govern how a program manages memory.\n\n\
         ## Ownership Rules\n\nEach value has an owner. There can only be one owner at a time. When the owner \
         goes out of scope, the value is dropped.\n\n## The Stack\n\nThe stack stores values in order.\n",
    );
    write(
        "book/borrowing.md",
        "# References and Borrowing\n\nA reference is like a pointer. Borrowing rules keep memory safe, as \
         [[Understanding Ownership]] explains.\n",
    );
    write("notes/scope.txt", "Scope is the range within a program for which an item is valid.\n");
}
