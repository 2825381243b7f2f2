//! Publishing: one project's rows in Postgres brought in line with the committed SQLite index, in one
//! Postgres transaction, sending only what differs (sources by revision, derived run, labels and vectors, and
//! a source derived again into the same rows only its derived run; pages by hash; runs by id; lint findings by
//! the build that stored them), and the run's final summary.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use super::*;
use crate::store::BUILD_MEMOS;

/// What a build's publish did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct PublishReport {
    pub project: String,
    /// The store, as `host/database` (never a password).
    pub target: String,
    pub sources_written: u64,
    /// Sources this build derived again into the rows the store holds (another binary, changed settings):
    /// only their derived run is updated.
    pub sources_refreshed: u64,
    pub sources_removed: u64,
    pub chunks_written: u64,
    /// Chunks of the sources replaced or removed.
    pub chunks_removed: u64,
    pub vectors_written: u64,
    pub pages_written: u64,
    pub pages_removed: u64,
    pub runs_written: u64,
    /// Lint findings sent (the project's stored findings are replaced when the build's lint run differs).
    pub lint_findings_written: u64,
    pub ms: u64,
}

/// A source as the local index holds it: what decides whether its rows travel again. The rest of its row
/// is read only when they do.
struct LocalSource {
    id: i64,
    path: String,
    revision: String,
    labels: String,
    indexed_run: String,
    /// The generation's vectors of its chunks: model and count of ready ones.
    vectors: String,
}

impl LocalSource {
    /// The stored state of this source with the digest `rows` of its published rows: revision, derived run,
    /// labels, rows and vectors. When any of them differs the source travels again, or, when only the run
    /// does, its run alone.
    fn state(&self, rows: &str) -> String {
        format!("{}\u{1}{}\u{1}{}\u{1}{rows}\u{1}{}", self.revision, self.indexed_run, self.labels, self.vectors)
    }
}

/// A stored source's state, in its parts ([`LocalSource::state`]); `None` for a state written before the
/// rows' digest was part of it, which sends the source again once.
struct StoredState<'a> {
    revision: &'a str,
    indexed_run: &'a str,
    labels: &'a str,
    rows: &'a str,
    vectors: &'a str,
}

impl StoredState<'_> {
    fn read(state: &str) -> Option<StoredState<'_>> {
        let mut parts = state.split('\u{1}');
        let stored = StoredState {
            revision: parts.next()?,
            indexed_run: parts.next()?,
            labels: parts.next()?,
            rows: parts.next()?,
            vectors: parts.next()?,
        };
        parts.next().is_none().then_some(stored)
    }

    /// Whether the store holds `source` at its revision and with its labels (its derived run and vectors are
    /// compared apart).
    fn same_revision_and_labels(&self, source: &LocalSource) -> bool {
        self.revision == source.revision && self.labels == source.labels
    }
}

/// Brings `project`'s rows in Postgres in line with the committed local index, in one transaction.
pub fn publish(local: &Connection, store: &mut PgStore, project: &str) -> Result<PublishReport, PostgresError> {
    let clock = Instant::now();
    let mut report =
        PublishReport { project: project.to_string(), target: store.target.clone(), ..PublishReport::default() };
    let meta = local_meta(local)?;
    let last_run = meta.get("last_run").cloned();
    let embedded_run = meta.get("embedded_run").cloned();
    // An index without stored findings (`[lint] on_build = false`) records an empty run.
    let lint_run = meta.get("lint_run").cloned().unwrap_or_default();
    let target = store.target.clone();
    let fail = |source| PostgresError::Postgres { target: target.clone(), source };
    prepare_vectors(local, store, meta.get("embeddings_model").map_or("", String::as_str))
        .map_err(|e| e.with_target(&target))?;
    let mut tx = store.client.transaction().map_err(fail)?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('knowledge:' || $1::text))", &[&project]).map_err(fail)?;
    let published = tx
        .query_opt("SELECT last_run, embedded_run, lint_run FROM knowledge_projects WHERE project = $1", &[&project])
        .map_err(fail)?
        .map(|row| (row.get::<_, Option<String>>(0), row.get::<_, Option<String>>(1), row.get::<_, Option<String>>(2)));
    if published.as_ref() == Some(&(last_run.clone(), embedded_run.clone(), Some(lint_run.clone()))) {
        // The index is the one published; only runs recorded since (decisions of `knowledge source
        // resolve --purpose`, answers of `knowledge ask`) may be owed.
        let newest: Option<String> = local.query_row("SELECT max(id) FROM runs", [], |row| row.get(0))?;
        let stored = tx
            .query_one("SELECT max(id) FROM knowledge_runs WHERE project = $1", &[&project])
            .map_err(fail)?
            .get::<_, Option<String>>(0);
        if newest != stored {
            publish_runs(local, &mut tx, project, None, &mut report).map_err(|e| e.with_target(&target))?;
        }
        tx.commit().map_err(fail)?;
        report.ms = crate::elapsed_ms(clock);
        return Ok(report);
    }
    let meta_json = serde_json::to_value(&meta).expect("strings serialize");
    tx.execute(
        "INSERT INTO knowledge_projects (project, meta) VALUES ($1, $2)
         ON CONFLICT (project) DO UPDATE SET meta = EXCLUDED.meta, published_at = now()",
        &[&project, &meta_json],
    )
    .map_err(fail)?;

    publish_sources(local, &mut tx, project, &meta, &mut report).map_err(|e| e.with_target(&target))?;
    publish_pages(local, &mut tx, project, &mut report).map_err(|e| e.with_target(&target))?;
    let (previous_run, previous_lint) = published.map(|(run, _, lint)| (run, lint)).unwrap_or_default();
    publish_runs(local, &mut tx, project, previous_run.as_deref(), &mut report).map_err(|e| e.with_target(&target))?;
    if previous_lint.as_deref() != Some(lint_run.as_str()) {
        publish_lint(local, &mut tx, project, &mut report).map_err(|e| e.with_target(&target))?;
    }
    // After a large publish the planner's statistics are stale (a fresh table reads as empty, and a
    // semantic search would scan every vector rather than ask the HNSW index): refresh them now.
    if report.chunks_written >= ANALYZE_AFTER {
        tx.batch_execute("ANALYZE knowledge_sources, knowledge_chunks, knowledge_vectors").map_err(fail)?;
    }
    tx.execute(
        "UPDATE knowledge_projects SET last_run = $2, embedded_run = $3, lint_run = $4, chunks = chunks + $5 - $6
         WHERE project = $1",
        &[
            &project,
            &last_run,
            &embedded_run,
            &lint_run,
            &report.chunks_written.cast_signed(),
            &report.chunks_removed.cast_signed(),
        ],
    )
    .map_err(fail)?;
    tx.commit().map_err(fail)?;
    report.ms = crate::elapsed_ms(clock);
    Ok(report)
}

/// Sets the final summary of a run the last publish sent: the build records it after publishing, since it
/// holds the publish's own counters.
pub fn record_summary(store: &mut PgStore, project: &str, run_id: &str, summary: &str) -> Result<(), PostgresError> {
    store
        .client
        .execute(
            "UPDATE knowledge_runs SET summary = $3::text::jsonb WHERE project = $1 AND id = $2",
            &[&project, &run_id, &json_or_empty(summary)],
        )
        .map_err(|source| store.error(source))?;
    Ok(())
}

/// An error of one publish step, before it knows the store's name.
enum StepError {
    Postgres(postgres::Error),
    Sqlite(rusqlite::Error),
}

impl From<postgres::Error> for StepError {
    fn from(error: postgres::Error) -> StepError {
        StepError::Postgres(error)
    }
}

impl From<rusqlite::Error> for StepError {
    fn from(error: rusqlite::Error) -> StepError {
        StepError::Sqlite(error)
    }
}

impl StepError {
    fn with_target(self, target: &str) -> PostgresError {
        match self {
            StepError::Postgres(source) => PostgresError::Postgres { target: target.to_string(), source },
            StepError::Sqlite(error) => PostgresError::Sqlite(error),
        }
    }
}

/// The index's `meta` as readers of the store use it: not the build's own memos ([`BUILD_MEMOS`]: the log a
/// build owes, the plan's named keys), which only the next local build reads and which grow with the corpus.
fn local_meta(local: &Connection) -> rusqlite::Result<HashMap<String, String>> {
    let memos = vec!["?"; BUILD_MEMOS.len()].join(", ");
    local
        .prepare(&format!("SELECT key, value FROM meta WHERE key NOT IN ({memos})"))?
        .query_map(BUILD_MEMOS, |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

fn publish_sources(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    meta: &HashMap<String, String>,
    report: &mut PublishReport,
) -> Result<(), StepError> {
    let model = meta.get("embeddings_model").cloned().unwrap_or_default();
    let published: HashMap<String, (i64, String)> = tx
        .query("SELECT path, id, state FROM knowledge_sources WHERE project = $1", &[&project])?
        .into_iter()
        .map(|row| (row.get(0), (row.get(1), row.get(2))))
        .collect();
    let mut statement = local.prepare("SELECT id, path, revision, labels, indexed_run FROM sources")?;
    let mut sources: Vec<LocalSource> = statement
        .query_map([], |row| {
            Ok(LocalSource {
                id: row.get(0)?,
                path: row.get(1)?,
                revision: row.get(2)?,
                labels: row.get(3)?,
                indexed_run: row.get(4)?,
                vectors: String::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    vector_states(local, tx, project, &model, &published, &mut sources)?;

    let local_paths: HashSet<&str> = sources.iter().map(|s| s.path.as_str()).collect();
    // Replaced sources are deleted with their rows (chunks and vectors cascade), then written anew.
    let mut gone: Vec<i64> =
        published.iter().filter(|(path, _)| !local_paths.contains(path.as_str())).map(|(_, (id, _))| *id).collect();
    report.sources_removed = gone.len() as u64;
    let Compared { changed, refreshed } = compare_sources(local, &sources, &published, &mut gone)?;
    refresh_runs(tx, &refreshed, report)?;
    if !gone.is_empty() {
        count_terms(tx, project, &gone, "-")?;
        let removed = tx.query_one("SELECT count(*) FROM knowledge_chunks WHERE source_id = ANY($1)", &[&gone])?;
        report.chunks_removed = removed.get::<_, i64>(0).cast_unsigned();
        tx.execute("DELETE FROM knowledge_sources WHERE id = ANY($1)", &[&gone])?;
    }
    if changed.is_empty() {
        return Ok(());
    }
    report.sources_written = changed.len() as u64;

    let ids = copy_sources(local, tx, project, &changed)?;
    let changed: Vec<&LocalSource> = changed.into_iter().map(|(source, _)| source).collect();
    copy_chunks(local, tx, project, &changed, &ids, report)?;
    let source_ids: Vec<i64> = ids.values().copied().collect();
    count_terms(tx, project, &source_ids, "+")?;
    if model.is_empty() {
        return Ok(());
    }
    copy_vectors(local, tx, project, &model, &changed, &source_ids, report)
}

/// A local source with the digest of its rows ([`rows_digest`]).
type Digested<'a> = (&'a LocalSource, String);

/// What [`compare_sources`] finds.
struct Compared<'a> {
    changed: Vec<Digested<'a>>,
    /// With the store's id.
    refreshed: Vec<(i64, Digested<'a>)>,
}

/// The sources whose rows must travel (each with its rows' digest), and those derived again into the rows the
/// store holds (with the store's id), whose derived run alone is updated. A replaced source's stored id joins
/// `gone`.
fn compare_sources<'a>(
    local: &Connection,
    sources: &'a [LocalSource],
    published: &HashMap<String, (i64, String)>,
    gone: &mut Vec<i64>,
) -> rusqlite::Result<Compared<'a>> {
    let mut changed: Vec<Digested<'a>> = Vec::new();
    let mut refreshed: Vec<(i64, Digested<'a>)> = Vec::new();
    let mut digest = local.prepare_cached(SOURCE_ROW)?;
    let mut chunk_rows = local.prepare_cached(CHUNK_ROWS)?;
    for source in sources {
        let stored = published.get(&source.path).map(|(id, state)| (*id, StoredState::read(state)));
        let rows = match &stored {
            Some((id, Some(state))) if state.same_revision_and_labels(source) && state.vectors == source.vectors => {
                if state.indexed_run == source.indexed_run {
                    continue;
                }
                // Derived again (another binary, changed settings): its rows travel only if they came out
                // different, which reading them tells.
                let rows = rows_digest(&mut digest, &mut chunk_rows, source.id)?;
                if rows == state.rows {
                    refreshed.push((*id, (source, rows)));
                    continue;
                }
                rows
            }
            _ => rows_digest(&mut digest, &mut chunk_rows, source.id)?,
        };
        if let Some((id, _)) = stored {
            gone.push(id);
        }
        changed.push((source, rows));
    }
    Ok(Compared { changed, refreshed })
}

/// A source's row as published, its derived run last.
const SOURCE_ROW: &str =
    "SELECT path, uri, kind, mime, size, revision, title, outline, lint_facts, labels, chunk_count, indexed_run
     FROM sources WHERE id = ?1";

/// A source's current chunks as published. A chunk of an older revision (kept in the local index until its
/// source is read again) could cite text that is gone: it is not published.
const CHUNK_ROWS: &str =
    "SELECT c.id, c.ordinal, c.revision, c.hash, c.heading_path, c.title, c.text, c.identifiers, c.start_offset,
            c.end_offset, c.start_line, c.end_line, c.entity
     FROM chunks c JOIN sources s ON s.id = c.source_id
     WHERE c.source_id = ?1 AND c.revision = s.revision ORDER BY c.ordinal";

/// The digest of what a source's rows would send, its derived run aside: its row and its chunks' rows.
fn rows_digest(
    source_row: &mut rusqlite::CachedStatement<'_>,
    chunk_rows: &mut rusqlite::CachedStatement<'_>,
    id: i64,
) -> rusqlite::Result<String> {
    let mut rows = String::new();
    let fields = source_row.query_row([id], |row| text_columns(row, 11))?;
    copy_row(&mut rows, fields.iter().map(Option::as_deref));
    for fields in chunk_rows.query_map([id], |row| text_columns(row, 13))? {
        copy_row(&mut rows, fields?.iter().map(Option::as_deref));
    }
    Ok(knowledge_queries::content_hash(rows.as_bytes()))
}

/// Records the new derived run of the sources derived again into the rows the store holds, in one statement.
fn refresh_runs(
    tx: &mut postgres::Transaction<'_>,
    refreshed: &[(i64, Digested<'_>)],
    report: &mut PublishReport,
) -> Result<(), postgres::Error> {
    if refreshed.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = refreshed.iter().map(|(id, ..)| *id).collect();
    let runs: Vec<&str> = refreshed.iter().map(|(_, (source, _))| source.indexed_run.as_str()).collect();
    let states: Vec<String> = refreshed.iter().map(|(_, (source, rows))| source.state(rows)).collect();
    tx.execute(
        "UPDATE knowledge_sources s SET indexed_run = r.run, state = r.state
         FROM unnest($1::int8[], $2::text[], $3::text[]) AS r(id, run, state) WHERE s.id = r.id",
        &[&ids, &runs, &states],
    )?;
    report.sources_refreshed = refreshed.len() as u64;
    Ok(())
}

/// Writes the `changed` sources' rows (through one COPY), each with its state (given its rows' digest), and
/// their new ids by path.
fn copy_sources(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    changed: &[Digested<'_>],
) -> Result<HashMap<String, i64>, StepError> {
    let mut copy = String::new();
    let mut row_of = local.prepare_cached(SOURCE_ROW)?;
    for (source, rows) in changed {
        let fields = row_of.query_row([source.id], |row| text_columns(row, 12))?;
        let state = source.state(rows);
        let fields = std::iter::once(Some(project)).chain(fields.iter().map(Option::as_deref));
        copy_row(&mut copy, fields.chain([Some(state.as_str())]));
    }
    copy_in(
        tx,
        "COPY knowledge_sources (project, path, uri, kind, mime, size, revision, title, outline, lint_facts,
                                 labels, chunk_count, indexed_run, state) FROM STDIN",
        &copy,
    )?;
    let paths: Vec<&str> = changed.iter().map(|(source, _)| source.path.as_str()).collect();
    let ids: HashMap<String, i64> = tx
        .query("SELECT path, id FROM knowledge_sources WHERE project = $1 AND path = ANY($2)", &[&project, &paths])?
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();

    Ok(ids)
}

/// Writes the current chunks of the `changed` sources (through one COPY).
fn copy_chunks(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    changed: &[&LocalSource],
    ids: &HashMap<String, i64>,
    report: &mut PublishReport,
) -> Result<(), StepError> {
    let mut chunk_rows = local.prepare_cached(CHUNK_ROWS)?;
    let mut copy = String::new();
    for source in changed {
        let id = ids[&source.path].to_string();
        for fields in chunk_rows.query_map([source.id], |row| text_columns(row, 13))? {
            let fields = fields?;
            let leading = [Some(id.as_str()), Some(project), Some(source.path.as_str())];
            copy_row(&mut copy, leading.into_iter().chain(fields.iter().map(Option::as_deref)));
            report.chunks_written += 1;
        }
    }
    copy_in(
        tx,
        "COPY knowledge_chunks (source_id, project, path, id, ordinal, revision, hash, heading_path, title, text,
                                identifiers, start_offset, end_offset, start_line, end_line, entity) FROM STDIN",
        &copy,
    )?;

    Ok(())
}

/// Writes the vectors of `model` of the written chunks (through one COPY); the approximate index of their size is
/// made before ([`prepare_vectors`]).
fn copy_vectors(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    model: &str,
    changed: &[&LocalSource],
    source_ids: &[i64],
    report: &mut PublishReport,
) -> Result<(), StepError> {
    // Vectors of the written chunks, by chunk id.
    let seqs: HashMap<String, i64> = tx
        .query("SELECT id, seq FROM knowledge_chunks WHERE source_id = ANY($1)", &[&source_ids])?
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let mut vector_rows = local.prepare_cached(
        "SELECT e.chunk_id, v.dimensions, v.vector FROM chunks c
         JOIN vector_index_entries e ON e.chunk_id = c.id AND e.model = ?2 AND e.status = 'ready'
         JOIN chunk_embeddings v ON v.model = e.model AND v.text_hash = e.text_hash
         WHERE c.source_id = ?1",
    )?;
    let mut copy = String::new();
    for source in changed {
        let rows = vector_rows.query_map(rusqlite::params![source.id, model], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?, row.get::<_, Vec<u8>>(2)?))
        })?;
        for row in rows {
            let (chunk, dimensions, blob) = row?;
            let Some(seq) = seqs.get(&chunk) else { continue };
            let vector = vector_literal(&blob);
            let fields = [seq.to_string(), project.to_string(), model.to_string(), dimensions.to_string(), vector];
            copy_row(&mut copy, fields.iter().map(|field| Some(field.as_str())));
            report.vectors_written += 1;
        }
    }
    copy_in(tx, "COPY knowledge_vectors (chunk_seq, project, model, dimensions, embedding) FROM STDIN", &copy)?;
    Ok(())
}

/// Makes the approximate index of the generation's vector size where the store has none, in a transaction of its
/// own before the publish's (migration 5's function): made inside it, asking for the vectors' `SHARE` lock while
/// holding their write lock deadlocked two publishes at once, and held every other publish's writes till the end.
fn prepare_vectors(local: &Connection, store: &mut PgStore, model: &str) -> Result<(), StepError> {
    if model.is_empty() {
        return Ok(());
    }
    // A generation is one model at one size.
    let size: Option<i64> = local
        .query_row("SELECT dimensions FROM chunk_embeddings WHERE model = ?1 LIMIT 1", [model], |row| row.get(0))
        .optional()?;
    if let Some(size) = size {
        store.client.execute("SELECT knowledge_vectors_index($1)", &[&i32::try_from(size).unwrap_or(i32::MAX)])?;
    }
    Ok(())
}

/// Sets each source's `vectors` state: its ready vectors in the generation, as `model:count`.
///
/// Counting every source's vectors costs a lookup per vector (half a second at 69,000), so only the sources
/// whose vectors may have changed since the last publish are counted: those holding an entry written by a
/// run the store does not have yet (every run that wrote an entry before a publish was published by it),
/// and those the store does not hold as they are (another revision, derived run, labels or generation).
/// The others keep the count the store has. An entry
/// leaves only with its chunk (the source was read again, and its new chunks' entries are new) or with the
/// generation (the model in the state changes).
fn vector_states(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    model: &str,
    published: &HashMap<String, (i64, String)>,
    sources: &mut [LocalSource],
) -> Result<(), StepError> {
    let generation = format!("{model}:");
    // The stored count, for a source the store holds in this generation with the same revision, derived run
    // and labels (a source sent again has its count taken afresh).
    let stored = |source: &LocalSource| -> Option<&str> {
        let (_, state) = published.get(&source.path)?;
        let stored = StoredState::read(state)?;
        let same = stored.same_revision_and_labels(source) && stored.indexed_run == source.indexed_run;
        Some(stored.vectors).filter(|vectors| same && vectors.starts_with(&generation))
    };
    let mut counted: HashSet<i64> = sources.iter().filter(|source| stored(source).is_none()).map(|s| s.id).collect();
    if !model.is_empty() && counted.len() < sources.len() {
        let runs: Vec<String> = tx
            .query("SELECT id FROM knowledge_runs WHERE project = $1", &[&project])?
            .into_iter()
            .map(|row| row.get(0))
            .collect();
        let runs = serde_json::to_string(&runs).expect("strings serialize");
        let mut statement = local.prepare(
            "SELECT DISTINCT c.source_id FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id
             WHERE e.model = ?1 AND e.updated_run NOT IN (SELECT value FROM json_each(?2))",
        )?;
        for id in statement.query_map(rusqlite::params![model, runs], |row| row.get(0))? {
            counted.insert(id?);
        }
    }
    let mut counts: HashMap<i64, i64> = HashMap::new();
    if !model.is_empty() && !counted.is_empty() {
        // Many sources are counted in one pass over the entries; a few, by a lookup each.
        if counted.len() > sources.len() / 4 {
            let mut statement = local.prepare(
                "SELECT c.source_id, count(*) FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id
                 WHERE e.model = ?1 AND e.status = 'ready' GROUP BY c.source_id",
            )?;
            for row in statement.query_map([model], |row| Ok((row.get(0)?, row.get(1)?)))? {
                let (source, n) = row?;
                counts.insert(source, n);
            }
        } else {
            let mut count = local.prepare(
                "SELECT count(*) FROM chunks c JOIN vector_index_entries e ON e.chunk_id = c.id
                 WHERE c.source_id = ?1 AND e.model = ?2 AND e.status = 'ready'",
            )?;
            for &source in &counted {
                counts.insert(source, count.query_row(rusqlite::params![source, model], |row| row.get(0))?);
            }
        }
    }
    for source in sources.iter_mut() {
        source.vectors = match stored(source).filter(|_| !counted.contains(&source.id)) {
            Some(vectors) => vectors.to_string(),
            None => format!("{generation}{}", counts.get(&source.id).copied().unwrap_or(0)),
        };
    }
    Ok(())
}

/// Adds (`+`) or takes away (`-`) the lexemes of the chunks of `sources` from the project's term counts.
fn count_terms(
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    sources: &[i64],
    sign: &str,
) -> Result<(), postgres::Error> {
    tx.execute(
        &format!(
            "INSERT INTO knowledge_terms (project, lexeme, chunks)
             SELECT $1, lexeme, {sign}count(*) FROM knowledge_chunks c, unnest(tsvector_to_array(c.document)) AS lexeme
             WHERE c.source_id = ANY($2) GROUP BY lexeme
             ON CONFLICT (project, lexeme) DO UPDATE SET chunks = knowledge_terms.chunks + EXCLUDED.chunks"
        ),
        &[&project, &sources],
    )?;
    Ok(())
}

fn publish_pages(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    report: &mut PublishReport,
) -> Result<(), StepError> {
    let pages: Vec<(String, String, String, String)> = local
        .prepare("SELECT slug, title, aliases, hash FROM wiki_pages")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let published: HashMap<String, String> = tx
        .query("SELECT slug, hash FROM knowledge_pages WHERE project = $1", &[&project])?
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let local_slugs: HashSet<&str> = pages.iter().map(|(slug, ..)| slug.as_str()).collect();
    let mut gone: Vec<&str> =
        published.keys().filter(|slug| !local_slugs.contains(slug.as_str())).map(String::as_str).collect();
    report.pages_removed = gone.len() as u64;
    let changed: Vec<&(String, String, String, String)> =
        pages.iter().filter(|(slug, _, _, hash)| published.get(slug) != Some(hash)).collect();
    gone.extend(changed.iter().filter(|(slug, ..)| published.contains_key(slug)).map(|(slug, ..)| slug.as_str()));
    if !gone.is_empty() {
        tx.execute("DELETE FROM knowledge_pages WHERE project = $1 AND slug = ANY($2)", &[&project, &gone])?;
    }
    if changed.is_empty() {
        return Ok(());
    }
    report.pages_written = changed.len() as u64;
    let mut copy = String::new();
    for (slug, title, aliases, hash) in &changed {
        copy_row(&mut copy, [project, slug, title, aliases, hash].into_iter().map(Some));
    }
    copy_in(tx, "COPY knowledge_pages (project, slug, title, aliases, hash) FROM STDIN", &copy)?;
    let mut citations = local.prepare_cached(
        "SELECT note, source_ref, path, revision, start_offset, end_offset, signal FROM citations WHERE page = ?1",
    )?;
    let mut listed = local.prepare_cached("SELECT path FROM page_sources WHERE page = ?1")?;
    let mut linking = local.prepare_cached("SELECT from_ref, line, kind FROM wiki_backlinks WHERE page = ?1")?;
    let (mut cited, mut sources, mut backlinks) = (String::new(), String::new(), String::new());
    // Each page's rows, after its project and slug.
    for (slug, ..) in &changed {
        for (statement, columns, out) in
            [(&mut citations, 7, &mut cited), (&mut listed, 1, &mut sources), (&mut linking, 3, &mut backlinks)]
        {
            for fields in statement.query_map([slug], |row| text_columns(row, columns))? {
                let fields = fields?;
                let leading = [Some(project), Some(slug.as_str())];
                copy_row(out, leading.into_iter().chain(fields.iter().map(Option::as_deref)));
            }
        }
    }
    copy_in(
        tx,
        "COPY knowledge_citations (project, page, note, source_ref, path, revision, start_offset, end_offset, signal)
         FROM STDIN",
        &cited,
    )?;
    copy_in(tx, "COPY knowledge_page_sources (project, page, path) FROM STDIN", &sources)?;
    copy_in(tx, "COPY knowledge_backlinks (project, page, from_ref, line, kind) FROM STDIN", &backlinks)?;
    Ok(())
}

/// Copies the runs the store lacks, with their events. The run the last publish held is sent again: its
/// summary was final only after that publish (the build records it last, with the publish's counters).
fn publish_runs(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    previous_run: Option<&str>,
    report: &mut PublishReport,
) -> Result<(), StepError> {
    if let Some(run) = previous_run {
        let summary: Option<String> =
            local.query_row("SELECT summary FROM runs WHERE id = ?1", [run], |row| row.get(0)).optional()?;
        if let Some(summary) = summary {
            tx.execute(
                "UPDATE knowledge_runs SET summary = $3::text::jsonb WHERE project = $1 AND id = $2",
                &[&project, &run, &json_or_empty(&summary)],
            )?;
        }
    }
    let published: HashSet<String> = tx
        .query("SELECT id FROM knowledge_runs WHERE project = $1", &[&project])?
        .into_iter()
        .map(|row| row.get(0))
        .collect();
    // (id, kind, started_at, finished_at, status, summary, tool_version, vcs) of each run Postgres lacks.
    let runs: Vec<[String; 8]> = local
        .prepare("SELECT id, kind, started_at, finished_at, status, summary, tool_version, vcs FROM runs ORDER BY id")?
        .query_map([], |row| {
            Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?])
        })?
        .filter(|row| row.as_ref().map_or(true, |[id, ..]| !published.contains(id)))
        .collect::<rusqlite::Result<_>>()?;
    if runs.is_empty() {
        return Ok(());
    }
    let mut copy = String::new();
    let mut events = String::new();
    let mut event_rows = local.prepare_cached(
        "SELECT seq, kind, path, old_revision, new_revision, labels, detail FROM run_events WHERE run_id = ?1",
    )?;
    for [id, kind, started, finished, status, summary, tool_version, vcs] in &runs {
        let (summary, vcs) = (json_or_empty(summary), json_or_empty(vcs));
        let fields = [project, id, kind, started, finished, status, summary, tool_version, vcs];
        copy_row(&mut copy, fields.into_iter().map(Some));
        for fields in event_rows.query_map([id], |row| text_columns(row, 7))? {
            let fields = fields?;
            let leading = [Some(project), Some(id.as_str())];
            copy_row(&mut events, leading.into_iter().chain(fields.iter().map(Option::as_deref)));
        }
        report.runs_written += 1;
    }
    copy_in(
        tx,
        "COPY knowledge_runs (project, id, kind, started_at, finished_at, status, summary, tool_version, vcs)
         FROM STDIN",
        &copy,
    )?;
    copy_in(
        tx,
        "COPY knowledge_run_events (project, run_id, seq, kind, path, old_revision, new_revision, labels, detail)
         FROM STDIN",
        &events,
    )?;
    Ok(())
}

/// Replaces the project's lint findings with those the local index stores.
fn publish_lint(
    local: &Connection,
    tx: &mut postgres::Transaction<'_>,
    project: &str,
    report: &mut PublishReport,
) -> Result<(), StepError> {
    tx.execute("DELETE FROM knowledge_lint_findings WHERE project = $1", &[&project])?;
    let mut copy = String::new();
    let mut statement = local.prepare("SELECT run_id, path, line, col, severity, code, message FROM lint_results")?;
    for fields in statement.query_map([], |row| text_columns(row, 7))? {
        let fields = fields?;
        copy_row(&mut copy, std::iter::once(Some(project)).chain(fields.iter().map(Option::as_deref)));
        report.lint_findings_written += 1;
    }
    copy_in(
        tx,
        "COPY knowledge_lint_findings (project, run_id, path, line, col, severity, code, message) FROM STDIN",
        &copy,
    )?;
    Ok(())
}

/// A local row's first `count` columns as COPY text: integers written out, NULL as `None`.
fn text_columns(row: &rusqlite::Row<'_>, count: usize) -> rusqlite::Result<Vec<Option<String>>> {
    (0..count)
        .map(|column| {
            Ok(match row.get_ref(column)? {
                rusqlite::types::ValueRef::Null => None,
                rusqlite::types::ValueRef::Integer(n) => Some(n.to_string()),
                value => Some(value.as_str()?.to_string()),
            })
        })
        .collect()
}

/// A stored JSON summary as Postgres takes it: `{}` for text that is not JSON.
fn json_or_empty(summary: &str) -> &str {
    if serde_json::from_str::<serde_json::Value>(summary).is_ok() { summary } else { "{}" }
}

/// Appends one row of COPY's text format: tab-separated, `\N` for NULL, backslash escapes.
fn copy_row<'a>(out: &mut String, fields: impl Iterator<Item = Option<&'a str>>) {
    for (at, field) in fields.enumerate() {
        if at > 0 {
            out.push('\t');
        }
        match field {
            None => out.push_str("\\N"),
            Some(text) => {
                for c in text.chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\t' => out.push_str("\\t"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        // Postgres text holds no NUL: a source's text never has one (binary files are skipped).
                        '\0' => {}
                        c => out.push(c),
                    }
                }
            }
        }
    }
    out.push('\n');
}

fn copy_in(tx: &mut postgres::Transaction<'_>, statement: &str, rows: &str) -> Result<(), postgres::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut writer = tx.copy_in(statement)?;
    // A write error here is the connection's: `finish` reports it as the Postgres error it is.
    let _ = writer.write_all(rows.as_bytes());
    writer.finish()?;
    Ok(())
}

/// A stored vector (little-endian f32) as pgvector's text form, `[x,y,…]`.
fn vector_literal(blob: &[u8]) -> String {
    let mut text = String::with_capacity(blob.len() * 3);
    text.push('[');
    for (at, bytes) in blob.chunks_exact(4).enumerate() {
        if at > 0 {
            text.push(',');
        }
        let value = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let _ = write!(text, "{value}");
    }
    text.push(']');
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_url_is_printed_without_its_password() {
        assert_eq!(super::redacted("postgres://kb:s3cret@db.internal:5432/knowledge"), "db.internal:5432/knowledge");
        assert_eq!(super::redacted("postgresql://postgres:@/postgres?host=/tmp/pg"), "/tmp/pg/postgres");
    }

    #[test]
    fn copy_rows_escape_what_the_text_format_reserves() {
        let mut out = String::new();
        super::copy_row(&mut out, [Some("a\tb"), None, Some("line\nnext\\")].into_iter());
        assert_eq!(out, "a\\tb\t\\N\tline\\nnext\\\\\n");
    }

    #[test]
    fn a_stored_vector_becomes_pgvector_text() {
        let blob: Vec<u8> = [1.0_f32, -0.5].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(super::vector_literal(&blob), "[1,-0.5]");
    }
}
