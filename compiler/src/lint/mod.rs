//! The lint rules over per-file facts: links, wikilinks, footnotes, front matter, contradiction markers and
//! duplicates, resolved across the project, and the findings rendered for people, machines, GitHub and SARIF
//! consumers.
//!
//! Lint never writes. A build runs these rules on the facts it commits (`lint_index`); `knowledge lint`
//! (`lint_command`) gathers the facts of the project as it stands and runs the same rules. Each link is
//! resolved against the whole project, so linting a few staged files still sees every target.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use knowledge_queries::links::{join, link_candidates, percent_decode, wiki_names, wikilink_key};
use knowledge_queries::{LintFacts, Origin, SourceKind};
use serde::Serialize;

mod near_duplicates;
mod render;
mod wiki_rules;

pub use render::{render_github, render_human, render_json, render_sarif};
use wiki_rules::{check_page_citations, check_source_refs, check_wiki_pages};

pub use crate::sources::minhash::{Signature, signature, signature_bytes, signature_from_bytes};
pub use near_duplicates::{Body, ChunkText};

use crate::config::Project;
use crate::sources::Skipped;
use crate::store;
use knowledge_queries::SourceRef;

pub use crate::config::rules::{RULES, Rule, Severity, rule, rule_codes};

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
}

/// What a lint run found.
#[derive(Debug, Clone, Serialize)]
pub struct LintReport {
    /// Sorted by path, line, column and code.
    pub diagnostics: Vec<Diagnostic>,
    pub summary: LintSummary,
    /// Files that are not sources (binary, invalid UTF-8, too large, unreadable).
    pub skipped: Vec<Skipped>,
    /// Paths given on the command line that name no source lint checked: a file the `[sources]` globs do
    /// not select, or a folder holding none. Reported, never passed over in silence.
    pub unlinted: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct LintSummary {
    /// Sources whose findings are reported (all of them, or those under the paths given).
    pub files: usize,
    pub errors: usize,
    pub warnings: usize,
    pub info: usize,
    /// Sources whose facts came from the index, and sources parsed for this run.
    pub reused: usize,
    pub parsed: usize,
}

/// One source's facts and the names a wikilink may use for it.
pub(crate) struct FileFacts {
    pub(crate) path: String,
    pub(crate) kind: SourceKind,
    pub(crate) size: u64,
    pub(crate) revision: String,
    pub(crate) names: Vec<String>,
    pub(crate) facts: LintFacts,
}

/// Whether `path` is `prefix` or inside the folder `prefix` (an empty prefix holds everything).
#[must_use]
pub fn is_at_or_under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// The findings of every enabled rule over `files`, with configured severities, without suppressed ones,
/// sorted by path, line, column and code.
pub(crate) fn diagnose(
    project: &Project,
    files: &mut [FileFacts],
    page_citations: &[store::PageCitation],
    chunks: &[ChunkText],
    index: Option<&rusqlite::Connection>,
) -> Vec<Diagnostic> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    // The generated files as the index lists them: inside a build they are about to be written or removed,
    // and the disk still shows the last build's.
    let generated = index.and_then(|conn| generated_files(project, conn).ok());
    let mut diagnostics = check(project, files, generated.as_ref());
    diagnostics.extend(check_page_citations(project, files, page_citations));
    diagnostics.extend(check_near_duplicates(project, chunks, index));
    let settings = Settings::from_project(project);
    let by_path: HashMap<&str, &FileFacts> = files.iter().map(|f| (f.path.as_str(), f)).collect();
    // A source ingested from outside the tree is someone else's read-only copy: nothing here can fix it.
    let ingested = |path: &str| SourceRef::from_path(path).origin() == Origin::External;
    diagnostics.retain(|d| settings.runs(d.code) && !ingested(&d.path) && !suppressed(d, by_path.get(d.path.as_str())));
    for diagnostic in &mut diagnostics {
        diagnostic.severity = settings.severity(diagnostic.code);
    }
    diagnostics.sort_by(|a, b| (&a.path, a.line, a.column, a.code).cmp(&(&b.path, b.line, b.column, b.code)));
    diagnostics.dedup();
    diagnostics
}

/// Lints the sources an index holds, from their stored facts: what a build runs inside its transaction,
/// so the stored results describe exactly what it committed.
pub(crate) fn lint_index(project: &Project, conn: &rusqlite::Connection) -> rusqlite::Result<Vec<Diagnostic>> {
    let mut files: Vec<FileFacts> =
        store::read_facts(conn)?.into_iter().filter_map(|(path, facts)| stored_file(&path, facts)).collect();
    let chunks = if compares_near_duplicates(project) {
        store::read_chunk_texts(conn, &HashSet::new())?.into_iter().map(ChunkText::stored).collect()
    } else {
        Vec::new()
    };
    // Inside a build the pages were just rendered from these very sources: their citations are current.
    Ok(diagnose(project, &mut files, &[], &chunks, Some(conn)))
}

/// A source's facts as the index stores them; `None` if they cannot be read.
pub(crate) fn stored_file(path: &str, stored: store::StoredFacts) -> Option<FileFacts> {
    let outline: serde_json::Value = serde_json::from_str(&stored.outline).ok()?;
    let facts: LintFacts = serde_json::from_str(&stored.lint_facts).ok()?;
    Some(FileFacts {
        path: path.to_string(),
        kind: SourceKind::from_path(path),
        size: stored.size,
        revision: stored.revision,
        names: names(path, outline["title"].as_str().unwrap_or_default(), &outline["front_matter"]),
        facts,
    })
}

/// Which rules run, at which severity.
struct Settings {
    enabled: HashSet<&'static str>,
    severities: HashMap<String, Severity>,
}

impl Settings {
    fn from_project(project: &Project) -> Settings {
        let lint = &project.config.lint;
        let enable: HashSet<&str> = lint.enable.iter().map(|c| c.get_ref().as_str()).collect();
        let disable: HashSet<&str> = lint.disable.iter().map(|c| c.get_ref().as_str()).collect();
        let enabled = RULES
            .iter()
            .map(|r| r.code)
            .filter(|code| (enable.is_empty() || enable.contains(code)) && !disable.contains(code))
            .collect();
        let severities = lint.severity.iter().map(|(code, severity)| (code.get_ref().clone(), *severity)).collect();
        Settings { enabled, severities }
    }

    fn runs(&self, code: &str) -> bool {
        self.enabled.contains(code)
    }

    fn severity(&self, code: &str) -> Severity {
        self.severities.get(code).copied().or_else(|| rule(code).map(|r| r.severity)).unwrap_or(Severity::Warning)
    }
}

/// Whether an inline comment suppresses this finding: `<!-- lint-ignore CODE -->` alone on the line before
/// or after other text on its line, or `<!-- lint-ignore-file CODE -->` anywhere in the file. `all`
/// suppresses every code.
fn suppressed(diagnostic: &Diagnostic, file: Option<&&FileFacts>) -> bool {
    let Some(file) = file else { return false };
    let names = |codes: &[String]| codes.iter().any(|c| c == diagnostic.code || c == "all");
    names(&file.facts.suppressed_file)
        || file.facts.suppressed_lines.iter().any(|s| s.line == diagnostic.line && names(&s.codes))
}

/// The names a wikilink may use for a source: its path and file name without extension, its title and its
/// front matter aliases, all normalized.
pub(crate) fn names(path: &str, title: &str, front_matter: &serde_json::Value) -> Vec<String> {
    let mut aliases = Vec::new();
    for key in ["aliases", "alias"] {
        match &front_matter[key] {
            serde_json::Value::String(alias) => aliases.push(alias.clone()),
            serde_json::Value::Array(list) => aliases.extend(list.iter().filter_map(|a| a.as_str()).map(String::from)),
            _ => {}
        }
    }
    wiki_names(path, title, &aliases)
}

/// The generated files an index lists, which decide whether a link into the output folder resolves.
struct GeneratedFiles {
    /// The output folder, project-relative, with its trailing `/`.
    output: String,
    /// The files, project-relative.
    paths: HashSet<String>,
}

fn generated_files(project: &Project, conn: &rusqlite::Connection) -> rusqlite::Result<GeneratedFiles> {
    let output = crate::wiki::project_path_of_artifact(project, "");
    let paths = store::generated_files(conn)?;
    let paths = paths.iter().map(|path| crate::wiki::project_path_of_artifact(project, path)).collect();
    Ok(GeneratedFiles { output, paths })
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

/// Runs every rule over the project's facts. Severities and suppressions are applied by the caller.
/// `generated`: the generated files the index lists (project-relative), which decide whether a link into
/// the output folder resolves; without an index, the disk does.
fn check(project: &Project, files: &[FileFacts], generated: Option<&GeneratedFiles>) -> Vec<Diagnostic> {
    let ignored_links = crate::sources::glob_set(project.config.lint.ignore_links.iter().map(|g| g.get_ref().as_str()));
    let paths: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let anchors: HashMap<&str, HashSet<String>> = files
        .iter()
        .filter(|f| f.kind == SourceKind::Markdown)
        .map(|f| (f.path.as_str(), f.facts.anchors.iter().map(|a| a.to_lowercase()).collect()))
        .collect();
    let wiki_names: HashSet<&str> = files.iter().flat_map(|f| f.names.iter().map(String::as_str)).collect();

    let mut diagnostics = Vec::new();
    // Unresolved wikilink targets, by normalized name: the sources that link them and the first place.
    let mut unresolved: BTreeMap<String, (HashSet<&str>, String, u32, u32, String)> = BTreeMap::new();
    for file in files {
        let facts = &file.facts;
        let mut report = |line: u32, column: u32, code: &'static str, message: String| {
            diagnostics.push(Diagnostic {
                path: file.path.clone(),
                line,
                column,
                severity: Severity::Warning,
                code,
                message,
            });
        };
        for link in facts.links.iter().filter(|link| !ignored_links.is_match(link.value.trim())) {
            if let Some((code, message)) = check_link(project, &file.path, &link.value, &paths, &anchors, generated) {
                report(link.line, link.column, code, message);
            }
        }
        for wikilink in &facts.wikilinks {
            // A link into another vault or tool (`dendron://vault/note`) cannot be judged from this tree.
            if [Some(&wikilink.first), wikilink.second.as_ref()].into_iter().flatten().any(|side| side.contains("://"))
            {
                continue;
            }
            let sides = std::iter::once(&wikilink.first).chain(wikilink.second.as_ref());
            let keys: Vec<Option<String>> = sides.map(|side| wikilink_key(&file.path, side)).collect();
            // An empty target (`[[#heading]]`) is the page itself.
            if keys.iter().any(|k| k.as_ref().is_none_or(|k| wiki_names.contains(k.as_str()))) {
                continue;
            }
            let shown = match &wikilink.second {
                Some(second) => format!("[[{}|{second}]]", wikilink.first),
                None => format!("[[{}]]", wikilink.first),
            };
            report(
                wikilink.line,
                wikilink.column,
                "unresolved_wikilink",
                format!("wikilink `{shown}` matches no page by path, file name, title or alias"),
            );
            // The side that names the article: Obsidian writes `[[target|alias]]`, Dendron `[[alias|target]]`.
            let target = target_side(&wikilink.first, wikilink.second.as_deref());
            let key = wikilink_key(&file.path, target).unwrap_or_default();
            let shown = target.split(['#', '^']).next().unwrap_or(target).trim().to_string();
            let entry = unresolved
                .entry(key)
                .or_insert_with(|| (HashSet::new(), file.path.clone(), wikilink.line, wikilink.column, shown));
            entry.0.insert(file.path.as_str());
        }
        let referenced: HashSet<&str> = facts.footnote_refs.iter().map(|r| r.value.as_str()).collect();
        for reference in &facts.undefined_footnotes {
            let message = format!("footnote `[^{}]` has no definition", reference.value);
            report(reference.line, reference.column, "undefined_footnote", message);
        }
        for definition in facts.footnote_defs.iter().filter(|d| !referenced.contains(d.value.as_str())) {
            let message = format!("footnote `[^{}]` is defined but never referenced", definition.value);
            report(definition.line, definition.column, "unused_footnote", message);
        }
        for problem in &facts.problems {
            report(problem.line, problem.column, "malformed_front_matter", problem.value.clone());
        }
        for marker in &facts.markers {
            let message = format!("contradiction marker `{}` left in the text", marker.value);
            report(marker.line, marker.column, "contradiction_marker", message);
        }
    }

    diagnostics.extend(check_wiki_pages(project, files));
    diagnostics.extend(check_source_refs(files));

    let min_sources = project.config.lint.new_article_min_sources.max(1) as usize;
    for (linking, path, line, column, shown) in unresolved.into_values() {
        if linking.len() >= min_sources {
            diagnostics.push(Diagnostic {
                path,
                line,
                column,
                severity: Severity::Info,
                code: "new_article_candidate",
                message: format!(
                    "`{shown}` is linked from {} sources but no page has that name: a candidate for a new article",
                    linking.len()
                ),
            });
        }
    }

    // Exact duplicates: the same content hash under different paths. Tiny files (a title and a line) are
    // too common to mean anything.
    let mut by_revision: HashMap<&str, Vec<&str>> = HashMap::new();
    for file in files.iter().filter(|f| f.size >= 64) {
        by_revision.entry(file.revision.as_str()).or_default().push(file.path.as_str());
    }
    for group in by_revision.values().filter(|g| g.len() > 1) {
        for path in group {
            let others: Vec<String> = group.iter().filter(|p| *p != path).map(|p| format!("`{p}`")).collect();
            diagnostics.push(Diagnostic {
                path: (*path).to_string(),
                line: 1,
                column: 1,
                severity: Severity::Warning,
                code: "duplicate_page",
                message: format!("same content as {}", others.join(", ")),
            });
        }
    }
    diagnostics
}

/// Checks one link destination. Lint facts hold no external links (with a scheme, or protocol-relative):
/// those are never checked.
fn check_link(
    project: &Project,
    from: &str,
    destination: &str,
    paths: &HashSet<&str>,
    anchors: &HashMap<&str, HashSet<String>>,
    generated: Option<&GeneratedFiles>,
) -> Option<(&'static str, String)> {
    let destination = destination.trim();
    if destination.is_empty() {
        return None;
    }
    let (target, anchor) = match destination.split_once('#') {
        Some((target, anchor)) => (target, Some(percent_decode(anchor))),
        None => (destination, None),
    };
    let target = percent_decode(target.split('?').next().unwrap_or_default());
    let resolved = if target.is_empty() {
        from.to_string()
    } else if let Some(rooted) = target.strip_prefix('/') {
        join("", rooted)?
    } else {
        let folder = from.rsplit_once('/').map_or("", |(folder, _)| folder);
        match join(folder, &target) {
            Some(path) => path,
            // Outside the project: only the file system can tell.
            None => {
                let on_disk = project.root.join(folder).join(&target);
                return (!on_disk.exists())
                    .then(|| ("broken_link", format!("link to `{destination}`: no such file or folder")));
            }
        }
    };
    let indexed = link_candidates(&resolved).into_iter().flatten().find(|p| paths.contains(p.as_str()));
    let exists = indexed.is_some()
        || match generated {
            Some(generated) if resolved.starts_with(&generated.output) => generated.paths.contains(&resolved),
            _ => project.root.join(&resolved).exists(),
        };
    if !exists {
        return Some(("broken_link", format!("link to `{destination}`: no such file or folder")));
    }
    let (Some(anchor), Some(target)) = (anchor.filter(|a| !a.is_empty()), indexed) else { return None };
    let known = anchors.get(target.as_str())?;
    (!known.contains(&anchor.to_lowercase())).then(|| {
        let shown = if target == from { "this file".to_string() } else { format!("`{target}`") };
        ("broken_anchor", format!("link to `{destination}`: {shown} has no heading or anchor `{anchor}`"))
    })
}

/// Project-relative forms of paths given on the command line (relative to the working directory). A path
/// that does not exist, or that leads out of the project (`..`, an absolute path elsewhere, a symlink to
/// elsewhere), is an error naming it: lint reads nothing outside the project.
pub fn relative_paths(
    project: &Project,
    working_dir: &Path,
    paths: &[std::path::PathBuf],
) -> Result<Vec<String>, String> {
    let root = project.root.canonicalize().unwrap_or_else(|_| project.root.clone());
    let mut relative_paths = Vec::with_capacity(paths.len());
    let mut missing = Vec::new();
    for path in paths {
        let Ok(real) = working_dir.join(path).canonicalize() else {
            missing.push(format!("`{}`", crate::escape(&path.to_string_lossy())));
            continue;
        };
        let Ok(relative) = real.strip_prefix(&root) else {
            return Err(format!(
                "`{}` is outside the project (`{}`): lint checks only the project's files",
                crate::escape(&path.to_string_lossy()),
                crate::escape(&root.to_string_lossy())
            ));
        };
        let relative: Vec<String> =
            relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        relative_paths.push(relative.join("/"));
    }
    if !missing.is_empty() {
        return Err(format!("no such file or folder: {}", missing.join(", ")));
    }
    Ok(relative_paths)
}

/// Whether lint looks for near duplicates: `duplicate_page` runs and the threshold is below 1.
pub(crate) fn compares_near_duplicates(project: &Project) -> bool {
    Settings::from_project(project).runs("duplicate_page")
        && *project.config.lint.near_duplicate_threshold.get_ref() < 1.0
}

/// `duplicate_page`, near: chunks of two sources that share most of their word 5-grams. Both get a finding.
/// Stored chunks' texts come from `index` (an index that cannot be read reports no near duplicates).
fn check_near_duplicates(
    project: &Project,
    chunks: &[ChunkText],
    index: Option<&rusqlite::Connection>,
) -> Vec<Diagnostic> {
    let threshold = *project.config.lint.near_duplicate_threshold.get_ref();
    let stored_texts = |rows: &[i64]| match index {
        Some(conn) => store::read_chunk_bodies(conn, rows),
        None => Ok(HashMap::new()),
    };
    let pairs = near_duplicates::near_duplicates(chunks, threshold, stored_texts).unwrap_or_default();
    let mut diagnostics = Vec::new();
    for pair in pairs {
        let percent = (pair.similarity * 100.0).floor();
        for (this, other) in [(pair.first, pair.second), (pair.second, pair.first)] {
            let (this, other) = (&chunks[this], &chunks[other]);
            diagnostics.push(Diagnostic {
                path: this.path.clone(),
                line: this.start_line,
                column: 1,
                severity: Severity::Warning,
                code: "duplicate_page",
                message: format!(
                    "lines {}-{} nearly duplicate `{}` lines {}-{} ({percent}% of their word 5-grams are shared)",
                    this.start_line, this.end_line, other.path, other.start_line, other.end_line
                ),
            });
        }
    }
    diagnostics
}
