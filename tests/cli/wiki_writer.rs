//! The `[wiki] writer`: a provider (here a fake OpenAI-compatible server on loopback, which counts its
//! calls) writes each page's summary from the page's numbered quotes; every sentence is checked against the
//! quotes it cites, writings are cached by what they were written from, and a budget or a failure leaves
//! pages owed to the next build.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::fake_writer::{INVENTED, fake_writer, writer_server};
use crate::{CliTest, stderr, stdout};

/// Three notes about meadow stones: Alpha and Beta each get a page quoting two sources; Gamma is linked
/// by one only.
fn meadow(port: u16, budget: &str) -> CliTest {
    let test = CliTest::new();
    test.write(
        "kc.toml",
        format!(
            "version = 1\n[wiki]\nwriter = \"p\"\n{budget}\n[providers.p]\nkind = \"openai-compatible\"\n\
             base_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\nmax_retries = 0\ntimeout_seconds = 5\n\
             prices = {{ input = 2.0, output = 8.0 }}\n"
        ),
    );
    test.write(
        "a.md",
        "# Alpha\n\nAlpha sorts the meadow stones by weight. Alpha leans on [[Beta]] for its footing.\n",
    );
    test.write("b.md", "# Beta\n\nBeta weighs each meadow stone on a scale. Beta stands alone in the meadow.\n");
    test.write("c.md", "# Gamma\n\nGamma lifts the stones that [[Alpha]] sorted. Gamma reads what [[Beta]] weighed.\n");
    test
}

fn page(test: &CliTest, slug: &str) -> String {
    std::fs::read_to_string(test.path(&format!(".hasna/knowledge/wiki/general/{slug}.md"))).unwrap()
}

/// The provider calls the run ledger holds, by page.
fn ledger_calls(test: &CliTest) -> Vec<(String, Value)> {
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let mut statement = conn
        .prepare("SELECT path, detail FROM run_events WHERE kind = 'provider_usage' ORDER BY run_id, path")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, serde_json::from_str(&row.get::<_, String>(1)?).unwrap())))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_provider_writes_each_page_once_and_only_sentences_its_quotes_support_are_shown() {
    let (port, calls) = fake_writer("");
    let test = meadow(port, "");
    let first = test.build();
    let rendered = first["pages"]["rendered"].as_u64().unwrap();
    let writer = &first["wiki_writer"];
    assert_eq!(rendered, 2, "Alpha and Beta: {first:#}");
    assert_eq!(writer["calls"], rendered, "a cold build writes every page: {writer:#}");
    assert_eq!(calls.load(Ordering::SeqCst) as u64, rendered);
    assert_eq!((writer["written"].clone(), writer["owed"].clone()), (2.into(), 0.into()), "{writer:#}");
    assert_eq!(writer["sentences_dropped"], 2, "the invented sentence, once a page: {writer:#}");
    assert_eq!(writer["sentences_supported"], 5, "Alpha's two quotes and Beta's three: {writer:#}");
    assert!((writer["cost_usd"].as_f64().unwrap() - 2.0 * 0.00036).abs() < 1e-12, "{writer:#}");

    let alpha = page(&test, "alpha");
    assert!(alpha.contains("written_by: \"p/m\""), "{alpha}");
    assert!(
        alpha.contains("Alpha sorts the meadow stones by weight.[^1]"),
        "a written sentence cites its quote: {alpha}"
    );
    assert!(!alpha.contains(INVENTED), "an unsupported sentence is dropped: {alpha}");
    assert!(alpha.contains("> Alpha sorts the meadow stones by weight."), "the quotes stay: {alpha}");

    // Every call is in the run ledger with its usage.
    let ledger = ledger_calls(&test);
    let pages: Vec<&str> = ledger.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(pages, ["knowledge://wiki/alpha", "knowledge://wiki/beta"]);
    assert_eq!(ledger[0].1["input_tokens"], 100);
    assert_eq!((ledger[0].1["sentences"].clone(), ledger[0].1["supported"].clone()), (3.into(), 2.into()));

    // A no-op build calls no one; nor does a fresh process that plans again.
    let second = test.build();
    assert_eq!(second["wrote"], false);
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // An edit to a source only Beta's page quotes writes Beta's page alone.
    test.write("b.md", "# Beta\n\nBeta weighs each meadow stone on a brass scale. Beta stands alone in the meadow.\n");
    let third = test.build();
    assert_eq!(third["wiki_writer"]["calls"], 1, "{:#}", third["wiki_writer"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(page(&test, "beta").contains("Beta weighs each meadow stone on a brass scale.[^1]"));

    // The cache keeps the writings pages name, no others (as the vector cache keeps vectors).
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let kept: i64 = conn.query_row("SELECT count(*) FROM page_writings", [], |row| row.get(0)).unwrap();
    assert_eq!(kept, 2);
    assert_eq!(ledger_calls(&test).len(), 3, "three calls, three ledger entries");
}

#[test]
fn a_writing_with_too_few_supported_sentences_leaves_the_extractive_summary() {
    // The model writes one sentence Beta's quotes support, and one they do not: too few.
    let (port, calls) = fake_writer("Beta");
    let test = meadow(port, "");
    let first = test.build();
    let writer = &first["wiki_writer"];
    assert_eq!(calls.load(Ordering::SeqCst) as u64, writer["calls"].as_u64().unwrap());
    assert_eq!((writer["written"].clone(), writer["refused"].clone()), (1.into(), 1.into()), "{writer:#}");
    let beta = page(&test, "beta");
    assert!(!beta.contains("written_by:") && !beta.contains(INVENTED), "{beta}");
    assert!(beta.contains("> Beta weighs each meadow stone on a scale."), "the extractive page: {beta}");
    assert!(page(&test, "alpha").contains("written_by:"));

    // A refused writing is cached like an accepted one: the next build does not ask again.
    let before = calls.load(Ordering::SeqCst);
    test.write("kc.toml", std::fs::read_to_string(test.path("kc.toml")).unwrap() + "\n");
    test.build();
    assert_eq!(calls.load(Ordering::SeqCst), before);
}

#[test]
fn the_budget_leaves_the_rest_owed_to_the_next_build_and_check_says_what_it_would_cost() {
    let (port, calls) = fake_writer("");
    let test = meadow(port, "max_pages = 1");
    let first = test.build();
    assert_eq!(
        (first["wiki_writer"]["calls"].clone(), first["wiki_writer"]["owed"].clone()),
        (1.into(), 1.into()),
        "{:#}",
        first["wiki_writer"]
    );
    let owed: Vec<String> =
        ["alpha", "beta"].iter().map(|slug| page(&test, slug)).filter(|text| !text.contains("written_by:")).collect();
    assert_eq!(owed.len(), 1, "one page keeps its extractive summary for now");

    let output = test.run(&["build", "--check", "--json"]);
    assert_eq!(output.status.code(), Some(1), "a build owes a page: {}", stdout(&output));
    let check: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (check["writing"]["owed"].clone(), check["writing"]["pages"].clone()),
        (1.into(), 1.into()),
        "{check:#}"
    );
    let estimate = check["writing"]["estimated_cost_usd"].as_f64().unwrap();
    assert!((estimate - 0.00036).abs() < 1e-9, "one page at the cached writings' mean usage: {check:#}");
    assert!(
        stdout(&test.run(&["build", "--check"]))
            .contains("wiki writer (p/m): up to 1 pages written (1 owed), about $0.0004")
    );

    let second = test.build();
    assert_eq!((second["wiki_writer"]["calls"].clone(), second["wiki_writer"]["owed"].clone()), (1.into(), 0.into()));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(["alpha", "beta"].iter().all(|slug| page(&test, slug).contains("written_by:")));
    let check: Value = serde_json::from_str(&test.ok(&["build", "--check", "--json"])).unwrap();
    assert_eq!(check["up_to_date"], true, "{check:#}");
    assert_eq!(test.build()["wrote"], false);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_provider_that_fails_leaves_every_page_extractive_and_owed() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let test = meadow(port, "");
    let output = test.run(&["build", "--json"]);
    assert!(output.status.success(), "a writer failure does not fail the build: {}", stderr(&output));
    assert!(stderr(&output).contains("warning: the wiki writer stopped (2 pages keep"), "{}", stderr(&output));
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((summary["wiki_writer"]["calls"].clone(), summary["wiki_writer"]["owed"].clone()), (0.into(), 2.into()));
    let alpha = page(&test, "alpha");
    assert!(!alpha.contains("written_by:") && alpha.contains("> Alpha sorts"), "{alpha}");
    // The one call made, which failed, is in the run ledger.
    let failed: Vec<String> = test.column("SELECT detail FROM run_events WHERE kind = 'provider_error'");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("\"purpose\":\"wiki_page\"") && failed[0].contains("\"error\""), "{failed:?}");
    let check = test.run(&["build", "--check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(stdout(&check).contains("the wiki writer owes 2 pages a written summary"), "{}", stdout(&check));
}

#[test]
fn a_writer_that_names_no_provider_is_a_configuration_error() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[wiki]\nwriter = \"nope\"\n");
    test.write("a.md", "# A\n\ntext\n");
    let error = test.fails(&["build"], "there is no `[providers.nope]`");
    assert!(error.contains("kc.toml:3"), "{error}");
    test.write("kc.toml", "version = 1\n[wiki]\nmax_cost_usd = -1.0\n");
    test.fails(&["build"], "`max_cost_usd` must be a number of dollars");
    test.write(
        "kc.toml",
        "version = 1\n[wiki]\nwriter = \"p\"\nmax_cost_usd = 1.0\n[providers.p]\nkind = \"openai-compatible\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    );
    test.fails(&["build"], "`max_cost_usd` needs the writer's prices");
}

#[test]
fn a_hostile_model_can_write_neither_markup_nor_terminal_controls_nor_without_end() {
    // Supported sentences carrying HTML, a link, a footnote of their own and terminal escapes.
    let (port, _) = writer_server(|_| {
        "<script>steal()</script> Alpha sorts the meadow stones by weight [1]. \u{1b}[2J Alpha leans on Beta \
         for its footing [^9] [1]. [Beta](javascript:alert(1)) weighs each meadow stone on a scale [2]."
            .to_string()
    });
    let test = meadow(port, "");
    test.build();
    // Alpha's quotes support its three sentences (Beta's support none, so Beta's writing is refused).
    for slug in ["alpha", "beta"] {
        let page = page(&test, slug);
        assert_eq!(page.contains("written_by:"), slug == "alpha", "{page}");
        // Shown as text: escaped, so that no renderer takes it for HTML, a link or a footnote.
        let unescaped = page.replace("\\<", "").replace("\\[", "").replace("\\]", "");
        for hostile in ["<script>", "\u{1b}", "[^9]", "](javascript"] {
            assert!(!unescaped.contains(hostile), "{hostile:?} reached the page: {page}");
        }
    }
    let alpha = page(&test, "alpha");
    assert!(alpha.contains("\\<script>steal()\\</script> Alpha sorts"), "{alpha}");
    assert!(alpha.contains(".[^1]\n\n*Written by p/m"), "the note is a paragraph of its own: {alpha}");

    // A model that never stops: the build stops reading at the cap and keeps the extractive summary.
    let (port, _) = writer_server(|_| "Alpha.sorts.the.meadow.stones.by.weight.".repeat(60_000));
    let test = meadow(port, "");
    let output = test.run(&["build", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("wrote more than 1048576 bytes"), "{}", stderr(&output));
    assert!(!page(&test, "alpha").contains("written_by:"));
}
