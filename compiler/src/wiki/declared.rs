//! The artifact driver for every declared kind (`knowledge_queries::wiki::DECLARED_KINDS`): what the query
//! graph derives of each kind is compared with the catalog by hash, and each artifact that differs is
//! stored with its text, counted and logged, and handed to the file sync; one the graph no longer derives
//! is removed. The file sync and the remote store follow the catalog, for these kinds as for any.

use knowledge_queries::wiki::{DECLARED_KINDS, DerivedFile, PageIndex};

use super::*;

/// Stores every declared kind's artifacts that differ from the catalog's and removes those no longer
/// derived. With `index` `None` (the wiki is off) nothing is derived, so every one goes.
pub(super) fn compile_declared(
    conn: &Connection,
    db: &KnowledgeDb,
    index: Option<PageIndex>,
    context: &StageContext<'_>,
    stage: &mut Stage,
) -> Result<(), ShardError> {
    for kind in DECLARED_KINDS {
        let derived = match index {
            Some(index) => (kind.derive)(db, index).map_err(ShardError::Template)?,
            None => Vec::new(),
        };
        let mut stored = store::artifacts_of_kind(conn, kind.name)?;
        let counters = stage.declared.entry(kind.name.to_string()).or_default();
        for DerivedFile { artifact, text } in derived {
            let before = stored.remove(&artifact.uri);
            if !context.full && before.as_ref().is_some_and(|before| before.hash == artifact.hash) {
                continue;
            }
            store::upsert_artifact_with_text(conn, &artifact, &text, context.run_id)?;
            counters.rendered += 1;
            stage.changes.push(ArtifactChange {
                artifact: artifact.path.clone(),
                kind: kind.name,
                old_hash: before.map(|before| before.hash),
                new_hash: Some(artifact.hash.clone()),
                sources: Vec::new(),
            });
            stage.fresh.insert(artifact.path, text);
        }
        for (uri, before) in stored {
            store::delete_artifact(conn, &uri)?;
            counters.deleted += 1;
            stage.changes.push(ArtifactChange {
                artifact: before.path,
                kind: kind.name,
                old_hash: Some(before.hash),
                new_hash: None,
                sources: Vec::new(),
            });
        }
    }
    Ok(())
}
