//! The read side of the index besides search: resolving refs, listing, recent changes and statistics.
//!
//! One implementation for the CLI and the MCP server. Every function takes a read-only connection and
//! answers from the index alone: it never reads a source file, so it cannot return bytes that were never
//! indexed or a path outside the project, and it works where only the index file was copied.

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use crate::retrieval::access::Access;
pub use crate::store::{
    Backlink, ChangeEvent, ChunkDetail, ChunkSummary, IndexItem, LineChunk, LintFinding, PageItem, RunItem,
    SourceDetail, SourceItem,
};
use knowledge_queries::SourceRef;

mod listing;
mod postgres;
mod postgres_ledger;
mod runs;

pub use listing::*;
pub use postgres::resolve_postgres;
pub use postgres_ledger::*;
pub use runs::*;

#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error("no chunk or source matches `{0}` (expected a chunk id, a `file://` ref or a project-relative path)")]
    NotFound(String),
    /// A text `introduced` looked for that no source the principal may read holds.
    #[error(
        "no source you may read holds the text `{0}` (its words in this order, whitespace and case aside): quote a passage as a source writes it, or name its lines as `PATH#Lstart-Lend`"
    )]
    TextNotFound(String),
    #[error("invalid cursor `{0}`")]
    BadCursor(String),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// What a ref resolved to: a chunk (its text and provenance) or a source (its metadata, outline and the
/// chunks it was split into). Exactly one of `chunk` and `source` is present.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct Resolved {
    pub kind: ResolvedKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<ChunkDetail>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceDetail>,
    /// The lines a ref's `#Lstart-Lend` names (as context packs and answers cite), read from the indexed
    /// chunks that hold them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LinesExcerpt>,
}

/// Lines of a source, as the index holds them.
#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct LinesExcerpt {
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// The revision the lines were read from: the source's current one.
    pub revision: String,
    /// The ref named another revision (`@REV`), so the lines may have moved since it was cited.
    pub stale: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedKind {
    Chunk,
    Source,
}

/// Resolves a chunk id, a `file://` source ref (with an optional `@revision` and `#L<start>-L<end>`
/// fragment, as context packs cite, which are ignored), a project-relative path, a generated page's
/// `knowledge://wiki/SLUG` or its bare slug.
/// What `access` may not read resolves as if it did not exist.
pub fn resolve(conn: &Connection, reference: &str, access: &Access) -> Result<Resolved, ReaderError> {
    resolve_in(&mut SqliteReader { conn }, reference, access)?
        .ok_or_else(|| ReaderError::NotFound(reference.trim().to_string()))
}

/// The reads resolving a ref makes: the SQLite index here, the Postgres store in `postgres.rs`.
pub(crate) trait ReadIndex {
    type Error;
    fn chunk_detail(&mut self, id: &str) -> Result<Option<ChunkDetail>, Self::Error>;
    fn source_detail(&mut self, path: &str) -> Result<Option<SourceDetail>, Self::Error>;
    /// (start offset, end offset, start line, text) of the source's text chunks that touch lines
    /// `start..=end`, by offset.
    fn line_chunks(&mut self, path: &str, start: u32, end: u32) -> Result<Vec<LineChunk>, Self::Error>;
}

/// [`resolve`] over any index; `None` when nothing readable matches.
pub(crate) fn resolve_in<I: ReadIndex>(
    index: &mut I,
    reference: &str,
    access: &Access,
) -> Result<Option<Resolved>, I::Error> {
    let reference = reference.trim();
    if let Some(chunk) = index.chunk_detail(reference)?.filter(|c| access.can_read_path(&c.source.path)) {
        return Ok(Some(Resolved { kind: ResolvedKind::Chunk, chunk: Some(chunk), source: None, lines: None }));
    }
    let path = SourceRef::from_uri(reference).path();
    let path = path.as_str();
    let (path, fragment) = path.split_once('#').map_or((path, None), |(path, fragment)| (path, Some(fragment)));
    let path = path.trim_start_matches("./");
    let (path, cited_revision) = match path.rsplit_once('@') {
        Some((path, revision)) if !revision.is_empty() && revision.chars().all(|c| c.is_ascii_hexdigit()) => {
            (path, Some(revision))
        }
        _ => (path, None),
    };
    // A bare slug names a generated page.
    let page = (!path.contains('/')).then(|| SourceRef::page(path).path());
    let found = match index.source_detail(path)? {
        Some(source) => Some(source),
        None => match page {
            Some(page) => index.source_detail(&page)?,
            None => None,
        },
    };
    let Some(source) = found.filter(|s| access.can_read_path(&s.path)) else {
        return Ok(None);
    };
    let lines = match fragment.and_then(line_range) {
        Some((start, end)) => {
            lines_of(&index.line_chunks(&source.path, start, end)?, &source, start, end, cited_revision)
        }
        None => None,
    };
    Ok(Some(Resolved { kind: ResolvedKind::Source, chunk: None, source: Some(source), lines }))
}

struct SqliteReader<'a> {
    conn: &'a Connection,
}

impl ReadIndex for SqliteReader<'_> {
    type Error = rusqlite::Error;

    fn chunk_detail(&mut self, id: &str) -> rusqlite::Result<Option<ChunkDetail>> {
        crate::store::chunk_detail(self.conn, id)
    }

    fn source_detail(&mut self, path: &str) -> rusqlite::Result<Option<SourceDetail>> {
        crate::store::source_detail(self.conn, path)
    }

    fn line_chunks(&mut self, path: &str, start: u32, end: u32) -> rusqlite::Result<Vec<LineChunk>> {
        crate::store::line_chunks(self.conn, path, start, end)
    }
}

/// `L5-L25`, `L5-25` or `L7`: the lines a ref's fragment names.
fn line_range(fragment: &str) -> Option<(u32, u32)> {
    let (start, end) = fragment.split_once('-').unwrap_or((fragment, fragment));
    let start: u32 = start.strip_prefix('L')?.parse().ok()?;
    let end: u32 = end.trim_start_matches('L').parse().ok()?;
    (start >= 1 && end >= start).then_some((start, end))
}

/// Lines `start..=end` of a source, put together from its indexed chunks that touch them (each an exact
/// byte range of the source, so overlapping chunks agree); `None` when no chunk holds them.
fn lines_of(
    chunks: &[LineChunk],
    source: &SourceDetail,
    start: u32,
    end: u32,
    cited_revision: Option<&str>,
) -> Option<LinesExcerpt> {
    let (_, mut covered_to, first_line, first_text) = chunks.first().cloned()?;
    // The contiguous text the chunks cover, from the first one on. Chunks leave out the blank lines between
    // blocks; a gap that is exactly the line breaks the line numbers say it holds is filled with them, and
    // any other gap ends the excerpt (its bytes are not in the index).
    let mut text = first_text;
    for (chunk_start, chunk_end, chunk_line, chunk_text) in chunks.iter().skip(1) {
        if *chunk_start > covered_to {
            let line_now = first_line + text.matches('\n').count() as u32;
            let breaks = chunk_line.saturating_sub(line_now);
            if chunk_start - covered_to != breaks {
                break;
            }
            text.extend(std::iter::repeat_n('\n', breaks as usize));
            covered_to = *chunk_start;
        }
        if *chunk_end > covered_to {
            text.push_str(&chunk_text[(covered_to - chunk_start) as usize..]);
            covered_to = *chunk_end;
        }
    }
    let mut excerpt = String::new();
    let (mut from, mut to) = (None, first_line);
    for (line, number) in text.split_inclusive('\n').zip(first_line..) {
        if (start..=end).contains(&number) {
            excerpt.push_str(line);
            from.get_or_insert(number);
            to = number;
        }
    }
    let from = from?;
    let stale = cited_revision.is_some_and(|cited| !source.revision.starts_with(cited));
    Some(LinesExcerpt { start_line: from, end_line: to, text: excerpt, revision: source.revision.clone(), stale })
}
