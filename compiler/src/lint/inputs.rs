//! The lint graph's inputs (`knowledge_queries::lint`): one `LintSource` per source, set from the facts a
//! build committed or `knowledge lint` gathered, each field only when its value changed, so that salsa
//! re-checks only what an edit reaches.

use std::collections::{BTreeMap, HashSet};

use knowledge_queries::LintFacts;
use knowledge_queries::lint::{GeneratedFiles, LintProject, LintSource};
use rayon::prelude::*;
use salsa::Setter;

use super::{ChunkText, FileFacts, generated_files, stored_file};
use crate::config::Project;
use crate::sources::db::{IndexSync, KnowledgeDb, SyncedRun};
use crate::store;

/// The lint graph's inputs, kept for the life of a `Compiler`, and the run whose committed index they match.
#[derive(Default)]
pub(crate) struct LintInputs {
    project: Option<LintProject>,
    sources: BTreeMap<String, LintSource>,
    /// Each source's chunks as near-duplicate detection compares them (signatures, rows), kept with the
    /// inputs and synced the same way, so a kept `Compiler` reads only the changed sources' chunks.
    /// `None` until a sync reads them (and when near duplicates are not compared).
    chunks: Option<BTreeMap<String, Vec<ChunkText>>>,
    synced: SyncedRun,
}

impl LintInputs {
    /// The project input; only after a sync.
    pub(crate) fn project(&self) -> LintProject {
        self.project.expect("the lint inputs are synced before the graph is asked")
    }

    /// A source's facts, when the inputs hold it.
    pub(crate) fn facts<'db>(&self, db: &'db KnowledgeDb, path: &str) -> Option<&'db LintFacts> {
        self.sources.get(path).map(|source| source.facts(db))
    }

    /// A source's revision, when the inputs hold it.
    pub(crate) fn revision<'db>(&self, db: &'db KnowledgeDb, path: &str) -> Option<&'db str> {
        self.sources.get(path).map(|source| source.revision(db).as_str())
    }

    /// Sets the inputs to exactly `files`, every source of the project as it stands (`knowledge lint`);
    /// they then match no run.
    pub(crate) fn set_all(
        &mut self,
        db: &mut KnowledgeDb,
        project: &Project,
        files: Vec<FileFacts>,
        generated: Option<GeneratedFiles>,
    ) {
        self.set_every(db, files);
        self.synced.forget();
        self.finish(db, project, generated);
    }

    /// Brings the inputs in line with the index as this build's transaction leaves it: only the changed
    /// sources' stored facts when the inputs match the prior run, every source's otherwise.
    pub(crate) fn sync_with_index(
        &mut self,
        conn: &rusqlite::Connection,
        db: &mut KnowledgeDb,
        project: &Project,
        sync: &IndexSync<'_>,
    ) -> rusqlite::Result<()> {
        let with_chunks = super::compares_near_duplicates(project);
        let warm = self.synced.warm(sync);
        self.synced.forget();
        self.sync_chunks(conn, warm.then_some(sync.changed), with_chunks)?;
        if warm {
            let mut stored = store::read_facts_of(conn, sync.changed)?;
            for path in sync.changed {
                match stored.remove(path).and_then(|facts| stored_file(path, facts)) {
                    Some(file) => self.set(db, file),
                    None => {
                        self.sources.remove(path);
                    }
                }
            }
        } else {
            let files: Vec<FileFacts> = store::read_facts(conn)?
                .into_par_iter()
                .filter_map(|(path, facts)| stored_file(&path, facts))
                .collect();
            self.set_every(db, files);
        }
        self.finish(db, project, Some(generated_files(project, conn)?));
        self.synced.synced(sync.run);
        Ok(())
    }

    /// Every source's chunks for near-duplicate detection, as the last sync left them.
    pub(crate) fn chunks(&self) -> Vec<&ChunkText> {
        self.chunks.iter().flat_map(BTreeMap::values).flatten().collect()
    }

    /// Brings the kept chunks in line with the index: with `changed`, only those sources' (the inputs match
    /// the run before), otherwise every source's; none when near duplicates are not compared.
    fn sync_chunks(
        &mut self,
        conn: &rusqlite::Connection,
        changed: Option<&[String]>,
        with_chunks: bool,
    ) -> rusqlite::Result<()> {
        let kept = self.chunks.take();
        if !with_chunks {
            return Ok(());
        }
        let (mut chunks, stored) = match (kept, changed) {
            (Some(mut kept), Some(paths)) => {
                for path in paths {
                    kept.remove(path);
                }
                (kept, store::read_chunk_texts_of(conn, paths)?)
            }
            _ => (BTreeMap::new(), store::read_chunk_texts(conn, &std::collections::HashSet::new())?),
        };
        for chunk in stored {
            chunks.entry(chunk.path.clone()).or_default().push(ChunkText::stored(chunk));
        }
        self.chunks = Some(chunks);
        Ok(())
    }

    /// Makes the inputs hold exactly `files`.
    fn set_every(&mut self, db: &mut KnowledgeDb, files: Vec<FileFacts>) {
        let paths: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
        self.sources.retain(|path, _| paths.contains(path.as_str()));
        for file in files {
            self.set(db, file);
        }
    }

    /// Creates or updates one source's input; a setter starts a new revision even for an equal value, so
    /// each field is compared first.
    fn set(&mut self, db: &mut KnowledgeDb, file: FileFacts) {
        let Some(&source) = self.sources.get(&file.path) else {
            let source = LintSource::new(db, file.path.clone(), file.size, file.revision, file.names, file.facts);
            self.sources.insert(file.path, source);
            return;
        };
        if source.size(db) != file.size {
            source.set_size(db).to(file.size);
        }
        if source.revision(db) != &file.revision {
            source.set_revision(db).to(file.revision);
        }
        if source.names(db) != &file.names {
            source.set_names(db).to(file.names);
        }
        if source.facts(db) != &file.facts {
            source.set_facts(db).to(file.facts);
        }
    }

    /// Sets the project input: the source list (sorted by path), the generated files and the settings.
    fn finish(&mut self, db: &mut KnowledgeDb, project: &Project, generated: Option<GeneratedFiles>) {
        let sources: Vec<LintSource> = self.sources.values().copied().collect();
        let wiki_folder = crate::wiki::wiki_folder(project);
        let min_sources = project.config.lint.new_article_min_sources;
        let Some(lint) = self.project else {
            self.project = Some(LintProject::new(db, sources, generated, wiki_folder, min_sources));
            return;
        };
        if lint.sources(db) != &sources {
            lint.set_sources(db).to(sources);
        }
        if lint.generated(db) != &generated {
            lint.set_generated(db).to(generated);
        }
        if lint.wiki_folder(db) != &wiki_folder {
            lint.set_wiki_folder(db).to(wiki_folder);
        }
        if lint.new_article_min_sources(db) != min_sources {
            lint.set_new_article_min_sources(db).to(min_sources);
        }
    }
}
