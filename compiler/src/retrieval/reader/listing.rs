//! Listings over the index: sources, pages, index entries and runs (paged by cursor), recent changes, the
//! stored lint findings, and statistics; each filtered by what the principal may read.

use rusqlite::{Connection, params};
use schemars::JsonSchema;
use serde::Serialize;

use super::*;

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

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PageItem {
    /// `knowledge://wiki/SLUG`: what `knowledge_get` resolves.
    pub uri: String,
    pub slug: String,
    pub title: String,
    pub section: String,
    /// The page file, relative to the output folder.
    pub path: String,
    pub aliases: Vec<String>,
    /// Sources that mention the concept.
    pub source_count: u64,
    pub summary: String,
    /// Content hash of the page file.
    pub hash: String,
    /// The run that last rendered it.
    pub run_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IndexItem {
    /// `knowledge://index/SECTION`, or `knowledge://index/root`.
    pub uri: String,
    pub section: String,
    /// The Markdown shard, relative to the output folder.
    pub path: String,
    /// The JSON shard; absent for the root.
    pub json_path: Option<String>,
    pub page_count: u64,
    pub run_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceItem {
    pub uri: String,
    pub path: String,
    pub title: String,
    pub source_kind: String,
    pub revision: String,
    pub size: u64,
    pub chunk_count: u64,
    /// The project of a Postgres store it belongs to; absent for a local index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunItem {
    pub id: String,
    pub started_at: String,
    pub finished_at: String,
    pub status: String,
    pub tool_version: String,
    /// The commit and CI context the build recorded, when it had one.
    pub vcs: serde_json::Value,
    /// The build's counters, as `knowledge build --json` printed them.
    pub summary: serde_json::Value,
    /// The project of a Postgres store it belongs to; absent for a local index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
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
            let selected = if kind == ListKind::Notes {
                Origin::Note.sql_condition("path")
            } else {
                format!("({} OR {})", Origin::File.sql_condition("path"), Origin::External.sql_condition("path"))
            };
            let mut items: Vec<SourceItem> = conn
                .prepare_cached(&format!(
                    "SELECT uri, path, title, kind, revision, size, chunk_count FROM sources
                     WHERE path > ?1 AND {selected} AND {} ORDER BY path LIMIT ?2",
                    access.source_filter("id")
                ))?
                .query_map(params![after, fetch], |row| {
                    Ok(SourceItem {
                        uri: row.get(0)?,
                        path: row.get(1)?,
                        title: row.get(2)?,
                        source_kind: row.get(3)?,
                        revision: row.get(4)?,
                        size: row.get::<_, i64>(5)?.cast_unsigned(),
                        chunk_count: row.get::<_, i64>(6)?.cast_unsigned(),
                        project: None,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("s:{}", item.path));
            Ok(Listing { kind, sources: Some(items), runs: None, pages: None, indexes: None, next_cursor })
        }
        ListKind::Runs | ListKind::AskRuns => {
            let before = decode_cursor(cursor, "r:")?;
            let mut items = runs_of(conn, kind.run_kind(), "id < ?1 OR ?1 IS NULL", params![before, fetch], access)?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("r:{}", item.id));
            Ok(Listing { kind, sources: None, runs: Some(items), pages: None, indexes: None, next_cursor })
        }
        // Pages quote only sources every principal may read, so they need no permission filter.
        ListKind::Pages => {
            let after = decode_cursor(cursor, "p:")?.unwrap_or_default();
            let mut items: Vec<PageItem> = conn
                .prepare_cached(
                    "SELECT slug, title, section, path, aliases, source_count, summary, hash, run_id FROM wiki_pages
                     WHERE slug > ?1 ORDER BY slug LIMIT ?2",
                )?
                .query_map(params![after, fetch], |row| {
                    let slug: String = row.get(0)?;
                    Ok(PageItem {
                        uri: SourceRef::page(&slug).path(),
                        slug,
                        title: row.get(1)?,
                        section: row.get(2)?,
                        path: row.get(3)?,
                        aliases: serde_json::from_str(&row.get::<_, String>(4)?).unwrap_or_default(),
                        source_count: row.get::<_, i64>(5)?.cast_unsigned(),
                        summary: row.get(6)?,
                        hash: row.get(7)?,
                        run_id: row.get(8)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("p:{}", item.slug));
            Ok(Listing { kind, sources: None, runs: None, pages: Some(items), indexes: None, next_cursor })
        }
        ListKind::Indexes => {
            let after = decode_cursor(cursor, "i:")?;
            let mut items: Vec<IndexItem> = conn
                .prepare_cached(
                    "SELECT section, path, json_path, page_count, run_id FROM knowledge_indexes
                     WHERE ?1 IS NULL OR section > ?1 ORDER BY section LIMIT ?2",
                )?
                .query_map(params![after, fetch], |row| {
                    let section: String = row.get(0)?;
                    Ok(IndexItem {
                        uri: SourceRef::shard(if section.is_empty() { "root" } else { &section }).path(),
                        section,
                        path: row.get(1)?,
                        json_path: row.get(2)?,
                        page_count: row.get::<_, i64>(3)?.cast_unsigned(),
                        run_id: row.get(4)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
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
}

impl ListKind {
    /// The runs a listing of runs holds.
    pub(super) fn run_kind(self) -> RunKind {
        if self == ListKind::AskRuns { RunKind::Ask } else { RunKind::Build }
    }
}

/// Builds matching `condition`, newest first: [`runs_of`] for builds.
pub(super) fn runs_where(
    conn: &Connection,
    condition: &str,
    values: impl rusqlite::Params,
    access: &Access,
) -> rusqlite::Result<Vec<RunItem>> {
    runs_of(conn, RunKind::Build, condition, values, access)
}

/// Runs of `kind` matching `condition`, newest first; a principal who cannot read everything sees their
/// summaries [redacted](RunKind::redacted).
pub(super) fn runs_of(
    conn: &Connection,
    kind: RunKind,
    condition: &str,
    values: impl rusqlite::Params,
    access: &Access,
) -> rusqlite::Result<Vec<RunItem>> {
    let redact = !access.reads_everything();
    conn.prepare(&format!(
        "SELECT id, started_at, finished_at, status, tool_version, vcs, summary FROM runs
         WHERE kind = '{}' AND ({condition}) ORDER BY id DESC LIMIT ?2",
        kind.as_str()
    ))?
    .query_map(values, |row| {
        Ok(RunItem {
            id: row.get(0)?,
            started_at: row.get(1)?,
            finished_at: row.get(2)?,
            status: row.get(3)?,
            tool_version: row.get(4)?,
            vcs: serde_json::from_str(&row.get::<_, String>(5)?).unwrap_or_default(),
            summary: if redact {
                kind.redacted()
            } else {
                serde_json::from_str(&row.get::<_, String>(6)?).unwrap_or_default()
            },
            project: None,
        })
    })?
    .collect()
}

/// A build and what it changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Change {
    pub run: RunItem,
    pub events: Vec<ChangeEvent>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeEvent {
    /// `source_added`, `source_changed`, `source_removed` or `source_skipped`.
    pub kind: String,
    pub path: String,
    pub old_revision: Option<String>,
    pub new_revision: Option<String>,
    pub detail: Option<String>,
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
        Some(since) => runs_where(conn, "id > ?1 OR started_at > ?1", params![since, limit], access)?,
        None => runs_where(conn, "?1 IS NULL", params![None::<String>, limit], access)?,
    };
    found
        .into_iter()
        .map(|run| {
            let events = run_events(conn, &run.id)?
                .into_iter()
                .filter(|(event, labels)| access.can_read_labels(labels) && access.can_read_path(&event.path))
                .map(|(event, _)| event)
                .collect();
            Ok(Change { run, events })
        })
        .collect()
}

/// A run's events in order, each with the labels of the source it names.
pub(super) fn run_events(conn: &Connection, run_id: &str) -> rusqlite::Result<Vec<(ChangeEvent, String)>> {
    conn.prepare_cached(
        "SELECT kind, path, old_revision, new_revision, detail, labels FROM run_events WHERE run_id = ?1 ORDER BY seq",
    )?
    .query_map([run_id], |row| {
        let event = ChangeEvent {
            kind: row.get(0)?,
            path: row.get(1)?,
            old_revision: row.get(2)?,
            new_revision: row.get(3)?,
            detail: row.get(4)?,
        };
        Ok((event, row.get::<_, String>(5)?))
    })?
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

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LintFinding {
    pub path: String,
    pub line: u32,
    pub column: u32,
    /// `error`, `warning` or `info`.
    pub severity: String,
    pub code: String,
    pub message: String,
    /// The project of a Postgres store it belongs to; absent for a local index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// Stored lint findings at or under `paths` (all when empty), at `min_severity` or worse, in path order.
pub fn lint_results(
    conn: &Connection,
    paths: &[String],
    min_severity: crate::lint::Severity,
    access: &Access,
) -> Result<LintResults, ReaderError> {
    let mut findings: Vec<LintFinding> = conn
        .prepare_cached(
            "SELECT path, line, col, severity, code, message FROM lint_results ORDER BY path, line, col, code",
        )?
        .query_map([], |row| {
            Ok(LintFinding {
                path: row.get(0)?,
                line: row.get(1)?,
                column: row.get(2)?,
                severity: row.get(3)?,
                code: row.get(4)?,
                message: row.get(5)?,
                project: None,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
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
    let count = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, i64>(0)).map(i64::cast_unsigned);
    let format_version: String =
        conn.query_row("SELECT value FROM meta WHERE key = 'format_version'", [], |row| row.get(0))?;
    let model = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let pending: i64 = conn.query_row(
        "SELECT count(*) FROM vector_index_entries WHERE model = (SELECT value FROM meta WHERE key = 'embeddings_model') AND status = 'pending'",
        [],
        |row| row.get(0),
    )?;
    Ok(Stats {
        format_version,
        sources: count(&format!(
            "SELECT count(*) FROM sources WHERE {} AND {}",
            crate::store::not_generated(),
            access.source_filter("id")
        ))?,
        // The chunks of the sources counted above: the number a build reports (a page's are the wiki's).
        chunks: count(&format!(
            "SELECT count(*) FROM chunks WHERE entity IS NULL AND {} AND source_id IN (SELECT id FROM sources WHERE {})",
            access.source_filter("source_id"),
            crate::store::not_generated()
        ))?,
        pages: count("SELECT count(*) FROM wiki_pages")?,
        runs: count("SELECT count(*) FROM runs WHERE kind = 'build'")?,
        last_run: runs_where(conn, "?1 IS NULL", params![None::<String>, 1], access)?.into_iter().next(),
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
