//! Index shards: the inputs half. Every page row is an input of the graph's shard queries
//! (`knowledge_queries::wiki::PageIndex`), set from the index (only the rows this build wrote or removed
//! when the inputs match the prior run); the artifact driver (`declared.rs`) then stores each section's
//! shards, the root and the other declared kinds whose stamps differ from the index's.

use knowledge_queries::wiki::{DECLARED_KINDS, IndexedPage, PageIndex, ShardRow, sections, shard_json_text};

use super::declared::Declared;
use super::driver::{Run, drive};
use super::*;
use crate::sources::mirror::Mirror;
use crate::store::ShardRowsOf;

/// The shard queries' inputs, kept for the life of a `Compiler`: one per page row, and the run whose
/// committed index they match.
pub(super) struct ShardInputs {
    index: PageIndex,
    pages: Mirror<IndexedPage>,
}

/// One page row as the shards read it.
struct PageRow {
    slug: String,
    fields: PageFields,
}

/// A page row's fields: what its section's files show of it, and with `full`, the row.
struct PageFields {
    section: String,
    digest: String,
    json: String,
    row: Option<ShardRow>,
}

/// Hands each page row the index holds to `each`, in slug order, with its row when `full`. A fresh process
/// reads every page's digest and JSON, and whole rows only where it renders.
fn page_rows(
    conn: &Connection,
    pages: ShardRowsOf<'_>,
    full: bool,
    mut each: impl FnMut(PageRow),
) -> rusqlite::Result<()> {
    store::each_shard_row(conn, pages, full, |stored| {
        let fields = PageFields { section: stored.section, digest: stored.digest, json: stored.json, row: stored.row };
        each(PageRow { slug: stored.slug, fields });
    })
}

/// A section's JSON file as the index's page rows make it: what the file must hold. The index keeps only
/// its hash (in `storage_objects`), since every edit of a page changes a row of it and the rows are there.
pub(super) fn stored_shard_json(conn: &Connection, section: &str) -> rusqlite::Result<Option<String>> {
    let mut rows = Vec::new();
    page_rows(conn, ShardRowsOf::Section(section), false, |page| rows.push(page.fields.json))?;
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(shard_json_text(section, rows.iter().map(String::as_str))))
}

/// The project's name as `kc.toml` gives it, or empty: never the folder's, on which an index must not depend.
fn project_name(project: &Project) -> String {
    project.config.project.name.clone().unwrap_or_default()
}

/// Whether the shard inputs match the index as `run` committed it.
pub(super) fn shards_match(inputs: &PageInputs, run: Option<&str>) -> bool {
    inputs.shards.as_ref().is_some_and(|state| state.pages.matches(run))
}

/// The hash of the shard and root templates and of the code that renders them, part of every shard's
/// stored rows hash.
fn shard_template_hash(templates: &TemplateSet) -> String {
    content_hash(format!("{}{}{}", templates.shard, templates.root, env!("KNOWLEDGE_SOURCE_HASH")).as_bytes())
}

/// Brings the shard queries' inputs in line with the page rows as `sync.run` leaves them: when the inputs
/// match the prior run, only the rows of `written` (the pages this build stored or removed), whole;
/// otherwise every row's digest and JSON alone (a section's whole rows are read only where it renders).
fn sync_shards(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    (sync, written): (&IndexSync<'_>, &[String]),
    (template_hash, project_name): (&str, String),
) -> rusqlite::Result<PageIndex> {
    let mut state = inputs.shards.take().unwrap_or_else(|| ShardInputs {
        index: PageIndex::new(db, Vec::new(), template_hash.to_string(), project_name.clone()),
        pages: Mirror::default(),
    });
    let read = |slugs: Option<&[String]>, each: &mut dyn FnMut(String, PageFields)| {
        let (pages, full) = slugs.map_or((ShardRowsOf::All, false), |slugs| (ShardRowsOf::Slugs(slugs), true));
        page_rows(conn, pages, full, |page| each(page.slug, page.fields))
    };
    state.pages.sync(sync, written, read, |input, page| set_page(db, input, page))?;
    // The mirror holds the pages in slug order, so a stable sort by section leaves them by section and slug.
    let mut listed: Vec<IndexedPage> = state.pages.values().copied().collect();
    listed.sort_by(|a, b| a.section(db).cmp(b.section(db)));
    let index = state.index;
    if index.pages(db) != &listed {
        index.set_pages(db).to(listed);
    }
    if index.template_hash(db) != template_hash {
        index.set_template_hash(db).to(template_hash.to_string());
    }
    if index.project_name(db) != &project_name {
        index.set_project_name(db).to(project_name);
    }
    inputs.shards = Some(state);
    Ok(index)
}

/// Creates the input of a page row, or sets the fields that changed. A row read without its shown fields
/// leaves them as they were only when its digest did not change; otherwise they are unread until needed.
fn set_page(db: &mut KnowledgeDb, input: Option<IndexedPage>, page: PageFields) -> IndexedPage {
    let Some(input) = input else {
        return IndexedPage::new(db, page.section, page.digest, page.json, page.row);
    };
    if input.section(db) != &page.section {
        input.set_section(db).to(page.section);
    }
    let digest_changed = input.digest(db) != &page.digest;
    if digest_changed {
        input.set_digest(db).to(page.digest);
    }
    if input.json(db) != &page.json {
        input.set_json(db).to(page.json);
    }
    if page.row.is_some() && input.row(db) != &page.row {
        input.set_row(db).to(page.row);
    } else if page.row.is_none() && digest_changed && input.row(db).is_some() {
        input.set_row(db).to(None);
    }
    input
}

/// Reads the rows of a section's pages that its inputs lack, so its Markdown can be rendered.
pub(super) fn read_section_rows(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    section: &str,
) -> rusqlite::Result<()> {
    let Some(state) = inputs.shards.as_mut() else { return Ok(()) };
    let index = state.index;
    let unread = sections(db, index).get(section).is_some_and(|pages| pages.iter().any(|page| page.row(db).is_none()));
    if unread {
        page_rows(conn, ShardRowsOf::Section(section), true, |page| {
            state.pages.set(page.slug, page.fields, |input, page| set_page(db, input, page));
        })?;
    }
    Ok(())
}

/// Sets the shard inputs from every page row the index holds as `sync.run` committed it, and derives every
/// declared artifact once (what [`super::warm_up`] does for the shards).
pub(super) fn warm_shards(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    (project, templates): (&Project, &TemplateSet),
    sync: &IndexSync<'_>,
) -> rusqlite::Result<()> {
    set_templates(db, inputs, templates);
    let index = sync_shards(conn, db, inputs, (sync, &[]), (&shard_template_hash(templates), project_name(project)))?;
    let names: Vec<String> = sections(db, index).keys().cloned().collect();
    for name in &names {
        read_section_rows(conn, db, inputs, name)?;
    }
    let db: &KnowledgeDb = db;
    for kind in DECLARED_KINDS {
        for stamped in (kind.stamps)(db, index).unwrap_or_default() {
            let _ = (kind.derive)(db, index, &stamped.key);
        }
    }
    Ok(())
}

/// Records that a build which changed no page row leaves the shard inputs matching its run, as they
/// matched the one before it.
pub(super) fn shards_unchanged(inputs: &mut PageInputs, context: &StageContext<'_>) {
    if let Some(state) = inputs.shards.as_mut() {
        state.pages.carry(&context.sync);
    }
}

/// Brings the shard inputs in line with the page rows (`written`: the pages this build stored or removed),
/// then runs the artifact driver over every declared kind with the page index: the sections' shards, the
/// root and the other declared kinds whose stamps changed are stored, and those of sections with no page
/// left removed.
pub(super) fn compile_shards(run: &mut Run<'_, '_>, stage: &mut Stage, written: &[String]) -> Result<(), StoreError> {
    let context = run.context;
    let template_hash = shard_template_hash(context.templates);
    let project_name = project_name(context.project);
    // A full build reseeds (`IndexSync::reseed`), so every row is read.
    let index = sync_shards(run.conn, run.db, run.inputs, (&context.sync, written), (&template_hash, project_name))
        .map_err(|source| run.sql(source))?;
    let index = context.project.config.wiki.enabled.then_some(index);
    for kind in DECLARED_KINDS {
        drive(&mut Declared { kind, index }, run, stage)?;
    }
    Ok(())
}
