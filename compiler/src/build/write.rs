//! The build's one write transaction: the changed sources' rows (derived on rayon's threads while this
//! thread writes them), then the wiki, the run's log and lint, the commit, and the embedding stage after it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use knowledge_queries::{CodeSettings, SourceFile, chunks, concept_signals, lint_facts, outline};
use rayon::prelude::*;

use super::rows::{LabelRules, lint_row, run_events, source_row};
use super::{BuildError, BuildSummary, ChunkCounters, Compiler, EntityCounters, LintCounts, Pending, Reporter};
use super::{PARALLEL_DERIVE_FROM, SettingsWork, run_id};
use crate::config::Project;
use crate::sources::db::KnowledgeDb;
use crate::store::{BuildTransaction, BuildWrite, Prior, RunRow, SourceRow, StatRow, Store, StoreError};
use crate::wiki::{self, TemplateSet};

/// What a writing build writes: the scan's findings and what was decided about them.
pub(super) struct WriteJob<'a> {
    pub(super) project: &'a Project,
    pub(super) templates: &'a TemplateSet,
    pub(super) settings: &'a SettingsWork,
    pub(super) prior: &'a Prior,
    pub(super) pending: &'a [Pending],
    pub(super) removed: &'a [String],
    /// The sources whose stat moved but whose content did not: their stat rows are refreshed.
    pub(super) stats: Vec<StatRow>,
    /// When the scan began (ns since the epoch), stored for the racy-stat check.
    pub(super) scan_started_ns: i64,
    pub(super) before: &'a Before<'a>,
    pub(super) embedder: Option<&'a dyn crate::embeddings::Embedder>,
    pub(super) started_at: SystemTime,
    /// The build's clock and the salsa executions before it, for the summary the commit stores.
    pub(super) clock: Instant,
    pub(super) queries_before: u64,
}

/// What the embedding stage after a build's commit embeds: the configured generation, from the chunks the
/// run `derived_by` derived (every chunk with `None`).
#[derive(Clone, Copy)]
struct EmbedJob<'a> {
    project: &'a Project,
    embedder: &'a dyn crate::embeddings::Embedder,
    derived_by: Option<&'a str>,
    run_id: &'a str,
}

/// What an edit can reach of the wiki: whether the plan may change (`replan`; `rewiki` for settings that
/// make every page compared again), the sources whose rows changed, and every path changed or removed.
struct WikiReach<'a> {
    replan: bool,
    rewiki: bool,
    touched: &'a [String],
    moved: &'a [(String, wiki::MovedSignals)],
    changed: &'a [String],
}

/// What the write leaves for the rest of the build.
pub(super) struct Written {
    /// Artifact texts the wiki stage made that the index holds only as hashes, for the file sync.
    pub(super) fresh_files: HashMap<String, Arc<str>>,
    /// The overlapped derive-and-insert stage's time, and when it ended (the write stage's start).
    pub(super) compile_ms: u64,
    pub(super) rows_done: Instant,
}

impl WriteJob<'_> {
    /// The transaction's opening: the sources it replaces, the stat rows it refreshes (taken from the job),
    /// the run's events, and what the index stores of the settings for readers without `kc.toml`.
    fn opening(&mut self, run_id: &str, events: Vec<crate::store::RunEvent>) -> BuildWrite {
        let replaced = self
            .pending
            .iter()
            .filter_map(|item| item.prior.as_ref().map(|p| p.id))
            .chain(self.removed.iter().map(|path| self.prior.sources[path].id))
            .collect();
        let project = self.project;
        BuildWrite {
            run_id: run_id.to_string(),
            create_schema: self.prior.needs_schema,
            replace_all: self.settings.full_rebuild,
            replaced,
            stats: std::mem::take(&mut self.stats),
            events,
            source_owner: project.name(),
            config: project.config_text.clone(),
            lint_config: self.settings.lint_config.clone(),
            wiki_config: self.settings.wiki_config.clone(),
            principals: serde_json::to_string(&project.config.permissions.principals).expect("principals serialize"),
            purposes: purposes_json(project),
            scan_started_ns: self.scan_started_ns,
        }
    }
}

/// The run's row as the commit records it: `recorded` is the summary as the commit knows it.
fn run_row(
    run_id: &str,
    started: String,
    settings: &SettingsWork,
    project: &Project,
    recorded: &BuildSummary,
) -> RunRow {
    RunRow {
        id: run_id.to_string(),
        started_at: started,
        finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        fingerprint: settings.fingerprint.clone(),
        vcs: serde_json::to_string(&crate::sources::vcs::context(&project.root)).expect("context serializes"),
        summary: serde_json::to_string(recorded).expect("summary serializes"),
    }
}

impl Compiler {
    /// Writes the build's transaction and commits it; with an embedding provider, the embedding stage
    /// follows in a transaction of its own. Fills `summary` with what was written.
    pub(super) fn write_index(
        &mut self,
        store: &mut Store,
        mut job: WriteJob<'_>,
        summary: &mut BuildSummary,
        reporter: &dyn Reporter,
    ) -> Result<Written, BuildError> {
        let WriteJob { project, settings, prior, pending, removed, before, embedder, .. } = job;
        // Every source is derived again, an index that needs its schema made included (`trusts`).
        let full_rebuild = settings.full_rebuild;
        let reembed = settings.reembed.is_some();
        let run_id = run_id(job.started_at);
        summary.run_id = Some(run_id.clone());
        let rules = LabelRules::new(project);
        let events = run_events(pending, removed, prior, &summary.skipped, full_rebuild, &rules);
        let write = job.opening(&run_id, events);
        let inputs = self.sync_inputs(project, pending);
        let streamed = Instant::now();
        reporter.stage("compiling", pending.len() as u64);
        let mut tx = store.begin(&write)?;
        let reach = self.write_sources(&mut tx, &inputs, pending, &rules, before, summary, reporter)?;
        // Whether the plan may change: a source's signals or labels changed, a source came or went, or
        // the settings did.
        // Pages the writer owes are found by comparing every page again, as after a settings change.
        let rewiki = settings.rewiki || settings.rewrite.is_some();
        let replan = reach.replan || full_rebuild || rewiki || !removed.is_empty();
        let (touched, moved) = (reach.touched, reach.moved);
        let rows_done = Instant::now();
        let conn = tx.connection();
        let sql = |source| StoreError::Sqlite { path: summary.index.clone(), source };

        let changed: Vec<String> =
            pending.iter().map(|item| item.found.path.clone()).chain(removed.iter().cloned()).collect();
        let reach = WikiReach { replan, rewiki, touched: &touched, moved: &moved, changed: &changed };
        // The wiki: always with a warm catalog; with a cold one only when the edit can reach a page (a source came
        // or went, what it gives the planner changed, or a page lists it).
        let reached = before.warm || replan || crate::store::any_page_lists(conn, &touched).map_err(sql)?;
        let (mut stage, writer) =
            if reached { self.wiki_stage(conn, &job, &run_id, &reach)? } else { Default::default() };
        summary.wiki_writer = writer;
        let started = humantime::format_rfc3339_millis(job.started_at).to_string();
        wiki::record_log(conn, &run_id, &started, &stage.changes).map_err(sql)?;
        (summary.pages, summary.shards, summary.artifacts) = (stage.pages, stage.shards, stage.declared);
        let fresh_files = std::mem::take(&mut stage.fresh);
        // With no provider, the vectors of one turned off go with this transaction; with one, the
        // embedding stage runs after the commit (below), so no provider call holds the write lock.
        if embedder.is_none() {
            crate::embeddings::drop_if_turned_off(conn).map_err(sql)?;
        }
        // Lint reads the facts of every source as this transaction leaves them.
        let linted = self.lint_on_build(project, conn, prior, &changed, &run_id, full_rebuild).map_err(sql)?;
        let findings = linted.map(|(counts, findings)| {
            summary.lint = Some(counts);
            findings
        });
        // The summary as the commit knows it; the build's end replaces it with the printed one.
        let mut recorded = summary.clone();
        (recorded.queries.executed, recorded.wall_ms) =
            (self.db.executed_queries() - job.queries_before, crate::elapsed_ms(job.clock));
        let run = run_row(&run_id, started, settings, project, &recorded);
        tx.commit(&run, &stage.events, findings.as_deref())?;
        crate::failpoint("after-commit");
        // Embeddings after the wiki, so generated pages are embedded with the sources: read what the
        // committed index lacks, ask the provider with no transaction open, then write the vectors and
        // the run's final summary in a transaction of their own. A build stopped before that leaves the
        // generation behind its index, which the next build (and `--check`) sees.
        if let Some(embedder) = embedder {
            // A generation complete before this build lacks vectors only where the build derived.
            let derived_by = (!reembed && !full_rebuild).then_some(run_id.as_str());
            let job = EmbedJob { project, embedder, derived_by, run_id: &run_id };
            let counters = embed_stage(store, &mut self.db, &mut self.embeddings, &job, &mut recorded, reporter)?;
            summary.embeddings = Some(counters);
        }
        // `compile` is the overlapped derive-and-insert stage; `write` is what follows: the run and the commit.
        let compile_ms = crate::elapsed_ms(streamed) - crate::elapsed_ms(rows_done);
        Ok(Written { fresh_files, compile_ms, rows_done })
    }

    /// Writes the pending sources' rows (their queries on rayon's threads while this thread inserts) and
    /// finishes them, counting chunks and entities in `summary`: what the edit reaches.
    #[allow(clippy::too_many_arguments)]
    fn write_sources(
        &mut self,
        tx: &mut BuildTransaction<'_>,
        inputs: &[SourceFile],
        pending: &[Pending],
        rules: &LabelRules,
        before: &Before<'_>,
        summary: &mut BuildSummary,
        reporter: &dyn Reporter,
    ) -> Result<PlanReach, BuildError> {
        let reach = self.derive_rows(tx, inputs, pending, rules, before, &mut summary.chunks, reporter)?;
        tx.finish_sources()?;
        let (added, changed, removed) = tx.entity_counts();
        summary.entities = EntityCounters { added, changed, removed };
        reporter.finish_stage();
        Ok(reach)
    }

    /// The wiki's stage of a build, with the `[wiki] writer`'s counters when it has one.
    fn wiki_stage(
        &mut self,
        conn: &rusqlite::Connection,
        job: &WriteJob<'_>,
        run_id: &str,
        reach: &WikiReach<'_>,
    ) -> Result<(wiki::Stage, Option<wiki::WriterCounters>), BuildError> {
        let warm = job.before.warm;
        let full = job.settings.full_rebuild;
        let context = wiki::StageContext {
            project: job.project,
            templates: job.templates,
            run_id,
            full,
            sync: wiki::IndexSync {
                reseed: full || reach.rewiki,
                prior_run: job.prior.last_run.as_deref(),
                changed: reach.changed,
                run: run_id,
            },
            same_plan_except: (!warm && !reach.replan)
                .then_some(wiki::SamePlan { touched: reach.touched, moved: reach.moved }),
        };
        let mut writer = wiki::Writer::configured(job.project);
        let stage = wiki::compile(conn, &mut self.db, &mut self.pages, &context, writer.as_mut())?;
        Ok((stage, writer.map(|writer| writer.counters)))
    }

    /// The lint findings a writing build stores (`[lint] on_build`), from the facts as this transaction
    /// leaves them, with their counts.
    fn lint_on_build(
        &mut self,
        project: &Project,
        conn: &rusqlite::Connection,
        prior: &crate::store::Prior,
        changed: &[String],
        run_id: &str,
        full_rebuild: bool,
    ) -> rusqlite::Result<Option<(LintCounts, Vec<crate::store::LintRow>)>> {
        if !project.config.lint.on_build {
            return Ok(None);
        }
        let sync =
            crate::lint::IndexSync { reseed: full_rebuild, prior_run: prior.last_run.as_deref(), changed, run: run_id };
        let findings = crate::lint::lint_index(project, conn, &mut self.db, &mut self.lint, &sync)?;
        Ok(Some((LintCounts::of(&findings), findings.into_iter().map(lint_row).collect())))
    }

    /// Runs the queries of the pending sources on rayon's threads while this thread writes their rows into
    /// the transaction (an edit's one source on this thread alone: see [`PARALLEL_DERIVE_FROM`]), counting
    /// chunks against the ids each source had before; says what the edit gives the wiki planner.
    #[allow(clippy::too_many_arguments)]
    fn derive_rows(
        &self,
        tx: &mut BuildTransaction<'_>,
        inputs: &[SourceFile],
        pending: &[Pending],
        rules: &LabelRules,
        before: &Before<'_>,
        counted: &mut ChunkCounters,
        reporter: &dyn Reporter,
    ) -> Result<PlanReach, BuildError> {
        let mut reach = PlanReach::default();
        let code_enabled = CodeSettings::try_get(&self.db).is_some_and(|settings| settings.enabled(&self.db));
        let derive = |db: &KnowledgeDb, file: SourceFile, item: &Pending| -> SourceRow {
            let outline = outline(db, file);
            let labels = rules.labels(&item.found.path, outline.front_matter.as_ref());
            let signals = concept_signals(db, file);
            // Without `[code]` no file has entities, and the query is not asked for (nor counted).
            let entities =
                if code_enabled { knowledge_queries::code::entities(db, file) } else { std::sync::Arc::new([]) };
            source_row(item, outline, &chunks(db, file), lint_facts(db, file), signals, entities, labels)
        };
        // The stored plan's named keys, read and split at the first source whose plan inputs changed.
        let mut named_keys: Option<Option<Vec<String>>> = None;
        let mut write = |row: SourceRow| -> Result<(), BuildError> {
            tx.write_source(&row)?;
            // Once one source plans again, the others' comparisons are moot.
            if !before.warm && !reach.replan {
                match same_plan(before, tx, &mut named_keys, &row)? {
                    Some(moved) => {
                        if !moved.is_empty() {
                            reach.moved.push((row.path.clone(), moved));
                        }
                        reach.touched.push(row.path.clone());
                    }
                    None => reach.replan = true,
                }
            }
            let old = before.chunk_ids.get(row.path.as_str());
            let kept = row.chunks.iter().filter(|c| old.is_some_and(|old| old.contains(&c.id))).count() as u64;
            counted.reused += kept;
            counted.computed += row.chunks.len() as u64 - kept;
            counted.deleted += old.map_or(0, |old| old.len() as u64 - kept);
            counted.total += row.chunks.len() as u64;
            reporter.advance(1);
            Ok(())
        };
        if inputs.len() < PARALLEL_DERIVE_FROM {
            for (&file, item) in inputs.iter().zip(pending) {
                write(derive(&self.db, file, item))?;
            }
            return Ok(reach);
        }
        std::thread::scope(|scope| -> Result<(), BuildError> {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<SourceRow>(256);
            let db = self.db.clone();
            scope.spawn(move || {
                inputs.par_iter().zip(pending).for_each_with((db, sender), |(db, sender), (&file, item)| {
                    // Sending fails only once the writer has failed; the rows then have nowhere to go.
                    let _ = sender.send(derive(db, file, item));
                });
            });
            for row in receiver {
                write(row)?;
            }
            Ok(())
        })?;
        Ok(reach)
    }
}

/// What the changed sources were before this build, read before the transaction replaces their rows: each
/// one's chunk ids and, when the catalog is cold, what it gave the wiki planner.
pub(super) struct Before<'a> {
    /// The catalog's inputs match the prior run: the query graph decides what the edit reaches.
    warm: bool,
    chunk_ids: HashMap<&'a str, HashSet<String>>,
    plan_inputs: HashMap<&'a str, crate::store::PlanInputs>,
    section_field: Option<&'a str>,
}

impl<'a> Before<'a> {
    /// `full_rebuild`: the index is another binary's or other settings' (its stored rows may be in another
    /// layout), so every source is derived again and the plan made again: its plan inputs are not read.
    pub(super) fn read(
        store: &Store,
        pending: &'a [Pending],
        prior: &Prior,
        warm: bool,
        full_rebuild: bool,
        section_field: Option<&'a str>,
    ) -> Result<Before<'a>, StoreError> {
        let mut before = Before { warm, chunk_ids: HashMap::new(), plan_inputs: HashMap::new(), section_field };
        for item in pending {
            if let Some(p) = item.prior.as_ref().filter(|_| !prior.needs_schema) {
                before.chunk_ids.insert(item.found.path.as_str(), store.chunk_ids(p.id)?.into_iter().collect());
                if !warm && !full_rebuild {
                    before.plan_inputs.insert(item.found.path.as_str(), store.plan_inputs(p.id)?);
                }
            }
        }
        Ok(before)
    }
}

/// What a cold catalog's build learns from the rows it wrote: whether some source's plan inputs changed,
/// and the changed sources whose did not (only pages listing them can change), with the signals the plan
/// reads that moved in their lists.
#[derive(Default)]
struct PlanReach {
    replan: bool,
    touched: Vec<String>,
    moved: Vec<(String, wiki::MovedSignals)>,
}

/// Whether a changed source leaves the plan as it was, by its stored plan inputs: `Some` with the signals
/// the plan reads that moved in its list (none when its plan inputs are the stored ones). The stored plan's
/// named keys are read once (`named_keys`), at the first source whose signals differ: a checkout that
/// changes many files compares each against the same keys.
fn same_plan(
    before: &Before<'_>,
    tx: &BuildTransaction<'_>,
    named_keys: &mut Option<Option<Vec<String>>>,
    row: &SourceRow,
) -> Result<Option<wiki::MovedSignals>, StoreError> {
    let Some(old) = before.plan_inputs.get(row.path.as_str()) else { return Ok(None) };
    if !wiki::plan_header_unchanged(old, row, before.section_field) {
        return Ok(None);
    }
    if let Some(moved) = wiki::plan_reads_the_same(old, row, None) {
        return Ok(Some(moved));
    }
    let stored = match named_keys {
        Some(keys) => keys,
        None => {
            let keys = tx.plan_named_keys()?.map(|keys| keys.split('\n').map(str::to_string).collect());
            named_keys.insert(keys)
        }
    };
    Ok(stored.as_deref().and_then(|keys| wiki::plan_reads_the_same(old, row, Some(keys))))
}

/// The embedding stage, after the commit: reads what the committed index lacks, asks the provider with no
/// transaction open, then writes the vectors and the run's summary (`recorded`, with the stage's counters)
/// in a transaction of their own. A build stopped before that leaves the generation behind its index,
/// which the next build (and `--check`) sees.
#[allow(clippy::too_many_arguments)]
fn embed_stage(
    store: &mut Store,
    db: &mut KnowledgeDb,
    inputs: &mut crate::embeddings::EmbeddingInputs,
    job: &EmbedJob<'_>,
    recorded: &mut BuildSummary,
    reporter: &dyn Reporter,
) -> Result<crate::embeddings::EmbeddingCounters, BuildError> {
    let EmbedJob { project, embedder, derived_by, run_id } = *job;
    let sql = |source| StoreError::Sqlite { path: recorded.index.clone(), source };
    let plan = crate::embeddings::EmbeddingPlan::read(store.connection(), db, inputs, embedder.model(), derived_by)
        .map_err(sql)?;
    let batch = project.config.embeddings.batch_size as usize;
    reporter.stage("embedding", plan.texts() as u64);
    let embedded = crate::embeddings::embed(&plan, embedder, batch, &|n| reporter.advance(n as u64));
    reporter.finish_stage();
    let stage = store.begin_stage()?;
    let counters = crate::embeddings::apply(stage.connection(), embedder, &plan, &embedded, run_id).map_err(sql)?;
    recorded.embeddings = Some(counters.clone());
    stage.commit(run_id, &serde_json::to_string(recorded).expect("summary serializes"))?;
    Ok(counters)
}

/// `[permissions.purposes]` as the index stores it for readers: each purpose's denied labels, lowercased.
fn purposes_json(project: &Project) -> String {
    let purposes: std::collections::BTreeMap<&str, Vec<String>> = project
        .config
        .permissions
        .purposes
        .iter()
        .map(|(name, p)| (name.get_ref().as_str(), p.deny_labels.iter().map(|l| l.trim().to_lowercase()).collect()))
        .collect();
    serde_json::to_string(&purposes).expect("purposes serialize")
}
