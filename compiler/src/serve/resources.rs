//! The MCP resources: the project's (config, storage, schema, sources, runs, pages, shards, open files,
//! decisions) and one source, page, shard or run by URI, read from the local index or, for sources and
//! runs, from a Postgres store.

use rusqlite::Connection;

use super::{ProjectContext, ReadPool, StoreSearch};
use crate::retrieval::access::Access;
use crate::retrieval::reader::{self, ListKind, Resolved};
use crate::retrieval::search;
use crate::store;
use knowledge_queries::SourceRef;

pub(super) const PROJECT_RESOURCES: [(&str, &str, &str, &str); 9] = [
    ("knowledge://project/config", "config", "application/toml", "The kc.toml the index was built with."),
    ("knowledge://project/storage", "storage", "application/json", "Where the index is and its size and format."),
    ("knowledge://project/schema", "schema", "application/sql", "The SQL schema of the index."),
    ("knowledge://project/sources", "sources", "application/json", "The first 1000 indexed sources."),
    ("knowledge://project/runs", "runs", "application/json", "The last 20 builds and what they changed."),
    ("knowledge://project/wiki/pages", "wiki pages", "application/json", "The first 1000 generated concept pages."),
    ("knowledge://project/indexes", "indexes", "application/json", "The catalog shards: the root and one per section."),
    (
        "knowledge://project/open-files",
        "open files",
        "application/json",
        "The open-files manifest's files and what of each is ingested and indexed.",
    ),
    (
        "knowledge://project/decisions",
        "decisions",
        "application/json",
        "The last 100 purpose decisions `knowledge source resolve --purpose` recorded.",
    ),
];

pub(super) enum ResourceError {
    NotFound(String),
    Failed(String),
}

/// Whether a server with a Postgres store reads the resource `uri` there: sources and builds. The rest
/// (the config, pages, shards, the storage) belong to the local output folder.
pub(super) fn store_resource(uri: &str) -> bool {
    matches!(uri, "knowledge://project/sources" | "knowledge://project/runs")
        || uri.starts_with("knowledge://source/")
        || uri.starts_with("knowledge://run/")
}

/// A [`store_resource`]'s MIME type and text, read from the store's projects.
pub(super) fn read_store_resource(
    store: &StoreSearch,
    principal: Option<&str>,
    uri: &str,
) -> Result<(&'static str, String), ResourceError> {
    let read = store.with(|pg, projects| {
        Ok(match uri {
            "knowledge://project/sources" => {
                Some(to_json(&reader::list_postgres(pg, projects, ListKind::Sources, None, 1000, principal)?))
            }
            "knowledge://project/runs" => {
                Some(to_json(&reader::recent_changes_postgres(pg, projects, 20, None, principal)?))
            }
            _ => match (uri.strip_prefix("knowledge://source/"), uri.strip_prefix("knowledge://run/")) {
                (Some(path), _) => match reader::resolve_postgres(pg, projects, path, principal) {
                    Ok(Resolved { source: Some(source), .. }) => Some(to_json(&source)),
                    Ok(_) | Err(search::StoreReadError::Reader(reader::ReaderError::NotFound(_))) => None,
                    Err(error) => return Err(error),
                },
                (_, Some(id)) => reader::recent_changes_postgres(pg, projects, 1000, None, principal)?
                    .into_iter()
                    .find(|change| change.run.id == id)
                    .map(|change| to_json(&change)),
                _ => None,
            },
        })
    });
    match read {
        Ok(Some(text)) => Ok(("application/json", text?)),
        Ok(None) => Err(ResourceError::NotFound(format!("no resource `{uri}` in the store"))),
        Err(error) => Err(ResourceError::Failed(error.to_string())),
    }
}

/// A resource's MIME type and text.
pub(super) fn read_resource(
    pool: &ReadPool,
    principal: Option<&str>,
    project: &ProjectContext,
    uri: &str,
) -> Result<(&'static str, String), ResourceError> {
    pool.with(|conn| {
        let access = Access::load(conn, principal).map_err(|e| ResourceError::Failed(crate::error_chain(&e)))?;
        // `with` answered, so the pool has an index.
        resource_text(conn, &access, pool.index.as_deref().unwrap_or(std::path::Path::new("")), project, uri)
    })
    .map_err(|error| ResourceError::Failed(error.to_string()))?
}

fn resource_text(
    conn: &Connection,
    access: &Access,
    index: &std::path::Path,
    project: &ProjectContext,
    uri: &str,
) -> Result<(&'static str, String), ResourceError> {
    let failed = |e: &dyn std::error::Error| ResourceError::Failed(crate::error_chain(e));
    match uri {
        "knowledge://project/config" => {
            let config = store::meta(conn, "config").map_err(|e| failed(&e))?.unwrap_or_default();
            Ok(("application/toml", config))
        }
        "knowledge://project/storage" => {
            let storage = reader::storage(conn, index, access).map_err(|e| failed(&e))?;
            Ok(("application/json", to_json(&storage)?))
        }
        "knowledge://project/decisions" => {
            let decisions = reader::decisions(conn, access).map_err(|e| failed(&e))?;
            Ok(("application/json", to_json(&decisions)?))
        }
        "knowledge://project/open-files" => {
            let files = open_files(conn, access, project)?;
            Ok(("application/json", to_json(&files)?))
        }
        "knowledge://project/schema" => Ok(("application/sql", store::SCHEMA.to_string())),
        "knowledge://project/sources" => {
            let listing = reader::list(conn, ListKind::Sources, None, 1000, access).map_err(|e| failed(&e))?;
            Ok(("application/json", to_json(&listing)?))
        }
        "knowledge://project/wiki/pages" => {
            let listing = reader::list(conn, ListKind::Pages, None, 1000, access).map_err(|e| failed(&e))?;
            Ok(("application/json", to_json(&listing)?))
        }
        "knowledge://project/indexes" => {
            let listing = reader::list(conn, ListKind::Indexes, None, 1000, access).map_err(|e| failed(&e))?;
            Ok(("application/json", to_json(&listing)?))
        }
        "knowledge://project/runs" => {
            let changes = reader::recent_changes(conn, 20, None, access).map_err(|e| failed(&e))?;
            Ok(("application/json", to_json(&changes)?))
        }
        _ => template_resource(conn, access, uri),
    }
}

/// A resource of a template (`knowledge://source/{path}`, `item/{id}`, `decision/{run_id}`, `run/{id}`, a
/// page or a shard).
fn template_resource(conn: &Connection, access: &Access, uri: &str) -> Result<(&'static str, String), ResourceError> {
    let failed = |e: &dyn std::error::Error| ResourceError::Failed(crate::error_chain(e));
    if let Some(path) = uri.strip_prefix("knowledge://source/") {
        match reader::resolve(conn, path, access) {
            Ok(Resolved { source: Some(source), .. }) => Ok(("application/json", to_json(&source)?)),
            _ => Err(ResourceError::NotFound(format!("no indexed source `{path}`"))),
        }
    } else if let Some(slug) = SourceRef::from_path(uri).page_slug() {
        store::page_markdown(conn, slug)
            .map_err(|e| failed(&e))?
            .map(|markdown| ("text/markdown", markdown))
            .ok_or_else(|| ResourceError::NotFound(format!("no generated page `{slug}`")))
    } else if let Some((kind, text)) = crate::wiki::declared_artifact(conn, uri).map_err(|e| failed(&e))? {
        // The index's shards (`knowledge://index/{section}`, their `.json`), the root, `llms.txt`, the schema.
        Ok((kind.mime, text))
    } else if let Some(section) = SourceRef::from_path(uri).shard_section() {
        Err(ResourceError::NotFound(format!("no index shard `{section}`")))
    } else if let Some(id) = uri.strip_prefix("knowledge://item/") {
        // A note is a source whose path is its URI.
        match reader::resolve(conn, uri, access) {
            Ok(Resolved { source: Some(source), .. }) => Ok(("application/json", to_json(&source)?)),
            _ => Err(ResourceError::NotFound(format!("no indexed note `{id}`"))),
        }
    } else if let Some(id) = uri.strip_prefix("knowledge://decision/") {
        match reader::decision(conn, id, access) {
            Ok(decision) => Ok(("application/json", to_json(&decision)?)),
            Err(reader::ReaderError::NotFound(message)) => Err(ResourceError::NotFound(message)),
            Err(error) => Err(failed(&error)),
        }
    } else if let Some(id) = uri.strip_prefix("knowledge://run/") {
        let change = reader::recent_changes(conn, 1000, None, access)
            .map_err(|e| failed(&e))?
            .into_iter()
            .find(|change| change.run.id == id)
            .ok_or_else(|| ResourceError::NotFound(format!("no build `{id}`")))?;
        Ok(("application/json", to_json(&change)?))
    } else {
        Err(ResourceError::NotFound(format!("no resource `{uri}`")))
    }
}

/// How many resources one `resources/list` answer holds at most.
pub(super) const RESOURCES_PER_PAGE: usize = 500;

/// A `resources/list` cursor this server could not have given.
#[derive(Debug, thiserror::Error)]
#[error("not a cursor this server gave: {0:?}")]
pub(super) struct ForeignCursor(String);

/// The page of `items` a cursor asks for (none: the first), and the cursor of the next page when there is
/// one. A cursor is the number of items before its page, as the previous answer gave it.
pub(super) fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ForeignCursor> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor.parse::<usize>().map_err(|_| ForeignCursor(cursor.to_string()))?,
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items.into_iter().skip(start).take(end.saturating_sub(start)).collect(), next))
}

/// The files of the declared kinds the index holds (`knowledge://llms.txt`, `knowledge://schema/v1`), each a
/// resource by its uri: (uri, its kind).
pub(super) fn declared_resources(
    pool: &ReadPool,
) -> Result<Vec<(String, &'static knowledge_queries::wiki::ArtifactKind)>, ResourceError> {
    pool.with(|conn| {
        let mut listed = Vec::new();
        for kind in knowledge_queries::wiki::DECLARED_KINDS {
            let stored =
                store::artifacts_of_kind(conn, kind.name).map_err(|e| ResourceError::Failed(crate::error_chain(&e)))?;
            listed.extend(stored.into_keys().map(|uri| (uri, kind)));
        }
        Ok(listed)
    })
    .map_err(|error| ResourceError::Failed(error.to_string()))?
}

/// The open-files manifest's files (not their text), each with what ingest stored of it and what the index
/// holds: `not_ingested`, `ingested` (not built yet, or a newer revision than the index holds) or `indexed`.
/// A file whose indexed or ingested labels the principal may not read is left out.
fn open_files(
    conn: &Connection,
    access: &Access,
    project: &ProjectContext,
) -> Result<serde_json::Value, ResourceError> {
    let Some(manifest) = &project.open_files_manifest else {
        return Ok(serde_json::json!({ "manifest": null, "files": [] }));
    };
    let text = std::fs::read_to_string(manifest)
        .map_err(|e| ResourceError::Failed(format!("cannot read `{}`: {e}", manifest.display())))?;
    let stored = project
        .output_dir
        .as_deref()
        .map(crate::sources::ingested::load)
        .transpose()
        .map_err(|e| ResourceError::Failed(crate::error_chain(&e)))?
        .unwrap_or_default();
    let mut files = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            ResourceError::Failed(format!("`{}` line {}: not an open-files entry: {e}", manifest.display(), index + 1))
        })?;
        let id = entry["id"].as_str().unwrap_or_default();
        let reference = format!("open-files://{id}");
        let ingested = stored.iter().find(|s| s.reference == reference);
        let labels = ingested.map_or_else(|| project.ingest_labels.join(","), |s| s.labels.join(","));
        let indexed = crate::store::source_revision_and_labels(conn, &reference).ok().flatten();
        let readable = access.can_read_labels(&labels)
            && indexed.as_ref().is_none_or(|(_, labels)| access.can_read_labels(labels))
            && access.can_read_path(&reference);
        if !readable {
            continue;
        }
        let status = match (ingested, &indexed) {
            (None, _) => "not_ingested",
            (Some(s), Some((revision, _))) if *revision == s.hash => "indexed",
            (Some(_), _) => "ingested",
        };
        files.push(serde_json::json!({
            "ref": reference,
            "id": id,
            "revision_id": entry["revision_id"],
            "hash": entry["hash"],
            "mime": entry["mime"],
            "title": entry["title"],
            "status": status,
            "ingested_revision_id": ingested.map(|s| s.revision_id.clone()),
        }));
    }
    Ok(serde_json::json!({ "manifest": manifest.display().to_string(), "files": files }))
}

fn to_json(value: &impl serde::Serialize) -> Result<String, ResourceError> {
    serde_json::to_string_pretty(value).map_err(|e| ResourceError::Failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn resources_are_listed_a_page_at_a_time_and_a_cursor_is_checked() {
        let items: Vec<u32> = (0..1_203).collect();
        let (first, next) = page(items.clone(), None, 500).unwrap();
        assert_eq!((first.len(), first[0], next.as_deref()), (500, 0, Some("500")));
        let (second, next) = page(items.clone(), next.as_deref(), 500).unwrap();
        assert_eq!((second[0], second[499], next.as_deref()), (500, 999, Some("1000")));
        let (last, next) = page(items.clone(), next.as_deref(), 500).unwrap();
        assert_eq!((last.len(), last[202], next), (203, 1_202, None));
        assert_eq!(page(items.clone(), Some("5000"), 500).unwrap(), (Vec::new(), None), "past the end: empty");
        for hostile in ["-1", "abc", "", "18446744073709551616", "1e3"] {
            assert!(page(items.clone(), Some(hostile), 500).is_err(), "{hostile:?}");
        }
        let (all, next) = page(vec![1, 2], None, 500).unwrap();
        assert_eq!((all, next), (vec![1, 2], None), "one page: no cursor");
    }
}
