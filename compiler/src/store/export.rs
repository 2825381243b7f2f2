//! The index's rows as other tools read them (`knowledge export`): chunks with their provenance, generated
//! pages, and the pages' citations, each handed on as it is read, so an export of any size holds one row
//! in memory at a time.

use rusqlite::Connection;
use serde::Serialize;

/// A chunk and where it came from.
#[derive(Debug, Serialize)]
pub struct ExportedChunk {
    pub id: String,
    pub uri: String,
    pub path: String,
    pub revision: String,
    pub title: String,
    pub heading_path: serde_json::Value,
    pub start_offset: i64,
    pub end_offset: i64,
    pub start_line: i64,
    pub end_line: i64,
    pub text: String,
}

/// A generated concept page.
#[derive(Debug, Serialize)]
pub struct ExportedPage {
    pub slug: String,
    pub title: String,
    pub section: String,
    pub path: String,
    pub aliases: serde_json::Value,
    pub source_count: i64,
    pub summary: String,
    pub hash: String,
}

/// One footnote of a generated page: the source passage it cites.
#[derive(Debug, Serialize)]
pub struct ExportedCitation {
    pub page: String,
    pub note: i64,
    pub source_ref: String,
    pub path: String,
    pub revision: String,
    pub hash: String,
    pub start_offset: i64,
    pub end_offset: i64,
    pub start_line: i64,
    pub end_line: i64,
    pub signal: String,
}

/// Every chunk of a source not in `hidden` (source ids), in source and chunk order:
/// the sources' and notes' chunks, the count a build reports (generated pages are exported as pages, and
/// code entities' excerpts repeat their files' text).
pub fn each_chunk(
    conn: &Connection,
    hidden: &[i64],
    each: impl FnMut(ExportedChunk) -> std::io::Result<()>,
) -> Result<(), ExportError> {
    let sql = format!(
        "SELECT c.id, s.uri, s.path, c.revision, c.title, c.heading_path, c.start_offset, c.end_offset,
                c.start_line, c.end_line, c.text
         FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE c.entity IS NULL AND c.revision = s.revision AND {visible} AND {}
         ORDER BY s.path, c.ordinal",
        super::not_generated(),
        visible = super::readable_sources("c.source_id", hidden),
    );
    each_row(conn, &sql, each, |row| {
        Ok(ExportedChunk {
            id: row.get(0)?,
            uri: row.get(1)?,
            path: row.get(2)?,
            revision: row.get(3)?,
            title: row.get(4)?,
            heading_path: json(&row.get::<_, String>(5)?),
            start_offset: row.get(6)?,
            end_offset: row.get(7)?,
            start_line: row.get(8)?,
            end_line: row.get(9)?,
            text: row.get(10)?,
        })
    })
}

/// Every generated page, by slug. Pages quote only what every principal may read.
pub fn each_page(conn: &Connection, each: impl FnMut(ExportedPage) -> std::io::Result<()>) -> Result<(), ExportError> {
    let sql = "SELECT slug, title, section, path, aliases, source_count, summary, hash FROM wiki_pages ORDER BY slug";
    each_row(conn, sql, each, |row| {
        Ok(ExportedPage {
            slug: row.get(0)?,
            title: row.get(1)?,
            section: row.get(2)?,
            path: row.get(3)?,
            aliases: json(&row.get::<_, String>(4)?),
            source_count: row.get(5)?,
            summary: row.get(6)?,
            hash: row.get(7)?,
        })
    })
}

/// Every citation of every generated page, by page and footnote.
pub fn each_citation(
    conn: &Connection,
    each: impl FnMut(ExportedCitation) -> std::io::Result<()>,
) -> Result<(), ExportError> {
    let sql =
        "SELECT page, note, source_ref, path, revision, hash, start_offset, end_offset, start_line, end_line, signal
               FROM citations ORDER BY page, note";
    each_row(conn, sql, each, |row| {
        Ok(ExportedCitation {
            page: row.get(0)?,
            note: row.get(1)?,
            source_ref: row.get(2)?,
            path: row.get(3)?,
            revision: row.get(4)?,
            hash: row.get(5)?,
            start_offset: row.get(6)?,
            end_offset: row.get(7)?,
            start_line: row.get(8)?,
            end_line: row.get(9)?,
            signal: row.get(10)?,
        })
    })
}

/// Runs `sql` and hands each row, as `read` makes it, to `each`, one at a time.
fn each_row<T>(
    conn: &Connection,
    sql: &str,
    mut each: impl FnMut(T) -> std::io::Result<()>,
    read: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<(), ExportError> {
    let mut statement = conn.prepare(sql)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        each(read(row)?)?;
    }
    Ok(())
}

/// A JSON column's value (an array the index stores as text).
fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_default()
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("reading the index")]
    Sqlite(#[from] rusqlite::Error),
    #[error("writing the export")]
    Write(#[from] std::io::Error),
}
