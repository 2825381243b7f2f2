//! What resolving a ref reads from the SQLite index: a chunk with its provenance, a source with its chunks,
//! backlinks and citing pages, and the chunks that hold a range of a source's lines. The Postgres store's
//! equivalents are in `postgres/resolve.rs`.

use knowledge_queries::{Origin, SourceRef};
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::Serialize;

use super::{Citation, ResultSource};

/// A text chunk as lines are read from it: (start offset, end offset, start line, text).
pub type LineChunk = (u32, u32, u32, String);

/// A chunk as `knowledge get` shows it: its text, its source and where in it, and its provenance.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct ChunkDetail {
    pub id: String,
    pub title: String,
    pub heading_path: Vec<String>,
    pub text: String,
    pub source: ResultSource,
    pub citation: Citation,
    /// The design's provenance object (see docs/schema.md).
    pub provenance: serde_json::Value,
}

/// A source as `knowledge get` shows it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct SourceDetail {
    pub uri: String,
    pub path: String,
    pub source_kind: String,
    pub mime: String,
    pub size: u64,
    pub revision: String,
    pub title: String,
    /// Headings, link targets and front matter.
    pub outline: serde_json::Value,
    /// The run that last derived this source's rows.
    pub indexed_run: String,
    pub chunks: Vec<ChunkSummary>,
    /// For a generated page: the documents that link to its concept and the pages that list it as related.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backlinks: Vec<Backlink>,
    /// For a source: the generated pages that quote it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cited_by: Vec<String>,
}

/// A link to a generated page, or a page listing it as related.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct Backlink {
    /// `file://PATH` of a linking source, or `knowledge://wiki/SLUG` of a page that lists this one as related.
    pub from_ref: String,
    /// The line of the link; 0 for a related page.
    pub line: u32,
    /// `wikilink`, `link` or `related`.
    pub kind: String,
}

/// One chunk of a source, as a source's listing shows it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct ChunkSummary {
    pub id: String,
    pub title: String,
    pub start_line: u32,
    pub end_line: u32,
}

/// The text chunks of the source at `path` that touch lines `start..=end`, by offset.
pub fn line_chunks(conn: &Connection, path: &str, start: u32, end: u32) -> rusqlite::Result<Vec<LineChunk>> {
    conn.prepare(
        "SELECT c.start_offset, c.end_offset, c.start_line, c.text FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE s.path = ?1 AND c.end_line >= ?2 AND c.start_line <= ?3 AND c.entity IS NULL
         ORDER BY c.start_offset",
    )?
    .query_map(params![path, start, end], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
    .collect()
}

/// The chunk `id`, when the index holds it.
pub fn chunk_detail(conn: &Connection, id: &str) -> rusqlite::Result<Option<ChunkDetail>> {
    conn.query_row(
        "SELECT c.id, c.title, c.heading_path, c.text, s.uri, s.path, c.revision, c.hash,
                c.start_offset, c.end_offset, c.start_line, c.end_line, p.provenance
         FROM chunks c JOIN sources s ON s.id = c.source_id JOIN chunk_provenance p ON p.chunk_id = c.id
         WHERE c.id = ?1",
        [id],
        |row| {
            Ok(ChunkDetail {
                id: row.get(0)?,
                title: row.get(1)?,
                heading_path: serde_json::from_str(&row.get::<_, String>(2)?).unwrap_or_default(),
                text: row.get(3)?,
                source: ResultSource {
                    uri: row.get(4)?,
                    path: row.get(5)?,
                    revision: row.get(6)?,
                    hash: row.get(7)?,
                    project: None,
                },
                citation: Citation::from_row(row, 8)?,
                provenance: serde_json::from_str(&row.get::<_, String>(12)?).unwrap_or_default(),
            })
        },
    )
    .optional()
}

/// The source at `path`, with its chunks and either its backlinks (a page) or the pages citing it.
pub fn source_detail(conn: &Connection, path: &str) -> rusqlite::Result<Option<SourceDetail>> {
    let source = conn
        .query_row(
            "SELECT id, uri, path, kind, mime, size, revision, title, outline, indexed_run FROM sources WHERE path = ?1",
            [path],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    SourceDetail {
                        uri: row.get(1)?,
                        path: row.get(2)?,
                        source_kind: row.get(3)?,
                        mime: row.get(4)?,
                        size: row.get::<_, i64>(5)?.cast_unsigned(),
                        revision: row.get(6)?,
                        title: row.get(7)?,
                        outline: serde_json::from_str(&row.get::<_, String>(8)?).unwrap_or_default(),
                        indexed_run: row.get(9)?,
                        chunks: Vec::new(),
                        backlinks: Vec::new(),
                        cited_by: Vec::new(),
                    },
                ))
            },
        )
        .optional()?;
    let Some((id, mut detail)) = source else {
        return Ok(None);
    };
    detail.chunks = conn
        .prepare_cached("SELECT id, title, start_line, end_line FROM chunks WHERE source_id = ?1 AND entity IS NULL ORDER BY ordinal")?
        .query_map([id], |row| {
            Ok(ChunkSummary { id: row.get(0)?, title: row.get(1)?, start_line: row.get(2)?, end_line: row.get(3)? })
        })?
        .collect::<rusqlite::Result<_>>()?;
    if let Some(slug) = SourceRef::from_path(&detail.path).page_slug() {
        detail.backlinks = conn
            .prepare_cached(
                "SELECT from_ref, line, kind FROM wiki_backlinks WHERE page = ?1 ORDER BY kind, from_ref, line",
            )?
            .query_map([slug], |row| Ok(Backlink { from_ref: row.get(0)?, line: row.get(1)?, kind: row.get(2)? }))?
            .collect::<rusqlite::Result<_>>()?;
    } else {
        detail.cited_by = conn
            .prepare_cached(&format!(
                "SELECT DISTINCT '{}' || page FROM citations WHERE source_ref = ?1 ORDER BY 1",
                Origin::Page.prefix()
            ))?
            .query_map([&detail.uri], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
    }
    Ok(Some(detail))
}
