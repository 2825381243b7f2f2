//! The read side of the index besides search: resolving refs, listing, recent changes and statistics.
//!
//! One implementation for the CLI and the MCP server. Every function takes a read-only connection and
//! answers from the index alone: it never reads a source file, so it cannot return bytes that were never
//! indexed or a path outside the project, and it works where only the index file was copied.

use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::Serialize;

use crate::retrieval::access::Access;
use crate::retrieval::search::{Citation, ResultSource};
use knowledge_queries::{Origin, SourceRef};

#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error("no chunk or source matches `{0}` (expected a chunk id, a `file://` ref or a project-relative path)")]
    NotFound(String),
    #[error("invalid cursor `{0}`")]
    BadCursor(String),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// What a ref resolved to: a chunk (its text and provenance) or a source (its metadata, outline and the
/// chunks it was split into). Exactly one of `chunk` and `source` is present.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Resolved {
    pub kind: ResolvedKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<ChunkDetail>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceDetail>,
    /// The lines a ref's `#Lstart-Lend` names (as context packs and answers cite), read from the indexed
    /// chunks that hold them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<LinesExcerpt>,
}

/// Lines of a source, as the index holds them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LinesExcerpt {
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// The revision the lines were read from: the source's current one.
    pub revision: String,
    /// The ref named another revision (`@REV`), so the lines may have moved since it was cited.
    pub stale: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedKind {
    Chunk,
    Source,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
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

#[derive(Debug, Clone, Serialize, JsonSchema)]
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backlinks: Vec<Backlink>,
    /// For a source: the generated pages that quote it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cited_by: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Backlink {
    /// `file://PATH` of a linking source, or `knowledge://wiki/SLUG` of a page that lists this one as related.
    pub from_ref: String,
    /// The line of the link; 0 for a related page.
    pub line: u32,
    /// `wikilink`, `link` or `related`.
    pub kind: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChunkSummary {
    pub id: String,
    pub title: String,
    pub start_line: u32,
    pub end_line: u32,
}

/// Resolves a chunk id, a `file://` source ref (with an optional `@revision` and `#L<start>-L<end>`
/// fragment, as context packs cite, which are ignored), a project-relative path, a generated page's
/// `knowledge://wiki/SLUG` or its bare slug.
/// What `access` may not read resolves as if it did not exist.
pub fn resolve(conn: &Connection, reference: &str, access: &Access) -> Result<Resolved, ReaderError> {
    let reference = reference.trim();
    if let Some(chunk) = chunk_detail(conn, reference)?.filter(|c| access.can_read_path(&c.source.path)) {
        return Ok(Resolved { kind: ResolvedKind::Chunk, chunk: Some(chunk), source: None, lines: None });
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
    let found = match source_detail(conn, path)? {
        Some(source) => Some(source),
        None => match page {
            Some(page) => source_detail(conn, &page)?,
            None => None,
        },
    };
    let Some(source) = found.filter(|s| access.can_read_path(&s.path)) else {
        return Err(ReaderError::NotFound(reference.to_string()));
    };
    let lines = match fragment.and_then(line_range) {
        Some((start, end)) => lines_of(conn, &source, start, end, cited_revision)?,
        None => None,
    };
    Ok(Resolved { kind: ResolvedKind::Source, chunk: None, source: Some(source), lines })
}

/// `L5-L25`, `L5-25` or `L7`: the lines a ref's fragment names.
fn line_range(fragment: &str) -> Option<(u32, u32)> {
    let (start, end) = fragment.split_once('-').unwrap_or((fragment, fragment));
    let start: u32 = start.strip_prefix('L')?.parse().ok()?;
    let end: u32 = end.trim_start_matches('L').parse().ok()?;
    (start >= 1 && end >= start).then_some((start, end))
}

/// Lines `start..=end` of a source, put together from its indexed chunks (each an exact byte range of the
/// source, so overlapping chunks agree); `None` when no chunk holds them.
fn lines_of(
    conn: &Connection,
    source: &SourceDetail,
    start: u32,
    end: u32,
    cited_revision: Option<&str>,
) -> rusqlite::Result<Option<LinesExcerpt>> {
    let chunks: Vec<(u32, u32, u32, String)> = conn
        .prepare(
            "SELECT c.start_offset, c.end_offset, c.start_line, c.text FROM chunks c JOIN sources s ON s.id = c.source_id
             WHERE s.path = ?1 AND c.end_line >= ?2 AND c.start_line <= ?3 ORDER BY c.start_offset",
        )?
        .query_map(params![source.path, start, end], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let Some((_, mut covered_to, first_line, first_text)) = chunks.first().cloned() else {
        return Ok(None);
    };
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
    let Some(from) = from else { return Ok(None) };
    let stale = cited_revision.is_some_and(|cited| !source.revision.starts_with(cited));
    Ok(Some(LinesExcerpt { start_line: from, end_line: to, text: excerpt, revision: source.revision.clone(), stale }))
}

fn chunk_detail(conn: &Connection, id: &str) -> rusqlite::Result<Option<ChunkDetail>> {
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
                source: ResultSource { uri: row.get(4)?, path: row.get(5)?, revision: row.get(6)?, hash: row.get(7)? },
                citation: Citation::from_row(row, 8)?,
                provenance: serde_json::from_str(&row.get::<_, String>(12)?).unwrap_or_default(),
            })
        },
    )
    .optional()
}

fn source_detail(conn: &Connection, path: &str) -> rusqlite::Result<Option<SourceDetail>> {
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
        .prepare_cached("SELECT id, title, start_line, end_line FROM chunks WHERE source_id = ?1 ORDER BY ordinal")?
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

/// What `list` enumerates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    Sources,
    Runs,
    /// Notes added with `knowledge add`, indexed as `knowledge://item/ID`.
    Notes,
    /// Generated concept pages, by slug.
    Pages,
    /// The catalog shards, by section (the root is the section `""`).
    Indexes,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PageItem {
    /// `knowledge://wiki/SLUG`: what `knowledge_get` resolves.
    pub uri: String,
    pub slug: String,
    pub title: String,
    pub section: String,
    /// The page file, relative to the output folder.
    pub path: String,
    pub aliases: Vec<String>,
    /// Sources that mention the concept.
    pub source_count: u64,
    pub summary: String,
    /// Content hash of the page file.
    pub hash: String,
    /// The run that last rendered it.
    pub run_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IndexItem {
    /// `knowledge://index/SECTION`, or `knowledge://index/root`.
    pub uri: String,
    pub section: String,
    /// The Markdown shard, relative to the output folder.
    pub path: String,
    /// The JSON shard; absent for the root.
    pub json_path: Option<String>,
    pub page_count: u64,
    pub run_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceItem {
    pub uri: String,
    pub path: String,
    pub title: String,
    pub source_kind: String,
    pub revision: String,
    pub size: u64,
    pub chunk_count: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunItem {
    pub id: String,
    pub started_at: String,
    pub finished_at: String,
    pub status: String,
    pub tool_version: String,
    /// The commit and CI context the build recorded, when it had one.
    pub vcs: serde_json::Value,
    /// The build's counters, as `knowledge build --json` printed them.
    pub summary: serde_json::Value,
}

/// One page of a listing: `sources` (which holds the notes for kind `notes`) or `runs`, by `kind`. Pass `next_cursor` back to get the next page; it
/// is absent on the last page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Listing {
    pub kind: ListKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<RunItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<Vec<PageItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexes: Option<Vec<IndexItem>>,
    pub next_cursor: Option<String>,
}

/// Lists sources (by path) or runs (newest first), `limit` at a time. The cursor is opaque to callers: it
/// is the key of the last item of the previous page.
pub fn list(
    conn: &Connection,
    kind: ListKind,
    cursor: Option<&str>,
    limit: u32,
    access: &Access,
) -> Result<Listing, ReaderError> {
    let limit = limit.clamp(1, 1000);
    let fetch = i64::from(limit) + 1;
    match kind {
        ListKind::Sources | ListKind::Notes => {
            let after = decode_cursor(cursor, "s:")?.unwrap_or_default();
            let origin = if kind == ListKind::Notes { Origin::Note } else { Origin::File };
            let mut items: Vec<SourceItem> = conn
                .prepare_cached(&format!(
                    "SELECT uri, path, title, kind, revision, size, chunk_count FROM sources
                     WHERE path > ?1 AND {} AND {} ORDER BY path LIMIT ?2",
                    origin.sql_condition("path"),
                    access.source_filter("id")
                ))?
                .query_map(params![after, fetch], |row| {
                    Ok(SourceItem {
                        uri: row.get(0)?,
                        path: row.get(1)?,
                        title: row.get(2)?,
                        source_kind: row.get(3)?,
                        revision: row.get(4)?,
                        size: row.get::<_, i64>(5)?.cast_unsigned(),
                        chunk_count: row.get::<_, i64>(6)?.cast_unsigned(),
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("s:{}", item.path));
            Ok(Listing { kind, sources: Some(items), runs: None, pages: None, indexes: None, next_cursor })
        }
        ListKind::Runs => {
            let before = decode_cursor(cursor, "r:")?;
            let mut items = runs_where(conn, "id < ?1 OR ?1 IS NULL", params![before, fetch], access)?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("r:{}", item.id));
            Ok(Listing { kind, sources: None, runs: Some(items), pages: None, indexes: None, next_cursor })
        }
        // Pages quote only sources every principal may read, so they need no permission filter.
        ListKind::Pages => {
            let after = decode_cursor(cursor, "p:")?.unwrap_or_default();
            let mut items: Vec<PageItem> = conn
                .prepare_cached(
                    "SELECT slug, title, section, path, aliases, source_count, summary, hash, run_id FROM wiki_pages
                     WHERE slug > ?1 ORDER BY slug LIMIT ?2",
                )?
                .query_map(params![after, fetch], |row| {
                    let slug: String = row.get(0)?;
                    Ok(PageItem {
                        uri: SourceRef::page(&slug).path(),
                        slug,
                        title: row.get(1)?,
                        section: row.get(2)?,
                        path: row.get(3)?,
                        aliases: serde_json::from_str(&row.get::<_, String>(4)?).unwrap_or_default(),
                        source_count: row.get::<_, i64>(5)?.cast_unsigned(),
                        summary: row.get(6)?,
                        hash: row.get(7)?,
                        run_id: row.get(8)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("p:{}", item.slug));
            Ok(Listing { kind, sources: None, runs: None, pages: Some(items), indexes: None, next_cursor })
        }
        ListKind::Indexes => {
            let after = decode_cursor(cursor, "i:")?;
            let mut items: Vec<IndexItem> = conn
                .prepare_cached(
                    "SELECT section, path, json_path, page_count, run_id FROM knowledge_indexes
                     WHERE ?1 IS NULL OR section > ?1 ORDER BY section LIMIT ?2",
                )?
                .query_map(params![after, fetch], |row| {
                    let section: String = row.get(0)?;
                    Ok(IndexItem {
                        uri: SourceRef::shard(if section.is_empty() { "root" } else { &section }).path(),
                        section,
                        path: row.get(1)?,
                        json_path: row.get(2)?,
                        page_count: row.get::<_, i64>(3)?.cast_unsigned(),
                        run_id: row.get(4)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let next_cursor = page_cursor(&mut items, limit, |item| format!("i:{}", item.section));
            Ok(Listing { kind, sources: None, runs: None, pages: None, indexes: Some(items), next_cursor })
        }
    }
}

fn decode_cursor(cursor: Option<&str>, prefix: &str) -> Result<Option<String>, ReaderError> {
    match cursor {
        None | Some("") => Ok(None),
        Some(cursor) => cursor
            .strip_prefix(prefix)
            .map(|key| Some(key.to_string()))
            .ok_or_else(|| ReaderError::BadCursor(cursor.to_string())),
    }
}

/// Trims the extra row fetched to learn whether another page exists, and returns the cursor for it.
fn page_cursor<T>(items: &mut Vec<T>, limit: u32, key: impl Fn(&T) -> String) -> Option<String> {
    if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(key)
    } else {
        None
    }
}

/// Runs matching `condition`, newest first. A run's summary counts every source, readable or not, so a
/// principal who cannot read everything sees it redacted.
fn runs_where(
    conn: &Connection,
    condition: &str,
    values: impl rusqlite::Params,
    access: &Access,
) -> rusqlite::Result<Vec<RunItem>> {
    let redact = !access.reads_everything();
    conn.prepare(&format!(
        "SELECT id, started_at, finished_at, status, tool_version, vcs, summary FROM runs
         WHERE kind = 'build' AND ({condition}) ORDER BY id DESC LIMIT ?2"
    ))?
    .query_map(values, |row| {
        Ok(RunItem {
            id: row.get(0)?,
            started_at: row.get(1)?,
            finished_at: row.get(2)?,
            status: row.get(3)?,
            tool_version: row.get(4)?,
            vcs: serde_json::from_str(&row.get::<_, String>(5)?).unwrap_or_default(),
            summary: if redact {
                serde_json::json!({ "redacted": "this build's counters include sources the principal may not read" })
            } else {
                serde_json::from_str(&row.get::<_, String>(6)?).unwrap_or_default()
            },
        })
    })?
    .collect()
}

/// A build and what it changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Change {
    pub run: RunItem,
    pub events: Vec<ChangeEvent>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeEvent {
    /// `source_added`, `source_changed`, `source_removed` or `source_skipped`.
    pub kind: String,
    pub path: String,
    pub old_revision: Option<String>,
    pub new_revision: Option<String>,
    pub detail: Option<String>,
}

/// The last `runs` builds that changed the index, newest first, or every build since `since` (a run id,
/// or an RFC 3339 time compared with the build's start).
pub fn recent_changes(
    conn: &Connection,
    runs: u32,
    since: Option<&str>,
    access: &Access,
) -> Result<Vec<Change>, ReaderError> {
    let limit = i64::from(runs.clamp(1, 1000));
    let found = match since {
        Some(since) => runs_where(conn, "id > ?1 OR started_at > ?1", params![since, limit], access)?,
        None => runs_where(conn, "?1 IS NULL", params![None::<String>, limit], access)?,
    };
    let mut statement = conn.prepare_cached(
        "SELECT kind, path, old_revision, new_revision, detail, labels FROM run_events WHERE run_id = ?1 ORDER BY seq",
    )?;
    found
        .into_iter()
        .map(|run| {
            let events = statement
                .query_map([&run.id], |row| {
                    let event = ChangeEvent {
                        kind: row.get(0)?,
                        path: row.get(1)?,
                        old_revision: row.get(2)?,
                        new_revision: row.get(3)?,
                        detail: row.get(4)?,
                    };
                    Ok((event, row.get::<_, String>(5)?))
                })?
                .filter(|row| {
                    row.as_ref().map_or(true, |(event, labels)| {
                        access.can_read_labels(labels) && access.can_read_path(&event.path)
                    })
                })
                .map(|row| row.map(|(event, _)| event))
                .collect::<rusqlite::Result<_>>()?;
            Ok(Change { run, events })
        })
        .collect()
}

/// The lint findings the last writing build stored.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LintResults {
    /// The build that computed them; `None` when no build stored any (`[lint] on_build = false`, or an index
    /// from before the first such build).
    pub run_id: Option<String>,
    pub findings: Vec<LintFinding>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LintFinding {
    pub path: String,
    pub line: u32,
    pub column: u32,
    /// `error`, `warning` or `info`.
    pub severity: String,
    pub code: String,
    pub message: String,
}

/// Stored lint findings at or under `paths` (all when empty), at `min_severity` or worse, in path order.
pub fn lint_results(
    conn: &Connection,
    paths: &[String],
    min_severity: crate::lint::Severity,
    access: &Access,
) -> Result<LintResults, ReaderError> {
    let mut findings: Vec<LintFinding> = conn
        .prepare_cached(
            "SELECT path, line, col, severity, code, message FROM lint_results ORDER BY path, line, col, code",
        )?
        .query_map([], |row| {
            Ok(LintFinding {
                path: row.get(0)?,
                line: row.get(1)?,
                column: row.get(2)?,
                severity: row.get(3)?,
                code: row.get(4)?,
                message: row.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    findings.retain(|f| {
        access.can_read_path(&f.path)
            && !access.mentions_hidden(&f.message)
            && crate::lint::Severity::parse(&f.severity).is_some_and(|severity| severity <= min_severity)
            && (paths.is_empty() || paths.iter().any(|prefix| crate::lint::is_at_or_under(&f.path, prefix)))
    });
    let run_id = crate::store::meta(conn, "lint_run")?.filter(|id| !id.is_empty());
    Ok(LintResults { run_id, findings })
}

/// Counts and the state of the index.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Stats {
    pub format_version: String,
    /// Sources and notes (generated pages are counted in `pages`).
    pub sources: u64,
    /// Chunks of sources, notes and pages.
    pub chunks: u64,
    /// Generated concept pages.
    pub pages: u64,
    pub runs: u64,
    pub last_run: Option<RunItem>,
    /// Which search modes work on this index.
    pub search_modes: Vec<&'static str>,
    /// No embeddings generation exists (semantic and hybrid searches fall back to keyword), or chunks are
    /// still waiting for their embeddings.
    pub degraded: bool,
    pub degraded_reason: Option<String>,
    /// The embeddings generation searches use, if any.
    pub embeddings_model: Option<String>,
}

/// Counts of what `access` may read.
pub fn stats(conn: &Connection, access: &Access) -> Result<Stats, ReaderError> {
    let count = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, i64>(0)).map(i64::cast_unsigned);
    let format_version: String =
        conn.query_row("SELECT value FROM meta WHERE key = 'format_version'", [], |row| row.get(0))?;
    let model = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let pending: i64 = conn.query_row(
        "SELECT count(*) FROM vector_index_entries WHERE model = (SELECT value FROM meta WHERE key = 'embeddings_model') AND status = 'pending'",
        [],
        |row| row.get(0),
    )?;
    Ok(Stats {
        format_version,
        sources: count(&format!(
            "SELECT count(*) FROM sources WHERE {} AND {}",
            crate::store::not_generated(),
            access.source_filter("id")
        ))?,
        chunks: count(&format!("SELECT count(*) FROM chunks WHERE {}", access.source_filter("source_id")))?,
        pages: count("SELECT count(*) FROM wiki_pages")?,
        runs: count("SELECT count(*) FROM runs WHERE kind = 'build'")?,
        last_run: runs_where(conn, "?1 IS NULL", params![None::<String>, 1], access)?.into_iter().next(),
        search_modes: if model.is_some() { vec!["keyword", "semantic", "hybrid"] } else { vec!["keyword"] },
        degraded: model.is_none() || pending > 0,
        degraded_reason: match (&model, pending) {
            (None, _) => Some(crate::retrieval::search::NO_EMBEDDINGS.to_string()),
            (Some(_), 0) => None,
            (Some(_), n) => Some(format!("{n} chunks are waiting for their embeddings; the next build retries them")),
        },
        embeddings_model: model,
    })
}
