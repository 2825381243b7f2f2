//! Lint across files: the findings, and which files an edit re-checks (the link graph is salsa's dependency
//! edges, so a rename re-checks only the files that link the name).

use super::*;
use crate::lint::{GeneratedFiles, LintProject, LintSource, file_lint, project_findings};
use crate::{LintFacts, Located, WikiLinkFact};

fn located(value: &str, line: u32) -> Located {
    Located { value: value.to_string(), line, column: 1 }
}

fn wikilink(target: &str, line: u32) -> WikiLinkFact {
    WikiLinkFact { first: target.to_string(), second: None, line, column: 1 }
}

/// A project of sources, each `(path, title, facts)`, with the given wiki folder and no generated files.
struct Project {
    db: TestDb,
    sources: Vec<LintSource>,
}

impl Project {
    fn new(files: Vec<(&str, &str, LintFacts)>, wiki_folder: &str) -> Project {
        let db = TestDb::new(1000, 0);
        let sources: Vec<LintSource> = files
            .into_iter()
            .map(|(path, title, facts)| {
                let names = crate::links::wiki_names(path, title, &[]);
                let revision = crate::content_hash(path.as_bytes());
                LintSource::new(&db, path.to_string(), 100, revision, names, facts)
            })
            .collect();
        let generated = Some(GeneratedFiles { output: ".out/".to_string(), paths: Default::default() });
        LintProject::new(&db, sources.clone(), generated, wiki_folder.to_string(), 2, Vec::new());
        Project { db, sources }
    }

    fn source(&self, path: &str) -> LintSource {
        *self.sources.iter().find(|s| s.path(&self.db) == path).unwrap()
    }

    /// Every finding as `path:line code`, and every link left to the file system as `path:line disk TARGET`,
    /// sorted.
    fn findings(&self) -> Vec<String> {
        let db = &self.db;
        let project = LintProject::get(db);
        let mut found: Vec<String> = Vec::new();
        for &source in project.sources(db) {
            let checked = file_lint(db, source);
            found.extend(checked.findings.iter().map(|f| format!("{}:{} {}", f.path, f.line, f.code)));
            let path = source.path(db);
            found.extend(
                checked.disk_checks.iter().map(|d| format!("{path}:{} disk {}", d.line, d.targets.join(" or "))),
            );
        }
        found.extend(project_findings(db, project).iter().map(|f| format!("{}:{} {}", f.path, f.line, f.code)));
        found.sort();
        found
    }

    /// The file checks that ran since the last call, by path.
    fn rechecked(&self) -> Vec<String> {
        let paths: Vec<(salsa::Id, String)> =
            self.sources.iter().map(|s| (s.as_id(), s.path(&self.db).clone())).collect();
        let ran = self.db.take_executed_by(|id| paths.iter().find(|(i, _)| *i == id).map(|(_, p)| p.clone()));
        ran.into_iter().filter(|query| query.starts_with("file_lint")).collect()
    }
}

fn links(values: &[(&str, u32)]) -> LintFacts {
    LintFacts { links: values.iter().map(|(v, l)| located(v, *l)).collect(), ..LintFacts::default() }
}

fn wikilinks(targets: &[(&str, u32)]) -> LintFacts {
    LintFacts { wikilinks: targets.iter().map(|(t, l)| wikilink(t, *l)).collect(), ..LintFacts::default() }
}

fn with_anchors(anchors: &[&str]) -> LintFacts {
    LintFacts { anchors: anchors.iter().map(|a| (*a).to_string()).collect(), ..LintFacts::default() }
}

/// A documentation site's links: from its root (`/guide/features#hmr`, as VitePress and Starlight write them)
/// they name pages under the folder every source shares, by the route the site serves them at (lowercase,
/// spaces as `-`), a folder names its index page, a page is linked without its `.md` or `.mdx`, and a heading's
/// anchor made by the site's rules (`build.assetsInlineLimit` as `build-assetsinlinelimit`) names it. What no
/// source holds is left to the file system at each place it may be.
#[test]
fn a_sites_root_relative_links_name_its_pages() {
    let anchors = vec!["hmr".to_string(), "buildassetsinlinelimit".to_string()];
    let features = LintFacts { anchors, ..links(&[("/", 1), ("/guide/", 2), ("/dev-tools/web-driver/", 3)]) };
    let home = links(&[
        ("/guide/features#hmr", 1),
        ("/plugins/tabs", 2),
        ("../README", 3),
        ("/guide/features#build-assetsinlinelimit", 6),
    ]);
    let project = Project::new(
        vec![
            ("docs/index.md", "Home", home),
            ("docs/Dev Tools/Web Driver/index.mdx", "WebDriver", LintFacts::default()),
            ("docs/guide/index.md", "Guide", LintFacts::default()),
            ("docs/guide/features.md", "Features", features),
            ("docs/plugins/tabs.mdx", "Tabs", links(&[("/guide/features#nope", 4), ("/og-image.png", 5)])),
        ],
        ".out/wiki",
    );
    assert_eq!(
        project.findings(),
        [
            "docs/index.md:3 disk README",
            "docs/plugins/tabs.mdx:4 broken_anchor",
            "docs/plugins/tabs.mdx:5 disk og-image.png or docs/og-image.png",
        ]
    );
}

/// A bare relative link (no `./` or `../`) that the linking file's folder lacks resolves under the site's
/// roots, as Docusaurus resolves it; one written with `./` does not.
#[test]
fn a_bare_relative_link_falls_back_to_the_sites_root() {
    let glossary = links(&[("api/Store.md#dispatch", 1), ("./api/Store.md", 2), ("../api/Store.md", 3)]);
    let project = Project::new(
        vec![
            ("docs/understanding/glossary.md", "Glossary", glossary),
            ("docs/api/Store.md", "Store", with_anchors(&["dispatch"])),
            ("docs/index.md", "Home", links(&[("api/Store.md#nope", 4)])),
        ],
        ".out/wiki",
    );
    assert_eq!(
        project.findings(),
        ["docs/index.md:4 broken_anchor", "docs/understanding/glossary.md:2 disk docs/understanding/api/Store.md"]
    );
}

#[test]
fn an_edit_that_keeps_what_others_link_rechecks_only_its_own_file() {
    let mut project = Project::new(
        vec![
            ("docs/a.md", "A", links(&[("b.md#setup", 3), ("missing.md", 5)])),
            ("docs/b.md", "B", with_anchors(&["setup"])),
            ("docs/c.md", "C", wikilinks(&[("b", 2)])),
        ],
        ".out/wiki",
    );
    assert_eq!(project.findings(), ["docs/a.md:5 disk docs/missing.md"]);
    project.rechecked();

    // Text added above b's heading: its facts change (a footnote moved down), its anchors do not.
    let b = project.source("docs/b.md");
    let moved = LintFacts { footnote_defs: vec![located("1", 9)], ..with_anchors(&["setup"]) };
    b.set_facts(&mut project.db).to(moved);
    assert_eq!(project.findings(), ["docs/a.md:5 disk docs/missing.md", "docs/b.md:9 unused_footnote"]);
    assert_eq!(project.rechecked(), ["file_lint(docs/b.md)"], "a and c link b, but what they link is unchanged");

    // The heading a links to is renamed: a is checked again, c (which links the file) is not.
    b.set_facts(&mut project.db).to(with_anchors(&["installation"]));
    assert_eq!(project.findings(), ["docs/a.md:3 broken_anchor", "docs/a.md:5 disk docs/missing.md"]);
    assert_eq!(project.rechecked(), ["file_lint(docs/a.md)", "file_lint(docs/b.md)"]);
}

#[test]
fn a_rename_rechecks_only_the_files_that_link_the_old_or_the_new_name() {
    let mut project = Project::new(
        vec![
            ("notes/a.md", "A", wikilinks(&[("Setup Guide", 1)])),
            ("notes/b.md", "Setup Guide", LintFacts::default()),
            ("notes/c.md", "C", wikilinks(&[("Install Notes", 4)])),
            ("notes/d.md", "D", wikilinks(&[("a", 2)])),
            ("notes/e.md", "E", wikilinks(&[("Install Notes", 7)])),
        ],
        ".out/wiki",
    );
    assert_eq!(
        project.findings(),
        ["notes/c.md:4 new_article_candidate", "notes/c.md:4 unresolved_wikilink", "notes/e.md:7 unresolved_wikilink"]
    );
    project.rechecked();

    // b's title changes from "Setup Guide" to "Install Notes": a's link breaks, c's and e's resolve; d links a
    // by path and is not checked again, nor is b, whose own facts did not change.
    let b = project.source("notes/b.md");
    b.set_names(&mut project.db).to(crate::links::wiki_names("notes/b.md", "Install Notes", &[]));
    assert_eq!(project.findings(), ["notes/a.md:1 unresolved_wikilink"]);
    assert_eq!(project.rechecked(), ["file_lint(notes/a.md)", "file_lint(notes/c.md)", "file_lint(notes/e.md)"]);
}

#[test]
fn a_citation_is_rechecked_when_its_source_changes_revision() {
    let cite = |rev: &str| LintFacts {
        source_refs: vec![located(&format!("file://docs/b.md@{rev}"), 2)],
        ..LintFacts::default()
    };
    let mut project = Project::new(
        vec![
            ("docs/a.md", "A", cite(&crate::content_hash(b"docs/b.md")[..12])),
            ("docs/b.md", "B", LintFacts::default()),
            ("docs/c.md", "C", links(&[("b.md", 1)])),
        ],
        ".out/wiki",
    );
    assert_eq!(project.findings(), Vec::<String>::new());
    project.rechecked();
    project.source("docs/b.md").set_revision(&mut project.db).to("f".repeat(64));
    assert_eq!(project.findings(), ["docs/a.md:2 stale_citation"]);
    assert_eq!(project.rechecked(), ["file_lint(docs/a.md)"], "c links b's file, which did not come or go");
}

#[test]
fn wiki_pages_need_citations_and_a_link_from_elsewhere() {
    let uncited = LintFacts { uncited_sections: vec![located("Claims", 3)], ..LintFacts::default() };
    let project = Project::new(
        vec![
            (".out/wiki/linked.md", "Linked", uncited.clone()),
            (".out/wiki/lonely.md", "Lonely", LintFacts::default()),
            (".out/wiki/README.md", "Wiki", links(&[("linked.md", 1)])),
            ("docs/a.md", "A", LintFacts { uncited_sections: vec![located("", 1)], ..LintFacts::default() }),
        ],
        ".out/wiki",
    );
    assert_eq!(
        project.findings(),
        [".out/wiki/linked.md:3 missing_citation", ".out/wiki/lonely.md:1 orphan_page"],
        "only hand-written wiki pages need citations and links; a landing page needs neither"
    );
}
