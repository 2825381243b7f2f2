//! The wiki's reads of the index: the catalog (every source a generated page may quote, with its concept
//! signals) and the stored views of the pages an edit reaches. The build writes pages, shards and
//! citations in `write.rs` and `mod.rs`.

use std::collections::{BTreeMap, HashMap};

use knowledge_queries::Origin;
use knowledge_queries::wiki::{Excerpt, PlanSignal};
use rusqlite::{Connection, OptionalExtension, params};

use super::origin_condition;

/// A source's signals as the planner reads them (each with its concept keys and its rank by place, which
/// the build stores so that no reader makes them again), and their excerpts, in the same order.
pub type SourceSignals = (Vec<PlanSignal>, Vec<Excerpt>);

/// What one source contributes to the concept catalog, as the index stores it.
#[derive(Debug, Clone)]
pub struct CatalogRow {
    pub path: String,
    pub title: String,
    pub revision: String,
    /// The value of the section field in its front matter.
    pub section_value: Option<String>,
    pub signals: SourceSignals,
}

/// The stored views (JSON) of the pages that list the source at `path`, by slug.
pub fn views_of_pages_listing(conn: &Connection, path: &str) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached(
        "SELECT slug, view FROM wiki_pages WHERE slug IN (SELECT page FROM page_sources WHERE path = ?1)",
    )?
    .query_map([path], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

/// Reads the sources a generated page may quote: files (not notes), readable by every principal (no
/// labels, or only `public`), so a page never carries text some reader may not see. `paths`: only these.
/// `field`: the front-matter field whose value names a source's section.
pub fn catalog_rows(
    conn: &Connection,
    field: Option<&str>,
    paths: Option<&[String]>,
) -> rusqlite::Result<Vec<CatalogRow>> {
    let mut rows: Vec<(i64, CatalogRow)> = match paths {
        None => conn
            .prepare(&format!("{CATALOG_SOURCES} WHERE {} ORDER BY path", quotable_condition()))?
            .query_map([field], read_catalog_row)?
            .collect::<rusqlite::Result<_>>()?,
        Some(paths) => {
            let mut rows = Vec::new();
            for path in paths {
                rows.extend(catalog_row(conn, field, path)?);
            }
            rows
        }
    };
    let index_of: HashMap<i64, usize> = rows.iter().enumerate().map(|(index, (id, _))| (*id, index)).collect();
    let mut read_signals = |row: &rusqlite::Row<'_>| -> rusqlite::Result<()> {
        let Some(&index) = index_of.get(&row.get::<_, i64>(0)?) else { return Ok(()) };
        rows[index].1.signals = super::signals::decode_planned(row.get_ref(1)?.as_blob()?)?;
        Ok(())
    };
    if paths.is_none() {
        let mut statement = conn.prepare("SELECT source_id, signals FROM concept_signals")?;
        let mut signals = statement.query([])?;
        while let Some(row) = signals.next()? {
            read_signals(row)?;
        }
    } else {
        let mut statement =
            conn.prepare_cached("SELECT source_id, signals FROM concept_signals WHERE source_id = ?1")?;
        let ids: Vec<i64> = index_of.keys().copied().collect();
        for id in ids {
            let mut signals = statement.query([id])?;
            while let Some(row) = signals.next()? {
                read_signals(row)?;
            }
        }
    }
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// A source as the pages an edit reaches name it: its catalog row without signals, and of its signals only
/// those the pages quote or link by, each with its index among the source's signals.
#[derive(Debug, Clone)]
pub struct NamedSource {
    pub row: CatalogRow,
    pub signals: Vec<(u32, PlanSignal, Excerpt)>,
}

/// The quotable sources of `wanted` (by path, with the indexes of the signals to read), as
/// [`catalog_rows`] would read them but without the signals no one asked for: a page that lists a source
/// reads its row, one that quotes it reads one signal by its index, so an edit that reaches pages listing
/// hundreds of sources reads a few hundred signals rather than every signal of every source they name.
/// An index past the source's signals is not returned.
pub fn named_sources(
    conn: &Connection,
    field: Option<&str>,
    wanted: &std::collections::BTreeMap<String, std::collections::BTreeSet<u32>>,
) -> rusqlite::Result<Vec<NamedSource>> {
    let mut blob_of = conn.prepare_cached("SELECT signals FROM concept_signals WHERE source_id = ?1")?;
    // The rows in one statement, the paths as one JSON array: an edit's pages may name hundreds of sources,
    // and a statement a path cost about as much again as the lookups themselves.
    let paths = serde_json::to_string(&wanted.keys().collect::<Vec<_>>()).expect("paths serialize");
    let rows: Vec<(i64, CatalogRow)> = conn
        .prepare_cached(&format!(
            "{CATALOG_SOURCES} WHERE path IN (SELECT value FROM json_each(?2)) AND {} ORDER BY path",
            quotable_condition()
        ))?
        .query_map(params![field, paths], read_catalog_row)?
        .collect::<rusqlite::Result<_>>()?;
    let mut named = Vec::with_capacity(rows.len());
    for (id, row) in rows {
        let mut signals = Vec::new();
        if let Some(indexes) = wanted.get(&row.path).filter(|indexes| !indexes.is_empty())
            && let Some(blob) = blob_of.query([id])?.next()?
        {
            signals = super::signals::decode_at(blob.get_ref(0)?.as_blob()?, indexes)?;
        }
        named.push(NamedSource { row, signals });
    }
    Ok(named)
}

/// A source row of the catalog: its id, path, title, revision and section value (`?1`: the section field).
const CATALOG_SOURCES: &str = "SELECT id, path, title, revision,
    CASE WHEN ?1 IS NULL THEN NULL ELSE json_extract(outline, '$.front_matter.\"' || ?1 || '\"') END
    FROM sources";

/// Sources a page may quote: files every principal may read.
fn quotable_condition() -> String {
    format!("{} AND labels IN ('', 'public')", origin_condition(Origin::File, "path"))
}

/// The catalog row of the quotable source at `path`, with its id, when there is one.
fn catalog_row(conn: &Connection, field: Option<&str>, path: &str) -> rusqlite::Result<Option<(i64, CatalogRow)>> {
    conn.prepare_cached(&format!("{CATALOG_SOURCES} WHERE path = ?2 AND {}", quotable_condition()))?
        .query_row(params![field, path], read_catalog_row)
        .optional()
}

fn read_catalog_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, CatalogRow)> {
    let entry = CatalogRow {
        path: row.get(1)?,
        title: row.get(2)?,
        revision: row.get(3)?,
        section_value: row.get(4)?,
        signals: (Vec::new(), Vec::new()),
    };
    Ok((row.get(0)?, entry))
}

/// Every source's stored signals, by path in path order, each source's in the order it gave them, with
/// their excerpts: the catalog as a reader of the index sees it (the golden tests print it).
pub fn signals_by_path(conn: &Connection) -> rusqlite::Result<Vec<(String, SourceSignals)>> {
    let mut statement = conn.prepare(
        "SELECT s.path, g.signals FROM concept_signals g JOIN sources s ON s.id = g.source_id ORDER BY s.path",
    )?;
    let mut rows = statement.query([])?;
    let mut sources = Vec::new();
    while let Some(row) = rows.next()? {
        sources.push((row.get(0)?, super::signals::decode_planned(row.get_ref(1)?.as_blob()?)?));
    }
    Ok(sources)
}

/// The text and start offset of the chunk `ordinal` of the source at `path`.
pub fn chunk_text_at(conn: &Connection, path: &str, ordinal: u32) -> rusqlite::Result<Option<(String, u32)>> {
    conn.prepare_cached(
        "SELECT c.text, c.start_offset FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE s.path = ?1 AND c.ordinal = ?2",
    )?
    .query_row(params![path, ordinal], |row| Ok((row.get(0)?, row.get(1)?)))
    .optional()
}

/// The id of the source row at `path`, if there is one.
pub fn source_id(conn: &Connection, path: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM sources WHERE path = ?1")?.query_row([path], |row| row.get(0)).optional()
}

/// What a page changed by a build keeps of its stored rows when only the revisions it cites changed: its
/// Markdown, index sentence and text key, whether its summary is extractive (no writer wrote or owes it),
/// and its source row's id, outline and chunks' spans.
#[derive(Debug, Clone)]
pub struct StoredPageText {
    pub markdown: String,
    pub summary: String,
    pub text_key: String,
    pub extractive: bool,
    pub source_id: i64,
    pub outline: String,
    /// Each chunk's start and end offsets in `markdown`.
    pub chunk_spans: Vec<(usize, usize)>,
}

/// The stored text of the page `slug`, whose source row is at `path`; `None` when either row is missing.
pub fn stored_page_text(conn: &Connection, slug: &str, path: &str) -> rusqlite::Result<Option<StoredPageText>> {
    let page: Option<(String, String, String, bool)> = conn
        .prepare_cached(
            "SELECT markdown, summary, text_key, writing IS NULL AND writing_owed = 0 FROM wiki_pages WHERE slug = ?1",
        )?
        .query_row([slug], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
        .optional()?;
    let Some((markdown, summary, text_key, extractive)) = page else { return Ok(None) };
    let source: Option<(i64, String)> = conn
        .prepare_cached("SELECT id, outline FROM sources WHERE path = ?1")?
        .query_row([path], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((source_id, outline)) = source else { return Ok(None) };
    let chunk_spans = conn
        .prepare_cached("SELECT start_offset, end_offset FROM chunks WHERE source_id = ?1")?
        .query_map([source_id], |row| Ok((row.get::<_, i64>(0)? as usize, row.get::<_, i64>(1)? as usize)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Some(StoredPageText { markdown, summary, text_key, extractive, source_id, outline, chunk_spans }))
}

/// The revision each footnote of the page `slug` cites, by footnote.
pub fn cited_revisions(conn: &Connection, slug: &str) -> rusqlite::Result<BTreeMap<u32, String>> {
    conn.prepare_cached("SELECT note, revision FROM citations WHERE page = ?1")?
        .query_map([slug], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// Gives a source row and its chunks a new revision and outline, every other column as it was: what
/// [`write_source`] writes for a row whose chunks are all unchanged, without reading them.
pub fn restamp_source(
    conn: &Connection,
    source_id: i64,
    path: &str,
    size: u64,
    revision: &str,
    outline: &str,
    run_id: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE sources SET revision = ?2, outline = ?3, indexed_run = ?4 WHERE id = ?1")?
        .execute(params![source_id, revision, outline, run_id])?;
    conn.prepare_cached("UPDATE chunks SET revision = ?2 WHERE source_id = ?1")?
        .execute(params![source_id, revision])?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO source_revisions (path, revision, size, first_run) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![path, revision, super::write::sql_int(size), run_id])?;
    Ok(())
}

/// What the index holds about a page before a build.
#[derive(Debug, Clone)]
pub struct StoredPage {
    pub model_hash: String,
    pub hash: String,
    pub path: String,
    /// The hash of the page's view as the last plan made it (`wiki_pages.view_hash`).
    pub view_hash: String,
    /// The writer owes it a writing (`wiki_pages.writing_owed`).
    pub writing_owed: bool,
}

/// The stored rows of every page, or of the pages `only` names, by slug.
pub fn stored_pages(
    conn: &Connection,
    only: Option<&[&str]>,
) -> rusqlite::Result<std::collections::BTreeMap<String, StoredPage>> {
    const COLUMNS: &str = "slug, model_hash, hash, path, view_hash, writing_owed";
    let row = |row: &rusqlite::Row<'_>| {
        let page = StoredPage {
            model_hash: row.get(1)?,
            hash: row.get(2)?,
            path: row.get(3)?,
            view_hash: row.get(4)?,
            writing_owed: row.get(5)?,
        };
        Ok((row.get(0)?, page))
    };
    let Some(only) = only else {
        return conn.prepare(&format!("SELECT {COLUMNS} FROM wiki_pages"))?.query_map([], row)?.collect();
    };
    let mut statement = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM wiki_pages WHERE slug = ?1"))?;
    let mut pages = std::collections::BTreeMap::new();
    for slug in only {
        if let Some((slug, page)) = statement.query_row([slug], row).optional()? {
            pages.insert(slug, page);
        }
    }
    Ok(pages)
}

/// A generated page's catalog row (`wiki_pages`).
#[derive(Debug, Clone)]
pub struct PageRow<'a> {
    pub slug: &'a str,
    pub title: &'a str,
    pub section: &'a str,
    /// The page file, relative to the output folder.
    pub path: &'a str,
    /// JSON list.
    pub aliases: &'a str,
    pub source_count: usize,
    pub summary: &'a str,
    pub model_hash: &'a str,
    /// A hash of the model's inputs less its cited revisions, its quotes' texts and the template
    /// (`wiki_pages.text_key`).
    pub text_key: &'a str,
    pub hash: &'a str,
    pub markdown: &'a str,
    /// The page's view as the planner made it (JSON), and its hash.
    pub view: &'a str,
    pub view_hash: &'a str,
    pub run_id: &'a str,
    /// What the `[wiki] writer` left it with, and whether it owes it a writing.
    pub writing: Option<&'a str>,
    pub writing_owed: bool,
}

/// Writes (or updates in place) a page's catalog row.
pub fn upsert_page(conn: &Connection, page: &PageRow<'_>) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO wiki_pages (slug, title, section, path, aliases, source_count, summary, model_hash, hash, markdown, view, run_id, writing, writing_owed, text_key, view_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
         ON CONFLICT (slug) DO UPDATE SET title = excluded.title, section = excluded.section, path = excluded.path,
             aliases = excluded.aliases, source_count = excluded.source_count, summary = excluded.summary,
             model_hash = excluded.model_hash, hash = excluded.hash, markdown = excluded.markdown,
             view = excluded.view, run_id = excluded.run_id, writing = excluded.writing,
             writing_owed = excluded.writing_owed, text_key = excluded.text_key, view_hash = excluded.view_hash",
    )?
    .execute(params![
        page.slug,
        page.title,
        page.section,
        page.path,
        page.aliases,
        page.source_count as i64,
        page.summary,
        page.model_hash,
        page.hash,
        page.markdown,
        page.view,
        page.run_id,
        page.writing,
        page.writing_owed,
        page.text_key,
        page.view_hash,
    ])?;
    Ok(())
}

/// Writes a page's row of its section's shard: its digest and its JSON.
pub fn upsert_shard_row(
    conn: &Connection,
    slug: &str,
    section: &str,
    digest: &str,
    json: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO shard_rows (slug, section, digest, json) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![slug, section, digest, json])?;
    Ok(())
}

/// One footnote of a page: the passage it cites.
#[derive(Debug, Clone)]
pub struct CitationRow<'a> {
    pub note: u32,
    /// The line of the footnote's definition on the page.
    pub note_line: usize,
    pub source_ref: &'a str,
    pub path: &'a str,
    pub revision: &'a str,
    pub hash: &'a str,
    pub start_offset: u32,
    pub end_offset: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// Why the page quotes it (`title`, `heading`, …).
    pub signal: &'a str,
}

/// Sets a page's citations, listed sources, backlinks and the related pages it lists to these, changing only
/// the rows that differ. `backlinks` are (from ref, line, kind); `related` are slugs.
pub fn replace_page_links(
    conn: &Connection,
    slug: &str,
    citations: &[CitationRow<'_>],
    listed: &[&str],
    backlinks: &[(&str, u32, &str)],
    related: &[&str],
) -> rusqlite::Result<()> {
    use rusqlite::types::Value;
    let text = |text: &str| Value::Text(text.to_string());
    let citation_rows: Vec<Vec<Value>> = citations
        .iter()
        .map(|c| {
            vec![
                text(slug),
                Value::Integer(c.note.into()),
                Value::Integer(c.note_line as i64),
                text(c.source_ref),
                text(c.path),
                text(c.revision),
                text(c.hash),
                Value::Integer(c.start_offset.into()),
                Value::Integer(c.end_offset.into()),
                Value::Integer(c.start_line.into()),
                Value::Integer(c.end_line.into()),
                text(c.signal),
            ]
        })
        .collect();
    let citation_columns = [
        "page",
        "note",
        "note_line",
        "source_ref",
        "path",
        "revision",
        "hash",
        "start_offset",
        "end_offset",
        "start_line",
        "end_line",
        "signal",
    ];
    super::replace_rows(conn, "citations", "page = ?1", slug, &citation_columns, &citation_rows)?;
    let listed: Vec<Vec<Value>> = listed.iter().map(|path| vec![text(slug), text(path)]).collect();
    super::replace_rows(conn, "page_sources", "page = ?1", slug, &["page", "path"], &listed)?;
    let backlink_columns = ["page", "from_ref", "line", "kind"];
    let backlinks: Vec<Vec<Value>> = backlinks
        .iter()
        .map(|(from, line, kind)| vec![text(slug), text(from), Value::Integer((*line).into()), text(kind)])
        .collect();
    super::replace_rows(
        conn,
        "wiki_backlinks",
        "page = ?1 AND kind != 'related'",
        slug,
        &backlink_columns,
        &backlinks,
    )?;
    let page_ref = knowledge_queries::SourceRef::page(slug).path();
    let related: Vec<Vec<Value>> =
        related.iter().map(|other| vec![text(other), text(&page_ref), Value::Integer(0), text("related")]).collect();
    let relating = "from_ref = ?1 AND kind = 'related'";
    super::replace_rows(conn, "wiki_backlinks", relating, &page_ref, &backlink_columns, &related)
}

/// Removes a page's rows other than its source row, which a re-rendered page updates in place.
pub fn delete_page_rows(conn: &Connection, slug: &str) -> rusqlite::Result<()> {
    let page_ref = knowledge_queries::SourceRef::page(slug).path();
    conn.prepare_cached("DELETE FROM wiki_pages WHERE slug = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM shard_rows WHERE slug = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM citations WHERE page = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM page_sources WHERE page = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM wiki_backlinks WHERE page = ?1 AND kind != 'related'")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM wiki_backlinks WHERE from_ref = ?1 AND kind = 'related'")?.execute([&page_ref])?;
    conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([&page_ref])?;
    Ok(())
}

/// Stores an artifact's row in the catalog of stored objects, as the query graph derived it.
pub fn upsert_artifact(
    conn: &Connection,
    artifact: &knowledge_queries::wiki::Artifact,
    run_id: &str,
) -> rusqlite::Result<()> {
    let knowledge_queries::wiki::Artifact { uri, kind, path, hash, size, metadata } = artifact;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO storage_objects (uri, kind, path, hash, size, metadata, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![uri, kind, path, hash, size.cast_signed(), metadata, run_id])?;
    Ok(())
}

/// An artifact of a declared kind as the catalog holds it: its file, its hash, and the stamp it was made at
/// (its hash for a kind whose text the index does not keep).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredArtifact {
    pub path: String,
    pub hash: String,
    pub stamp: String,
}

/// The stored artifacts of one declared kind, by uri. Reads no text.
pub fn artifacts_of_kind(conn: &Connection, kind: &str) -> rusqlite::Result<BTreeMap<String, StoredArtifact>> {
    conn.prepare_cached(
        "SELECT o.uri, o.path, o.hash, coalesce(t.stamp, o.hash) FROM storage_objects o
         LEFT JOIN artifact_texts t ON t.uri = o.uri WHERE o.kind = ?1",
    )?
    .query_map([kind], |row| {
        Ok((row.get(0)?, StoredArtifact { path: row.get(1)?, hash: row.get(2)?, stamp: row.get(3)? }))
    })?
    .collect()
}

/// Stores an artifact of a declared kind: its catalog row and its text with the stamp it was made at.
pub fn upsert_artifact_with_text(
    conn: &Connection,
    artifact: &knowledge_queries::wiki::Artifact,
    (stamp, text): (&str, &str),
    run_id: &str,
) -> rusqlite::Result<()> {
    upsert_artifact(conn, artifact, run_id)?;
    conn.prepare_cached("INSERT OR REPLACE INTO artifact_texts (uri, stamp, text) VALUES (?1, ?2, ?3)")?
        .execute(params![artifact.uri, stamp, text])?;
    Ok(())
}

/// Removes an artifact's catalog row, and with it its text.
pub fn delete_artifact(conn: &Connection, uri: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM artifact_texts WHERE uri = ?1")?.execute([uri])?;
    conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([uri])?;
    Ok(())
}

/// The text the index keeps of an artifact of a declared kind.
pub fn artifact_text(conn: &Connection, uri: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT text FROM artifact_texts WHERE uri = ?1")?.query_row([uri], |row| row.get(0)).optional()
}

/// The kind of the artifact the catalog holds at `uri`.
pub fn artifact_kind(conn: &Connection, uri: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT kind FROM storage_objects WHERE uri = ?1")?
        .query_row([uri], |row| row.get(0))
        .optional()
}

/// Which pages' shard rows to read.
#[derive(Debug, Clone, Copy)]
pub enum ShardRowsOf<'a> {
    All,
    Slugs(&'a [String]),
    Section(&'a str),
}

/// One page's row of its section's shard: what the section's files show of it, and with `full`, the row
/// itself.
#[derive(Debug, Clone)]
pub struct StoredShardRow {
    pub slug: String,
    pub section: String,
    pub digest: String,
    pub json: String,
    pub row: Option<knowledge_queries::wiki::ShardRow>,
}

/// Hands each page's shard row to `each`, in slug order (the table's own, so no sort), with its whole row
/// when `full`. Rows are handed on as they are read, since a section can hold thousands.
pub fn each_shard_row(
    conn: &Connection,
    pages: ShardRowsOf<'_>,
    full: bool,
    mut each: impl FnMut(StoredShardRow),
) -> rusqlite::Result<()> {
    let from = if full {
        "SELECT s.slug, s.section, s.digest, s.json, p.title, p.path, p.aliases, p.source_count, p.summary
         FROM shard_rows s JOIN wiki_pages p ON p.slug = s.slug"
    } else {
        "SELECT s.slug, s.section, s.digest, s.json FROM shard_rows s"
    };
    let read = |row: &rusqlite::Row<'_>| -> rusqlite::Result<StoredShardRow> {
        let slug: String = row.get(0)?;
        let shown = if full {
            let aliases = match row.get_ref(6)?.as_str()? {
                "[]" => Vec::new(),
                aliases => serde_json::from_str(aliases).unwrap_or_default(),
            };
            let sources = row.get::<_, i64>(7)?.cast_unsigned();
            Some(knowledge_queries::wiki::ShardRow::new(
                slug.clone(),
                row.get(4)?,
                aliases,
                row.get(5)?,
                sources,
                row.get(8)?,
            ))
        } else {
            None
        };
        Ok(StoredShardRow { slug, section: row.get(1)?, digest: row.get(2)?, json: row.get(3)?, row: shown })
    };
    let (sql, value) = match pages {
        ShardRowsOf::All => (format!("{from} ORDER BY s.slug"), None),
        ShardRowsOf::Section(section) => (format!("{from} WHERE s.section = ?1 ORDER BY s.slug"), Some(section)),
        ShardRowsOf::Slugs(slugs) => {
            let mut statement = conn.prepare_cached(&format!("{from} WHERE s.slug = ?1"))?;
            for slug in slugs {
                if let Some(page) = statement.query_row([slug], read).optional()? {
                    each(page);
                }
            }
            return Ok(());
        }
    };
    let mut statement = conn.prepare_cached(&sql)?;
    let mut rows = statement.query(rusqlite::params_from_iter(value))?;
    while let Some(row) = rows.next()? {
        each(read(row)?);
    }
    Ok(())
}

/// The `meta` key of the log lines the last committed build owes the day's log.
pub const LOG_DUE: &str = "log_due";

/// The `meta` key of the day's log file and the last of the lines [`LOG_DUE`] holds: a build after one whose
/// lines were all appended reads this instead of them all (half a megabyte after a first build of rust-rfcs,
/// parsed and compared at every build that followed it: 16 % of a no-op's CPU).
pub const LOG_DUE_END: &str = "log_due_end";

/// Where `meta` keeps the named concept keys of the plan the index's pages come from
/// (`knowledge_queries::wiki::Plan::named_keys`).
pub const PLAN_NAMED_KEYS: &str = "plan_named_keys";

/// The `meta` keys that are a build's own memos: only the next local build reads them, so a publish leaves
/// them out of the project's meta in a shared store (they grow with the corpus).
pub const BUILD_MEMOS: [&str; 3] = [LOG_DUE, LOG_DUE_END, PLAN_NAMED_KEYS];

/// The named concept keys of the plan the index's pages come from; `None` when no build with the wiki on
/// stored them (every signal then counts as read by the plan).
pub fn plan_named_keys(conn: &Connection) -> rusqlite::Result<Option<String>> {
    super::meta(conn, PLAN_NAMED_KEYS)
}

/// Stores the named concept keys of the plan this build's pages come from, or removes them (`None`: the
/// wiki is off). A value already stored is not written again.
pub fn store_plan_named_keys(conn: &Connection, named_keys: Option<&str>) -> rusqlite::Result<()> {
    let stored = plan_named_keys(conn)?;
    match named_keys {
        Some(keys) if stored.as_deref() != Some(keys) => super::set_meta(conn, PLAN_NAMED_KEYS, keys),
        None if stored.is_some() => super::delete_meta(conn, PLAN_NAMED_KEYS),
        _ => Ok(()),
    }
}
