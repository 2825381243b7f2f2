//! The embedding tables: `chunk_embeddings` (one vector per model and text), `vector_index_entries` (a
//! chunk's entry in a generation) and `reindex_queue`, read and written for the embedding stage, the vector
//! index and `knowledge reindex`.

use std::collections::HashMap;

use knowledge_queries::Origin;
use knowledge_queries::embeddings::{IndexedChunk, ReadyEntry};
use rusqlite::{Connection, OptionalExtension, params};

use super::{origin_condition, set_meta};

/// Queues an embedding job for `model` (idempotent: the same job queued twice is one job). `full` drops
/// the generation's vectors first, so every chunk is embedded again.
pub(crate) fn enqueue_embeddings(conn: &Connection, model: &str, full: bool, at: &str) -> rusqlite::Result<String> {
    let job = if full { format!("embeddings:{model}:full") } else { format!("embeddings:{model}") };
    conn.execute(
        "INSERT INTO reindex_queue (job, kind, model, full, status, queued_at) VALUES (?1, 'embeddings', ?2, ?3, 'queued', ?4)
         ON CONFLICT (job) DO UPDATE SET status = 'queued', queued_at = excluded.queued_at, done_run = NULL",
        params![job, model, i64::from(full), at],
    )?;
    Ok(job)
}

/// What a generation still owes: entries a provider failed on (`pending`), and a queued reindex job.
pub fn generation_backlog(conn: &Connection, model: &str) -> rusqlite::Result<(bool, bool)> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM vector_index_entries WHERE model = ?1 AND status = 'pending'),
                EXISTS (SELECT 1 FROM reindex_queue WHERE model = ?1 AND status = 'queued')",
        [model],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
}

/// Whether a full reindex of `model` is queued.
pub fn full_reindex_queued(conn: &Connection, model: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM reindex_queue WHERE model = ?1 AND status = 'queued' AND full = 1)",
        [model],
        |row| row.get(0),
    )
}

/// Drops every generation's vectors and entries and the generation's meta keys, as if there had never been
/// a provider: a clean build without one has none of them.
pub fn drop_every_generation(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM vector_index_entries; DELETE FROM chunk_embeddings;")?;
    conn.execute("DELETE FROM meta WHERE key IN ('embeddings_model', 'embeddings_settings', 'embedded_run')", [])?;
    Ok(())
}

/// The SQL condition selecting the sources an embedding stage looks at: those the run `?1` derived, or
/// every one when `?1` is null; notes are never embedded (`ask` and search reach them by keyword only).
fn embedding_scope(derived_by: Option<&str>) -> String {
    format!(
        "{} AND NOT {}",
        if derived_by.is_some() { "s.indexed_run = ?1" } else { "?1 IS NULL" },
        origin_condition(Origin::Note, "s.path")
    )
}

/// The chunks of the sources in the embedding scope (see [`embedding_scope`]), grouped by source ref in
/// source order, each source's chunks in order.
pub fn scoped_chunks(
    conn: &Connection,
    derived_by: Option<&str>,
) -> rusqlite::Result<Vec<(String, Vec<IndexedChunk>)>> {
    // `CROSS JOIN` keeps SQLite's join order: from the sources in scope (by `indexed_run`) to their chunks
    // and entries, never from every entry of the model (a one-file edit on rust-rfcs: 38 → 73 ms).
    let mut chunks: Vec<(String, Vec<IndexedChunk>)> = Vec::new();
    let mut statement = conn.prepare(&format!(
        "SELECT s.uri, c.id, c.title, c.text, c.revision, c.start_offset, c.end_offset
         FROM sources s CROSS JOIN chunks c ON c.source_id = s.id
         WHERE {} ORDER BY s.id, c.ordinal",
        embedding_scope(derived_by)
    ))?;
    let mut rows = statement.query([derived_by])?;
    while let Some(row) = rows.next()? {
        let uri = row.get_ref(0)?.as_str()?;
        if chunks.last().is_none_or(|(last, _)| last != uri) {
            chunks.push((uri.to_string(), Vec::new()));
        }
        chunks.last_mut().expect("pushed above").1.push(IndexedChunk {
            id: row.get(1)?,
            title: row.get(2)?,
            text: row.get(3)?,
            revision: row.get(4)?,
            start: row.get(5)?,
            end: row.get(6)?,
        });
    }
    Ok(chunks)
}

/// The ready entries of `model` for the chunks of the sources in the embedding scope, by source ref.
pub fn scoped_ready_entries(
    conn: &Connection,
    model: &str,
    derived_by: Option<&str>,
) -> rusqlite::Result<HashMap<String, Vec<ReadyEntry>>> {
    let mut ready: HashMap<String, Vec<ReadyEntry>> = HashMap::new();
    let mut statement = conn.prepare(&format!(
        "SELECT s.uri, e.chunk_id, e.revision, e.start_offset, e.end_offset, e.text_hash
         FROM sources s CROSS JOIN chunks c ON c.source_id = s.id
              CROSS JOIN vector_index_entries e ON e.chunk_id = c.id AND e.model = ?2 AND e.status = 'ready'
         WHERE {}",
        embedding_scope(derived_by)
    ))?;
    let mut rows = statement.query(params![derived_by, model])?;
    while let Some(row) = rows.next()? {
        ready.entry(row.get(0)?).or_default().push(ReadyEntry {
            chunk_id: row.get(1)?,
            revision: row.get(2)?,
            start: row.get(3)?,
            end: row.get(4)?,
            text_hash: row.get(5)?,
        });
    }
    Ok(ready)
}

pub(super) const VECTOR_DIMENSIONS: &str =
    "SELECT dimensions FROM chunk_embeddings WHERE model = ?1 AND text_hash = ?2";

/// Every vector of a generation, in the table's own order rather than the key index's: the vectors are read
/// from consecutive pages.
pub(super) const EVERY_VECTOR: &str =
    "SELECT text_hash, dimensions, vector FROM chunk_embeddings NOT INDEXED WHERE model = ?1";

/// The dimensions of the vector `model` holds for the text `text_hash`, when it holds one.
pub fn stored_vector_dimensions(conn: &Connection, model: &str, text_hash: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(VECTOR_DIMENSIONS)?.query_row(params![model, text_hash], |row| row.get(0)).optional()
}

/// Drops a generation's vectors and entries (a full reindex).
pub fn drop_generation(conn: &Connection, model: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM vector_index_entries WHERE model = ?1", [model])?;
    conn.execute("DELETE FROM chunk_embeddings WHERE model = ?1", [model])?;
    Ok(())
}

/// Marks the queued jobs of `model` done by the run `run_id`.
pub fn finish_queued_jobs(conn: &Connection, model: &str, run_id: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE reindex_queue SET status = 'done', done_run = ?2 WHERE model = ?1 AND status = 'queued'",
        params![model, run_id],
    )?;
    Ok(())
}

/// Deletes the entries (of any model) of the chunks this build deleted (`temp.gone_chunks`) and did not
/// write again, returning each one's (model, text hash).
pub fn delete_entries_of_gone_chunks(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare(
        "DELETE FROM vector_index_entries
         WHERE chunk_id IN (SELECT id FROM temp.gone_chunks) AND chunk_id NOT IN (SELECT id FROM chunks)
         RETURNING model, text_hash",
    )?
    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

/// Deletes every entry whose chunk is gone, returning how many of them were `model`'s.
pub fn delete_entries_of_missing_chunks(conn: &Connection, model: &str) -> rusqlite::Result<u64> {
    let of_model = conn.execute(
        "DELETE FROM vector_index_entries WHERE model = ?1 AND chunk_id NOT IN (SELECT id FROM chunks)",
        [model],
    )?;
    conn.execute("DELETE FROM vector_index_entries WHERE chunk_id NOT IN (SELECT id FROM chunks)", [])?;
    Ok(of_model as u64)
}

/// Stores a vector of `model` for the text `text_hash`, computed by the run `run_id`.
pub fn insert_vector(
    conn: &Connection,
    model: &str,
    text_hash: &str,
    vector: &[f32],
    run_id: &str,
) -> rusqlite::Result<()> {
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    conn.prepare_cached(
        "INSERT OR REPLACE INTO chunk_embeddings (model, text_hash, dimensions, vector, created_run)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![model, text_hash, vector.len() as i64, bytes, run_id])?;
    Ok(())
}

/// A chunk's entry in a generation, as the embedding stage writes it.
pub struct VectorEntry<'a> {
    pub chunk_id: &'a str,
    pub model: &'a str,
    pub provider: &'a str,
    pub dimensions: usize,
    pub source_ref: &'a str,
    pub revision: &'a str,
    pub text_hash: &'a str,
    pub start: u32,
    pub end: u32,
    /// `ready`, or `pending` when the provider failed on its text.
    pub status: &'a str,
    pub run_id: &'a str,
}

/// The text hash of the entry `chunk_id` has in `model`, when it has one.
pub fn entry_text_hash(conn: &Connection, chunk_id: &str, model: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT text_hash FROM vector_index_entries WHERE chunk_id = ?1 AND model = ?2")?
        .query_row(params![chunk_id, model], |row| row.get(0))
        .optional()
}

/// Writes (or replaces) a chunk's entry in a generation.
pub fn upsert_entry(conn: &Connection, entry: &VectorEntry<'_>) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO vector_index_entries (chunk_id, model, provider, dimensions, source_ref, revision,
                                                       text_hash, start_offset, end_offset, status, updated_run,
                                                       updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    )?
    .execute(params![
        entry.chunk_id,
        entry.model,
        entry.provider,
        entry.dimensions as i64,
        entry.source_ref,
        entry.revision,
        entry.text_hash,
        entry.start,
        entry.end,
        entry.status,
        entry.run_id,
    ])?;
    Ok(())
}

/// Deletes the vector of (`model`, `text_hash`) when no entry uses it any more.
pub fn delete_vector_if_unused(conn: &Connection, model: &str, text_hash: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM chunk_embeddings WHERE model = ?1 AND text_hash = ?2
           AND NOT EXISTS (SELECT 1 FROM vector_index_entries e WHERE e.model = ?1 AND e.text_hash = ?2)",
    )?
    .execute(params![model, text_hash])?;
    Ok(())
}

/// Deletes every vector no entry uses.
pub fn delete_unused_vectors(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM chunk_embeddings WHERE NOT EXISTS (SELECT 1 FROM vector_index_entries e
            WHERE e.model = chunk_embeddings.model AND e.text_hash = chunk_embeddings.text_hash)",
        [],
    )?;
    Ok(())
}

/// Records the generation the index searches with (`embeddings_model`, `embeddings_settings`) and the run
/// whose chunks it covers (`embedded_run`).
pub fn record_generation(conn: &Connection, model: &str, settings: &str, run_id: &str) -> rusqlite::Result<()> {
    set_meta(conn, "embeddings_model", model)?;
    set_meta(conn, "embeddings_settings", settings)?;
    set_meta(conn, "embedded_run", run_id)
}

/// The entries of a generation grouped as `knowledge reindex status` counts them.
#[derive(Debug, Clone)]
pub struct EntryCount {
    pub model: String,
    pub provider: String,
    pub dimensions: i64,
    pub status: String,
    pub count: i64,
    /// Entries whose chunk's revision is not its source's current one.
    pub stale: i64,
}

/// The index's chunks that may have an entry (notes are never embedded).
pub fn embeddable_chunks(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row(
        &format!(
            "SELECT count(*) FROM chunks c JOIN sources s ON s.id = c.source_id WHERE NOT {}",
            origin_condition(Origin::Note, "s.path")
        ),
        [],
        |row| row.get::<_, i64>(0),
    )
    .map(i64::cast_unsigned)
}

/// Every generation's entries, counted by (model, provider, dimensions, status).
pub fn entry_counts(conn: &Connection) -> rusqlite::Result<Vec<EntryCount>> {
    conn.prepare(
        "SELECT e.model, e.provider, e.dimensions, e.status, count(*),
                sum(CASE WHEN c.revision != s.revision THEN 1 ELSE 0 END)
         FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id JOIN sources s ON s.id = c.source_id
         GROUP BY e.model, e.provider, e.dimensions, e.status",
    )?
    .query_map([], |row| {
        Ok(EntryCount {
            model: row.get(0)?,
            provider: row.get(1)?,
            dimensions: row.get(2)?,
            status: row.get(3)?,
            count: row.get(4)?,
            stale: row.get(5)?,
        })
    })?
    .collect()
}

/// The jobs queued for `model` and not yet done by a build.
pub fn queued_jobs(conn: &Connection, model: &str) -> rusqlite::Result<u64> {
    conn.query_row("SELECT count(*) FROM reindex_queue WHERE model = ?1 AND status = 'queued'", [model], |row| {
        row.get::<_, i64>(0)
    })
    .map(i64::cast_unsigned)
}

/// The vectors `model` holds.
pub fn vector_count(conn: &Connection, model: &str) -> rusqlite::Result<u64> {
    conn.query_row("SELECT count(*) FROM chunk_embeddings WHERE model = ?1", [model], |row| row.get::<_, i64>(0))
        .map(i64::cast_unsigned)
}

/// The paths of the sources whose vectors of `model` `run` may have changed: those it derived (their rows
/// were written by that build), those whose entries it wrote (a retry of pending chunks, a source it did not
/// derive), and those the build on this connection deleted (`temp.gone_sources`; none when it was not this
/// connection's build).
pub fn paths_changed_by(conn: &Connection, model: &str, run: &str) -> rusqlite::Result<Vec<String>> {
    let gone = conn.query_row(
        "SELECT count(*) FROM temp.sqlite_master WHERE type = 'table' AND name = 'gone_sources'",
        [],
        |row| row.get::<_, i64>(0),
    )? > 0;
    let mut paths: Vec<String> = conn
        .prepare_cached(
            "SELECT path FROM sources WHERE indexed_run = ?2
             UNION SELECT s.path FROM vector_index_entries e CROSS JOIN chunks c ON c.id = e.chunk_id
                   CROSS JOIN sources s ON s.id = c.source_id
             WHERE e.model = ?1 AND e.updated_run = ?2",
        )?
        .query_map([model, run], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if gone {
        let mut statement = conn.prepare_cached("SELECT path FROM temp.gone_sources")?;
        paths.extend(statement.query_map([], |row| row.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?);
    }
    Ok(paths)
}

/// Calls `each` as [`each_ready_vector`] does, for the ready vectors of the sources at `paths` only.
pub fn each_ready_vector_of(
    conn: &Connection,
    model: &str,
    paths: &[String],
    mut each: impl FnMut(i64, String, Option<String>, i64, &[u8]),
) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(
        "SELECT c.seq, s.path, v.vector, v.dimensions, c.entity
         FROM sources s CROSS JOIN chunks c ON c.source_id = s.id
              CROSS JOIN vector_index_entries e ON e.chunk_id = c.id AND e.model = ?1 AND e.status = 'ready'
              JOIN chunk_embeddings v ON v.model = e.model AND v.text_hash = e.text_hash
         WHERE s.path = ?2",
    )?;
    for path in paths {
        let mut rows = statement.query(params![model, path])?;
        while let Some(row) = rows.next()? {
            each(row.get(0)?, row.get(1)?, row.get(4)?, row.get(3)?, row.get_ref(2)?.as_blob()?);
        }
    }
    Ok(())
}

/// Calls `each` with every ready vector of `model`: its chunk's row (`chunks.seq`), its source's path, its
/// entity, its stored dimensions and its bytes (little-endian `f32`s).
///
/// Four scans of whole tables joined in memory, not one join: joined row by row, each vector cost five
/// B-tree seeks (its entry, the entry's chunk by id, the chunk's row, its source), and at a million chunks
/// those seeks took about half of the 20 seconds that reading every vector took (docs/embeddings.md). The
/// maps hold a number per text and per chunk id, not the vectors, which are read last, in their table's
/// order.
pub fn each_ready_vector(
    conn: &Connection,
    model: &str,
    mut each: impl FnMut(i64, String, Option<String>, i64, &[u8]),
) -> rusqlite::Result<()> {
    use rustc_hash::FxHashMap;
    // The ready entries: each text's number, and each chunk's text.
    let mut texts: FxHashMap<String, usize> = FxHashMap::default();
    let mut text_of_chunk: FxHashMap<String, usize> = FxHashMap::default();
    let mut statement =
        conn.prepare("SELECT chunk_id, text_hash FROM vector_index_entries WHERE model = ?1 AND status = 'ready'")?;
    let mut rows = statement.query([model])?;
    while let Some(row) = rows.next()? {
        let next = texts.len();
        let text = *texts.entry(row.get(1)?).or_insert(next);
        text_of_chunk.insert(row.get(0)?, text);
    }
    // Each text's chunks: (seq, source, entity).
    let mut chunks_of_text: Vec<Vec<(i64, i64, Option<String>)>> = vec![Vec::new(); texts.len()];
    let mut statement = conn.prepare("SELECT id, seq, source_id, entity FROM chunks")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        if let Some(&text) = text_of_chunk.get(row.get_ref(0)?.as_str()?) {
            chunks_of_text[text].push((row.get(1)?, row.get(2)?, row.get(3)?));
        }
    }
    drop(text_of_chunk);
    let mut statement = conn.prepare("SELECT id, path FROM sources")?;
    let paths: FxHashMap<i64, String> =
        statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    let mut statement = conn.prepare(EVERY_VECTOR)?;
    let mut rows = statement.query([model])?;
    while let Some(row) = rows.next()? {
        let Some(&text) = texts.get(row.get_ref(0)?.as_str()?) else { continue };
        let (dimensions, vector) = (row.get(1)?, row.get_ref(2)?.as_blob()?);
        for (seq, source, entity) in &chunks_of_text[text] {
            if let Some(path) = paths.get(source) {
                each(*seq, path.clone(), entity.clone(), dimensions, vector);
            }
        }
    }
    Ok(())
}
