//! The lint rules over per-file facts: links, wikilinks, footnotes, front matter, contradiction markers and
//! duplicates, resolved across the project, and the findings rendered for people, machines, GitHub and SARIF
//! consumers.
//!
//! Lint never writes. A build runs these rules on the facts it commits (`lint_index`); `knowledge lint`
//! (`lint_command`) gathers the facts of the project as it stands and runs the same rules. Each link is
//! resolved against the whole project, so linting a few staged files still sees every target.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use knowledge_queries::links::wiki_names;
use knowledge_queries::lint::{Finding, GeneratedFiles, broken, file_lint, project_findings};
use knowledge_queries::{LintFacts, Origin};
use rayon::prelude::*;
use serde::Serialize;

mod inputs;
mod near_duplicates;
mod page_citations;
mod render;

pub(crate) use crate::sources::mirror::IndexSync;
pub(crate) use inputs::LintInputs;
use page_citations::check_page_citations;
pub use render::{render_github, render_human, render_json, render_sarif};

pub use crate::sources::minhash::{Signature, signature, signature_bytes, signature_from_bytes};
pub use near_duplicates::{Body, ChunkText};

use crate::config::Project;
use crate::sources::Skipped;
use crate::sources::db::KnowledgeDb;
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

/// One source's facts and the names a wikilink may use for it: what its lint graph input is set from.
pub(crate) struct FileFacts {
    pub(crate) path: String,
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

/// The findings of every enabled rule over the project the lint graph holds (`inputs`, synced by the caller),
/// with configured severities, without suppressed ones, sorted by path, line, column and code.
pub(crate) fn diagnose(
    project: &Project,
    db: &KnowledgeDb,
    inputs: &LintInputs,
    page_citations: &[store::PageCitation],
    chunks: &[&ChunkText],
    index: Option<&rusqlite::Connection>,
) -> Vec<Diagnostic> {
    let lint = inputs.project();
    // Each source's check on rayon's threads first (salsa memoizes them), then gathered in order here.
    lint.sources(db).par_iter().for_each_with(db.clone(), |db, &source| {
        file_lint(db, source);
    });
    let mut found: Vec<Finding> = Vec::new();
    for &source in lint.sources(db) {
        let checked = file_lint(db, source);
        found.extend(checked.findings.iter().cloned());
        // What the graph leaves to the file system: links to files that are not sources.
        for check in
            checked.disk_checks.iter().filter(|check| !check.targets.iter().any(|t| project.root.join(t).exists()))
        {
            let (code, message) = broken(&check.destination);
            let path = source.path(db).clone();
            let link = Some(check.destination.clone());
            found.push(Finding { path, line: check.line, column: check.column, code, message, link });
        }
    }
    found.extend(project_findings(db, lint).iter().cloned());
    let ignored_links = crate::sources::glob_set(project.config.lint.ignore_links.iter().map(|g| g.get_ref().as_str()));
    found.retain(|finding| finding.link.as_ref().is_none_or(|link| !ignored_links.is_match(link.trim())));
    let mut diagnostics: Vec<Diagnostic> = found
        .into_iter()
        .map(|f| Diagnostic {
            path: f.path,
            line: f.line,
            column: f.column,
            severity: Severity::Warning,
            code: f.code,
            message: f.message,
        })
        .collect();
    diagnostics.extend(check_page_citations(project, |path| inputs.revision(db, path), page_citations));
    diagnostics.extend(check_near_duplicates(project, chunks, index));
    let settings = Settings::from_project(project);
    // A source ingested from outside the tree is someone else's read-only copy: nothing here can fix it.
    let ingested = |path: &str| SourceRef::from_path(path).origin() == Origin::External;
    let suppressed = |d: &Diagnostic| inputs.facts(db, &d.path).is_some_and(|facts| suppressed(d, facts));
    diagnostics.retain(|d| settings.runs(d.code) && !ingested(&d.path) && !suppressed(d));
    for diagnostic in &mut diagnostics {
        diagnostic.severity = settings.severity(diagnostic.code);
    }
    diagnostics.sort_by(|a, b| (&a.path, a.line, a.column, a.code).cmp(&(&b.path, b.line, b.column, b.code)));
    diagnostics.dedup();
    diagnostics
}

/// Lints the sources an index holds, from their stored facts: what a build runs inside its transaction,
/// so the stored results describe exactly what it committed. Inputs that match the run before this build
/// (kept by the `Compiler` that committed it, as `--watch` does) take only the changed sources' facts, and
/// the graph re-checks only what those reach.
pub(crate) fn lint_index(
    project: &Project,
    conn: &rusqlite::Connection,
    db: &mut KnowledgeDb,
    inputs: &mut LintInputs,
    sync: &IndexSync<'_>,
) -> rusqlite::Result<Vec<Diagnostic>> {
    inputs.sync_with_index(conn, db, project, sync)?;
    let chunks = inputs.chunks();
    // Inside a build the pages were just rendered from these very sources: their citations are current.
    Ok(diagnose(project, db, inputs, &[], &chunks, Some(conn)))
}

/// What lint reads of a stored outline: the title and the front matter, which give a source its wikilink
/// names. The rest (headings, links) is skipped unparsed.
#[derive(serde::Deserialize)]
struct StoredOutline {
    #[serde(default)]
    title: String,
    #[serde(default)]
    front_matter: serde_json::Value,
}

/// A source's facts as the index stores them; `None` if they cannot be read.
pub(crate) fn stored_file(path: &str, stored: store::StoredFacts) -> Option<FileFacts> {
    let outline: StoredOutline = serde_json::from_str(&stored.outline).ok()?;
    let facts: LintFacts = serde_json::from_str(&stored.lint_facts).ok()?;
    Some(FileFacts {
        path: path.to_string(),
        size: stored.size,
        revision: stored.revision,
        names: names(path, &outline.title, &outline.front_matter),
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
fn suppressed(diagnostic: &Diagnostic, facts: &LintFacts) -> bool {
    let names = |codes: &[String]| codes.iter().any(|c| c == diagnostic.code || c == "all");
    names(&facts.suppressed_file) || facts.suppressed_lines.iter().any(|s| s.line == diagnostic.line && names(&s.codes))
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

/// The generated files the index lists, project-relative: whether a link into the output folder resolves.
pub(crate) fn generated_files(project: &Project, conn: &rusqlite::Connection) -> rusqlite::Result<GeneratedFiles> {
    let output = crate::wiki::output_prefix(project);
    let paths = store::generated_files(conn)?.iter().map(|path| format!("{output}{path}")).collect();
    Ok(GeneratedFiles { output, paths })
}

/// Why paths given to `knowledge lint` are refused.
#[derive(Debug, thiserror::Error)]
pub enum LintPathError {
    #[error("`{path}` is outside the project (`{root}`): lint checks only the project's files")]
    Outside { path: String, root: String },
    /// The paths that do not exist, each quoted, joined by commas.
    #[error("no such file or folder: {0}")]
    Missing(String),
}

/// Project-relative forms of paths given on the command line (relative to the working directory). A path
/// that does not exist, or that leads out of the project (`..`, an absolute path elsewhere, a symlink to
/// elsewhere), is an error naming it: lint reads nothing outside the project.
pub fn relative_paths(
    project: &Project,
    working_dir: &Path,
    paths: &[std::path::PathBuf],
) -> Result<Vec<String>, LintPathError> {
    let root = project.root.canonicalize().unwrap_or_else(|_| project.root.clone());
    let mut relative_paths = Vec::with_capacity(paths.len());
    let mut missing = Vec::new();
    for path in paths {
        let Ok(real) = working_dir.join(path).canonicalize() else {
            missing.push(format!("`{}`", crate::escape(&path.to_string_lossy())));
            continue;
        };
        let Ok(relative) = real.strip_prefix(&root) else {
            return Err(LintPathError::Outside {
                path: crate::escape(&path.to_string_lossy()).into_owned(),
                root: crate::escape(&root.to_string_lossy()).into_owned(),
            });
        };
        let relative: Vec<String> =
            relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        relative_paths.push(relative.join("/"));
    }
    if !missing.is_empty() {
        return Err(LintPathError::Missing(missing.join(", ")));
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
    chunks: &[&ChunkText],
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
