//! The wiki compiler across process runs: pages re-rendered only where an edit reaches, files left alone
//! when unchanged, removals logged, drift caught by `build --check`, pages searchable.

use std::time::SystemTime;

use serde_json::json;

use crate::{CliTest, stderr, stdout};

const ALPHA: &str = ".hasna/knowledge/wiki/general/alpha.md";
const BETA: &str = ".hasna/knowledge/wiki/general/beta.md";

/// Alpha and Beta are each linked from another source, so each gets a page; Gamma is linked by none.
fn fixture() -> CliTest {
    let test = CliTest::new();
    test.write("a.md", "# Alpha\n\nAlpha leans on [[Beta]] for its footing.\n");
    test.write("b.md", "# Beta\n\nBeta stands alone in the meadow.\n");
    test.write("c.md", "# Gamma\n\nGamma cites [[Beta]] and [[Alpha]] in one breath.\n");
    test
}

fn modified(path: &std::path::Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn day_log(test: &CliTest) -> String {
    let mut logs = Vec::new();
    for year in std::fs::read_dir(test.path(".hasna/knowledge/logs")).unwrap() {
        for month in std::fs::read_dir(year.unwrap().path()).unwrap() {
            for day in std::fs::read_dir(month.unwrap().path()).unwrap() {
                logs.push(std::fs::read_to_string(day.unwrap().path()).unwrap());
            }
        }
    }
    logs.concat()
}

#[test]
fn an_edit_rerenders_only_the_pages_that_quote_it_and_leaves_other_files_alone() {
    let test = fixture();
    let first = test.build();
    assert_eq!(first["pages"], json!({"rendered": 2, "written": 2, "unchanged": 0, "compared": 2, "deleted": 0}));
    assert_eq!(first["sources"]["scanned"], 3);
    let alpha_mtime = modified(&test.path(ALPHA));
    let root_mtime = modified(&test.path(".hasna/knowledge/indexes/root.md"));

    let second = test.build();
    assert_eq!(second["wrote"], false);
    assert_eq!(second["sources"]["scanned"], 3, "generated pages are not sources");
    assert_eq!(
        second["pages"],
        json!({"rendered": 0, "written": 0, "unchanged": 2, "compared": 0, "deleted": 0}),
        "a no-op build reads no generated file back: the stat cache vouches for them"
    );

    test.write("b.md", "# Beta\n\nBeta stands alone in the meadow, mostly.\n");
    let third = test.build();
    assert_eq!(third["pages"], json!({"rendered": 1, "written": 1, "unchanged": 1, "compared": 1, "deleted": 0}));
    assert_eq!(
        third["shards"]["rendered"], 2,
        "the section's Markdown (Beta's new summary) and JSON (its new hash); the root is unchanged"
    );
    assert_eq!(modified(&test.path(ALPHA)), alpha_mtime, "Alpha's page does not quote b.md");
    assert_eq!(modified(&test.path(".hasna/knowledge/indexes/root.md")), root_mtime);
    let beta = std::fs::read_to_string(test.path(BETA)).unwrap();
    assert!(beta.contains("> Beta stands alone in the meadow, mostly."), "{beta}");
    assert!(beta.contains("generated: true") && beta.contains("ref: \"file://b.md\""), "{beta}");
    // Claim history holds the sources' lines, not the pages' (whose quotes change with every cited revision).
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let recorded: Vec<String> = conn
        .prepare("SELECT DISTINCT path FROM passage_origins ORDER BY path")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(recorded, ["a.md", "b.md", "c.md"], "{recorded:?}");
}

#[test]
fn deleting_a_source_removes_the_pages_it_alone_kept_and_logs_it() {
    let test = fixture();
    test.build();
    assert!(test.path(ALPHA).is_file());
    test.remove("c.md");
    let summary = test.build();
    assert_eq!(summary["pages"]["deleted"], 1, "Alpha was linked only from c.md");
    assert_eq!(summary["pages"]["rendered"], 1, "Beta no longer quotes c.md");
    assert!(!test.path(ALPHA).exists());
    let beta = std::fs::read_to_string(test.path(BETA)).unwrap();
    assert!(!beta.contains("c.md"), "{beta}");

    let removal = day_log(&test)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["artifact"] == "wiki/general/alpha.md" && record["new_hash"].is_null())
        .expect("the log records the removal");
    assert!(removal["old_hash"].is_string());
    assert_eq!(removal["run_id"], summary["run_id"]);
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT count(*) FROM citations WHERE path = 'c.md'"), 0);
    assert_eq!(count("SELECT count(*) FROM wiki_pages WHERE slug = 'alpha'"), 0);
    assert_eq!(count("SELECT count(*) FROM sources WHERE path = 'knowledge://wiki/alpha'"), 0);
    assert_eq!(
        count("SELECT count(*) FROM run_events WHERE kind = 'page_removed' AND path = 'knowledge://wiki/alpha'"),
        1
    );
}

#[test]
fn build_check_reports_a_hand_edited_page_and_a_build_restores_it() {
    let test = fixture();
    test.build();
    assert_eq!(test.run(&["build", "--check"]).status.code(), Some(0));
    let original = std::fs::read_to_string(test.path(BETA)).unwrap();
    test.write(BETA, "# Beta\n\nEdited by hand.\n");
    std::fs::remove_file(test.path(".hasna/knowledge/indexes/machine/general.json")).unwrap();

    let check = test.run(&["build", "--check"]);
    assert_eq!(check.status.code(), Some(1));
    let out = stdout(&check);
    assert!(out.contains("modified: wiki/general/beta.md (generated)"), "{out}");
    assert!(out.contains("missing: indexes/machine/general.json (generated)"), "{out}");

    let summary = test.build();
    assert_eq!(summary["wrote"], false, "the index is current; only files are restored");
    assert_eq!(summary["pages"]["written"], 1);
    assert_eq!(summary["pages"]["compared"], 1, "only the touched page is read back");
    assert_eq!(summary["shards"]["written"], 1);
    assert_eq!(std::fs::read_to_string(test.path(BETA)).unwrap(), original);
    assert_eq!(test.run(&["build", "--check"]).status.code(), Some(0));

    // The stat cache is only a cache: garbage in it, or no cache at all, costs reads, never a wrong file.
    // (Without the cache's record, only a file that says it was generated is replaced: this edit keeps the
    // page's front matter.)
    test.write(".hasna/knowledge/artifacts.stat", "wiki/general/beta.md\tnot a number\n\u{0}garbage");
    test.write(BETA, format!("{original}\nA line added by hand.\n"));
    let summary = test.build();
    assert_eq!((summary["pages"]["compared"].as_u64(), summary["pages"]["written"].as_u64()), (Some(2), Some(1)));
    assert_eq!(std::fs::read_to_string(test.path(BETA)).unwrap(), original);
    std::fs::remove_file(test.path(".hasna/knowledge/artifacts.stat")).unwrap();
    assert_eq!(test.build()["pages"]["compared"], 2);
    assert_eq!(test.build()["pages"]["compared"], 0, "the cache is written again");
}

#[test]
fn pages_are_searchable_as_wiki_page_results_and_resolve_by_slug() {
    let test = fixture();
    test.build();
    let results =
        serde_json::from_str::<serde_json::Value>(&test.ok(&["search", "meadow", "--kind", "wiki_page", "--json"]))
            .unwrap();
    let results = results["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| r["kind"] == "wiki_page"), "{results:#?}");
    assert_eq!(results[0]["source"]["uri"], "knowledge://wiki/beta");
    let sources_only = test.ok(&["search", "meadow", "--kind", "source_chunk", "--json"]);
    assert!(!sources_only.contains("knowledge://wiki/"), "{sources_only}");

    let page: serde_json::Value = serde_json::from_str(&test.ok(&["get", "beta", "--json"])).unwrap();
    assert_eq!(page["source"]["uri"], "knowledge://wiki/beta", "{page:#}");
    assert_eq!(page["source"]["title"], "Beta");
    let chunk_id = page["source"]["chunks"][0]["id"].as_str().unwrap().to_string();
    let chunk: serde_json::Value = serde_json::from_str(&test.ok(&["get", &chunk_id, "--json"])).unwrap();
    assert_eq!(chunk["chunk"]["source"]["uri"], "knowledge://wiki/beta", "{chunk:#}");
}

#[test]
fn a_template_error_names_the_template_and_line_and_writes_nothing() {
    let test = fixture();
    test.write("kc.toml", "version = 1\n[wiki]\ntemplates_dir = \"tpl\"\n");
    test.write("tpl/page.md.j2", "# {{ title }}\n{% for x in %}\n");
    let output = test.run(&["build"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("page.md.j2") && message.contains("line 2"), "{message}");
    assert!(!test.index().exists());
}

#[test]
fn turning_the_wiki_off_removes_what_it_generated() {
    let test = fixture();
    test.build();
    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n[wiki]\nenabled = false\n");
    let summary = test.build();
    assert_eq!(summary["pages"]["deleted"], 2);
    assert_eq!(summary["sources"]["changed"], 0, "no source is re-derived");
    assert!(!test.path(ALPHA).exists() && !test.path(BETA).exists());
    assert!(!test.path(".hasna/knowledge/indexes/root.md").exists());
    assert!(!test.path(".hasna/knowledge/schemas/v1.md").exists());
    assert_eq!(test.result_paths("meadow"), ["b.md"]);
}

#[test]
fn an_edit_that_changes_no_signal_of_an_unlisted_source_leaves_the_wiki_alone() {
    let test = fixture();
    test.write("d.md", "# Delta\n\nDelta is off on its own.\n");
    test.build();
    test.write("d.md", "# Delta\n\nDelta is off on its own, still.\n");
    let summary = test.build();
    assert_eq!(summary["sources"]["changed"], 1);
    assert_eq!(summary["pages"], json!({"rendered": 0, "written": 0, "unchanged": 2, "compared": 0, "deleted": 0}));
    assert_eq!(summary["shards"]["rendered"], 0);

    // A new wikilink is a new signal: the plan runs again and Alpha's page gains a quote and a backlink.
    test.write("d.md", "# Delta\n\nDelta is off on its own, but envies [[Alpha]].\n");
    let summary = test.build();
    assert_eq!(summary["pages"]["rendered"], 1);
    let alpha = std::fs::read_to_string(test.path(ALPHA)).unwrap();
    assert!(alpha.contains("> Delta is off on its own, but envies [[Alpha]]."), "{alpha}");
    assert!(alpha.contains("[Delta](../../../../d.md), line 3"), "{alpha}");
}

/// Each row of an index shard is an `index_entry`: it cites the shard's bytes and line, resolves with
/// `get`, and is found by what the row says (title, alias, summary).
#[test]
fn index_entries_are_searchable_and_cite_the_shard_row() {
    let test = fixture();
    test.write("b.md", "---\naliases: [Bee]\n---\n# Beta\n\nBeta stands alone in the meadow.\n");
    test.build();
    let answer: serde_json::Value =
        serde_json::from_str(&test.ok(&["search", "alone meadow", "--kind", "index_entry", "--json"])).unwrap();
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{answer:#}");
    let entry = &results[0];
    assert_eq!(entry["kind"], "index_entry");
    assert_eq!(entry["title"], "Beta");
    assert_eq!(entry["source"]["uri"], "knowledge://index/general");
    let shard = std::fs::read_to_string(test.path(".hasna/knowledge/indexes/general.md")).unwrap();
    let (start, end) = (
        entry["citation"]["start_offset"].as_u64().unwrap() as usize,
        entry["citation"]["end_offset"].as_u64().unwrap() as usize,
    );
    assert_eq!(entry["text"], &shard[start..end], "the entry is the row's bytes in the shard");
    assert!(shard[start..end].contains("(../wiki/general/beta.md)"));
    let line = shard[..start].lines().count() + 1;
    assert_eq!(entry["citation"]["start_line"], line);

    let resolved: serde_json::Value =
        serde_json::from_str(&test.ok(&["get", entry["id"].as_str().unwrap(), "--json"])).unwrap();
    assert_eq!(resolved["chunk"]["source"]["uri"], "knowledge://index/general", "{resolved:#}");
    assert_eq!(resolved["chunk"]["provenance"]["stale"], false);

    // The row carries the page's aliases, so an alias finds the entry.
    let by_alias = test.ok(&["search", "bee", "--kind", "index_entry", "--json"]);
    assert!(by_alias.contains("knowledge://index/general"), "{by_alias}");

    // Sources are files: shards are counted neither as sources nor listed with them.
    let stats: serde_json::Value = serde_json::from_str(&test.ok(&["stats", "--json"])).unwrap();
    assert_eq!(stats["sources"], 3, "{stats:#}");
}

/// A page's Related and Backlinks lists are navigation, not knowledge: the page file has them, search
/// does not index them (they would match other pages' titles).
#[test]
fn navigation_lists_of_a_page_are_not_indexed() {
    let test = fixture();
    test.build();
    let page = std::fs::read_to_string(test.path(BETA)).unwrap();
    assert!(page.contains("## Backlinks\n\n- [Alpha]"), "{page}");
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let (chunks, navigation): (i64, i64) = conn
        .query_row(
            "SELECT count(*), sum(c.text LIKE '%## Backlinks%' OR c.text LIKE '%## Related%') FROM chunks c
             JOIN sources s ON s.id = c.source_id WHERE s.path = 'knowledge://wiki/beta'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!(chunks > 0);
    assert_eq!(navigation, 0);
    let count: i64 = conn
        .query_row("SELECT chunk_count FROM sources WHERE path = 'knowledge://wiki/beta'", [], |row| row.get(0))
        .unwrap();
    assert_eq!(count, chunks);
}

/// With `[wiki] section_field`, a source's field value is part of what it gives the plan: changing it
/// moves its page to another section, and every page that links to that page follows it.
#[test]
fn a_section_field_edit_moves_the_page_and_the_links_to_it() {
    let test = CliTest::new();
    test.write("kc.toml", "version = 1\n[project]\nname = \"fixture\"\n[wiki]\nsection_field = \"category\"\n");
    test.write("a.md", "---\ncategory: north\n---\n# Alpha\n\nAlpha leans on [[Beta]] for its footing.\n");
    test.write("b.md", "---\ncategory: north\n---\n# Beta\n\nBeta stands alone in the meadow.\n");
    test.write("c.md", "---\ncategory: north\n---\n# Gamma\n\nGamma cites [[Beta]] and [[Alpha]] in one breath.\n");
    test.build();
    let alpha = ".hasna/knowledge/wiki/north/alpha.md";
    assert!(std::fs::read_to_string(test.path(alpha)).unwrap().contains("(../north/beta.md)"));

    test.write("b.md", "---\ncategory: south\n---\n# Beta\n\nBeta stands alone in the meadow.\n");
    test.build();
    assert!(test.path(".hasna/knowledge/wiki/south/beta.md").exists());
    assert!(!test.path(".hasna/knowledge/wiki/north/beta.md").exists());
    let page = std::fs::read_to_string(test.path(alpha)).unwrap();
    assert!(page.contains("(../south/beta.md)"), "Alpha's related link follows Beta: {page}");
    assert_eq!(test.run(&["build", "--check"]).status.code(), Some(0));
}

/// A paragraph several sources hold word for word is quoted once; the sources that repeat it are still
/// listed, and the footnotes stay numbered 1, 2, ...
#[test]
fn a_text_several_sources_copy_is_quoted_once() {
    let test = CliTest::new();
    let copied = "Every proposal links [[Foo]] in this exact same copied sentence.";
    test.write("a.md", format!("# A\n\n{copied}\n"));
    test.write("b.md", format!("# B\n\n{copied}\n"));
    test.write("c.md", "# C\n\nA different sentence about [[Foo]] here.\n");
    test.build();
    let page = std::fs::read_to_string(test.path(".hasna/knowledge/wiki/general/foo.md")).unwrap();
    assert_eq!(page.matches(copied).count(), 1, "{page}");
    assert!(page.contains("b.md") && page.contains("a.md") && page.contains("c.md"), "every source is listed: {page}");
    let notes: Vec<i64> = test.column("SELECT note FROM citations WHERE page = 'foo' ORDER BY note");
    assert_eq!(notes, [1, 2]);
}

/// A quoted table row is shown under its table's header (header row and delimiter row), read from the chunk
/// that holds it when the table is long enough to span several, and the footnote names the header's lines;
/// the citation stays the row's. A row whose cells say nothing without their columns ("| 4900 | yes |") is
/// otherwise a run of pipes Markdown does not even render as a table.
#[test]
fn a_quoted_table_row_is_shown_under_its_tables_header() {
    let test = CliTest::new();
    let filler: String = (1..=60)
        .map(|n| format!("| {n} | Filler row number {n} says nothing about anything at all, at length. |\n"))
        .collect();
    test.write(
        "codes.md",
        format!(
            "# Codes\n\n| Code | Meaning |\n| ---- | ------- |\n{filler}| 4900 | The [[Provider]] is disconnected. |\n"
        ),
    );
    test.write("b.md", "# B\n\nThe [[Provider]] answers requests.\n");
    test.build();
    let chunks: Vec<String> =
        test.column("SELECT c.text FROM chunks c JOIN sources s ON s.id = c.source_id WHERE s.path = 'codes.md'");
    assert!(
        chunks.iter().any(|text| text.contains("| 4900") && !text.contains("| Code")),
        "the row's chunk does not hold the header, which is the case this test is about"
    );
    let page = std::fs::read_to_string(test.path(".hasna/knowledge/wiki/general/provider.md")).unwrap();
    assert!(
        page.contains("> | Code | Meaning |\n> | ---- | ------- |\n> | 4900 | The [[Provider]] is disconnected. |"),
        "{page}"
    );
    let row_line = 4 + 60 + 1;
    assert!(page.contains(&format!("lines {row_line}–{row_line}, under its table's header on lines 3–4")), "{page}");
    // A row quoted from a table whose header it follows in the same chunk, and prose, have no header twice.
    assert_eq!(page.matches("| Code | Meaning |").count(), 1, "{page}");
    assert!(page.contains("> The [[Provider]] answers requests."), "{page}");
}

/// A page opens with an extractive summary: sentences of its quotes that name the concept and share the
/// most with the other sources, each followed by the footnote of the quote it comes from, word for word.
#[test]
fn a_page_opens_with_cited_sentences_its_sources_share() {
    let test = CliTest::new();
    test.write(
        "a.md",
        "# A\n\nSome notes on [[Compost]] here. Compost turns kitchen scraps into humus for the garden beds. Cats avoid it.\n",
    );
    test.write(
        "b.md",
        "# B\n\nThe [[Compost]] heap is in the corner. Good compost needs kitchen scraps and dry leaves in layers.\n",
    );
    test.write("c.md", "# C\n\nWe keep [[Compost]] too. Humus from compost feeds the garden beds all winter long.\n");
    test.build();
    let page = std::fs::read_to_string(test.path(".hasna/knowledge/wiki/general/compost.md")).unwrap();
    let body = page.split("# Compost\n\n").nth(1).unwrap();
    let summary = body.lines().next().unwrap();
    assert!(summary.contains("Compost turns kitchen scraps into humus for the garden beds.[^"), "{page}");
    assert!(!summary.contains("Cats") && !summary.contains("[[Compost]]"), "only sentences that say something: {page}");
    // Every summary sentence is its cited source's own words.
    for part in summary.split("[^").skip(1) {
        let note = &part[..part.find(']').unwrap()];
        let sentence_end = summary.find(&format!("[^{note}]")).unwrap();
        let sentence_start = summary[..sentence_end].rfind("] ").map_or(0, |at| at + 2);
        let sentence = &summary[sentence_start..sentence_end];
        let cited = page.lines().find(|l| l.starts_with(&format!("[^{note}]:"))).unwrap();
        let file = ["a.md", "b.md", "c.md"].into_iter().find(|f| cited.contains(&format!("file://{f}"))).unwrap();
        assert!(std::fs::read_to_string(test.path(file)).unwrap().contains(sentence), "{sentence:?} in {file}: {page}");
    }
}

/// Whether a place may be quoted is one of a source's plan inputs: a note that only embedded others, edited
/// to say something, leads its page in the next build (a fresh process, which keeps the stored plan unless
/// some source's plan inputs changed), as a clean build of the same tree does.
#[test]
fn a_note_that_stops_being_only_embeds_leads_its_page_after_an_edit() {
    let test = CliTest::new();
    test.write("notes/alpha.md", "---\ntitle: Alpha\n---\n\n![[compost]] ![[soil]]\n");
    test.write("notes/a.md", "# A\n\nSee [[Alpha]] for the details.\n");
    test.write("notes/b.md", "# B\n\nThe [[Alpha]] layer holds the soil.\n");
    test.build();
    let before = std::fs::read_to_string(test.path(ALPHA)).unwrap();
    assert!(!before.contains("![[compost]]"), "embeds are not quoted: {before}");
    // The same signals (its title, the two embeds), but the title's place now says something.
    test.write(
        "notes/alpha.md",
        "---\ntitle: Alpha\n---\n\nAlpha is the top layer of a garden bed.\n\n![[compost]] ![[soil]]\n",
    );
    test.build();
    let edited = std::fs::read_to_string(test.path(ALPHA)).unwrap();
    assert!(edited.contains("> Alpha is the top layer of a garden bed."), "{edited}");
    std::fs::remove_dir_all(test.path(".hasna")).unwrap();
    test.build();
    assert_eq!(std::fs::read_to_string(test.path(ALPHA)).unwrap(), edited, "as a clean build makes it");
}

const LLMS: &str = ".hasna/knowledge/llms.txt";

#[test]
fn llms_txt_lists_the_pages_and_a_users_own_file_in_its_place_is_left_alone() {
    let test = fixture();
    let read = || std::fs::read_to_string(test.path(LLMS)).unwrap();
    // A file of the user's in its place is never overwritten, and `build --check` says so.
    test.write(LLMS, "# My notes for agents\n");
    let output = test.run(&["build"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("not writing `llms.txt`"), "{}", stderr(&output));
    assert_eq!(read(), "# My notes for agents\n");
    let check = test.run(&["build", "--check"]);
    assert!(stdout(&check).contains("blocked: llms.txt (generated)"), "{}", stdout(&check));

    // Out of the way, the file is the wiki's pages by section, each with its summary.
    test.remove(LLMS);
    assert_eq!(test.build()["artifacts"]["llms"]["written"], 1);
    let llms = read();
    assert!(llms.contains("\n## general\n\n- [Alpha](wiki/general/alpha.md): "), "{llms}");
    assert!(llms.contains("\n- [Beta](wiki/general/beta.md): Beta stands alone in the meadow.\n"), "{llms}");
    let unchanged = json!({"rendered": 0, "written": 0, "unchanged": 1, "compared": 0, "deleted": 0});
    assert_eq!(test.build()["artifacts"]["llms"], unchanged);

    // With no stat cache (a fresh clone of a repository that commits the output), a stale `llms.txt` of the
    // tool's is still recognised as its own and brought up to date.
    test.remove(".hasna/knowledge/artifacts.stat");
    test.write(LLMS, llms.replace("Beta stands", "Beta stood"));
    test.build();
    assert_eq!(read(), llms);
}

#[test]
fn an_index_row_says_the_sentence_that_sets_its_term_in_emphasis() {
    let test = CliTest::new();
    test.write(
        "a.md",
        "# Scope\n\nAs a first example of ownership, we look at the scope of some variables. A *scope* is the \
         range within a program for which an item is valid.\n",
    );
    test.write("b.md", "# Blocks\n\nEvery block opens a new [[Scope]] that ends at its closing brace.\n");
    test.write("c.md", "# Shadowing\n\nA name declared again in an inner [[Scope]] shadows the outer one.\n");
    test.build();
    let llms = std::fs::read_to_string(test.path(LLMS)).unwrap();
    let row = llms.lines().find(|line| line.starts_with("- [Scope]")).unwrap_or_else(|| panic!("{llms}"));
    assert!(row.ends_with(": A *scope* is the range within a program for which an item is valid."), "{row}");
}
