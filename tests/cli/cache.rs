//! The shared build cache on a moto S3 server: CI publishes its index by commit, a clone pulls the nearest
//! one (its commit, else an ancestor), and its next build is incremental, never wrong.

use std::process::Command;

use serde_json::Value;

use crate::{CliTest, Moto, stderr};

pub(crate) fn git(root: &std::path::Path, args: &[&str]) {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {}: {}", args.join(" "), stderr(&output));
}

/// A committed project whose build cache is the moto bucket `cache`.
fn ci_project() -> CliTest {
    let test = CliTest::empty();
    test.write("kc.toml", "version = 1\n[cache]\nurl = \"s3://cache/kb\"\n");
    test.write(".gitignore", ".hasna/\n");
    for n in 0..12 {
        test.write(
            &format!("docs/topic-{n}.md"),
            format!("# Topic {n}\n\nTopic {n} explains the turbine's stage {n}, as [[Topic {}]] does.\n", (n + 1) % 12),
        );
    }
    git(test.root(), &["init", "-q", "-b", "main"]);
    git(test.root(), &["add", "."]);
    git(test.root(), &["commit", "-q", "-m", "first"]);
    test
}

fn json(test: &CliTest, moto: &Moto, args: &[&str]) -> Value {
    let output = test.run_with_env(args, &moto.credentials());
    assert!(output.status.success(), "`knowledge {}`: {}", args.join(" "), stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_clone_pulls_what_ci_published_and_builds_incrementally_from_it() {
    let moto = Moto::start();
    assert_eq!(moto.put("cache", ""), 200);
    let ci = ci_project();
    ci.build();
    let published = json(&ci, &moto, &["publish", "--json"]);
    assert_eq!(published["outcome"], "published", "{published}");
    let commit = published["commit"].as_str().unwrap().to_string();
    assert_eq!(json(&ci, &moto, &["publish", "--json"])["outcome"], "already_published");

    // A fresh clone: every file has a new mtime, and there is no index.
    let dev = CliTest::empty();
    git(dev.root(), &["clone", "-q", ci.root().to_str().unwrap(), "."]);
    let pulled = json(&dev, &moto, &["pull", "--json"]);
    assert_eq!((pulled["outcome"].as_str(), pulled["commit"].as_str()), (Some("exact"), Some(commit.as_str())));
    let built = dev.build();
    assert_eq!(built["full_rebuild"], false, "{built}");
    assert_eq!((built["sources"]["added"].as_u64(), built["sources"]["changed"].as_u64()), (Some(0), Some(0)));
    assert_eq!(built["chunks"]["computed"], 0, "{built}");
    assert_eq!(built["pages"]["rendered"], 0, "{built}");
    assert!(dev.ok(&["search", "turbine stage 7"]).contains("docs/topic-7.md"));
    let cold = CliTest::empty();
    git(cold.root(), &["clone", "-q", ci.root().to_str().unwrap(), "."]);
    assert_eq!(dev.ok(&["search", "turbine stage 7", "--json"]), {
        cold.build();
        cold.ok(&["search", "turbine stage 7", "--json"])
    });

    // A commit of the clone's own: the published one is its ancestor, and only the edit is derived.
    dev.write("docs/topic-3.md", "# Topic 3\n\nTopic 3 explains the turbine's third stage in more depth.\n");
    git(dev.root(), &["commit", "-q", "-am", "edit"]);
    std::fs::remove_dir_all(dev.path(".hasna")).unwrap();
    let pulled = json(&dev, &moto, &["pull", "--json"]);
    assert_eq!(pulled["outcome"], "ancestor", "{pulled}");
    let built = dev.build();
    assert_eq!(
        (built["sources"]["changed"].as_u64(), built["chunks"]["computed"].as_u64()),
        (Some(1), Some(1)),
        "{built}"
    );

    // A damaged entry is passed over: nothing usable, and the next build is cold but right.
    assert_eq!(
        moto.put(&format!("cache/kb/{}/{commit}.db", published["fingerprint"].as_str().unwrap()), "garbage"),
        200
    );
    std::fs::remove_dir_all(dev.path(".hasna")).unwrap();
    let refused = json(&dev, &moto, &["pull", "--json"]);
    assert_eq!(refused["outcome"], "none", "{refused}");
    assert!(refused["rejected"][0].as_str().unwrap().contains("do not hash as published"), "{refused}");
    assert_eq!(dev.build()["full_rebuild"], true);

    // A list anyone with write access to the prefix edited (issue 40, item 1): a "commit" that is not an
    // object name is never handed to git nor used as a key.
    let fingerprint = published["fingerprint"].as_str().unwrap();
    let hostile = serde_json::json!({"entries": [
        {"commit": "--output=/tmp/knowledge-hostile", "run_id": null, "hash": "h", "size": 1, "published_at": "t"},
        {"commit": "../../elsewhere", "run_id": null, "hash": "h", "size": 1, "published_at": "t"},
    ]});
    assert_eq!(moto.put(&format!("cache/kb/{fingerprint}/index.json"), &hostile.to_string()), 200);
    let refused = json(&dev, &moto, &["pull", "--json"]);
    assert_eq!(refused["outcome"], "none", "{refused}");
    let rejected: Vec<&str> = refused["rejected"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(rejected.len(), 2, "{refused}");
    assert!(rejected.iter().all(|r| r.ends_with("not a commit's object name")), "{refused}");

    // Another fingerprint (other chunking) finds nothing of this one's.
    let other = ci_project();
    other.write("kc.toml", "version = 1\n[cache]\nurl = \"s3://cache/kb\"\n[chunking]\ntarget_bytes = 700\n");
    assert_eq!(json(&other, &moto, &["pull", "--json"])["outcome"], "none");
}

#[test]
fn publish_needs_a_cache_a_commit_and_a_current_index() {
    let test = CliTest::new();
    test.fails(&["publish"], "no build cache: set `[cache] url");
    test.write("kc.toml", "version = 1\n[cache]\nurl = \"https://example.org\"\n");
    test.fails(&["build"], "`url` is `s3://BUCKET/PREFIX`");
}
