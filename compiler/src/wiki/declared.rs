//! Every declared kind (`knowledge_queries::wiki::DECLARED_KINDS`) as the artifact driver (`driver.rs`)
//! runs it: each artifact the query graph names is compared with the catalog by its stamp, and each that
//! differs is derived and stored (its catalog row, its text where the index keeps it, its source row where
//! it is a source) and handed to the file sync; one the graph no longer names is removed. The file sync
//! and the remote store follow the catalog, for these kinds as for any.

use knowledge_queries::wiki::{
    ArtifactKind, Counted, DerivedFile, FileSource, KeptText, PageIndex, Stamped, declared_kind,
};

use super::driver::{ArtifactKindDriver, Compared, Gone, Run, Stored};
use super::*;
use crate::store::StoredArtifact;

/// A declared kind as the driver runs it: compared with the catalog by stamp.
pub(super) struct Declared {
    pub(super) kind: &'static ArtifactKind,
    /// The page index the kind derives from; `None` when the wiki is off, so that every artifact goes.
    pub(super) index: Option<PageIndex>,
}

impl ArtifactKindDriver for Declared {
    /// An artifact whose stamp differs, with what the catalog held of it and the page index it derives from.
    type Stale = (Stamped, Option<StoredArtifact>, PageIndex);

    fn name(&self) -> &'static str {
        self.kind.name
    }

    fn counters<'s>(&self, stage: &'s mut Stage) -> &'s mut ArtifactCounters {
        counters(self.kind, &mut stage.shards, &mut stage.declared)
    }

    fn compare(&mut self, run: &mut Run<'_, '_>) -> Result<Compared<Self::Stale>, StoreError> {
        let sql = |source| run.context.sql_error(source);
        let mut stored = store::artifacts_of_kind(run.conn, self.kind.name).map_err(sql)?;
        let mut stale = Vec::new();
        if let Some(index) = self.index {
            stale = stale_artifacts(run.db, index, self.kind, &mut stored, run.context.full)?;
            if self.kind.reads_rows {
                for (stamped, ..) in &stale {
                    read_section_rows(run.conn, run.db, run.inputs, &stamped.key).map_err(sql)?;
                }
            }
        }
        // What is left of the catalog's artifacts of the kind, the graph no longer derives.
        let gone = stored
            .into_iter()
            .map(|(uri, before)| Gone { key: uri.clone(), uri, path: before.path, hash: before.hash })
            .collect();
        Ok(Compared { stale, gone })
    }

    fn store(&mut self, run: &mut Run<'_, '_>, stale: Self::Stale, stage: &mut Stage) -> Result<Stored, StoreError> {
        let (stamped, before, index) = stale;
        let file = (self.kind.derive)(&*run.db, index, &stamped.key).map_err(StoreError::Wiki)?;
        store_file(run.conn, self.kind, (&stamped.stamp, file), before, run.context, stage)
            .map_err(|source| run.sql(source))
    }

    fn remove(&mut self, run: &mut Run<'_, '_>, gone: &Gone) -> Result<(), StoreError> {
        remove_file(run.conn, &gone.uri).map_err(|source| run.sql(source))
    }
}

/// The artifacts of `kind` the graph derives whose stamp differs from the catalog's (all of them with
/// `full`), each with what the catalog held; every derived artifact is taken out of `stored`.
fn stale_artifacts(
    db: &KnowledgeDb,
    index: PageIndex,
    kind: &ArtifactKind,
    stored: &mut BTreeMap<String, StoredArtifact>,
    full: bool,
) -> Result<Vec<(Stamped, Option<StoredArtifact>, PageIndex)>, StoreError> {
    let mut stale = Vec::new();
    for stamped in (kind.stamps)(db, index).map_err(StoreError::Wiki)? {
        let before = stored.remove(&stamped.uri);
        if full || before.as_ref().is_none_or(|before| before.stamp != stamped.stamp) {
            stale.push((stamped, before, index));
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
/// source row where it is a source; hands its text to the file sync.
fn store_file(
    conn: &Connection,
    kind: &ArtifactKind,
    (stamp, file): (&str, DerivedFile),
    before: Option<StoredArtifact>,
    context: &StageContext<'_>,
    stage: &mut Stage,
) -> rusqlite::Result<Stored> {
    let DerivedFile { artifact, text, source } = file;
    if let Some(source) = &source {
        let row = source_row(&artifact.uri, &text, source);
        store::write_source(conn, generated_source(conn, &row.path)?, &row, context.run_id)?;
    }
    match kind.kept {
        KeptText::Stored => store::upsert_artifact_with_text(conn, &artifact, (stamp, &text), context.run_id)?,
        KeptText::SectionRows => store::upsert_artifact(conn, &artifact, context.run_id)?,
    }
    stage.fresh.insert(artifact.path.clone(), text);
    Ok(Stored {
        key: artifact.uri.clone(),
        uri: artifact.uri,
        path: artifact.path,
        old_hash: before.map(|before| before.hash),
        new_hash: artifact.hash,
        sources: Vec::new(),
    })
}

/// Removes an artifact no longer derived: its catalog row, its text, and its source row if it was one.
fn remove_file(conn: &Connection, uri: &str) -> rusqlite::Result<()> {
    store::delete_artifact(conn, uri)?;
    if let Some(id) = generated_source(conn, uri)? {
        store::delete_source(conn, id, true)?;
    }
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
