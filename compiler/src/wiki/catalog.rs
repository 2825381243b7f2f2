//! The concept catalog's inputs: every source a generated page may quote, with its signals, set from the
//! index; and the layout that places pages.

use super::*;
use crate::sources::mirror::Mirror;
use crate::store::CatalogRow;
use knowledge_queries::wiki::{Excerpt, PlanSignal, Signal, SignalKind};

/// The catalog's inputs, kept for the life of a `Compiler`: one entry per source a page may quote, mirrored
/// from the index.
pub(super) struct CatalogInputs {
    catalog: Catalog,
    pub(super) entries: Mirror<CatalogEntry>,
}

/// Brings the catalog's inputs in line with the index as `sync.run` leaves it (inside this build's
/// transaction), and returns it: the changed sources' rows when the entries match the prior run, every
/// quotable source's otherwise. A field is set only when its value changed, so salsa re-runs only what an
/// edit reaches.
pub(super) fn sync_catalog(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    project: &Project,
    sync: &IndexSync<'_>,
) -> rusqlite::Result<Catalog> {
    let mut state = catalog_state(db, inputs, project);
    let field = project.config.wiki.section_field.as_deref();
    // A source whose row is not read (not quotable, or gone) has no entry.
    let read = |paths: Option<&[String]>, each: &mut dyn FnMut(String, CatalogRow)| {
        crate::store::catalog_rows(conn, field, paths)
            .map(|rows| rows.into_iter().for_each(|row| each(row.path.clone(), row)))
    };
    state.entries.sync(sync, sync.changed, read, |entry, row| set_entry(db, entry, row))?;
    let catalog = state.catalog;
    let listed: Vec<CatalogEntry> = state.entries.values().copied().collect();
    if catalog.entries(db) != &listed {
        catalog.set_entries(db).to(listed);
    }
    inputs.catalog = Some(state);
    Ok(catalog)
}

/// The catalog and, by slug, the views of the pages an edit reaches.
pub(super) type SeededPages = (Catalog, Vec<(String, PageView)>);

/// The pages a build that leaves the plan as the last build made it can reach: those naming one of
/// `touched`, each rebuilt from the view the index stores, over catalog entries read for the sources those
/// views name and no others. `None` when a view is missing or names what the index does not hold (only a
/// damaged index): the caller then plans from the whole catalog. The catalog's inputs hold only those
/// entries afterwards, so they match no run and the next build reads them whole.
pub(super) fn seed_pages(
    conn: &Connection,
    db: &mut KnowledgeDb,
    inputs: &mut PageInputs,
    project: &Project,
    same: SamePlan<'_>,
) -> rusqlite::Result<Option<SeededPages>> {
    let mut views: BTreeMap<String, Option<StoredView>> = BTreeMap::new();
    for path in same.touched {
        for (slug, view) in crate::store::views_of_pages_listing(conn, path)? {
            views.insert(slug, serde_json::from_str(&view).ok());
        }
    }
    let Some(mut views) = views.into_iter().map(|(slug, view)| Some((slug, view?))).collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    for (_, view) in &mut views {
        move_signals(view, same.moved);
    }
    let wanted = named_signals(views.iter().map(|(_, view)| view));
    let named = crate::store::named_sources(conn, project.config.wiki.section_field.as_deref(), &wanted)?;
    // A signal a view names that the index does not hold (only a damaged index): plan from the whole catalog.
    let read: usize = named.iter().map(|source| source.signals.len()).sum();
    if read != wanted.values().map(BTreeSet::len).sum::<usize>() {
        return Ok(None);
    }
    let mut state = catalog_state(db, inputs, project);
    state.entries.forget();
    let mut entries: HashMap<String, CatalogEntry> = HashMap::new();
    for source in named {
        let row = CatalogRow { signals: seeded_signals(source.signals), ..source.row };
        let path = row.path.clone();
        entries.insert(path.clone(), *state.entries.set(path, row, |entry, row| set_entry(db, entry, row)));
    }
    let catalog = state.catalog;
    inputs.catalog = Some(state);
    let pages: Option<Vec<(String, PageView)>> = views
        .into_iter()
        .map(|(slug, view)| Some((slug, view.resolve(db, |path| entries.get(path).copied())?)))
        .collect();
    Ok(pages.map(|pages| (catalog, pages)))
}

/// Names each signal the plan reads that moved in its source's list (`moved`: by source, each moved signal's
/// stored and new index, sorted by the stored one) by its new index.
fn move_signals(view: &mut StoredView, moved: &[(String, MovedSignals)]) {
    for (path, at) in view.places.iter_mut().chain(&mut view.backlinks) {
        let Some((_, moves)) = moved.iter().find(|(moved_path, _)| moved_path == path) else { continue };
        if let Ok(found) = moves.binary_search_by_key(at, |&(old, _)| old) {
            *at = moves[found].1;
        }
    }
}

/// The catalog's inputs kept by this `Compiler`, or new ones, with the settings the plan and the models read
/// set from the project.
fn catalog_state(db: &mut KnowledgeDb, inputs: &mut PageInputs, project: &Project) -> CatalogInputs {
    let wiki_config = &project.config.wiki;
    let settings = PlanSettings {
        min_sources: *wiki_config.min_sources.get_ref() as usize,
        max_places: *wiki_config.max_quotes.get_ref() as usize,
        max_related: wiki_config.max_related as usize,
    };
    let wiki_folder = Layout::new(project).wiki_folder_in_project;
    let state = inputs.catalog.take().unwrap_or_else(|| CatalogInputs {
        catalog: Catalog::builder(Vec::new(), settings, wiki_folder.clone()).new(db),
        entries: Mirror::default(),
    });
    let catalog = state.catalog;
    if catalog.settings(db) != settings {
        catalog.set_settings(db).to(settings);
    }
    if catalog.wiki_folder(db) != &wiki_folder {
        catalog.set_wiki_folder(db).to(wiki_folder);
    }
    state
}

/// Creates the entry of a source, or sets the fields of `entry` that changed.
fn set_entry(db: &mut KnowledgeDb, entry: Option<CatalogEntry>, row: CatalogRow) -> CatalogEntry {
    let (plan_signals, excerpts) = row.signals;
    let Some(entry) = entry else {
        return CatalogEntry::new(db, row.path, row.title, row.revision, row.section_value, plan_signals, excerpts);
    };
    if entry.title(db) != &row.title {
        entry.set_title(db).to(row.title);
    }
    if entry.revision(db) != &row.revision {
        entry.set_revision(db).to(row.revision);
    }
    if entry.section_value(db) != &row.section_value {
        entry.set_section_value(db).to(row.section_value);
    }
    if entry.plan_signals(db) != &plan_signals {
        entry.set_plan_signals(db).to(plan_signals);
    }
    if entry.excerpts(db) != &excerpts {
        entry.set_excerpts(db).to(excerpts);
    }
    entry
}

/// Of each source the views name, the indexes of the signals they quote or link by (none for a source
/// they only list).
fn named_signals<'a>(views: impl Iterator<Item = &'a StoredView>) -> BTreeMap<String, BTreeSet<u32>> {
    let mut wanted: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for view in views {
        for (path, at) in view.places.iter().chain(&view.backlinks) {
            wanted.entry(path.clone()).or_default().insert(*at);
        }
        for path in &view.also {
            wanted.entry(path.clone()).or_default();
        }
    }
    wanted
}

/// The signals of a seeded entry: those read at their indexes, as a whole read makes them, and in the places
/// no view names a stand-in that nothing reads (the page models read only the signals their views name, and
/// the next build reads the catalog whole), up to the last one read.
fn seeded_signals(read: Vec<(u32, PlanSignal, Excerpt)>) -> (Vec<PlanSignal>, Vec<Excerpt>) {
    let len = read.iter().map(|(index, ..)| *index as usize + 1).max().unwrap_or(0);
    let stand_in = Signal {
        kind: SignalKind::Heading,
        label: String::new(),
        other: None,
        excerpt: Excerpt { chunk: 0, start: 0, end: 0, start_line: 0, end_line: 0, table_header: None },
        quotable: false,
        weight: 0,
    };
    let (stand_in, no_excerpt) = wiki::plan_signal(stand_in, 0);
    let (mut plan_signals, mut excerpts) = (vec![stand_in; len], vec![no_excerpt; len]);
    for (index, signal, excerpt) in read {
        (plan_signals[index as usize], excerpts[index as usize]) = (signal, excerpt);
    }
    (plan_signals, excerpts)
}

/// Where generated files go, and how they link to sources.
pub(super) struct Layout {
    /// The output folder's `wiki/`, relative to the project root (`/`-separated).
    pub(super) wiki_folder_in_project: String,
}

impl Layout {
    pub(super) fn new(project: &Project) -> Layout {
        Layout { wiki_folder_in_project: in_project(project, &project.output_dir().join("wiki")) }
    }
}

/// A folder's path relative to the project root, `/`-separated (as given when it is outside the project).
pub(super) fn in_project(project: &Project, folder: &Path) -> String {
    folder
        .strip_prefix(&project.root)
        .map_or_else(|_| folder.to_string_lossy().into_owned(), crate::sources::slash_joined)
}
