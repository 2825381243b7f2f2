//! The wiki compiler's driver half: sets the concept catalog's inputs from the index inside the build's
//! transaction, asks the query graph (`knowledge_queries::wiki`) for every page's model, renders the pages
//! whose model changed, stores pages, citations, backlinks, shards and the artifact catalog, and after the
//! commit brings the files under the output folder in line with the index. See docs/wiki.md.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use knowledge_queries::wiki::{
    self, Artifact, Catalog, CatalogEntry, PageModel, PageView, PlanSettings, PlannedPage, SignalKind, StoredView,
    Templates, WikiPage, concept_keys, plan_reads,
};
use knowledge_queries::{SourceFile, SourceRef, chunks, content_hash, outline};
use rayon::prelude::*;
use rusqlite::Connection;
use salsa::{Durability, Setter};
use serde::Serialize;

use crate::config::Project;
use crate::sources::db::KnowledgeDb;
use crate::store::{self, ChunkRow, RunEvent, SourceRow, StoreError};

mod catalog;
mod declared;
mod driver;
mod files;
mod log;
mod pages;
mod shards;
mod templates;
mod writer;

pub use crate::sources::mirror::IndexSync;
use catalog::*;
pub use declared::declared_artifact;
use driver::*;
pub use files::{DiskWalk, Drift, FileCounters, SPARE, STAT_CACHE, drift, sync_files};
pub use knowledge_queries::wiki::looks_generated;
pub use log::{complete_log, record_log};
use pages::*;
use shards::*;
use templates::*;
pub use templates::{TemplateSet, fingerprint};
pub use writer::{MIN_SUPPORTED, PROMPT_VERSION, Writer, WriterCounters, identity as writer_identity};

#[derive(Debug, thiserror::Error)]
pub enum WikiError {
    #[error("cannot read the template `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A template that does not compile: its file, line and what is wrong.
    #[error("{0}")]
    Template(String),
}

/// What a build did to one kind of artifact. `rendered` counts renders; `written` and `unchanged` count
/// files checked against the index after the commit, and `compared` those of them read back because the
/// stat cache could not vouch for them (new, re-rendered, missing or touched since); `deleted` counts
/// artifacts the build removed.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct ArtifactCounters {
    pub rendered: u64,
    pub written: u64,
    pub unchanged: u64,
    pub compared: u64,
    pub deleted: u64,
}

/// The wiki's salsa inputs, kept for the life of a `Compiler`: the catalog, the templates, and each
/// rendered page.
#[derive(Default)]
pub struct PageInputs {
    catalog: Option<CatalogInputs>,
    templates: Option<Templates>,
    pages: HashMap<String, (WikiPage, SourceFile)>,
    shards: Option<ShardInputs>,
}

impl PageInputs {
    /// Whether the catalog's inputs match the index as `run` committed it: the wiki stage then costs what
    /// the build's changes reach, and a build may always run it.
    #[must_use]
    pub fn catalog_matches(&self, run: Option<&str>) -> bool {
        self.catalog.as_ref().is_some_and(|state| state.entries.matches(run))
    }
}

/// One artifact the build added, changed or removed, for the day's log.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactChange {
    pub artifact: String,
    pub kind: &'static str,
    pub old_hash: Option<String>,
    pub new_hash: Option<String>,
    /// The source revisions the artifact cites (`file://PATH@REVISION`).
    pub sources: Vec<String>,
}

/// What the in-transaction stage did.
#[derive(Debug, Default)]
pub struct Stage {
    pub pages: ArtifactCounters,
    pub shards: ArtifactCounters,
    /// Each declared kind's, by its name.
    pub declared: BTreeMap<String, ArtifactCounters>,
    pub changes: Vec<ArtifactChange>,
    pub events: Vec<RunEvent>,
    /// Artifact texts this stage made that the index does not hold whole (the shards' JSON files), by
    /// path under the output folder: the file sync writes them without making them again.
    pub fresh: HashMap<String, std::sync::Arc<str>>,
}

/// Everything the stage needs from the build.
pub struct StageContext<'a> {
    pub project: &'a Project,
    pub templates: &'a TemplateSet,
    pub run_id: &'a str,
    /// Every page is rendered and stored again (the page rows' chunks were cleared with all others).
    pub full: bool,
    /// What changed since the run the kept inputs may match (its `run` is `run_id`).
    pub sync: IndexSync<'a>,
    /// In a build whose catalog starts cold, when no source's plan inputs changed in what the plan reads:
    /// the plan is the last build's, so only pages naming a changed source can differ from their rows, and
    /// the others' hashes are not computed. A kept `Compiler` has its memos and needs no such hint.
    pub same_plan_except: Option<SamePlan<'a>>,
}

/// The changed sources of an edit that leaves the plan as the last build left it.
#[derive(Clone, Copy)]
pub struct SamePlan<'a> {
    pub touched: &'a [String],
    /// Of those, each whose signals the plan reads moved in its list, with where they went: the pages'
    /// stored views name them by their old indexes.
    pub moved: &'a [(String, MovedSignals)],
}

impl StageContext<'_> {
    /// A failed statement of the stage, named by the index it ran on.
    fn sql_error(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.project.output_dir().join(store::DB_FILE), source }
    }
}

/// Whether what a source gives the planner besides its signals is what it gave before (`stored`): its
/// permission labels, its title (the planner resolves wikilinks and tells shared titles apart by it, even
/// when the title gives no signal: a file of one heading quotes nothing), and the value of its `[wiki]
/// section_field` (from its outline's front matter).
#[must_use]
pub fn plan_header_unchanged(stored: &store::PlanInputs, row: &SourceRow, section_field: Option<&str>) -> bool {
    let title_and_section = |outline: &str| {
        let outline = serde_json::from_str::<serde_json::Value>(outline).unwrap_or_default();
        let section = section_field.map_or(serde_json::Value::Null, |field| outline["front_matter"][field].clone());
        (outline["title"].clone(), section)
    };
    stored.labels == row.labels && title_and_section(&stored.outline) == title_and_section(&row.outline)
}

/// Where each signal the plan reads went in a source's list: (stored index, new index) of each that moved.
pub type MovedSignals = Vec<(u32, u32)>;

/// Whether the plan reads a source's signals as it read its stored ones (its header unchanged:
/// [`plan_header_unchanged`]): the signals it reads (each one's kind, texts, whether it may be quoted and its
/// weight) the same and in the same order. Then the plan is the last one but for the indexes of the signals
/// that moved, which it gives; `None` otherwise. With the stored plan's `named_keys` the plan does not read a
/// heading or a term of a word no concept is named by ([`plan_reads`]: a new phrase used twice, or a term
/// used more, is such a change, and a term list sorted by use moves the terms after it); without them it
/// reads every signal, and only equal lists keep the plan.
#[must_use]
pub fn plan_reads_the_same(
    stored: &store::PlanInputs,
    row: &SourceRow,
    named_keys: Option<&[String]>,
) -> Option<MovedSignals> {
    type Read<'s> = (&'s str, &'s str, Option<&'s str>, bool, u32);
    /// The signals the plan reads, each with its index.
    fn read<'s>(signals: impl Iterator<Item = Read<'s>>, named_keys: Option<&[String]>) -> Vec<(u32, Read<'s>)> {
        // A signal of another kind than a heading or a term is read whatever its key, which is made only
        // for those two.
        let read_by_plan = |(kind, label, ..): &Read<'_>| match (SignalKind::parse(kind), named_keys) {
            (Some(kind), Some(named_keys)) if kind.is_place_only() => {
                plan_reads(kind, &concept_keys(label).1, named_keys)
            }
            _ => true,
        };
        (0..).zip(signals).filter(|(_, signal)| read_by_plan(signal)).collect()
    }
    let stored_signals = stored.signals.iter().map(|(kind, label, other, quotable, weight)| {
        (kind.as_str(), label.as_str(), other.as_deref(), *quotable, *weight)
    });
    let before = read(stored_signals, named_keys);
    let new_signals =
        row.signals.iter().map(|s| (s.kind.as_str(), s.label.as_str(), s.other.as_deref(), s.quotable, s.weight));
    let after = read(new_signals, named_keys);
    if before.len() != after.len() || before.iter().zip(&after).any(|(old, new)| old.1 != new.1) {
        return None;
    }
    Some(before.iter().zip(&after).filter(|(old, new)| old.0 != new.0).map(|(old, new)| (old.0, new.0)).collect())
}

/// Syncs the wiki's mirrors (the catalog's entries, the shards' page rows) with the index as `run`
/// committed it, through the same sync a build runs, and asks the graph once for what a build asks (every
/// page's model hash, every declared artifact), so that the next build of this `Compiler` re-derives only
/// what its edit reaches: `--watch` does this between builds, after one that left them cold. Templates
/// that do not load leave the shards cold: the next build fails and says why.
pub fn warm_up(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    project: &Project,
    run: &str,
) -> rusqlite::Result<()> {
    let sync = IndexSync { reseed: true, prior_run: None, changed: &[], run };
    if !inputs.catalog_matches(Some(run)) {
        let catalog = sync_catalog(conn, db, inputs, project, &sync)?;
        for &page in &wiki::planned_pages(db, catalog).pages {
            let _ = wiki::page_model_hash(db, catalog, page);
        }
    }
    match TemplateSet::load(project) {
        Ok(templates) if !shards_match(inputs, Some(run)) => {
            warm_shards(conn, db, inputs, (project, &templates), &sync)
        }
        _ => Ok(()),
    }
}

/// Whether the catalog's and the shards' inputs both match the index as `run` committed it.
#[must_use]
pub fn inputs_match(inputs: &PageInputs, run: Option<&str>) -> bool {
    inputs.catalog_matches(run) && shards_match(inputs, run)
}

/// Brings the catalog up to date, asks the query graph for every page, renders the pages whose model
/// differs from the stored one, and stores them and the shards, inside the build's transaction: pages and
/// then each declared kind, through the one artifact driver.
pub fn compile(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    context: &StageContext<'_>,
    writer: Option<&mut Writer>,
) -> Result<Stage, StoreError> {
    let mut stage = Stage::default();
    set_templates(db, inputs, context.templates);
    let mut run = Run { conn, db, inputs, context };
    // The pages this build stores or removes: the shard inputs that may differ from the prior run's.
    let written = drive(&mut Pages { writer, stored: BTreeMap::new() }, &mut run, &mut stage)?;
    if !written.is_empty() {
        store::prune_writings(conn).map_err(|source| run.sql(source))?;
    }
    // Shards are made of page rows and templates alone: with neither changed, they are as they were.
    if written.is_empty() && !context.full && !context.sync.reseed {
        shards_unchanged(run.inputs, context);
        return Ok(stage);
    }
    compile_shards(&mut run, &mut stage, &written)?;
    Ok(stage)
}

/// Pages as the driver runs them: compared with their rows by model hash, rendered with their quotes read
/// from the index (and their summary written by the `[wiki] writer`, when there is one), and stored with
/// rows of their own.
struct Pages<'w> {
    writer: Option<&'w mut Writer>,
    /// The stored rows of the pages compared.
    stored: BTreeMap<String, store::StoredPage>,
}

impl ArtifactKindDriver for Pages<'_> {
    type Stale = ChangedPage;

    fn name(&self) -> &'static str {
        "page"
    }

    fn counters<'s>(&self, stage: &'s mut Stage) -> &'s mut ArtifactCounters {
        &mut stage.pages
    }

    fn events(&self) -> Option<[&'static str; 3]> {
        Some(["page_added", "page_changed", "page_removed"])
    }

    fn compare(&mut self, run: &mut Run<'_, '_>) -> Result<Compared<ChangedPage>, StoreError> {
        let PageComparison { stored, current, mut changed } =
            compare_pages(run.conn, run.db, run.inputs, run.context).map_err(|source| run.sql(source))?;
        if self.writer.is_some() {
            // A budget that cannot write every page writes those that gather the most sources first.
            changed.sort_by(|a, b| b.source_count.cmp(&a.source_count).then_with(|| a.model.slug.cmp(&b.model.slug)));
        }
        let gone = stored
            .iter()
            .filter(|(slug, _)| !current.contains(*slug))
            .map(|(slug, before)| Gone {
                key: slug.clone(),
                uri: SourceRef::page(slug).path(),
                path: before.path.clone(),
                hash: before.hash.clone(),
            })
            .collect();
        self.stored = stored;
        Ok(Compared { stale: changed, gone })
    }

    /// Reads every changed page's quotes and stored text, then derives what the pages' stores will ask the
    /// query graph for, spread over the cores: their summaries, their Markdown and catalog rows, and the
    /// chunks and outlines of the source rows derived from that Markdown. Each page's store then finds
    /// them made. Deriving one page after another left a core idle while an edit re-rendered tens of pages.
    /// With a writer, which writes a page's summary before it renders, only the summaries are made ahead.
    fn ready(&mut self, run: &mut Run<'_, '_>, stale: &mut [ChangedPage]) -> Result<(), StoreError> {
        if stale.len() < 2 {
            return Ok(());
        }
        let writes = self.writer.is_some();
        for page in stale.iter_mut() {
            let before = self.stored.get(&page.model.slug);
            page.read = Some(read_page(run, &mut page.model, &page.text_hash, before, writes)?);
        }
        let renders = |page: &ChangedPage| page.read.as_ref().is_some_and(|read| read.kept.is_none());
        stale.par_iter_mut().filter(|page| renders(page)).for_each(|page| summarize(&mut page.model));
        if writes {
            return Ok(());
        }
        let rendering: Vec<&ChangedPage> = stale.iter().filter(|page| renders(page)).collect();
        let inputs: Vec<WikiPage> = rendering
            .iter()
            .map(|page| page_input(run.db, run.inputs, &page.model, page.source_count as u64))
            .collect();
        // An error is left for the page's store to report.
        let rendered: Vec<Option<(String, String)>> = inputs
            .par_iter()
            .map_with(run.db.clone(), |db, &input| {
                let markdown = wiki::render_page(db, input).as_ref().ok()?.clone();
                let revision = wiki::page_artifact(db, input).as_ref().ok()?.hash.clone();
                Some((markdown, revision))
            })
            .collect();
        let mut files = Vec::new();
        for (page, rendered) in rendering.iter().zip(rendered) {
            let Some((markdown, revision)) = rendered else { continue };
            let stored = page.read.as_ref().and_then(|read| read.stored.as_ref());
            if restamped(stored, &page.model, &markdown).is_none() {
                files.push(page_file(run.db, run.inputs, &page.model, &markdown, &revision));
            }
        }
        files.par_iter().for_each_with(run.db.clone(), |db, &file| {
            outline(db, file);
            chunks(db, file);
        });
        Ok(())
    }

    fn store(&mut self, run: &mut Run<'_, '_>, page: ChangedPage, stage: &mut Stage) -> Result<Stored, StoreError> {
        let before = self.stored.get(&page.model.slug);
        store_changed_page(run, page, before, self.writer.as_deref_mut(), stage)
    }

    fn remove(&mut self, run: &mut Run<'_, '_>, gone: &Gone) -> Result<(), StoreError> {
        remove_page(run.conn, &gone.key).map_err(|source| run.sql(source))
    }
}

/// What the pages the graph plans are against the stored ones.
struct PageComparison {
    /// The stored rows of the pages compared: all of them, or with the plan as the last build left it,
    /// those the seeded pages name (no page can go then).
    stored: BTreeMap<String, store::StoredPage>,
    /// The slugs of the pages the graph holds now.
    current: HashSet<String>,
    /// The pages whose model differs from the stored one, to render again.
    changed: Vec<ChangedPage>,
}

/// A page to render again: its model (quotes not yet read), the hash stored with it, how many sources it
/// names, and its view as the index stores it.
struct ChangedPage {
    model: PageModel,
    model_hash: String,
    /// A hash of the model's inputs but the quoted revisions (`page_text_hash`), the template, the binary
    /// and the writer: with the quotes' texts, the page's text key.
    text_hash: String,
    source_count: usize,
    view: String,
    view_hash: String,
    /// What it read from the index, when [`Pages::ready`] read it ahead.
    read: Option<ReadPage>,
}

/// Asks the graph for the pages to compare with their rows: with the plan as the last build left it, those
/// naming a changed source, rebuilt from their stored views; otherwise every page the plan holds. A page
/// whose model hashes as the stored one is not rendered again (early cutoff). With the wiki off, there
/// are none, so every stored page goes.
fn compare_pages(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    context: &StageContext<'_>,
) -> rusqlite::Result<PageComparison> {
    if !context.project.config.wiki.enabled {
        store::store_plan_named_keys(conn, None)?;
        return Ok(PageComparison {
            stored: store::stored_pages(conn, None)?,
            current: HashSet::new(),
            changed: Vec::new(),
        });
    }
    // A page's model hash holds the template and who writes its summary: another writer renders it again.
    let material =
        format!("{}{}{}", context.templates.page, env!("KNOWLEDGE_SOURCE_HASH"), writer_identity(context.project));
    let template_hash = content_hash(material.as_bytes());
    let cold = !inputs.catalog_matches(context.sync.prior_run);
    let seeded = match context.same_plan_except {
        Some(same) => seed_pages(conn, db, inputs, context.project, same)?,
        None => None,
    };
    let (catalog, seeded) = match seeded {
        Some((catalog, views)) => (catalog, Some(views)),
        None => (sync_catalog(conn, db, inputs, context.project, &context.sync)?, None),
    };
    let db: &KnowledgeDb = db;
    // A fresh process that planned again has no memos: rather than hash every page's model, it takes a
    // page whose view is the one stored and that names no changed source as unchanged (its model is
    // made from nothing else that can differ; settings and templates re-seed the catalog).
    let compare_views = seeded.is_none() && cold && !context.full && !context.sync.reseed;
    let (stored, pages) = pages_to_compare(conn, db, catalog, seeded)?;
    let changed_sources: HashSet<&str> = context.sync.changed.iter().map(String::as_str).collect();
    // Every page's model hash, when every page is compared by it; a fresh process that planned again hashes
    // only the pages whose views changed, below.
    let mut model_hashes = if compare_views { Vec::new() } else { model_hashes(db, catalog, &pages, &template_hash) };
    let mut current = HashSet::new();
    let mut changed = Vec::new();
    for (at, page) in pages.into_iter().enumerate() {
        let slug = page.slug(db);
        current.insert(slug.clone());
        let view = page.view(db);
        // Hashed here only in a fresh process that planned again (a kept compiler's memos say what changed),
        // and then once.
        let mut view_hash = None;
        if let Some(before) = stored.get(slug).filter(|_| compare_views) {
            let hash = view.stored_hash(db);
            if before.view_hash == hash
                && !before.writing_owed
                && !view.names_any(db, |path| changed_sources.contains(path))
            {
                continue;
            }
            view_hash = Some(hash);
        }
        let model_hash = match model_hashes.get_mut(at) {
            Some(hash) => std::mem::take(hash),
            None => model_hash(db, catalog, page, &template_hash),
        };
        // A page the writer owes a writing is rendered again whatever its model: the writer may write it now.
        if !context.full
            && stored.get(slug).is_some_and(|before| before.model_hash == model_hash && !before.writing_owed)
        {
            continue;
        }
        changed.push(ChangedPage {
            model: wiki::page_model(db, catalog, page).clone(),
            model_hash,
            text_hash: content_hash(format!("{}{template_hash}", wiki::page_text_hash(db, catalog, page)).as_bytes()),
            source_count: view.source_count(),
            view: serde_json::to_string(&view.stored(db)).expect("views serialize"),
            view_hash: view_hash.unwrap_or_else(|| view.stored_hash(db)),
            read: None,
        });
    }
    Ok(PageComparison { stored, current, changed })
}

/// The hash a page's row stores for its model: its inputs' hash with the template's (`template_hash`).
fn model_hash(db: &KnowledgeDb, catalog: Catalog, page: PlannedPage<'_>, template_hash: &str) -> String {
    content_hash(format!("{}{template_hash}", wiki::page_model_hash(db, catalog, page)).as_bytes())
}

/// Each of `pages`' [`model_hash`], on every core: a kept compiler's memos say which changed, each page's by
/// verifying what its hash read, about 10,000 instructions a page after any edit, for every page.
fn model_hashes(db: &KnowledgeDb, catalog: Catalog, pages: &[PlannedPage<'_>], template_hash: &str) -> Vec<String> {
    pages.par_iter().map_with(db.clone(), |db, &page| model_hash(db, catalog, page, template_hash)).collect()
}

/// The pages to compare and their stored rows: the seeded ones (`seeded`), or every page the plan holds,
/// whose named keys are stored with them for a fresh process's next edit to read.
fn pages_to_compare<'db>(
    conn: &Connection,
    db: &'db KnowledgeDb,
    catalog: Catalog,
    seeded: Option<Vec<(String, PageView)>>,
) -> rusqlite::Result<(BTreeMap<String, store::StoredPage>, Vec<PlannedPage<'db>>)> {
    Ok(match seeded {
        Some(views) => {
            let slugs: Vec<&str> = views.iter().map(|(slug, _)| slug.as_str()).collect();
            let stored = store::stored_pages(conn, Some(&slugs))?;
            (stored, views.into_iter().map(|(slug, view)| PlannedPage::new(db, slug, view)).collect())
        }
        None => {
            let planned = wiki::planned_pages(db, catalog);
            store::store_plan_named_keys(conn, Some(&planned.named_keys))?;
            (store::stored_pages(conn, None)?, planned.pages.clone())
        }
    })
}

/// What a changed page reads from the index before anything of it is derived: its quotes' texts (filled
/// into its model), the text key they make, and its stored text where the build may keep it.
struct ReadPage {
    text_key: String,
    /// The page's stored text and rows (none for a new page, and in a full rebuild).
    stored: Option<store::StoredPageText>,
    /// The stored text with the revisions its quotes cite now, and its summary: a page that differs from its
    /// stored one in those revisions alone ([`kept_text`]).
    kept: Option<(String, String)>,
}

/// Reads a changed page's quotes into `model` and its stored text ([`ReadPage`]); `writes` when a writer
/// writes its summary (a written page is never kept).
fn read_page(
    run: &Run<'_, '_>,
    model: &mut PageModel,
    text_hash: &str,
    before: Option<&store::StoredPage>,
    writes: bool,
) -> Result<ReadPage, StoreError> {
    let (conn, context) = (run.conn, run.context);
    let sql = |source| context.sql_error(source);
    fill_quotes(conn, model).map_err(sql)?;
    let text_key = text_key(text_hash, model);
    drop_repeated_quotes(model);
    // The page's stored rows, which it may keep (none in a full rebuild, whose chunks were cleared).
    let stored = if before.is_some() && !context.full {
        store::stored_page_text(conn, &model.slug, &SourceRef::page(&model.slug).path()).map_err(sql)?
    } else {
        None
    };
    // The built-in template prints each revision as it is; with no writer, a page whose text key is the
    // stored one is the stored text with the revisions its quotes cite replaced.
    let kept = match stored.as_ref().filter(|_| !writes && context.templates.page == PAGE_TEMPLATE) {
        Some(stored) => {
            kept_text(conn, model, &text_key, stored).map_err(sql)?.map(|text| (text, stored.summary.clone()))
        }
        None => None,
    };
    Ok(ReadPage { text_key, stored, kept })
}

/// Renders a changed page with its quotes read from the index, and stores it with its source row.
fn store_changed_page(
    run: &mut Run<'_, '_>,
    page: ChangedPage,
    before: Option<&store::StoredPage>,
    writer: Option<&mut Writer>,
    stage: &mut Stage,
) -> Result<Stored, StoreError> {
    let ChangedPage { mut model, model_hash, text_hash, source_count, view, view_hash, read } = page;
    // A page [`Pages::ready`] read was summarized there too, unless it keeps its stored text.
    let (read, summarized) = match read {
        Some(read) => (read, true),
        None => (read_page(run, &mut model, &text_hash, before, writer.is_some())?, false),
    };
    let ReadPage { text_key, stored, kept } = read;
    let (conn, context) = (run.conn, run.context);
    let sql = |source| context.sql_error(source);
    let path = SourceRef::page(&model.slug).path();
    let (markdown, artifact, writing, summary) = match kept {
        Some((markdown, summary)) => {
            page_input(run.db, run.inputs, &model, source_count as u64);
            let artifact = wiki::page_artifact_of(&model, source_count as u64, &markdown);
            (markdown, artifact, writer::PageWriting::default(), summary)
        }
        None => {
            if !summarized {
                summarize(&mut model);
            }
            let writing = match writer {
                Some(writer) => writer.write(conn, &mut model, context.run_id, &mut stage.events).map_err(sql)?,
                None => writer::PageWriting::default(),
            };
            let (markdown, artifact) = render(run.db, run.inputs, &model, source_count as u64)?;
            let summary = shard_summary(&model);
            (markdown, artifact, writing, summary)
        }
    };
    let cites: Vec<String> = model.quotes().map(|q| format!("{}@{}", q.source.source_ref, q.revision)).collect();
    let row = page_source(run.db, run.inputs, stored.as_ref(), &model, &markdown, &artifact.hash);
    let rendered = RenderedPage {
        model: &model,
        view: &view,
        view_hash: &view_hash,
        source_count,
        model_hash: &model_hash,
        text_key: &text_key,
        summary: &summary,
        writing: &writing,
        markdown: &markdown,
        artifact: &artifact,
        row: &row,
    };
    store_page(conn, context, &rendered).map_err(sql)?;
    Ok(Stored {
        uri: path,
        key: model.slug,
        path: artifact.path,
        old_hash: before.map(|before| before.hash.clone()),
        new_hash: artifact.hash,
        sources: cites,
    })
}

/// The generated files an index lists, as project-relative paths: the source walk skips them.
#[must_use]
pub fn generated_in_project(project: &Project, generated: &HashSet<String>) -> HashSet<String> {
    let output = output_prefix(project);
    // Joined by hand: a `format!` a generated file, every watched edit, cost more than the join.
    generated.iter().map(|path| [output.as_str(), path].concat()).collect()
}

/// The output folder relative to the project root, `/`-separated with a trailing `/` (empty only for an output
/// folder at the root, which the configuration refuses): a generated file's project-relative path is this and
/// its path in the output folder. Made once per use, not per file (it lays out the project's folders).
#[must_use]
pub fn output_prefix(project: &Project) -> String {
    let output = in_project(project, &project.output_dir());
    if output.is_empty() { output } else { format!("{output}/") }
}

/// The output folder's `wiki/`, relative to the project root, `/`-separated.
#[must_use]
pub fn wiki_folder(project: &Project) -> String {
    Layout::new(project).wiki_folder_in_project
}

/// Whether a project-relative path is inside the output folder's `wiki/`.
#[must_use]
pub fn in_wiki_folder(project: &Project, path: &str) -> bool {
    path.strip_prefix(&Layout::new(project).wiki_folder_in_project).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generated file's project path is the output folder's prefix and its path in the output folder,
    /// wherever `[output] dir` puts the folder inside the project (the configuration refuses the root itself).
    #[test]
    fn the_output_prefix_is_the_output_folder_relative_to_the_project() {
        for (dir, prefix) in [(None, ".hasna/knowledge/"), (Some("site/kb"), "site/kb/"), (Some("./kb/"), "kb/")] {
            let root = tempfile::tempdir().unwrap();
            let output = dir.map_or(String::new(), |dir| format!("[output]\ndir = \"{dir}\"\n"));
            std::fs::write(root.path().join("kc.toml"), format!("version = 1\n{output}")).unwrap();
            let project = Project::load(&root.path().join("kc.toml")).unwrap();
            assert_eq!(output_prefix(&project), prefix, "{dir:?}");
            let generated: HashSet<String> = ["wiki/general/a.md".to_string()].into();
            assert_eq!(generated_in_project(&project, &generated), [format!("{prefix}wiki/general/a.md")].into());
        }
    }
}
