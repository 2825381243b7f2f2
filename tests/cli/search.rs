//! `knowledge search`: ranked, cited results whose provenance resolves to the source bytes.

use crate::{CliTest, stdout};

fn corpus() -> CliTest {
    let test = CliTest::new();
    write_book(&test);
    test.build();
    test
}

/// Three book chapters (a code block, dotted and path identifiers) and an unrelated note.
pub(crate) fn write_book(test: &CliTest) {
    test.write(
        "book/ownership.md",
        "# Understanding Ownership\n\nOwnership is a set of rules that govern how a program manages memory.\n\n\
         ## Ownership Rules\n\nEach value has an owner. There can only be one owner at a time. When the owner goes \
         out of scope, the value is dropped.\n\n## The Stack\n\nThe stack stores values in the order it gets them.\n",
    );
    test.write(
        "book/borrowing.md",
        "# References and Borrowing\n\nA reference is like a pointer. Borrowing rules keep memory safe.\n\n\
         ```rust\nfn calculate_length(s: &String) -> usize {\n    s.len()\n}\n```\n",
    );
    test.write(
        "book/io.md",
        "# File IO\n\nUse `std::fs::read_to_string` to read a file. The `serde_json.from_str` call parses.\n",
    );
    test.write("notes/misc.txt", "Unrelated notes about gardening and tomatoes.\n");
}

#[test]
fn results_carry_provenance_that_resolves_to_the_source_bytes() {
    let test = corpus();
    let response = test.search("ownership rules");
    let results = response["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for result in results {
        assert_eq!(result["kind"], "source_chunk");
        let path = result["source"]["path"].as_str().unwrap();
        assert_eq!(result["source"]["uri"], format!("file://{path}"));
        let bytes = std::fs::read(test.path(path)).unwrap();
        let revision = knowledge_queries::content_hash(&bytes);
        assert_eq!(result["source"]["revision"], revision, "the revision is the file's content hash");
        let citation = &result["citation"];
        let start = citation["start_offset"].as_u64().unwrap() as usize;
        let end = citation["end_offset"].as_u64().unwrap() as usize;
        let text = std::str::from_utf8(&bytes[start..end]).unwrap();
        assert_eq!(result["text"], text, "the text is exactly the cited bytes");
        assert_eq!(result["source"]["hash"], knowledge_queries::content_hash(text.as_bytes()));
        let first_line = bytes[..start].iter().filter(|&&b| b == b'\n').count() + 1;
        let last_line = bytes[..end].iter().filter(|&&b| b == b'\n').count() + 1;
        assert_eq!(citation["start_line"], first_line);
        assert_eq!(citation["end_line"], last_line);
        assert!(result["score"].as_f64().unwrap() > 0.0);
        assert!(result["scores"]["keyword"].as_f64().is_some());
        assert!(!result["reason"].as_array().unwrap().is_empty());
    }
    assert_eq!(
        results[0]["title"], "Understanding Ownership > Ownership Rules",
        "the section titled with both terms wins"
    );
    let reasons = results[0]["reason"].as_array().unwrap();
    for reason in ["exact_term", "title_match", "all_terms", "phrase_match"] {
        assert!(reasons.contains(&serde_json::json!(reason)), "{reason} in {reasons:?}");
    }
}

#[test]
fn a_sentence_length_query_does_not_require_every_word() {
    let test = corpus();
    let paths = test.result_paths("how does the borrow checker keep references and memory safe in my program");
    assert!(!paths.is_empty(), "matching some of the words is enough");
    assert_eq!(paths[0], "book/borrowing.md", "{paths:?}");
}

#[test]
fn fts_syntax_in_a_query_is_matched_as_text_never_an_error() {
    let test = corpus();
    for query in [
        "\"unbalanced",
        "NEAR(owner value)",
        "owner AND OR NOT",
        "title:ownership",
        "*",
        "owner*",
        "^owner",
        "(owner",
        "a - b + c",
        "'; DROP TABLE chunks; --",
        "",
        "   ",
        "émoji 🦀 ünïcode",
    ] {
        let output = test.run(&["search", query, "--json"]);
        assert!(output.status.success(), "query {query:?}: {}", String::from_utf8_lossy(&output.stderr));
        let response: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(response["results"].is_array(), "{query:?}");
    }
    assert_eq!(test.result_paths("NEAR(owner value)")[0], "book/ownership.md");
}

#[test]
fn no_match_is_an_empty_result_not_an_error() {
    let test = corpus();
    let response = test.search("xylophone");
    assert_eq!(response["results"], serde_json::json!([]));
    assert_eq!(response["degraded"], false);
    assert_eq!(response["mode"], "keyword");
    let human = test.run(&["search", "xylophone"]);
    assert!(human.status.success());
    assert!(stdout(&human).contains("no results"));
}

#[test]
fn parts_of_dotted_and_path_identifiers_are_searchable() {
    let test = corpus();
    assert_eq!(test.result_paths("read_to_string"), ["book/io.md"]);
    assert_eq!(test.result_paths("std::fs::read_to_string"), ["book/io.md"]);
    assert_eq!(test.result_paths("serde_json.from_str"), ["book/io.md"]);
    assert_eq!(test.result_paths("json"), ["book/io.md"]);
    assert_eq!(test.result_paths("calculate_length"), ["book/borrowing.md"], "code blocks are indexed");
}

#[test]
fn stemming_matches_other_forms_of_a_word() {
    let test = corpus();
    let response = test.search("governing");
    assert_eq!(response["results"][0]["source"]["path"], "book/ownership.md");
    let reasons = response["results"][0]["reason"].as_array().unwrap();
    assert!(reasons.contains(&serde_json::json!("stemmed_term")), "{reasons:?}");
}

#[test]
fn navigation_and_markup_are_never_results() {
    let test = corpus();
    // Every line names "stack", so by its words alone the table of contents would outrank the paragraph.
    test.write(
        "book/SUMMARY.md",
        "# Stack\n\n- [The Stack](ownership.md)\n- [Stack Frames](stack.md)\n- [Stack Traces](traces.md)\n\
         - [Stack Overflow](overflow.md)\n",
    );
    // An anchor kept for old links and a comment to editors name words no reader sees; the section after
    // them is about something else.
    test.write(
        "book/threads.md",
        "# Threads\n\nThreads run code at the same time.\n\n\
         <!-- Old heading: sharing a mutex between threads. Do not remove. -->\n\n\
         <a id=\"sharing-a-mutex-between-multiple-threads\"></a>\n\n\
         ## Joining\n\nA handle joins its thread when asked.\n",
    );
    test.build();
    let sources = |response: &serde_json::Value| -> Vec<String> {
        let results = response["results"].as_array().unwrap().iter().filter(|r| r["kind"] == "source_chunk");
        results.map(|r| r["source"]["path"].as_str().unwrap().to_string()).collect()
    };
    let response = test.search("stack");
    assert_eq!(sources(&response), ["book/ownership.md"], "the table of contents is no result: {response}");
    let response = test.search("mutex");
    assert!(sources(&response).is_empty(), "an anchor's and a comment's words are not text: {response}");
    let response = test.search("joins its thread");
    let result = &response["results"][0];
    assert_eq!(result["source"]["path"], "book/threads.md");
    let text = result["text"].as_str().unwrap();
    assert!(!text.contains("<a id") && !text.contains("<!--"), "the markup is in no chunk: {text:?}");
}

#[test]
fn limit_and_kind_filter_results() {
    let test = corpus();
    let two = test.ok(&["search", "the", "--json", "--limit", "2"]);
    let two: serde_json::Value = serde_json::from_str(&two).unwrap();
    assert_eq!(two["results"].as_array().unwrap().len(), 2);
    let none = test.ok(&["search", "ownership", "--json", "--kind", "wiki_page"]);
    let none: serde_json::Value = serde_json::from_str(&none).unwrap();
    assert_eq!(none["results"], serde_json::json!([]), "there are no wiki pages yet");
    let chunks = test.ok(&["search", "ownership", "--json", "--kind", "source_chunk"]);
    let chunks: serde_json::Value = serde_json::from_str(&chunks).unwrap();
    assert!(!chunks["results"].as_array().unwrap().is_empty());
}

#[test]
fn the_human_format_shows_title_location_and_a_highlighted_snippet() {
    let test = corpus();
    let out = test.ok(&["search", "tomatoes"]);
    let lines: Vec<&str> = out.lines().collect();
    let revision = knowledge_queries::content_hash(&std::fs::read(test.path("notes/misc.txt")).unwrap());
    assert_eq!(lines[0], "1. misc", "{out}");
    assert!(lines[1].starts_with(&format!("   notes/misc.txt:1  rev {}  score ", &revision[..12])), "{out}");
    assert_eq!(lines[2], "   Unrelated notes about gardening and **tomatoes**.", "{out}");
}

#[test]
fn get_resolves_chunks_refs_and_paths_from_the_index_only() {
    let test = corpus();
    let hit = test.search("tomatoes")["results"][0].clone();
    let id = hit["id"].as_str().unwrap();

    let chunk: serde_json::Value = serde_json::from_str(&test.ok(&["get", id, "--json"])).unwrap();
    assert_eq!(chunk["kind"], "chunk");
    assert_eq!(chunk["chunk"]["text"], hit["text"]);
    assert_eq!(chunk["chunk"]["provenance"]["source_ref"], "file://notes/misc.txt");
    assert_eq!(chunk["chunk"]["provenance"]["source_owner"], "fixture");
    assert_eq!(chunk["chunk"]["provenance"]["stale"], false);

    for reference in ["file://book/io.md", "book/io.md", "./book/io.md", "file://book/io.md#L1-L3"] {
        let source: serde_json::Value = serde_json::from_str(&test.ok(&["get", reference, "--json"])).unwrap();
        assert_eq!(source["kind"], "source", "{reference}");
        assert_eq!(source["source"]["title"], "File IO");
        assert_eq!(source["source"]["chunks"].as_array().unwrap().len(), 1);
    }
    assert_eq!(
        test.ok(&["source", "resolve", "file://book/io.md", "--json"]),
        test.ok(&["get", "file://book/io.md", "--json"]),
        "`source resolve` and `get` give one answer"
    );
    let human = test.ok(&["get", "book/io.md"]);
    assert!(human.starts_with("File IO\nfile://book/io.md  text/markdown"), "{human}");

    for outside in ["kc.toml", "../etc/passwd", "/etc/passwd", "file:///etc/passwd"] {
        let output = test.run(&["get", outside]);
        assert_eq!(output.status.code(), Some(2), "{outside}");
        assert!(crate::stderr(&output).contains("no chunk or source matches"), "{outside}");
    }
}

/// `eval --judged` scores the project's own index against questions judged by file and section: a
/// generated page counts as a miss, or as the source it quotes; `ask` is scored on both kinds of question.
#[test]
fn eval_judged_scores_the_project_index_by_file_and_section() {
    let test = CliTest::new();
    // "capital" is in the index, "France" is not: by count half the question's words are found, by
    // rarity far less, and `ask` declines.
    test.write(
        "soil.md",
        "# Soil\n\nLoam holds water; it is the capital of a garden.\n\n## Compost\n\nCompost feeds the loam with worms.\n",
    );
    test.write("sky.md", "# Sky\n\nClouds drift over the hills.\n");
    test.write(
        "set.tsv",
        "# id, question, judgments\nq1\thow does compost feed loam\tsoil.md#Compost=2\nq2\twhere do clouds drift\tsky.md=2\nu1\tcapital of France\tnone\n",
    );
    test.build();
    let output = test.run(&["eval", "--judged", "set.tsv", "--json"]);
    assert!(output.status.success(), "{}", crate::stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((report["questions"].as_u64(), report["unanswerable"].as_u64()), (Some(2), Some(1)), "{report:#}");
    assert_eq!(report["file_ndcg_at_10"], 1.0, "{report:#}");
    assert_eq!(report["chunk_ndcg_at_10"], 1.0, "the Compost section's chunk ranks first: {report:#}");
    assert_eq!(report["ask_declined"], 1.0, "nothing answers the capital of France: {report:#}");
    assert_eq!(report["ask_opened_from_judged"], 1.0, "each answer opens with its judged file: {report:#}");
    assert_eq!(report["per_question"][0]["ask_opens_with_answer"], true, "{report:#}");
    assert_eq!(report["per_question"][0]["first_answer"], 1);
    assert_eq!(test.run(&["eval", "--judged", "set.tsv", "--min-ndcg", "1.5"]).status.code(), Some(1));
    test.write("bad.tsv", "q1\thow\tsoil.md=high\n");
    test.fails(&["eval", "--judged", "bad.tsv"], "bad.tsv:1: `soil.md=high`: the grade must be a whole number");
}

#[test]
fn eval_scores_a_judged_collection_and_gates_on_a_threshold() {
    let test = CliTest::empty();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/eval");
    let args = |extra: &[&str]| {
        let mut args = vec![
            "eval".to_string(),
            "--corpus".to_string(),
            fixtures.join("corpus.jsonl").display().to_string(),
            "--queries".to_string(),
            fixtures.join("queries.jsonl").display().to_string(),
            "--qrels".to_string(),
            fixtures.join("qrels.tsv").display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_string()));
        args
    };
    let run = |extra: &[&str]| {
        let args = args(extra);
        test.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let output = run(&["--json"]);
    assert!(output.status.success(), "{}", crate::stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["documents"], 5);
    assert_eq!(report["queries"], 2, "a query with no relevant judgment is not scored");
    // q1 finds d2 first; q2 finds d3 first and d5 (grade 1) second: both rankings are ideal.
    assert_eq!(report["ndcg_at_10"], 1.0, "{report:#}");
    assert_eq!(report["mrr_at_10"], 1.0);
    assert_eq!(report["recall_at_100"], 1.0);
    assert!(!test.path(".hasna").exists(), "eval writes only to a temporary folder");

    assert_eq!(run(&["--min-ndcg", "0.99"]).status.code(), Some(0));
    assert_eq!(run(&["--min-ndcg", "1.5"]).status.code(), Some(1), "below the bar fails");
    let semantic = run(&["--mode", "semantic"]);
    assert_eq!(semantic.status.code(), Some(2));
    assert!(crate::stderr(&semantic).contains("needs an embeddings provider"), "{}", crate::stderr(&semantic));
    let human = run(&[]);
    assert!(crate::stdout(&human).contains("nDCG@10    1.0000"), "{}", crate::stdout(&human));
}

#[test]
fn a_context_pack_keeps_to_its_budget_and_cites_exactly_what_it_carries() {
    let test = corpus();
    for budget in [40, 80, 150, 400, 2000] {
        let pack: serde_json::Value = serde_json::from_str(&test.ok(&[
            "context",
            "pack",
            "ownership rules memory owner",
            "--max-tokens",
            &budget.to_string(),
            "--max-items",
            "3",
            "--json",
        ]))
        .unwrap();
        assert_eq!(pack["schema"], "knowledge-agent-context-pack");
        assert_eq!(pack["schema_version"], 2);
        let items = pack["items"].as_array().unwrap();
        assert!(items.len() <= 3);
        let mut total = 0;
        for item in items {
            let text = item["text"].as_str().unwrap();
            let reference = item["ref"].as_str().unwrap();
            let tokens = item["tokens"].as_u64().unwrap() as usize;
            assert_eq!(tokens, text.len().div_ceil(4) + reference.len().div_ceil(4), "the stated count");
            total += tokens;
            let path = item["source"]["path"].as_str().unwrap();
            let bytes = std::fs::read(test.path(path)).unwrap();
            let c = &item["citation"];
            let cited =
                &bytes[c["start_offset"].as_u64().unwrap() as usize..c["end_offset"].as_u64().unwrap() as usize];
            assert_eq!(std::str::from_utf8(cited).unwrap(), text, "offsets cover exactly the excerpt, cut or not");
            assert_eq!(item["source"]["hash"], knowledge_queries::content_hash(text.as_bytes()));
            let resolved: serde_json::Value = serde_json::from_str(&test.ok(&["get", reference, "--json"])).unwrap();
            assert_eq!(resolved["source"]["path"], path, "the compact ref resolves");
        }
        assert!(total <= budget, "budget {budget} exceeded: {total}");
        assert_eq!(pack["budget"]["used_tokens"], total);
    }
    let small: serde_json::Value =
        serde_json::from_str(&test.ok(&["context", "pack", "ownership rules", "--max-tokens", "80", "--json"]))
            .unwrap();
    let large: serde_json::Value =
        serde_json::from_str(&test.ok(&["context", "pack", "ownership rules", "--max-tokens", "2000", "--json"]))
            .unwrap();
    assert!(small["budget"]["omitted"].as_u64() > large["budget"]["omitted"].as_u64());
    assert_eq!(large["items"][0]["title"], "Understanding Ownership > Ownership Rules");
    let none: serde_json::Value = serde_json::from_str(&test.ok(&["context", "pack", "xylophone", "--json"])).unwrap();
    assert_eq!(none["items"], serde_json::json!([]));
    assert_eq!(none["suggested_wiki_updates"].as_array().unwrap().len(), 1);
    assert_eq!(large["degraded"], true, "no embeddings: keyword excerpts only, and the pack says so");
    assert!(large["degraded_reason"].as_str().unwrap().contains("embeddings"), "{large:#}");
}

/// A project of one page, `long.md`: a heading and a paragraph of twelve sentences about the borrow checker,
/// each with `between` between its words "borrow" and "checker" (a space, or a line end where the paragraph
/// is wrapped).
fn long_paragraph(between: &str) -> CliTest {
    let test = CliTest::new();
    let sentences: Vec<String> =
        (1..=12).map(|i| format!("Sentence {i} explains the borrow{between}checker in detail.")).collect();
    test.write("long.md", format!("# Borrowing\n\n{}\n", sentences.join(" ")));
    test.build();
    test
}

#[test]
fn a_context_pack_cuts_a_long_excerpt_at_a_sentence_and_cites_the_cut() {
    let test = long_paragraph(" ");
    let pack: serde_json::Value =
        serde_json::from_str(&test.ok(&["context", "pack", "borrow checker", "--max-tokens", "90", "--json"])).unwrap();
    let item = &pack["items"][0];
    assert_eq!(item["truncated"], true, "{pack:#}");
    let text = item["text"].as_str().unwrap();
    assert!(text.ends_with("in detail."), "cut at a sentence end: {text:?}");
    assert!(pack["budget"]["used_tokens"].as_u64().unwrap() <= 90);
    let bytes = std::fs::read(test.path("long.md")).unwrap();
    let c = &item["citation"];
    let cited = &bytes[c["start_offset"].as_u64().unwrap() as usize..c["end_offset"].as_u64().unwrap() as usize];
    assert_eq!(std::str::from_utf8(cited).unwrap(), text);
    assert!(item["ref"].as_str().unwrap().ends_with(&format!("#L{}-L{}", c["start_line"], c["end_line"])));
}

/// A paragraph wrapped at a fixed width has line ends inside its sentences: the cut is at a sentence's end.
#[test]
fn a_context_pack_cuts_a_wrapped_paragraph_at_a_sentence_not_a_line_end() {
    let test = long_paragraph("\n");
    // Budgets a few tokens apart end their windows at every place in a sentence.
    for budget in (70..110).step_by(3) {
        let budget = budget.to_string();
        let pack: serde_json::Value =
            serde_json::from_str(&test.ok(&["context", "pack", "borrow checker", "--max-tokens", &budget, "--json"]))
                .unwrap();
        let text = pack["items"][0]["text"].as_str().unwrap();
        assert_eq!(pack["items"][0]["truncated"], true, "{pack:#}");
        assert!(text.ends_with("in detail."), "cut at a sentence end with {budget} tokens: {text:?}");
    }
}

#[test]
fn stats_list_and_changes_answer_on_the_command_line() {
    let test = corpus();
    let stats: serde_json::Value = serde_json::from_str(&test.ok(&["stats", "--json"])).unwrap();
    assert_eq!((stats["sources"].as_u64(), stats["runs"].as_u64()), (Some(4), Some(1)));

    let first: serde_json::Value =
        serde_json::from_str(&test.ok(&["list", "sources", "--limit", "3", "--json"])).unwrap();
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let rest: serde_json::Value =
        serde_json::from_str(&test.ok(&["list", "sources", "--limit", "3", "--cursor", &cursor, "--json"])).unwrap();
    let paths: Vec<&str> = first["sources"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["sources"].as_array().unwrap())
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["book/borrowing.md", "book/io.md", "book/ownership.md", "notes/misc.txt"]);
    assert_eq!(rest["next_cursor"], serde_json::Value::Null);

    test.write("notes/misc.txt", "Unrelated notes about gardening, tomatoes and basil.\n");
    test.build();
    let changes: serde_json::Value = serde_json::from_str(&test.ok(&["changes", "--json"])).unwrap();
    assert_eq!(changes[0]["events"][0]["kind"], "source_changed");
    assert_eq!(changes[0]["events"][0]["path"], "notes/misc.txt");
    assert_eq!(changes[1]["events"][0]["kind"], "index_rebuilt");
    let human = test.ok(&["changes", "--runs", "1"]);
    assert!(human.contains("  source_changed notes/misc.txt"), "{human}");
    assert!(test.ok(&["list", "runs"]).lines().count() >= 2);
}

#[test]
fn notes_are_added_indexed_as_legacy_items_cited_and_removed() {
    let test = corpus();
    let added = test.ok(&["add", "Remember: the wombat migration runs on Fridays."]);
    let reference = added.split_whitespace().nth(1).unwrap().to_string();
    assert!(reference.starts_with("knowledge://item/"), "{added}");
    let listed: serde_json::Value = serde_json::from_str(&test.ok(&["notes", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["text"], "Remember: the wombat migration runs on Fridays.");
    assert!(test.search("wombat")["results"].as_array().unwrap().is_empty(), "indexed by the next build");

    let summary = test.build();
    assert_eq!(summary["sources"]["added"], 1);
    let hit = test.search("wombat migration")["results"][0].clone();
    assert_eq!(hit["kind"], "legacy_item");
    assert_eq!(hit["source"]["uri"], reference.as_str());
    assert_eq!(hit["text"], "Remember: the wombat migration runs on Fridays.");
    let only_files = test.ok(&["search", "wombat", "--kind", "source_chunk", "--json"]);
    assert!(!only_files.contains("wombat migration"), "--kind source_chunk leaves notes out");
    let only_notes: serde_json::Value =
        serde_json::from_str(&test.ok(&["search", "the", "--kind", "legacy_item", "--json"])).unwrap();
    assert!(only_notes["results"].as_array().unwrap().iter().all(|r| r["kind"] == "legacy_item"));
    let resolved: serde_json::Value = serde_json::from_str(&test.ok(&["get", &reference, "--json"])).unwrap();
    assert_eq!(resolved["source"]["uri"], reference.as_str());
    let pack: serde_json::Value =
        serde_json::from_str(&test.ok(&["context", "pack", "wombat migration", "--json"])).unwrap();
    let cited = pack["items"][0]["ref"].as_str().unwrap();
    assert!(cited.starts_with(&format!("{reference}@")), "{cited}");
    test.ok(&["get", cited]);
    let notes: serde_json::Value = serde_json::from_str(&test.ok(&["list", "notes", "--json"])).unwrap();
    assert_eq!(notes["sources"][0]["path"], reference.as_str());

    test.ok(&["notes", "rm", &reference]);
    assert_eq!(test.build()["sources"]["removed"], 1);
    assert!(test.search("wombat")["results"].as_array().unwrap().is_empty());
    let missing = test.run(&["notes", "rm", &reference]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(test.run(&["add", "   "]).status.code(), Some(2), "an empty note is refused");
}

#[test]
fn the_legacy_store_is_imported_as_notes_under_their_ids_once() {
    let test = corpus();
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join(".open-knowledge/db.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    let items = serde_json::json!({"items": [
        {"id": "k_lz3abc_x9y8z7", "title": "Wombat  migration", "content": "The wombat migration runs on Fridays.",
         "url": "https://wiki.example/wombat", "tags": ["ops", " "], "archived": false,
         "created_at": "2026-06-08T12:34:56.789Z", "updated_at": "2026-06-08T12:34:56.789Z"},
        {"id": "../../escape", "title": "Kangaroo", "content": "The kangaroo report is due.", "tags": []},
        {"id": "k_old", "title": "Platypus", "content": "An archived platypus.", "archived": true},
        {"id": "k_blank", "title": " ", "content": ""},
        {"id": "k_lz3abc_x9y8z7", "title": "Repeated", "content": "A second item with the first one's id."},
    ]});
    std::fs::write(&store, items.to_string()).unwrap();
    let envs = [("HOME", home.path().to_str().unwrap())];

    let output = test.run_with_env(&["import", "legacy", "--json"], &envs);
    assert!(output.status.success(), "{}", crate::stderr(&output));
    let imported: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        [&imported["added"], &imported["archived_skipped"], &imported["empty_skipped"], &imported["repeated_skipped"]],
        [2, 1, 1, 1],
        "{imported}"
    );
    let notes: serde_json::Value = serde_json::from_str(&test.ok(&["notes", "list", "--json"])).unwrap();
    let wombat = notes.as_array().unwrap().iter().find(|n| n["id"] == "k_lz3abc_x9y8z7").unwrap();
    assert_eq!(
        wombat["text"],
        "# Wombat migration\n\nThe wombat migration runs on Fridays.\n\nSource: <https://wiki.example/wombat>\n\nTags: ops"
    );
    assert!(wombat["created_ns"].as_i64().unwrap() > 1_780_000_000_000_000_000, "{wombat}");
    let kangaroo = notes.as_array().unwrap().iter().find(|n| n["text"].as_str().unwrap().contains("kangaroo")).unwrap();
    assert!(kangaroo["id"].as_str().unwrap().bytes().all(|b| b.is_ascii_hexdigit()), "{kangaroo}");

    test.build();
    let hit = test.search("wombat migration")["results"][0].clone();
    assert_eq!(hit["source"]["uri"], "knowledge://item/k_lz3abc_x9y8z7", "{hit}");
    assert!(test.search("platypus")["results"].as_array().unwrap().is_empty(), "archived items stay behind");

    // Again: nothing changes, and the next build has nothing to do. An edited item is updated.
    let again: serde_json::Value =
        serde_json::from_slice(&test.run_with_env(&["import", "legacy", "--json"], &envs).stdout).unwrap();
    assert_eq!([&again["added"], &again["updated"], &again["unchanged"]], [0, 0, 2], "{again}");
    assert_eq!(test.build()["sources"]["changed"], 0);
    std::fs::write(&store, items.to_string().replace("on Fridays", "on Mondays")).unwrap();
    let edited: serde_json::Value =
        serde_json::from_slice(&test.run_with_env(&["import", "legacy", "--json"], &envs).stdout).unwrap();
    assert_eq!(edited["updated"], 1, "{edited}");

    // A damaged store is refused with its path and line, and the notes are as they were.
    let broken = home.path().join("broken.json");
    std::fs::write(&broken, "{\"items\": [\n  {\"id\": 1}\n]}").unwrap();
    let refused = test.fails(&["import", "legacy", broken.to_str().unwrap()], "is not a legacy store");
    assert!(refused.contains("broken.json") && refused.contains("line 2"), "{refused}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&test.ok(&["notes", "list", "--json"]))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    test.fails(&["import", "legacy", "missing.json"], "cannot read");
}

#[test]
fn a_corrupt_notes_file_is_reported_and_the_build_goes_on() {
    let test = corpus();
    test.write(".hasna/knowledge/notes.json", "{ not json");
    let output = test.run(&["build", "--json"]);
    assert!(output.status.success(), "{}", crate::stderr(&output));
    assert!(crate::stderr(&output).contains("warning: skipped `notes.json`: `"), "{}", crate::stderr(&output));
    assert!(crate::stderr(&output).contains("is not a notes file"), "{}", crate::stderr(&output));
    let list = test.run(&["notes", "list"]);
    assert_eq!(list.status.code(), Some(2));
    assert_eq!(test.result_paths("tomatoes"), ["notes/misc.txt"], "the sources are still compiled");
}

#[test]
fn a_hand_edit_of_the_notes_file_reaches_the_index_even_at_the_same_length() {
    let test = corpus();
    test.ok(&["add", "The kangaroo report is due."]);
    test.build();
    let path = test.path(".hasna/knowledge/notes.json");
    let edited = std::fs::read_to_string(&path).unwrap().replace("kangaroo", "platypus");
    std::fs::write(&path, edited).unwrap();
    let summary = test.build();
    assert_eq!(summary["sources"]["changed"], 1, "{summary:#}");
    assert_eq!(test.search("platypus")["results"][0]["kind"], "legacy_item");
    assert!(test.search("kangaroo")["results"].as_array().unwrap().is_empty());
    assert_eq!(test.build()["wrote"], false, "and the next build has nothing to do");
}

/// The hybrid pipeline expands its best candidates through the wiki graph (a page brings the chunks it
/// quotes, `citation`; a source brings the pages that quote it, `backlink`), and marks results from
/// sources the last build changed (`fresh_source`).
#[test]
fn hybrid_search_expands_through_the_wiki_graph_and_marks_fresh_sources() {
    let test = CliTest::new();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[embeddings]\nprovider = \"fake\"\ndimensions = 512\n",
    );
    test.write("a.md", "# Alpha\n\nAlpha leans on [[Beta]] for its footing.\n");
    test.write("b.md", "# Beta\n\nBeta stands alone in the meadow.\n");
    test.write("c.md", "# Gamma\n\nGamma cites [[Beta]] in one breath.\n");
    test.build();
    let reasons = |query: &str| -> Vec<(String, Vec<String>)> {
        let answer: serde_json::Value =
            serde_json::from_str(&test.ok(&["search", query, "--semantic", "--json", "--limit", "20"])).unwrap();
        answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let reasons = r["reason"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
                (r["source"]["path"].as_str().unwrap().to_string(), reasons)
            })
            .collect()
    };
    let found = reasons("meadow");
    assert!(
        found.iter().any(|(path, why)| path == "knowledge://wiki/beta" && why.contains(&"backlink".to_string())
            || path == "c.md" && why.contains(&"citation".to_string())),
        "the Beta page (which quotes b.md) or a source it quotes comes in through the graph: {found:?}"
    );
    assert!(
        found.iter().all(|(_, why)| !why.contains(&"fresh_source".to_string())),
        "a first build marks nothing fresh"
    );

    test.write("b.md", "# Beta\n\nBeta stands alone in the meadow, mostly.\n");
    test.build();
    let found = reasons("meadow");
    let fresh: Vec<&String> =
        found.iter().filter(|(_, why)| why.contains(&"fresh_source".to_string())).map(|(path, _)| path).collect();
    assert!(fresh.contains(&&"b.md".to_string()), "{found:?}");
    assert!(!fresh.contains(&&"c.md".to_string()), "{found:?}");
}

/// A chunk whose recorded revision is not its source's current one is never returned: its offsets could
/// point at text that is gone. (A build keeps them equal; the test breaks that on purpose.)
#[test]
fn a_chunk_of_another_revision_is_dropped_and_context_can_ride_along() {
    let test = CliTest::new();
    test.write("a.md", "# Alpha\n\nThe okapi grazes at dawn.\n");
    test.write("b.md", "# Beta\n\nThe okapi sleeps at noon.\n");
    test.build();
    assert_eq!(test.result_paths("okapi").len(), 2);
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    conn.execute(
        "UPDATE chunks SET revision = 'stale' WHERE source_id = (SELECT id FROM sources WHERE path = 'a.md')",
        [],
    )
    .unwrap();
    drop(conn);
    assert_eq!(test.result_paths("okapi"), ["b.md"]);

    let both: serde_json::Value = serde_json::from_str(&test.ok(&["search", "okapi", "--context", "--json"])).unwrap();
    assert_eq!(both["search"]["results"][0]["source"]["path"], "b.md");
    assert_eq!(both["context"]["schema"], "knowledge-agent-context-pack");
    assert!(both["context"]["items"].as_array().unwrap().iter().all(|i| i["source"]["path"] == "b.md"));
}

/// A section copied word for word into another file is returned once, naming the copy in `also_in`.
#[test]
fn copied_text_is_returned_once_and_names_its_copies() {
    let test = CliTest::new();
    let text = "# Okapi\n\nThe okapi grazes at dawn in the forest.\n";
    test.write("a.md", text);
    test.write("copies/a.md", text);
    test.write("b.md", "# Other\n\nAn okapi was seen at noon.\n");
    test.build();
    let answer = test.search("okapi dawn");
    let results = answer["results"].as_array().unwrap();
    let paths: Vec<&str> = results.iter().map(|r| r["source"]["path"].as_str().unwrap()).collect();
    assert_eq!(paths.len(), 2, "{answer:#}");
    assert!(paths.contains(&"b.md"));
    let copied = results.iter().find(|r| r["source"]["path"] != "b.md").unwrap();
    let other = if copied["source"]["path"] == "a.md" { "file://copies/a.md" } else { "file://a.md" };
    assert_eq!(copied["also_in"], serde_json::json!([other]), "{answer:#}");
    assert!(results.iter().find(|r| r["source"]["path"] == "b.md").unwrap().get("also_in").is_none());
}

/// A generated page only restates its sources: it ranks below the best result of every source it quotes,
/// unless the query names a concept the page gathers from several sources, none of them its own
/// document. Chunks a page quotes are marked `cited_by_page`; no factor changes any score.
#[test]
fn pages_follow_the_sources_they_quote_unless_the_query_names_their_concept() {
    let test = CliTest::new();
    test.write("a.md", "# Alpha\n\nAlpha leans on [[Compost]] in the meadow.\n");
    test.write("b.md", "# Beta\n\nBeta turns [[Compost]] in the meadow every spring.\n");
    test.write("c.md", "# Gamma\n\nGamma keeps [[Compost]] warm.\n");
    test.write("d.md", "# Delta\n\nA meadow nobody quotes.\n");
    test.build();
    let ranked = |query: &str| -> Vec<(String, Vec<String>)> {
        test.search(query)["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let reasons = r["reason"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
                (r["source"]["path"].as_str().unwrap().to_string(), reasons)
            })
            .collect()
    };
    let position = |found: &[(String, Vec<String>)], path: &str| {
        found.iter().position(|(p, _)| p == path).unwrap_or_else(|| panic!("{path}: {found:?}"))
    };
    // "compost" is in the page's title, its text and every quote: BM25 alone would rank the page first.
    let found = ranked("compost spring");
    let page = position(&found, "knowledge://wiki/compost");
    assert!(position(&found, "b.md") < page, "{found:?}");
    assert!(found[page].1.contains(&"below_sources".to_string()), "{found:?}");
    assert!(found[position(&found, "b.md")].1.contains(&"cited_by_page".to_string()), "{found:?}");
    assert!(!found[position(&found, "b.md")].1.contains(&"names_concept".to_string()));

    let found = ranked("what is compost");
    // The page (and its index entry, its catalog row) lead: the query names the concept.
    let page = position(&found, "knowledge://wiki/compost");
    assert!(found[..=page].iter().all(|(path, _)| path.starts_with("knowledge://")), "{found:?}");
    assert!(found[page].1.contains(&"names_concept".to_string()), "{found:?}");

    let found = ranked("meadow");
    let unquoted = &found[position(&found, "d.md")];
    assert!(!unquoted.1.contains(&"cited_by_page".to_string()), "{found:?}");
    for result in test.search("meadow")["results"].as_array().unwrap() {
        assert!(result["scores"].get("boost").is_none(), "no score factors: {result:#}");
    }
}

/// A context pack cites a generated page by its own ref (`knowledge://wiki/SLUG@REV#L..`), never as a file.
#[test]
fn a_context_pack_cites_a_generated_page_by_its_own_ref() {
    let test = CliTest::new();
    test.write("docs/a.md", "# Alpha\n\nAlpha leans on [[Compost]] for its footing.\n");
    test.write("docs/b.md", "# Beta\n\nBeta turns [[Compost]] every spring.\n");
    test.build();
    let pack: serde_json::Value =
        serde_json::from_str(&test.ok(&["context", "pack", "compost", "--max-tokens", "2000", "--json"])).unwrap();
    let refs: Vec<&str> = pack["items"].as_array().unwrap().iter().map(|i| i["ref"].as_str().unwrap()).collect();
    assert!(refs.iter().any(|r| r.starts_with("knowledge://wiki/compost@")), "{refs:?}");
    assert!(refs.iter().all(|r| !r.starts_with("file://knowledge://")), "{refs:?}");
    for reference in refs {
        test.ok(&["get", reference]);
    }
}

/// `embeddings search` with no generation says why it cannot answer, and exits 2.
#[test]
fn semantic_search_without_vectors_says_why() {
    let test = CliTest::new();
    test.write("docs/a.md", "# Alpha\n\nText.\n");
    test.build();
    test.fails(&["embeddings", "search", "alpha"], "error: semantic search is unavailable: no embeddings generation");
}

/// `get file://PATH@REV#Lstart-Lend` (how packs and answers cite) returns those lines, from the indexed
/// chunks, and says when the cited revision is not the current one.
#[test]
fn get_with_a_line_range_returns_those_lines() {
    let test = CliTest::new();
    let text: String = (1..=40).map(|n| format!("Line {n} of the guide.\n\n")).collect();
    test.write("docs/guide.md", format!("# Guide\n\n{text}"));
    test.write("kc.toml", "version = 1\n[chunking]\ntarget_bytes = 200\noverlap_bytes = 40\n");
    test.build();
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let revision: String =
        conn.query_row("SELECT revision FROM sources WHERE path = 'docs/guide.md'", [], |r| r.get(0)).unwrap();
    let reference = format!("file://docs/guide.md@{}#L5-L25", &revision[..12]);
    let got: serde_json::Value = serde_json::from_str(&test.ok(&["get", &reference, "--json"])).unwrap();
    let lines = &got["lines"];
    assert_eq!((lines["start_line"].as_u64(), lines["end_line"].as_u64()), (Some(5), Some(25)));
    let file = std::fs::read_to_string(test.path("docs/guide.md")).unwrap();
    let expected: String = file.split_inclusive('\n').skip(4).take(21).collect();
    assert_eq!(lines["text"].as_str().unwrap(), expected, "the lines, spanning several chunks");
    assert_eq!(lines["stale"], false);
    let older: serde_json::Value =
        serde_json::from_str(&test.ok(&["get", "file://docs/guide.md@0123456789ab#L5-L6", "--json"])).unwrap();
    assert_eq!(older["lines"]["stale"], true);
    let human = test.ok(&["get", &reference]);
    assert!(human.contains("file://docs/guide.md#L5-L25") && human.contains("Line 2 of the guide."), "{human}");
    assert!(human.contains("Line 12 of the guide.") && !human.contains("Line 13 of the guide."), "{human}");
}
