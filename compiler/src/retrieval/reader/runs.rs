//! The run ledger and the storage, as an agent asks about them: one run's status and events (a build, an
//! `ask`, a `resolve` decision), the purpose decisions recorded, and what the output folder stores.

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use super::{ChangeEvent, ReaderError};
use crate::retrieval::access::Access;
pub use crate::store::{Decision, RunStatus, StorageObject};

/// The run `id`, or the newest build when `None`. A run of another kind that names a source the principal
/// may not read is missing for it (its summary holds that source's text or name); a build's events and
/// skipped files are shown only where readable.
pub fn run_status(conn: &Connection, id: Option<&str>, access: &Access) -> Result<RunStatus, ReaderError> {
    let row = crate::store::run_status(conn, id)?;
    let missing = || ReaderError::NotFound(id.unwrap_or("the last build").to_string());
    let run = row.ok_or_else(missing)?;
    let events = crate::store::run_events(conn, &run.id)?;
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

/// The last 100 decisions on sources the principal may read, newest first.
pub fn decisions(conn: &Connection, access: &Access) -> Result<Vec<Decision>, ReaderError> {
    readable_decisions(conn, None, access)
}

/// The decision recorded by the run `run_id`; not found when there is none or its source is hidden from the
/// principal.
pub fn decision(conn: &Connection, run_id: &str, access: &Access) -> Result<Decision, ReaderError> {
    readable_decisions(conn, Some(run_id), access)?
        .pop()
        .ok_or_else(|| ReaderError::NotFound(format!("no decision `{run_id}`")))
}

fn readable_decisions(conn: &Connection, run_id: Option<&str>, access: &Access) -> Result<Vec<Decision>, ReaderError> {
    let mut found = Vec::new();
    for (decision, labels) in crate::store::decisions(conn, run_id)? {
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

/// The storage of the index at `index`. Artifacts are generated pages and shards, which quote only what
/// every principal may read; an object whose source is hidden is left out all the same.
pub fn storage(conn: &Connection, index: &std::path::Path, access: &Access) -> Result<Storage, ReaderError> {
    let mut objects = Vec::new();
    let mut kinds: std::collections::BTreeMap<String, (u64, u64)> = std::collections::BTreeMap::new();
    for object in crate::store::storage_objects(conn)? {
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
