//! The lint graph's inputs (`knowledge_queries::lint`): one `LintSource` per source, set from the facts a
//! build committed or `knowledge lint` gathered, each field only when its value changed, so that salsa
//! re-checks only what an edit reaches.

use std::collections::BTreeMap;

use knowledge_queries::LintFacts;
use knowledge_queries::lint::{GeneratedFiles, LintProject, LintSource};
use rayon::prelude::*;
use salsa::Setter;

use super::{ChunkText, FileFacts, generated_files, stored_file};
use crate::config::Project;
use crate::sources::db::KnowledgeDb;
use crate::sources::mirror::{IndexSync, Mirror};
use crate::store;

/// The lint graph's inputs, kept for the life of a `Compiler`, and the run whose committed index they match.
#[derive(Default)]
pub(crate) struct LintInputs {
    project: Option<LintProject>,
    sources: Mirror<LintSource>,
    /// Each source's chunks as near-duplicate detection compares them (signatures, rows), mirrored the same
    /// way, so a kept `Compiler` reads only the changed sources' chunks. Empty, matching no run, when near
    /// duplicates are not compared.
    chunks: Mirror<Vec<ChunkText>>,
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
        let files = files.into_iter().map(|file| (file.path.clone(), file));
        self.sources.set_all(files, |source, file| set_source(db, source, file));
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
        if super::compares_near_duplicates(project) {
            self.chunks.sync(sync, sync.changed, |paths, each| read_chunks(conn, paths, each), |_, chunks| chunks)?;
        } else {
            self.chunks = Mirror::default();
        }
        let read = |paths: Option<&[String]>, each: &mut dyn FnMut(String, FileFacts)| {
            let stored = match paths {
                Some(paths) => store::read_facts_of(conn, paths)?,
                None => store::read_facts(conn)?,
            };
            // Decoding the stored facts is most of a whole read: rayon's threads share it.
            let files: Vec<FileFacts> =
                stored.into_par_iter().filter_map(|(path, facts)| stored_file(&path, facts)).collect();
            files.into_iter().for_each(|file| each(file.path.clone(), file));
            Ok::<_, rusqlite::Error>(())
        };
        self.sources.sync(sync, sync.changed, read, |source, file| set_source(db, source, file))?;
        self.finish(db, project, Some(generated_files(project, conn)?));
        Ok(())
    }

    /// Every source's chunks for near-duplicate detection, as the last sync left them.
    pub(crate) fn chunks(&self) -> Vec<&ChunkText> {
        self.chunks.values().flatten().collect()
    }

    /// Sets the project input: the source list (sorted by path), the generated files and the settings.
    fn finish(&mut self, db: &mut KnowledgeDb, project: &Project, generated: Option<GeneratedFiles>) {
        let sources: Vec<LintSource> = self.sources.values().copied().collect();
        let wiki_folder = crate::wiki::wiki_folder(project);
        let min_sources = project.config.lint.new_article_min_sources;
        let site_roots: Vec<String> = project
            .config
            .lint
            .site_roots
            .iter()
            .map(|root| root.get_ref().trim_end_matches('/').to_string())
            .collect();
        let Some(lint) = self.project else {
            self.project = Some(LintProject::new(db, sources, generated, wiki_folder, min_sources, site_roots));
            return;
        };
        if lint.site_roots(db) != &site_roots {
            lint.set_site_roots(db).to(site_roots);
        }
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

/// Hands `each` the stored chunks of `paths` (of every source with `None`), grouped by source.
fn read_chunks(
    conn: &rusqlite::Connection,
    paths: Option<&[String]>,
    each: &mut dyn FnMut(String, Vec<ChunkText>),
) -> rusqlite::Result<()> {
    let stored = match paths {
        Some(paths) => store::read_chunk_texts_of(conn, paths)?,
        None => store::read_chunk_texts(conn, &std::collections::HashSet::new())?,
    };
    let mut by_source: BTreeMap<String, Vec<ChunkText>> = BTreeMap::new();
    for chunk in stored {
        by_source.entry(chunk.path.clone()).or_default().push(ChunkText::stored(chunk));
    }
    by_source.into_iter().for_each(|(path, chunks)| each(path, chunks));
    Ok(())
}

/// Creates one source's input, or updates `source`'s; a setter starts a new revision even for an equal
/// value, so each field is compared first.
fn set_source(db: &mut KnowledgeDb, source: Option<LintSource>, file: FileFacts) -> LintSource {
    let Some(source) = source else {
        return LintSource::new(db, file.path, file.size, file.revision, file.names, file.facts);
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
    source
}
