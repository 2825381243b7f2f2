//! The artifact driver for every declared kind (`knowledge_queries::wiki::DECLARED_KINDS`): each artifact
//! the query graph names is compared with the catalog by its stamp, and each that differs is derived,
//! stored (its catalog row, its text where the index keeps it, its source row where it is a source),
//! counted, logged and handed to the file sync; one the graph no longer names is removed. The file sync
//! and the remote store follow the catalog, for these kinds as for any.

use knowledge_queries::wiki::{
    ArtifactKind, Counted, DECLARED_KINDS, DerivedFile, FileSource, KeptText, PageIndex, Stamped, declared_kind,
};

use super::*;
use crate::store::StoredArtifact;

/// Stores every declared kind's artifacts whose stamp differs from the catalog's and removes those no
/// longer derived. With `index` `None` (the wiki is off) nothing is derived, so every one goes.
pub(super) fn compile_declared(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    index: Option<PageIndex>,
    context: &StageContext<'_>,
    stage: &mut Stage,
) -> Result<(), ShardError> {
    for kind in DECLARED_KINDS {
        let mut stored = store::artifacts_of_kind(conn, kind.name)?;
        if let Some(index) = index {
            let stale = stale_artifacts(db, index, kind, &mut stored, context.full)?;
            if kind.reads_rows {
                for (stamped, _) in &stale {
                    read_section_rows(conn, db, inputs, &stamped.key)?;
                }
            }
            for (stamped, before) in stale {
                let file = (kind.derive)(&*db, index, &stamped.key).map_err(ShardError::Template)?;
                store_file(conn, kind, (&stamped.stamp, file), before, context, stage)?;
            }
        }
        // What is left of the catalog's artifacts of the kind, the graph no longer derives.
        for (uri, before) in stored {
            remove_file(conn, kind, &uri, before, stage)?;
        }
    }
    Ok(())
}

/// The artifacts of `kind` the graph derives whose stamp differs from the catalog's (all of them with
/// `full`), each with what the catalog held; every derived artifact is taken out of `stored`.
fn stale_artifacts(
    db: &KnowledgeDb,
    index: PageIndex,
    kind: &ArtifactKind,
    stored: &mut BTreeMap<String, StoredArtifact>,
    full: bool,
) -> Result<Vec<(Stamped, Option<StoredArtifact>)>, ShardError> {
    let mut stale = Vec::new();
    for stamped in (kind.stamps)(db, index).map_err(ShardError::Template)? {
        let before = stored.remove(&stamped.uri);
        if full || before.as_ref().is_none_or(|before| before.stamp != stamped.stamp) {
            stale.push((stamped, before));
        }
    }
    Ok(stale)
}

/// The text of a declared kind's artifact at `uri`, as the index keeps it or makes it from its rows.
pub(super) fn kept_text(conn: &Connection, kind: &ArtifactKind, uri: &str) -> rusqlite::Result<Option<String>> {
    match kind.kept {
        KeptText::Stored => store::artifact_text(conn, uri),
        KeptText::SectionRows => {
            let section = SourceRef::from_path(uri).shard_section().and_then(|name| name.strip_suffix(".json"));
            section.map_or(Ok(None), |section| super::shards::stored_shard_json(conn, section))
        }
    }
}

/// An artifact of a declared kind by its uri (`knowledge://llms.txt`, `knowledge://index/SECTION.json`): its
/// kind and its text. `None` when the catalog holds no such artifact.
pub fn declared_artifact(conn: &Connection, uri: &str) -> rusqlite::Result<Option<(&'static ArtifactKind, String)>> {
    let Some(kind) = store::artifact_kind(conn, uri)?.and_then(|name| declared_kind(&name)) else { return Ok(None) };
    Ok(kept_text(conn, kind, uri)?.map(|text| (kind, text)))
}

/// The summary's counters a kind's files count under.
pub(super) fn counters<'a>(
    kind: &ArtifactKind,
    shards: &'a mut ArtifactCounters,
    declared: &'a mut BTreeMap<String, ArtifactCounters>,
) -> &'a mut ArtifactCounters {
    match kind.counted {
        Counted::WithShards => shards,
        Counted::OnItsOwn => declared.entry(kind.name.to_string()).or_default(),
    }
}

/// Stores a derived file made at `stamp`: its catalog row, its text where the index keeps it, and its
/// source row where it is a source; logs it when its bytes changed.
fn store_file(
    conn: &Connection,
    kind: &ArtifactKind,
    (stamp, file): (&str, DerivedFile),
    before: Option<StoredArtifact>,
    context: &StageContext<'_>,
    stage: &mut Stage,
) -> rusqlite::Result<()> {
    let DerivedFile { artifact, text, source } = file;
    if let Some(source) = &source {
        let row = source_row(&artifact.uri, &text, source);
        store::write_source(conn, generated_source(conn, &row.path)?, &row, context.run_id)?;
    }
    match kind.kept {
        KeptText::Stored => store::upsert_artifact_with_text(conn, &artifact, (stamp, &text), context.run_id)?,
        KeptText::SectionRows => store::upsert_artifact(conn, &artifact, context.run_id)?,
    }
    counters(kind, &mut stage.shards, &mut stage.declared).rendered += 1;
    let old_hash = before.map(|before| before.hash);
    if old_hash.as_ref() != Some(&artifact.hash) {
        stage.changes.push(ArtifactChange {
            artifact: artifact.path.clone(),
            kind: kind.name,
            old_hash,
            new_hash: Some(artifact.hash.clone()),
            sources: Vec::new(),
        });
    }
    stage.fresh.insert(artifact.path, text);
    Ok(())
}

/// Removes an artifact no longer derived: its catalog row, its text, and its source row if it was one.
fn remove_file(
    conn: &Connection,
    kind: &ArtifactKind,
    uri: &str,
    before: StoredArtifact,
    stage: &mut Stage,
) -> rusqlite::Result<()> {
    store::delete_artifact(conn, uri)?;
    if let Some(id) = generated_source(conn, uri)? {
        store::delete_source(conn, id, true)?;
    }
    counters(kind, &mut stage.shards, &mut stage.declared).deleted += 1;
    stage.changes.push(ArtifactChange {
        artifact: before.path,
        kind: kind.name,
        old_hash: Some(before.hash),
        new_hash: None,
        sources: Vec::new(),
    });
    Ok(())
}

/// A generated file as a source row, its uri its path: one chunk per passage, so a result cites the bytes
/// the file holds. A chunk's identifiers hold the passage's key (a shard entry's page slug), which search
/// uses to tell an entry from its page.
fn source_row(uri: &str, text: &str, source: &FileSource) -> SourceRow {
    let heading_path = serde_json::to_string(&[&source.heading]).expect("strings serialize");
    let chunks = source
        .entries
        .iter()
        .enumerate()
        .map(|(ordinal, entry)| {
            let passage = &text[entry.start as usize..entry.end as usize];
            ChunkRow {
                id: content_hash(format!("{uri}\0{}", entry.slug).as_bytes()),
                ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
                hash: content_hash(passage.as_bytes()),
                heading_path: heading_path.clone(),
                title: entry.title.clone(),
                text: passage.to_string(),
                identifiers: entry.slug.clone(),
                start_offset: entry.start,
                end_offset: entry.end,
                start_line: entry.line,
                end_line: entry.line,
                minhash: None,
                entity: None,
            }
        })
        .collect();
    SourceRow {
        uri: uri.to_string(),
        path: uri.to_string(),
        kind: "markdown",
        mime: "text/markdown",
        size: text.len() as u64,
        mtime_ns: 0,
        revision: content_hash(text.as_bytes()),
        title: source.title.clone(),
        outline: "{}".to_string(),
        lint_facts: "{}".to_string(),
        labels: String::new(),
        chunks,
        signals: Vec::new(),
        entities: std::sync::Arc::new([]),
        // A generated index lists pages and sources; its lines are no passages anyone cites.
        line_keys: Vec::new(),
    }
}
