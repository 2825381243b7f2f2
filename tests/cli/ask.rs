//! `knowledge ask`: an extractive answer whose every sentence is cited, "not found" instead of a guess,
//! and the run recorded in the index without showing up as a build.

use serde_json::Value;

use crate::CliTest;

fn fixture() -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped.\n\n\
         ## Borrowing\n\nReferences borrow values without taking ownership of them.\n",
    );
    test.write("docs/cooking.md", "# Cooking\n\nA risotto needs stock added one ladle at a time.\n");
    test.build();
    test
}

fn ask(test: &CliTest, question: &str) -> Value {
    serde_json::from_str(&test.ok(&["ask", question, "--json"])).unwrap()
}

#[test]
fn an_answer_quotes_the_sources_and_cites_every_sentence() {
    let test = fixture();
    let answer = ask(&test, "what happens when the owner goes out of scope?");
    assert_eq!(answer["schema"], "knowledge-answer");
    assert_eq!(answer["found"], true);
    let text = answer["answer"].as_str().unwrap();
    assert!(text.starts_with("When the owner goes out of scope, the value is dropped. [1]"), "{text}");
    let citation = &answer["citations"][0];
    assert_eq!(citation["path"], "docs/ownership.md");
    // The citation resolves to the source, and the quoted sentence is in the lines it names.
    let reference = citation["ref"].as_str().unwrap();
    let resolved: Value = serde_json::from_str(&test.ok(&["get", reference, "--json"])).unwrap();
    assert_eq!(resolved["source"]["path"], "docs/ownership.md");
    let lines = reference.rsplit_once("#L").unwrap().1;
    let (first, last) = lines.split_once("-L").unwrap();
    let (first, last): (usize, usize) = (first.parse().unwrap(), last.parse().unwrap());
    let file = std::fs::read_to_string(test.path("docs/ownership.md")).unwrap();
    let cited: Vec<&str> = file.lines().skip(first - 1).take(last - first + 1).collect();
    assert!(cited.join(" ").contains("the value is dropped"), "{cited:?}");
    assert!(!text.contains("risotto"));
}

#[test]
fn a_question_nothing_answers_gets_not_found() {
    let test = fixture();
    let answer = ask(&test, "what is the airspeed velocity of an unladen swallow");
    assert_eq!(answer["found"], false);
    assert_eq!(answer["answer"], "Not found in the knowledge base.");
    assert_eq!(answer["citations"], serde_json::json!([]));
}

#[test]
fn the_run_is_recorded_with_its_tool_call_sources_and_answer_but_is_not_a_build() {
    let test = fixture();
    let answer = ask(&test, "what do references borrow?");
    let run_id = answer["run_id"].as_str().unwrap().to_string();
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let kind: String = conn.query_row("SELECT kind FROM runs WHERE id = ?1", [&run_id], |r| r.get(0)).unwrap();
    assert_eq!(kind, "ask");
    let events: Vec<(String, String)> = conn
        .prepare("SELECT kind, path FROM run_events WHERE run_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([&run_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(events.first().unwrap(), &("tool_call".to_string(), "knowledge_context_pack".to_string()));
    assert!(events.contains(&("ask_source".to_string(), "docs/ownership.md".to_string())), "{events:?}");
    assert_eq!(events.last().unwrap().0, "ask_answer");
    drop(conn);
    let runs: Value = serde_json::from_str(&test.ok(&["list", "runs", "--json"])).unwrap();
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1, "only the build is a build");
    assert_eq!(test.build()["wrote"], false, "asking changes nothing a build derives");
}

/// A recorded answer filed as a wiki page: a dry run first, written only when approved; then the build
/// indexes it like a hand-written page, and lint checks its citation against the source.
#[test]
fn an_answer_is_filed_as_a_wiki_page_only_when_approved() {
    let test = fixture();
    let answer = ask(&test, "what happens when the owner goes out of scope?");
    let run = answer["run_id"].as_str().unwrap();
    let page = ".hasna/knowledge/wiki/answers/what-happens-when-the-owner-goes-out-of-scope.md";

    let dry = test.ok(&["wiki", "file-answer", run]);
    assert!(dry.contains(&format!("would write {page}")), "{dry}");
    assert!(dry.contains("the value is dropped.[^1]"), "{dry}");
    assert!(!test.path(page).exists(), "a dry run writes nothing");

    let wrote = test.ok(&["wiki", "file-answer", run, "--approve-write"]);
    assert!(wrote.contains(&format!("wrote {page}")), "{wrote}");
    let text = std::fs::read_to_string(test.path(page)).unwrap();
    let reference = answer["citations"][0]["ref"].as_str().unwrap();
    assert!(text.contains(&format!("[^1]: [Ownership](../../../../docs/ownership.md), {reference}")), "{text}");

    // The next build indexes it as a source, and lint finds it cited.
    let summary = test.build();
    assert_eq!(summary["sources"]["added"], 1, "{summary}");
    assert!(test.result_paths("the owner goes out of scope").iter().any(|path| path == page));
    let lint = test.ok(&["lint", "--format", "json"]);
    assert!(!lint.contains("missing_citation") && !lint.contains("stale_citation"), "{lint}");

    // A page already there (filed before, maybe edited by hand since) is replaced only with --replace
    // (issue 40, item 17).
    std::fs::write(test.path(page), "# Edited by hand\n").unwrap();
    let refused = test.fails(&["wiki", "file-answer", run, "--approve-write"], "already exists");
    assert!(refused.contains(page) && refused.contains("--replace"), "{refused}");
    assert_eq!(std::fs::read_to_string(test.path(page)).unwrap(), "# Edited by hand\n");
    test.ok(&["wiki", "file-answer", run, "--approve-write", "--replace"]);
    assert_eq!(std::fs::read_to_string(test.path(page)).unwrap(), text);
    // A linked `wiki/answers` would put the page outside the project (item 7): refused, nothing written.
    let elsewhere = tempfile::tempdir().unwrap();
    let answers = test.path(".hasna/knowledge/wiki/answers");
    std::fs::rename(&answers, test.path("answers.moved")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &answers).unwrap();
    test.fails(&["wiki", "file-answer", run, "--approve-write", "--replace"], "symbolic link");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing written through the link");
    std::fs::remove_file(&answers).unwrap();
    std::fs::rename(test.path("answers.moved"), &answers).unwrap();

    // Once the source changes, the filed page's citation is stale.
    test.write("docs/ownership.md", "# Ownership\n\nEach value in Rust has an owner. Scope ends, drop runs.\n");
    test.build();
    let output = test.run(&["lint", "--format", "json"]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("stale_citation"));

    // Only a found answer of an ask run can be filed.
    let unanswered = ask(&test, "what is the capital of France?");
    test.fails(&["wiki", "file-answer", unanswered["run_id"].as_str().unwrap()], "found no answer");
    test.fails(&["wiki", "file-answer", "run-nope"], "no ask run `run-nope`");
}

#[test]
fn a_word_that_frames_the_question_does_not_sink_it_and_a_list_of_topics_is_no_answer() {
    let test = CliTest::new();
    test.write(
        "docs/variables.md",
        "# Variables\n\nThis chapter covers:\n\n- Shadowing and mutable variables\n- Constants and statics\n\
         - Data types in detail\n\n## Shadowing\n\nShadowing declares a new variable with the same name, while a \
         mutable variable changes the value of the one it has.\n",
    );
    test.write("docs/cooking.md", "# Cooking\n\nA risotto needs stock added one ladle at a time.\n");
    test.build();
    // No document says "versus": it frames the question, and an answer need not hold it.
    let answer = ask(&test, "shadowing versus a mutable variable");
    assert_eq!(answer["found"], true, "{answer}");
    let text = answer["answer"].as_str().unwrap();
    assert!(text.starts_with("Shadowing declares a new variable"), "{text}");
    assert!(!text.contains("- Shadowing and mutable variables"), "the overview's list names topics: {text}");
    // A word that names the subject still decides: nothing here is about a mutex.
    assert_eq!(ask(&test, "shadowing versus a mutex")["found"], false);
}

#[test]
fn a_section_that_answers_in_other_words_is_answered_with_its_first_sentence() {
    let test = CliTest::new();
    test.write(
        "docs/markdown.md",
        "# Markdown\n\n## Admonition boxes\n\nA callout is a special block that highlights important information. \
         It is written as a quote with a tag on its first line.\n\n```md\n> [!NOTE]\n> Some note.\n```\n",
    );
    test.write("docs/cooking.md", "# Cooking\n\nA risotto needs stock added one ladle at a time.\n");
    test.build();
    // The section's heading names the question's topic; none of its sentences does, so its first one answers.
    let answer = ask(&test, "admonition boxes");
    assert_eq!(answer["found"], true, "{answer}");
    assert_eq!(answer["answer"], "A callout is a special block that highlights important information. [1]");
    assert_eq!(answer["citations"][0]["path"], "docs/markdown.md");
    // A topic the section does not name is still not found.
    assert_eq!(ask(&test, "admonition colours")["found"], false);
}

#[test]
fn the_human_answer_names_its_run_for_filing() {
    let test = fixture();
    let out = test.ok(&["ask", "what happens when the owner goes out of scope?"]);
    let last = out.lines().last().unwrap();
    assert!(last.starts_with("run ") && last.contains("knowledge wiki file-answer"), "{out}");
    let run_id = last.split_whitespace().nth(1).unwrap();
    let filed = test.ok(&["wiki", "file-answer", run_id, "--json"]);
    assert!(filed.contains("what happens when the owner goes out of scope"), "the named run is the answer's: {filed}");
}

#[test]
fn asks_are_listed_apart_from_builds() {
    let test = fixture();
    ask(&test, "what happens when the owner goes out of scope?");
    ask(&test, "what is the airspeed velocity of an unladen swallow");
    let listing: Value = serde_json::from_str(&test.ok(&["list", "runs", "--kind", "ask", "--json"])).unwrap();
    let runs = listing["runs"].as_array().unwrap();
    let asked: Vec<(&str, bool)> = runs
        .iter()
        .map(|run| (run["summary"]["question"].as_str().unwrap(), run["summary"]["found"] == true))
        .collect();
    assert_eq!(
        asked,
        [
            ("what is the airspeed velocity of an unladen swallow", false),
            ("what happens when the owner goes out of scope?", true)
        ],
        "newest first"
    );
    let human = test.ok(&["list", "runs", "--kind", "ask"]);
    assert!(
        human.lines().next().unwrap().ends_with("not found  what is the airspeed velocity of an unladen swallow"),
        "{human}"
    );
    let builds: Value = serde_json::from_str(&test.ok(&["list", "runs", "--json"])).unwrap();
    assert!(builds["runs"].as_array().unwrap().iter().all(|run| run["summary"]["question"].is_null()), "{builds}");
    test.fails(&["list", "sources", "--kind", "ask"], "`--kind ask` lists runs");
}

fn pack_updates(test: &CliTest, args: &[&str]) -> Vec<Value> {
    let mut args = args.to_vec();
    args.push("--json");
    let pack: Value = serde_json::from_str(&test.ok(&args)).unwrap();
    pack["suggested_wiki_updates"].as_array().unwrap().clone()
}

#[test]
fn a_pack_proposes_a_page_no_page_covers_and_a_refresh_when_a_pages_sources_change() {
    let test = fixture();
    // The sources answer, and no page covers them (one source per concept: the wiki makes no pages here).
    let updates = pack_updates(&test, &["context", "pack", "owner goes out of scope"]);
    let create = updates.iter().find(|u| u["action"] == "create_page").expect("a page is proposed");
    assert_eq!(create["sources"], serde_json::json!(["file://docs/ownership.md"]), "{create}");
    assert!(create["command"].as_str().unwrap().starts_with("knowledge ask 'owner goes out of scope'"));
    let gap = pack_updates(&test, &["context", "pack", "zeppelin maintenance schedule"]);
    assert_eq!(gap.iter().map(|u| u["action"].as_str().unwrap()).collect::<Vec<_>>(), ["fill_gap"]);
    // Excerpts that match a word but do not answer (as `ask` judges them) are a gap too, not a page to write.
    let question = "who is the owner of the billing service?";
    assert_eq!(ask(&test, question)["found"], false);
    let pack: Value = serde_json::from_str(&test.ok(&["context", "pack", question, "--json"])).unwrap();
    assert!(!pack["items"].as_array().unwrap().is_empty(), "{pack}");
    assert_eq!(pack["suggested_wiki_updates"][0]["action"], "fill_gap", "{pack}");

    // Filed as a page, the answer is covered: nothing to propose. Once its source changes, a refresh.
    let run = ask(&test, "what happens when the owner goes out of scope?")["run_id"].as_str().unwrap().to_string();
    test.ok(&["wiki", "file-answer", &run, "--approve-write"]);
    test.build();
    let covered = pack_updates(&test, &["context", "pack", "what happens when the owner goes out of scope"]);
    assert!(covered.is_empty(), "{covered:?}");
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped \
         and its memory freed.\n",
    );
    test.build();
    let changed = pack_updates(&test, &["context", "pack", "what happens when the owner goes out of scope"]);
    let refresh = changed.iter().find(|u| u["action"] == "refresh_page").expect("a refresh is proposed");
    assert_eq!(
        refresh["page"], "file://.hasna/knowledge/wiki/answers/what-happens-when-the-owner-goes-out-of-scope.md",
        "{refresh}"
    );
    assert_eq!(refresh["sources"], serde_json::json!(["file://docs/ownership.md"]));
}

#[test]
fn a_loop_reads_earlier_answers_and_is_told_to_file_a_question_asked_twice() {
    let test = fixture();
    test.write(
        "kc.toml",
        "version = 1\n[project]\nname = \"fixture\"\n[permissions.principals]\nchef = [\"kitchen\"]\n",
    );
    test.write(
        "docs/cooking.md",
        "---\nlabels: kitchen\n---\n# Cooking\n\nA risotto needs stock added one ladle at a time.\n",
    );
    test.build();
    let first = ask(&test, "what happens when the owner goes out of scope?")["run_id"].as_str().unwrap().to_string();
    let second = ask(&test, "What happens when the owner goes out of scope")["run_id"].as_str().unwrap().to_string();
    let cooking: Value =
        serde_json::from_str(&test.ok(&["--as", "chef", "ask", "how is stock added to a risotto?", "--json"])).unwrap();
    assert_eq!(cooking["found"], true, "{cooking}");

    let pack: Value = serde_json::from_str(&test.ok(&[
        "proposals",
        "context",
        "--from",
        "loops",
        "--topic",
        "owner out of scope",
        "--json",
    ]))
    .unwrap();
    assert_eq!(
        (pack["schema"].as_str(), pack["schema_version"].as_u64()),
        (Some("knowledge-agent-context-pack"), Some(2))
    );
    let refs: Vec<&str> = pack["items"].as_array().unwrap().iter().map(|i| i["ref"].as_str().unwrap()).collect();
    assert_eq!(refs, [format!("knowledge://run/{second}"), format!("knowledge://run/{first}")], "{pack}");
    let item = &pack["items"][0];
    assert_eq!(item["title"], "What happens when the owner goes out of scope");
    let text = item["text"].as_str().unwrap();
    assert!(text.contains("the value is dropped") && text.contains("[1] file://docs/ownership.md@"), "{text}");
    assert!(!text.contains("References borrow values"), "no cited text beyond the answer: {text}");
    let file = &pack["suggested_wiki_updates"][0];
    assert_eq!(file["action"], "file_answer", "{pack}");
    assert_eq!(file["command"], format!("knowledge wiki file-answer {second}"));
    assert_eq!(file["runs"], serde_json::json!([second, first]));

    // The answer citing what the default principal may not read is left out of its pack; the chef's has it.
    let topic = ["proposals", "context", "--topic", "risotto stock", "--json"];
    let hidden: Value = serde_json::from_str(&test.ok(&topic)).unwrap();
    assert!(hidden["items"].as_array().unwrap().is_empty(), "{hidden}");
    let chef: Value = serde_json::from_str(&test.ok(&[&["--as", "chef"][..], &topic[..]].concat())).unwrap();
    assert_eq!(chef["items"].as_array().unwrap().len(), 1, "{chef}");
}
