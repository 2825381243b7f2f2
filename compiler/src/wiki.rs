//! The wiki compiler's driver half: reads the concept catalog from the index inside the build's
//! transaction, plans pages with `knowledge_queries::wiki::plan`, renders the pages whose model changed,
//! stores pages, citations, backlinks, shards and the artifact catalog, and after the commit brings the
//! files under the output folder in line with the index. See docs/wiki.md.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use knowledge_queries::wiki::{
    self, Backlink, CatalogSource, Excerpt, PageLink, PageModel, PlanSettings, Quote, SCHEMA_VERSION, Signal,
    SignalKind, SourceLink, Templates, WikiPage, concept_key,
};
use knowledge_queries::{SourceFile, chunks, content_hash, outline};
use rusqlite::{Connection, OptionalExtension, params};
use salsa::{Durability, Setter};
use serde::Serialize;

use crate::config::Project;
use crate::db::KnowledgeDb;
use crate::store::{self, ChunkRow, RunEvent, SourceRow, StoreError};

/// The ref prefix of generated pages: `knowledge://wiki/SLUG`.
pub const PAGE_PREFIX: &str = "knowledge://wiki/";
/// The ref prefix of index shards: `knowledge://index/SECTION`. A shard is also a source row whose chunks
/// are its page rows, one each: search's `index_entry` results.
pub const INDEX_PREFIX: &str = "knowledge://index/";
const ROOT_URI: &str = "knowledge://index/root";
const SCHEMA_URI: &str = "knowledge://schema/v1";

const PAGE_TEMPLATE: &str = include_str!("../../templates/page.md.j2");
const SHARD_TEMPLATE: &str = include_str!("../../templates/shard.md.j2");
const ROOT_TEMPLATE: &str = include_str!("../../templates/root.md.j2");
/// `schemas/v1.md`: the page and index schema, written as is.
const SCHEMA_DOC: &str = include_str!("../../templates/schema-v1.md");

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

/// The templates a build renders with: the built-in ones, or those in `[wiki] templates_dir`.
#[derive(Debug, Clone)]
pub struct TemplateSet {
    pub page: String,
    pub shard: String,
    pub root: String,
}

impl TemplateSet {
    /// Loads and checks the templates: a syntax error names the template file and line.
    pub fn load(project: &Project) -> Result<TemplateSet, WikiError> {
        let folder = project.config.wiki.templates_dir.as_ref().map(|dir| project.root.join(dir.get_ref()));
        let read = |name: &str, built_in: &str| -> Result<(PathBuf, String), WikiError> {
            let Some(path) = folder.as_ref().map(|folder| folder.join(name)).filter(|path| path.exists()) else {
                return Ok((PathBuf::from("templates").join(name), built_in.to_string()));
            };
            let text =
                std::fs::read_to_string(&path).map_err(|source| WikiError::Read { path: path.clone(), source })?;
            Ok((path, text))
        };
        let (page_path, page) = read("page.md.j2", PAGE_TEMPLATE)?;
        let (shard_path, shard) = read("shard.md.j2", SHARD_TEMPLATE)?;
        let (root_path, root) = read("root.md.j2", ROOT_TEMPLATE)?;
        for (path, text) in [(&page_path, &page), (&shard_path, &shard), (&root_path, &root)] {
            wiki::check_template(&path.display().to_string(), text).map_err(WikiError::Template)?;
        }
        Ok(TemplateSet { page, shard, root })
    }
}

/// What the pages depend on besides the sources: the `[wiki]` settings, the templates and this binary's
/// source. A change re-plans and re-renders; no source is re-derived.
#[must_use]
pub fn fingerprint(project: &Project, templates: &TemplateSet) -> String {
    let wiki = &project.config.wiki;
    let material = format!(
        "{}\n{}\n{}\n{}\n{:?}\n{}\n{}\n{}\n{}\n",
        wiki.enabled,
        wiki.min_sources.get_ref(),
        wiki.max_quotes.get_ref(),
        wiki.max_related,
        wiki.section_field,
        templates.page,
        templates.shard,
        templates.root,
        env!("KNOWLEDGE_SOURCE_HASH"),
    );
    content_hash(material.as_bytes())
}

/// The salsa inputs of generated pages, kept for the life of a `Compiler`.
#[derive(Default)]
pub struct PageInputs {
    templates: Option<Templates>,
    pages: HashMap<String, (WikiPage, SourceFile)>,
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
    pub changes: Vec<ArtifactChange>,
    pub events: Vec<RunEvent>,
}

/// Everything the stage needs from the build.
pub struct StageContext<'a> {
    pub project: &'a Project,
    pub templates: &'a TemplateSet,
    pub run_id: &'a str,
    /// Every page is rendered and stored again (the page rows' chunks were cleared with all others).
    pub full: bool,
    /// When no source's plan inputs changed, so the plan is the last build's: the pages that list an
    /// edited source, the only ones whose model can differ. The others are not modelled again. `None`:
    /// any page may have changed.
    pub only: Option<&'a HashSet<String>>,
}

/// What a source contributes to the plan besides its excerpts: its signals' kinds and texts, its
/// permission labels, and the value of its `[wiki] section_field` (from its outline's front matter). While
/// these stay equal, the source can change only pages that list it. `signals` are (kind, label, other), as
/// `concept_signals` stores them.
#[must_use]
pub fn plan_inputs<'a>(
    signals: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
    labels: &str,
    outline: &str,
    section_field: Option<&str>,
) -> String {
    let section = section_field.map_or(serde_json::Value::Null, |field| {
        serde_json::from_str::<serde_json::Value>(outline)
            .map_or(serde_json::Value::Null, |outline| outline["front_matter"][field].clone())
    });
    let mut text = format!("{labels}\n{section}");
    for (kind, label, other) in signals {
        text.push_str(&format!("\n{kind}\t{label}\t{other:?}"));
    }
    text
}

/// [`plan_inputs`] of a source's derived rows.
#[must_use]
pub fn plan_inputs_of(row: &SourceRow, section_field: Option<&str>) -> String {
    let signals = row.signals.iter().map(|s| (s.kind.as_str(), s.label.as_str(), s.other.as_deref()));
    plan_inputs(signals, &row.labels, &row.outline, section_field)
}

/// The pages that list one of `paths` (quote, list or link from it).
pub fn pages_listing(conn: &Connection, paths: &[String]) -> rusqlite::Result<HashSet<String>> {
    let mut statement = conn.prepare_cached("SELECT page FROM page_sources WHERE path = ?1")?;
    let mut pages = HashSet::new();
    for path in paths {
        for page in statement.query_map([path], |row| row.get(0))? {
            pages.insert(page?);
        }
    }
    Ok(pages)
}

/// Plans, renders and stores the wiki inside the build's transaction.
pub fn compile(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    context: &StageContext<'_>,
) -> Result<Stage, StoreError> {
    let sql = |source| StoreError::Sqlite { path: context.project.output_dir().join(store::DB_FILE), source };
    let mut stage = Stage::default();
    let catalog = read_catalog(conn, context.project).map_err(sql)?;
    let wiki_config = &context.project.config.wiki;
    let plans = if wiki_config.enabled {
        let settings = PlanSettings {
            min_sources: *wiki_config.min_sources.get_ref() as usize,
            max_places: *wiki_config.max_quotes.get_ref() as usize,
            max_related: wiki_config.max_related as usize,
        };
        wiki::plan(&catalog.sources, settings)
    } else {
        Vec::new()
    };
    set_templates(db, inputs, context.templates);
    let template_hash = content_hash(format!("{}{}", context.templates.page, env!("KNOWLEDGE_SOURCE_HASH")).as_bytes());
    let stored = stored_pages(conn).map_err(sql)?;
    let layout = Layout::new(context.project);

    let mut current: HashSet<String> = HashSet::new();
    for page in &plans {
        current.insert(page.slug.clone());
        if context.only.is_some_and(|only| !only.contains(&page.slug)) && stored.contains_key(&page.slug) {
            continue;
        }
        let mut model = page_model(page, &plans, &catalog, &layout);
        let model_hash = content_hash(
            format!("{}{template_hash}", serde_json::to_string(&model).expect("models serialize")).as_bytes(),
        );
        let before = stored.get(&page.slug);
        if !context.full && before.is_some_and(|b| b.model_hash == model_hash) {
            continue;
        }
        fill_quotes(conn, &mut model, &catalog).map_err(sql)?;
        let markdown = render(db, inputs, &model)?;
        stage.pages.rendered += 1;
        let path = layout.page_path(&model.section, &model.slug);
        let hash = content_hash(markdown.as_bytes());
        let cites: Vec<String> = model.quotes().map(|q| format!("{}@{}", q.source.source_ref, q.revision)).collect();
        if before.is_none_or(|b| b.hash != hash) {
            stage.changes.push(ArtifactChange {
                artifact: path.clone(),
                kind: "page",
                old_hash: before.map(|b| b.hash.clone()),
                new_hash: Some(hash.clone()),
                sources: cites.clone(),
            });
            stage.events.push(RunEvent {
                kind: if before.is_some() { "page_changed" } else { "page_added" },
                path: format!("{PAGE_PREFIX}{}", model.slug),
                old_revision: before.map(|b| b.hash.clone()),
                new_revision: Some(hash.clone()),
                detail: Some(format!("cites {}", cites.join(", "))),
                labels: None,
            });
        }
        let row = page_source_row(db, inputs, &model, &markdown, &hash);
        if before.is_some() || context.full {
            remove_page_rows(conn, &model.slug).map_err(sql)?;
        }
        let rendered = RenderedPage {
            model: &model,
            source_count: page.places.len() + page.also.len(),
            path: &path,
            model_hash: &model_hash,
            markdown: &markdown,
            hash: &hash,
            row: &row,
        };
        store_page(conn, context, &rendered).map_err(sql)?;
    }
    for (slug, before) in stored.iter().filter(|(slug, _)| !current.contains(*slug)) {
        remove_page(conn, slug).map_err(sql)?;
        stage.pages.deleted += 1;
        stage.changes.push(ArtifactChange {
            artifact: before.path.clone(),
            kind: "page",
            old_hash: Some(before.hash.clone()),
            new_hash: None,
            sources: Vec::new(),
        });
        stage.events.push(RunEvent {
            kind: "page_removed",
            path: format!("{PAGE_PREFIX}{slug}"),
            old_revision: Some(before.hash.clone()),
            new_revision: None,
            detail: None,
            labels: None,
        });
    }
    compile_shards(conn, context, &mut stage).map_err(|error| match error {
        ShardError::Template(message) => StoreError::Wiki(message),
        ShardError::Sqlite(error) => sql(error),
    })?;
    Ok(stage)
}

/// The sources the planner reads, with what the driver needs to turn a plan into a page.
struct Catalog {
    sources: Vec<CatalogSource>,
    ids: Vec<i64>,
    revisions: Vec<String>,
    /// Source index by path.
    index_of: HashMap<String, usize>,
}

/// Reads every source a generated page may quote: files (not notes), readable by every principal (no
/// labels, or only `public`), so a page never carries text some reader may not see.
fn read_catalog(conn: &Connection, project: &Project) -> rusqlite::Result<Catalog> {
    let wiki_folder = format!("{}/", Layout::new(project).wiki_folder_in_project);
    let field = project.config.wiki.section_field.clone();
    let mut statement = conn.prepare(
        "SELECT id, path, title, revision,
                CASE WHEN ?1 IS NULL THEN NULL ELSE json_extract(outline, '$.front_matter.\"' || ?1 || '\"') END
         FROM sources WHERE path NOT LIKE 'knowledge://%' AND labels IN ('', 'public') ORDER BY path",
    )?;
    let rows = statement.query_map([&field], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, Option<String>>(4)?,
        ))
    })?;
    let rows: Vec<(i64, String, String, String, Option<String>)> = rows.collect::<rusqlite::Result<_>>()?;
    // Sections are the first folder below the folders every source shares (`docs/user/...` and
    // `docs/dev/...` give `user` and `dev`, not one `docs`).
    let shared = shared_folders(
        rows.iter().map(|row| row.1.as_str()).filter(|path| path.contains('/') && !path.starts_with(&wiki_folder)),
    );
    let mut catalog = Catalog { sources: Vec::new(), ids: Vec::new(), revisions: Vec::new(), index_of: HashMap::new() };
    let mut index_of: HashMap<i64, usize> = HashMap::new();
    for (id, path, title, revision, field_value) in rows {
        let handwritten = path.starts_with(&wiki_folder);
        let folder_path = match path.strip_prefix(&wiki_folder) {
            Some(inside) => inside,
            None => path.strip_prefix(&shared).unwrap_or(&path),
        };
        let folder = folder_path.split_once('/').map(|(folder, _)| folder);
        let section = [field_value.as_deref(), folder]
            .into_iter()
            .flatten()
            .map(concept_key)
            .find(|key| !key.is_empty())
            .map_or_else(|| "general".to_string(), |key| if key == "root" { "root-section".to_string() } else { key });
        index_of.insert(id, catalog.sources.len());
        catalog.index_of.insert(path.clone(), catalog.sources.len());
        catalog.sources.push(CatalogSource { path, title, section, handwritten, signals: Vec::new() });
        catalog.ids.push(id);
        catalog.revisions.push(revision);
    }
    let mut statement = conn.prepare(
        "SELECT source_id, kind, label, other, chunk, start_offset, end_offset, start_line, end_line
         FROM concept_signals ORDER BY source_id, rowid",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let Some(&index) = index_of.get(&row.get::<_, i64>(0)?) else { continue };
        let Some(kind) = SignalKind::parse(&row.get::<_, String>(1)?) else { continue };
        catalog.sources[index].signals.push(Signal {
            kind,
            label: row.get(2)?,
            other: row.get(3)?,
            excerpt: Excerpt {
                chunk: row.get(4)?,
                start: row.get(5)?,
                end: row.get(6)?,
                start_line: row.get(7)?,
                end_line: row.get(8)?,
            },
        });
    }
    Ok(catalog)
}

/// The longest folder prefix (with its trailing `/`) that every path shares.
fn shared_folders<'a>(mut paths: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = paths.next() else { return String::new() };
    let mut shared = first.rsplit_once('/').map_or("", |(folder, _)| folder).to_string();
    for path in paths {
        while !shared.is_empty() && !path.starts_with(&format!("{shared}/")) {
            shared = shared.rsplit_once('/').map_or(String::new(), |(parent, _)| parent.to_string());
        }
    }
    if shared.is_empty() { shared } else { format!("{shared}/") }
}

/// Where generated files go, and how they link to sources.
struct Layout {
    root: PathBuf,
    output: PathBuf,
    /// The output folder's `wiki/`, relative to the project root (`/`-separated).
    wiki_folder_in_project: String,
}

impl Layout {
    fn new(project: &Project) -> Layout {
        let output = project.output_dir();
        let wiki = output.join("wiki");
        let wiki_folder_in_project = wiki.strip_prefix(&project.root).map_or_else(
            |_| wiki.to_string_lossy().into_owned(),
            |relative| relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
        );
        Layout { root: project.root.clone(), output, wiki_folder_in_project }
    }

    /// A page's file, relative to the output folder.
    fn page_path(&self, section: &str, slug: &str) -> String {
        format!("wiki/{section}/{slug}.md")
    }

    /// A link from a page in `section` to a source.
    fn source_href(&self, section: &str, source_path: &str) -> String {
        relative_href(&self.output.join("wiki").join(section), &self.root.join(source_path))
    }
}

/// The relative link from files in `from_dir` to `to`, `/`-separated.
fn relative_href(from_dir: &Path, to: &Path) -> String {
    let from: Vec<Component<'_>> = from_dir.components().collect();
    let target: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), from.len() - common).collect();
    parts.extend(target[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

/// A page's model without the quoted texts, which are read only when the page is rendered.
fn page_model(page: &wiki::PagePlan, plans: &[wiki::PagePlan], catalog: &Catalog, layout: &Layout) -> PageModel {
    let source_link = |index: usize| {
        let source = &catalog.sources[index];
        SourceLink {
            source_ref: crate::sources::source_ref(&source.path),
            path: source.path.clone(),
            title: source.title.clone(),
            href: layout.source_href(&page.section, &source.path),
        }
    };
    let mut quotes: Vec<Quote> = page
        .places
        .iter()
        .zip(1..)
        .map(|(mention, note)| {
            let signal = &catalog.sources[mention.source].signals[mention.signal];
            Quote {
                note,
                source: source_link(mention.source),
                signal: signal.kind.as_str().to_string(),
                text: String::new(),
                revision: catalog.revisions[mention.source].clone(),
                chunk: signal.excerpt.chunk,
                hash: String::new(),
                start: signal.excerpt.start,
                end: signal.excerpt.end,
                start_line: signal.excerpt.start_line,
                end_line: signal.excerpt.end_line,
            }
        })
        .collect();
    let lead_is_definition = page.places.first().is_some_and(|m| page.defined_by.contains(&m.source));
    let lead = if lead_is_definition && !quotes.is_empty() { Some(quotes.remove(0)) } else { None };
    PageModel {
        schema: SCHEMA_VERSION,
        slug: page.slug.clone(),
        title: page.title.clone(),
        aliases: page.aliases.clone(),
        section: page.section.clone(),
        lead,
        places: quotes,
        also: page.also.iter().map(|&index| source_link(index)).collect(),
        related: page
            .related
            .iter()
            .map(|&other| PageLink {
                slug: plans[other].slug.clone(),
                title: plans[other].title.clone(),
                href: format!("../{}/{}.md", plans[other].section, plans[other].slug),
            })
            .collect(),
        backlinks: page
            .backlinks
            .iter()
            .map(|m| {
                let signal = &catalog.sources[m.source].signals[m.signal];
                Backlink {
                    source: source_link(m.source),
                    line: signal.excerpt.start_line,
                    kind: signal.kind.as_str().to_string(),
                }
            })
            .collect(),
    }
}

/// Reads each quote's text from its chunk in the index.
fn fill_quotes(conn: &Connection, model: &mut PageModel, catalog: &Catalog) -> rusqlite::Result<()> {
    let index_of = &catalog.index_of;
    let mut statement =
        conn.prepare_cached("SELECT text, start_offset FROM chunks WHERE source_id = ?1 AND ordinal = ?2")?;
    for quote in model.lead.iter_mut().chain(model.places.iter_mut()) {
        let index = index_of[quote.source.path.as_str()];
        let chunk: Option<(String, u32)> = statement
            .query_row(params![catalog.ids[index], quote.chunk], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        let text = chunk
            .and_then(|(text, chunk_start)| {
                let from = quote.start.checked_sub(chunk_start)? as usize;
                let to = quote.end.checked_sub(chunk_start)? as usize;
                text.get(from..to).map(str::to_string)
            })
            .unwrap_or_default();
        quote.hash = content_hash(text.as_bytes());
        quote.text = text;
    }
    Ok(())
}

fn set_templates(db: &mut KnowledgeDb, inputs: &mut PageInputs, templates: &TemplateSet) {
    match inputs.templates {
        Some(input) => {
            if input.page(db) != &templates.page {
                input.set_page(db).with_durability(Durability::MEDIUM).to(templates.page.clone());
            }
        }
        None => {
            inputs.templates = Some(Templates::builder(templates.page.clone()).durability(Durability::MEDIUM).new(db));
        }
    }
}

/// Renders a page through the `render_page` query, updating its input only when the model changed.
fn render(db: &mut KnowledgeDb, inputs: &mut PageInputs, model: &PageModel) -> Result<String, StoreError> {
    let page = match inputs.pages.get(&model.slug) {
        Some(&(page, _)) => {
            if page.model(db) != model {
                page.set_model(db).to(model.clone());
            }
            page
        }
        None => {
            let page = WikiPage::new(db, model.slug.clone(), model.clone());
            let file = SourceFile::new(db, format!("{PAGE_PREFIX}{}", model.slug), String::new(), String::new());
            inputs.pages.insert(model.slug.clone(), (page, file));
            page
        }
    };
    wiki::render_page(db, page).clone().map_err(StoreError::Wiki)
}

/// The page as a source row, chunked like any Markdown source, so search finds it. Chunks that are only
/// navigation (the Related and Backlinks lists) are left out: they repeat other pages' and sources'
/// titles, which search should find where they are the subject.
/// `revision` is the markdown's hash.
fn page_source_row(
    db: &mut KnowledgeDb,
    inputs: &PageInputs,
    model: &PageModel,
    markdown: &str,
    revision: &str,
) -> SourceRow {
    let file = inputs.pages[&model.slug].1;
    if file.text(db) != markdown {
        file.set_text(db).to(markdown.to_string());
        file.set_revision(db).to(revision.to_string());
    }
    let outline = outline(db, file).clone();
    let page_chunks = chunks(db, file);
    SourceRow {
        path: format!("{PAGE_PREFIX}{}", model.slug),
        uri: format!("{PAGE_PREFIX}{}", model.slug),
        kind: "markdown",
        mime: "text/markdown",
        size: markdown.len() as u64,
        mtime_ns: 0,
        revision: revision.to_string(),
        title: model.title.clone(),
        outline: serde_json::to_string(&outline).expect("outline serializes"),
        lint_facts: "{}".to_string(),
        labels: String::new(),
        chunks: crate::sources::chunk_rows(markdown, &model.title, &page_chunks, false)
            .into_iter()
            .filter(|chunk| !is_navigation(&chunk.text))
            .collect(),
        signals: Vec::new(),
    }
}

/// Whether a chunk holds nothing but headings, list items that link elsewhere, and footnote definitions
/// (the citations, which the `citations` table holds).
fn is_navigation(text: &str) -> bool {
    let mut items = 0;
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let link_item = line.starts_with("- [") && line.contains("](");
        let footnote = line.starts_with("[^") && line.contains("]:");
        if !(link_item || footnote) {
            return false;
        }
        items += 1;
    }
    items > 0
}

/// The id of a generated page's or shard's source row, if it has one.
fn generated_source(conn: &Connection, path: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM sources WHERE path = ?1")?.query_row([path], |row| row.get(0)).optional()
}

/// A shard as a source row: one chunk per page row, the row's line in the shard's Markdown, so an
/// `index_entry` result cites the bytes the shard holds. The chunk's identifiers hold the page's slug,
/// which search uses to tell an entry from its page. A row a custom template leaves without the page's
/// link gets no chunk.
fn shard_source_row(section: &str, markdown: &str, rows: &[ShardRow]) -> SourceRow {
    let path = format!("{INDEX_PREFIX}{section}");
    let mut chunks = Vec::with_capacity(rows.len());
    // Rows are found in order, and lines counted from the previous row on: one pass over the shard.
    let (mut from, mut line) = (0, 1);
    for row in rows {
        let Some(at) = markdown[from..].find(&format!("]({})", row.href)).map(|at| at + from) else { continue };
        let start = markdown[..at].rfind('\n').map_or(0, |newline| newline + 1);
        let end = markdown[at..].find('\n').map_or(markdown.len(), |newline| at + newline);
        line += markdown[from..start].matches('\n').count();
        from = end;
        let text = &markdown[start..end];
        let hash = content_hash(text.as_bytes());
        let line = u32::try_from(line).unwrap_or(u32::MAX);
        chunks.push(ChunkRow {
            id: content_hash(format!("{path}\0{}", row.slug).as_bytes()),
            ordinal: u32::try_from(chunks.len()).unwrap_or(u32::MAX),
            hash,
            heading_path: serde_json::to_string(&[section]).expect("strings serialize"),
            title: row.title.clone(),
            text: text.to_string(),
            identifiers: row.slug.clone(),
            start_offset: u32::try_from(start).unwrap_or(u32::MAX),
            end_offset: u32::try_from(end).unwrap_or(u32::MAX),
            start_line: line,
            end_line: line,
            minhash: None,
        });
    }
    SourceRow {
        uri: path.clone(),
        path,
        kind: "markdown",
        mime: "text/markdown",
        size: markdown.len() as u64,
        mtime_ns: 0,
        revision: content_hash(markdown.as_bytes()),
        title: format!("Index: {section}"),
        outline: "{}".to_string(),
        lint_facts: "{}".to_string(),
        labels: String::new(),
        chunks,
        signals: Vec::new(),
    }
}

/// What the index holds about a page before this build.
struct StoredPage {
    model_hash: String,
    hash: String,
    path: String,
}

fn stored_pages(conn: &Connection) -> rusqlite::Result<BTreeMap<String, StoredPage>> {
    conn.prepare("SELECT slug, model_hash, hash, path FROM wiki_pages")?
        .query_map([], |row| {
            Ok((row.get(0)?, StoredPage { model_hash: row.get(1)?, hash: row.get(2)?, path: row.get(3)? }))
        })?
        .collect()
}

/// A page rendered by this build, with what its rows record.
struct RenderedPage<'a> {
    model: &'a PageModel,
    /// How many sources the page quotes or lists.
    source_count: usize,
    /// The page file, relative to the output folder.
    path: &'a str,
    model_hash: &'a str,
    markdown: &'a str,
    /// The markdown's hash.
    hash: &'a str,
    /// The page as a source row, for search.
    row: &'a SourceRow,
}

/// Stores every row of one page (whose old rows are gone): its source row and chunks, its catalog row,
/// citations, backlinks and artifact row.
fn store_page(conn: &Connection, context: &StageContext<'_>, page: &RenderedPage<'_>) -> rusqlite::Result<()> {
    let RenderedPage { model, source_count, path, model_hash, markdown, hash, row } = *page;
    store::write_source(conn, generated_source(conn, &row.path)?, row, context.run_id)?;
    let summary = model.quotes().next().map(|q| first_sentence(&q.text)).unwrap_or_default();
    conn.prepare_cached(
        "INSERT INTO wiki_pages (slug, title, section, path, aliases, source_count, summary, model_hash, hash, markdown, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        model.slug,
        model.title,
        model.section,
        path,
        serde_json::to_string(&model.aliases).expect("strings serialize"),
        source_count as i64,
        summary,
        model_hash,
        hash,
        markdown,
        context.run_id,
    ])?;
    let mut citation = conn.prepare_cached(
        "INSERT INTO citations (page, note, note_line, source_ref, path, revision, hash, start_offset, end_offset,
                                start_line, end_line, signal)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    // The line of each footnote's definition on the page, where lint points at a stale citation.
    let mut note_lines: HashMap<&str, usize> = HashMap::new();
    for (line, number) in markdown.lines().zip(1..) {
        if let Some((note, _)) = line.strip_prefix("[^").and_then(|rest| rest.split_once("]:")) {
            note_lines.entry(note).or_insert(number);
        }
    }
    for quote in model.quotes() {
        let note_line = note_lines.get(quote.note.to_string().as_str()).copied().unwrap_or(1);
        citation.execute(params![
            model.slug,
            quote.note,
            note_line as i64,
            quote.source.source_ref,
            quote.source.path,
            quote.revision,
            quote.hash,
            quote.start,
            quote.end,
            quote.start_line,
            quote.end_line,
            quote.signal,
        ])?;
    }
    let mut depends = conn.prepare_cached("INSERT INTO page_sources (page, path) VALUES (?1, ?2)")?;
    let paths: std::collections::BTreeSet<&str> = model
        .quotes()
        .map(|q| &q.source)
        .chain(&model.also)
        .chain(model.backlinks.iter().map(|b| &b.source))
        .map(|source| source.path.as_str())
        .collect();
    for path in paths {
        depends.execute(params![model.slug, path])?;
    }
    let mut backlink =
        conn.prepare_cached("INSERT INTO wiki_backlinks (page, from_ref, line, kind) VALUES (?1, ?2, ?3, ?4)")?;
    for link in &model.backlinks {
        backlink.execute(params![model.slug, link.source.source_ref, link.line, link.kind])?;
    }
    for related in &model.related {
        backlink.execute(params![related.slug, format!("{PAGE_PREFIX}{}", model.slug), 0, "related"])?;
    }
    upsert_object(
        conn,
        &format!("{PAGE_PREFIX}{}", model.slug),
        "page",
        path,
        markdown,
        context.run_id,
        &serde_json::json!({
            "title": model.title,
            "section": model.section,
            "sources": source_count,
        }),
    )
}

/// Deletes every row of one page.
fn remove_page(conn: &Connection, slug: &str) -> rusqlite::Result<()> {
    if let Some(id) = generated_source(conn, &format!("{PAGE_PREFIX}{slug}"))? {
        store::delete_source(conn, id, true)?;
    }
    remove_page_rows(conn, slug)
}

/// Removes a page's rows other than its source row, which a re-rendered page updates in place.
fn remove_page_rows(conn: &Connection, slug: &str) -> rusqlite::Result<()> {
    let page_ref = format!("{PAGE_PREFIX}{slug}");
    conn.prepare_cached("DELETE FROM wiki_pages WHERE slug = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM citations WHERE page = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM page_sources WHERE page = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM wiki_backlinks WHERE page = ?1 AND kind != 'related'")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM wiki_backlinks WHERE from_ref = ?1 AND kind = 'related'")?.execute([&page_ref])?;
    conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([&page_ref])?;
    Ok(())
}

fn upsert_object(
    conn: &Connection,
    uri: &str,
    kind: &str,
    path: &str,
    content: &str,
    run_id: &str,
    metadata: &serde_json::Value,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO storage_objects (uri, kind, path, hash, size, metadata, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        uri,
        kind,
        path,
        content_hash(content.as_bytes()),
        content.len() as i64,
        metadata.to_string(),
        run_id
    ])?;
    Ok(())
}

/// The first sentence of a quote, on one line, at most about 160 characters.
fn first_sentence(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Block markers go, and emphasis marks with them: a summary cut at a sentence must not open a `**`
    // it never closes.
    let flat = flat.trim_start_matches(['#', '>', '-', '*', ' ']).replace("**", "");
    let flat = flat.as_str();
    let end = flat.find(". ").map_or(flat.len(), |at| at + 1);
    let mut sentence: String = flat[..end].chars().take(160).collect();
    if sentence.len() < flat[..end].len() {
        sentence.push('…');
    }
    sentence
}

/// One row of an index shard.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
struct ShardRow {
    slug: String,
    title: String,
    aliases: Vec<String>,
    /// The page file, relative to the output folder.
    path: String,
    /// The page relative to `indexes/`.
    href: String,
    sources: u64,
    summary: String,
    hash: String,
}

#[derive(Serialize)]
struct ShardModel<'a> {
    schema: u32,
    section: &'a str,
    json_href: String,
    pages: &'a [ShardRow],
}

#[derive(Serialize)]
struct RootSection {
    section: String,
    pages: usize,
    href: String,
    json_href: String,
}

/// Re-renders the shards whose rows changed, and the root when the sections did; removes empty sections.
/// Why shards could not be compiled: a template that fails while rendering is the user's error, not the
/// index's.
enum ShardError {
    Sqlite(rusqlite::Error),
    Template(String),
}

impl From<rusqlite::Error> for ShardError {
    fn from(error: rusqlite::Error) -> ShardError {
        ShardError::Sqlite(error)
    }
}

fn compile_shards(conn: &Connection, context: &StageContext<'_>, stage: &mut Stage) -> Result<(), ShardError> {
    let templates = context.templates;
    let template_hash =
        content_hash(format!("{}{}{}", templates.shard, templates.root, env!("KNOWLEDGE_SOURCE_HASH")).as_bytes());
    let mut sections: BTreeMap<String, Vec<ShardRow>> = BTreeMap::new();
    let mut statement =
        conn.prepare("SELECT slug, title, section, path, aliases, source_count, summary, hash FROM wiki_pages ORDER BY section, slug")?;
    let rows = statement.query_map([], |row| {
        let section: String = row.get(2)?;
        let path: String = row.get(3)?;
        Ok((
            section,
            ShardRow {
                slug: row.get(0)?,
                title: row.get(1)?,
                aliases: serde_json::from_str(&row.get::<_, String>(4)?).unwrap_or_default(),
                href: format!("../{path}"),
                path,
                sources: row.get::<_, i64>(5)?.cast_unsigned(),
                summary: row.get(6)?,
                hash: row.get(7)?,
            },
        ))
    })?;
    for row in rows {
        let (section, row) = row?;
        sections.entry(section).or_default().push(row);
    }
    let stored: HashMap<String, (String, String)> = conn
        .prepare("SELECT section, rows_hash, markdown FROM knowledge_indexes")?
        .query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?))))?
        .collect::<rusqlite::Result<_>>()?;
    let enabled = context.project.config.wiki.enabled;

    for (section, rows) in &sections {
        let rows_hash =
            content_hash(format!("{}{template_hash}", serde_json::to_string(rows).expect("rows serialize")).as_bytes());
        let before = stored.get(section);
        if !context.full && before.is_some_and(|(hash, _)| *hash == rows_hash) {
            continue;
        }
        let json_path = format!("indexes/machine/{section}.json");
        let model =
            ShardModel { schema: SCHEMA_VERSION, section, json_href: format!("machine/{section}.json"), pages: rows };
        let markdown = wiki::render("shard.md.j2", &templates.shard, &model).map_err(ShardError::Template)?;
        let json = format!(
            "{}\n",
            serde_json::to_string_pretty(
                &serde_json::json!({"schema": SCHEMA_VERSION, "section": section, "pages": rows})
            )
            .expect("rows serialize")
        );
        let path = format!("indexes/{section}.md");
        stage.shards.rendered += 1;
        let shard = shard_source_row(section, &markdown, rows);
        store::write_source(conn, generated_source(conn, &shard.path)?, &shard, context.run_id)?;
        let shard = RenderedShard {
            section,
            path: &path,
            json: Some((&json_path, &json)),
            page_count: rows.len(),
            rows_hash: &rows_hash,
            markdown: &markdown,
        };
        record_shard(conn, context, stage, &shard, before)?;
    }
    for (section, (_, markdown)) in stored.iter().filter(|(s, _)| !s.is_empty() && !sections.contains_key(*s)) {
        conn.prepare_cached("DELETE FROM knowledge_indexes WHERE section = ?1")?.execute([section])?;
        if let Some(id) = generated_source(conn, &format!("{INDEX_PREFIX}{section}"))? {
            store::delete_source(conn, id, true)?;
        }
        for uri in [format!("{INDEX_PREFIX}{section}"), format!("{INDEX_PREFIX}{section}.json")] {
            conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([&uri])?;
        }
        stage.shards.deleted += 1;
        stage.changes.push(ArtifactChange {
            artifact: format!("indexes/{section}.md"),
            kind: "shard",
            old_hash: Some(content_hash(markdown.as_bytes())),
            new_hash: None,
            sources: Vec::new(),
        });
    }

    if !enabled {
        for uri in [ROOT_URI, SCHEMA_URI] {
            conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([uri])?;
        }
        conn.prepare_cached("DELETE FROM knowledge_indexes WHERE section = ''")?.execute([])?;
        return Ok(());
    }
    let root_sections: Vec<RootSection> = sections
        .iter()
        .map(|(section, rows)| RootSection {
            section: section.clone(),
            pages: rows.len(),
            href: format!("{section}.md"),
            json_href: format!("machine/{section}.json"),
        })
        .collect();
    let total: usize = sections.values().map(Vec::len).sum();
    let root_model = serde_json::json!({"schema": SCHEMA_VERSION, "pages": total, "sections": root_sections});
    let rows_hash = content_hash(format!("{root_model}{template_hash}").as_bytes());
    let before = stored.get("");
    if context.full || before.is_none_or(|(hash, _)| *hash != rows_hash) {
        let markdown = wiki::render("root.md.j2", &templates.root, &root_model).map_err(ShardError::Template)?;
        stage.shards.rendered += 1;
        let root = RenderedShard {
            section: "",
            path: "indexes/root.md",
            json: None,
            page_count: total,
            rows_hash: &rows_hash,
            markdown: &markdown,
        };
        record_shard(conn, context, stage, &root, before)?;
    }
    let schema_hash = content_hash(SCHEMA_DOC.as_bytes());
    let schema_before: Option<String> = conn
        .prepare_cached("SELECT hash FROM storage_objects WHERE uri = ?1")?
        .query_row([SCHEMA_URI], |row| row.get(0))
        .optional()?;
    if schema_before.as_deref() != Some(schema_hash.as_str()) {
        upsert_object(
            conn,
            SCHEMA_URI,
            "schema",
            "schemas/v1.md",
            SCHEMA_DOC,
            context.run_id,
            &serde_json::json!({"version": SCHEMA_VERSION}),
        )?;
        stage.changes.push(ArtifactChange {
            artifact: "schemas/v1.md".to_string(),
            kind: "schema",
            old_hash: schema_before,
            new_hash: Some(schema_hash),
            sources: Vec::new(),
        });
    }
    Ok(())
}

/// A shard (or, with the empty section, the root) rendered by this build.
struct RenderedShard<'a> {
    section: &'a str,
    /// The Markdown file, relative to the output folder.
    path: &'a str,
    /// The JSON file's path and text; the root has none.
    json: Option<(&'a str, &'a str)>,
    page_count: usize,
    rows_hash: &'a str,
    markdown: &'a str,
}

/// Stores a rendered shard's catalog and artifact rows, and records the change for the log.
fn record_shard(
    conn: &Connection,
    context: &StageContext<'_>,
    stage: &mut Stage,
    shard: &RenderedShard<'_>,
    before: Option<&(String, String)>,
) -> rusqlite::Result<()> {
    let RenderedShard { section, path, json, page_count, rows_hash, markdown } = *shard;
    let (json_path, json) = (json.map(|(path, _)| path), json.map(|(_, text)| text));
    conn.prepare_cached(
        "INSERT OR REPLACE INTO knowledge_indexes (section, path, json_path, page_count, rows_hash, markdown, json, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![section, path, json_path, page_count as i64, rows_hash, markdown, json, context.run_id])?;
    let (uri, kind) =
        if section.is_empty() { (ROOT_URI.to_string(), "root") } else { (format!("{INDEX_PREFIX}{section}"), "shard") };
    let metadata = serde_json::json!({"section": section, "pages": page_count});
    upsert_object(conn, &uri, kind, path, markdown, context.run_id, &metadata)?;
    if let (Some(json_path), Some(json)) = (json_path, json) {
        upsert_object(conn, &format!("{uri}.json"), "shard_json", json_path, json, context.run_id, &metadata)?;
    }
    let old_hash = before.map(|(_, markdown)| content_hash(markdown.as_bytes()));
    let new_hash = content_hash(markdown.as_bytes());
    if old_hash.as_deref() != Some(new_hash.as_str()) {
        stage.changes.push(ArtifactChange {
            artifact: path.to_string(),
            kind,
            old_hash,
            new_hash: Some(new_hash),
            sources: Vec::new(),
        });
    }
    Ok(())
}

/// An artifact on disk that differs from what the index says it should be.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Drift {
    /// Relative to the output folder.
    pub path: String,
    /// `missing` or `modified`.
    pub state: &'static str,
}

/// A generated artifact as the index records it: where it goes, what it is, and its content's hash.
struct Artifact {
    uri: String,
    kind: String,
    path: String,
    hash: String,
}

fn artifacts(conn: &Connection) -> rusqlite::Result<Vec<Artifact>> {
    conn.prepare("SELECT uri, kind, path, hash FROM storage_objects ORDER BY path")?
        .query_map([], |row| {
            Ok(Artifact { uri: row.get(0)?, kind: row.get(1)?, path: row.get(2)?, hash: row.get(3)? })
        })?
        .collect()
}

impl Artifact {
    /// Which build counter the file counts under.
    fn counter(&self) -> &'static str {
        if self.kind == "page" { "page" } else { "shard" }
    }

    /// The text the file should hold, from the index.
    fn text(&self, conn: &Connection) -> rusqlite::Result<Option<String>> {
        let section = self.uri.strip_prefix(INDEX_PREFIX);
        match (self.kind.as_str(), self.uri.strip_prefix(PAGE_PREFIX)) {
            ("page", Some(slug)) => store::page_markdown(conn, slug),
            // The root's uri is `knowledge://index/root`, which `shard_markdown` reads as the root.
            ("root" | "shard", _) => section.map_or(Ok(None), |section| store::shard_markdown(conn, section)),
            ("shard_json", _) => match section.and_then(|s| s.strip_suffix(".json")) {
                Some(section) => Ok(conn
                    .prepare_cached("SELECT json FROM knowledge_indexes WHERE section = ?1")?
                    .query_row([section], |row| row.get(0))
                    .optional()?
                    .flatten()),
                None => Ok(None),
            },
            ("schema", _) => Ok(Some(SCHEMA_DOC.to_string())),
            _ => Ok(None),
        }
    }
}

/// Generated artifacts whose file is missing or differs from the index, and generated files the index no
/// longer lists (a build killed between its commit and its file sync leaves them): what `knowledge build
/// --check` reports and what the next build puts right. Every file is read: a check trusts no cache.
pub fn drift(conn: &Connection, output_dir: &Path) -> rusqlite::Result<Vec<Drift>> {
    let mut drift = Vec::new();
    let artifacts = artifacts(conn)?;
    let owned = read_stat_cache(output_dir);
    for artifact in &artifacts {
        let Some(text) = artifact.text(conn)? else { continue };
        match std::fs::read(output_dir.join(&artifact.path)) {
            Ok(bytes) if bytes == text.as_bytes() => {}
            Ok(bytes) if !may_replace(&artifact.path, &bytes, &owned) => {
                drift.push(Drift { path: artifact.path.clone(), state: "blocked" });
            }
            Ok(_) => drift.push(Drift { path: artifact.path.clone(), state: "modified" }),
            Err(_) => drift.push(Drift { path: artifact.path.clone(), state: "missing" }),
        }
    }
    let listed: HashSet<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
    drift.extend(leftovers(output_dir, &listed, &owned).into_iter().map(|path| Drift { path, state: "stale" }));
    drift.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(drift)
}

/// The file under the output folder where builds remember each generated file's size, mtime and hash
/// as they left it. It is also the record of which files the tool wrote: a file it lists is never taken
/// for the user's. A cache: missing, stale or unreadable, it only makes the next build read more files.
pub const STAT_CACHE: &str = "artifacts.stat";

/// The folders of the output layout that hold generated files (and, in `wiki/`, hand-written pages).
const GENERATED_FOLDERS: [&str; 3] = ["wiki", "indexes", "schemas"];

/// Size, mtime and content hash of a generated file as the last build left it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStat {
    size: u64,
    mtime_ns: u128,
    hash: String,
}

fn file_stat(file: &Path, hash: &str) -> Option<FileStat> {
    let metadata = std::fs::metadata(file).ok()?;
    let mtime = metadata.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(FileStat { size: metadata.len(), mtime_ns: mtime.as_nanos(), hash: hash.to_string() })
}

fn read_stat_cache(output_dir: &Path) -> HashMap<String, FileStat> {
    let text = std::fs::read_to_string(output_dir.join(STAT_CACHE)).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let (path, size, mtime, hash) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
            Some((
                path.to_string(),
                FileStat { size: size.parse().ok()?, mtime_ns: mtime.parse().ok()?, hash: hash.to_string() },
            ))
        })
        .collect()
}

/// Whether a build may replace the file at `path` (relative to the output folder) holding `bytes`: the
/// stat cache records that the tool wrote a file there (a hand edit of a generated file is undone), or its
/// text says it was generated (front matter `generated: true`, a machine shard's JSON, the built-in schema
/// document). Anything else is the user's and is never overwritten.
fn may_replace(path: &str, bytes: &[u8], owned: &HashMap<String, FileStat>) -> bool {
    owned.contains_key(path) || looks_written_by_us(path, bytes)
}

/// Whether a build may delete the file at `path` that the index no longer lists: only the bytes the tool
/// wrote (the hash the stat cache recorded) or a text that says it was generated. A hand-written page that
/// took the place of a generated one stays.
fn may_delete(path: &str, bytes: &[u8], owned: &HashMap<String, FileStat>) -> bool {
    owned.get(path).is_some_and(|stat| stat.hash == content_hash(bytes)) || looks_written_by_us(path, bytes)
}

fn looks_written_by_us(path: &str, bytes: &[u8]) -> bool {
    if bytes == SCHEMA_DOC.as_bytes() {
        return true;
    }
    let text = String::from_utf8_lossy(bytes);
    if path.starts_with("indexes/machine/") && path.ends_with(".json") {
        return serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|json| json.get("schema").is_some() && json.get("pages").is_some());
    }
    looks_generated(&text)
}

/// Files in the generated folders that the index does not list and that a build may remove: generated
/// files of artifacts the index dropped, and temporary files a killed build left. Hand-written pages in
/// `wiki/` and any other file of the user's stay. Sorted, relative to the output folder.
fn leftovers(output_dir: &Path, listed: &HashSet<&str>, owned: &HashMap<String, FileStat>) -> Vec<String> {
    let mut found = Vec::new();
    for folder in GENERATED_FOLDERS {
        files_under(output_dir, folder, &mut found);
    }
    // The stat cache's own temporary file sits in the output folder itself.
    if let Ok(entries) = std::fs::read_dir(output_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_temporary(&name) && entry.file_type().is_ok_and(|t| t.is_file()) {
                found.push(name);
            }
        }
    }
    let mut leftovers: Vec<String> = found
        .into_iter()
        .filter(|path| !listed.contains(path.as_str()))
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            is_temporary(name) || std::fs::read(output_dir.join(path)).is_ok_and(|b| may_delete(path, &b, owned))
        })
        .collect();
    leftovers.sort();
    leftovers
}

/// Whether a file name is one of [`write_atomically`]'s temporary files (`.NAME.PID.tmp`).
fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The files below `output_dir/folder`, relative to `output_dir`, `/`-separated. Symlinks are not
/// followed: the output folder holds no links of the tool's.
fn files_under(output_dir: &Path, folder: &str, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(output_dir.join(folder)) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let path = format!("{folder}/{}", entry.file_name().to_string_lossy());
        if kind.is_dir() {
            files_under(output_dir, &path, found);
        } else if kind.is_file() {
            found.push(path);
        }
    }
}

/// Makes the generated files match the index: removes generated files the index no longer lists (and the
/// temporary files of a killed build), and writes each artifact whose file is missing or differs. A file
/// whose size and mtime are those the stat cache recorded with the hash the index now expects is taken as
/// unchanged without being read (as sources are); any other file is read and compared, so a page edited
/// or deleted by hand is restored. A file in the way that the tool did not write is left alone and
/// returned. Runs after every build, a no-op one too, so a build killed after its commit is completed by
/// the next: the index is the record, the files follow it.
pub fn sync_files(
    conn: &Connection,
    output_dir: &Path,
    pages: &mut ArtifactCounters,
    shards: &mut ArtifactCounters,
) -> Result<Vec<String>, std::io::Error> {
    let artifacts = artifacts(conn).map_err(std::io::Error::other)?;
    let cached = read_stat_cache(output_dir);
    let listed: HashSet<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
    for path in leftovers(output_dir, &listed, &cached) {
        crate::failpoint("unlink");
        std::fs::remove_file(output_dir.join(&path))?;
    }
    let mut blocked = Vec::new();
    let mut stats: Vec<(String, FileStat)> = Vec::with_capacity(artifacts.len());
    for artifact in &artifacts {
        let counters = if artifact.counter() == "page" { &mut *pages } else { &mut *shards };
        let file = output_dir.join(&artifact.path);
        if let Some(now) = file_stat(&file, &artifact.hash).filter(|now| cached.get(&artifact.path) == Some(now)) {
            counters.unchanged += 1;
            stats.push((artifact.path.clone(), now));
            continue;
        }
        let Some(text) = artifact.text(conn).map_err(std::io::Error::other)? else { continue };
        counters.compared += 1;
        match std::fs::read(&file) {
            Ok(bytes) if bytes == text.as_bytes() => counters.unchanged += 1,
            Ok(bytes) if !may_replace(&artifact.path, &bytes, &cached) => {
                blocked.push(artifact.path.clone());
                continue;
            }
            _ => {
                write_atomically(&file, &text)?;
                counters.written += 1;
            }
        }
        if let Some(stat) = file_stat(&file, &artifact.hash) {
            stats.push((artifact.path.clone(), stat));
        }
    }
    let changed = stats.len() != cached.len() || stats.iter().any(|(path, stat)| cached.get(path) != Some(stat));
    if changed {
        let mut text = String::new();
        for (path, stat) in &stats {
            text.push_str(&format!("{path}\t{}\t{}\t{}\n", stat.size, stat.mtime_ns, stat.hash));
        }
        crate::failpoint("stat-cache");
        write_atomically(&output_dir.join(STAT_CACHE), &text)?;
    }
    Ok(blocked)
}

/// Writes a file through a temporary sibling (named by this process, so two builds never share one) and a
/// rename, so a reader sees the old file or the new one. A temporary file a killed build leaves behind is
/// removed by the next build's sync.
fn write_atomically(file: &Path, text: &str) -> Result<(), std::io::Error> {
    let folder = file.parent().unwrap_or(Path::new("."));
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = folder.join(format!(".{name}.{}.tmp", std::process::id()));
    crate::failpoint("write");
    match std::fs::write(&temporary, text) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(folder)?;
            std::fs::write(&temporary, text)?;
        }
        other => other?,
    }
    crate::failpoint("rename");
    std::fs::rename(&temporary, file)
}

/// Records, inside the build's transaction, the lines the build adds to the day's log
/// (`logs/YYYY/MM/DD.jsonl`, the day the build started, UTC): one per artifact change. The commit makes
/// them due, and [`complete_log`] appends them after it; a build killed in between leaves them due, and
/// the next build appends them, so the log gets each build's lines once.
pub fn record_log(
    conn: &Connection,
    run_id: &str,
    started_at: &str,
    changes: &[ArtifactChange],
) -> rusqlite::Result<()> {
    if changes.is_empty() {
        return store::delete_meta(conn, LOG_DUE);
    }
    let (year, month, day) = (&started_at[0..4], &started_at[5..7], &started_at[8..10]);
    let mut lines = String::new();
    for change in changes {
        let record = serde_json::json!({
            "run_id": run_id,
            "at": started_at,
            "artifact": change.artifact,
            "kind": change.kind,
            "old_hash": change.old_hash,
            "new_hash": change.new_hash,
            "sources": change.sources,
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    let due = serde_json::json!({"file": format!("logs/{year}/{month}/{day}.jsonl"), "lines": lines});
    store::set_meta(conn, LOG_DUE, &due.to_string())
}

/// The `meta` key of the log lines the last committed build owes the day's log.
const LOG_DUE: &str = "log_due";

/// Appends what the last committed build owes the day's log, unless the log already ends with it. A
/// write cut short by a kill is finished, not repeated: the lines were appended last (one writer at a
/// time), so the file ends with some first part of them.
pub fn complete_log(conn: &Connection, output_dir: &Path) -> Result<(), std::io::Error> {
    let due = store::meta(conn, LOG_DUE).map_err(std::io::Error::other)?;
    let Some(due) = due.and_then(|due| serde_json::from_str::<serde_json::Value>(&due).ok()) else { return Ok(()) };
    let (Some(file), Some(lines)) = (due["file"].as_str(), due["lines"].as_str()) else { return Ok(()) };
    let file = output_dir.join(file);
    let written = std::fs::read(&file).unwrap_or_default();
    let tail = &written[written.len().saturating_sub(lines.len())..];
    // The longest end of the file that is a beginning of the lines: what made it before a kill.
    let from = (0..=tail.len()).find(|&at| lines.as_bytes().starts_with(&tail[at..])).unwrap_or(tail.len());
    let done = tail.len() - from;
    if done == lines.len() {
        return Ok(());
    }
    std::fs::create_dir_all(file.parent().expect("a log file has a folder"))?;
    crate::failpoint("log");
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&file)?;
    std::io::Write::write_all(&mut log, &lines.as_bytes()[done..])
}

/// The generated files an index lists, as project-relative paths: the source walk skips them.
#[must_use]
pub fn generated_in_project(project: &Project, generated: &HashSet<String>) -> HashSet<String> {
    generated.iter().map(|path| project_path_of_artifact(project, path)).collect()
}

/// A generated file's path relative to the project root, from its path relative to the output folder.
#[must_use]
pub fn project_path_of_artifact(project: &Project, path: &str) -> String {
    let wiki = Layout::new(project).wiki_folder_in_project;
    match wiki.strip_suffix("wiki").map(|output| output.trim_end_matches('/')) {
        Some("") | None => path.to_string(),
        Some(output) => format!("{output}/{path}"),
    }
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

/// Whether a file's text is a page this compiler generated (front matter with `generated: true`).
#[must_use]
pub fn looks_generated(text: &str) -> bool {
    let Some(body) = text.strip_prefix("---\n") else { return false };
    body.lines().take_while(|line| *line != "---").any(|line| line.trim() == "generated: true")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due(conn: &Connection) -> String {
        let change = |artifact: &str| ArtifactChange {
            artifact: artifact.to_string(),
            kind: "page",
            old_hash: None,
            new_hash: Some("h".to_string()),
            sources: Vec::new(),
        };
        record_log(conn, "run-1", "2026-11-30T00:00:00.000Z", &[change("wiki/a.md"), change("wiki/b.md")]).unwrap();
        let due: serde_json::Value = serde_json::from_str(&store::meta(conn, LOG_DUE).unwrap().unwrap()).unwrap();
        due["lines"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_log_gets_a_builds_lines_once_however_far_a_killed_append_got() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)").unwrap();
        let lines = due(&conn);
        let earlier = "{\"run_id\":\"run-0\"}\n";
        for cut in [0, 1, 17, lines.len() / 2, lines.len() - 1, lines.len()] {
            let output = tempfile::tempdir().unwrap();
            let file = output.path().join("logs/2026/11/30.jsonl");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, format!("{earlier}{}", &lines[..cut])).unwrap();
            complete_log(&conn, output.path()).unwrap();
            complete_log(&conn, output.path()).unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{earlier}{lines}"), "cut at {cut}");
        }
        record_log(&conn, "run-2", "2026-11-30T00:00:00.000Z", &[]).unwrap();
        assert_eq!(store::meta(&conn, LOG_DUE).unwrap(), None, "a build without changes owes nothing");
    }
}
