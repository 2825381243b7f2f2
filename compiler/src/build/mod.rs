//! `knowledge build`: walk, detect changes, run the queries for what changed, write one transaction.
//!
//! Reuse across process runs comes from the index itself: a source whose size and mtime match its row is
//! not read at all, and one whose content hash matches is not re-derived. The pipeline fingerprint (binary
//! version, index format, a hash of the compiler's source, and the config sections rows depend on) must
//! match too, or every source is re-derived. Within one process, the salsa database memoizes the queries,
//! so a `Compiler` kept alive (tests, a future watch mode) re-runs only what an edit invalidated.

pub mod lint;
pub mod watch;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use knowledge_queries::{
    Chunk, ChunkingSettings, LintFacts, LintSettings, Origin, Outline, SourceFile, SourceKind, SourceRef, chunks,
    concept_signals, content_hash, lint_facts, outline, wiki::Signal,
};
use rayon::prelude::*;
use salsa::{Durability, Setter};
use serde::Serialize;

use crate::config::Project;
use crate::sources::db::KnowledgeDb;
use crate::sources::{self, FoundFile, Skipped};
use crate::store::{
    self, BuildWrite, DB_FILE, LOCK_FILE, Prior, PriorSource, RunEvent, RunRow, SourceRow, StatRow, Store, StoreError,
};
use crate::wiki::{self, ArtifactCounters, PageInputs, TemplateSet};

/// The folders of the output layout, created by every build.
pub const OUTPUT_LAYOUT: [&str; 8] = ["wiki", "indexes", "schemas", "logs", "runs", "cache", "exports", "artifacts"];

const SOURCE_HASH: &str = env!("KNOWLEDGE_SOURCE_HASH");

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
    Embeddings(String),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
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

/// What a build did, with the counters that prove it. Printed by `knowledge build --json`.
#[derive(Debug, Clone, Serialize)]
pub struct BuildSummary {
    /// The run recorded in the index, or `None` when nothing changed and nothing was written.
    pub run_id: Option<String>,
    pub index: PathBuf,
    /// Every source was re-derived: a new index, another format, or another pipeline fingerprint.
    pub full_rebuild: bool,
    pub wrote: bool,
    pub sources: SourceCounters,
    pub chunks: ChunkCounters,
    pub queries: QueryCounters,
    pub skipped: Vec<Skipped>,
    /// Generated concept pages: rendered this build, files written or already equal, pages removed.
    pub pages: ArtifactCounters,
    /// Index shards (the root, a Markdown and a JSON file per section), counted like pages.
    pub shards: ArtifactCounters,
    /// What the build did to the embeddings generation, when a provider is configured and the build wrote.
    pub embeddings: Option<crate::embeddings::EmbeddingCounters>,
    /// The findings the build's lint stored, when it ran one (`[lint] on_build`, and something was written).
    pub lint: Option<LintCounts>,
    /// Generated files the build did not write because a file it did not generate is in their place
    /// (relative to the output folder). The build never overwrites a file of the user's.
    pub blocked: Vec<String>,
    /// Wall time per stage, in milliseconds.
    pub stages_ms: StageTimes,
    pub wall_ms: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTimes {
    /// Opening the index and reading what it holds.
    pub open: u64,
    /// Walking the tree and checking stats.
    pub scan: u64,
    /// Reading and hashing files whose stats moved.
    pub read: u64,
    /// Running the queries for changed sources while their rows are inserted (the two overlap).
    pub compile: u64,
    /// What follows the last row: a fresh index's secondary indexes, lint when it runs, the run record and
    /// the commit.
    pub write: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SourceCounters {
    /// Files the include globs selected, skipped ones among them.
    pub scanned: u64,
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
    pub skipped: u64,
    pub unchanged: u64,
    /// Files that were read and hashed because their size or mtime moved.
    pub hashed: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ChunkCounters {
    /// Chunks whose id did not exist before this build.
    pub computed: u64,
    /// Chunks that existed before and still do, unchanged.
    pub reused: u64,
    pub deleted: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct QueryCounters {
    /// Tracked-function executions (salsa `WillExecute` events) during this build.
    pub executed: u64,
    /// The same, per query, for the queries that ran.
    pub by_query: std::collections::BTreeMap<String, u64>,
}

/// What `knowledge build --check` found.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub up_to_date: bool,
    /// Why every source would be re-derived, when one would be.
    pub reason: Option<String>,
    /// What else the build would do with no source changed: settings, templates, embeddings.
    pub work: Vec<String>,
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
    pub skipped: Vec<Skipped>,
    /// Generated files that are missing or differ from what the index says (edited by hand, deleted).
    pub artifacts: Vec<wiki::Drift>,
}

/// A source to (re-)derive this build.
pub(crate) struct Pending {
    pub(crate) found: FoundFile,
    pub(crate) text: String,
    pub(crate) revision: String,
    pub(crate) prior: Option<PriorSource>,
}

/// What the walk and the change checks found, before any query runs.
pub(crate) struct Scan {
    pub(crate) counters: SourceCounters,
    pub(crate) skipped: Vec<Skipped>,
    /// Sources whose size and mtime match their row: not read.
    pub(crate) unchanged: Vec<String>,
    /// Sources to derive: new, changed, or all of them when the index cannot be trusted.
    pub(crate) pending: Vec<Pending>,
    /// Sources read because their stat moved, whose content is unchanged.
    pub(crate) stats: Vec<StatRow>,
    /// Sources in the index that are gone, unreadable or no longer selected.
    pub(crate) removed: Vec<String>,
    pub(crate) scan_ms: u64,
    pub(crate) read_ms: u64,
    /// When the walk began, in nanoseconds since the epoch: stored with the index for the racy-stat check.
    pub(crate) started_ns: i64,
}

/// Walks the project and sorts every file by what a build must do with it. Reads only files whose size or
/// mtime moved (or every file, when `full_rebuild`).
pub(crate) fn scan(project: &Project, prior: &Prior, full_rebuild: bool, reporter: &dyn Reporter) -> Scan {
    let clock = Instant::now();
    let started_ns = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    reporter.stage("scanning", 0);
    let mut walk = sources::walk(project);
    let generated = wiki::generated_in_project(project, &prior.generated);
    walk.files.retain(|found| !generated.contains(&found.path));
    add_notes(project, &mut walk);
    reporter.finish_stage();
    let mut counters = SourceCounters {
        scanned: (walk.files.len() + walk.skipped.len()) as u64,
        skipped: walk.skipped.len() as u64,
        ..SourceCounters::default()
    };
    let mut skipped = walk.skipped;
    let (to_read, mut unchanged) = split_by_stat(walk.files, prior, full_rebuild);
    counters.unchanged = unchanged.len() as u64;
    counters.hashed = to_read.len() as u64;
    let scan_ms = elapsed_ms(clock);

    let clock = Instant::now();
    reporter.stage("reading", to_read.len() as u64);
    let read: Vec<(FoundFile, Result<String, String>)> = to_read
        .into_par_iter()
        .map(|found| {
            let text = sources::read_text(&found);
            reporter.advance(1);
            (found, text)
        })
        .collect();
    reporter.finish_stage();

    let mut pending = Vec::new();
    let mut stats = Vec::new();
    let mut present: HashSet<String> = unchanged.iter().cloned().collect();
    for (found, text) in read {
        let text = match text {
            Ok(text) => text,
            Err(reason) => {
                counters.skipped += 1;
                skipped.push(Skipped { path: found.path, reason });
                continue;
            }
        };
        // A page an earlier build generated, which this index does not list (its index was deleted):
        // compiler output, not a source.
        if wiki::in_wiki_folder(project, &found.path) && wiki::looks_generated(&text) {
            counters.scanned -= 1;
            continue;
        }
        present.insert(found.path.clone());
        let revision = content_hash(text.as_bytes());
        let prior_source = prior.sources.get(&found.path).cloned();
        match &prior_source {
            Some(p) if !full_rebuild && p.revision == revision => {
                counters.unchanged += 1;
                // A racy file read again with its stat unchanged has nothing to refresh.
                if (p.size, p.mtime_ns) == (found.size, found.mtime_ns) {
                    unchanged.push(found.path);
                } else {
                    stats.push(StatRow { path: found.path, size: found.size, mtime_ns: found.mtime_ns });
                }
            }
            Some(_) => {
                counters.changed += 1;
                pending.push(Pending { found, text, revision, prior: prior_source });
            }
            None => {
                counters.added += 1;
                pending.push(Pending { found, text, revision, prior: None });
            }
        }
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let mut removed: Vec<String> = prior.sources.keys().filter(|path| !present.contains(*path)).cloned().collect();
    removed.sort();
    counters.removed = removed.len() as u64;
    Scan { counters, skipped, unchanged, pending, stats, removed, scan_ms, read_ms: elapsed_ms(clock), started_ns }
}

/// The compiler: a salsa database that lives as long as the process, and the inputs it holds.
#[derive(Default)]
pub struct Compiler {
    db: KnowledgeDb,
    files: HashMap<String, SourceFile>,
    pages: PageInputs,
    /// The run the index held when this compiler's last build ended: what `warm_up` warms the catalog to.
    last_run: Option<String>,
}

impl Compiler {
    #[must_use]
    pub fn new() -> Self {
        Compiler::default()
    }

    /// The database, for tests that inspect the queries.
    #[must_use]
    pub fn db(&self) -> &KnowledgeDb {
        &self.db
    }

    /// Compiles the project into its index.
    pub fn build(&mut self, project: &Project, reporter: &dyn Reporter) -> Result<BuildSummary, BuildError> {
        let clock = Instant::now();
        let started_at = SystemTime::now();
        let queries_before = self.db.executed_queries();
        let by_query_before = self.db.executed_by_query();
        // Templates are read and checked before anything is written: a broken one changes nothing.
        let templates = TemplateSet::load(project)?;
        let output_dir = project.output_dir();
        check_output_folder(project)?;
        for dir in std::iter::once(output_dir.clone()).chain(OUTPUT_LAYOUT.iter().map(|d| output_dir.join(d))) {
            std::fs::create_dir_all(&dir).map_err(|source| BuildError::CreateDir { path: dir.clone(), source })?;
        }
        let _lock = store::writer_lock(&output_dir, |holder| reporter.waiting(holder))?;
        let index = output_dir.join(DB_FILE);
        let mut stages = StageTimes::default();
        let mut stage_clock = Instant::now();
        let mut store = Store::open_for_build(&index)?;
        let prior = store.prior()?;
        // A build stopped after its commit may still owe the day's log its lines: they go first, before this
        // build records what it owes.
        if !prior.needs_schema {
            wiki::complete_log(store.connection(), &output_dir)
                .map_err(|source| BuildError::WriteArtifacts { path: output_dir.clone(), source })?;
        }
        stages.open = lap(&mut stage_clock);
        let embedder = crate::embeddings::configured(project).map_err(BuildError::Embeddings)?;
        let settings = SettingsWork::decide(project, &templates, &prior, Some(store.connection()), embedder.as_deref())
            .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
        let reembed = settings.reembed.is_some();
        let SettingsWork { fingerprint, lint_config, wiki_config, full_rebuild, relint, rewiki, .. } = settings;

        let Scan { counters, skipped, unchanged, pending, stats, removed, scan_ms, read_ms, started_ns } =
            scan(project, &prior, full_rebuild, reporter);
        // The scan measured its own two stages.
        lap(&mut stage_clock);
        (stages.scan, stages.read) = (scan_ms, read_ms);

        // Chunk counters: unchanged sources keep all their chunks; a changed source's chunk ids are read now,
        // before the transaction replaces its rows, and compared with its new ones as they are written.
        let mut chunk_counters = ChunkCounters::default();
        for path in unchanged.iter().chain(stats.iter().map(|stat| &stat.path)) {
            chunk_counters.reused += prior.sources[path].chunk_count;
        }
        for path in &removed {
            chunk_counters.deleted += prior.sources[path].chunk_count;
        }
        let mut old_ids: HashMap<&str, HashSet<String>> = HashMap::new();
        // The wiki's catalog inputs kept from the prior run let the query graph decide what an edit reaches.
        // A cold catalog is read whole, so the build first compares what each changed source gave the planner:
        // while that stays equal, the edit reaches only pages that list the source.
        let warm = self.pages.catalog_matches(prior.last_run.as_deref());
        let mut old_plan_inputs: HashMap<&str, String> = HashMap::new();
        let section_field = project.config.wiki.section_field.as_deref();
        for item in &pending {
            if let Some(p) = item.prior.as_ref().filter(|_| !prior.needs_schema) {
                old_ids.insert(item.found.path.as_str(), store.chunk_ids(p.id)?.into_iter().collect());
                if !warm {
                    let stored = store.plan_inputs(p.id)?;
                    old_plan_inputs.insert(item.found.path.as_str(), wiki::plan_inputs_stored(&stored, section_field));
                }
            }
        }
        chunk_counters.total = chunk_counters.reused;

        let wrote = full_rebuild
            || relint
            || rewiki
            || reembed
            || !pending.is_empty()
            || !removed.is_empty()
            || !stats.is_empty();
        let mut summary = BuildSummary {
            run_id: None,
            index,
            full_rebuild,
            wrote,
            sources: counters,
            chunks: chunk_counters,
            queries: QueryCounters::default(),
            skipped,
            pages: ArtifactCounters::default(),
            shards: ArtifactCounters::default(),
            embeddings: None,
            lint: None,
            blocked: Vec::new(),
            stages_ms: StageTimes::default(),
            wall_ms: 0,
        };
        if wrote {
            let run_id = run_id(started_at);
            summary.run_id = Some(run_id.clone());
            let replaced = pending
                .iter()
                .filter_map(|item| item.prior.as_ref().map(|p| p.id))
                .chain(removed.iter().map(|path| prior.sources[path].id))
                .collect();
            let rules = LabelRules::new(project);
            let write = BuildWrite {
                run_id: run_id.clone(),
                create_schema: prior.needs_schema,
                replace_all: full_rebuild,
                replaced,
                stats,
                events: run_events(&pending, &removed, &prior, &summary.skipped, full_rebuild, &rules),
                source_owner: project.name(),
                config: project.config_text.clone(),
                lint_config,
                wiki_config,
                principals: serde_json::to_string(&project.config.permissions.principals)
                    .expect("principals serialize"),
                scan_started_ns: started_ns,
            };
            let inputs = self.sync_inputs(project, &pending);
            // Whether the plan may change (a source's signals or labels changed, a source came or went, or
            // the settings did), and the changed sources whose signals did not.
            let mut replan = full_rebuild || prior.needs_schema || rewiki || !removed.is_empty();
            let mut touched = Vec::new();
            let streamed = Instant::now();
            reporter.stage("compiling", pending.len() as u64);
            let mut tx = store.begin(&write)?;
            // The queries run on rayon's threads while this thread writes their rows into the transaction.
            std::thread::scope(|scope| -> Result<(), BuildError> {
                let (sender, receiver) = std::sync::mpsc::sync_channel::<SourceRow>(256);
                let db = self.db.clone();
                let (inputs, pending, rules) = (&inputs, &pending, &rules);
                scope.spawn(move || {
                    inputs.par_iter().zip(pending).for_each_with((db, sender), |(db, sender), (&file, item)| {
                        let outline = outline(db, file);
                        let labels = rules.labels(&item.found.path, outline.front_matter.as_ref());
                        let signals = concept_signals(db, file);
                        let row = source_row(item, outline, &chunks(db, file), lint_facts(db, file), signals, labels);
                        // Sending fails only once the writer has failed; the rows then have nowhere to go.
                        let _ = sender.send(row);
                    });
                });
                for row in receiver {
                    tx.write_source(&row)?;
                    if !warm {
                        match old_plan_inputs.get(row.path.as_str()) {
                            Some(old) if *old == wiki::plan_inputs_of(&row, section_field) => {
                                touched.push(row.path.clone())
                            }
                            _ => replan = true,
                        }
                    }
                    let old = old_ids.get(row.path.as_str());
                    let kept = row.chunks.iter().filter(|c| old.is_some_and(|old| old.contains(&c.id))).count() as u64;
                    let counted = &mut summary.chunks;
                    counted.reused += kept;
                    counted.computed += row.chunks.len() as u64 - kept;
                    counted.deleted += old.map_or(0, |old| old.len() as u64 - kept);
                    counted.total += row.chunks.len() as u64;
                    reporter.advance(1);
                }
                Ok(())
            })?;
            tx.finish_sources()?;
            reporter.finish_stage();
            let rows_done = Instant::now();
            let conn = tx.connection();
            let sql = |source| StoreError::Sqlite { path: summary.index.clone(), source };

            // The wiki: always with a warm catalog; with a cold one only when the edit can reach a page (a
            // source came or went, what it gives the planner changed, or a page lists it).
            let changed: Vec<String> =
                pending.iter().map(|item| item.found.path.clone()).chain(removed.iter().cloned()).collect();
            let mut stage = wiki::Stage::default();
            if warm || replan || wiki::any_page_lists(conn, &touched).map_err(sql)? {
                let context = wiki::StageContext {
                    project,
                    templates: &templates,
                    run_id: &run_id,
                    full: full_rebuild || prior.needs_schema,
                    catalog: wiki::CatalogSync {
                        reseed: full_rebuild || prior.needs_schema || rewiki,
                        prior_run: prior.last_run.as_deref(),
                        changed: &changed,
                    },
                    same_plan_except: (!warm && !replan).then_some(touched.as_slice()),
                };
                stage = wiki::compile(conn, &mut self.db, &mut self.pages, &context)?;
            }
            let started = humantime::format_rfc3339_millis(started_at).to_string();
            wiki::record_log(conn, &run_id, &started, &stage.changes).map_err(sql)?;
            (summary.pages, summary.shards) = (stage.pages, stage.shards);
            // With no provider, the vectors of one turned off go with this transaction; with one, the
            // embedding stage runs after the commit (below), so no provider call holds the write lock.
            if embedder.is_none() {
                crate::embeddings::drop_if_turned_off(conn).map_err(sql)?;
            }
            // Lint reads the facts of every source as this transaction leaves them.
            let findings: Option<Vec<crate::store::LintRow>> = if project.config.lint.on_build {
                let findings = crate::lint::lint_index(project, conn).map_err(sql)?;
                summary.lint = Some(LintCounts::of(&findings));
                Some(findings.into_iter().map(lint_row).collect())
            } else {
                None
            };
            // The summary as the commit knows it; the build's end replaces it with the printed one.
            let mut recorded = summary.clone();
            recorded.queries.executed = self.db.executed_queries() - queries_before;
            recorded.wall_ms = elapsed_ms(clock);
            let run = RunRow {
                id: run_id.clone(),
                started_at: started,
                finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                tool_version: env!("CARGO_PKG_VERSION").to_string(),
                fingerprint,
                vcs: serde_json::to_string(&crate::sources::vcs::context(&project.root)).expect("context serializes"),
                summary: serde_json::to_string(&recorded).expect("summary serializes"),
            };
            tx.commit(&run, &stage.events, findings.as_deref())?;
            crate::failpoint("after-commit");
            // Embeddings after the wiki, so generated pages are embedded with the sources: read what the
            // committed index lacks, ask the provider with no transaction open, then write the vectors and
            // the run's final summary in a transaction of their own. A build stopped before that leaves the
            // generation behind its index, which the next build (and `--check`) sees.
            if let Some(embedder) = embedder.as_deref() {
                let plan = crate::embeddings::EmbeddingPlan::read(store.connection(), embedder.model())
                    .map_err(|source| StoreError::Sqlite { path: summary.index.clone(), source })?;
                let batch = project.config.embeddings.batch_size as usize;
                reporter.stage("embedding", plan.texts() as u64);
                let embedded = crate::embeddings::embed(&plan, embedder, batch, &|n| reporter.advance(n as u64));
                reporter.finish_stage();
                let stage = store.begin_stage()?;
                let counters = crate::embeddings::apply(stage.connection(), embedder, &plan, &embedded, &run_id)
                    .map_err(|source| StoreError::Sqlite { path: summary.index.clone(), source })?;
                summary.embeddings = Some(counters);
                recorded.embeddings.clone_from(&summary.embeddings);
                stage.commit(&run_id, &serde_json::to_string(&recorded).expect("summary serializes"))?;
            }
            // `compile` is the overlapped derive-and-insert stage; `write` is what follows: the run and the commit.
            stages.compile = elapsed_ms(streamed) - elapsed_ms(rows_done);
            stage_clock = rows_done;
        }
        // The index is committed; the files under the output folder follow it (and a file edited or deleted
        // by hand since the last build is restored). A build that wrote owes the log its own lines; one that
        // did not paid any earlier debt before it began.
        if wrote {
            wiki::complete_log(store.connection(), &output_dir)
                .map_err(|source| BuildError::WriteArtifacts { path: output_dir.clone(), source })?;
        }
        let output_in_project = wiki::project_path_of_artifact(project, "");
        summary.blocked = wiki::sync_files(
            store.connection(),
            &output_dir,
            &output_in_project,
            &mut summary.pages,
            &mut summary.shards,
        )
        .map_err(|source| BuildError::WriteArtifacts { path: output_dir.clone(), source })?;
        summary.queries.executed = self.db.executed_queries() - queries_before;
        summary.queries.by_query = self
            .db
            .executed_by_query()
            .into_iter()
            .map(|(name, n)| (n - by_query_before.get(&name).copied().unwrap_or(0), name))
            .filter(|(n, _)| *n > 0)
            .map(|(n, name)| (name, n))
            .collect();
        stages.write = lap(&mut stage_clock);
        summary.stages_ms = stages;
        summary.wall_ms = elapsed_ms(clock);
        if let Some(run_id) = &summary.run_id {
            store.record_summary(run_id, &serde_json::to_string(&summary).expect("summary serializes"))?;
        }
        self.last_run = summary.run_id.clone().or(prior.last_run);
        Ok(summary)
    }

    /// Reads the wiki's catalog from the committed index into the kept database, if it is not there yet,
    /// so that the next build re-plans and re-models only what its edit reaches. A cost of one cold build's
    /// catalog read, paid between builds: `--watch` calls it after each build.
    pub fn warm_up(&mut self, project: &Project) -> Result<(), StoreError> {
        // After a build that kept the catalog warm there is nothing to read.
        if self.last_run.is_some() && self.pages.catalog_matches(self.last_run.as_deref()) {
            return Ok(());
        }
        let index = project.output_dir().join(DB_FILE);
        let conn = store::open_read_only(&index)?;
        let sql = |source| StoreError::Sqlite { path: index.clone(), source };
        match store::meta(&conn, "last_run").map_err(sql)? {
            Some(run) if project.config.wiki.enabled => {
                wiki::warm_catalog(&conn, &mut self.db, &mut self.pages, project, &run).map_err(sql)
            }
            _ => Ok(()),
        }
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

/// Whether an index's rows were derived by this binary with these settings, so they can be reused.
pub(crate) fn trusts(prior: &Prior, fingerprint: &str) -> bool {
    !prior.needs_schema && prior.fingerprint.as_deref() == Some(fingerprint)
}

/// What a build must do with no source changed, decided the same way for `knowledge build` and for
/// `knowledge build --check`, so the check answers exactly whether a build would change anything.
pub(crate) struct SettingsWork {
    /// The pipeline fingerprint and the `[lint]` and `[wiki]` settings' hashes this binary and `kc.toml`
    /// give, as the index stores them.
    pub(crate) fingerprint: String,
    pub(crate) lint_config: String,
    pub(crate) wiki_config: String,
    /// Every source is re-derived: no index in this format, or another pipeline fingerprint.
    pub(crate) full_rebuild: bool,
    /// The `[lint]` settings changed: the stored facts are linted again.
    pub(crate) relint: bool,
    /// The `[wiki]` settings or templates changed: the wiki is planned and rendered again.
    pub(crate) rewiki: bool,
    /// Why the embedding stage must run (another model, pending or queued work).
    pub(crate) reembed: Option<String>,
}

impl SettingsWork {
    /// `index`: the index `prior` was read from; `None` when there is none (then `prior` needs a schema).
    pub(crate) fn decide(
        project: &Project,
        templates: &TemplateSet,
        prior: &Prior,
        index: Option<&rusqlite::Connection>,
        embedder: Option<&dyn crate::embeddings::Embedder>,
    ) -> rusqlite::Result<SettingsWork> {
        let model = embedder.map(crate::embeddings::Embedder::model);
        let reembed = match index.filter(|_| !prior.needs_schema) {
            Some(conn) => crate::embeddings::needs_stage(conn, model)?,
            None => model.map(|model| format!("nothing is embedded with `{model}` yet")),
        };
        let (fingerprint, lint_config) = (fingerprint(project), lint_fingerprint(project));
        let wiki_config = wiki::fingerprint(project, templates);
        Ok(SettingsWork {
            full_rebuild: !trusts(prior, &fingerprint),
            relint: prior.lint_config.as_deref() != Some(lint_config.as_str()),
            rewiki: prior.wiki_config.as_deref() != Some(wiki_config.as_str()),
            fingerprint,
            lint_config,
            wiki_config,
            reembed,
        })
    }
}

/// A build refuses an output folder that holds sources (say `[output] dir = "docs"`): it would hide them
/// from the walk and put generated files among them. Hand-written pages in its `wiki/` are sources by
/// design, and the other folders of the layout are the tool's.
fn check_output_folder(project: &Project) -> Result<(), crate::config::ConfigError> {
    let output_dir = project.output_dir();
    let Ok(entries) = std::fs::read_dir(&output_dir) else { return Ok(()) };
    let sources = &project.config.sources;
    let include = sources::glob_set(sources.include.iter().map(|g| g.get_ref().as_str()));
    let exclude = sources::glob_set(sources.exclude.iter().map(|g| g.get_ref().as_str()));
    let prefix = project.config.output.dir.get_ref().trim_matches('/').trim_start_matches("./").to_string();
    let mut folders: Vec<(PathBuf, String)> = Vec::new();
    // The tool's own files: the index and its journal, the stat cache, the lock, the notes, temporary files.
    let own = |name: &str| {
        name.starts_with(DB_FILE)
            || [wiki::STAT_CACHE, LOCK_FILE, crate::sources::notes::NOTES_FILE].contains(&name)
            || name.starts_with('.')
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !OUTPUT_LAYOUT.contains(&name.as_str()) && !own(&name) {
            folders.push((entry.path(), format!("{prefix}/{name}")));
        }
    }
    while let Some((path, relative)) = folders.pop() {
        let Ok(kind) = std::fs::symlink_metadata(&path).map(|m| m.file_type()) else { continue };
        if kind.is_dir() {
            for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                folders.push((entry.path(), format!("{relative}/{}", entry.file_name().to_string_lossy())));
            }
        } else if include.is_match(&relative) && !exclude.is_match(&relative) {
            return Err(project.invalid_output(format!(
                "`[output] dir` = {:?} holds sources (`{}`); the output needs a folder of its own (the default is \".hasna/knowledge\")",
                project.config.output.dir.get_ref(),
                crate::escape(&relative),
            )));
        }
    }
    Ok(())
}

/// What a build would change in the index or the generated files, without writing anything: `knowledge
/// build --check`. Sources whose content is unchanged count as up to date even when their mtime moved
/// (a build would only refresh its stat cache).
pub fn check(project: &Project) -> Result<Check, BuildError> {
    check_output_folder(project)?;
    let templates = TemplateSet::load(project)?;
    let index = project.output_dir().join(DB_FILE);
    let conn = store::open_read_only(&index).ok();
    let prior = conn
        .as_ref()
        .and_then(|conn| store::read_prior(conn).ok())
        .unwrap_or(Prior { needs_schema: true, ..Prior::default() });
    let embedder = crate::embeddings::configured(project).map_err(BuildError::Embeddings)?;
    let settings = SettingsWork::decide(project, &templates, &prior, conn.as_ref(), embedder.as_deref())
        .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
    let scan = scan(project, &prior, settings.full_rebuild, &Silent);
    let mut check = Check {
        up_to_date: true,
        reason: None,
        work: Vec::new(),
        added: Vec::new(),
        changed: Vec::new(),
        removed: scan.removed,
        skipped: scan.skipped,
        artifacts: Vec::new(),
    };
    if let Some(conn) = conn.as_ref().filter(|_| !prior.needs_schema) {
        check.artifacts = wiki::drift(conn, &project.output_dir(), &wiki::project_path_of_artifact(project, ""))
            .map_err(|source| StoreError::Sqlite { path: index.clone(), source })?;
    }
    if prior.needs_schema {
        check.reason = Some("no index in this binary's format".to_string());
    } else if settings.full_rebuild {
        check.reason = Some("the index was built by another binary or with other settings".to_string());
    }
    if !settings.full_rebuild {
        if settings.relint {
            check.work.push("the [lint] settings changed: lint would run again on the stored facts".to_string());
        }
        if settings.rewiki {
            check.work.push("the [wiki] settings or templates changed: the wiki would be planned again".to_string());
        }
    }
    if let Some(reason) = settings.reembed {
        check.work.push(format!("embeddings: {reason}"));
    }
    for item in scan.pending {
        if item.prior.is_some() {
            check.changed.push(item.found.path);
        } else {
            check.added.push(item.found.path);
        }
    }
    check.up_to_date = check.reason.is_none()
        && check.work.is_empty()
        && check.added.is_empty()
        && check.changed.is_empty()
        && check.removed.is_empty()
        && check.artifacts.is_empty();
    Ok(check)
}

/// Notes are sources too: `knowledge://item/ID`, with the note's text inline. Each takes the notes file's
/// mtime, so any change to the file (a hand edit included) re-reads its notes, and the content hash decides
/// which changed. A notes file that cannot be read is reported as skipped, and its notes lose their rows.
fn add_notes(project: &Project, walk: &mut sources::Walk) {
    let output_dir = project.output_dir();
    let file = output_dir.join(crate::sources::notes::NOTES_FILE);
    let mtime_ns = std::fs::metadata(&file).map_or(0, |metadata| sources::mtime_ns(&metadata));
    match crate::sources::notes::load(&output_dir) {
        Ok(notes) => walk.files.extend(notes.into_iter().map(|note| FoundFile {
            path: SourceRef::note(&note.id).path(),
            absolute: file.clone(),
            size: note.text.len() as u64,
            mtime_ns,
            inline: Some(note.text),
        })),
        Err(error) => walk
            .skipped
            .push(Skipped { path: crate::sources::notes::NOTES_FILE.to_string(), reason: crate::error_chain(&error) }),
    }
}

/// Files whose size and mtime match their row are unchanged without being read, unless the row's mtime is
/// racy: a file modified within [`RACY_NS`] of the moment the last writing build began its scan may be
/// modified again within the same clock tick, at the same size, and its stat would not show it (Git's
/// "racily clean" entries). Those are read and hashed; only their content decides.
fn split_by_stat(files: Vec<FoundFile>, prior: &Prior, full_rebuild: bool) -> (Vec<FoundFile>, Vec<String>) {
    let mut to_read = Vec::new();
    let mut unchanged = Vec::new();
    let racy = |mtime_ns: i64| prior.scan_started_ns.is_some_and(|started| mtime_ns >= started - RACY_NS);
    for found in files {
        match prior.sources.get(&found.path) {
            Some(p) if !full_rebuild && p.size == found.size && p.mtime_ns == found.mtime_ns && !racy(p.mtime_ns) => {
                unchanged.push(found.path);
            }
            _ => to_read.push(found),
        }
    }
    (to_read, unchanged)
}

/// How close to a scan a file's mtime makes its stat untrustworthy: above the coarsest clock tick of the
/// file systems this runs on (Linux updates file times once per scheduler tick, at most 10 ms).
const RACY_NS: i64 = 20_000_000;

/// Findings by severity.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct LintCounts {
    pub errors: u64,
    pub warnings: u64,
    pub info: u64,
}

impl LintCounts {
    fn of(findings: &[crate::lint::Diagnostic]) -> LintCounts {
        let count = |severity| findings.iter().filter(|d| d.severity == severity).count() as u64;
        LintCounts {
            errors: count(crate::lint::Severity::Error),
            warnings: count(crate::lint::Severity::Warning),
            info: count(crate::lint::Severity::Info),
        }
    }
}

fn lint_row(d: crate::lint::Diagnostic) -> crate::store::LintRow {
    crate::store::LintRow {
        path: d.path,
        line: d.line,
        column: d.column,
        severity: d.severity.as_str(),
        code: d.code,
        message: d.message,
    }
}

/// What the stored lint results depend on besides the facts: every `[lint]` setting.
fn lint_fingerprint(project: &Project) -> String {
    let lint = &project.config.lint;
    let codes = |list: &[toml::Spanned<String>]| list.iter().map(|c| c.get_ref().clone()).collect::<Vec<_>>();
    let severities: Vec<(String, &str)> =
        lint.severity.iter().map(|(c, s)| (c.get_ref().clone(), s.as_str())).collect();
    let material = format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{}\n{}\n{:?}\n{}\n",
        codes(&lint.enable),
        codes(&lint.disable),
        severities,
        lint.contradiction_patterns,
        lint.new_article_min_sources,
        lint.near_duplicate_threshold.get_ref(),
        codes(&lint.ignore_links),
        lint.on_build,
    );
    content_hash(material.as_bytes())
}

/// The permission labels of sources: front matter `visibility` and `labels`, and `[permissions] rules`.
struct LabelRules {
    globs: globset::GlobSet,
    labels: Vec<Vec<String>>,
}

impl LabelRules {
    fn new(project: &Project) -> LabelRules {
        let rules = &project.config.permissions.rules;
        LabelRules {
            globs: sources::glob_set(rules.iter().map(|rule| rule.path.get_ref().as_str())),
            labels: rules.iter().map(|rule| rule.labels.clone()).collect(),
        }
    }

    /// Sorted, lowercased and comma-separated; empty when the source has none. A file that is not a source
    /// (skipped) has no front matter, but its path rules still label it.
    fn labels(&self, path: &str, front_matter: Option<&knowledge_queries::FrontMatter>) -> String {
        let mut labels: Vec<String> =
            self.globs.matches(path).into_iter().flat_map(|i| self.labels[i].clone()).collect();
        if let Some(front_matter) = front_matter {
            for key in ["visibility", "labels"] {
                match front_matter.fields.get(key) {
                    Some(knowledge_queries::FrontMatterValue::Scalar(value)) => labels.push(value.clone()),
                    Some(knowledge_queries::FrontMatterValue::List(values)) => labels.extend(values.iter().cloned()),
                    None => {}
                }
            }
        }
        let mut labels: Vec<String> =
            labels.iter().map(|l| l.trim().to_lowercase()).filter(|l| !l.is_empty() && !l.contains(',')).collect();
        labels.sort();
        labels.dedup();
        labels.join(",")
    }
}

/// Everything the derived rows depend on besides the sources themselves. Nothing about where the tree sits
/// (its folder, the project's default name) is part of it, so a clone elsewhere trusts the same index.
pub(crate) fn fingerprint(project: &Project) -> String {
    let chunking = &project.config.chunking;
    let material = format!(
        "knowledge {}\nformat {}\nsource {}\nchunking {} {}\ncontradiction patterns {:?}\npermissions {:?} {:?}\nwiki folder {}\n",
        env!("CARGO_PKG_VERSION"),
        store::FORMAT_VERSION,
        SOURCE_HASH,
        chunking.target_bytes.get_ref(),
        chunking.overlap_bytes.get_ref(),
        project.config.lint.contradiction_patterns,
        project.config.permissions.rules.iter().map(|r| (r.path.get_ref(), &r.labels)).collect::<Vec<_>>(),
        project.config.permissions.principals,
        wiki::wiki_folder(project),
    );
    content_hash(material.as_bytes())
}

fn source_row(
    item: &Pending,
    outline: &Outline,
    chunks: &[Chunk],
    facts: &LintFacts,
    signals: &[Signal],
    labels: String,
) -> SourceRow {
    let path = &item.found.path;
    let source = SourceRef::from_path(path);
    let kind = SourceKind::from_path(path);
    // Notes are not concepts' sources: they have no path a page could link to.
    let is_note = source.origin() == Origin::Note;
    SourceRow {
        path: path.clone(),
        uri: source.uri(),
        kind: kind.as_str(),
        mime: kind.mime(),
        size: item.found.size,
        mtime_ns: item.found.mtime_ns,
        revision: item.revision.clone(),
        title: outline.title.clone(),
        outline: serde_json::to_string(outline).expect("outline serializes"),
        lint_facts: serde_json::to_string(facts).expect("facts serialize"),
        labels,
        chunks: crate::sources::chunk_rows(&item.text, &outline.title, chunks, !is_note),
        signals: if is_note { Vec::new() } else { signals.to_vec() },
    }
}

/// One event per source the build added, changed, removed or skipped. A full rebuild derives every source
/// again and records one `index_rebuilt` event instead of one per source: `source_revisions.first_run`
/// already says when each revision first appeared.
fn run_events(
    pending: &[Pending],
    removed: &[String],
    prior: &Prior,
    skipped: &[Skipped],
    full_rebuild: bool,
    rules: &LabelRules,
) -> Vec<RunEvent> {
    let mut events: Vec<RunEvent> = if full_rebuild {
        vec![RunEvent {
            kind: "index_rebuilt",
            path: String::new(),
            old_revision: None,
            new_revision: None,
            // No count: it would include sources some readers may not know exist.
            detail: Some("every source was derived again".to_string()),
            labels: None,
        }]
    } else {
        pending
            .iter()
            .map(|item| RunEvent {
                kind: if item.prior.is_some() { "source_changed" } else { "source_added" },
                path: item.found.path.clone(),
                old_revision: item.prior.as_ref().map(|p| p.revision.clone()),
                new_revision: Some(item.revision.clone()),
                detail: None,
                labels: None,
            })
            .collect()
    };
    events.extend(removed.iter().map(|path| RunEvent {
        kind: "source_removed",
        path: path.clone(),
        old_revision: Some(prior.sources[path].revision.clone()),
        new_revision: None,
        detail: None,
        labels: None,
    }));
    events.extend(skipped.iter().map(|s| RunEvent {
        kind: "source_skipped",
        path: s.path.clone(),
        old_revision: None,
        new_revision: None,
        detail: Some(s.reason.clone()),
        labels: Some(rules.labels(&s.path, None)),
    }));
    events
}

/// A run id unique across processes (pid) and across builds of one process (a counter), ordered by time.
pub(crate) fn run_id(started_at: SystemTime) -> String {
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stamp: String =
        humantime::format_rfc3339_millis(started_at).to_string().chars().filter(char::is_ascii_alphanumeric).collect();
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("run-{stamp}-{}-{n}", std::process::id())
}

/// Milliseconds since `clock`, which restarts.
fn lap(clock: &mut Instant) -> u64 {
    let ms = elapsed_ms(*clock);
    *clock = Instant::now();
    ms
}

fn elapsed_ms(clock: Instant) -> u64 {
    u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX)
}
