//! The wiki's part of the query graph: the catalog of quotable sources (inputs), the plan over it, and each
//! page's model.
//!
//! The driver keeps one [`CatalogEntry`] per source a page may quote and sets a field only when its value
//! changed. From there salsa decides what an edit reaches:
//! - a source's signals are two fields: what the planner reads ([`PlanSignal`]: kind, text, rank) and where
//!   each one stands ([`Excerpt`]), so an edit that only moves text changes the second and the plan is not
//!   run again;
//! - what the plan reads of an entry alone (its section, and what resolving its links needs: [`SourceLinks`])
//!   is kept per part of the catalog ([`part_sources`]), so a re-plan makes it again only for the part whose
//!   entry changed;
//! - [`planned_pages`] runs the planner over every entry's plan signals and hands each page out as a
//!   [`PlannedPage`] keyed by its slug, whose [`PageView`] names its sources by entry, not by position;
//! - [`page_model`] re-runs only for a page whose view changed or whose quoted sources did.

use super::plan::{
    CatalogSource, Mention, PagePlan, PlanSettings, PlanSignal, SourceLinks, concept_key, plan, source_links,
};
use super::render::{Backlink, PageLink, PageModel, Quote, SCHEMA_VERSION, SourceLink, TableHeader};
use super::signals::Excerpt;
use crate::Db;
use crate::links::in_folder;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// One source a generated page may quote: a file every principal may read. The driver creates one per path
/// and sets its fields from the source's stored row.
#[salsa::input(debug)]
pub struct CatalogEntry {
    /// The path relative to the project root, with `/` separators.
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub title: String,
    /// The content hash of the source, cited by every quote.
    #[returns(ref)]
    pub revision: String,
    /// The value of its front matter's `[wiki] section_field`, when it has one.
    #[returns(ref)]
    pub section_value: Option<String>,
    /// Its signals as the planner reads them.
    #[returns(ref)]
    pub plan_signals: Vec<PlanSignal>,
    /// Where each signal stands, in the same order: what a page quotes.
    #[returns(ref)]
    pub excerpts: Vec<Excerpt>,
}

/// Every catalog entry, sorted by path, with the settings the plan and the models read.
#[salsa::input(singleton, debug)]
pub struct Catalog {
    #[returns(ref)]
    pub entries: Vec<CatalogEntry>,
    #[returns(copy)]
    pub settings: PlanSettings,
    /// The output folder's `wiki/`, relative to the project root: where pages live, and where hand-written
    /// pages come from.
    #[returns(ref)]
    pub wiki_folder: String,
}

/// One planned page: its slug and view. Interned, so a page is the same query key whether the planner made
/// it or the driver rebuilt it from the view the index stores (a fresh process whose edit left the plan
/// as it was), and an equal view keeps its memos.
#[salsa::interned(debug)]
pub struct PlannedPage<'db> {
    #[returns(ref)]
    pub slug: String,
    #[returns(ref)]
    pub view: PageView,
}

/// A page's plan, its sources named by `S`: by catalog entry in the graph ([`PageView`]), so adding a source
/// elsewhere leaves it equal; by path in the index ([`StoredView`]), so that a fresh process whose edit
/// cannot change the plan models the pages the edit reaches without planning again.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct View<S> {
    pub title: String,
    pub aliases: Vec<String>,
    pub section: String,
    /// The first place is the defining source's, shown as the lead.
    pub lead: bool,
    /// Quoted places: the source and the index of its signal.
    pub places: Vec<(S, u32)>,
    /// Sources listed, not quoted.
    pub also: Vec<S>,
    /// Each related page's link, shared by every list it is on ([`planned_pages`]).
    pub related: Vec<Arc<PageLink>>,
    pub backlinks: Vec<(S, u32)>,
}

/// A page's view in the query graph.
pub type PageView = View<CatalogEntry>;

/// A page's view as the index stores it.
pub type StoredView = View<String>;

impl<S> View<S> {
    /// How many sources the page quotes or lists.
    #[must_use]
    pub fn source_count(&self) -> usize {
        self.places.len() + self.also.len()
    }

    /// The same view with each source named by `name`; `None` when a source has no name.
    fn renamed<T>(&self, name: impl Fn(&S, Option<u32>) -> Option<T>) -> Option<View<T>> {
        let placed = |list: &[(S, u32)]| -> Option<Vec<(T, u32)>> {
            list.iter().map(|(source, at)| Some((name(source, Some(*at))?, *at))).collect()
        };
        Some(View {
            title: self.title.clone(),
            aliases: self.aliases.clone(),
            section: self.section.clone(),
            lead: self.lead,
            places: placed(&self.places)?,
            also: self.also.iter().map(|source| name(source, None)).collect::<Option<_>>()?,
            related: self.related.clone(),
            backlinks: placed(&self.backlinks)?,
        })
    }
}

impl PageView {
    /// The view as the index stores it, its sources named by path.
    #[must_use]
    pub fn stored(&self, db: &dyn Db) -> StoredView {
        self.renamed(|entry, _| Some(entry.path(db).clone())).expect("every entry has a path")
    }

    /// A content hash of [`PageView::stored`], made without building it: the index keeps it beside the view,
    /// and a fresh process that planned again takes a page whose view hashes as its stored one as planned
    /// the same (on rust-rfcs hashing the 584 views took about half the instructions of writing them as JSON).
    #[must_use]
    pub fn stored_hash(&self, db: &dyn Db) -> String {
        use std::hash::Hash;
        // Every field, named: a field added to the view and left out of its hash would let a changed page
        // pass for an unchanged one, so it does not compile until it is hashed here.
        let View { title, aliases, section, lead, places, also, related, backlinks } = self;
        let mut hasher = crate::hash::ContentHasher::default();
        (title, aliases, section, lead).hash(&mut hasher);
        let mut placed = |list: &[(CatalogEntry, u32)]| {
            list.len().hash(&mut hasher);
            for (entry, at) in list {
                (entry.path(db), at).hash(&mut hasher);
            }
        };
        placed(places);
        placed(backlinks);
        also.len().hash(&mut hasher);
        for entry in also {
            entry.path(db).hash(&mut hasher);
        }
        related.hash(&mut hasher);
        hasher.hex()
    }

    /// Whether the view names a source (quoted, listed or linking) for which `named` holds.
    pub fn names_any(&self, db: &dyn Db, named: impl Fn(&str) -> bool) -> bool {
        let entries = self.places.iter().chain(&self.backlinks).map(|(entry, _)| entry).chain(&self.also);
        entries.map(|entry| entry.path(db)).any(|path| named(path))
    }
}

impl StoredView {
    /// The view over catalog entries; `None` when a path has no entry or a signal index is out of its range,
    /// which a view stored by the last plan never has unless the index is damaged.
    pub fn resolve(&self, db: &dyn Db, entry: impl Fn(&str) -> Option<CatalogEntry>) -> Option<PageView> {
        self.renamed(|path, at| {
            entry(path).filter(|entry| at.is_none_or(|at| (at as usize) < entry.plan_signals(db).len()))
        })
    }
}

/// How many parts the catalog's entries are kept in ([`part_sources`]): a re-plan makes again what one part's
/// entries need, about one in this many, and checks this many memos.
const CATALOG_PARTS: u32 = 32;

/// A part of the catalog, as a query key.
#[salsa::interned(debug)]
pub struct CatalogPart<'db> {
    #[returns(copy)]
    pub index: u32,
}

/// Each part's entries, in path order: an entry's part follows from its path alone, so an entry added or
/// removed changes one part.
#[salsa::tracked(returns(ref))]
fn parts(db: &dyn Db, catalog: Catalog) -> Vec<Vec<CatalogEntry>> {
    let mut parts = vec![Vec::new(); CATALOG_PARTS as usize];
    for &entry in catalog.entries(db) {
        use std::hash::Hasher;
        let mut hasher = rustc_hash::FxHasher::default();
        hasher.write(entry.path(db).as_bytes());
        parts[(hasher.finish() % u64::from(CATALOG_PARTS)) as usize].push(entry);
    }
    parts
}

/// One part's entries: a query of its own, whose value stays (salsa's early cutoff) when an entry of another
/// part comes or goes.
#[salsa::tracked(returns(ref))]
fn part_entries<'db>(db: &'db dyn Db, catalog: Catalog, part: CatalogPart<'db>) -> Vec<CatalogEntry> {
    parts(db, catalog)[part.index(db) as usize].clone()
}

/// The folders every source in a folder shares, hand-written pages aside (`docs/` of `docs/user/...` and
/// `docs/dev/...`), below which a source's first folder is its section.
#[salsa::tracked(returns(ref))]
fn shared_folders(db: &dyn Db, catalog: Catalog) -> String {
    let wiki_folder = catalog.wiki_folder(db);
    let paths = catalog.entries(db).iter().map(|entry| entry.path(db).as_str());
    crate::links::shared_folders(paths.filter(|path| path.contains('/') && !in_folder(path, wiki_folder)))
}

/// What the plan reads of each of a part's entries alone, in the part's order: its section, and what
/// resolving its links needs of it ([`source_links`]). Re-runs when one of its entries' paths, titles,
/// section fields or signals change, or the folders every source shares.
#[salsa::tracked(returns(ref))]
pub fn part_sources<'db>(db: &'db dyn Db, catalog: Catalog, part: CatalogPart<'db>) -> Vec<(String, SourceLinks)> {
    let (wiki_folder, shared) = (catalog.wiki_folder(db), shared_folders(db, catalog));
    part_entries(db, catalog, part)
        .iter()
        .map(|&entry| {
            let path = entry.path(db);
            let section = section_of(path, entry.section_value(db).as_deref(), wiki_folder, shared);
            (section, source_links(path, entry.title(db), entry.plan_signals(db)))
        })
        .collect()
}

/// The section a source's pages go to: its front matter's section field, else its first folder below the
/// `shared` ones (a hand-written page's below the wiki folder), else its Dendron hierarchy.
fn section_of(path: &str, section_value: Option<&str>, wiki_folder: &str, shared: &str) -> String {
    let folder_path = if in_folder(path, wiki_folder) {
        &path[wiki_folder.len() + 1..]
    } else {
        path.strip_prefix(shared).unwrap_or(path)
    };
    let folder = folder_path.split_once('/').map(|(folder, _)| folder);
    // A note at the top level named in a dot hierarchy (Dendron's `dendron.topic.workspace.md`)
    // belongs where its hierarchy puts it: its first two levels.
    let hierarchy = if folder.is_none() { dot_hierarchy(folder_path) } else { None };
    [section_value, folder, hierarchy]
        .into_iter()
        .flatten()
        .map(concept_key)
        .find(|key| !key.is_empty())
        .map_or_else(|| "general".to_string(), |key| if key == "root" { "root-section".to_string() } else { key })
}

/// The plan as the graph holds it.
#[derive(Clone, Debug, PartialEq, Eq, salsa::SalsaValue)]
pub struct Planned<'db> {
    /// Every page, in slug order.
    pub pages: Vec<PlannedPage<'db>>,
    /// The concept keys the plan could read a place of ([`Plan::named_keys`](super::plan::Plan)): what a
    /// fresh process needs to tell whether a source's edit leaves the plan as it was.
    pub named_keys: String,
}

/// Every page the catalog supports, in slug order, and the plan's named keys. Re-runs when a source's
/// title, section field or plan signals, the set of sources or the settings change.
#[salsa::tracked(returns(ref))]
pub fn planned_pages(db: &dyn Db, catalog: Catalog) -> Planned<'_> {
    let entries = catalog.entries(db);
    let wiki_folder = catalog.wiki_folder(db);
    // What the plan reads of each entry alone, from the parts that hold one (a small project's few entries
    // take a few parts).
    let held = parts(db, catalog).iter().enumerate().filter(|(_, entries)| !entries.is_empty());
    let mut read: HashMap<CatalogEntry, &(String, SourceLinks)> = HashMap::default();
    for (index, _) in held {
        let part = CatalogPart::new(db, index as u32);
        read.extend(part_entries(db, catalog, part).iter().copied().zip(part_sources(db, catalog, part)));
    }
    let sources: Vec<CatalogSource> = entries
        .iter()
        .map(|&entry| {
            let path = entry.path(db);
            let (section, links) = read[&entry];
            let (title, signals, handwritten) = (entry.title(db), entry.plan_signals(db), in_folder(path, wiki_folder));
            CatalogSource { path, title, section: section.clone(), handwritten, signals, links }
        })
        .collect();
    let plan = plan(&sources, catalog.settings(db));
    // Each page's link as a related list shows it, made once and shared by every list it is on: a page is on
    // up to eight lists, and making its link on each was most of making the views (75,114 links over the
    // watch bench's 16 plans), copying it on each most of the rest.
    let links: Vec<Arc<PageLink>> = plan
        .pages
        .iter()
        .map(|page| {
            Arc::new(PageLink {
                slug: page.slug.clone(),
                title: page.title.clone(),
                href: format!("../{}/{}.md", page.section, page.slug),
            })
        })
        .collect();
    // Each page's plan is taken apart into its view: its strings move, not copied.
    let pages = plan
        .pages
        .into_iter()
        .map(|mut page| {
            let slug = std::mem::take(&mut page.slug);
            PlannedPage::new(db, slug, page_view(page, &links, &sources, entries))
        })
        .collect();
    Planned { pages, named_keys: plan.named_keys }
}

/// A planned page as its model is made: a place whose excerpt a page may not quote (only note embeds) is
/// listed with the other sources instead, after them, and the lead is kept only when quotable. Each source's
/// signals are read from the plan's `sources` (the entries' signals, read once), not from each entry again.
fn page_view(
    page: PagePlan,
    links: &[Arc<PageLink>],
    sources: &[CatalogSource<'_>],
    entries: &[CatalogEntry],
) -> PageView {
    let quotable = |m: &&Mention| sources[m.source].signals[m.signal].quotable;
    let (places, unquotable): (Vec<&Mention>, Vec<&Mention>) = page.places.iter().partition(quotable);
    let mut also: Vec<CatalogEntry> = page.also.iter().map(|&source| entries[source]).collect();
    for m in unquotable {
        if !also.contains(&entries[m.source]) {
            also.push(entries[m.source]);
        }
    }
    let lead = page.places.first().is_some_and(|m| page.defined_by.contains(&m.source) && quotable(&m));
    let places = places.into_iter().map(|m| (entries[m.source], m.signal as u32)).collect();
    PageView {
        lead,
        places,
        also,
        related: page.related.iter().map(|&other| links[other].clone()).collect(),
        backlinks: page.backlinks.iter().map(|m| (entries[m.source], m.signal as u32)).collect(),
        title: page.title,
        aliases: page.aliases,
        section: page.section,
    }
}

/// A page's model without the quoted texts, which the driver reads from the index when it renders the page.
#[salsa::tracked(returns(ref))]
pub fn page_model<'db>(db: &'db dyn Db, catalog: Catalog, page: PlannedPage<'db>) -> PageModel {
    let view = page.view(db);
    let page_folder = format!("{}/{}", catalog.wiki_folder(db), view.section);
    let source_link = |entry: CatalogEntry| {
        let path = entry.path(db);
        SourceLink {
            source_ref: crate::SourceRef::from_path(path).uri(),
            path: path.clone(),
            title: entry.title(db).clone(),
            href: crate::links::relative_href(&page_folder, path),
        }
    };
    let mut quotes: Vec<Quote> = view
        .places
        .iter()
        .zip(1..)
        .map(|(&(entry, signal), note)| {
            let excerpt = entry.excerpts(db)[signal as usize];
            Quote {
                note,
                source: source_link(entry),
                signal: entry.plan_signals(db)[signal as usize].kind.as_str().to_string(),
                text: String::new(),
                revision: entry.revision(db).clone(),
                chunk: excerpt.chunk,
                hash: String::new(),
                start: excerpt.start,
                end: excerpt.end,
                start_line: excerpt.start_line,
                end_line: excerpt.end_line,
                table_header: excerpt.table_header.map(|header| TableHeader {
                    text: String::new(),
                    chunk: header.chunk,
                    start: header.start,
                    end: header.end,
                    start_line: header.line,
                    end_line: header.line + 1,
                }),
            }
        })
        .collect();
    let lead = if view.lead && !quotes.is_empty() { Some(quotes.remove(0)) } else { None };
    PageModel {
        schema: SCHEMA_VERSION,
        slug: page.slug(db).clone(),
        title: view.title.clone(),
        aliases: view.aliases.clone(),
        section: view.section.clone(),
        summary: Vec::new(),
        written_by: None,
        lead,
        places: quotes,
        also: view.also.iter().map(|&entry| source_link(entry)).collect(),
        related: view.related.clone(),
        backlinks: view
            .backlinks
            .iter()
            .map(|&(entry, signal)| Backlink {
                source: source_link(entry),
                line: entry.excerpts(db)[signal as usize].start_line,
                kind: entry.plan_signals(db)[signal as usize].kind.as_str().to_string(),
            })
            .collect(),
    }
}

/// The content hash of what a page's model is made from: its view, and of each source it names the path,
/// title, the signal it is quoted or links by, and a quoted source's revision ([`page_text_hash`] and the
/// revisions). The index stores it to tell whether a page must be rendered again; a fresh process (which
/// has no memos) compares it for every page, so it is hashed from the inputs rather than from a built model.
#[salsa::tracked(returns(ref))]
pub fn page_model_hash<'db>(db: &'db dyn Db, catalog: Catalog, page: PlannedPage<'db>) -> String {
    use std::hash::Hash;
    let mut hasher = crate::hash::ContentHasher::default();
    page_text_hash(db, catalog, page).hash(&mut hasher);
    for &(entry, _) in &page.view(db).places {
        entry.revision(db).hash(&mut hasher);
    }
    hasher.hex()
}

/// The content hash of what a page's model is made from but the revisions of the sources it quotes: equal
/// for two models that differ in those revisions alone (the quotes' texts, which the driver reads from the
/// index, aside).
#[salsa::tracked(returns(ref))]
pub fn page_text_hash<'db>(db: &'db dyn Db, catalog: Catalog, page: PlannedPage<'db>) -> String {
    use std::hash::Hash;
    let view = page.view(db);
    let mut hasher = crate::hash::ContentHasher::default();
    (SCHEMA_VERSION, catalog.wiki_folder(db), page.slug(db)).hash(&mut hasher);
    (&view.title, &view.aliases, &view.section, view.lead, &view.related).hash(&mut hasher);
    // The signal's index is hashed with it: the index stores the view by index, and must store it again
    // when a source's signals shift under an otherwise equal page.
    let signal =
        |entry: CatalogEntry, at: u32| (at, &entry.plan_signals(db)[at as usize], entry.excerpts(db)[at as usize]);
    for &(entry, at) in &view.places {
        (entry.path(db), entry.title(db), signal(entry, at)).hash(&mut hasher);
    }
    for &entry in &view.also {
        (entry.path(db), entry.title(db)).hash(&mut hasher);
    }
    for &(entry, at) in &view.backlinks {
        (entry.path(db), entry.title(db), signal(entry, at)).hash(&mut hasher);
    }
    hasher.hex()
}

/// The first two levels of a note named in a dot hierarchy (`dendron.topic` of `dendron.topic.workspace.md`,
/// and of `dendron.topic.md` itself), when its name is one: at least two parts, the first a word of letters
/// (so `v1.2-notes.md` or `1.0.md` is no hierarchy).
fn dot_hierarchy(file: &str) -> Option<&str> {
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let mut parts = stem.split('.');
    let first = parts.next()?;
    let second = parts.next()?;
    let word = |part: &str| !part.is_empty() && part.chars().all(|c| c.is_alphabetic() || c == '-' || c == '_');
    (word(first) && !second.is_empty()).then(|| &stem[..first.len() + 1 + second.len()])
}
