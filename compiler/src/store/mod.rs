//! The SQLite index: the only place that knows SQL.
//!
//! `knowledge build` is the only writer, and each build's writes are one transaction: a killed build leaves
//! the previous index intact, and a reader (WAL mode) never sees half a build. Readers open the file
//! read-only. A file written in another format version is rebuilt from scratch, inside that same
//! transaction.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use knowledge_queries::Origin;
use rusqlite::{Connection, OptionalExtension, params};

mod embeddings;
mod entities;
pub mod export;
mod ledger;
mod lock;
pub mod paths;
pub mod postgres;
mod read;
mod resolve;
mod search;
mod signals;
mod weighted_hits;
mod wiki;
mod write;
mod writings;
pub use embeddings::*;
pub use entities::*;
pub use ledger::*;
pub use lock::{FileLock, LOCK_FILE, WriterLock};
pub use read::*;
pub use resolve::*;
pub use search::*;
pub use weighted_hits::register_weighted_hits;
pub use wiki::*;
pub use write::*;
pub use writings::*;

/// The index format this binary reads and writes. Bump it with any change to `sql/schema.sql`.
pub const FORMAT_VERSION: u32 = 1;

/// The index file's name inside the output folder.
pub const DB_FILE: &str = "knowledge.db";

/// The SQL that creates the index's tables and views.
pub const SCHEMA: &str = include_str!("sql/schema.sql");
/// The SQL that creates its secondary indexes.
const INDEXES: &str = include_str!("sql/indexes.sql");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("SQLite error on `{}`", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("no index at `{}` (run `knowledge build` first)", .0.display())]
    Missing(PathBuf),
    #[error("cannot take the writer's lock `{}`", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot compile the wiki: {0}")]
    Wiki(String),
    #[error("the index at `{}` has format version {found}, this binary reads version {FORMAT_VERSION} (run `knowledge build` to rebuild it)", path.display())]
    Format { path: PathBuf, found: String },
}

/// What a source gave the wiki planner, as stored: its labels, its outline (JSON) and its signals.
#[derive(Debug, Clone)]
pub struct PlanInputs {
    pub labels: String,
    pub outline: String,
    /// (kind, label, other, quotable, weight), in the order they were stored.
    pub signals: Vec<(String, String, Option<String>, bool, u32)>,
}

/// A `knowledge ask` as the run ledger records it.
#[derive(Debug, Clone)]
pub struct AskRecord<'a> {
    pub question: &'a str,
    pub found: bool,
    pub answer: &'a str,
    pub citations: Vec<AskCitation<'a>>,
    /// A generated answer's provider, model, token usage and cost (JSON), recorded as `provider_usage`.
    pub generation: Option<String>,
    /// The whole answer as JSON: the run's summary, which `knowledge wiki file-answer` files.
    pub summary: String,
}

/// One event of a run that is not a build.
#[derive(Debug, Clone)]
pub struct LedgerEvent {
    pub kind: &'static str,
    /// The source's stored path, or what the event names (a tool), or nothing.
    pub path: String,
    pub revision: Option<String>,
    pub detail: Option<String>,
}

/// A source an answer cites.
#[derive(Debug, Clone)]
pub struct AskCitation<'a> {
    pub path: &'a str,
    pub revision: &'a str,
    pub reference: &'a str,
}

/// A file's device and inode, which a file put in its place (a pulled index renamed over it) does not
/// share: what tells a kept connection's file from its replacement.
pub type FileIdentity = (u64, u64);

#[cfg(unix)]
#[must_use]
pub fn file_identity(path: &Path) -> Option<FileIdentity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|metadata| (metadata.dev(), metadata.ino()))
}

/// Without inode numbers, no connection is kept.
#[cfg(not(unix))]
#[must_use]
pub fn file_identity(_path: &Path) -> Option<FileIdentity> {
    None
}

/// Takes the one-writer lock on the output folder `folder`, telling `waiting` (once) when another writer
/// holds it.
pub fn writer_lock(folder: &Path, waiting: impl FnOnce(Option<u32>)) -> Result<WriterLock, StoreError> {
    WriterLock::acquire(folder, waiting).map_err(|source| StoreError::Lock { path: folder.join(LOCK_FILE), source })
}

/// One lint finding to store.
#[derive(Debug, Clone)]
pub struct LintRow {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
}

/// A file whose content is unchanged but whose size or mtime moved: only its stat columns are updated.
#[derive(Debug, Clone)]
pub struct StatRow {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RunEvent {
    pub kind: &'static str,
    pub path: String,
    pub old_revision: Option<String>,
    pub new_revision: Option<String>,
    pub detail: Option<String>,
    /// Labels for an event whose source has no row (a skipped file); a row's labels take precedence.
    pub labels: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: String,
    pub started_at: String,
    pub finished_at: String,
    pub tool_version: String,
    pub fingerprint: String,
    pub vcs: String,
    pub summary: String,
}

/// Everything one build writes, applied in one transaction.
#[derive(Debug)]
pub struct BuildWrite {
    pub create_schema: bool,
    /// Every source is re-derived: clear all chunks at once instead of source by source.
    pub replace_all: bool,
    /// The run this build records; sources it derives name it as their `indexed_run`.
    pub run_id: String,
    /// Ids of the prior rows of changed and removed sources: their rows are deleted first.
    pub replaced: Vec<i64>,
    pub stats: Vec<StatRow>,
    pub events: Vec<RunEvent>,
    /// The project name, recorded as `source_owner` in provenance.
    pub source_owner: String,
    /// A hash of the `[lint]` settings the stored lint results were computed with.
    pub lint_config: String,
    /// A hash of the `[wiki]` settings and templates the pages were rendered with.
    pub wiki_config: String,
    /// JSON: the principals of `[permissions]` and the labels each may read, for readers without kc.toml.
    pub principals: String,
    /// JSON: the labels each purpose of `[permissions.purposes]` may not read.
    pub purposes: String,
    /// The text of `kc.toml`, so that a server can show it without the project tree.
    pub config: String,
    /// When this build's scan began (ns since the epoch).
    pub scan_started_ns: i64,
}

/// How much of the index a connection reads through a memory map rather than `pread` calls into its page
/// cache: address space, not memory (pages are the kernel's page cache, shared with every reader). SQLite
/// caps it at 2 GiB unless built otherwise; at 256 MiB, writing the vector file of a 519 MB index (69,000
/// chunks) spent a third of its time in `pread`.
pub(crate) const MMAP_SIZE: i64 = 2 << 30;

/// Plans each prepared statement once, whatever values are bound to it (SQLite's query planner stability
/// guarantee). Without it a statement over `chunks` or `sources`, which have partial indexes, is parsed and
/// planned again at every step after a new value is bound (SQLite checks whether the value lets a partial
/// index serve), so a cached statement saved nothing: 20 % of a server's search was that parsing. The
/// partial indexes' conditions are met by literals in the queries that use them, never by a bound value.
pub(crate) fn plan_once(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map(|_| ())
}

/// The writer's connection, held only by `knowledge build`.
pub struct Store {
    path: PathBuf,
    conn: Connection,
}

impl Store {
    /// Opens (creating if needed) the index for a build.
    pub fn open_for_build(path: &Path) -> Result<Store, StoreError> {
        let wrap = |source| StoreError::Sqlite { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(wrap)?;
        conn.pragma_update(None, "journal_mode", "wal").map_err(wrap)?;
        conn.pragma_update(None, "synchronous", "normal").map_err(wrap)?;
        // The build reads the index (every source's stat row, signals, page rows) through a memory map
        // rather than copying each page into the cache: 1.8 ms of dendron-vault's 17 ms no-op process
        // (docs/performance.md). The file never shrinks under the map: the tool runs no VACUUM and keeps
        // `auto_vacuum` off, so freed pages stay in the file.
        conn.pragma_update(None, "mmap_size", MMAP_SIZE).map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", "off").map_err(wrap)?;
        // 64 MiB of page cache and in-memory sorting keep a large build's inserts and index builds off disk.
        conn.pragma_update(None, "cache_size", -65536).map_err(wrap)?;
        conn.pragma_update(None, "temp_store", "memory").map_err(wrap)?;
        // A build prepares a few dozen distinct statements (sources, chunks, signals, wiki rows); the default
        // cache of 16 would evict and re-parse them for every page.
        conn.set_prepared_statement_cache_capacity(64);
        plan_once(&conn).map_err(wrap)?;
        Ok(Store { path: path.to_path_buf(), conn })
    }

    /// Leaves copying the committed log into the index file (its checkpoint: the pages a build wrote, and
    /// two fsyncs) to [`checkpoint`] rather than to this connection's close. `--watch` runs it once the
    /// build's line is out, so an edit's latency ends at its commit; readers see the committed index either
    /// way, and a process that stops first leaves a log the next connection reads.
    pub fn defer_checkpoint(&self) -> Result<(), StoreError> {
        self.conn
            .set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map(|_| ())
            .map_err(|source| self.wrap(source))
    }

    /// [`checkpoint`] through this connection, which a kept store (`--watch`) already holds open.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())).map_err(|source| self.wrap(source))
    }

    /// The writer's lock on the index's folder, for the small writes besides builds: they wait for a build.
    fn writer_lock(&self) -> Result<WriterLock, StoreError> {
        writer_lock(self.path.parent().unwrap_or(Path::new(".")), |_| {})
    }

    fn wrap(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.path.clone(), source }
    }

    /// Queues an embedding job in its own transaction: `knowledge reindex enqueue`, which, like a build,
    /// writes only through this writer.
    pub fn enqueue_embeddings(&mut self, model: &str, full: bool) -> Result<String, StoreError> {
        let at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let path = self.path.clone();
        let wrap = |source| StoreError::Sqlite { path: path.clone(), source };
        let _lock = self.writer_lock()?;
        let tx = self.conn.transaction().map_err(wrap)?;
        let job = enqueue_embeddings(&tx, model, full, &at).map_err(wrap)?;
        tx.commit().map_err(wrap)?;
        Ok(job)
    }

    /// Records a `knowledge ask` as a run of kind `ask`, in its own transaction: the tool call, the sources
    /// the answer cites (with their labels, so readers can filter), and the answer.
    pub fn record_ask(&mut self, run_id: &str, answer: &AskRecord<'_>) -> Result<(), StoreError> {
        let mut events: Vec<LedgerEvent> = vec![LedgerEvent {
            kind: "tool_call",
            path: "knowledge_context_pack".to_string(),
            revision: None,
            detail: Some(answer.question.to_string()),
        }];
        for citation in &answer.citations {
            events.push(LedgerEvent {
                kind: "ask_source",
                path: citation.path.to_string(),
                revision: Some(citation.revision.to_string()),
                detail: Some(citation.reference.to_string()),
            });
        }
        if let Some(generation) = &answer.generation {
            events.push(LedgerEvent {
                kind: "tool_call",
                path: "provider_generate".to_string(),
                revision: None,
                detail: Some(answer.question.to_string()),
            });
            events.push(LedgerEvent {
                kind: "provider_usage",
                path: String::new(),
                revision: None,
                detail: Some(generation.clone()),
            });
        }
        events.push(LedgerEvent {
            kind: "ask_answer",
            path: String::new(),
            revision: None,
            detail: Some(answer.answer.to_string()),
        });
        self.record_ledger(run_id, "ask", "answered", answer.summary.as_str(), &events)
    }

    /// Records a run that is not a build (`ask`, `resolve`) with its events, in its own transaction. Each
    /// event carries its source's labels, so readers can filter the ledger.
    pub fn record_ledger(
        &mut self,
        run_id: &str,
        kind: &str,
        status: &str,
        summary: &str,
        events: &[LedgerEvent],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let wrap = |source| StoreError::Sqlite { path: path.clone(), source };
        let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let _lock = self.writer_lock()?;
        let tx = self.conn.transaction().map_err(wrap)?;
        let fingerprint = meta(&tx, "fingerprint").map_err(wrap)?.unwrap_or_default();
        tx.execute(
            "INSERT INTO runs (id, kind, started_at, finished_at, status, tool_version, fingerprint, vcs, summary)
             VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, '{}', ?7)",
            params![run_id, kind, now, status, env!("CARGO_PKG_VERSION"), fingerprint, summary],
        )
        .map_err(wrap)?;
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO run_events (run_id, seq, kind, path, old_revision, new_revision, detail, labels)
                 VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, COALESCE((SELECT labels FROM sources WHERE path = ?4), ''))",
            )
            .map_err(wrap)?;
        for (seq, event) in events.iter().enumerate() {
            insert
                .execute(params![run_id, seq as i64, event.kind, event.path, event.revision, event.detail])
                .map_err(wrap)?;
        }
        drop(insert);
        tx.commit().map_err(wrap)?;
        Ok(())
    }

    /// The writer's connection, for reads after a commit.
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Reads what the index holds. A file in another format reads as empty and needs its schema rebuilt.
    pub fn prior(&self) -> Result<Prior, StoreError> {
        read_prior(&self.conn).map_err(|e| self.wrap(e))
    }

    /// SQLite's count of what other connections committed to the index (`PRAGMA data_version`): equal on
    /// one connection at two moments exactly when no other connection committed in between. This
    /// connection's own commits leave it as it is.
    pub fn others_commits(&self) -> Result<i64, StoreError> {
        self.conn.query_row("PRAGMA data_version", [], |row| row.get(0)).map_err(|source| self.wrap(source))
    }

    /// A source's stored labels, outline and signals (kind, label, other, quotable, weight): what it gave the wiki
    /// planner.
    pub fn plan_inputs(&self, source_id: i64) -> Result<PlanInputs, StoreError> {
        let read = || -> rusqlite::Result<PlanInputs> {
            let (labels, outline): (String, String) =
                self.conn.query_row("SELECT labels, outline FROM sources WHERE id = ?1", [source_id], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })?;
            let blob: Option<Vec<u8>> = self
                .conn
                .prepare_cached("SELECT signals FROM concept_signals WHERE source_id = ?1")?
                .query_row([source_id], |row| row.get(0))
                .optional()?;
            let Some(blob) = blob else { return Ok(PlanInputs { labels, outline, signals: Vec::new() }) };
            let signals = signals::decode(&blob)?
                .1
                .map(|signal| {
                    let signal = signal?;
                    let other = signal.other.map(str::to_string);
                    Ok((
                        signal.kind.as_str().to_string(),
                        signal.label.to_string(),
                        other,
                        signal.quotable,
                        signal.weight,
                    ))
                })
                .collect::<rusqlite::Result<_>>()?;
            Ok(PlanInputs { labels, outline, signals })
        };
        read().map_err(|e| self.wrap(e))
    }

    /// The ids of a source's current chunks.
    pub fn chunk_ids(&self, source_id: i64) -> Result<Vec<String>, StoreError> {
        let mut statement =
            self.conn.prepare_cached("SELECT id FROM chunks WHERE source_id = ?1").map_err(|e| self.wrap(e))?;
        statement.query_map([source_id], |row| row.get(0)).and_then(Iterator::collect).map_err(|e| self.wrap(e))
    }

    /// Replaces a run's stored summary with the build's final one (JSON), which only the end of the build
    /// knows: its files, its stage times, its wall time. So the summary `runs` keeps is the one the build
    /// printed. A build killed before this keeps the summary its commit wrote.
    pub fn record_summary(&self, run_id: &str, summary: &str) -> Result<(), StoreError> {
        self.conn.execute("UPDATE runs SET summary = ?2 WHERE id = ?1", [run_id, summary]).map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Opens a transaction for a stage that writes after the build's commit (the embeddings): its rows,
    /// then the run's final summary, at once.
    pub fn begin_stage(&mut self) -> Result<StageTransaction<'_>, StoreError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|source| StoreError::Sqlite { path: path.clone(), source })?;
        Ok(StageTransaction { tx, path })
    }

    /// Opens the build's one transaction: (re)creates the schema when the index needs it, clears every
    /// chunk when every source is re-derived, and notes the prior rows of the sources the build replaces.
    /// Nothing is visible to readers until [`BuildTransaction::commit`].
    pub fn begin<'a>(&'a mut self, write: &'a BuildWrite) -> Result<BuildTransaction<'a>, StoreError> {
        let path = self.path.clone();
        let wrap = |source| StoreError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(wrap)?;
        if write.create_schema {
            drop_everything(&tx).map_err(wrap)?;
            tx.execute_batch(SCHEMA).map_err(wrap)?;
            set_meta(&tx, "format_version", &FORMAT_VERSION.to_string()).map_err(wrap)?;
            set_meta(&tx, "schema_hash", schema_hash()).map_err(wrap)?;
        }
        // The ids of the chunks this build deletes, for the embedding stage, and the paths of the sources it
        // deletes, for the vector file (`temp`: one connection's, gone with it; a build stopped before the
        // stage makes the next one scan every entry, and write the whole vector file).
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS gone_chunks (id TEXT PRIMARY KEY) WITHOUT ROWID;
             DELETE FROM temp.gone_chunks;
             CREATE TEMP TABLE IF NOT EXISTS gone_sources (path TEXT PRIMARY KEY) WITHOUT ROWID;
             DELETE FROM temp.gone_sources;",
        )
        .map_err(wrap)?;
        tx.execute_batch(write::KEYWORD_WRITES).map_err(wrap)?;
        // A build that replaces every row only inserts, in rowid order: its keyword-index writes go straight in.
        if !write.replace_all {
            write::hold_keyword_writes(&tx).map_err(wrap)?;
        }
        let entities_before = write::entity_values(&tx, &write.replaced).map_err(wrap)?;
        let (labels_by_path, prior_ids) = begin_sources(&tx, write).map_err(wrap)?;
        Ok(BuildTransaction {
            tx,
            path,
            write,
            labels_by_path,
            prior_ids,
            entities_before,
            entities_after: HashMap::new(),
            entity_changes: Vec::new(),
        })
    }
}

/// A stage's writes after the build's commit, with the run's summary updated to what the stage did.
pub struct StageTransaction<'a> {
    tx: rusqlite::Transaction<'a>,
    path: PathBuf,
}

impl StageTransaction<'_> {
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.tx
    }

    /// Replaces the run's stored summary with `summary` (JSON) and commits.
    pub fn commit(self, run_id: &str, summary: &str) -> Result<(), StoreError> {
        let wrap = |source| StoreError::Sqlite { path: self.path.clone(), source };
        self.tx.execute("UPDATE runs SET summary = ?2 WHERE id = ?1", [run_id, summary]).map_err(wrap)?;
        crate::failpoint("before-stage-commit");
        self.tx.commit().map_err(wrap)
    }
}

/// One build's writes, in one transaction, in the order a build makes them: the derived sources as they
/// arrive, then the end of the sources (removals, stat refreshes, a fresh index's secondary indexes), then
/// whatever the later stages write through [`BuildTransaction::connection`], then the run and the commit.
pub struct BuildTransaction<'a> {
    tx: rusqlite::Transaction<'a>,
    path: PathBuf,
    write: &'a BuildWrite,
    /// Every written or removed source's labels, for its events.
    labels_by_path: HashMap<String, String>,
    /// The prior rows of the sources being replaced, by path: a changed source's row is updated in place,
    /// and what is left once the sources are in was removed.
    prior_ids: HashMap<String, i64>,
    /// The code entities of the replaced sources as they were, and of the written ones as they are, by
    /// slug: their difference is the run's entity delta log.
    entities_before: HashMap<String, write::EntityValue>,
    entities_after: HashMap<String, write::EntityValue>,
    /// Their difference, once the sources are in.
    entity_changes: Vec<write::EntityChangeRow>,
}

impl BuildTransaction<'_> {
    fn wrap(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.path.clone(), source }
    }

    /// Writes one derived source's rows.
    pub fn write_source(&mut self, source: &SourceRow) -> Result<(), StoreError> {
        self.labels_by_path.insert(source.path.clone(), source.labels.clone());
        let prior = self.prior_ids.remove(&source.path);
        write_source(&self.tx, prior, source, &self.write.run_id).map_err(|e| self.wrap(e))?;
        for entity in source.entities.iter() {
            self.entities_after.insert(entity.slug.clone(), write::EntityValue::of(entity, source));
        }
        Ok(())
    }

    /// The named concept keys of the plan the index's pages come from ([`plan_named_keys`]).
    pub fn plan_named_keys(&self) -> Result<Option<String>, StoreError> {
        plan_named_keys(&self.tx).map_err(|e| self.wrap(e))
    }

    /// Ends the sources: deletes those that had no new row, refreshes stats, and gives a fresh index its
    /// secondary indexes before the wiki stage looks rows up by source and page.
    pub fn finish_sources(&mut self) -> Result<(), StoreError> {
        let removed: Vec<i64> = self.prior_ids.drain().map(|(_, source_id)| source_id).collect();
        self.entity_changes = write::entity_delta(&self.entities_before, &self.entities_after);
        let finish = || -> rusqlite::Result<()> {
            for source_id in removed {
                delete_source(&self.tx, source_id, true)?;
            }
            let mut update_stat =
                self.tx.prepare_cached("UPDATE sources SET size = ?2, mtime_ns = ?3 WHERE path = ?1")?;
            for stat in &self.write.stats {
                update_stat.execute(params![stat.path, sql_int(stat.size), stat.mtime_ns])?;
            }
            if self.write.create_schema {
                self.tx.execute_batch(INDEXES)?;
            }
            Ok(())
        };
        finish().map_err(|e| self.wrap(e))
    }

    /// How many entities the sources added, changed and removed (known once the sources are finished).
    #[must_use]
    pub fn entity_counts(&self) -> (u64, u64, u64) {
        let count = |change: &str| self.entity_changes.iter().filter(|row| row.change() == change).count() as u64;
        (count("added"), count("changed"), count("removed"))
    }

    /// The transaction, for the stages that write after the sources (the wiki, embeddings, lint).
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.tx
    }

    /// Records the lint findings (`None`: lint did not run), the run and its events, and the meta keys,
    /// then commits.
    pub fn commit(
        self,
        run: &RunRow,
        stage_events: &[RunEvent],
        findings: Option<&[LintRow]>,
    ) -> Result<(), StoreError> {
        let wrap = |source| StoreError::Sqlite { path: self.path.clone(), source };
        record_run(&self.tx, self.write, &self.labels_by_path, run, stage_events, findings).map_err(wrap)?;
        write::record_entity_changes(&self.tx, &run.id, &self.entity_changes).map_err(wrap)?;
        write::write_keyword_index(&self.tx).map_err(wrap)?;
        crate::failpoint("before-commit");
        self.tx.commit().map_err(wrap)
    }
}

/// Reads the labels of the sources a build replaces, and clears what a full re-derivation replaces at
/// once; returns the labels by path and the prior rows still to replace.
#[allow(clippy::type_complexity)]
fn begin_sources(
    tx: &rusqlite::Transaction<'_>,
    write: &BuildWrite,
) -> rusqlite::Result<(HashMap<String, String>, HashMap<String, i64>)> {
    if write.replace_all {
        tx.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')", [])?;
        tx.execute("DELETE FROM chunks", [])?;
        tx.execute("DELETE FROM concept_signals", [])?;
        tx.execute("DELETE FROM entities", [])?;
    }
    // Every event records its source's labels: the new row's, or for a removed source the replaced row's.
    // Kept in memory: a fresh index has no path index until its rows are in.
    let mut labels_by_path: HashMap<String, String> = HashMap::new();
    let mut read_labels = tx.prepare_cached("SELECT path, labels FROM sources WHERE id = ?1")?;
    let mut prior_ids: HashMap<String, i64> = HashMap::new();
    for &source_id in &write.replaced {
        if let Some((path, labels)) =
            read_labels.query_row([source_id], |row| Ok((row.get(0)?, row.get(1)?))).optional()?
        {
            prior_ids.insert(String::clone(&path), source_id);
            labels_by_path.insert(path, labels);
        }
    }
    if write.replace_all {
        for &source_id in &write.replaced {
            delete_source(tx, source_id, false)?;
        }
        prior_ids.clear();
    }
    Ok((labels_by_path, prior_ids))
}

/// Sets a value of the `meta` table. The `meta` statements are cached: a build reads and writes a dozen
/// keys, and preparing a statement costs about as much as running it.
pub(crate) fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?.execute([key, value])?;
    Ok(())
}

/// Removes a value of the `meta` table.
pub(crate) fn delete_meta(conn: &Connection, key: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM meta WHERE key = ?1")?.execute([key])?;
    Ok(())
}

/// An SQL condition on `column` (a stored path) that holds for exactly the sources of `origin`.
#[must_use]
pub fn origin_condition(origin: Origin, column: &str) -> String {
    use knowledge_queries::{SCHEME_END, TOOL_SCHEME};
    // A project file's path is relative and `/`-joined from non-empty names, so it never holds `://`.
    match origin {
        Origin::File => format!("{column} NOT LIKE '%{SCHEME_END}%'"),
        Origin::External => format!("({column} LIKE '%{SCHEME_END}%' AND {column} NOT LIKE '{TOOL_SCHEME}%')"),
        other => format!("{column} LIKE '{}%'", other.prefix()),
    }
}

/// An SQL condition on a source id column that keeps the sources not in `hidden` (`TRUE` when none is).
/// The ids come from the index itself, so inlining them is safe.
#[must_use]
pub(crate) fn readable_sources(column: &str, hidden: &[i64]) -> String {
    if hidden.is_empty() {
        return "1".to_string();
    }
    let ids: Vec<String> = hidden.iter().map(i64::to_string).collect();
    format!("{column} NOT IN ({})", ids.join(","))
}

/// An SQL condition on an FTS rowid (a chunk's `seq`) that keeps the chunks of sources not in `hidden`.
#[must_use]
pub(crate) fn readable_chunks(column: &str, hidden: &[i64]) -> String {
    if hidden.is_empty() {
        return "1".to_string();
    }
    format!("{column} NOT IN (SELECT seq FROM chunks WHERE NOT ({}))", readable_sources("source_id", hidden))
}

const META_VALUE: &str = "SELECT value FROM meta WHERE key = ?1";

/// A value of the `meta` table.
pub fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(META_VALUE)?.query_row([key], |row| row.get(0)).optional()
}

/// Checkpoints the index at `path`: copies its committed log into the file, as the close of a build's
/// connection would have (see [`Store::defer_checkpoint`]). It waits for no one: a reader still on an older
/// snapshot leaves the rest to a later checkpoint. Closing, as the last connection, removes the emptied log.
pub fn checkpoint(path: &Path) -> Result<(), StoreError> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|source| StoreError::Sqlite { path: path.to_path_buf(), source })?;
    Store { path: path.to_path_buf(), conn }.checkpoint()
}

/// The line keys a `passage_origins.line_keys` blob holds (64-bit little-endian integers).
pub(crate) fn decode_line_keys(blob: &[u8]) -> impl Iterator<Item = i64> + '_ {
    blob.chunks_exact(8).map(|bytes| i64::from_le_bytes(bytes.try_into().expect("eight bytes")))
}

/// A hash of the schema SQL, stored with the index: a schema change rebuilds every existing index even if
/// `FORMAT_VERSION` was not bumped; a reworded comment does not.
/// Made once a process: every build compares it with the index's, and it is 0.4 M instructions a time.
fn schema_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| knowledge_queries::content_hash(without_comments(&format!("{SCHEMA}{INDEXES}")).as_bytes()))
}

/// SQL without its `--` comments and blank lines. The schema's string literals hold no `--`.
fn without_comments(sql: &str) -> String {
    let lines = sql.lines().map(|line| line.split_once("--").map_or(line, |(code, _)| code).trim_end());
    lines.filter(|line| !line.is_empty()).collect::<Vec<_>>().join("\n")
}

/// `None` when the index is in this binary's format; otherwise a description of what it holds instead.
fn format_mismatch(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let has_meta: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
        [],
        |row| row.get(0),
    )?;
    if !has_meta {
        return Ok(Some("none".to_string()));
    }
    let current = FORMAT_VERSION.to_string();
    Ok(match (meta(conn, "format_version")?, meta(conn, "schema_hash")?) {
        (Some(version), Some(hash)) if version == current && hash == schema_hash() => None,
        (Some(version), _) if version == current => Some(format!("{version} with another schema")),
        (Some(version), _) => Some(version),
        (None, _) => Some("none".to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::{INDEXES, SCHEMA, origin_condition, without_comments};
    use knowledge_queries::{Origin, SourceRef};

    /// Each origin's condition selects exactly the stored paths `SourceRef` reads as that origin.
    #[test]
    fn origin_conditions_select_exactly_their_origins_paths() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE s (path TEXT)").unwrap();
        let paths = [
            "docs/a.md",
            "a_b%c.md",
            "knowledge://item/n1",
            "knowledge://wiki/ownership",
            "knowledge://index/concepts",
            "https://example.com/a",
            "s3://bucket/a.md",
            "file:///srv/docs/a.md",
        ];
        for path in paths {
            conn.execute("INSERT INTO s VALUES (?1)", [path]).unwrap();
        }
        for origin in [Origin::File, Origin::External, Origin::Note, Origin::Page, Origin::Shard] {
            let sql = format!("SELECT path FROM s WHERE {} ORDER BY rowid", origin_condition(origin, "path"));
            let selected: Vec<String> =
                conn.prepare(&sql).unwrap().query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
            let expected: Vec<&str> =
                paths.iter().copied().filter(|path| SourceRef::from_path(path).origin() == origin).collect();
            assert_eq!(selected, expected, "{origin:?}");
        }
    }

    #[test]
    fn the_schema_hash_reads_statements_not_comments() {
        let sql = "-- The sources.\nCREATE TABLE s (\n    id INTEGER, -- its id\n    path TEXT\n);\n";
        let reworded = "-- Every source.\n\nCREATE TABLE s (\n    id INTEGER, -- the row id\n    path TEXT\n);\n";
        assert_eq!(without_comments(sql), without_comments(reworded));
        assert_ne!(without_comments(sql), without_comments(&sql.replace("path TEXT", "path TEXT NOT NULL")));
        // A `--` inside a string literal would cut a statement: the schema's lines open no literal before one.
        for line in format!("{SCHEMA}{INDEXES}").lines() {
            let code = line.split_once("--").map_or(line, |(code, _)| code);
            assert_eq!(code.matches('\'').count() % 2, 0, "{line}");
        }
    }
}
