//! Writing a source's rows inside a build's transaction: the source row, its chunks (kept in place when
//! unchanged, so the keyword index changes only where the text did), its signals, and the run record.

use rusqlite::{Connection, OptionalExtension, params};

use super::*;

/// One chunk row to insert.
#[derive(Debug, Clone)]
pub struct ChunkRow {
    pub id: String,
    pub ordinal: u32,
    pub hash: String,
    pub heading_path: String,
    pub title: String,
    pub text: String,
    pub identifiers: String,
    pub start_offset: u32,
    pub end_offset: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// The text's MinHash signature for near-duplicate lint, as bytes; `None` for a
    /// text too short to compare.
    pub minhash: Option<Vec<u8>>,
    /// The slug of the code entity this row is the search excerpt of; `None` for a chunk of the text.
    pub entity: Option<String>,
}

/// A source whose derived rows are replaced.
#[derive(Debug, Clone)]
pub struct SourceRow {
    pub path: String,
    pub uri: String,
    pub kind: &'static str,
    pub mime: &'static str,
    pub size: u64,
    pub mtime_ns: i64,
    pub revision: String,
    pub title: String,
    pub outline: String,
    pub lint_facts: String,
    /// Permission labels, sorted and comma-separated; empty when none.
    pub labels: String,
    pub chunks: Vec<ChunkRow>,
    /// Concept signals for the wiki compiler; none for generated pages.
    pub signals: Vec<knowledge_queries::wiki::Signal>,
    /// The code entities the source defines (`[code]`).
    pub entities: std::sync::Arc<[knowledge_queries::code::Entity]>,
    /// The keys of its lines (`knowledge_queries::passages::line_keys`), recorded with the run that first
    /// wrote each.
    pub line_keys: Vec<i64>,
}

/// Deletes a source row with its signals and, unless they are already gone, its chunks.
pub(crate) fn delete_source(tx: &Connection, source_id: i64, with_chunks: bool) -> rusqlite::Result<()> {
    if with_chunks {
        delete_chunks(tx, source_id)?;
    }
    tx.prepare_cached("DELETE FROM concept_signals WHERE source_id = ?1")?.execute([source_id])?;
    tx.prepare_cached("DELETE FROM entities WHERE source_id = ?1")?.execute([source_id])?;
    tx.prepare_cached("INSERT OR IGNORE INTO temp.gone_sources (path) SELECT path FROM sources WHERE id = ?1")?
        .execute([source_id])?;
    tx.prepare_cached("DELETE FROM sources WHERE id = ?1")?.execute([source_id])?;
    Ok(())
}

/// Writes a source's rows: inserts them, or, given the id of the source's prior row, replaces that row's
/// in place. A chunk whose id, text hash, title and identifiers are unchanged keeps its
/// row and its entry in the keyword index, which costs most to write; only its position and revision
/// columns move. The keyword index changes only where the text did.
pub(crate) fn write_source(
    tx: &Connection,
    prior: Option<i64>,
    source: &SourceRow,
    run_id: &str,
) -> rusqlite::Result<i64> {
    let text_chunks = source.chunks.iter().filter(|chunk| chunk.entity.is_none()).count();
    let (size, chunk_count) = (sql_int(source.size), sql_int(text_chunks as u64));
    let columns: [&dyn rusqlite::ToSql; 13] = [
        &source.path,
        &source.uri,
        &source.kind,
        &source.mime,
        &size,
        &source.mtime_ns,
        &source.revision,
        &source.title,
        &source.outline,
        &source.lint_facts,
        &source.labels,
        &chunk_count,
        &run_id,
    ];
    let source_id = match prior {
        Some(source_id) => {
            let mut values = columns.to_vec();
            values.push(&source_id);
            tx.prepare_cached(
                "UPDATE sources SET path = ?1, uri = ?2, kind = ?3, mime = ?4, size = ?5, mtime_ns = ?6,
                                    revision = ?7, title = ?8, outline = ?9, lint_facts = ?10, labels = ?11,
                                    chunk_count = ?12, indexed_run = ?13
                 WHERE id = ?14",
            )?
            .execute(values.as_slice())?;
            tx.prepare_cached("DELETE FROM concept_signals WHERE source_id = ?1")?.execute([source_id])?;
            tx.prepare_cached("DELETE FROM entities WHERE source_id = ?1")?.execute([source_id])?;
            source_id
        }
        None => {
            tx.prepare_cached(
                "INSERT INTO sources (path, uri, kind, mime, size, mtime_ns, revision, title, outline, lint_facts,
                                      labels, chunk_count, indexed_run)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?
            .execute(columns.as_slice())?;
            tx.last_insert_rowid()
        }
    };
    tx.prepare_cached(
        "INSERT OR IGNORE INTO source_revisions (path, revision, size, first_run) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![source.path, source.revision, size, run_id])?;
    record_new_lines(tx, &source.path, &source.line_keys, run_id)?;
    write_chunks(tx, prior, source_id, source)?;
    insert_signals(tx, source_id, &source.signals)?;
    insert_entities(tx, source_id, &source.entities)?;
    Ok(source_id)
}

/// The rows of a path's line history.
pub(super) const LINES_HELD: &str = "SELECT first_run, line_keys FROM passage_origins WHERE path = ?1";

/// Records which of `keys` (sorted) `path` never held before, as one row of `run_id`'s.
fn record_new_lines(tx: &Connection, path: &str, keys: &[i64], run_id: &str) -> rusqlite::Result<()> {
    let mut known = std::collections::HashSet::new();
    // A path written twice in one run adds to the run's row rather than losing the second write's lines.
    let mut this_run: Vec<u8> = Vec::new();
    let mut held = tx.prepare_cached(LINES_HELD)?;
    let mut rows = held.query([path])?;
    while let Some(row) = rows.next()? {
        let blob = row.get_ref(1)?.as_blob()?;
        if row.get_ref(0)?.as_str()? == run_id {
            this_run = blob.to_vec();
        }
        known.extend(super::decode_line_keys(blob));
    }
    let before = this_run.len();
    this_run.extend(keys.iter().filter(|key| known.insert(**key)).flat_map(|key| key.to_le_bytes()));
    if this_run.len() > before {
        tx.prepare_cached("INSERT OR REPLACE INTO passage_origins (path, first_run, line_keys) VALUES (?1, ?2, ?3)")?
            .execute(params![path, run_id, this_run])?;
    }
    Ok(())
}

/// Writes a source's chunks over its prior row's (`prior`): a chunk whose id, text hash, title and
/// identifiers are unchanged keeps its row and keyword-index entry (only its position and revision move);
/// the others are deleted and inserted anew.
fn write_chunks(tx: &Connection, prior: Option<i64>, source_id: i64, source: &SourceRow) -> rusqlite::Result<()> {
    // The prior row's chunks, by id (none for a new source).
    let mut old: HashMap<String, (i64, String, String, String)> = match prior {
        Some(source_id) => tx
            .prepare_cached("SELECT id, seq, title, identifiers, hash FROM chunks WHERE source_id = ?1")?
            .query_map([source_id], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))))?
            .collect::<rusqlite::Result<_>>()?,
        None => HashMap::new(),
    };
    let mut moved = tx.prepare_cached(
        "UPDATE chunks SET ordinal = ?2, revision = ?3, heading_path = ?4, start_offset = ?5, end_offset = ?6,
                           start_line = ?7, end_line = ?8
         WHERE seq = ?1",
    )?;
    let mut fresh = Vec::new();
    for chunk in &source.chunks {
        match old.remove(&chunk.id) {
            // The text's hash is compared too: a file chunk's id already depends on its text, but an index
            // entry's id is its shard and page, and its row's text changes with the page's source count.
            Some((seq, title, identifiers, hash))
                if title == chunk.title && identifiers == chunk.identifiers && hash == chunk.hash =>
            {
                moved.execute(params![
                    seq,
                    chunk.ordinal,
                    source.revision,
                    chunk.heading_path,
                    chunk.start_offset,
                    chunk.end_offset,
                    chunk.start_line,
                    chunk.end_line,
                ])?;
            }
            Some((seq, ..)) => {
                delete_chunk(tx, seq)?;
                fresh.push(chunk);
            }
            None => fresh.push(chunk),
        }
    }
    for (seq, ..) in old.into_values() {
        delete_chunk(tx, seq)?;
    }
    for chunk in fresh {
        insert_chunk(tx, source_id, &source.revision, chunk)?;
    }
    Ok(())
}

/// Inserts one chunk into the chunk table, and holds its insert into the keyword index ([`KEYWORD_WRITES`]).
pub(super) fn insert_chunk(tx: &Connection, source_id: i64, revision: &str, chunk: &ChunkRow) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO chunks (id, source_id, ordinal, revision, hash, heading_path, title, text, identifiers,
                             start_offset, end_offset, start_line, end_line, minhash, entity)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?
    .execute(params![
        chunk.id,
        source_id,
        chunk.ordinal,
        revision,
        chunk.hash,
        chunk.heading_path,
        chunk.title,
        chunk.text,
        chunk.identifiers,
        chunk.start_offset,
        chunk.end_offset,
        chunk.start_line,
        chunk.end_line,
        chunk.minhash,
        chunk.entity,
    ])?;
    insert_keywords(tx, tx.last_insert_rowid(), &chunk.title, &chunk.text, &chunk.identifiers)
}

/// Inserts a chunk into the keyword index, or holds the insert until [`write_keyword_index`] once the
/// transaction holds any write ([`KEYWORD_WRITES`]): the mark of an incremental build, or a held delete,
/// which a later insert of its rowid must follow.
fn insert_keywords(tx: &Connection, seq: i64, title: &str, text: &str, identifiers: &str) -> rusqlite::Result<()> {
    let holding: bool =
        tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM temp.keyword_writes)")?.query_row([], |row| row.get(0))?;
    let sql = if holding {
        "INSERT INTO temp.keyword_writes (phase, seq, title, text, identifiers) VALUES (1, ?1, ?2, ?3, ?4)"
    } else {
        "INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (?1, ?2, ?3, ?4)"
    };
    tx.prepare_cached(sql)?.execute(params![seq, title, text, identifiers])?;
    Ok(())
}

/// The temporary table that holds a transaction's keyword-index writes until [`write_keyword_index`]: FTS5
/// writes the terms it holds pending to a new segment, and merges segments, whenever a write's rowid is
/// below the last one written, and a build that rewrites several pages deletes each page's old chunks (low
/// rowids) after the last page's new ones (high): one segment and merge a page, about a tenth of a watched
/// edit's CPU (issue 43). Held, they are written deletes first, then inserts, each in rowid order. A transaction holds
/// its writes once [`hold_keyword_writes`] marks it (phase −1); a fresh index's build, which only inserts, in
/// rowid order, writes them straight in, until a delete (always held) makes it hold every write after: the
/// held ones are all written after the straight ones, so each rowid's writes keep their order.
pub(super) const KEYWORD_WRITES: &str = "CREATE TEMP TABLE IF NOT EXISTS keyword_writes (
        phase INTEGER NOT NULL, -- -1: the mark that writes are held, 0: a delete, 1: an insert
        seq INTEGER NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        identifiers TEXT NOT NULL,
        PRIMARY KEY (phase, seq)
    ) WITHOUT ROWID;
    DELETE FROM temp.keyword_writes;";

/// Marks the transaction's keyword-index writes as held until [`write_keyword_index`].
pub(super) fn hold_keyword_writes(tx: &Connection) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO temp.keyword_writes (phase, seq, title, text, identifiers) VALUES (-1, 0, '', '', '')",
    )?
    .execute([])?;
    Ok(())
}

/// Writes the keyword-index writes held in `temp.keyword_writes` (deletes, then inserts, each in rowid
/// order), and empties it: before the transaction commits. (Nothing reads the keyword index within a build.)
pub(super) fn write_keyword_index(tx: &Connection) -> rusqlite::Result<()> {
    // Read row by row as they are written: a large build's held text is not copied into memory whole.
    let mut held = tx.prepare_cached(
        "SELECT phase, seq, title, text, identifiers FROM temp.keyword_writes WHERE phase >= 0 ORDER BY phase, seq",
    )?;
    let mut rows = held.query([])?;
    while let Some(row) = rows.next()? {
        let sql = if row.get::<_, i64>(0)? == 1 {
            "INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (?1, ?2, ?3, ?4)"
        } else {
            "INSERT INTO chunks_fts (chunks_fts, rowid, title, text, identifiers) VALUES ('delete', ?1, ?2, ?3, ?4)"
        };
        let value = |column: usize| row.get_ref(column).map(rusqlite::types::ToSqlOutput::Borrowed);
        tx.prepare_cached(sql)?.execute(params![value(1)?, value(2)?, value(3)?, value(4)?])?;
    }
    drop(rows);
    drop(held);
    tx.prepare_cached("DELETE FROM temp.keyword_writes")?.execute([])?;
    Ok(())
}

/// An entity's value for the delta log: its name, payload and text hash, without its position in the file
/// (an edit above it moves it without changing it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EntityValue {
    entity_type: String,
    path: String,
    /// The source's permission labels, so readers of the log filter it as they filter the source.
    labels: String,
    /// JSON: `{"name": …, "payload": …}`.
    value: String,
}

impl EntityValue {
    pub(super) fn of(entity: &knowledge_queries::code::Entity, source: &SourceRow) -> EntityValue {
        let value = serde_json::json!({ "name": entity.name, "hash": entity.hash, "payload": entity.payload });
        EntityValue {
            entity_type: entity.entity_type.as_str().to_string(),
            path: source.path.clone(),
            labels: source.labels.clone(),
            value: value.to_string(),
        }
    }
}

/// The entities of the given sources, by slug, as the index holds them.
pub(super) fn entity_values(tx: &Connection, source_ids: &[i64]) -> rusqlite::Result<HashMap<String, EntityValue>> {
    let mut values = HashMap::new();
    let mut read = tx.prepare_cached(
        "SELECT e.slug, e.type, s.path, e.name, e.payload, s.labels, e.hash FROM entities e
         JOIN sources s ON s.id = e.source_id WHERE e.source_id = ?1",
    )?;
    for &source_id in source_ids {
        let rows = read.query_map([source_id], |row| {
            let payload: String = row.get(4)?;
            let payload: serde_json::Value = serde_json::from_str(&payload).unwrap_or_default();
            let value =
                serde_json::json!({ "name": row.get::<_, String>(3)?, "hash": row.get::<_, String>(6)?, "payload": payload });
            let value = value.to_string();
            Ok((
                row.get::<_, String>(0)?,
                EntityValue { entity_type: row.get(1)?, path: row.get(2)?, labels: row.get(5)?, value },
            ))
        })?;
        for row in rows {
            let (slug, value) = row?;
            values.insert(slug, value);
        }
    }
    Ok(values)
}

/// One line of the run's entity delta log.
#[derive(Debug, Clone)]
pub(super) struct EntityChangeRow {
    slug: String,
    change: &'static str,
    /// The value after the change, or for a removal the value before it (its type, path and labels).
    current: EntityValue,
    old_value: Option<String>,
    new_value: Option<String>,
}

impl EntityChangeRow {
    pub(super) fn change(&self) -> &'static str {
        self.change
    }
}

/// The entities added, changed (their name or payload) and removed between `before` and `after`, in slug
/// order.
pub(super) fn entity_delta(
    before: &HashMap<String, EntityValue>,
    after: &HashMap<String, EntityValue>,
) -> Vec<EntityChangeRow> {
    let mut rows = Vec::new();
    for (slug, new) in after {
        let (change, old_value) = match before.get(slug) {
            Some(old) if old.value == new.value => continue,
            Some(old) => ("changed", Some(old.value.clone())),
            None => ("added", None),
        };
        rows.push(EntityChangeRow {
            slug: slug.clone(),
            change,
            current: new.clone(),
            old_value,
            new_value: Some(new.value.clone()),
        });
    }
    for (slug, old) in before.iter().filter(|(slug, _)| !after.contains_key(*slug)) {
        rows.push(EntityChangeRow {
            slug: slug.clone(),
            change: "removed",
            current: old.clone(),
            old_value: Some(old.value.clone()),
            new_value: None,
        });
    }
    rows.sort_by(|a, b| a.slug.cmp(&b.slug));
    rows
}

pub(super) fn record_entity_changes(tx: &Connection, run_id: &str, rows: &[EntityChangeRow]) -> rusqlite::Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO entity_changes (run_id, slug, type, change, path, labels, old_value, new_value)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for row in rows {
        let current = &row.current;
        insert.execute(params![
            run_id,
            row.slug,
            current.entity_type,
            row.change,
            current.path,
            current.labels,
            row.old_value,
            row.new_value
        ])?;
    }
    Ok(())
}

pub(super) fn insert_entities(
    tx: &Connection,
    source_id: i64,
    entities: &[knowledge_queries::code::Entity],
) -> rusqlite::Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO entities (source_id, slug, type, name, payload, start_line, end_line, start_offset, end_offset, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for entity in entities {
        insert.execute(params![
            source_id,
            entity.slug,
            entity.entity_type.as_str(),
            entity.name,
            serde_json::to_string(&entity.payload).expect("payloads serialize"),
            entity.start_line,
            entity.end_line,
            entity.start_offset,
            entity.end_offset,
            entity.hash,
        ])?;
    }
    Ok(())
}

/// Stores a source's signals as one row (none when it has none); its prior row is already gone.
pub(super) fn insert_signals(
    tx: &Connection,
    source_id: i64,
    signals: &[knowledge_queries::wiki::Signal],
) -> rusqlite::Result<()> {
    if let Some(blob) = super::signals::encode(signals) {
        tx.prepare_cached("INSERT INTO concept_signals (source_id, signals) VALUES (?1, ?2)")?
            .execute(params![source_id, blob])?;
    }
    Ok(())
}

/// Records lint, the run and its events, and the meta keys, after every row is in.
pub(super) fn record_run(
    tx: &rusqlite::Transaction<'_>,
    write: &BuildWrite,
    labels_by_path: &HashMap<String, String>,
    run: &RunRow,
    stage_events: &[RunEvent],
    findings: Option<&[LintRow]>,
) -> rusqlite::Result<()> {
    set_meta(tx, "lint_run", if findings.is_some() { &write.run_id } else { "" })?;
    tx.execute("DELETE FROM lint_results", [])?;
    let mut insert_finding = tx.prepare_cached(
        "INSERT INTO lint_results (run_id, path, line, col, severity, code, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for f in findings.unwrap_or_default() {
        insert_finding.execute(params![write.run_id, f.path, f.line, f.column, f.severity, f.code, f.message])?;
    }

    tx.execute(
        "INSERT INTO runs (id, started_at, finished_at, status, tool_version, fingerprint, vcs, summary)
         VALUES (?1, ?2, ?3, 'succeeded', ?4, ?5, ?6, ?7)",
        params![run.id, run.started_at, run.finished_at, run.tool_version, run.fingerprint, run.vcs, run.summary],
    )?;
    let mut insert_event = tx.prepare_cached(
        "INSERT INTO run_events (run_id, seq, kind, path, old_revision, new_revision, detail, labels)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (seq, event) in write.events.iter().chain(stage_events).enumerate() {
        insert_event.execute(params![
            run.id,
            sql_int(seq as u64),
            event.kind,
            event.path,
            event.old_revision,
            event.new_revision,
            event.detail,
            labels_by_path.get(&event.path).or(event.labels.as_ref()).map_or("", String::as_str)
        ])?;
    }
    set_meta(tx, "fingerprint", &run.fingerprint)?;
    set_meta(tx, "source_owner", &write.source_owner)?;
    set_meta(tx, "config", &write.config)?;
    set_meta(tx, "lint_config", &write.lint_config)?;
    set_meta(tx, "wiki_config", &write.wiki_config)?;
    set_meta(tx, "principals", &write.principals)?;
    set_meta(tx, "purposes", &write.purposes)?;
    set_meta(tx, "last_run", &run.id)?;
    set_meta(tx, "scan_started_ns", &write.scan_started_ns.to_string())?;
    Ok(())
}

/// Removes a source's chunks from the keyword index and the chunk table.
pub(super) fn delete_chunks(tx: &Connection, source_id: i64) -> rusqlite::Result<()> {
    let chunks: Vec<IndexedChunk> = tx
        .prepare_cached(&format!("{INDEXED_CHUNK} WHERE source_id = ?1"))?
        .query_map([source_id], IndexedChunk::read)?
        .collect::<rusqlite::Result<_>>()?;
    for chunk in chunks {
        chunk.delete(tx)?;
    }
    Ok(())
}

/// Removes one chunk from the chunk table, and from the keyword index when the transaction's held writes are
/// written ([`KEYWORD_WRITES`]). External-content FTS needs the indexed values to delete a row, so they are
/// read back first. Its id is noted in `temp.gone_chunks`, so the embedding stage drops its entries without a
/// scan.
pub(super) fn delete_chunk(tx: &Connection, seq: i64) -> rusqlite::Result<()> {
    let chunk = tx
        .prepare_cached(&format!("{INDEXED_CHUNK} WHERE seq = ?1"))?
        .query_row([seq], IndexedChunk::read)
        .optional()?;
    chunk.map_or(Ok(()), |chunk| chunk.delete(tx))
}

/// The columns [`IndexedChunk::read`] takes, from `chunks`.
const INDEXED_CHUNK: &str = "SELECT seq, id, title, text, identifiers FROM chunks";

/// A chunk's row as its delete needs it: its id for `temp.gone_chunks`, and the values FTS5 indexed.
struct IndexedChunk {
    seq: i64,
    id: String,
    title: String,
    text: String,
    identifiers: String,
}

impl IndexedChunk {
    /// From a row of [`INDEXED_CHUNK`].
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<IndexedChunk> {
        Ok(IndexedChunk {
            seq: row.get(0)?,
            id: row.get(1)?,
            title: row.get(2)?,
            text: row.get(3)?,
            identifiers: row.get(4)?,
        })
    }

    /// Deletes the chunk, its keyword-index row by value, not by `INSERT ... SELECT`: a write to a virtual
    /// table that may take several rows opens a statement savepoint, and at every savepoint FTS5 writes the
    /// terms it holds pending to a new segment and merges segments, which cost a re-rendered page most of its
    /// store time (issue 43).
    fn delete(self, tx: &Connection) -> rusqlite::Result<()> {
        tx.prepare_cached("INSERT OR IGNORE INTO temp.gone_chunks (id) VALUES (?1)")?.execute([&self.id])?;
        // A chunk whose insert is held was never in the keyword index: the held insert goes. Any other (one
        // inserted straight in by this transaction too) is deleted when the held writes are written; its
        // rowid may be taken again by a later insert, which is held behind this delete.
        let inserted =
            tx.prepare_cached("DELETE FROM temp.keyword_writes WHERE phase = 1 AND seq = ?1")?.execute([self.seq])?;
        if inserted == 0 {
            tx.prepare_cached(
                "INSERT INTO temp.keyword_writes (phase, seq, title, text, identifiers) VALUES (0, ?1, ?2, ?3, ?4)",
            )?
            .execute(params![self.seq, self.title, self.text, self.identifiers])?;
        }
        tx.prepare_cached("DELETE FROM chunks WHERE seq = ?1")?.execute([self.seq])?;
        Ok(())
    }
}

pub(super) fn drop_everything(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let names = |sql: &str| -> rusqlite::Result<Vec<(String, String)>> {
        tx.prepare(sql)?.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect()
    };
    // Virtual tables first: dropping one drops its shadow tables, which the second query would list.
    for sql in [
        "SELECT type, name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'",
        "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'",
    ] {
        for (kind, name) in names(sql)? {
            tx.execute_batch(&format!("DROP {kind} IF EXISTS \"{}\"", name.replace('"', "\"\"")))?;
        }
    }
    Ok(())
}

/// SQLite integers are signed 64-bit; sizes and counts never reach 2^63.
pub(super) fn sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A row's values as a map key: equal when every value is (a real by its bits, so that equality is an
/// equivalence and agrees with the hash).
struct RowKey<'a>(&'a [rusqlite::types::Value]);

impl PartialEq for RowKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        use rusqlite::types::Value;
        self.0.len() == other.0.len()
            && self.0.iter().zip(other.0).all(|pair| match pair {
                (Value::Real(a), Value::Real(b)) => a.to_bits() == b.to_bits(),
                (a, b) => a == b,
            })
    }
}

impl Eq for RowKey<'_> {}

impl std::hash::Hash for RowKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        use rusqlite::types::Value;
        for value in self.0 {
            match value {
                Value::Null => state.write_u8(0),
                Value::Integer(n) => (1u8, n).hash(state),
                Value::Real(x) => (2u8, x.to_bits()).hash(state),
                Value::Text(text) => (3u8, text).hash(state),
                Value::Blob(bytes) => (4u8, bytes).hash(state),
            }
        }
    }
}

/// Makes the rows of `table` that match `scope` (a condition on `?1`, `scope_value`) exactly `rows`, each a
/// value per column of `columns`, changing only the rows that differ: a row already there is left in place,
/// so a page re-rendered with most of its citations and listed sources unchanged does not rewrite their
/// index entries (a delete and re-insert dirtied every index page they sit on, and the checkpoint wrote
/// them all). Rows are compared as multisets.
pub(crate) fn replace_rows(
    tx: &Connection,
    table: &str,
    scope: &str,
    scope_value: &str,
    columns: &[&str],
    rows: &[Vec<rusqlite::types::Value>],
) -> rusqlite::Result<()> {
    // Fx, not SipHash: a row is many short values, and SipHash pays per write.
    let mut wanted: rustc_hash::FxHashMap<RowKey<'_>, usize> = rustc_hash::FxHashMap::default();
    for row in rows {
        *wanted.entry(RowKey(row)).or_default() += 1;
    }
    let list = columns.join(", ");
    let existing: Vec<(i64, Vec<rusqlite::types::Value>)> = tx
        .prepare_cached(&format!("SELECT rowid, {list} FROM {table} WHERE {scope}"))?
        .query_map([scope_value], |row| {
            let values = (1..=columns.len()).map(|i| row.get(i)).collect::<rusqlite::Result<_>>()?;
            Ok((row.get(0)?, values))
        })?
        .collect::<rusqlite::Result<_>>()?;
    // What stays: each existing row a wanted one matches; the rest go.
    // The delete and insert statements are prepared only when a row needs them: most tables of an edited
    // page keep every row, and a first preparation costs more than the writes it would do.
    let mut kept: rustc_hash::FxHashMap<RowKey<'_>, usize> = rustc_hash::FxHashMap::default();
    let mut delete = None;
    for (rowid, values) in &existing {
        let key = RowKey(values);
        match wanted.get_mut(&key) {
            Some(left) if *left > 0 => {
                *left -= 1;
                *kept.entry(key).or_default() += 1;
            }
            _ => {
                let delete = match &mut delete {
                    Some(delete) => delete,
                    None => delete.insert(tx.prepare_cached(&format!("DELETE FROM {table} WHERE rowid = ?1"))?),
                };
                delete.execute([rowid])?;
            }
        }
    }
    // The rows not kept are inserted in the order given, as a clean build inserts them.
    let mut insert = None;
    for row in rows {
        match kept.get_mut(&RowKey(row)) {
            Some(left) if *left > 0 => *left -= 1,
            _ => {
                let insert = match &mut insert {
                    Some(insert) => insert,
                    None => {
                        let placeholders = (1..=columns.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
                        insert.insert(
                            tx.prepare_cached(&format!("INSERT INTO {table} ({list}) VALUES ({placeholders})"))?,
                        )
                    }
                };
                insert.execute(rusqlite::params_from_iter(row))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::types::Value;

    fn rows(conn: &rusqlite::Connection) -> Vec<(i64, String, String)> {
        conn.prepare("SELECT rowid, page, path FROM page_sources ORDER BY rowid")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn listed(page: &str, paths: &[&str]) -> Vec<Vec<Value>> {
        paths.iter().map(|path| vec![Value::Text(page.to_string()), Value::Text((*path).to_string())]).collect()
    }

    #[test]
    fn replacing_rows_keeps_those_already_there_and_counts_repeats() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE page_sources (page TEXT NOT NULL, path TEXT NOT NULL)").unwrap();
        let columns = ["page", "path"];
        super::replace_rows(&conn, "page_sources", "page = ?1", "p", &columns, &listed("p", &["a", "b", "b"])).unwrap();
        super::replace_rows(&conn, "page_sources", "page = ?1", "q", &columns, &listed("q", &["a"])).unwrap();
        let before = rows(&conn);
        assert_eq!(before.len(), 4);

        // `b` once less, `c` new: the kept rows keep their rowids, one `b` goes, `c` comes after them.
        super::replace_rows(&conn, "page_sources", "page = ?1", "p", &columns, &listed("p", &["a", "c", "b"])).unwrap();
        let after = rows(&conn);
        let paths = |rows: &[(i64, String, String)], page: &str| -> Vec<String> {
            let mut paths: Vec<String> = rows.iter().filter(|r| r.1 == page).map(|r| r.2.clone()).collect();
            paths.sort();
            paths
        };
        assert_eq!(paths(&after, "p"), ["a", "b", "c"]);
        assert_eq!(paths(&after, "q"), ["a"], "another page's rows are left alone");
        assert!(after.contains(&before[0]), "the unchanged `a` row was not rewritten: {after:?}");
        assert!(after.contains(&before[3]), "nor was the other page's: {after:?}");

        // The same rows again change nothing.
        super::replace_rows(&conn, "page_sources", "page = ?1", "p", &columns, &listed("p", &["a", "c", "b"])).unwrap();
        assert_eq!(rows(&conn), after);
    }

    /// The chunk table and its keyword index as the schema makes them (the columns these tests need), with the
    /// table of a transaction's held keyword writes.
    fn keyword_index() -> rusqlite::Connection {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE chunks (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, source_id INTEGER NOT NULL,
                                  title TEXT NOT NULL, text TEXT NOT NULL, identifiers TEXT NOT NULL);
             CREATE VIRTUAL TABLE chunks_fts USING fts5(title, text, identifiers, content = 'chunks',
                                                         content_rowid = 'seq');
             CREATE TEMP TABLE gone_chunks (id TEXT PRIMARY KEY) WITHOUT ROWID;",
        )
        .unwrap();
        conn.execute_batch(super::KEYWORD_WRITES).unwrap();
        conn
    }

    /// In a transaction that writes straight into the keyword index (a fresh index's build, not marked to
    /// hold its writes), a delete is still held, and every write after it is held behind it: a chunk
    /// inserted, deleted, and its rowid taken again by a chunk sharing its words leaves the new chunk found.
    /// An insert written straight in before the held delete of its rowid would lose the words it shares.
    #[test]
    fn writes_after_a_held_delete_are_held_behind_it() {
        let conn = keyword_index();
        conn.execute_batch("BEGIN").unwrap();
        let insert = |id: &str, text: &str| -> i64 {
            conn.execute(
                "INSERT INTO chunks (id, source_id, title, text, identifiers) VALUES (?1, 1, 't', ?2, '')",
                [id, text],
            )
            .unwrap();
            let seq = conn.last_insert_rowid();
            super::insert_keywords(&conn, seq, "t", text, "").unwrap();
            seq
        };
        let first = insert("a", "shared words first");
        super::delete_chunk(&conn, first).unwrap();
        assert_eq!(insert("b", "shared words second"), first, "the rowid is taken again");
        super::write_keyword_index(&conn).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        let matches = |word: &str| -> i64 {
            conn.query_row("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1", [word], |row| row.get(0))
                .unwrap()
        };
        assert_eq!([matches("shared"), matches("second"), matches("first")], [1, 1, 0]);
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')", []).unwrap();
    }

    /// A build's keyword-index writes make no index segment before its commit: a delete of a row by a
    /// statement that could take several (`INSERT ... SELECT`) opened a savepoint, and FTS5 writes its pending
    /// terms to a new segment (and merges) at each savepoint; it does the same whenever a write's rowid is below
    /// the last one written, which a build rewriting several sources did once a source (each deleting its old
    /// chunks after the last one's new ones). The writes are held and written deletes first, in rowid order,
    /// with a chunk inserted and deleted within the build never written, and a rowid taken again by a new
    /// chunk after its old one's delete.
    #[test]
    fn a_builds_keyword_writes_make_no_index_segment_before_its_commit() {
        let conn = keyword_index();
        // A chunk as `insert_chunk` writes it, at the rowid SQLite gives it (one past the largest).
        let insert = |source: i64, words: &str| -> i64 {
            conn.execute(
                "INSERT INTO chunks (id, source_id, title, text, identifiers) VALUES ('', ?1, 't', ?2, '')",
                rusqlite::params![source, words],
            )
            .unwrap();
            let seq = conn.last_insert_rowid();
            conn.execute("UPDATE chunks SET id = 'c' || seq, text = text || ' chunk ' || seq WHERE seq = ?1", [seq])
                .unwrap();
            let text: String = conn.query_row("SELECT text FROM chunks WHERE seq = ?1", [seq], |r| r.get(0)).unwrap();
            super::insert_keywords(&conn, seq, "t", &text, "").unwrap();
            seq
        };
        // FTS5's count of the leaves it has written to new segments (its structure record, rowid 10: a
        // cookie, a version mark, then the level count, the segment count and this, as SQLite varints);
        // merges leave it be, where they would hide new segments from a count of them.
        let leaves_written = || -> u64 {
            let record: Vec<u8> =
                conn.query_row("SELECT block FROM chunks_fts_data WHERE id = 10", [], |row| row.get(0)).unwrap();
            let mut at = 4 + if record[4..8] == [0xff, 0, 0, 1] { 4 } else { 0 };
            let mut varint = || {
                let mut value = 0u64;
                loop {
                    let byte = record[at];
                    at += 1;
                    value = (value << 7) | u64::from(byte & 0x7f);
                    if byte < 0x80 {
                        return value;
                    }
                }
            };
            let (_levels, _segments) = (varint(), varint());
            varint()
        };
        conn.execute_batch("BEGIN").unwrap();
        for seq in 1..=40 {
            insert(seq % 4, "old words");
        }
        super::write_keyword_index(&conn).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        let before = leaves_written();

        // A build's edit: four sources rewritten one after the other (each one's old chunks deleted, one by
        // one or by source, then its new ones inserted), the last rowid's chunk among them (its rowid taken
        // again), and a chunk inserted then deleted.
        conn.execute_batch("BEGIN").unwrap();
        super::hold_keyword_writes(&conn).unwrap();
        // Inserted before any delete, and deleted within the build.
        let early = insert(6, "early words");
        for source in [0, 3, 1, 2] {
            let seqs: Vec<i64> = conn
                .prepare("SELECT seq FROM chunks WHERE source_id = ?1 AND seq <= 40")
                .unwrap()
                .query_map([source], |row| row.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            if source == 3 {
                super::delete_chunks(&conn, 3).unwrap();
            } else {
                for seq in seqs {
                    super::delete_chunk(&conn, seq).unwrap();
                }
            }
            if source == 0 {
                super::delete_chunk(&conn, early).unwrap();
            }
            let seq = insert(source, "new words");
            if source == 0 {
                assert_eq!(seq, 40, "the last rowids' chunks deleted, a rowid is taken again");
            }
        }
        let passing = insert(5, "passing words");
        super::delete_chunk(&conn, passing).unwrap();
        super::delete_chunk(&conn, 999).unwrap();
        super::write_keyword_index(&conn).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        let written = leaves_written() - before;
        assert!(written <= 1, "the edit wrote {written} leaves of new segments: only the commit's is due");

        let gone: i64 = conn.query_row("SELECT count(*) FROM temp.gone_chunks", [], |row| row.get(0)).unwrap();
        let left: i64 = conn.query_row("SELECT count(*) FROM chunks", [], |row| row.get(0)).unwrap();
        assert_eq!((gone, left), (42, 4), "the 40 old chunks, the early and the passing one went; four are left");
        let matches = |word: &str| -> i64 {
            conn.query_row("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1", [word], |row| row.get(0))
                .unwrap()
        };
        let found = [matches("new"), matches("old"), matches("early"), matches("passing")];
        assert_eq!(found, [4, 0, 0, 0], "the index holds the chunks left");
        let held: i64 = conn.query_row("SELECT count(*) FROM temp.keyword_writes", [], |row| row.get(0)).unwrap();
        assert_eq!(held, 0, "nothing is left held");
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')", []).unwrap();
    }

    #[test]
    fn a_path_written_twice_in_one_run_keeps_both_writes_new_lines() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE passage_origins (path TEXT NOT NULL, first_run TEXT NOT NULL, line_keys BLOB NOT NULL,
                                           PRIMARY KEY (path, first_run))",
        )
        .unwrap();
        super::record_new_lines(&conn, "a.md", &[1, 2], "r1").unwrap();
        super::record_new_lines(&conn, "a.md", &[2, 3], "r2").unwrap();
        super::record_new_lines(&conn, "a.md", &[3, 4], "r2").unwrap();
        super::record_new_lines(&conn, "a.md", &[1, 4], "r3").unwrap();
        let origins = crate::store::passage_origins(&conn, &[1, 2, 3, 4]).unwrap();
        let first = |key: i64| origins.get(&key).map(|(run, _)| run.as_str());
        assert_eq!([first(1), first(2), first(3), first(4)], [Some("r1"), Some("r1"), Some("r2"), Some("r2")]);
        let rows: i64 = conn.query_row("SELECT count(*) FROM passage_origins", [], |row| row.get(0)).unwrap();
        assert_eq!(rows, 2, "r3 brought no new line");
    }
}
