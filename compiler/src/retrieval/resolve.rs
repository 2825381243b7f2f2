//! `knowledge source resolve REF --purpose P` and the MCP tool `knowledge_resolve_source`: may this source
//! be used for this purpose, and where does it come from? The answer carries the design's provenance
//! object (owner, ref, kind, revision, upstream revision id, resolver, read-only, citation required,
//! stale status). The command line records each decision in the run ledger; the server records nothing.

use std::path::Path;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use knowledge_queries::{Origin, SourceRef};

use crate::config::ingest::PURPOSES;
use crate::retrieval::access::{Access, AccessError};
use crate::retrieval::reader::{self, ReaderError};

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown purpose `{name}`; purposes are {}", PURPOSES.join(", "))]
    Purpose { name: String },
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error(transparent)]
    Reader(#[from] ReaderError),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Whether a source may be used for a purpose, and its provenance.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceDecision {
    /// The ref as asked.
    #[serde(rename = "ref")]
    pub reference: String,
    pub purpose: String,
    pub allowed: bool,
    pub reason: String,
    pub provenance: SourceProvenance,
}

/// Where a source comes from (docs/schema.md, `chunk_provenance`, for the same fields on a chunk).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceProvenance {
    pub source_owner: String,
    pub source_ref: String,
    pub source_kind: String,
    /// The indexed revision: the content hash of the text the index holds.
    pub revision: String,
    /// The revision upstream gave (an ETag, a manifest's revision id); a project file's content hash.
    pub revision_id: String,
    /// `project`, `knowledge`, `file`, `https`, `s3`, `open-files` or `web`.
    pub resolver: String,
    pub read_only: bool,
    pub citation_required: bool,
    /// `current` (what the index holds is the source as it is now), `changed` (edited or re-ingested since
    /// the last build), `missing` (gone since), or `unknown` (the project is not at hand to compare).
    pub stale_status: String,
    /// The path the index stores.
    pub path: String,
}

/// Decides whether `reference` may be used for `purpose` by `principal`. A source the principal may not
/// read resolves as missing, as everywhere. `project`: the project root and output folder, to tell the
/// stale status; without them it is `unknown`.
pub fn decide(
    conn: &Connection,
    reference: &str,
    principal: Option<&str>,
    purpose: &str,
    project: Option<(&Path, &Path)>,
) -> Result<SourceDecision, ResolveError> {
    if !PURPOSES.contains(&purpose) {
        return Err(ResolveError::Purpose { name: purpose.to_string() });
    }
    let grants = Access::load_for(conn, principal, None)?;
    let resolved = reader::resolve(conn, reference, &grants)?;
    let path = match (&resolved.chunk, &resolved.source) {
        (Some(chunk), _) => chunk.source.path.clone(),
        (None, Some(source)) => source.path.clone(),
        (None, None) => return Err(ReaderError::NotFound(reference.to_string()).into()),
    };
    let row =
        crate::store::source_provenance(conn, &path)?.ok_or_else(|| ReaderError::NotFound(reference.to_string()))?;
    let crate::store::SourceProvenance { uri, kind, revision, labels, resolver, owner, revision_id } = row;
    let origin = SourceRef::from_path(&path).origin();
    let project_owner = || crate::store::meta(conn, "source_owner").ok().flatten().unwrap_or_default();
    let (resolver, owner, revision_id) = match origin {
        Origin::External => {
            (resolver.unwrap_or_default(), owner.unwrap_or_default(), revision_id.unwrap_or_else(|| revision.clone()))
        }
        Origin::File => ("project".to_string(), project_owner(), revision.clone()),
        Origin::Note | Origin::Page | Origin::Shard => ("knowledge".to_string(), project_owner(), revision.clone()),
    };
    let deny = crate::retrieval::access::denied_labels(conn, purpose)?;
    let denied = labels.split(',').filter(|l| !l.is_empty()).find(|label| deny.iter().any(|d| d == label));
    let (allowed, reason) = match denied {
        Some(label) => (false, format!("labelled `{label}`, which `[permissions.purposes.{purpose}]` denies")),
        None if labels.is_empty() => (true, "unlabelled".to_string()),
        None => (true, format!("labels `{labels}`: none is denied to {purpose}")),
    };
    let stale_status = project.map_or("unknown", |(root, output_dir)| stale_status(root, output_dir, &path, &revision));
    Ok(SourceDecision {
        reference: reference.to_string(),
        purpose: purpose.to_string(),
        allowed,
        reason,
        provenance: SourceProvenance {
            source_owner: owner,
            source_ref: uri,
            source_kind: kind,
            revision,
            revision_id,
            resolver,
            read_only: true,
            citation_required: true,
            stale_status: stale_status.to_string(),
            path,
        },
    })
}

/// Compares what the index holds with the source as it is now: the file in the tree, or the text ingest
/// stored. Read-only; derived sources (notes, pages, shards) are as current as their build.
fn stale_status(root: &Path, output_dir: &Path, path: &str, revision: &str) -> &'static str {
    let current = match SourceRef::from_path(path).origin() {
        Origin::File => std::fs::read(root.join(path)).ok(),
        Origin::External => crate::sources::ingested::load(output_dir)
            .ok()
            .and_then(|list| list.into_iter().find(|s| s.reference == path))
            .and_then(|source| std::fs::read(source.text_path(output_dir).ok()?).ok()),
        Origin::Note | Origin::Page | Origin::Shard => return "current",
    };
    match current {
        None => "missing",
        Some(bytes) if knowledge_queries::content_hash(&bytes) == revision => "current",
        Some(_) => "changed",
    }
}
