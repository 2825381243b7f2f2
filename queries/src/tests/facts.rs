//! Lint facts: what one file gives the lint rules, with lines and columns.

use super::*;

fn facts_of(text: &str, patterns: &[&str]) -> crate::LintFacts {
    let db = TestDb::new(1000, 0);
    let _settings = crate::LintSettings::builder(patterns.iter().map(|p| (*p).to_string()).collect(), "wiki".into())
        .durability(Durability::HIGH)
        .new(&db);
    let file = db.file("doc.md", text);
    crate::lint_facts(&db, file).clone()
}

#[test]
fn lint_facts_locate_links_wikilinks_and_anchors() {
    let text = "# Title\n\nSee [the guide](guide.md#install) and [[Target|Alias]] or [[notes.daily]].\n\
                Footnote text [[1]](https://example.com) is not a wikilink, nor is `[[code]]`.\n\n\
                ```sh\n[[ -f x ]] && echo [[fenced]]\n```\n\n<a id=\"custom\"></a>\n\n## Second {#explicit}\n";
    let facts = facts_of(text, &[]);
    // `[[1]](url)` yields neither a wikilink nor a link: the parser reads the brackets first, and the URL is
    // external, so there is nothing for lint to check in it.
    assert_eq!(facts.links.len(), 1, "{:?}", facts.links);
    assert_eq!((facts.links[0].value.as_str(), facts.links[0].line, facts.links[0].column), ("guide.md#install", 3, 5));
    let wikilinks: Vec<(&str, Option<&str>, u32, u32)> =
        facts.wikilinks.iter().map(|w| (w.first.as_str(), w.second.as_deref(), w.line, w.column)).collect();
    assert_eq!(wikilinks, [("Target", Some("Alias"), 3, 39), ("notes.daily", None, 3, 59)]);
    assert_eq!(facts.anchors, ["title", "explicit", "custom"]);
}

#[test]
fn lint_facts_find_undefined_and_defined_footnotes_outside_code() {
    let text = "Text[^a] and[^missing] but `[^code]` is code.\n\n[^a]: Defined.\n[^unused]: Never cited.\n";
    let facts = facts_of(text, &[]);
    let values =
        |items: &[crate::Located]| items.iter().map(|l| (l.value.clone(), l.line, l.column)).collect::<Vec<_>>();
    assert_eq!(values(&facts.footnote_refs), [("a".to_string(), 1, 5)]);
    assert_eq!(values(&facts.undefined_footnotes), [("missing".to_string(), 1, 13)]);
    assert_eq!(values(&facts.footnote_defs), [("a".to_string(), 3, 1), ("unused".to_string(), 4, 1)]);
}

#[test]
fn lint_facts_find_markers_suppressions_and_broken_front_matter() {
    let text = "---\ntitle: Open\nno closing fence\n\nCONTRADICTION: the two pages disagree. <!-- lint-ignore broken_link, unused_footnote -->\n\
                `CONTRADICTION: in code`\n<!-- lint-ignore-file orphan_page -->\n";
    let facts = facts_of(text, &["CONTRADICTION:"]);
    assert_eq!(facts.markers.iter().map(|m| (m.line, m.column)).collect::<Vec<_>>(), [(5, 1)]);
    assert_eq!(
        facts.suppressed_lines,
        [crate::Suppression { line: 5, codes: vec!["broken_link".into(), "unused_footnote".into()] }]
    );
    assert_eq!(facts.suppressed_file, ["orphan_page"]);
    assert_eq!(facts.problems.len(), 1);
    assert!(facts.problems[0].value.contains("never closed"));
}

#[test]
fn lint_facts_rerun_when_patterns_change_but_parse_does_not() {
    let mut db = TestDb::new(1000, 0);
    let settings =
        crate::LintSettings::builder(vec!["XX".to_string()], "wiki".into()).durability(Durability::HIGH).new(&db);
    let file = db.file("a.md", "# A\n\nXX and YY.\n");
    assert_eq!(crate::lint_facts(&db, file).markers.len(), 1);
    db.take_executed(&[file]);
    settings.set_contradiction_patterns(&mut db).with_durability(Durability::HIGH).to(vec!["YY".into(), "XX".into()]);
    assert_eq!(crate::lint_facts(&db, file).markers.len(), 2);
    assert_eq!(db.take_executed(&[file]), ["lint_facts(a.md)"]);
}
