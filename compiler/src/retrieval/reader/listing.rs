//! Listings over the index: sources, pages, index entries and runs (paged by cursor), recent changes, the
//! stored lint findings, and statistics; each filtered by what the principal may read.

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use super::*;
use crate::store::{self, RunsWhere};

/// What `list` enumerates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    Sources,
    Runs,
    /// Recorded `knowledge ask` answers, newest first (`list runs --kind ask` on the command line).
    #[value(skip)]
    AskRuns,
    /// Notes added with `knowledge add`, indexed as `knowledge://item/ID`.
    Notes,
    /// Generated concept pages, by slug.
    Pages,
    /// The catalog shards, by section (the root is the section `""`).
    Indexes,
}

impl ListKind {
    /// Whether a Postgres store holds what this kind lists: sources, notes and builds do; generated pages and
    /// index shards are the output folder's artifacts, listed from its local index.
    #[must_use]
    pub fn in_store(self) -> bool {
        !matches!(self, ListKind::Pages | ListKind::Indexes)
    }
}

/// One page of a listing: `sources` (which holds the notes for kind `notes`) or `runs`, by `kind`. Pass `next_cursor` back to get the next page; it
/// is absent on the last page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Listing {
    pub kind: ListKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<RunItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<Vec<PageItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexes: Option<Vec<IndexItem>>,
    pub next_cursor: Option<String>,
}

/// Lists sources (by path) or runs (newest first), `limit` at a time. The cursor is opaque to callers: it
/// is the key of the last item of the previous page.
pub fn list(
    conn: &Connection,
    kind: ListKind,
    cursor: Option<&str>,
    limit: u32,
    access: &Access,
) -> Result<Listing, ReaderError> {
    let limit = limit.clamp(1, 1000);
    let fetch = i64::from(limit) + 1;
    match kind {
        ListKind::Sources | ListKind::Notes => {
            let after = decode_cursor(cursor, "s:")?.unwrap_or_default();
            // Sources are the project's files and those ingested from outside the tree.
            let notes = kind == ListKind::Notes;
            let mut items = store::source_items(conn, notes, access.hidden_sources(), &after, fetch)?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("s:{}", item.path));
            Ok(Listing { kind, sources: Some(items), runs: None, pages: None, indexes: None, next_cursor })
        }
        ListKind::Runs | ListKind::AskRuns => {
            let before = decode_cursor(cursor, "r:")?;
            let mut items = runs_of(conn, kind.run_kind(), RunsWhere::Before(before.as_deref()), fetch, access)?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("r:{}", item.id));
            Ok(Listing { kind, sources: None, runs: Some(items), pages: None, indexes: None, next_cursor })
        }
        // Pages quote only sources every principal may read, so they need no permission filter.
        ListKind::Pages => {
            let after = decode_cursor(cursor, "p:")?.unwrap_or_default();
            let mut items = store::page_items(conn, &after, fetch)?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("p:{}", item.slug));
            Ok(Listing { kind, sources: None, runs: None, pages: Some(items), indexes: None, next_cursor })
        }
        ListKind::Indexes => {
            let after = decode_cursor(cursor, "i:")?;
            let mut items = store::index_items(conn, after.as_deref(), fetch)?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("i:{}", item.section));
            Ok(Listing { kind, sources: None, runs: None, pages: None, indexes: Some(items), next_cursor })
        }
    }
}

pub(super) fn decode_cursor(cursor: Option<&str>, prefix: &str) -> Result<Option<String>, ReaderError> {
    match cursor {
        None | Some("") => Ok(None),
        Some(cursor) => cursor
            .strip_prefix(prefix)
            .map(|key| Some(key.to_string()))
            .ok_or_else(|| ReaderError::BadCursor(cursor.to_string())),
    }
}

/// Trims the extra row fetched to learn whether another page exists, and returns the cursor for it.
pub(super) fn page_cursor<T>(items: &mut Vec<T>, limit: u32, key: impl Fn(&T) -> String) -> Option<String> {
    if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(key)
    } else {
        None
    }
}

/// The kinds of run the ledger records: builds, and `knowledge ask` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunKind {
    Build,
    Ask,
}

impl RunKind {
    /// The value of `runs.kind`.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            RunKind::Build => "build",
            RunKind::Ask => "ask",
        }
    }

    /// What a principal who cannot read every source sees in place of a run's summary: a build counts every
    /// source, and an answer quotes the sources its asker could read.
    pub(super) fn redacted(self) -> serde_json::Value {
        let why = match self {
            RunKind::Build => "this build's counters include sources the principal may not read",
            RunKind::Ask => "this answer may quote sources the principal may not read",
        };
        serde_json::json!({ "redacted": why })
    }

    /// What a principal with `access` sees as these runs' summaries: the stored ones only when it may read
    /// everything (the summaries count and quote every source).
    pub(super) fn summaries(self, access: &Access) -> store::RunSummaries {
        if access.reads_everything() {
            store::RunSummaries::Stored
        } else {
            store::RunSummaries::Withheld(self.redacted())
        }
    }
}

impl ListKind {
    /// The runs a listing of runs holds.
    pub(super) fn run_kind(self) -> RunKind {
        if self == ListKind::AskRuns { RunKind::Ask } else { RunKind::Build }
    }
}

/// Runs of `kind`, newest first, `limit` of them; a principal who cannot read everything sees their
/// summaries [redacted](RunKind::redacted).
pub(super) fn runs_of(
    conn: &Connection,
    kind: RunKind,
    runs: RunsWhere<'_>,
    limit: i64,
    access: &Access,
) -> rusqlite::Result<Vec<RunItem>> {
    store::run_items(conn, kind.as_str(), runs, limit, &kind.summaries(access))
}

/// A build and what it changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Change {
    pub run: RunItem,
    pub events: Vec<ChangeEvent>,
}

/// The last `runs` builds that changed the index, newest first, or every build since `since` (a run id,
/// or an RFC 3339 time compared with the build's start).
pub fn recent_changes(
    conn: &Connection,
    runs: u32,
    since: Option<&str>,
    access: &Access,
) -> Result<Vec<Change>, ReaderError> {
    let limit = i64::from(runs.clamp(1, 1000));
    let found = match since {
        Some(since) => runs_of(conn, RunKind::Build, RunsWhere::Since(since), limit, access)?,
        None => runs_of(conn, RunKind::Build, RunsWhere::All, limit, access)?,
    };
    found
        .into_iter()
        .map(|run| {
            let events = store::run_events(conn, &run.id)?
                .into_iter()
                .filter(|(event, labels)| access.can_read_labels(labels) && access.can_read_path(&event.path))
                .map(|(event, _)| event)
                .collect();
            Ok(Change { run, events })
        })
        .collect()
}

/// The lint findings the last writing build stored.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LintResults {
    /// The build that computed them; `None` when no build stored any (`[lint] on_build = false`, or an index
    /// from before the first such build).
    pub run_id: Option<String>,
    pub findings: Vec<LintFinding>,
}

/// Stored lint findings at or under `paths` (all when empty), at `min_severity` or worse, in path order.
pub fn lint_results(
    conn: &Connection,
    paths: &[String],
    min_severity: crate::lint::Severity,
    access: &Access,
) -> Result<LintResults, ReaderError> {
    let mut findings = store::lint_findings(conn)?;
    findings.retain(|finding| is_shown(finding, paths, min_severity, access));
    let run_id = crate::store::meta(conn, "lint_run")?.filter(|id| !id.is_empty());
    Ok(LintResults { run_id, findings })
}

/// Whether `finding` lies at or under `paths` (anywhere when empty), is at `min_severity` or worse, and
/// neither lies in nor names a source the principal may not read.
pub(super) fn is_shown(
    finding: &LintFinding,
    paths: &[String],
    min_severity: crate::lint::Severity,
    access: &Access,
) -> bool {
    access.can_read_path(&finding.path)
        && !access.mentions_hidden(&finding.message)
        && crate::lint::Severity::parse(&finding.severity).is_some_and(|severity| severity <= min_severity)
        && (paths.is_empty() || paths.iter().any(|prefix| crate::lint::is_at_or_under(&finding.path, prefix)))
}

/// Counts and the state of the index.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Stats {
    pub format_version: String,
    /// Sources and notes (generated pages are counted in `pages`).
    pub sources: u64,
    /// Chunks of sources and notes: the count a build reports (generated pages' are not counted).
    pub chunks: u64,
    /// Generated concept pages.
    pub pages: u64,
    pub runs: u64,
    pub last_run: Option<RunItem>,
    /// Which search modes work on this index.
    pub search_modes: Vec<&'static str>,
    /// No embeddings generation exists (semantic and hybrid searches fall back to keyword), or chunks are
    /// still waiting for their embeddings.
    pub degraded: bool,
    pub degraded_reason: Option<String>,
    /// The embeddings generation searches use, if any.
    pub embeddings_model: Option<String>,
}

/// Counts of what `access` may read.
pub fn stats(conn: &Connection, access: &Access) -> Result<Stats, ReaderError> {
    let counts = store::index_counts(conn, access.hidden_sources())?;
    let model = store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let pending = counts.pending;
    Ok(Stats {
        format_version: counts.format_version,
        sources: counts.sources,
        chunks: counts.chunks,
        pages: counts.pages,
        runs: counts.runs,
        last_run: runs_of(conn, RunKind::Build, RunsWhere::All, 1, access)?.into_iter().next(),
        search_modes: if model.is_some() { vec!["keyword", "semantic", "hybrid"] } else { vec!["keyword"] },
        degraded: model.is_none() || pending > 0,
        degraded_reason: match (&model, pending) {
            (None, _) => Some(crate::retrieval::search::NO_EMBEDDINGS.to_string()),
            (Some(_), 0) => None,
            (Some(_), n) => Some(format!("{n} chunks are waiting for their embeddings; the next build retries them")),
        },
        embeddings_model: model,
    })
}
