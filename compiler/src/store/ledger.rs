//! The run ledger and the listings as the read side reads them from the SQLite index: sources, pages,
//! shards, runs and their events, lint findings, purpose decisions, stored artifacts and the index's counts.
//! Permissions and redaction are the read side's; these are the rows. The Postgres store's equivalents are
//! in `postgres/ledger.rs`.

use knowledge_queries::{Origin, SourceRef};
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::Serialize;

use super::{not_generated, origin_condition, readable_sources};

/// A generated concept page, as `knowledge list pages` shows it.
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

/// A catalog shard, as `knowledge list indexes` shows it.
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

/// A source or note, as `knowledge list sources` shows it.
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

/// A run of the ledger, as `knowledge list runs` shows it.
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

/// What a run did to one source.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeEvent {
    /// `source_added`, `source_changed`, `source_removed` or `source_skipped`.
    pub kind: String,
    pub path: String,
    pub old_revision: Option<String>,
    pub new_revision: Option<String>,
    pub detail: Option<String>,
}

/// A stored lint finding.
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

/// One run of the ledger.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunStatus {
    pub id: String,
    /// `build`, `ask` or `resolve`.
    pub kind: String,
    /// A build's `succeeded`, an ask's `answered`, a decision's `allowed` or `denied`.
    pub status: String,
    pub started_at: String,
    pub finished_at: String,
    pub tool_version: String,
    /// What the run recorded: a build's counters, an ask's answer, a decision.
    pub summary: serde_json::Value,
    pub events: Vec<ChangeEvent>,
    /// The project of a Postgres store it belongs to; absent for a local index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// One purpose decision `knowledge source resolve --purpose` recorded.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Decision {
    pub run_id: String,
    pub at: String,
    /// The source's stored path (a project path or an ingested source's ref).
    pub path: String,
    pub revision: Option<String>,
    /// `allowed` or `denied`.
    pub status: String,
    /// The purpose, the principal, the reason and the stale status, as recorded.
    pub detail: serde_json::Value,
}

/// A generated artifact as the storage listing shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StorageObject {
    pub uri: String,
    pub kind: String,
    /// Relative to the output folder.
    pub path: String,
    pub hash: String,
    pub size: u64,
    /// The run that last changed it.
    pub run_id: String,
}

/// Which runs a listing reads, newest first.
#[derive(Debug, Clone, Copy)]
pub enum RunsWhere<'a> {
    All,
    /// Those before a cursor (a run id), or all with `None`.
    Before(Option<&'a str>),
    /// Those after a run id, or started after an RFC 3339 time.
    Since(&'a str),
}

/// What a listing of runs shows as each run's summary: the stored one, or a stand-in in its place (a
/// redaction), in which case the stored summaries are never read.
#[derive(Debug, Clone)]
pub enum RunSummaries {
    Stored,
    Withheld(serde_json::Value),
}

impl RunSummaries {
    /// The column a query selects as the summary.
    pub(in crate::store) fn column(&self) -> &'static str {
        match self {
            RunSummaries::Stored => "summary",
            RunSummaries::Withheld(_) => "NULL",
        }
    }

    /// The summary shown for a run whose summary column read `stored`.
    pub(in crate::store) fn shown(&self, stored: Option<&str>) -> serde_json::Value {
        match self {
            RunSummaries::Stored => stored.and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default(),
            RunSummaries::Withheld(stand_in) => stand_in.clone(),
        }
    }
}

/// The SQL condition on source paths selecting notes (`notes`), or the project's files and ingested sources.
pub(crate) fn listed_sources(notes: bool, path: &str) -> String {
    if notes {
        origin_condition(Origin::Note, path)
    } else {
        format!("({} OR {})", origin_condition(Origin::File, path), origin_condition(Origin::External, path))
    }
}

/// Up to `limit` sources (or notes) after the path `after`, by path, among those not in `hidden`.
pub fn source_items(
    conn: &Connection,
    notes: bool,
    hidden: &[i64],
    after: &str,
    limit: i64,
) -> rusqlite::Result<Vec<SourceItem>> {
    conn.prepare_cached(&format!(
        "SELECT uri, path, title, kind, revision, size, chunk_count FROM sources
         WHERE path > ?1 AND {} AND {} ORDER BY path LIMIT ?2",
        listed_sources(notes, "path"),
        readable_sources("id", hidden)
    ))?
    .query_map(params![after, limit], |row| {
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
    .collect()
}

/// Up to `limit` runs of `kind` (`build`, `ask`), newest first, as recorded, each with the summary `summaries`
/// says it shows.
pub fn run_items(
    conn: &Connection,
    kind: &str,
    runs: RunsWhere<'_>,
    limit: i64,
    summaries: &RunSummaries,
) -> rusqlite::Result<Vec<RunItem>> {
    let (condition, key) = match runs {
        RunsWhere::All => ("?1 IS NULL", None),
        RunsWhere::Before(before) => ("id < ?1 OR ?1 IS NULL", before),
        RunsWhere::Since(since) => ("id > ?1 OR started_at > ?1", Some(since)),
    };
    conn.prepare_cached(&format!(
        "SELECT id, started_at, finished_at, status, tool_version, vcs, {} FROM runs
         WHERE kind = ?3 AND ({condition}) ORDER BY id DESC LIMIT ?2",
        summaries.column()
    ))?
    .query_map(params![key, limit, kind], |row| {
        Ok(RunItem {
            id: row.get(0)?,
            started_at: row.get(1)?,
            finished_at: row.get(2)?,
            status: row.get(3)?,
            tool_version: row.get(4)?,
            vcs: serde_json::from_str(&row.get::<_, String>(5)?).unwrap_or_default(),
            summary: summaries.shown(row.get_ref(6)?.as_str_or_null()?),
            project: None,
        })
    })?
    .collect()
}

/// Up to `limit` generated pages after the slug `after`, by slug.
pub fn page_items(conn: &Connection, after: &str, limit: i64) -> rusqlite::Result<Vec<PageItem>> {
    conn.prepare_cached(
        "SELECT slug, title, section, path, aliases, source_count, summary, hash, run_id FROM wiki_pages
         WHERE slug > ?1 ORDER BY slug LIMIT ?2",
    )?
    .query_map(params![after, limit], |row| {
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
    .collect()
}

/// Up to `limit` catalog shards after the section `after` (from the first with `None`), by section.
pub fn index_items(conn: &Connection, after: Option<&str>, limit: i64) -> rusqlite::Result<Vec<IndexItem>> {
    conn.prepare_cached(
        // The shards' catalog rows: each names its section (the root's is '') and page count in its metadata.
        "SELECT section, path, json_path, page_count, run_id FROM (
             SELECT json_extract(o.metadata, '$.section') AS section, o.path, j.path AS json_path,
                    json_extract(o.metadata, '$.pages') AS page_count, o.run_id
             FROM storage_objects o LEFT JOIN storage_objects j ON j.uri = o.uri || '.json'
             WHERE o.kind IN ('shard', 'root')
         )
         WHERE ?1 IS NULL OR section > ?1 ORDER BY section LIMIT ?2",
    )?
    .query_map(params![after, limit], |row| {
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
    .collect()
}

/// A run's events in order, each with the labels of the source it names.
pub fn run_events(conn: &Connection, run_id: &str) -> rusqlite::Result<Vec<(ChangeEvent, String)>> {
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

/// Every stored lint finding, by path, line, column and code.
pub fn lint_findings(conn: &Connection) -> rusqlite::Result<Vec<LintFinding>> {
    conn.prepare_cached(
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
    .collect()
}

/// What the index holds, counted over the sources not in `hidden`.
#[derive(Debug, Clone)]
pub struct IndexCounts {
    pub format_version: String,
    /// Sources and notes (generated pages are not counted).
    pub sources: u64,
    /// Chunks of those sources: the count a build reports.
    pub chunks: u64,
    pub pages: u64,
    /// Builds.
    pub runs: u64,
    /// Chunks of the current generation waiting for their vectors.
    pub pending: u64,
}

/// The index's counts over the sources not in `hidden`.
pub fn index_counts(conn: &Connection, hidden: &[i64]) -> rusqlite::Result<IndexCounts> {
    let count = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, i64>(0)).map(i64::cast_unsigned);
    Ok(IndexCounts {
        format_version: conn.query_row("SELECT value FROM meta WHERE key = 'format_version'", [], |row| row.get(0))?,
        sources: count(&format!(
            "SELECT count(*) FROM sources WHERE {} AND {}",
            not_generated(),
            readable_sources("id", hidden)
        ))?,
        // The chunks of the sources counted above: the number a build reports (a page's are the wiki's).
        chunks: count(&format!(
            "SELECT count(*) FROM chunks WHERE entity IS NULL AND {} AND source_id IN (SELECT id FROM sources WHERE {})",
            readable_sources("source_id", hidden),
            not_generated()
        ))?,
        pages: count("SELECT count(*) FROM wiki_pages")?,
        runs: count("SELECT count(*) FROM runs WHERE kind = 'build'")?,
        pending: count(
            "SELECT count(*) FROM vector_index_entries
             WHERE model = (SELECT value FROM meta WHERE key = 'embeddings_model') AND status = 'pending'",
        )?,
    })
}

/// The run `id`, or the newest build when `None`, without its events.
pub fn run_status(conn: &Connection, id: Option<&str>) -> rusqlite::Result<Option<RunStatus>> {
    conn.query_row(
        "SELECT id, kind, status, started_at, finished_at, tool_version, summary FROM runs
         WHERE (?1 IS NULL AND kind = 'build') OR id = ?1 ORDER BY id DESC LIMIT 1",
        params![id],
        |row| {
            Ok(RunStatus {
                id: row.get(0)?,
                kind: row.get(1)?,
                status: row.get(2)?,
                started_at: row.get(3)?,
                finished_at: row.get(4)?,
                tool_version: row.get(5)?,
                summary: serde_json::from_str(&row.get::<_, String>(6)?).unwrap_or_default(),
                events: Vec::new(),
                project: None,
            })
        },
    )
    .optional()
}

/// The last 100 purpose decisions, newest first, each with the labels of the source it names; or, with
/// `run_id`, that run's decision alone.
pub fn decisions(conn: &Connection, run_id: Option<&str>) -> rusqlite::Result<Vec<(Decision, String)>> {
    conn.prepare_cached(
        "SELECT r.id, r.finished_at, e.path, e.new_revision, r.status, e.detail, e.labels
         FROM runs r JOIN run_events e ON e.run_id = r.id
         WHERE r.kind = 'resolve' AND e.kind = 'source_resolved' AND (?1 IS NULL OR r.id = ?1)
         ORDER BY r.id DESC LIMIT 100",
    )?
    .query_map([run_id], |row| {
        let decision = Decision {
            run_id: row.get(0)?,
            at: row.get(1)?,
            path: row.get(2)?,
            revision: row.get(3)?,
            status: row.get(4)?,
            detail: serde_json::from_str(&row.get::<_, Option<String>>(5)?.unwrap_or_default()).unwrap_or_default(),
        };
        Ok((decision, row.get::<_, String>(6)?))
    })?
    .collect()
}

/// Every stored artifact, by URI.
pub fn storage_objects(conn: &Connection) -> rusqlite::Result<Vec<StorageObject>> {
    conn.prepare_cached("SELECT uri, kind, path, hash, size, run_id FROM storage_objects ORDER BY uri")?
        .query_map([], |row| {
            Ok(StorageObject {
                uri: row.get(0)?,
                kind: row.get(1)?,
                path: row.get(2)?,
                hash: row.get(3)?,
                size: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
                run_id: row.get(5)?,
            })
        })?
        .collect()
}

/// For each of `keys`, the run that first wrote it into any source, and that source's path
/// (`passage_origins`): a line moved or copied from another file keeps the build that first held it. Keys
/// never recorded are absent. The history is scanned whole (a few megabytes at the largest corpus we hold).
pub fn passage_origins(
    conn: &Connection,
    keys: &[i64],
) -> rusqlite::Result<std::collections::HashMap<i64, (String, String)>> {
    let wanted: std::collections::HashSet<i64> = keys.iter().copied().collect();
    let mut found: std::collections::HashMap<i64, (String, String)> = std::collections::HashMap::new();
    let mut statement = conn.prepare_cached("SELECT first_run, path, line_keys FROM passage_origins")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let held: Vec<i64> =
            super::decode_line_keys(row.get_ref(2)?.as_blob()?).filter(|key| wanted.contains(key)).collect();
        if held.is_empty() {
            continue;
        }
        let (run, path): (String, String) = (row.get(0)?, row.get(1)?);
        for key in held {
            match found.get(&key) {
                Some((first, _)) if *first <= run => {}
                _ => {
                    found.insert(key, (run.clone(), path.clone()));
                }
            }
        }
    }
    Ok(found)
}

/// A run's id, times and version-control context (`vcs`, JSON as the build stored it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTimes {
    pub id: String,
    pub started_at: String,
    pub finished_at: String,
    pub vcs: String,
}

/// Which run [`run_times`] reads.
#[derive(Debug, Clone, Copy)]
pub enum RunAt<'a> {
    /// The run with this id.
    Id(&'a str),
    /// The last build started before the run with this id (run ids sort by time).
    BuildBefore(&'a str),
}

pub fn run_times(conn: &Connection, at: RunAt<'_>) -> rusqlite::Result<Option<RunTimes>> {
    let (sql, id) = match at {
        RunAt::Id(id) => ("SELECT id, started_at, finished_at, vcs FROM runs WHERE id = ?1", id),
        RunAt::BuildBefore(id) => (
            "SELECT id, started_at, finished_at, vcs FROM runs WHERE kind = 'build' AND id < ?1 ORDER BY id DESC LIMIT 1",
            id,
        ),
    };
    conn.prepare_cached(sql)?
        .query_row([id], |row| {
            Ok(RunTimes { id: row.get(0)?, started_at: row.get(1)?, finished_at: row.get(2)?, vcs: row.get(3)? })
        })
        .optional()
}
