//! Permission labels: a source a principal may not read never shows in any of its outputs, not in text,
//! snippets, titles, counts, scores, reasons or context packs, and cannot be told apart from a missing one.

use crate::{CliTest, stderr, stdout};

const INTERNAL_WORD: &str = "zanzibarium";
const HR_WORD: &str = "quetzalcoatlus";

fn fixture() -> CliTest {
    let test = CliTest::empty();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"perm\"\n[lint]\non_build = true\n\
         [embeddings]\nprovider = \"fake\"\ndimensions = 512\n\
         [permissions]\nrules = [{ path = \"hr/**\", labels = [\"hr\"] }]\n\
         [permissions.principals]\nstaff = [\"internal\"]\npeople = [\"internal\", \"hr\"]\n",
    );
    test.write("public/roadmap.md", "# Roadmap\n\nThe roadmap covers the launch plan and the budget review.\n");
    test.write(
        "public/open.md",
        "---\nvisibility: public\n---\n# Open notes\n\nThe launch plan is shared with everyone.\n",
    );
    test.write(
        "internal/plan.md",
        format!(
            "---\nvisibility: internal\n---\n# {INTERNAL_WORD} launch plan\n\nThe launch plan for {INTERNAL_WORD} \
             needs the budget review. See [the roadmap](../public/roadmap.md).\n"
        ),
    );
    test.write(
        "hr/salaries.md",
        format!("# Salaries\n\nThe {HR_WORD} budget review lists salaries for the launch plan.\n"),
    );
    // Not a source (binary), but under a labelled path: even its name is not for every reader.
    test.write("hr/payroll.md", b"\x00\x01 payroll");
    test.build();
    test
}

/// Every read the CLI offers, as one principal, concatenated. The queries and refs never hold a secret
/// themselves, since answers echo the query: whatever secret appears came from the index.
fn everything_seen_by(test: &CliTest, principal: Option<&str>) -> String {
    let mut outputs = String::new();
    let mut run = |args: &[&str]| {
        let mut full: Vec<&str> = args.to_vec();
        if let Some(name) = principal {
            full.extend(["--as", name]);
        }
        let output = test.run(&full);
        outputs.push_str(&stdout(&output));
        outputs.push_str(&stderr(&output));
    };
    for query in ["launch plan budget review", "salaries", "plan", "roadmap", "the"] {
        run(&["search", query, "--json"]);
        run(&["search", query]);
        // The vector scan and the fusion see only what the principal may read, too.
        run(&["search", query, "--semantic", "--json"]);
        run(&["embeddings", "search", query, "--json"]);
        run(&["context", "pack", query, "--json"]);
        run(&["ask", query, "--json"]);
    }
    run(&["get", "public/roadmap.md", "--json"]);
    for args in
        [&["changes", "--json"][..], &["list", "sources", "--json"], &["list", "runs", "--json"], &["stats", "--json"]]
    {
        run(args);
    }
    outputs
}

#[test]
fn the_default_principal_reads_only_unlabelled_and_public_sources() {
    let test = fixture();
    let seen = everything_seen_by(&test, None);
    for secret in [INTERNAL_WORD, HR_WORD, "internal/plan.md", "hr/salaries.md", "Salaries", "hr/payroll.md"] {
        assert!(!seen.contains(secret), "`{secret}` leaked to the default principal");
    }
    assert!(seen.contains("public/roadmap.md") && seen.contains("public/open.md"), "public sources are readable");
    for secret in [INTERNAL_WORD, HR_WORD] {
        assert!(test.result_paths(secret).is_empty(), "searching for `{secret}` finds nothing");
    }

    // Counts count what the principal may read; an unreadable source answers like a missing one.
    let search: serde_json::Value = serde_json::from_str(&test.ok(&["search", "launch plan", "--json"])).unwrap();
    assert_eq!(search["results"].as_array().unwrap().len(), 2);
    let hidden = test.run(&["get", "internal/plan.md"]);
    let missing = test.run(&["get", "internal/nothing.md"]);
    assert_eq!(hidden.status.code(), missing.status.code());
    assert_eq!(stderr(&hidden).replace("internal/plan.md", "X"), stderr(&missing).replace("internal/nothing.md", "X"));
}

#[test]
fn a_principal_reads_exactly_the_labels_it_is_granted() {
    let test = fixture();
    let staff = everything_seen_by(&test, Some("staff"));
    assert!(staff.contains(INTERNAL_WORD) && staff.contains("internal/plan.md"), "staff reads internal");
    assert!(!staff.contains(HR_WORD) && !staff.contains("hr/salaries.md"), "but not hr");
    assert!(!staff.contains("hr/payroll.md"), "nor the names of hr's skipped files");
    let people = everything_seen_by(&test, Some("people"));
    assert!(people.contains(INTERNAL_WORD) && people.contains(HR_WORD), "people read both");
    let hr: serde_json::Value =
        serde_json::from_str(&test.ok(&["get", "hr/salaries.md", "--as", "people", "--json"])).unwrap();
    assert_eq!(hr["source"]["title"], "Salaries", "people resolve the hr source");

    let unknown = test.run(&["search", "plan", "--as", "nobody"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("unknown principal `nobody`; the index defines people, staff"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn labels_follow_edits_to_front_matter() {
    let test = fixture();
    assert!(test.result_paths(INTERNAL_WORD).is_empty());
    test.write("internal/plan.md", format!("# Plan\n\nThe {INTERNAL_WORD} plan, now public.\n"));
    test.build();
    assert_eq!(test.result_paths(INTERNAL_WORD), ["internal/plan.md"]);
}

#[test]
fn a_recorded_answer_is_listed_in_full_only_to_a_principal_who_reads_everything() {
    let test = fixture();
    let asked = test.ok(&["ask", "salaries budget review", "--as", "people", "--json"]);
    assert!(asked.contains(HR_WORD), "people's answer quotes hr: {asked}");
    let listed = |principal: Option<&str>| {
        let mut args = vec!["list", "runs", "--kind", "ask", "--json"];
        args.extend(principal.map(|name| ["--as", name]).into_iter().flatten());
        let listing: serde_json::Value = serde_json::from_str(&test.ok(&args)).unwrap();
        assert_eq!(listing["runs"].as_array().unwrap().len(), 1, "{listing}");
        listing.to_string()
    };
    for principal in [None, Some("staff")] {
        let seen = listed(principal);
        assert!(!seen.contains(HR_WORD) && !seen.contains("salaries"), "{principal:?} sees the answer: {seen}");
        assert!(seen.contains("redacted"), "{seen}");
    }
    assert!(listed(Some("people")).contains(HR_WORD), "the asker's peers read it whole");
    let human = test.ok(&["list", "runs", "--kind", "ask"]);
    assert!(!human.contains("salaries") && !human.contains(HR_WORD), "{human}");
}
