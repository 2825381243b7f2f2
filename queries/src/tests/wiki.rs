//! The wiki's queries: concept signals, the plan, page models and rendering.

use super::*;

/// `(kind, label)` of every signal of a document.
fn signals(db: &TestDb, path: &str, text: &str) -> Vec<(&'static str, String)> {
    let file = db.file(path, text);
    crate::concept_signals(db, file).iter().map(|s| (s.kind.as_str(), s.label.clone())).collect()
}

#[test]
fn signals_name_titles_aliases_tags_terms_headings_and_links_but_nothing_in_code() {
    let db = TestDb::new(1000, 0);
    let text = "---\ntitle: Compost\naliases: [humus heap]\ntags: soil, garden\n---\n# Compost\n\n\
                **Compost** is rotted matter; it is also *called* nothing. See [[Soil|dirt]], `[[not-a-link]]`,\n\
                [the scraps](../kitchen/scraps.md), ![a picture](heap.png) and [a site](https://example.com).\n\n\
                ## Turning\n\nTurn it weekly; *leaf mould* means something else here.\n\n```\n[[in-a-fence]]\n```\n";
    assert_eq!(
        signals(&db, "garden/compost.md", text),
        vec![
            ("title", "Compost".to_string()),
            ("alias", "humus heap".to_string()),
            ("tag", "soil".to_string()),
            ("tag", "garden".to_string()),
            ("heading", "Turning".to_string()),
            ("defined", "Compost".to_string()),
            ("defined", "leaf mould".to_string()),
            ("wikilink", "Soil".to_string()),
            ("link", "../kitchen/scraps.md".to_string()),
        ]
    );
}

#[test]
fn a_signal_quotes_the_line_of_a_list_item_not_the_whole_list() {
    let db = TestDb::new(1000, 0);
    let text = "# Index\n\n- [[alpha]] first\n- [[beta]] second\n- [[gamma]] third\n";
    let file = db.file("index.md", text);
    let signals = crate::concept_signals(&db, file);
    let beta = signals.iter().find(|s| s.label == "beta").unwrap();
    assert_eq!(&text[beta.excerpt.start as usize..beta.excerpt.end as usize], "- [[beta]] second");
    assert_eq!((beta.excerpt.start_line, beta.excerpt.end_line), (4, 4));
}

/// A table's body row is quoted, with where its header is (the first two lines of the table, in the chunk
/// that holds them); its header row and a row that only labels a group of rows are places that say nothing.
#[test]
fn a_table_row_is_quoted_with_its_headers_place_and_a_label_row_is_not_quoted() {
    let db = TestDb::new(1000, 0);
    let text = "# Ladder\n\n| [[Level]] | Expectation |\n| --- | --- |\n| **[[Engagement]]** |  |\n\
                | [[Feedback]] | Seeks feedback and acts on it. |\n";
    let file = db.file("ladder.md", text);
    let signals = crate::concept_signals(&db, file);
    let signal = |label: &str| signals.iter().find(|s| s.label == label).unwrap();
    let feedback = signal("Feedback");
    assert!(feedback.quotable);
    let header = feedback.excerpt.table_header.expect("a body row has its header");
    assert_eq!(&text[header.start as usize..header.end as usize], "| [[Level]] | Expectation |\n| --- | --- |");
    assert_eq!(header.line, 3);
    assert!(!signal("Level").quotable, "the header row labels the columns");
    assert_eq!(signal("Level").excerpt.table_header, None);
    assert!(!signal("Engagement").quotable, "one filled cell labels the rows below it");
}

/// A list item that only links (an index of guides, a vault's list of child notes) is listed, not quoted; an
/// item that says something beside its link is quoted.
#[test]
fn a_list_item_that_only_links_is_not_quoted() {
    let db = TestDb::new(1000, 0);
    let text = "# Guides\n\n- [[Artifactory]]\n- Using with [JFrog](jfrog.md)\n\
                - custom domains for [[managed publishing|rfc.2]]\n\nProse about [[Artifactory]] here.\n";
    let file = db.file("guides.md", text);
    let signals = crate::concept_signals(&db, file);
    let quotable = |label: &str| {
        let places = signals.iter().filter(|s| s.label == label);
        places
            .map(|s| (text[s.excerpt.start as usize..s.excerpt.end as usize].to_string(), s.quotable))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        quotable("Artifactory"),
        [("- [[Artifactory]]".to_string(), false), ("Prose about [[Artifactory]] here.".to_string(), true)]
    );
    assert_eq!(quotable("jfrog.md"), [("- Using with [JFrog](jfrog.md)".to_string(), false)]);
    assert_eq!(
        quotable("managed publishing"),
        [("- custom domains for [[managed publishing|rfc.2]]".to_string(), true)]
    );
}

#[test]
fn template_placeholders_are_not_quoted() {
    let db = TestDb::new(1000, 0);
    let text =
        "# Graph\n\nThe graph shows [[asset.preview]] links between notes.\n\n{{fm.desc}} uses [[Meeting Note]].\n";
    let file = db.file("graph.md", text);
    let quotes: Vec<String> = crate::concept_signals(&db, file)
        .iter()
        .filter(|s| s.kind == crate::wiki::SignalKind::Wikilink)
        .map(|s| text[s.excerpt.start as usize..s.excerpt.end as usize].to_string())
        .collect();
    assert_eq!(quotes, ["The graph shows [[asset.preview]] links between notes."], "{quotes:?}");
}

#[test]
fn a_signal_in_a_long_wrapped_paragraph_quotes_whole_sentences() {
    let db = TestDb::new(1000, 0);
    let filler = "This sentence only pads the paragraph out\nso that it is far too long to quote whole. ".repeat(4);
    let text = format!(
        "# Counter\n\n{filler}If the current value is 0 (which also means\nthat the [[new value]] is not) nothing is done. {filler}\n"
    );
    let file = db.file("counter.md", &text);
    let signals = crate::concept_signals(&db, file);
    let mention = signals.iter().find(|s| s.label == "new value").unwrap();
    let quote = &text[mention.excerpt.start as usize..mention.excerpt.end as usize];
    assert!(
        quote.contains("If the current value is 0 (which also means\nthat the [[new value]] is not) nothing is done."),
        "{quote}"
    );
    assert!(quote.starts_with("If the") || quote.starts_with("This sentence"), "starts at a sentence: {quote}");
    assert!(quote.ends_with('.'), "ends at a sentence: {quote}");
    assert!(quote.len() <= 600, "{}", quote.len());

    let item = "# List\n\n- [[alpha]] begins an item that wraps\n  onto a second line\n- [[beta]] next\n";
    let file = db.file("list.md", item);
    let signals = crate::concept_signals(&db, file);
    let alpha = signals.iter().find(|s| s.label == "alpha").unwrap();
    assert_eq!(
        &item[alpha.excerpt.start as usize..alpha.excerpt.end as usize],
        "- [[alpha]] begins an item that wraps\n  onto a second line",
        "a wrapped list item is quoted whole"
    );
}

/// What the planner reads of each file: path, title and plan signals, owned; [`sources`] lends them.
/// A signal the planner reads holds its label and both keys in one buffer: each reads back as made, and two
/// made from the same values are equal, whichever keys the label shares.
#[test]
fn a_plan_signal_reads_back_its_label_and_keys() {
    use crate::wiki::{PlanSignal, SignalKind, concept_keys};
    for label in ["Smart Pointers", "ownership", "traits", "", "Café au lait", "a/b#c"] {
        let (key, folded) = concept_keys(label);
        let signal = PlanSignal::new(SignalKind::Heading, label, (&key, &folded), Some("other".to_string()));
        assert_eq!((signal.label(), signal.key(), signal.folded()), (label, key.as_str(), folded.as_str()));
        let again = PlanSignal::new(SignalKind::Heading, label, (&key, &folded), Some("other".to_string()));
        assert_eq!(signal, again);
    }
    let keys = |label: &str| PlanSignal::new(SignalKind::Term, label, (label, label), None);
    assert_ne!(keys("pointer"), keys("pointers"));
    let plural = PlanSignal::new(SignalKind::Term, "pointers", ("pointers", "pointer"), None);
    assert_eq!((plural.key(), plural.folded()), ("pointers", "pointer"));
    assert_ne!(plural, keys("pointers"), "a different folded key is a different signal");
}

/// A test catalog's source: its path, title, plan signals and what resolving its links needs of it.
type FixtureSource = (String, String, Vec<crate::wiki::PlanSignal>, crate::wiki::SourceLinks);

fn catalog(db: &TestDb, files: &[(&str, &str)]) -> Vec<FixtureSource> {
    files
        .iter()
        .map(|(path, text)| {
            let file = db.file(path, text);
            let (signals, _) = crate::wiki::split_signals(crate::concept_signals(db, file).clone());
            let title = outline(db, file).title.clone();
            let links = crate::wiki::source_links(path, &title, &signals);
            ((*path).to_string(), title, signals, links)
        })
        .collect()
}

fn sources(catalog: &[FixtureSource]) -> Vec<crate::wiki::CatalogSource<'_>> {
    catalog
        .iter()
        .map(|(path, title, signals, links)| crate::wiki::CatalogSource {
            path,
            title,
            section: "general".to_string(),
            handwritten: path.starts_with("wiki/"),
            signals,
            links,
        })
        .collect()
}

/// The plan with the default settings: two sources make a page.
fn plan_with_defaults(sources: &[crate::wiki::CatalogSource<'_>]) -> Vec<crate::wiki::PagePlan> {
    crate::wiki::plan(sources, crate::wiki::PlanSettings { min_sources: 2, max_places: 12, max_related: 8 }).pages
}

fn planned(db: &TestDb, files: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
    let catalog = catalog(db, files);
    let sources = sources(&catalog);
    plan_with_defaults(&sources)
        .into_iter()
        .map(|page| (page.slug, page.places.iter().map(|m| sources[m.source].path.to_string()).collect()))
        .collect()
}

#[test]
fn a_page_needs_two_sources_and_more_than_a_shared_heading() {
    let db = TestDb::new(1000, 0);
    let pages = planned(
        &db,
        &[
            ("a.md", "# Alpha\n\nAlpha uses [[Beta]].\n\n## Motivation\n\nWhy alpha.\n"),
            ("b.md", "# Beta\n\nBeta alone.\n\n## Motivation\n\nWhy beta.\n"),
            ("c.md", "# Gamma\n\nNobody links gamma.\n"),
        ],
    );
    assert_eq!(pages, vec![("beta".to_string(), vec!["b.md".to_string(), "a.md".to_string()])]);
}

#[test]
fn a_concept_only_definitions_and_headings_support_must_be_a_name() {
    let db = TestDb::new(1000, 0);
    let pages = planned(
        &db,
        &[
            (
                "a.md",
                "# Alpha\n\nThe *current value* is what the slot holds. *Gas Refund* is what comes back.\n\n## Validation\n\n*Validation* is checking alpha.\n\nAlpha keeps [[compost]].\n",
            ),
            (
                "b.md",
                "# Beta\n\nThe *current value* is read first. *Gas Refund* is capped.\n\n## Validation\n\n*Validation* is checking beta.\n\nBeta turns [[compost]].\n",
            ),
        ],
    );
    let slugs: Vec<&str> = pages.iter().map(|(slug, _)| slug.as_str()).collect();
    // A lowercase phrase and a document's part are not names; a wikilinked concept needs no capital.
    assert_eq!(slugs, ["compost", "gas-refund"], "{pages:?}");
}

#[test]
fn a_table_of_contents_is_listed_on_pages_not_quoted() {
    let db = TestDb::new(1000, 0);
    let chapters: Vec<(String, String)> = (0..22)
        .map(|i| (format!("ch{i:02}.md"), format!("# Chapter {i}\n\nChapter {i} explains topic {i}.\n")))
        .collect();
    let toc: String = std::iter::once("# Contents\n\n".to_string())
        .chain((0..22).map(|i| format!("- [Chapter {i}](ch{i:02}.md)\n")))
        .collect();
    let mut files: Vec<(&str, &str)> = chapters.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    files.push(("SUMMARY.md", &toc));
    files.push(("notes.md", "# Notes\n\nSee [the first chapter](ch00.md) for topic zero.\n"));
    let catalog = catalog(&db, &files);
    let sources = sources(&catalog);
    let plans = plan_with_defaults(&sources);
    let first = plans.iter().find(|p| p.slug == "chapter-0").unwrap();
    let quoted: Vec<&str> = first.places.iter().map(|m| sources[m.source].path).collect();
    assert_eq!(quoted, ["ch00.md", "notes.md"], "the contents' line is not quoted");
    assert!(first.also.iter().any(|&s| sources[s].path == "SUMMARY.md"), "but it is listed");
}

#[test]
fn a_title_many_sources_share_names_no_concept() {
    let db = TestDb::new(1000, 0);
    let pages = planned(
        &db,
        &[
            ("0001.md", "# Summary\n\nThe first proposal.\n"),
            ("0002.md", "# Summary\n\nThe second proposal.\n"),
            ("0003.md", "# Summary\n\nThe third one links [the first](0001.md).\n"),
        ],
    );
    assert!(pages.is_empty(), "{pages:?}");
}

#[test]
fn a_heading_the_documents_template_repeats_adds_no_place() {
    // Ten proposals with "Motivation" headings, and one source titled "Motivation" that another links:
    // the headings are the template's, so the page holds the title's source and its linker only.
    let proposals: Vec<(String, String)> = (0..10)
        .map(|n| (format!("{n:04}.md"), format!("# Proposal {n}\n\nIt proposes {n}.\n\n## Motivation\n\nWhy {n}.\n")))
        .collect();
    let mut files: Vec<(&str, &str)> = proposals.iter().map(|(path, text)| (path.as_str(), text.as_str())).collect();
    files.push(("council/motivation.md", "# Motivation\n\nWhy the council exists.\n"));
    files.push(("council.md", "# Council\n\nSee [the motivation](council/motivation.md).\n"));
    let db = TestDb::new(1000, 0);
    let pages = planned(&db, &files);
    let motivation = pages.iter().find(|(slug, _)| slug == "motivation").expect("a page for the titled source");
    assert_eq!(motivation.1, vec!["council/motivation.md".to_string(), "council.md".to_string()]);

    // Below ten sources a shared heading is no template: nine proposals' headings are places.
    let db = TestDb::new(1000, 0);
    let pages = planned(&db, &files[1..]);
    let motivation = pages.iter().find(|(slug, _)| slug == "motivation").expect("a page");
    assert_eq!(motivation.1.len(), 11, "{motivation:?}");
}

#[test]
fn a_template_headings_word_in_italics_is_no_concept() {
    // Ten proposals with "Drawbacks" headings; three of them stress the word in their prose, which would
    // otherwise introduce it ("whether this is a *drawback*"): the word is the template's, not a concept.
    let proposals: Vec<(String, String)> = (0..10)
        .map(|n| {
            let stress = if n < 3 { "Whether this is a *drawback* depends; each drawback counts. " } else { "" };
            (format!("{n:04}.md"), format!("# Proposal {n}\n\nIt proposes {n}.\n\n## Drawbacks\n\n{stress}Cost {n}.\n"))
        })
        .collect();
    let files: Vec<(&str, &str)> = proposals.iter().map(|(path, text)| (path.as_str(), text.as_str())).collect();
    let db = TestDb::new(1000, 0);
    let pages = planned(&db, &files);
    assert!(pages.iter().all(|(slug, _)| !slug.starts_with("drawback")), "{pages:?}");

    // Below ten sources the heading is no template, and the three sources' term is a concept.
    let db = TestDb::new(1000, 0);
    let pages = planned(&db, &files[..9]);
    assert!(pages.iter().any(|(slug, _)| slug == "drawback"), "{pages:?}");
}

#[test]
fn a_wikilink_to_a_source_whose_title_others_share_names_that_source() {
    let db = TestDb::new(1000, 0);
    let mut files = vec![
        ("vault/dendron.topic.links.md", "---\ntitle: Links\n---\n\nLinks join notes.\n"),
        ("vault/dendron.ref.links.md", "---\ntitle: Links\n---\n\nThe reference of links.\n"),
        ("vault/guide.md", "# Guide\n\nRead [[dendron.topic.links]] first.\n"),
        ("vault/faq.md", "# FAQ\n\nSee [[Links|dendron://dendron-site/dendron.topic.links]] too.\n"),
    ];
    // One of the two notes linked: its page is the only "Links", so it needs no qualifier.
    let one_linked = catalog(&db, &files);
    let sources = sources(&one_linked);
    let plans = plan_with_defaults(&sources);
    assert_eq!(plans.len(), 1, "no page for the shared title itself: {plans:?}");
    let page = &plans[0];
    assert_eq!(page.title, "Links", "titled by the note's title, not by its id");
    assert_eq!(page.slug, "dendron-topic-links");
    let defined: Vec<&str> = page.defined_by.iter().map(|&s| sources[s].path).collect();
    assert_eq!(defined, ["vault/dendron.topic.links.md"], "the linked note defines its page");
    let quoted: Vec<&str> = page.places.iter().map(|m| sources[m.source].path).collect();
    assert_eq!(
        quoted,
        ["vault/dendron.topic.links.md", "vault/guide.md", "vault/faq.md"],
        "a cross-vault `dendron://` link resolves like a plain one"
    );

    // Both linked: two pages would be titled "Links", so each is told apart by where its note lives.
    files.push(("vault/setup.md", "# Setup\n\nThe [[dendron.ref.links]] list every option.\n"));
    let both_linked = catalog(&db, &files);
    let titles: Vec<(String, String)> =
        plan_with_defaults(&self::sources(&both_linked)).into_iter().map(|page| (page.slug, page.title)).collect();
    assert_eq!(
        titles,
        [
            ("dendron-ref-links".to_string(), "Links (dendron.ref)".to_string()),
            ("dendron-topic-links".to_string(), "Links (dendron.topic)".to_string())
        ]
    );
}

#[test]
fn an_embed_is_listed_not_quoted() {
    let db = TestDb::new(1000, 0);
    let files = [
        ("node.md", "# Install Node.js\n\nDownload the installer.\n"),
        ("setup.md", "# Setup\n\nFirst you need [[node]] on the machine.\n"),
        ("tutorial.md", "# Tutorial\n\n![[node]]\n\nThen go on.\n"),
        ("only-embeds-a.md", "# A\n\n![[missing-note]]\n"),
        ("only-embeds-b.md", "# B\n\n![[missing-note]]\n"),
        ("config.md", "# Config\n\n## Install Node.js\n\n![[node]]\n"),
    ];
    let catalog = catalog(&db, &files);
    let sources = sources(&catalog);
    let plans = plan_with_defaults(&sources);
    let slugs: Vec<&str> = plans.iter().map(|p| p.slug.as_str()).collect();
    assert_eq!(slugs, ["install-node-js"], "embeds of a missing note quote nothing, so make no page");
    let page = &plans[0];
    let quoted: Vec<&str> = page.places.iter().map(|m| sources[m.source].path).collect();
    assert_eq!(quoted, ["node.md", "setup.md"]);
    let listed: Vec<&str> = page.also.iter().map(|&s| sources[s].path).collect();
    assert_eq!(listed, ["tutorial.md", "config.md"], "the embedding notes are listed, even under a heading");
    let backlinks: Vec<&str> = page.backlinks.iter().map(|m| sources[m.source].path).collect();
    assert_eq!(backlinks, ["setup.md", "tutorial.md", "config.md"], "and still link to the page");
}

/// The query graph decides what a page may quote: a place whose excerpt is only note embeds (a Dendron note
/// made of `![[…]]`) is listed after the other sources, and is no lead, so no driver reads a quote's text
/// to find out.
#[test]
fn a_place_of_only_embeds_is_listed_by_the_graph_and_is_no_lead() {
    use crate::wiki::{Catalog, CatalogEntry, PlanSettings, planned_pages, split_signals};
    // The CLI page's view: (lead, quoted, listed), with the defining note's body as given.
    let view_with = |body: &str| -> (bool, Vec<String>, Vec<String>) {
        let db = TestDb::new(1000, 0);
        let defining = format!("---\ntitle: CLI\n---\n{body}\n");
        let files = [
            ("cli.md", defining.as_str()),
            ("a.md", "# A\n\nThe [[CLI]] builds sites.\n"),
            ("b.md", "# B\n\n![[cli]] ![[CLI]]\n"),
            ("d.md", "# D\n\nThe [[CLI]] has a doctor command.\n"),
        ];
        let entries: Vec<CatalogEntry> = files
            .iter()
            .map(|(path, text)| {
                let file = db.file(path, text);
                let (plan_signals, excerpts) = split_signals(crate::concept_signals(&db, file).clone());
                let title = outline(&db, file).title.clone();
                CatalogEntry::new(&db, (*path).to_string(), title, String::new(), None, plan_signals, excerpts)
            })
            .collect();
        let settings = PlanSettings { min_sources: 2, max_places: 12, max_related: 8 };
        let catalog = Catalog::new(&db, entries, settings, "wiki".to_string());
        let page = *planned_pages(&db, catalog).pages.iter().find(|page| page.slug(&db) == "cli").expect("a CLI page");
        let view = page.view(&db);
        let mut listed: Vec<String> = view.also.iter().map(|entry| entry.path(&db).clone()).collect();
        listed.sort();
        (view.lead, view.places.iter().map(|(entry, _)| entry.path(&db).clone()).collect(), listed)
    };
    // Said in words, the defining note leads.
    let (lead, quoted, listed) = view_with("The CLI is the command line.");
    assert!(lead);
    assert_eq!(quoted, ["cli.md", "a.md", "d.md"]);
    assert_eq!(listed, ["b.md"], "a mention made only of embeds is listed");
    // Made only of embeds, it is listed with the others, and nothing leads.
    let (lead, quoted, listed) = view_with("![[topic.cli#summary]]");
    assert!(!lead, "an embed is no lead");
    assert_eq!(quoted, ["a.md", "d.md"]);
    assert_eq!(listed, ["b.md", "cli.md"]);
}

#[test]
fn dendron_targets_resolve_by_either_side_and_hand_written_pages_hold_their_slug() {
    let db = TestDb::new(1000, 0);
    let pages = planned(
        &db,
        &[
            ("notes/dendron.topic.pods.md", "---\ntitle: Pods\n---\nPods move notes.\n"),
            ("notes/intro.md", "# Intro\n\nRead about [[pods|dendron.topic.pods]] and [[Lonely]].\n"),
            ("notes/other.md", "# Other\n\nAlso [[Lonely]] and [[Held]].\n"),
            ("notes/more.md", "# More\n\n[[Held]] again.\n"),
            ("wiki/held.md", "# Held by hand\n\nWritten by a person.\n"),
        ],
    );
    let slugs: Vec<&str> = pages.iter().map(|(slug, _)| slug.as_str()).collect();
    assert_eq!(slugs, ["lonely", "pods"], "an unresolved target two sources link gets a page; `held` is taken");
    assert_eq!(pages[1].1, ["notes/dendron.topic.pods.md", "notes/intro.md"]);
}

#[test]
fn render_page_and_the_page_artifact_rerun_for_what_they_read_only() {
    use crate::wiki::{PageModel, Templates, WikiPage, page_artifact, render_page};
    let mut db = TestDb::new(1000, 0);
    let model = |title: &str| PageModel {
        schema: 1,
        slug: crate::wiki::concept_key(title),
        title: title.to_string(),
        aliases: Vec::new(),
        section: "general".to_string(),
        summary: Vec::new(),
        written_by: None,
        lead: None,
        places: Vec::new(),
        also: Vec::new(),
        related: Vec::new(),
        backlinks: Vec::new(),
    };
    let templates = Templates::new(&db, "title: {{ title | yaml }}".to_string(), String::new(), String::new());
    let one = WikiPage::new(&db, "one".to_string(), model("One \"quoted\""), 2);
    let two = WikiPage::new(&db, "two".to_string(), model("Two"), 2);
    assert_eq!(render_page(&db, one).as_deref(), Ok("title: \"One \\\"quoted\\\"\"\n"));
    assert_eq!(render_page(&db, two).as_deref(), Ok("title: \"Two\"\n"));
    db.take_executed(&[]);

    two.set_model(&mut db).to(model("Deux"));
    let _ = render_page(&db, one);
    assert_eq!(render_page(&db, two).as_deref(), Ok("title: \"Deux\"\n"));
    assert_eq!(db.take_executed(&[]), ["render_page"]);

    // The catalog's row follows the rendering; the source count is only in the row.
    let row = page_artifact(&db, two).as_ref().unwrap();
    assert_eq!(
        (row.uri.as_str(), row.kind, row.path.as_str()),
        ("knowledge://wiki/deux", "page", "wiki/general/deux.md")
    );
    assert_eq!((row.hash.clone(), row.size), (crate::content_hash(b"title: \"Deux\"\n"), 14));
    assert_eq!(row.metadata, r#"{"section":"general","sources":2,"title":"Deux"}"#);
    db.take_executed(&[]);
    two.set_source_count(&mut db).to(3);
    assert_eq!(
        page_artifact(&db, two).as_ref().unwrap().metadata,
        r#"{"section":"general","sources":3,"title":"Deux"}"#
    );
    assert_eq!(db.take_executed(&[]), ["page_artifact"], "not rendered again");

    templates.set_page(&mut db).to("# {{ title | md }}\n{% if".to_string());
    assert!(render_page(&db, one).as_ref().is_err_and(|e| e.contains("page.md.j2") && e.contains("line 2")));
    let _ = render_page(&db, two);
    assert_eq!(db.take_executed(&[]), ["render_page", "render_page"]);
    assert!(page_artifact(&db, two).is_err(), "a template error has no row");
}

#[test]
fn html_kept_for_old_links_before_the_opening_heading_does_not_hide_the_title() {
    let db = TestDb::new(1000, 0);
    let text = "<!-- Old headings. Do not remove or links may break. -->\n\n<a id=\"the-match-control-flow-operator\"></a>\n\n## The `match` Control Flow Construct\n\nText.\n";
    let file = db.file("ch06-02-match.md", text);
    assert_eq!(outline(&db, file).title, "The match Control Flow Construct");
    // A document that opens with prose is still named by its file.
    let prose = db.file("notes/ch01.md", "Some prose first.\n\n## Later\n");
    assert_eq!(outline(&db, prose).title, "ch01");
}

#[test]
fn a_table_of_contents_makes_no_pages_related() {
    let db = TestDb::new(1000, 0);
    // A SUMMARY listing 22 concepts, each also named by a chapter of its own; Alpha and Beta share a chapter.
    let names: Vec<String> = (0..22).map(|n| format!("Concept{n:02}")).collect();
    let summary: String = names.iter().map(|n| format!("- [[{n}]]\n")).collect();
    let mut files: Vec<(String, String)> = vec![("SUMMARY.md".to_string(), format!("# Summary\n\n{summary}"))];
    for name in &names {
        files.push((format!("{name}.md"), format!("# {name}\n\nAbout [[{name}]].\n")));
    }
    files.push(("shared.md".to_string(), "# Shared\n\n[[Concept00]] and [[Concept01]] together.\n".to_string()));
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let catalog = catalog(&db, &files);
    let sources = sources(&catalog);
    let plans = plan_with_defaults(&sources);
    let related = |slug: &str| -> Vec<String> {
        let page = plans.iter().find(|p| p.slug == slug).unwrap_or_else(|| panic!("{slug}: {plans:?}"));
        page.related.iter().map(|&i| plans[i].slug.clone()).collect()
    };
    assert_eq!(related("concept00"), ["concept01"], "through shared.md, not the table of contents");
    // A chapter only the table of contents lists would get a page that echoes it: none.
    assert!(!plans.iter().any(|p| p.slug == "concept05"), "{plans:?}");
}

#[test]
fn an_alias_joins_its_concept_plurals_folded_into_one_page() {
    let db = TestDb::new(1000, 0);
    let files = [
        ("compost.md", "---\naliases: [Humus Heap]\n---\n# Compost\n\nCompost is rotted matter from the garden.\n"),
        ("beds.md", "# Beds\n\nA **humus heap** is where the beds get their food.\n"),
        ("paths.md", "# Paths\n\nThe *humus heaps* sit by the paths; humus heaps steam in winter.\n"),
        ("soil.md", "# Soil\n\nGood soil needs [compost](compost.md) every spring.\n"),
    ];
    let pages = planned(&db, &files);
    let compost = pages.iter().find(|(slug, _)| slug == "compost").unwrap_or_else(|| panic!("{pages:?}"));
    let mut quoted = compost.1.clone();
    quoted.sort();
    assert_eq!(
        quoted,
        ["beds.md", "compost.md", "paths.md", "soil.md"],
        "the title's, the alias's and its plural's places: {pages:?}"
    );
    assert_eq!(pages.len(), 1, "one concept, one page: {pages:?}");
}

/// A documentation site's links from its root name the pages they reach, as lint reads them: under the folder
/// every source shares, by path (a folder's index page, a page without its `.mdx`) or by the route the site
/// serves it at (`/concepts/state-management/` for `concepts/State Management.mdx`).
#[test]
fn a_sites_root_relative_links_name_the_pages_they_reach() {
    let db = TestDb::new(1000, 0);
    let files = [
        ("docs/concepts/State Management.mdx", "# State Management\n\nState lives in the app handle.\n"),
        ("docs/guide/index.md", "# Guide\n\nRead [state](/concepts/state-management/) before commands.\n"),
        (
            "docs/start.mdx",
            "# Start\n\nThe [guide](/guide/) and [managed state](/concepts/state-management) come next.\n",
        ),
        ("docs/index.mdx", "# Home Page\n\nWelcome.\n"),
        ("docs/about.md", "# About\n\nBack to the [home page](/).\n"),
        ("docs/faq.md", "# FAQ\n\nSee the [home page](/) first.\n"),
    ];
    let pages = planned(&db, &files);
    let state = pages.iter().find(|(slug, _)| slug == "state-management").unwrap_or_else(|| panic!("{pages:?}"));
    let mut quoted = state.1.clone();
    quoted.sort();
    assert_eq!(quoted, ["docs/concepts/State Management.mdx", "docs/guide/index.md", "docs/start.mdx"], "{pages:?}");
    assert!(pages.iter().any(|(slug, _)| slug == "home-page"), "a link to `/` names the site's index page: {pages:?}");
}

/// A bare relative link its file's folder lacks names the page under the site's root (Docusaurus), as lint
/// reads it; one written with `./` does not.
#[test]
fn a_bare_relative_link_names_the_page_under_the_sites_root() {
    let db = TestDb::new(1000, 0);
    let files = [
        (
            "docs/api/Store.md",
            "# Store

The store holds the state.
",
        ),
        (
            "docs/understanding/glossary.md",
            "# Glossary

See the [store](api/Store.md#dispatch) for dispatch.
",
        ),
        (
            "docs/usage/testing.md",
            "# Testing

Test the [store](api/Store.md) directly.
",
        ),
        (
            "docs/usage/faq.md",
            "# FAQ

A [store](./api/Store.md) is not here.
",
        ),
    ];
    let pages = planned(&db, &files);
    let store = pages.iter().find(|(slug, _)| slug == "store").unwrap_or_else(|| panic!("{pages:?}"));
    let mut quoted = store.1.clone();
    quoted.sort();
    assert_eq!(quoted, ["docs/api/Store.md", "docs/understanding/glossary.md", "docs/usage/testing.md"], "{pages:?}");
}

/// The related pages the plan gives the page "Alpha" with at most each of `limits` related pages, from a page
/// source for each of `names` (one line about itself) and the `others`.
fn alphas_related(names: &[&str], others: Vec<(String, String)>, limits: &[usize]) -> Vec<Vec<String>> {
    let db = TestDb::new(1000, 0);
    let mut files: Vec<(String, String)> = names
        .iter()
        .map(|name| (format!("{}.md", name.to_lowercase()), format!("# {name}\n\nAbout {name}.\n")))
        .collect();
    files.extend(others);
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let catalog = catalog(&db, &files);
    let sources = sources(&catalog);
    let related = |max_related: usize| -> Vec<String> {
        let settings = crate::wiki::PlanSettings { min_sources: 2, max_places: 12, max_related };
        let plans = crate::wiki::plan(&sources, settings).pages;
        let alpha = plans.iter().find(|p| p.slug == "alpha").unwrap_or_else(|| panic!("{plans:?}"));
        alpha.related.iter().map(|&i| plans[i].slug.clone()).collect()
    };
    limits.iter().map(|&limit| related(limit)).collect()
}

#[test]
fn related_pages_are_the_best_few_by_shared_sources_then_by_slug() {
    // Alpha shares s1 (three pages) and s2 (two) with Beta: 1/3 + 1/2; s1 with Gamma, s3 (three pages)
    // with Delta and Epsilon: 1/3 each (each of the three lists two sources), a tie the slug breaks.
    let others = vec![
        ("s1.md".into(), "# One\n\n[[Alpha]], [[Beta]] and [[Gamma]].\n".into()),
        ("s2.md".into(), "# Two\n\n[[Alpha]] and [[Beta]].\n".into()),
        ("s3.md".into(), "# Three\n\n[[Alpha]], [[Epsilon]] and [[Delta]].\n".into()),
    ];
    let related = alphas_related(&["Alpha", "Beta", "Gamma", "Delta", "Epsilon"], others, &[8, 3, 1]);
    assert_eq!(related[0], ["beta", "delta", "epsilon", "gamma"]);
    assert_eq!(related[1], ["beta", "delta", "epsilon"], "the tie at the cut goes by slug");
    assert_eq!(related[2], ["beta"]);
}

#[test]
fn a_page_on_everything_is_no_pages_related_page_and_related_pages_are_listed_by_slug() {
    // Alpha shares s1 (three pages) and s2 (two) with Broad, s1 alone with Narrow: by shared sources Broad
    // is nearer (1/3 + 1/2 against 1/3), but twenty more sources mention Broad and none Narrow.
    let mut others = vec![
        ("s1.md".into(), "# One\n\n[[Alpha]], [[Broad]] and [[Narrow]].\n".into()),
        ("s2.md".into(), "# Two\n\n[[Alpha]] and [[Broad]].\n".into()),
    ];
    others.extend((0..20).map(|n| (format!("b{n}.md"), format!("# B{n}\n\nSee [[Broad]].\n"))));
    let related = alphas_related(&["Alpha", "Broad", "Narrow"], others, &[1, 8]);
    assert_eq!(related[0], ["narrow"], "shared sources weigh less with a page that twenty more sources mention");
    assert_eq!(related[1], ["broad", "narrow"], "listed by slug, not by score");
}

#[test]
fn concept_keys_lowercase_and_join_words_the_same_way_for_ascii_and_other_text() {
    use crate::wiki::concept_key;
    // The reference: Unicode lowercasing for every character, which the ASCII path must equal.
    let reference = |name: &str| {
        let mut key = String::new();
        for c in name.trim().chars().flat_map(char::to_lowercase) {
            if c.is_alphanumeric() {
                key.push(c);
            } else if !key.is_empty() && !key.ends_with('-') {
                key.push('-');
            }
            if key.len() >= 80 {
                break;
            }
        }
        key.trim_end_matches('-').to_string()
    };
    let long = "Word ".repeat(30);
    for name in ["Humus Heap", "  RFC 2005: Match ergonomics!  ", "a--b__c", "---", "", &long, "Straße Ünïcode", "X"]
    {
        assert_eq!(concept_key(name), reference(name), "{name:?}");
    }
    assert_eq!(concept_key("Humus Heap"), "humus-heap");
    assert_eq!(concept_key(&long).len(), 79, "cut at 80 bytes, then the trailing `-` dropped");
}

/// A document of `n` mentions in one paragraph, one list and many short paragraphs: links, wikilinks,
/// definitions, embeds.
fn mention_dense(n: usize) -> String {
    let mut text = String::from("# Dense\n\n");
    for i in 0..n {
        text.push_str(&format!("See [[note {i}]] and [this](other-{i}.md); **term{i}** is defined here. "));
    }
    text.push_str("\n\n");
    for i in 0..n {
        text.push_str(&format!("- item [[entry {i}]] with ![[embed {i}]]\n  continued line\n"));
    }
    text.push('\n');
    for i in 0..n / 4 {
        text.push_str(&format!("A paragraph about [[topic {i}]]\n\n"));
    }
    // One list item of one long line, and a table, each holding a mention per part.
    text.push_str("- ");
    for i in 0..n {
        text.push_str(&format!("*called* [[item {i}]] "));
    }
    text.push_str("\n\n| a | b |\n|---|---|\n");
    for i in 0..n / 4 {
        text.push_str(&format!("| [[cell {i}]] | [x](row-{i}.md) |\n"));
    }
    text
}

#[test]
// The test times the queries; the queries themselves read no clock.
#[allow(clippy::disallowed_methods)]
fn signals_and_lint_facts_take_time_linear_in_a_mention_dense_document() {
    // Issue 40, item 2: 16,000 links in one paragraph took 232 s, plain text of the same size 0.4 s; the
    // time grew with the square of the mentions. Here four times the mentions must cost far less than
    // sixteen times the time (a linear cost gives about four; the bound leaves room for a noisy machine),
    // and the larger document stays within seconds even unoptimized.
    let time = |n: usize| {
        let db = TestDb::new(1000, 0);
        let file = db.file("dense.md", &mention_dense(n));
        let started = std::time::Instant::now();
        // Its lint facts too: each link's column was counted from its line's start.
        let count = crate::concept_signals(&db, file).len() + crate::lint_facts(&db, file).links.len();
        (started.elapsed(), count)
    };
    let (small, small_count) = time(1_000);
    let (large, large_count) = time(4_000);
    // Every mention is counted; the title and the dozen repeated terms do not grow with the mentions.
    assert!(large_count >= 4 * small_count - 64, "{small_count} then {large_count} signals");
    assert!(large < small * 10 + std::time::Duration::from_millis(200), "1,000 mentions: {small:?}; 4,000: {large:?}");
    assert!(large < std::time::Duration::from_secs(20), "{large:?}");
}

#[test]
fn a_term_one_source_introduces_gets_a_page_quoting_every_source_that_discusses_it() {
    let db = TestDb::new(1000, 0);
    let pages = planned(
        &db,
        &[
            ("beds.md", "# Raised Beds\n\nBeds hold *mulch*, which keeps them moist. Mulch rots slowly.\n"),
            ("water.md", "# Watering\n\nMulch holds water. Under mulch the soil stays cool; thin mulch dries.\n"),
            (
                "winter.md",
                "# Winter\n\nMulch, mulch and more mulch: mulch covers the beds and mulch feeds them all winter.\n",
            ),
            ("tools.md", "# Tools\n\nA rake spreads mulch once.\n"),
            ("rake.md", "# Rakes\n\nRakes rake. A rake is a rake, a rake.\n"),
        ],
    );
    let mulch = pages.iter().find(|(slug, _)| slug == "mulch").unwrap_or_else(|| panic!("{pages:?}"));
    // The source that introduces it leads; then the sources that use it most; a passing mention is no place.
    assert_eq!(mulch.1, ["beds.md", "winter.md", "water.md"], "{pages:?}");
    // A word only used again and again (`rake`), which nothing names as a concept, gets no page.
    assert!(!pages.iter().any(|(slug, _)| slug.starts_with("rake")), "{pages:?}");
}

#[test]
fn a_chapter_titled_by_a_concept_and_the_terms_other_chapters_use_are_one_page() {
    let db = TestDb::new(1000, 0);
    let pages = planned(
        &db,
        &[
            ("ch15.md", "# Smart Pointers\n\nA smart pointer owns data. Smart pointers act like references.\n"),
            ("ch16.md", "# Threads\n\nShare a smart pointer across threads: smart pointers count owners.\n"),
            ("ch17.md", "# Async\n\nFutures may hold smart pointers, and a smart pointer may be pinned.\n"),
        ],
    );
    let slugs: Vec<&String> = pages.iter().map(|(slug, _)| slug).collect();
    assert_eq!(slugs, ["smart-pointers"], "plurals fold: {pages:?}");
    assert_eq!(pages[0].1, ["ch15.md", "ch16.md", "ch17.md"]);
}

/// The labels of the terms a source of `text` at `path` introduces.
fn introduced_in(path: &str, text: &str) -> Vec<String> {
    let db = TestDb::new(1000, 0);
    let file = db.file(path, text);
    let signals = crate::concept_signals(&db, file);
    signals.iter().filter(|s| s.kind == crate::wiki::SignalKind::Introduced).map(|s| s.label.clone()).collect()
}

#[test]
fn stress_is_no_term_and_only_a_term_the_text_uses_again_is_introduced() {
    let introduced = introduced_in(
        "a.md",
        "# A\n\nThis helps a *lot*. Each *crate* builds alone; every crate compiles. We *moved* it. *Do not* stop.\n",
    );
    assert_eq!(introduced, ["crate"]);
}

/// A term's other uses are counted in any case and as a plural with `s`, and only as whole words.
#[test]
fn a_term_used_again_in_capitals_or_as_a_plural_is_introduced() {
    let text = "# A\n\nA *gadget* runs. Gadgets run too.\n\nEach *widget* draws; WIDGET is set.\n\n\
                A *knob* turns; doorknobs and knobby are other words.\n";
    assert_eq!(introduced_in("a.md", text), ["gadget", "widget"]);
}

#[test]
fn a_word_english_never_uses_as_a_noun_is_stress_unless_the_text_writes_it_as_code() {
    // rust-rfcs' noise pages "Seems" and "Regardless" came from words like these: stressed once, used again.
    let text = "# A\n\nIt *seems* fine, and it seems right. *Regardless* of that, regardless of this, it runs. \
                An *unsafe* block is unsafe. Code that may *await* must await `fut.await` first. An *async* fn \
                is async.\n\n```rust\n// seems: a comment in a block is prose\n```\n";
    let introduced = introduced_in("a.md", text);
    // `unsafe` is no general English word; `await` is, but the text writes it as code.
    assert_eq!(introduced, ["unsafe", "await", "async"]);
}

#[test]
fn an_asides_label_is_no_term_and_a_glossarys_run_in_term_is() {
    // rust-rfcs' page "Note" gathered 120 sources from "**Note**: the name warrants bikeshedding" and the like.
    let text = "# A\n\n> **Note**: the name is a placeholder; note it.\n\n- *Rebuttal*: a rebuttal follows.\n\
                - **Orphan check**: an orphan check runs; the orphan check fails.\n\n> > **Example**, however, is \
                an example.\n\nA **note** on the *Update*, **NOTE** it.\nEach update counts as a note.\n";
    let introduced = introduced_in("a.md", text);
    // A label before its colon or opening its line is not introduced; the same word elsewhere in bold is.
    assert_eq!(introduced, ["Orphan check", "note", "Update"]);
}

#[test]
fn a_synopsis_placeholder_or_an_announced_example_is_no_term() {
    let text = "# A\n\n`cargo report` _type_ [_options_]\n\nThe type and the options matter; a type has options.\n\n\
                Try a word that matches many lines, like _stanza_:\n\nThe stanza holds a stanza.\n\n\
                Each _crate_ builds alone; every crate compiles. One tool is _generics_: stand-ins; generics help.\n\n\
                Async code needs a _runtime_:\na crate that runs it. The runtime polls.\n";
    let introduced = introduced_in("a.md", text);
    assert_eq!(introduced, ["crate", "generics", "runtime"]);
}

#[test]
fn a_title_names_the_phrase_its_source_teaches() {
    let text = "# Reference Cycles Can Leak Memory\n\nA reference cycle leaks. Break a reference cycle with weak \
                references; each reference cycle counts, and reference cycles never drop.\n\n## Memory\n\nMemory.\n";
    let introduced = introduced_in("ch15-06.md", text);
    // "memory" is a word of the title, not the phrase it teaches, and the text does not use it four times.
    assert_eq!(introduced, ["reference cycle"]);
}

#[test]
fn a_template_notes_placeholder_is_listed_not_quoted() {
    let db = TestDb::new(1000, 0);
    let file = db.file("templates.event.md", "---\ntitle: Event\n---\n\n{{fm.desc}}\n");
    let signals = crate::concept_signals(&db, file);
    let title = signals.iter().find(|s| s.kind == crate::wiki::SignalKind::Title).expect("the title is a signal");
    assert!(!title.quotable, "{title:?}");
}

#[test]
fn a_page_quotes_at_least_min_sources_sources() {
    let db = TestDb::new(1000, 0);
    // Two sources name Ghost, but one only embeds it: a page would quote one line of one source.
    let pages = planned(&db, &[("a.md", "# A\n\nSee [[Ghost]] for more.\n"), ("b.md", "# B\n\n![[Ghost]]\n")]);
    assert!(pages.is_empty(), "{pages:?}");
    let pages =
        planned(&db, &[("a.md", "# A\n\nSee [[Ghost]] for more.\n"), ("b.md", "# B\n\nThe [[Ghost]] haunts it.\n")]);
    assert_eq!(pages, [("ghost".to_string(), vec!["a.md".to_string(), "b.md".to_string()])]);
}

#[test]
fn a_quote_never_ends_or_starts_inside_a_code_block() {
    // A long note (one block, as the Rust Reference writes `> [!NOTE]`) whose sentences run into its code:
    // a period inside a comment is no place to end a quote.
    let db = TestDb::new(4000, 0);
    let code: String = (0..12).map(|n| format!("> let x{n} = 1; // The value. It is {n}.\n")).collect();
    let text = format!(
        "# Capture\n\n> [!NOTE]\n> Perhaps surprisingly, a [[slice pattern]] captures the place of the pointee. It is read.\n>\n> ```rust\n{code}> ```\n>\n> After the example, the [[scrutinee]] is described again. It is the last sentence of the note.\n"
    );
    let file = db.file("capture.md", &text);
    let signals = crate::concept_signals(&db, file);
    for label in ["slice pattern", "scrutinee"] {
        let mention = signals.iter().find(|s| s.label == label).unwrap();
        let quote = &text[mention.excerpt.start as usize..mention.excerpt.end as usize];
        assert!(quote.contains(&format!("[[{label}]]")), "{quote}");
        let fences = quote.lines().filter(|line| line.trim_start_matches(['>', ' ']).starts_with("```")).count();
        assert!(fences % 2 == 0, "a quote holds whole fences: {quote:?}");
    }
}

#[test]
fn a_quote_inside_one_code_block_that_shows_a_fence_is_no_quote_and_no_panic() {
    // A `~~~` block showing a ``` block: a mention's place can start and end inside the same code.
    let db = TestDb::new(4000, 0);
    let lines: String = (0..40).map(|n| format!("A line {n} of the shown text. It ends.\n")).collect();
    let text =
        format!("# Shown\n\nSee [[outside]] first.\n\n~~~md\n```rust\n{lines}```\n~~~\n\nThe [[after]] note. Done.\n");
    let file = db.file("shown.md", &text);
    let signals = crate::concept_signals(&db, file);
    for signal in signals.iter() {
        let quote = &text[signal.excerpt.start as usize..signal.excerpt.end as usize];
        assert!(!quote.contains("A line 20"), "no quote from inside the code: {quote:?}");
    }
}

#[test]
fn a_quote_starts_after_a_rule_id_and_ends_before_a_quotes_blank_line() {
    let db = TestDb::new(4000, 0);
    let text = "# Pointers\n\nr[type.pointer.intro]\nA *raw pointer* is a [[pointer]] without safety or liveness guarantees.\n\n\
                r[type.pointer.shared]\n[[Shared]] references are written `&type`.\n";
    let file = db.file("pointer.md", text);
    let signals = crate::concept_signals(&db, file);
    for label in ["pointer", "Shared"] {
        let mention = signals.iter().find(|s| s.label == label).unwrap();
        let quote = &text[mention.excerpt.start as usize..mention.excerpt.end as usize];
        assert!(!quote.contains("r[type"), "{quote:?}");
        assert!(quote.contains(&format!("[[{label}]]")), "{quote:?}");
    }
    // A wikilink alone on its line is no rule id: the quote keeps it.
    let notes = "# Notes\n\n[[Compost]]\nTurned weekly.\n";
    let file = db.file("notes.md", notes);
    let signals = crate::concept_signals(&db, file);
    let compost = signals.iter().find(|s| s.label == "Compost").unwrap();
    assert!(notes[compost.excerpt.start as usize..].starts_with("[[Compost]]"));
    // A quote that stops before a fence leaves the quote's blank line out.
    let code: String = (0..24).map(|n| format!("> let x{n} = 1; // The value. It is {n}.\n")).collect();
    let noted =
        format!("# Note\n\n> A [[slice pattern]] captures the pointee. It is read.\n>\n> ```rust\n{code}> ```\n");
    let file = db.file("note.md", &noted);
    let signals = crate::concept_signals(&db, file);
    let slice = signals.iter().find(|s| s.label == "slice pattern").unwrap();
    assert!(
        noted[..slice.excerpt.end as usize].ends_with("It is read."),
        "{:?}",
        &noted[slice.excerpt.start as usize..slice.excerpt.end as usize]
    );
}

#[test]
fn a_quote_that_introduces_an_example_shows_it() {
    let db = TestDb::new(4000, 0);
    let text = "# Setup\n\nTo install the [[toolchain]], run this:\n\n```console\n$ rustup install stable\n```\n\n\
                The [[linker]] is chosen for you:\n\n```rust\n{{#rustdoc_include ../listings/main.rs}}\n```\n\n\
                The [[runner]] prints this:\n\nA paragraph, not code.\n";
    let file = db.file("setup.md", text);
    let signals = crate::concept_signals(&db, file);
    let quote = |label: &str| {
        let mention = signals.iter().find(|s| s.label == label).unwrap();
        &text[mention.excerpt.start as usize..mention.excerpt.end as usize]
    };
    assert!(quote("toolchain").ends_with("$ rustup install stable\n```"), "{:?}", quote("toolchain"));
    // A block of placeholders for code kept elsewhere is not shown; nor is what follows other than code.
    assert!(quote("linker").ends_with("chosen for you:"), "{:?}", quote("linker"));
    assert!(quote("runner").ends_with("prints this:"), "{:?}", quote("runner"));
    // A block longer than a quote may grow, or one its chunk does not close, is left out.
    let long: String = (0..200).map(|n| format!("let x{n} = {n};\n")).collect();
    let text =
        format!("# Long\n\nThe [[example]] reads:\n\n```rust\n{long}```\n\nThe [[open]] one:\n\n```rust\nlet y = 1;\n");
    let file = db.file("long.md", &text);
    let signals = crate::concept_signals(&db, file);
    for label in ["example", "open"] {
        let mention = signals.iter().find(|s| s.label == label).unwrap();
        let quote = &text[mention.excerpt.start as usize..mention.excerpt.end as usize];
        assert!(quote.ends_with(':'), "{quote:?}");
    }
}

#[test]
fn an_admonitions_or_a_containers_opening_line_is_never_quoted() {
    let db = TestDb::new(4000, 0);
    let text = "# Docker\n\n## Getting started\n\n!!! tip\n\n    Check out the [[example project]] for best practices.\n\n\
                ??? note \"Caching\"\n    The [[cache]] is kept between builds.\n\n\
                ## Serving\n\n:::tip Note\nServe the HTML from a [[backend]] with an integration.\n:::\n";
    let file = db.file("docker.md", text);
    let signals = crate::concept_signals(&db, file);
    for signal in signals.iter().filter(|s| s.quotable) {
        let quote = &text[signal.excerpt.start as usize..signal.excerpt.end as usize];
        assert!(!quote.contains("!!!") && !quote.contains("???") && !quote.contains(":::"), "{quote:?}");
    }
    let cache = signals.iter().find(|s| s.label == "cache").unwrap();
    assert!(text[cache.excerpt.start as usize..].starts_with("The [[cache]]"));
    let backend = signals.iter().find(|s| s.label == "backend").unwrap();
    assert!(text[backend.excerpt.start as usize..].starts_with("Serve the HTML"));
}

/// Hostile Markdown for the fence-aware chunker and quotes: unbalanced and nested fences in lists and
/// quotes, rule ids, multibyte text and long lines, at several chunk sizes. Nothing panics, and every chunk
/// and quote is a range of whole characters inside the text.
#[test]
fn hostile_fences_lists_and_rule_ids_never_panic_and_stay_on_char_boundaries() {
    let pieces = [
        "```rust\n",
        "```\n",
        "~~~\n",
        "````\n",
        "> ```\n",
        "- ```\n",
        "  ```\n",
        "3. ```\n",
        "```x``` inline\n",
        "r[type.pointer.intro]\n",
        "> r[a.b]\n",
        "[[Link]]\n",
        "A *term* is a thing. It ends.\n",
        "é ü ñ 漢字 ",
        "- item one\n",
        "  wrapped line.\n",
        "> > [!NOTE]\n",
        ">\n",
        "\n",
        "\n\n",
        "# Heading\n",
        "## Sub\n",
        "<!-- c -->\n",
        "<style>\n",
        "text.",
        " // a comment. More.\n",
        "| [[Head]] | b |\n",
        "| --- | :-: |\n",
        "| [[Row]] | cell é |\n",
        "| **label** |  |\n",
        "- [[Only]] a link\n",
        "!!! tip\n",
        "??? note \"T\"\n",
        "=== \"Tab\"\n",
        "    ```console\n",
        "Run this:\n",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as usize
    };
    let mut headers = 0;
    for round in 0..600 {
        let length = 5 + next(80);
        let text: String = (0..length).map(|_| pieces[next(pieces.len())]).collect();
        let db = TestDb::new([64, 200, 1600][round % 3], [0, 40, 160][round % 3]);
        let file = db.file("hostile.md", &text);
        let chunks = crate::chunks(&db, file);
        for chunk in chunks.iter() {
            let (start, end) = (chunk.start as usize, chunk.end as usize);
            assert!(start <= end && end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end));
        }
        // Chunks start and end in order: a table row's header is looked for in the last chunk to start before
        // it alone.
        assert!(chunks.windows(2).all(|pair| pair[0].start <= pair[1].start && pair[0].end <= pair[1].end));
        for signal in crate::concept_signals(&db, file).iter() {
            let (start, end) = (signal.excerpt.start as usize, signal.excerpt.end as usize);
            assert!(start <= end && end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end));
            if let Some(header) = signal.excerpt.table_header {
                let chunk = chunks.iter().find(|chunk| chunk.ordinal == header.chunk).expect("the header's chunk");
                assert!(chunk.start <= header.start && header.end <= chunk.end && header.end < signal.excerpt.start);
                assert!(text[header.start as usize..header.end as usize].starts_with('|'));
                headers += 1;
            }
        }
    }
    assert!(headers > 0, "the documents hold tables whose rows are quoted under their header");
}

/// A paragraph far larger than a chunk is cut at its sentences' ends; a mention whose sentence starts right
/// after a cut (at the white space no chunk holds) is kept like any other.
#[test]
fn every_mention_of_a_paragraph_cut_into_chunks_is_a_signal() {
    let db = TestDb::new(1000, 0);
    let file = db.file("dense.md", &mention_dense(1_000));
    assert!(crate::chunks(&db, file).len() > 20, "the paragraph is cut into many chunks");
    let signals = crate::concept_signals(&db, file);
    let count = |kind| signals.iter().filter(|s| s.kind == kind).count();
    assert_eq!(count(crate::wiki::SignalKind::Defined), 1_000);
    assert_eq!(count(crate::wiki::SignalKind::Wikilink), 3_500);
}
