//! `knowledge build`: walk, detect changes, run the queries for what changed, write one transaction.
//!
//! Reuse across process runs comes from the index itself: a source whose size and mtime match its row is
//! not read at all, and one whose content hash matches is not re-derived. The pipeline fingerprint (binary
//! version, index format, a hash of the compiler's source, and the config sections rows depend on) must
//! match too, or every source is re-derived. Within one process, the salsa database memoizes the queries,
//! so a `Compiler` kept alive (tests, `--watch`) re-runs only what an edit invalidated.

pub mod cache;
pub mod lint;
pub mod remote;
mod rows;
mod scan;
mod settings;
mod summary;
pub mod watch;
mod write;

pub(crate) use scan::{Pending, Scan, Walking, scan};
use settings::check_output_folder;
pub use settings::{Check, check};
pub(crate) use settings::{SettingsWork, fingerprint, trusts};
pub use summary::{BuildSummary, ChunkCounters, EntityCounters, LintCounts, QueryCounters, SourceCounters, StageTimes};

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use knowledge_queries::{
    Chunk, ChunkingSettings, CodeSettings, LintFacts, LintSettings, Outline, SourceFile, chunks, lint_facts, outline,
};
use rayon::prelude::*;
use salsa::{Durability, Setter};

use crate::config::Project;
use crate::sources::db::KnowledgeDb;
use crate::store::postgres::PgStore;
use crate::store::{self, DB_FILE, Prior, Store, StoreError};
use crate::wiki::{self, PageInputs, TemplateSet};
use write::{Before, WriteJob};

/// The folders of the output layout, the tool's own: each is made when something goes in it (`exports/` by
/// `knowledge export`, `cache/vectors/` by a build with an embeddings provider; `runs/` and `artifacts/`
/// are reserved, and nothing goes in them yet).
pub const OUTPUT_LAYOUT: [&str; 8] = ["wiki", "indexes", "schemas", "logs", "runs", "cache", "exports", "artifacts"];

/// Below this many changed sources their queries run on the build's own thread: starting rayon's pool and
/// handing the work to it and the rows back costs an edit of one file more than a second core could save.
const PARALLEL_DERIVE_FROM: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot create `{}`", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Wiki(#[from] crate::wiki::WikiError),
    #[error("cannot load the embeddings model: {0}")]
    Embeddings(crate::embeddings::LocalModelError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("the index is committed, but putting its artifacts in `{target}` failed: {error}")]
    RemoteArtifacts { target: String, error: remote::RemoteError },
    #[error("the index is committed, but publishing it to Postgres failed: {0}")]
    Publish(#[from] crate::store::postgres::PostgresError),
    #[error("the index is committed, but writing its vector file failed: {0}")]
    VectorFile(crate::embeddings::VectorFileError),
    #[error("cannot write the wiki under `{}`", path.display())]
    WriteArtifacts {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where a long build reports progress. The CLI draws bars on a terminal; tests and `--json` stay quiet.
pub trait Reporter: Sync {
    fn stage(&self, _name: &'static str, _total: u64) {}
    fn advance(&self, _by: u64) {}
    fn finish_stage(&self) {}
    /// Another build holds the output folder (its pid, when known); this one waits for it.
    fn waiting(&self, _holder: Option<u32>) {}
}

/// A reporter that shows nothing.
pub struct Silent;
impl Reporter for Silent {}

/// The compiler: a salsa database that lives as long as the process, and the inputs it holds.
#[derive(Default)]
pub struct Compiler {
    db: KnowledgeDb,
    files: HashMap<String, SourceFile>,
    pages: PageInputs,
    lint: crate::lint::LintInputs,
    embeddings: crate::embeddings::EmbeddingInputs,
    /// The run the index held when this compiler's last build ended: what `warm_up` warms the catalog to.
    last_run: Option<String>,
    /// The compiler of `--watch` ([`Compiler::watching`]): its builds leave their checkpoint to
    /// [`Compiler::checkpoint`], and keep their walk and their connection to the index for the next build.
    watching: bool,
    /// The last build's walk, when it was kept.
    walk: Option<crate::sources::KeptWalk>,
    /// Every path that changed since the last build's walk, when the caller told them all
    /// ([`Compiler::changed`]); `None`: unknown, so the next build walks.
    changed: Option<BTreeSet<String>>,
    /// Whether the last build walked the project (rather than bring a kept walk up to date).
    walked: bool,
    /// The index's connection, kept from one build to the next (`--watch`): its parsed schema, prepared
    /// statements and mapped pages, which a new connection makes again.
    kept_store: Option<KeptStore>,
}

/// A connection kept between builds, with the index file it opened: a file since replaced (`knowledge
/// pull`), removed, or moved by an output folder setting is opened again.
struct KeptStore {
    store: Store,
    path: PathBuf,
    file: store::FileIdentity,
    /// What the index held after the last build, read ahead between builds ([`Compiler::warm_up`]), with
    /// the connection's count of other connections' commits when it was read.
    prior: Option<(Prior, i64)>,
}

impl KeptStore {
    /// Whether the connection is to the file now at `index`.
    fn is_of(&self, index: &std::path::Path) -> bool {
        self.path == index && store::file_identity(index) == Some(self.file)
    }
}

impl Compiler {
    #[must_use]
    pub fn new() -> Self {
        Compiler::default()
    }

    /// The compiler of `--watch`: its builds end at their commit and file sync, leaving the index's
    /// checkpoint to [`Compiler::checkpoint`], which the watch calls once each build's line is out; and each
    /// keeps its walk, which the next build brings up to date from the paths [`Compiler::changed`] gave it
    /// rather than walking the project again.
    #[must_use]
    pub fn watching() -> Self {
        Compiler { watching: true, ..Compiler::default() }
    }

    /// Tells the compiler paths (project-relative, `/`-separated) that changed on disk: a caller that tells
    /// it every change since its last build began (a file watcher) spares the next build a walk. A build
    /// forgets them; one not told walks.
    pub fn changed(&mut self, paths: impl IntoIterator<Item = String>) {
        self.changed.get_or_insert_with(BTreeSet::new).extend(paths);
    }

    /// Whether the last build walked the project, rather than bring the kept walk up to date from the
    /// changes it was told.
    #[must_use]
    pub fn walked(&self) -> bool {
        self.walked
    }

    /// Checkpoints the index the last build left, when this compiler's builds defer it: through the kept
    /// connection when it is still the index's.
    pub fn checkpoint(&self, project: &Project) -> Result<(), StoreError> {
        if !self.watching {
            return Ok(());
        }
        let index = project.output_dir().join(DB_FILE);
        match self.kept_store.as_ref().filter(|kept| kept.is_of(&index)) {
            Some(kept) => kept.store.checkpoint(),
            None => store::checkpoint(&index),
        }
    }

    /// The database, for tests that inspect the queries.
    #[must_use]
    pub fn db(&self) -> &KnowledgeDb {
        &self.db
    }

    /// Compiles the project into its index: opens it, scans the project, writes what changed in one
    /// transaction, then brings the files (and any remote copies) in line with the committed index.
    pub fn build(&mut self, project: &Project, reporter: &dyn Reporter) -> Result<BuildSummary, BuildError> {
        let clock = Instant::now();
        let started_at = SystemTime::now();
        let queries_before = self.db.executed_queries();
        let by_query_before = self.db.executed_by_query();
        let (templates, output_dir, _lock) = prepare_output(project, reporter)?;
        // The generated files' stats, for the file sync at the end, taken beside the build's own work.
        let on_disk = wiki::DiskWalk::start(&output_dir);
        let index = output_dir.join(DB_FILE);
        let mut stages = StageTimes::default();
        let mut stage_clock = Instant::now();
        let (mut store, prior) = self.open_index(&index, &output_dir)?;
        stages.open = lap(&mut stage_clock);
        let embedder = crate::embeddings::configured(project).map_err(BuildError::Embeddings)?;
        let settings = SettingsWork::decide(project, &templates, &prior, Some(store.connection()), embedder.as_deref())
            .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
        let Scan { counters, skipped, unchanged, pending, stats, removed, scan_ms, read_ms, started_ns, .. } =
            self.walk(project, &prior, settings.full_rebuild, reporter);
        // The scan measured its own two stages.
        lap(&mut stage_clock);
        (stages.scan, stages.read) = (scan_ms, read_ms);

        // Chunk counters: unchanged sources keep all their chunks; a changed source's chunk ids are read now,
        // before the transaction replaces its rows, and compared with its new ones as they are written.
        let mut chunk_counters = ChunkCounters::default();
        let kept = unchanged.iter().chain(stats.iter().map(|stat| &stat.path));
        chunk_counters.reused = kept.map(|path| prior.sources[path].chunk_count).sum();
        chunk_counters.deleted = removed.iter().map(|path| prior.sources[path].chunk_count).sum();
        // The wiki's catalog inputs kept from the prior run let the query graph decide what an edit reaches.
        // A cold catalog is read whole, so the build first compares what each changed source gave the planner:
        // while that stays equal, the edit reaches only pages that list the source.
        let warm = self.pages.catalog_matches(prior.last_run.as_deref());
        let section_field = project.config.wiki.section_field.as_deref();
        let before = Before::read(&store, &pending, &prior, warm, settings.full_rebuild, section_field)?;
        chunk_counters.total = chunk_counters.reused;

        let wrote = settings.must_write() || !pending.is_empty() || !removed.is_empty() || !stats.is_empty();
        let mut summary = BuildSummary::started(index, settings.full_rebuild, wrote, counters, chunk_counters, skipped);
        let mut fresh_files = HashMap::new();
        if wrote {
            let job = WriteJob {
                project,
                templates: &templates,
                settings: &settings,
                prior: &prior,
                pending: &pending,
                removed: &removed,
                stats,
                scan_started_ns: started_ns,
                before: &before,
                embedder: embedder.as_deref(),
                started_at,
                clock,
                queries_before,
            };
            let written = self.write_index(&mut store, job, &mut summary, reporter)?;
            stages.compile = written.compile_ms;
            stage_clock = written.rows_done;
            fresh_files = written.fresh_files;
        }
        let mut postgres = follow_index(&store, project, &fresh_files, on_disk, &prior, &mut summary)?;
        summary.queries.executed = self.db.executed_queries() - queries_before;
        summary.queries.by_query = self.executed_since(&by_query_before);
        stages.write = lap(&mut stage_clock);
        summary.stages_ms = stages;
        summary.wall_ms = crate::elapsed_ms(clock);
        record_final_summary(&mut store, postgres.as_mut(), project, &summary)?;
        self.last_run = summary.run_id.clone().or(prior.last_run);
        // Only a build that finished keeps its connection; one that failed leaves the next a new one.
        if self.watching
            && let Some(file) = store::file_identity(&summary.index)
        {
            self.kept_store = Some(KeptStore { store, path: summary.index.clone(), file, prior: None });
        }
        Ok(summary)
    }

    /// The queries executed since `before` (the counts by query before), by query, those that ran.
    fn executed_since(
        &self,
        before: &std::collections::BTreeMap<String, u64>,
    ) -> std::collections::BTreeMap<String, u64> {
        self.db
            .executed_by_query()
            .into_iter()
            .map(|(name, n)| {
                let since = n - before.get(&name).copied().unwrap_or(0);
                (name, since)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The index's connection (the one kept from the last build when it is still the index's) and what the
    /// index holds. A build stopped after its commit may still owe the day's log its lines: they go first,
    /// before this build records what it owes.
    fn open_index(&mut self, index: &Path, output_dir: &Path) -> Result<(Store, Prior), BuildError> {
        let (store, read_ahead) = match self.kept_store.take() {
            Some(kept) if kept.is_of(index) => (kept.store, kept.prior),
            _ => {
                let store = Store::open_for_build(index)?;
                if self.watching {
                    store.defer_checkpoint()?;
                }
                (store, None)
            }
        };
        // The state read ahead is the index's unless another connection committed since (a build or a write
        // command of another process): then it is read again.
        let prior = match read_ahead {
            Some((prior, commits)) if store.others_commits()? == commits => prior,
            _ => store.prior()?,
        };
        if !prior.needs_schema {
            wiki::complete_log(store.connection(), output_dir)
                .map_err(|source| BuildError::WriteArtifacts { path: output_dir.to_path_buf(), source })?;
        }
        Ok((store, prior))
    }

    /// Scans the project: walks it, or brings a kept walk up to date from the changes this compiler was
    /// told (`--watch`), and keeps a new walk when this compiler keeps walks.
    fn walk(&mut self, project: &Project, prior: &Prior, full_rebuild: bool, reporter: &dyn Reporter) -> Scan {
        let changed = self.changed.take();
        let generated = self.watching.then(|| wiki::generated_in_project(project, &prior.generated));
        let walking = match (self.walk.as_mut(), changed, &generated) {
            (_, _, None) => Walking::Walk,
            (Some(kept), Some(changed), Some(generated)) => {
                kept.update(project, &changed, generated).map_or(Walking::WalkAndKeep(generated), Walking::Kept)
            }
            (_, _, Some(generated)) => Walking::WalkAndKeep(generated),
        };
        self.walked = !matches!(walking, Walking::Kept(_));
        let mut found = scan(project, prior, full_rebuild, reporter, walking);
        // A new walk replaces the kept one (a kept one brought up to date is kept as it is).
        if let (Some(walk), Some(generated)) = (found.to_keep.take(), generated) {
            self.walk = crate::sources::KeptWalk::new(project, walk, generated);
        }
        found
    }

    /// Reads what the next build starts from ([`Compiler::read_prior_ahead`]), and the wiki's catalog from the
    /// committed index into the kept database if it is not there yet, so that the next build re-plans and
    /// re-models only what its edit reaches. A cost of one cold build's catalog read, paid between builds:
    /// `--watch` calls it after each build.
    pub fn warm_up(&mut self, project: &Project) -> Result<(), StoreError> {
        // Each read is the next build's to make again when it fails here: one failing leaves the other made.
        let prior = self.read_prior_ahead(project);
        let catalog = self.warm_catalog(project);
        prior.and(catalog)
    }

    /// The wiki's catalog read into the kept database when it is not there yet ([`Compiler::warm_up`]).
    fn warm_catalog(&mut self, project: &Project) -> Result<(), StoreError> {
        // After a build that kept the catalog and the shards warm there is nothing to read.
        if self.last_run.is_some() && wiki::inputs_match(&self.pages, self.last_run.as_deref()) {
            return Ok(());
        }
        let index = project.output_dir().join(DB_FILE);
        let conn = store::open_read_only(&index)?;
        let sql = |source| StoreError::Sqlite { path: index.clone(), source };
        match store::meta(&conn, "last_run").map_err(sql)? {
            Some(run) if project.config.wiki.enabled => {
                wiki::warm_up(&conn, &mut self.db, &mut self.pages, project, &run).map_err(sql)
            }
            _ => Ok(()),
        }
    }

    /// Reads through the kept connection what the index holds of every source and generated file, which the
    /// next build starts from, while the tree is quiet: every edit read it on its latency (on dendron-vault
    /// about 5 M instructions a build, a quarter of what each edit re-read of the index).
    fn read_prior_ahead(&mut self, project: &Project) -> Result<(), StoreError> {
        let index = project.output_dir().join(DB_FILE);
        let Some(kept) = self.kept_store.as_mut().filter(|kept| kept.is_of(&index)) else { return Ok(()) };
        // The count first: a commit of another connection while the state is read makes the next build read it
        // again.
        let commits = kept.store.others_commits()?;
        kept.prior = Some((kept.store.prior()?, commits));
        Ok(())
    }

    /// Runs the outline and lint-facts queries of the pending sources, for `knowledge lint`.
    /// With `chunks`, each source's chunks too, for near-duplicate detection.
    pub(crate) fn derive_facts(
        &mut self,
        project: &Project,
        pending: &[Pending],
        with_chunks: bool,
    ) -> Vec<(Outline, LintFacts, Vec<Chunk>)> {
        let inputs = self.sync_inputs(project, pending);
        inputs
            .par_iter()
            .map_with(self.db.clone(), |db, &file| {
                let file_chunks = if with_chunks { chunks(db, file).to_vec() } else { Vec::new() };
                (outline(db, file).clone(), lint_facts(db, file).clone(), file_chunks)
            })
            .collect()
    }

    /// Sets the settings inputs from the configuration and the source inputs of the pending sources; a setter
    /// starts a new revision even for an equal value, so every value is compared first.
    fn sync_inputs(&mut self, project: &Project, pending: &[Pending]) -> Vec<SourceFile> {
        let patterns = &project.config.lint.contradiction_patterns;
        let wiki_folder = wiki::wiki_folder(project);
        match LintSettings::try_get(&self.db) {
            None => {
                let _settings =
                    LintSettings::builder(patterns.clone(), wiki_folder).durability(Durability::HIGH).new(&self.db);
            }
            Some(settings) => {
                if settings.contradiction_patterns(&self.db) != patterns {
                    settings
                        .set_contradiction_patterns(&mut self.db)
                        .with_durability(Durability::HIGH)
                        .to(patterns.clone());
                }
                if settings.wiki_folder(&self.db) != &wiki_folder {
                    settings.set_wiki_folder(&mut self.db).with_durability(Durability::HIGH).to(wiki_folder);
                }
            }
        }
        let code = &project.config.code;
        let decisions: Vec<String> = code.decisions.iter().map(|glob| glob.get_ref().clone()).collect();
        match CodeSettings::try_get(&self.db) {
            None => {
                let _settings =
                    CodeSettings::builder(code.enabled, decisions).durability(Durability::HIGH).new(&self.db);
            }
            Some(settings) => {
                if settings.enabled(&self.db) != code.enabled {
                    settings.set_enabled(&mut self.db).with_durability(Durability::HIGH).to(code.enabled);
                }
                if settings.decision_globs(&self.db) != &decisions {
                    settings.set_decision_globs(&mut self.db).with_durability(Durability::HIGH).to(decisions);
                }
            }
        }
        let chunking = &project.config.chunking;
        let (target, overlap) = (*chunking.target_bytes.get_ref(), *chunking.overlap_bytes.get_ref());
        match ChunkingSettings::try_get(&self.db) {
            None => {
                let _settings = ChunkingSettings::builder(target, overlap).durability(Durability::HIGH).new(&self.db);
            }
            Some(settings) => {
                if settings.target_bytes(&self.db) != target {
                    settings.set_target_bytes(&mut self.db).with_durability(Durability::HIGH).to(target);
                }
                if settings.overlap_bytes(&self.db) != overlap {
                    settings.set_overlap_bytes(&mut self.db).with_durability(Durability::HIGH).to(overlap);
                }
            }
        }
        let mut inputs = Vec::with_capacity(pending.len());
        for item in pending {
            let file = match self.files.get(&item.found.path) {
                Some(&file) => {
                    if file.text(&self.db) != &item.text {
                        file.set_text(&mut self.db).to(item.text.clone());
                        file.set_revision(&mut self.db).to(item.revision.clone());
                    }
                    file
                }
                None => {
                    let file =
                        SourceFile::new(&self.db, item.found.path.clone(), item.revision.clone(), item.text.clone());
                    self.files.insert(item.found.path.clone(), file);
                    file
                }
            };
            inputs.push(file);
        }
        inputs
    }
}

/// Brings what follows the committed index in line with it, on every build (a no-op one too, so that a
/// build stopped after its commit is completed by the next): the day's log, the files under the output
/// folder (one edited or deleted by hand since the last build is restored), the artifacts in object storage
/// and the Postgres store, whose connection is handed back for the run's final summary.
fn follow_index(
    store: &Store,
    project: &Project,
    fresh_files: &HashMap<String, Arc<str>>,
    on_disk: wiki::DiskWalk,
    prior: &Prior,
    summary: &mut BuildSummary,
) -> Result<Option<PgStore>, BuildError> {
    let output_dir = project.output_dir();
    let files_failed = |source| BuildError::WriteArtifacts { path: output_dir.clone(), source };
    // A build that wrote owes the log its own lines; one that did not paid any earlier debt before it began.
    if summary.wrote {
        wiki::complete_log(store.connection(), &output_dir).map_err(files_failed)?;
    }
    let output_in_project = wiki::output_prefix(project);
    summary.blocked = wiki::sync_files(
        store.connection(),
        &output_dir,
        &output_in_project,
        fresh_files,
        on_disk,
        wiki::FileCounters { pages: &mut summary.pages, shards: &mut summary.shards, declared: &mut summary.artifacts },
    )
    .map_err(files_failed)?;
    // The vector file searches map follows the committed generation (a no-op build reads its trailer).
    crate::embeddings::follow(store.connection(), &summary.index, prior.last_run.as_deref())
        .map_err(BuildError::VectorFile)?;
    // The artifacts in object storage follow the files, on every build (a no-op one reads the remote
    // catalog only), so an upload a failed build owed is made by the next.
    if let Some(target) = &project.config.output.artifacts {
        let target = target.get_ref();
        let failed = |error| BuildError::RemoteArtifacts { target: target.clone(), error };
        let local = remote::local_objects(store.connection(), &output_dir).map_err(failed)?;
        let last_run = summary.run_id.clone().or(prior.last_run.clone());
        let sync = remote::Remote::new(target)
            .and_then(|remote| remote.sync(&local, &output_dir, last_run.as_deref()))
            .map_err(failed)?;
        summary.remote_artifacts = Some(sync);
    }
    // The Postgres store follows the committed index, on every build (a no-op one reads one row), so a
    // publish a failed build owed is made by the next.
    let Some(url) = project.store_url() else { return Ok(None) };
    let mut connected = PgStore::connect(&url)?;
    summary.store =
        Some(crate::store::postgres::publish(store.connection(), &mut connected, &project.store_project())?);
    Ok(Some(connected))
}

/// A run id unique across processes (pid) and across builds of one process (a counter), ordered by time.
pub fn run_id(started_at: SystemTime) -> String {
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stamp: String =
        humantime::format_rfc3339_millis(started_at).to_string().chars().filter(char::is_ascii_alphanumeric).collect();
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("run-{stamp}-{}-{n}", std::process::id())
}

/// Milliseconds since `clock`, which restarts.
fn lap(clock: &mut Instant) -> u64 {
    let ms = crate::elapsed_ms(*clock);
    *clock = Instant::now();
    ms
}

/// Records the build's final summary with its run, in the index and in the Postgres store's copy of the run
/// (a build stopped before this has it sent by the next publish).
fn record_final_summary(
    store: &mut Store,
    postgres: Option<&mut crate::store::postgres::PgStore>,
    project: &Project,
    summary: &BuildSummary,
) -> Result<(), BuildError> {
    let Some(run_id) = &summary.run_id else { return Ok(()) };
    let recorded = serde_json::to_string(summary).expect("summary serializes");
    store.record_summary(run_id, &recorded)?;
    if let Some(postgres) = postgres {
        crate::store::postgres::record_summary(postgres, &project.store_project(), run_id, &recorded)?;
    }
    Ok(())
}

/// The project's templates (read and checked before anything is written: a broken one changes nothing), its
/// output folder, made if need be, and the writer's lock on it.
fn prepare_output(
    project: &Project,
    reporter: &dyn Reporter,
) -> Result<(TemplateSet, PathBuf, store::WriterLock), BuildError> {
    let templates = TemplateSet::load(project)?;
    let output_dir = project.output_dir();
    check_output_folder(project)?;
    // Only the folder itself: each folder of the layout is made when something goes in it, so the output
    // folder holds no empty folder a team would wonder about (issue 42).
    std::fs::create_dir_all(&output_dir)
        .map_err(|source| BuildError::CreateDir { path: output_dir.clone(), source })?;
    let lock = store::writer_lock(&output_dir, |holder| reporter.waiting(holder))?;
    Ok((templates, output_dir, lock))
}
