//! Artifacts in object storage (`[output] artifacts = "s3://…"`) on a moto S3 server: each build puts what
//! changed under the prefix with the catalog, conditionally, and `knowledge storage status` compares.

use serde_json::Value;

use crate::{CliTest, Moto, stderr, stdout};

const TARGET: &str = "s3://site/team/kb";

/// A project whose pages the wiki makes, publishing its artifacts to `TARGET`.
fn project() -> CliTest {
    let test = CliTest::new();
    test.write("kc.toml", format!("version = 1\n[output]\nartifacts = \"{TARGET}\"\n"));
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value has an owner. When the owner goes out of scope, the value is dropped.\n",
    );
    test.write("docs/borrowing.md", "# Borrowing\n\nA reference borrows a value, as [[Ownership]] explains.\n");
    test.write("docs/moves.md", "# Moves\n\nAssigning a value moves it; see [[Ownership]].\n");
    test
}

fn build(test: &CliTest, moto: &Moto) -> Value {
    let output = test.run_with_env(&["build", "--json"], &moto.credentials());
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The remote catalog.
fn catalog(moto: &Moto) -> Value {
    let (status, text) = moto.get("site/team/kb/storage_objects.json");
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn each_build_puts_what_changed_in_object_storage_and_never_clobbers_another_writer() {
    let moto = Moto::start();
    assert_eq!(moto.put("site", ""), 200);
    let test = project();

    // The first build puts every artifact, each as its file holds it, and the catalog.
    let first = build(&test, &moto);
    let remote = &first["remote_artifacts"];
    let uploaded = remote["uploaded"].as_u64().unwrap();
    assert_eq!((remote["target"].as_str(), remote["deleted"].as_u64()), (Some(TARGET), Some(0)), "{first}");
    let objects = catalog(&moto)["objects"].as_object().unwrap().clone();
    assert_eq!(objects.len() as u64, uploaded);
    for kind in ["page", "shard", "shard_json", "root", "schema", "log"] {
        assert!(objects.values().any(|o| o["kind"] == kind), "no {kind} object: {objects:?}");
    }
    for (path, object) in &objects {
        let local = std::fs::read_to_string(test.path(".hasna/knowledge").join(path)).unwrap();
        let (status, remote_text) = moto.get(&format!("site/team/kb/{path}"));
        assert_eq!((status, remote_text), (200, local), "{path}");
        assert_eq!(
            object["hash"].as_str().unwrap(),
            knowledge_queries::content_hash(
                std::fs::read(test.path(".hasna/knowledge").join(path)).unwrap().as_slice()
            )
        );
    }
    assert_eq!(test.run_with_env(&["storage", "status"], &moto.credentials()).status.code(), Some(0));

    // A no-op build reads the catalog and puts nothing.
    let noop = build(&test, &moto);
    assert_eq!(
        (noop["remote_artifacts"]["uploaded"].as_u64(), noop["remote_artifacts"]["unchanged"].as_u64()),
        (Some(0), Some(uploaded))
    );

    // An edit puts only the files it changed: the page that quotes the source, its shard's JSON, the log.
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value has exactly one owner. When the owner goes out of scope, the value is dropped.\n",
    );
    let edit = build(&test, &moto);
    let changed = edit["remote_artifacts"]["uploaded"].as_u64().unwrap();
    assert!(changed > 0 && changed < uploaded, "{edit}");
    let page_path = objects.keys().find(|path| path.starts_with("wiki/")).unwrap().clone();
    let (_, page) = moto.get(&format!("site/team/kb/{page_path}"));
    assert!(page.contains("exactly one owner"), "{page}");

    // Another writer changed the page under the prefix: this build does not overwrite it, and says so.
    assert_eq!(moto.put(&format!("site/team/kb/{page_path}"), "someone else's page"), 200);
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value has exactly one owner at a time. When the owner goes out of scope, it is dropped.\n",
    );
    let raced = test.run_with_env(&["build"], &moto.credentials());
    assert_eq!(raced.status.code(), Some(2));
    assert!(stderr(&raced).contains("another writer is publishing here"), "{}", stderr(&raced));
    assert_eq!(moto.get(&format!("site/team/kb/{page_path}")).1, "someone else's page");
    // The index is committed all the same, and the status tells what the prefix lacks.
    assert!(test.ok(&["search", "owner at a time"]).contains("docs/ownership.md"));
    let status = test.run_with_env(&["storage", "status", "--json"], &moto.credentials());
    assert_eq!(status.status.code(), Some(1));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(status["remote"]["to_upload"].as_array().unwrap().iter().any(|p| p == page_path.as_str()), "{status}");

    // Without credentials the upload fails with a clear error; the local build is done.
    let unset = test.run_with_env(&["build"], &[("AWS_ACCESS_KEY_ID", "")]);
    assert_eq!(unset.status.code(), Some(2));
    assert!(stderr(&unset).contains("`AWS_ACCESS_KEY_ID` is not set"), "{}", stderr(&unset));
    assert!(stdout(&unset).is_empty());

    // A remote catalog anyone with write access to the prefix edited (issue 40, item 1): an object it names
    // outside the prefix is never deleted; the sync stops and names it.
    assert_eq!(moto.put("site/team/other.md", "another team's file"), 200);
    let mut hostile = catalog(&moto);
    hostile["objects"]["../other.md"] = hostile["objects"][page_path.as_str()].clone();
    assert_eq!(moto.put("site/team/kb/storage_objects.json", &hostile.to_string()), 200);
    test.write("docs/moves.md", "# Moves\n\nAssigning a value moves it elsewhere; see [[Ownership]].\n");
    let refused = test.run_with_env(&["build"], &moto.credentials());
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("`../other.md`, which is not a plain path under the prefix"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(moto.get("site/team/other.md"), (200, "another team's file".to_string()));
}

#[test]
fn artifacts_must_name_an_s3_prefix() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[output]\nartifacts = \"https://example.org/kb\"\n");
    test.fails(&["build"], "`artifacts` is `s3://BUCKET/PREFIX`");
}
