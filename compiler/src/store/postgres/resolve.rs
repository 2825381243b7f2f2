//! Resolving refs over the Postgres store: the same chunk and source details as the SQLite index's
//! `resolve.rs`, each naming its project. Provenance is put together from the same columns the SQLite
//! index's `chunk_provenance` view reads.

use knowledge_queries::{Origin, SourceRef};
use postgres::Row;
use serde_json::{Value, json};

use super::PgStore;
use crate::store::{Backlink, ChunkDetail, ChunkSummary, Citation, LineChunk, ResultSource, SourceDetail};

/// The reads resolving a ref makes in `projects` of a store.
pub struct PgResolve<'a> {
    pub store: &'a mut PgStore,
    projects: Vec<String>,
    /// The project of the source `source_detail` last found, whose lines `line_chunks` then reads.
    found_in: Option<String>,
}

/// The design's provenance object, as the SQLite index's `chunk_provenance` view makes it: an ingested
/// source (its path a ref such as `https://…`) takes its owner, resolver and upstream revision from its
/// front matter; a project file's resolver is `project`, a generated one's `knowledge`.
fn provenance(row: &Row, outline: &Value, owner: Option<&str>) -> Value {
    let (uri, path, revision): (String, String, String) = (row.get(4), row.get(5), row.get(6));
    let (start, end, first, last): (i32, i32, i32, i32) = (row.get(8), row.get(9), row.get(10), row.get(11));
    let current: String = row.get(14);
    let external = path.contains("://") && !path.starts_with("knowledge://");
    let front_matter = |key: &str| outline["front_matter"][key].clone();
    json!({
        "source_owner": if external { front_matter("source_owner") } else { json!(owner) },
        "resolver": if external { front_matter("resolver") } else if path.starts_with("knowledge://") { json!("knowledge") } else { json!("project") },
        "revision_id": if external { front_matter("revision_id") } else { json!(revision) },
        "source_ref": uri,
        "source_uri": format!("{uri}#L{first}-L{last}"),
        "source_kind": row.get::<_, String>(13),
        "revision": revision,
        "hash": row.get::<_, String>(7),
        "offsets": {"start": start, "end": end},
        "lines": {"start": first, "end": last},
        "read_only": true,
        "citation_required": true,
        "stale": revision != current,
    })
}

/// An `INTEGER` column as the unsigned number the answers hold.
pub(crate) fn number(row: &Row, at: usize) -> u32 {
    u32::try_from(row.get::<_, i32>(at)).unwrap_or(0)
}

impl<'a> PgResolve<'a> {
    #[must_use]
    pub fn new(store: &'a mut PgStore, projects: Vec<String>) -> PgResolve<'a> {
        PgResolve { store, projects, found_in: None }
    }

    /// The chunk `id` in the first project holding it.
    pub fn chunk_detail(&mut self, id: &str) -> Result<Option<ChunkDetail>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT c.id, c.title, c.heading_path, c.text, s.uri, s.path, c.revision, c.hash, c.start_offset,
                    c.end_offset, c.start_line, c.end_line, s.project, s.kind, s.revision, s.outline,
                    p.meta->>'source_owner'
             FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
                  JOIN knowledge_projects p ON p.project = s.project
             WHERE c.id = $1 AND c.project = ANY($2) ORDER BY array_position($2, c.project) LIMIT 1",
            &[&id, &self.projects],
        )?;
        let Some(row) = rows.first() else { return Ok(None) };
        let outline: Value = serde_json::from_str(row.get::<_, &str>(15)).unwrap_or_default();
        Ok(Some(ChunkDetail {
            id: row.get(0),
            title: row.get(1),
            heading_path: serde_json::from_str(row.get::<_, &str>(2)).unwrap_or_default(),
            text: row.get(3),
            source: ResultSource {
                uri: row.get(4),
                path: row.get(5),
                revision: row.get(6),
                hash: row.get(7),
                project: Some(row.get(12)),
            },
            citation: Citation {
                start_offset: number(row, 8),
                end_offset: number(row, 9),
                start_line: number(row, 10),
                end_line: number(row, 11),
            },
            provenance: provenance(row, &outline, row.get(16)),
        }))
    }

    /// The source at `path` in the first project holding it, with its chunks and either its backlinks (a
    /// page) or the pages citing it.
    pub fn source_detail(&mut self, path: &str) -> Result<Option<SourceDetail>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT id, uri, path, kind, mime, size, revision, title, outline, indexed_run, project
             FROM knowledge_sources WHERE path = $1 AND project = ANY($2) ORDER BY array_position($2, project) LIMIT 1",
            &[&path, &self.projects],
        )?;
        let Some(row) = rows.first() else { return Ok(None) };
        let (id, project): (i64, String) = (row.get(0), row.get(10));
        self.found_in = Some(project.clone());
        let mut detail = SourceDetail {
            uri: row.get(1),
            path: row.get(2),
            source_kind: row.get(3),
            mime: row.get(4),
            size: row.get::<_, i64>(5).cast_unsigned(),
            revision: row.get(6),
            title: row.get(7),
            outline: serde_json::from_str(row.get::<_, &str>(8)).unwrap_or_default(),
            indexed_run: row.get(9),
            chunks: Vec::new(),
            backlinks: Vec::new(),
            cited_by: Vec::new(),
        };
        detail.chunks = self
            .store
            .rows(
                "SELECT id, title, start_line, end_line FROM knowledge_chunks
                 WHERE source_id = $1 AND entity IS NULL ORDER BY ordinal",
                &[&id],
            )?
            .iter()
            .map(|row| ChunkSummary {
                id: row.get(0),
                title: row.get(1),
                start_line: number(row, 2),
                end_line: number(row, 3),
            })
            .collect();
        if let Some(slug) = SourceRef::from_path(&detail.path).page_slug() {
            detail.backlinks = self
                .store
                .rows(
                    "SELECT from_ref, line, kind FROM knowledge_backlinks WHERE project = $1 AND page = $2
                     ORDER BY kind, from_ref, line",
                    &[&project, &slug],
                )?
                .iter()
                .map(|row| Backlink { from_ref: row.get(0), line: number(row, 1), kind: row.get(2) })
                .collect();
        } else {
            detail.cited_by = self
                .store
                .rows(
                    "SELECT DISTINCT $3::text || page FROM knowledge_citations
                     WHERE project = $1 AND source_ref = $2 ORDER BY 1",
                    &[&project, &detail.uri, &Origin::Page.prefix()],
                )?
                .iter()
                .map(|row| row.get(0))
                .collect();
        }
        Ok(Some(detail))
    }

    /// The text chunks of the source `source_detail` last found that touch lines `start..=end`, by offset.
    pub fn line_chunks(&mut self, path: &str, start: u32, end: u32) -> Result<Vec<LineChunk>, postgres::Error> {
        let (start, end) = (i32::try_from(start).unwrap_or(i32::MAX), i32::try_from(end).unwrap_or(i32::MAX));
        let rows = self.store.rows(
            "SELECT c.start_offset, c.end_offset, c.start_line, c.text FROM knowledge_chunks c
             WHERE c.project = $1 AND c.path = $2 AND c.end_line >= $3 AND c.start_line <= $4 AND c.entity IS NULL
             ORDER BY c.start_offset",
            &[&self.found_in.clone().unwrap_or_default(), &path, &start, &end],
        )?;
        Ok(rows.iter().map(|row| (number(row, 0), number(row, 1), number(row, 2), row.get(3))).collect())
    }
}
