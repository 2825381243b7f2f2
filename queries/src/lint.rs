//! Lint across files as queries: each source's findings, resolved against the project through one query
//! per link target, so salsa's dependency edges are the project's reverse link graph.
//!
//! The driver keeps one [`LintSource`] per source (its facts, names, size and revision, as the build or the
//! index has them) and sets a field only when its value changed. Then:
//! - [`file_lint`] re-runs for a source whose facts changed, and for a source one of whose link targets
//!   answers differently: a target that appeared, went, was renamed (a wikilink name), lost the anchor a
//!   link names, or changed revision under a `file://PATH@REV` citation;
//! - a target is looked up by path or by wikilink name through the interned [`LinkKey`], so the index of
//!   every path and name re-runs when a source comes, goes or is renamed, each lookup re-runs after it,
//!   and a file whose lookups all answer as before is not checked again;
//! - [`project_findings`] gathers what no one file decides: new-article candidates, exact duplicates and
//!   orphan wiki pages.
//!
//! What only the file system can answer (a link to a file that is not a source) is returned as a
//! [`DiskCheck`] for the driver to stat; severities, `[lint]` rule settings, ignored links and suppression
//! comments are applied by the driver too, so a settings change re-checks nothing here.

use std::collections::{BTreeMap, HashMap, HashSet};

use rustc_hash::FxHashMap;

use crate::links::{in_folder, is_bare_path, join, link_candidates, percent_decode, target_of, wikilink_key};
use crate::{Db, LintFacts, SourceKind, SourceRef};

/// One source as lint sees it. The driver creates one per path.
#[salsa::input(debug)]
pub struct LintSource {
    /// The path relative to the project root, with `/` separators.
    #[returns(ref)]
    pub path: String,
    #[returns(copy)]
    pub size: u64,
    /// The content hash: what a `file://PATH@REV` citation must match.
    #[returns(ref)]
    pub revision: String,
    /// The names a wikilink may use for it (path, file name, title, aliases), normalized.
    #[returns(ref)]
    pub names: Vec<String>,
    #[returns(ref)]
    pub facts: LintFacts,
}

/// The project lint resolves links against: one per database.
#[salsa::input(singleton, debug)]
pub struct LintProject {
    /// Every source, sorted by path.
    #[returns(ref)]
    pub sources: Vec<LintSource>,
    /// The generated files the index lists, which decide whether a link into the output folder resolves;
    /// `None` without an index, when the file system decides.
    #[returns(ref)]
    pub generated: Option<GeneratedFiles>,
    /// The output folder's `wiki/`, relative to the project root: hand-written wiki pages live there.
    #[returns(ref)]
    pub wiki_folder: String,
    /// `[lint] new_article_min_sources`.
    #[returns(copy)]
    pub new_article_min_sources: u32,
    /// `[lint] site_roots`: folders (project-relative, no trailing `/`) where a link from the site's root
    /// (`/guide/`) may resolve, after the project's root; [`site_roots`] adds the folder every source shares.
    #[returns(ref)]
    pub site_roots: Vec<String>,
}

/// Where a link from the site's root may resolve, after the project's root: the configured site roots, then
/// the folder every source but the hand-written wiki pages shares (`docs` where every source is under `docs/`:
/// a documentation site's sources are its pages, and its root-relative links name them from there).
#[salsa::tracked(returns(ref))]
fn site_roots(db: &dyn Db, project: LintProject) -> Vec<String> {
    let wiki = format!("{}/", project.wiki_folder(db));
    let paths =
        project.sources(db).iter().map(|source| source.path(db).as_str()).filter(|path| !path.starts_with(&wiki));
    let shared = crate::links::shared_folders(paths);
    let mut roots = project.site_roots(db).clone();
    let shared = shared.trim_end_matches('/');
    if !shared.is_empty() && !roots.iter().any(|root| root == shared) {
        roots.push(shared.to_string());
    }
    roots
}

/// The generated files an index lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GeneratedFiles {
    /// The output folder, project-relative, with its trailing `/`.
    pub output: String,
    /// The files, project-relative.
    pub paths: HashSet<String>,
}

/// A path or a normalized wikilink name a link looks up: one query key per target, shared by every file
/// that links it.
#[salsa::interned(debug)]
pub struct LinkKey<'db> {
    #[returns(ref)]
    pub text: String,
}

/// One finding, before the driver applies the configured severity and the file's suppression comments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub code: &'static str,
    pub message: String,
    /// The link destination as written, for a finding about a link: `[lint] ignore_links` may drop it.
    pub link: Option<String>,
}

impl Finding {
    /// A finding about no link, at `line` and `column` of `path`.
    #[must_use]
    pub fn at(path: &str, line: u32, column: u32, code: &'static str, message: String) -> Finding {
        Finding { path: path.to_string(), line, column, code, message, link: None }
    }
}

/// A link whose target is not a source: only the file system can say whether it exists.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DiskCheck {
    pub line: u32,
    pub column: u32,
    /// The destination as written.
    pub destination: String,
    /// The paths it may name, relative to the project root (one may climb out of it with `..`): the link
    /// resolves when any exists.
    pub targets: Vec<String>,
}

/// A wikilink target no source has: a candidate for a new article when enough sources link it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Unresolved {
    /// The normalized name.
    pub key: String,
    /// The name as written, without anchor.
    pub shown: String,
    pub line: u32,
    pub column: u32,
}

/// What checking one source found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileLint {
    pub findings: Vec<Finding>,
    pub disk_checks: Vec<DiskCheck>,
    pub unresolved: Vec<Unresolved>,
    /// The other sources it links to, by path or by name: a wiki page no one links to is an orphan.
    pub links_to: Vec<LintSource>,
}

/// Every source by path and by wikilink name. Reads only paths and names, so an edit that keeps a source's
/// names leaves it equal.
#[derive(Debug, Default, PartialEq, Eq)]
struct Targets {
    by_path: FxHashMap<String, LintSource>,
    by_name: FxHashMap<String, Vec<LintSource>>,
}

#[salsa::tracked(returns(ref))]
fn targets(db: &dyn Db, project: LintProject) -> Targets {
    let mut targets = Targets::default();
    for &source in project.sources(db) {
        targets.by_path.insert(source.path(db).clone(), source);
        for name in source.names(db) {
            targets.by_name.entry(name.clone()).or_default().push(source);
        }
    }
    targets
}

/// The source at a project path, if any.
#[salsa::tracked(returns(copy))]
fn source_at<'db>(db: &'db dyn Db, project: LintProject, path: LinkKey<'db>) -> Option<LintSource> {
    targets(db, project).by_path.get(path.text(db)).copied()
}

/// The sources a normalized wikilink name names.
#[salsa::tracked(returns(ref))]
fn sources_named<'db>(db: &'db dyn Db, project: LintProject, name: LinkKey<'db>) -> Vec<LintSource> {
    targets(db, project).by_name.get(name.text(db)).cloned().unwrap_or_default()
}

/// The anchors a link into a Markdown source may name, lowercased and by their letters and digits alone
/// ([`folded_anchor`]); `None` for other kinds, whose anchors lint does not know.
#[salsa::tracked(returns(ref))]
fn anchors(db: &dyn Db, source: LintSource) -> Option<HashSet<String>> {
    let anchors = || {
        let facts = source.facts(db);
        let lowercase = facts.anchors.iter().map(|a| a.to_lowercase());
        lowercase.chain(facts.anchors.iter().map(|a| folded_anchor(a))).collect()
    };
    (SourceKind::from_path(source.path(db)) == SourceKind::Markdown).then(anchors)
}

/// An anchor by its letters and digits alone, marked so that it is never a written anchor: site generators make
/// a heading's anchor with rules of their own (VitePress: `build.assetsInlineLimit` is
/// `#build-assetsinlinelimit`, GitHub `#buildassetsinlinelimit`), and an anchor whose letters and digits are a
/// known one's is that one.
fn folded_anchor(anchor: &str) -> String {
    std::iter::once('\0').chain(anchor.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase)).collect()
}

/// Whether a path in the output folder is a generated file the index lists; `None` when the path is not
/// in the output folder or there is no index (the file system decides).
#[salsa::tracked(returns(copy))]
fn generated_file<'db>(db: &'db dyn Db, project: LintProject, path: LinkKey<'db>) -> Option<bool> {
    let generated = project.generated(db).as_ref()?;
    let path = path.text(db);
    path.starts_with(&generated.output).then(|| generated.paths.contains(path))
}

/// The source a resolved link reaches: the path as written, its Markdown twin, or the path with `.md`
/// added (`links::link_candidates`). One query per link target, however many candidates it tries.
#[salsa::tracked(returns(copy))]
fn link_target<'db>(db: &'db dyn Db, project: LintProject, resolved: LinkKey<'db>) -> Option<LintSource> {
    let by_path = &targets(db, project).by_path;
    link_candidates(resolved.text(db)).find_map(|path| by_path.get(&path).copied())
}

/// The source a site serves at a link from its root, resolved under a site root, when no path names it as
/// written (`/develop/tests/webdriver/` for `develop/Tests/WebDriver/index.mdx`).
#[salsa::tracked(returns(copy))]
fn route_target<'db>(db: &'db dyn Db, project: LintProject, resolved: LinkKey<'db>) -> Option<LintSource> {
    routes(db, project).get(&crate::links::route_key(resolved.text(db))).copied()
}

/// Each source by the route a site serves it at (`links::route_key`), the first in path order where two share
/// one: made only when a link from a site's root names no path, so a project without such links never keys
/// its sources so.
#[salsa::tracked(returns(ref))]
fn routes(db: &dyn Db, project: LintProject) -> FxHashMap<String, LintSource> {
    let mut routes = FxHashMap::default();
    for &source in project.sources(db) {
        routes.entry(crate::links::route_key(source.path(db))).or_insert(source);
    }
    routes
}

fn lookup_path(db: &dyn Db, project: LintProject, path: &str) -> Option<LintSource> {
    source_at(db, project, LinkKey::new(db, path.to_string()))
}

fn lookup_name<'db>(db: &'db dyn Db, project: LintProject, name: &str) -> &'db [LintSource] {
    sources_named(db, project, LinkKey::new(db, name.to_string()))
}

/// A folder's landing page (`README.md`, `index.md`): it introduces the folder rather than making claims, and
/// nothing needs to link to it.
#[must_use]
pub fn is_landing_page(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    matches!(name.as_str(), "readme.md" | "index.md")
}

/// Which side of `[[first|second]]` names the linked article. Obsidian writes the target first, Dendron
/// last: a side with an anchor (`#heading`, `^block`) is the target, then a side without spaces (a note id
/// or file name) over one with them (link text); otherwise the first.
fn target_side<'a>(first: &'a str, second: Option<&'a str>) -> &'a str {
    let Some(second) = second else { return first };
    let anchored = |side: &str| side.contains(['#', '^']);
    let spaced = |side: &str| side.trim().contains(' ');
    match (anchored(first), anchored(second), spaced(first), spaced(second)) {
        (false, true, ..) | (false, false, true, false) => second,
        _ => first,
    }
}

/// What one source's links, wikilinks, footnotes, front matter, markers and citations break, each link
/// resolved against the project through the lookups above.
#[salsa::tracked(returns(ref))]
pub fn file_lint(db: &dyn Db, source: LintSource) -> FileLint {
    let project = LintProject::get(db);
    let path = source.path(db);
    let facts = source.facts(db);
    let mut lint = FileLint::default();
    let finding =
        |line: u32, column: u32, code: &'static str, message: String| Finding::at(path, line, column, code, message);
    let mut linked: Vec<LintSource> = Vec::new();
    for link in &facts.links {
        let destination = link.value.trim();
        let (broken, target) = check_link(db, project, path, destination, link, &mut lint.disk_checks);
        linked.extend(target.filter(|&t| t != source));
        if let Some((code, message)) = broken {
            lint.findings
                .push(Finding { link: Some(link.value.clone()), ..finding(link.line, link.column, code, message) });
        }
    }
    for wikilink in &facts.wikilinks {
        let sides: Vec<&String> = std::iter::once(&wikilink.first).chain(wikilink.second.as_ref()).collect();
        // Each side's targets by name; `None` for a side naming the page itself (`[[#heading]]`).
        let named: Vec<Option<&[LintSource]>> =
            sides.iter().map(|side| wikilink_key(path, side).map(|key| lookup_name(db, project, &key))).collect();
        for targets in named.iter().flatten() {
            linked.extend(targets.iter().filter(|&&t| t != source));
        }
        // A link into another vault or tool (`dendron://vault/note`) cannot be judged from this tree.
        if sides.iter().any(|side| side.contains("://")) {
            continue;
        }
        if named.iter().any(|targets| targets.is_none_or(|targets| !targets.is_empty())) {
            continue;
        }
        let shown = match &wikilink.second {
            Some(second) => format!("[[{}|{second}]]", wikilink.first),
            None => format!("[[{}]]", wikilink.first),
        };
        let message = format!("wikilink `{shown}` matches no page by path, file name, title or alias");
        lint.findings.push(finding(wikilink.line, wikilink.column, "unresolved_wikilink", message));
        // The side that names the article: Obsidian writes `[[target|alias]]`, Dendron `[[alias|target]]`.
        let target = target_side(&wikilink.first, wikilink.second.as_deref());
        lint.unresolved.push(Unresolved {
            key: wikilink_key(path, target).unwrap_or_default(),
            shown: target.split(['#', '^']).next().unwrap_or(target).trim().to_string(),
            line: wikilink.line,
            column: wikilink.column,
        });
    }
    lint.findings.extend(text_findings(path, facts));
    for reference in &facts.source_refs {
        if let Some((code, message)) = check_source_ref(db, project, &reference.value) {
            lint.findings.push(finding(reference.line, reference.column, code, message));
        }
    }
    if in_folder(path, project.wiki_folder(db)) && !is_landing_page(path) {
        for section in &facts.uncited_sections {
            let what = if section.value.is_empty() {
                "the text before the first heading".to_string()
            } else {
                format!("section `{}`", section.value)
            };
            let message = format!("{what} makes claims but cites nothing: link, wikilink or footnote its sources");
            lint.findings.push(finding(section.line, section.column, "missing_citation", message));
        }
    }
    linked.sort_unstable_by_key(|&t| salsa::plumbing::AsId::as_id(&t));
    linked.dedup();
    lint.links_to = linked;
    lint
}

/// What a source's own text breaks, with no other source to look at: footnotes undefined or unused,
/// malformed front matter, contradiction markers.
fn text_findings(path: &str, facts: &LintFacts) -> Vec<Finding> {
    let finding =
        |line: u32, column: u32, code: &'static str, message: String| Finding::at(path, line, column, code, message);
    let mut findings = Vec::new();
    let referenced: HashSet<&str> = facts.footnote_refs.iter().map(|r| r.value.as_str()).collect();
    for reference in &facts.undefined_footnotes {
        let message = format!("footnote `[^{}]` has no definition", reference.value);
        findings.push(finding(reference.line, reference.column, "undefined_footnote", message));
    }
    for definition in facts.footnote_defs.iter().filter(|d| !referenced.contains(d.value.as_str())) {
        let message = format!("footnote `[^{}]` is defined but never referenced", definition.value);
        findings.push(finding(definition.line, definition.column, "unused_footnote", message));
    }
    for problem in &facts.problems {
        findings.push(finding(problem.line, problem.column, "malformed_front_matter", problem.value.clone()));
    }
    for marker in &facts.markers {
        let message = format!("contradiction marker `{}` left in the text", marker.value);
        findings.push(finding(marker.line, marker.column, "contradiction_marker", message));
    }
    findings
}

/// One link destination: what it breaks, if anything, and the source it reaches. A target that is not a
/// source and not a generated file the index lists is left to the file system (`disk_checks`). Lint facts
/// hold no external links (with a scheme, or protocol-relative): those are never checked.
fn check_link(
    db: &dyn Db,
    project: LintProject,
    from: &str,
    destination: &str,
    link: &crate::Located,
    disk_checks: &mut Vec<DiskCheck>,
) -> (Option<(&'static str, String)>, Option<LintSource>) {
    if destination.is_empty() {
        return (None, None);
    }
    let anchor = destination.split_once('#').map(|(_, anchor)| percent_decode(anchor));
    let target = target_of(destination);
    let folder = from.rsplit_once('/').map_or("", |(folder, _)| folder);
    // What the link may name, in order: a link from the site's root (`/guide/`) names a path at the project's
    // root, then under a site root (VitePress serves `docs/guide/index.md` there, Starlight
    // `src/content/docs/…`); a bare one (`api/Store.md`) a path in its file's folder, then under a site root,
    // as Docusaurus resolves it from `understanding/glossary.md`.
    let (first, under_roots) = if target.is_empty() {
        (from.to_string(), None)
    } else if let Some(rooted) = target.strip_prefix('/') {
        let Some(path) = join("", rooted) else { return (None, None) };
        (path.clone(), Some(path))
    } else if let Some(path) = join(folder, &target) {
        (path, is_bare_path(&target).then(|| target.clone()))
    } else {
        // Outside the project: only the file system can tell.
        let on_disk = if folder.is_empty() { target } else { format!("{folder}/{target}") };
        disk_checks.push(DiskCheck {
            line: link.line,
            column: link.column,
            destination: link.value.clone(),
            targets: vec![on_disk],
        });
        return (None, None);
    };
    let roots: &[String] = if under_roots.is_some() { site_roots(db, project) } else { &[] };
    let elsewhere = under_roots.iter().flat_map(|path| roots.iter().filter_map(move |root| join(root, path)));
    let resolutions: Vec<String> =
        std::iter::once(first.clone()).chain(elsewhere.filter(|path| *path != first)).collect();
    let rooted = target.starts_with('/');
    let indexed =
        resolutions.iter().find_map(|path| link_target(db, project, LinkKey::new(db, path.clone()))).or_else(|| {
            let mut routes = resolutions.iter().filter(|_| rooted);
            routes.find_map(|path| route_target(db, project, LinkKey::new(db, path.clone())))
        });
    let Some(indexed) = indexed else {
        // A path in the output folder is there when the index lists it; any other, when the file system has it.
        let mut on_disk = Vec::new();
        for path in resolutions {
            match generated_file(db, project, LinkKey::new(db, path.clone())) {
                Some(true) => return (None, None),
                Some(false) => {}
                None => on_disk.push(path),
            }
        }
        if on_disk.is_empty() {
            return (Some(broken(destination)), None);
        }
        disk_checks.push(DiskCheck {
            line: link.line,
            column: link.column,
            destination: link.value.clone(),
            targets: on_disk,
        });
        return (None, None);
    };
    let Some(anchor) = anchor.filter(|a| !a.is_empty()) else { return (None, Some(indexed)) };
    let Some(known) = anchors(db, indexed) else { return (None, Some(indexed)) };
    if known.contains(&anchor.to_lowercase()) || known.contains(&folded_anchor(&anchor)) {
        return (None, Some(indexed));
    }
    let target_path = indexed.path(db);
    let shown = if target_path == from { "this file".to_string() } else { format!("`{target_path}`") };
    let message = format!("link to `{destination}`: {shown} has no heading or anchor `{anchor}`");
    (Some(("broken_anchor", message)), Some(indexed))
}

/// The finding for a link whose target does not exist.
#[must_use]
pub fn broken(destination: &str) -> (&'static str, String) {
    ("broken_link", format!("link to `{}`: no such file or folder", destination.trim()))
}

/// The path and revision (lowercase hex, at least 6 digits) a `file://PATH@REV#…` ref pins; `None` for a
/// ref that pins no revision (anything else after `@` is not a citation).
#[must_use]
pub fn pinned_revision(reference: &str) -> Option<(String, String)> {
    let (path, revision) = SourceRef::from_uri(reference).name().split_once('@')?;
    let revision = revision.split(['#', '?']).next().unwrap_or_default();
    (revision.len() >= 6 && revision.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| (percent_decode(path), revision.to_ascii_lowercase()))
}

/// `stale_citation` and `unresolved_source_ref` for a `file://PATH@REV` ref written in a source.
fn check_source_ref(db: &dyn Db, project: LintProject, reference: &str) -> Option<(&'static str, String)> {
    let (path, revision) = pinned_revision(reference)?;
    let Some(cited) = lookup_path(db, project, &path) else {
        return Some(("unresolved_source_ref", format!("cites `{path}`, which is not a source of this project")));
    };
    let current = cited.revision(db);
    (!current.starts_with(&revision)).then(|| {
        (
            "stale_citation",
            format!(
                "cites `{path}` at revision {revision}, but the source is now at {}: check the claim and update the ref",
                &current[..12.min(current.len())]
            ),
        )
    })
}

/// What no one file decides: `new_article_candidate` (a name several sources link that no source has),
/// `duplicate_page` for the same content under different paths, and `orphan_page` (a hand-written wiki page
/// no other source links to).
#[salsa::tracked(returns(ref))]
pub fn project_findings(db: &dyn Db, project: LintProject) -> Vec<Finding> {
    let sources = project.sources(db);
    let mut findings = Vec::new();
    let finding = Finding::at;

    // Unresolved wikilink targets, by normalized name: the sources that link them and the first place.
    let mut unresolved: BTreeMap<&str, (HashSet<LintSource>, &str, &Unresolved)> = BTreeMap::new();
    let mut linked: HashSet<LintSource> = HashSet::new();
    for &source in sources {
        let lint = file_lint(db, source);
        for target in &lint.unresolved {
            let entry =
                unresolved.entry(target.key.as_str()).or_insert_with(|| (HashSet::new(), source.path(db), target));
            entry.0.insert(source);
        }
        linked.extend(lint.links_to.iter().copied());
    }
    let min_sources = project.new_article_min_sources(db).max(1) as usize;
    for (linking, path, first) in unresolved.into_values().filter(|(linking, ..)| linking.len() >= min_sources) {
        let message = format!(
            "`{}` is linked from {} sources but no page has that name: a candidate for a new article",
            first.shown,
            linking.len()
        );
        findings.push(finding(path, first.line, first.column, "new_article_candidate", message));
    }

    // Exact duplicates: the same content hash under different paths. Tiny files (a title and a line) are
    // too common to mean anything.
    let mut by_revision: HashMap<&str, Vec<&str>> = HashMap::new();
    for &source in sources.iter().filter(|s| s.size(db) >= 64) {
        by_revision.entry(source.revision(db).as_str()).or_default().push(source.path(db).as_str());
    }
    for group in by_revision.values().filter(|g| g.len() > 1) {
        for path in group {
            let others: Vec<String> = group.iter().filter(|p| *p != path).map(|p| format!("`{p}`")).collect();
            findings.push(finding(path, 1, 1, "duplicate_page", format!("same content as {}", others.join(", "))));
        }
    }

    let wiki_folder = project.wiki_folder(db);
    for &page in sources {
        let path = page.path(db);
        if in_folder(path, wiki_folder) && !is_landing_page(path) && !linked.contains(&page) {
            let message = "no other document links to this wiki page".to_string();
            findings.push(finding(path, 1, 1, "orphan_page", message));
        }
    }
    findings
}
