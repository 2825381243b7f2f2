//! The run ledger and the storage, as an agent asks about them: one run's status and events (a build, an
//! `ask`, a `resolve` decision), the purpose decisions recorded, and what the output folder stores.

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::Serialize;

use super::{ChangeEvent, ReaderError};
use crate::retrieval::access::Access;

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

/// The run `id`, or the newest build when `None`. A run of another kind that names a source the principal
/// may not read is missing for it (its summary holds that source's text or name); a build's events and
/// skipped files are shown only where readable.
pub fn run_status(conn: &Connection, id: Option<&str>, access: &Access) -> Result<RunStatus, ReaderError> {
    let row = conn
        .query_row(
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
        .optional()?;
    let missing = || ReaderError::NotFound(id.unwrap_or("the last build").to_string());
    let run = row.ok_or_else(missing)?;
    let events = super::listing::run_events(conn, &run.id)?;
    as_readable(run, events, access).ok_or_else(missing)
}

/// `run` with the events (each with its source's labels) and skipped files the principal may read; `None`
/// when it is not a build and names a source the principal may not read.
pub(super) fn as_readable(
    mut run: RunStatus,
    events: Vec<(ChangeEvent, String)>,
    access: &Access,
) -> Option<RunStatus> {
    let readable =
        |(event, labels): &(ChangeEvent, String)| access.can_read_labels(labels) && access.can_read_path(&event.path);
    if run.kind != "build" && !events.iter().all(readable) {
        return None;
    }
    run.events = events.into_iter().filter(readable).map(|(event, _)| event).collect();
    if let Some(skipped) = run.summary.get_mut("skipped").and_then(serde_json::Value::as_array_mut) {
        skipped.retain(|s| s["path"].as_str().is_some_and(|path| access.can_read_path(path)));
    }
    Some(run)
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

/// The last 100 decisions on sources the principal may read, newest first.
pub fn decisions(conn: &Connection, access: &Access) -> Result<Vec<Decision>, ReaderError> {
    let mut statement = conn.prepare_cached(
        "SELECT r.id, r.finished_at, e.path, e.new_revision, r.status, e.detail, e.labels
         FROM runs r JOIN run_events e ON e.run_id = r.id
         WHERE r.kind = 'resolve' AND e.kind = 'source_resolved' ORDER BY r.id DESC LIMIT 100",
    )?;
    let rows = statement.query_map([], |row| {
        let decision = Decision {
            run_id: row.get(0)?,
            at: row.get(1)?,
            path: row.get(2)?,
            revision: row.get(3)?,
            status: row.get(4)?,
            detail: serde_json::from_str(&row.get::<_, Option<String>>(5)?.unwrap_or_default()).unwrap_or_default(),
        };
        Ok((decision, row.get::<_, String>(6)?))
    })?;
    let mut found = Vec::new();
    for row in rows {
        let (decision, labels) = row?;
        if access.can_read_labels(&labels) && access.can_read_path(&decision.path) {
            found.push(decision);
        }
    }
    Ok(found)
}

/// What the output folder stores: the index and the artifacts builds wrote.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Storage {
    /// The index file's path.
    pub index: String,
    pub size_bytes: u64,
    pub format_version: u32,
    /// The folders of the output layout.
    pub layout: Vec<String>,
    /// Artifacts by kind (`page`, `shard`, `shard_json`, `root`, `schema`).
    pub artifacts: Vec<ArtifactKind>,
    /// The first 1000 artifacts, by URI.
    pub objects: Vec<StorageObject>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ArtifactKind {
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
}

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

/// The storage of the index at `index`. Artifacts are generated pages and shards, which quote only what
/// every principal may read; an object whose source is hidden is left out all the same.
pub fn storage(conn: &Connection, index: &std::path::Path, access: &Access) -> Result<Storage, ReaderError> {
    let mut objects = Vec::new();
    let mut kinds: std::collections::BTreeMap<String, (u64, u64)> = std::collections::BTreeMap::new();
    let mut statement =
        conn.prepare_cached("SELECT uri, kind, path, hash, size, run_id FROM storage_objects ORDER BY uri")?;
    let rows = statement.query_map([], |row| {
        Ok(StorageObject {
            uri: row.get(0)?,
            kind: row.get(1)?,
            path: row.get(2)?,
            hash: row.get(3)?,
            size: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
            run_id: row.get(5)?,
        })
    })?;
    for row in rows {
        let object = row?;
        if !access.can_read_path(&object.uri) {
            continue;
        }
        let entry = kinds.entry(object.kind.clone()).or_default();
        entry.0 += 1;
        entry.1 += object.size;
        if objects.len() < 1000 {
            objects.push(object);
        }
    }
    Ok(Storage {
        index: index.display().to_string(),
        size_bytes: std::fs::metadata(index).map(|m| m.len()).unwrap_or(0),
        format_version: crate::store::FORMAT_VERSION,
        layout: crate::build::OUTPUT_LAYOUT.iter().map(|s| (*s).to_string()).collect(),
        artifacts: kinds.into_iter().map(|(kind, (count, bytes))| ArtifactKind { kind, count, bytes }).collect(),
        objects,
    })
}
