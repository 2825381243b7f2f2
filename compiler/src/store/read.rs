//! Typed readers of the index: what a build finds before it writes, and what lint, the wiki and the read
//! side read back. Every reader outside a build opens the file with [`open_read_only`].

use std::collections::{HashMap, HashSet};
use std::path::Path;

use knowledge_queries::Origin;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::MMAP_SIZE;

use super::*;

/// What the index holds about a source before a build.
#[derive(Debug, Clone)]
pub struct PriorSource {
    pub id: i64,
    pub size: u64,
    pub mtime_ns: i64,
    pub revision: String,
    pub chunk_count: u64,
}

/// What a build needs to know about the existing index.
#[derive(Debug, Default)]
pub struct Prior {
    /// The file is new or in another format: the schema is (re)created by the build's transaction.
    pub needs_schema: bool,
    /// The pipeline fingerprint the index was derived with.
    pub fingerprint: Option<String>,
    /// The hash of the `[lint]` settings its lint results were computed with.
    pub lint_config: Option<String>,
    /// The hash of the `[wiki]` settings and templates its pages were rendered with.
    pub wiki_config: Option<String>,
    /// When the last writing build began its scan (ns since the epoch): rows whose mtime is not clearly
    /// older cannot be trusted by their stat alone.
    pub scan_started_ns: Option<i64>,
    /// By path; Fx-hashed, since a scan looks every walked file up (38,000 on tldr).
    pub sources: rustc_hash::FxHashMap<String, PriorSource>,
    /// Generated artifact files, relative to the output folder: never sources.
    pub generated: HashSet<String>,
    /// The id of the last build that committed, the version of the index this build starts from.
    pub last_run: Option<String>,
}

/// The SQL condition on `path` that keeps generated wiki pages and index shards out of a query over `sources`.
pub fn not_generated() -> String {
    format!(
        "NOT ({} OR {})",
        crate::store::origin_condition(Origin::Page, "path"),
        crate::store::origin_condition(Origin::Shard, "path")
    )
}

/// A generated page's Markdown, as its file holds it. Pages quote only what every principal may read.
pub fn page_markdown(conn: &Connection, slug: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT markdown FROM wiki_pages WHERE slug = ?1", [slug], |row| row.get(0)).optional()
}

/// The paths of the sources under `folder` (project-relative, with its trailing `/`), with that prefix taken
/// off: the hand-written pages of the output folder's `wiki/`, say.
pub fn sources_under(conn: &Connection, folder: &str) -> rusqlite::Result<HashSet<String>> {
    conn.prepare("SELECT substr(path, length(?1) + 1) FROM sources WHERE substr(path, 1, length(?1)) = ?1")?
        .query_map([folder], |row| row.get(0))?
        .collect()
}

/// The generated files an index lists, relative to the output folder: never sources.
pub fn generated_files(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
    conn.prepare("SELECT path FROM storage_objects")?.query_map([], |row| row.get(0))?.collect()
}

/// What an index holds about its sources, from any connection. A file in another format reads as empty.
pub fn read_prior(conn: &Connection) -> rusqlite::Result<Prior> {
    if format_mismatch(conn)?.is_some() {
        return Ok(Prior { needs_schema: true, ..Prior::default() });
    }
    let fingerprint = meta(conn, "fingerprint")?;
    let lint_config = meta(conn, "lint_config")?;
    let wiki_config = meta(conn, "wiki_config")?;
    let scan_started_ns = meta(conn, "scan_started_ns")?.and_then(|ns| ns.parse().ok());
    let generated = generated_files(conn)?;
    // Generated pages are rows too, for search; the wiki compiler replaces them, not the source scan.
    let sources = conn
        .prepare(&format!(
            "SELECT path, id, size, mtime_ns, revision, chunk_count FROM sources WHERE {}",
            not_generated()
        ))?
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                PriorSource {
                    id: row.get(1)?,
                    size: row.get::<_, i64>(2)?.cast_unsigned(),
                    mtime_ns: row.get(3)?,
                    revision: row.get(4)?,
                    chunk_count: row.get::<_, i64>(5)?.cast_unsigned(),
                },
            ))
        })?
        .collect::<rusqlite::Result<rustc_hash::FxHashMap<_, _>>>()?;
    let last_run = meta(conn, "last_run")?;
    Ok(Prior {
        needs_schema: false,
        fingerprint,
        lint_config,
        wiki_config,
        scan_started_ns,
        sources,
        generated,
        last_run,
    })
}

/// A file chunk as near-duplicate lint reads it: where it is, its stored signature, and its row.
#[derive(Debug, Clone)]
pub struct StoredChunk {
    pub path: String,
    pub revision: String,
    pub start_line: u32,
    pub end_line: u32,
    /// The MinHash signature's bytes, when the chunk is long enough to have one.
    pub minhash: Option<Vec<u8>>,
    /// The chunk's row, to read its text by if it turns out to be a candidate.
    pub seq: i64,
}

/// A chunk of a source's text with a signature: the `chunks_signatures` index's condition.
const SIGNED_CHUNK: &str = "c.entity IS NULL AND c.minhash IS NOT NULL";

/// The columns of a chunk as near-duplicate detection reads it, from `chunks c JOIN sources s`.
const CHUNK_TEXT_COLUMNS: &str = "s.path, s.revision, c.start_line, c.end_line, c.minhash, c.seq";

fn stored_chunk(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredChunk> {
    Ok(StoredChunk {
        path: row.get(0)?,
        revision: row.get(1)?,
        start_line: row.get(2)?,
        end_line: row.get(3)?,
        minhash: row.get(4)?,
        seq: row.get(5)?,
    })
}

/// The chunks of every source (not pages, not notes) except `skip` that have a signature (a chunk too short
/// for one is never a near duplicate), for near-duplicate detection: their stored signatures, and their rows
/// for the texts of those that turn out to be candidates. Read from the `chunks_signatures` index alone.
pub fn read_chunk_texts(
    conn: &Connection,
    skip: &std::collections::HashSet<String>,
) -> rusqlite::Result<Vec<StoredChunk>> {
    let mut statement = conn.prepare(&format!(
        "SELECT {CHUNK_TEXT_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE {} AND {SIGNED_CHUNK}",
        crate::store::origin_condition(Origin::File, "s.path")
    ))?;
    let rows = statement.query_map([], stored_chunk)?;
    let mut chunks = Vec::new();
    for chunk in rows {
        let chunk = chunk?;
        if !skip.contains(&chunk.path) {
            chunks.push(chunk);
        }
    }
    Ok(chunks)
}

/// The chunks `read_chunk_texts` would return for the sources at `paths`, each source's in its order.
pub fn read_chunk_texts_of(conn: &Connection, paths: &[String]) -> rusqlite::Result<Vec<StoredChunk>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {CHUNK_TEXT_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE s.path = ?1 AND {} AND {SIGNED_CHUNK} ORDER BY c.ordinal",
        crate::store::origin_condition(Origin::File, "s.path")
    ))?;
    let mut chunks = Vec::new();
    for path in paths {
        let rows = statement.query_map([path], stored_chunk)?;
        for chunk in rows {
            chunks.push(chunk?);
        }
    }
    Ok(chunks)
}

/// The texts of chunks, by row.
pub fn read_chunk_bodies(conn: &Connection, rows: &[i64]) -> rusqlite::Result<HashMap<i64, String>> {
    let mut statement = conn.prepare_cached("SELECT text FROM chunks WHERE seq = ?1")?;
    let mut texts = HashMap::with_capacity(rows.len());
    for &row in rows {
        if let Some(text) = statement.query_row([row], |r| r.get(0)).optional()? {
            texts.insert(row, text);
        }
    }
    Ok(texts)
}

/// One quote of a generated page, as lint checks it against the sources on disk.
#[derive(Debug, Clone)]
pub struct PageCitation {
    /// The page file, relative to the output folder.
    pub page_path: String,
    pub note_line: u32,
    pub source_path: String,
    pub revision: String,
}

/// Every quote of every generated page.
pub fn read_page_citations(conn: &Connection) -> rusqlite::Result<Vec<PageCitation>> {
    conn.prepare(
        "SELECT p.path, c.note_line, c.path, c.revision FROM citations c JOIN wiki_pages p ON p.slug = c.page
         ORDER BY p.path, c.note",
    )?
    .query_map([], |row| {
        Ok(PageCitation {
            page_path: row.get(0)?,
            note_line: row.get(1)?,
            source_path: row.get(2)?,
            revision: row.get(3)?,
        })
    })?
    .collect()
}

/// What the index stores about a source for lint.
#[derive(Debug, Clone)]
pub struct StoredFacts {
    /// JSON.
    pub outline: String,
    /// JSON.
    pub lint_facts: String,
    pub size: u64,
    pub revision: String,
}

/// The stored outline and lint facts of every source, by path.
pub fn read_facts(conn: &Connection) -> rusqlite::Result<HashMap<String, StoredFacts>> {
    conn.prepare(&format!("SELECT path, outline, lint_facts, size, revision FROM sources WHERE {}", not_generated()))?
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                StoredFacts {
                    outline: row.get(1)?,
                    lint_facts: row.get(2)?,
                    size: row.get::<_, i64>(3)?.cast_unsigned(),
                    revision: row.get(4)?,
                },
            ))
        })?
        .collect()
}

/// The stored outline and lint facts of the sources at `paths` that the index holds, by path.
pub fn read_facts_of(conn: &Connection, paths: &[String]) -> rusqlite::Result<HashMap<String, StoredFacts>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT outline, lint_facts, size, revision FROM sources WHERE path = ?1 AND {}",
        not_generated()
    ))?;
    let mut found = HashMap::new();
    for path in paths {
        let row = statement
            .query_row([path], |row| {
                Ok(StoredFacts {
                    outline: row.get(0)?,
                    lint_facts: row.get(1)?,
                    size: row.get::<_, i64>(2)?.cast_unsigned(),
                    revision: row.get(3)?,
                })
            })
            .optional()?;
        found.extend(row.map(|facts| (path.clone(), facts)));
    }
    Ok(found)
}

/// Opens an index for reading. Readers never write: the connection is read-only and checks the format.
pub fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    if !path.is_file() {
        return Err(StoreError::Missing(path.to_path_buf()));
    }
    let wrap = |source| StoreError::Sqlite { path: path.to_path_buf(), source };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(wrap)?;
    // Pages are read through a memory map, as the build reads them, not copied one `pread` at a time into a
    // 2 MB cache: loading the Rust book's vectors (an 18 MB index) made 25,704 reads of it per search
    // process. The file never shrinks under the map (no VACUUM, `auto_vacuum` off).
    conn.pragma_update(None, "mmap_size", MMAP_SIZE).map_err(wrap)?;
    super::plan_once(&conn).map_err(wrap)?;
    // A search prepares about twenty distinct statements (the permissions, the words, the pool's rows, the
    // pages, the citations): more than rusqlite's default cache of 16 keeps, which would parse some again.
    conn.set_prepared_statement_cache_capacity(64);
    if let Some(found) = format_mismatch(&conn).map_err(wrap)? {
        return Err(StoreError::Format { path: path.to_path_buf(), found });
    }
    Ok(conn)
}

/// One generated artifact as `storage_objects` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CatalogObject {
    pub uri: String,
    pub kind: String,
    /// Relative to the output folder.
    pub path: String,
    pub hash: String,
    pub size: u64,
}

/// Every generated artifact the index lists, by path.
pub fn catalog_objects(conn: &Connection) -> rusqlite::Result<Vec<CatalogObject>> {
    // Sorted here rather than by SQLite: the table is keyed by uri, and an `ORDER BY path` sorts through a
    // temporary b-tree, which costs several times this sort of a few hundred rows.
    let mut objects: Vec<CatalogObject> = conn
        .prepare_cached("SELECT uri, kind, path, hash, size FROM storage_objects")?
        .query_map([], |row| {
            Ok(CatalogObject {
                uri: row.get(0)?,
                kind: row.get(1)?,
                path: row.get(2)?,
                hash: row.get(3)?,
                size: row.get::<_, i64>(4)?.cast_unsigned(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    objects.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(objects)
}

/// Whether one of `paths` is listed by a page (quoted, listed or linking to it).
pub fn any_page_lists(conn: &Connection, paths: &[String]) -> rusqlite::Result<bool> {
    let mut statement = conn.prepare_cached("SELECT 1 FROM page_sources WHERE path = ?1 LIMIT 1")?;
    for path in paths {
        if statement.exists([path])? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A source's current revision and labels, when the index holds it.
pub fn source_revision_and_labels(conn: &Connection, path: &str) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached("SELECT revision, labels FROM sources WHERE path = ?1")?
        .query_row([path], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
}

/// Every labelled source as (id, path, labels), by id: what a principal's access is decided over.
pub fn labelled_sources(conn: &Connection) -> rusqlite::Result<Vec<(i64, String, String)>> {
    conn.prepare_cached("SELECT id, path, labels FROM sources WHERE labels != '' ORDER BY id")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect()
}

/// Where a source came from, as `knowledge resolve` reports it.
#[derive(Debug, Clone)]
pub struct SourceProvenance {
    pub uri: String,
    pub kind: String,
    pub revision: String,
    pub labels: String,
    /// An ingested source's front matter: the resolver that fetched it, its owner and the revision id the
    /// origin gave it.
    pub resolver: Option<String>,
    pub owner: Option<String>,
    pub revision_id: Option<String>,
}

/// The provenance of the source at `path`, when the index holds it.
pub fn source_provenance(conn: &Connection, path: &str) -> rusqlite::Result<Option<SourceProvenance>> {
    conn.query_row(
        "SELECT uri, kind, revision, labels,
                json_extract(outline, '$.front_matter.resolver'),
                json_extract(outline, '$.front_matter.source_owner'),
                json_extract(outline, '$.front_matter.revision_id')
         FROM sources WHERE path = ?1",
        [path],
        |row| {
            Ok(SourceProvenance {
                uri: row.get(0)?,
                kind: row.get(1)?,
                revision: row.get(2)?,
                labels: row.get(3)?,
                resolver: row.get(4)?,
                owner: row.get(5)?,
                revision_id: row.get(6)?,
            })
        },
    )
    .optional()
}

/// The whole answer (JSON) the ask run `run_id` recorded, when there is such a run.
pub fn ask_summary(conn: &Connection, run_id: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT summary FROM runs WHERE id = ?1 AND kind = 'ask'", [run_id], |row| row.get(0)).optional()
}

/// The last `limit` recorded answers (`knowledge ask` runs), newest first: each run's id and summary.
pub fn ask_runs(conn: &Connection, limit: i64) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached("SELECT id, summary FROM runs WHERE kind = 'ask' ORDER BY id DESC LIMIT ?1")?
        .query_map([limit], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// Writes a consistent copy of the committed index, whatever its write-ahead log holds, to `snapshot`.
pub fn snapshot_into(conn: &Connection, snapshot: &Path) -> rusqlite::Result<()> {
    conn.execute("VACUUM INTO ?1", [snapshot.to_string_lossy().as_ref()])?;
    Ok(())
}

/// Merges the index's write-ahead log into the file and leaves WAL mode, so that the file alone is the
/// index and no log of it is left to be read against another file put in its place.
pub fn merge_the_log(index: &Path) -> rusqlite::Result<()> {
    let conn = Connection::open(index)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    conn.pragma_update(None, "journal_mode", "delete")
}

/// Every (page slug, source path) a generated page quotes, by page and path.
pub fn page_quotes(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare("SELECT DISTINCT page, path FROM citations ORDER BY page, path")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// Every index entry's chunk id with the slug of the page it lists.
pub fn index_entry_pages(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare(&format!(
        "SELECT c.id, c.identifiers FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {}",
        origin_condition(Origin::Shard, "s.path")
    ))?
    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

/// Every current text chunk as (source path, chunk id, heading path as JSON).
pub fn chunk_headings(conn: &Connection) -> rusqlite::Result<Vec<(String, String, String)>> {
    conn.prepare(
        "SELECT s.path, c.id, c.heading_path FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE c.revision = s.revision AND c.entity IS NULL",
    )?
    .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty index in memory, its tables and secondary indexes made.
    fn empty_index() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!("{}{}", super::super::SCHEMA, super::super::INDEXES)).unwrap();
        conn
    }

    /// The steps of SQLite's plan for `sql` (its parameters bound to empty strings).
    fn query_plan(conn: &Connection, sql: &str) -> Vec<String> {
        let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let values = vec![""; statement.parameter_count()];
        let steps = statement.query_map(rusqlite::params_from_iter(values), |row| row.get::<_, String>(3));
        steps.unwrap().collect::<rusqlite::Result<_>>().unwrap()
    }

    /// Near-duplicate lint reads every signed chunk of the sources' text (neither an entity's excerpt nor a
    /// chunk too short for a signature, which can be no near duplicate) from the `chunks_signatures` index
    /// alone: not from the table, whose rows hold each chunk's text.
    #[test]
    fn the_near_duplicate_read_takes_signed_chunks_from_their_index_alone() {
        let conn = empty_index();
        conn.execute_batch(
            "INSERT INTO sources (id, path, uri, kind, mime, size, mtime_ns, revision, title, labels, chunk_count,
                                  indexed_run, outline, lint_facts)
             VALUES (1, 'a.md', 'file://a.md', 'markdown', 'text/markdown', 1, 0, 'r1', 'A', '', 3, 'run', '{}', '{}'),
                    (2, 'knowledge://wiki/p', 'knowledge://wiki/p', 'markdown', 'text/markdown', 1, 0, 'r2', 'P', '',
                     1, 'run', '{}', '{}');",
        )
        .unwrap();
        let chunk = |seq: i64, source: i64, minhash: Option<Vec<u8>>, entity: Option<&str>| {
            conn.execute(
                "INSERT INTO chunks (seq, id, source_id, ordinal, revision, hash, heading_path, title, text,
                                     identifiers, start_offset, end_offset, start_line, end_line, minhash, entity)
                 VALUES (?1, ?2, ?3, ?1, 'r', 'h', '[]', 't', 'text', '', 0, 4, ?1, ?1, ?4, ?5)",
                rusqlite::params![seq, format!("c{seq}"), source, minhash, entity],
            )
            .unwrap();
        };
        chunk(1, 1, Some(vec![7; 256]), None);
        chunk(2, 1, None, None);
        chunk(3, 1, Some(vec![8; 256]), Some("entity"));
        chunk(4, 2, Some(vec![9; 256]), None);
        let read = read_chunk_texts(&conn, &std::collections::HashSet::new()).unwrap();
        let seqs: Vec<i64> = read.iter().map(|chunk| chunk.seq).collect();
        assert_eq!(seqs, [1], "only the signed chunk of a file's text");
        assert_eq!(read[0].minhash.as_deref(), Some(&[7; 256][..]));
        let of: Vec<i64> = read_chunk_texts_of(&conn, &["a.md".to_string()]).unwrap().iter().map(|c| c.seq).collect();
        assert_eq!(of, seqs, "a read of some sources returns what a whole read returns of them");

        let statement = format!(
            "SELECT {CHUNK_TEXT_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {} AND {SIGNED_CHUNK}",
            crate::store::origin_condition(Origin::File, "s.path")
        );
        let plan = query_plan(&conn, &statement);
        assert!(plan.iter().any(|step| step.contains("COVERING INDEX chunks_signatures")), "{plan:?}");
    }

    /// A page's row is found by its slug through an index of the slugs alone: in a table keyed by slug
    /// (without rowids) each row compared on the way is read whole when it overflows its page, Markdown and
    /// all, which made lint's read of every page's citations 15 ms of CPU on rust-rfcs instead of 2.
    #[test]
    fn a_page_is_found_by_its_slug_without_reading_other_pages_rows() {
        let plan = query_plan(
            &empty_index(),
            "SELECT p.path, c.note_line FROM citations c JOIN wiki_pages p ON p.slug = c.page",
        );
        let page_step = plan.iter().find(|step| step.contains(" p ")).expect("a step reads the pages");
        assert!(page_step.contains("USING INDEX sqlite_autoindex_wiki_pages"), "{plan:?}");
    }

    /// A `meta` value is found by its key through an index of the keys alone: in a table keyed by key
    /// (without rowids) a lookup of any key read each row it compared with whole when that row overflowed its
    /// page, so the half a megabyte of `log_due` a first build of rust-rfcs leaves was copied by every read
    /// of the settings (5 % of the MCP server's CPU).
    #[test]
    fn a_meta_value_is_found_by_its_key_without_reading_other_values() {
        let conn = empty_index();
        let plan = query_plan(&conn, super::super::META_VALUE);
        assert!(plan.iter().any(|step| step.contains("USING INDEX sqlite_autoindex_meta")), "{plan:?}");
        super::super::set_meta(&conn, "log_due", &"x".repeat(1 << 20)).unwrap();
        super::super::set_meta(&conn, "principals", "{}").unwrap();
        assert_eq!(super::super::meta(&conn, "principals").unwrap().as_deref(), Some("{}"));
    }

    /// A vector, and a path's line history, are found by key through an index of the keys alone, and every
    /// vector of a generation is read in the table's order: a key's b-tree without rowids keeps too little of
    /// a 1.5 KB row on its page, so each row spilled onto an overflow page of its own and each lookup read
    /// whole the rows it compared.
    #[test]
    fn vectors_and_line_histories_are_found_by_key_through_the_keys_alone() {
        let conn = empty_index();
        let plan = |sql: &str| query_plan(&conn, sql);
        let lookup = plan(super::super::embeddings::VECTOR_DIMENSIONS);
        assert!(lookup.iter().any(|step| step.contains("USING INDEX sqlite_autoindex_chunk_embeddings")), "{lookup:?}");
        let whole = plan(super::super::embeddings::EVERY_VECTOR);
        assert_eq!(whole, ["SCAN chunk_embeddings"]);
        // A long document's line history is larger than such a page keeps too.
        let history = plan(super::super::write::LINES_HELD);
        assert!(
            history.iter().any(|step| step.contains("USING INDEX sqlite_autoindex_passage_origins")),
            "{history:?}"
        );
    }
}
