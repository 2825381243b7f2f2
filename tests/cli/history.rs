//! Claim history: `knowledge introduced` names the build (its commit and time) that first held a passage,
//! from the lines each build recorded.

use serde_json::Value;

use crate::CliTest;
use crate::cache::git;

fn introduced(test: &CliTest, passage: &str) -> Value {
    serde_json::from_str(&test.ok(&["introduced", passage, "--json"])).unwrap()
}

fn run_of(found: &Value) -> String {
    found["passages"][0]["introduced"]["run_id"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_passage_is_introduced_by_the_build_that_completed_it_with_its_commit() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[permissions.principals]\nstaff = [\"internal\"]\n");
    test.write(".gitignore", ".hasna/\n");
    test.write("docs/ownership.md", "# Ownership\n\nEach value has an owner.\nThere is one owner at a time.\n");
    test.write("docs/secret.md", "---\nvisibility: internal\n---\n# Plans\n\nThe zeppelin launches in May.\n");
    git(test.root(), &["init", "-q", "-b", "main"]);
    git(test.root(), &["add", "."]);
    git(test.root(), &["commit", "-q", "-m", "first"]);
    let first = test.build()["run_id"].as_str().unwrap().to_string();

    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value has an owner.\nThere is one owner at a time.\n\nWhen the owner goes out of scope,\nthe value is dropped.\n",
    );
    git(test.root(), &["commit", "-q", "-am", "second"]);
    let second = test.build()["run_id"].as_str().unwrap().to_string();
    assert_ne!(first, second);

    // By ref: an old line, a new one, and a passage spanning both (complete only since the second build).
    assert_eq!(run_of(&introduced(&test, "docs/ownership.md#L3")), first);
    let new = introduced(&test, "docs/ownership.md#L6-L7");
    assert_eq!(run_of(&new), second);
    let commit = new["passages"][0]["introduced"]["vcs"]["commit"].as_str().unwrap();
    assert_eq!(commit.len(), 40, "{new}");
    assert_eq!(new["passages"][0]["introduced"]["vcs"]["branch"], "main");
    // The change lies between the build before (which did not hold it) and this one.
    let before = &new["passages"][0]["previous_build"];
    assert_eq!(before["run_id"], first.as_str(), "{new}");
    let range = format!("git log {}..{}", &before["vcs"]["commit"].as_str().unwrap()[..12], &commit[..12]);
    assert!(test.ok(&["introduced", "docs/ownership.md#L6-L7"]).contains(&range), "{range}");
    assert!(introduced(&test, "docs/ownership.md#L3")["passages"][0].get("previous_build").is_none());
    let spanning = introduced(&test, "file://docs/ownership.md#L3-L7");
    assert_eq!(run_of(&spanning), second);
    let lines: Vec<&str> =
        spanning["passages"][0]["lines"].as_array().unwrap().iter().filter_map(|l| l["run_id"].as_str()).collect();
    assert_eq!(lines, [first.as_str(), first.as_str(), second.as_str(), second.as_str()], "{spanning}");

    // By text, across a line break and extra spaces; the human form names the build.
    let quoted = introduced(&test, "\"owner goes out of   scope, the value\"");
    assert_eq!(quoted["passages"][0]["path"], "docs/ownership.md");
    assert_eq!(
        (quoted["passages"][0]["start_line"].as_u64(), quoted["passages"][0]["end_line"].as_u64()),
        (Some(6), Some(7))
    );
    assert_eq!(run_of(&quoted), second);
    let human = test.ok(&["introduced", "Each value has an owner"]);
    assert!(human.contains(&format!("introduced by build {first}")) && human.contains("on main"), "{human}");

    // A line taken out and put back keeps the build that first held it: builds record history.
    test.write("docs/ownership.md", "# Ownership\n\nThere is one owner at a time.\n");
    test.build();
    test.write("docs/ownership.md", "# Ownership\n\nEach value has an owner.\n");
    test.build();
    assert_eq!(run_of(&introduced(&test, "docs/ownership.md#L3")), first);

    // A file moved elsewhere keeps its lines' history, and says where they first were.
    test.remove("docs/ownership.md");
    test.write("docs/moved/ownership.md", "# Ownership\n\nEach value has an owner.\n");
    test.build();
    let moved = introduced(&test, "docs/moved/ownership.md#L3");
    assert_eq!(run_of(&moved), first, "{moved}");
    assert_eq!(moved["passages"][0]["lines"][0]["first_path"], "docs/ownership.md", "{moved}");

    // What the principal may not read is not found, by text or by ref; text no source holds is not found.
    test.fails(
        &["introduced", "zeppelin launches in May"],
        "no source you may read holds the text `zeppelin launches in May`",
    );
    test.fails(&["introduced", "docs/secret.md#L6"], "no chunk or source matches");
    test.fails(&["introduced", "the quick brown fox"], "no source you may read holds the text `the quick brown fox`");
    let allowed: Value =
        serde_json::from_str(&test.ok(&["--as", "staff", "introduced", "zeppelin launches", "--json"])).unwrap();
    assert_eq!(run_of(&allowed), first, "a principal who may read it is told");
}

#[test]
fn a_hostile_file_name_reaches_the_terminal_escaped() {
    let test = CliTest::empty();
    test.write("kc.toml", "version = 1\n");
    test.write("notes/evil\u{1b}[31m\u{202e}.md", "# Evil\n\nThe quartermaster signs every ledger twice.\n");
    // The commit a CI system hands the build is whatever it says: here not hex, multi-byte, with an escape.
    let built = test.run_with_env(&["build"], &[("GITHUB_ACTIONS", "true"), ("GITHUB_SHA", "aééééééé\u{1b}[2Jééé")]);
    assert!(built.status.success(), "{}", crate::stderr(&built));
    let human = test.ok(&["introduced", "quartermaster signs every ledger"]);
    assert!(human.contains("evil\\u{1b}[31m\\u{202e}.md"), "{human}");
    assert!(human.contains("commit aééééééé\\u{1b}[2J)"), "{human}");
    assert!(!human.contains('\u{1b}') && !human.contains('\u{202e}'), "{human:?}");
}
