//! Index shards as queries: a catalog per section (Markdown, its index-entry chunks, and JSON) and the
//! root catalog, derived from the page rows the index holds.
//!
//! The driver keeps one [`IndexedPage`] per page row and sets its fields only when the row changed. A
//! section's rows, and from them its Markdown and entries, re-run only when a row of that section changed
//! or the templates did; its JSON also when a page's hash did (the hash is only in the JSON, so a page whose
//! text changed but whose row did not leaves the Markdown as it was).

use std::collections::BTreeMap;

use serde::Serialize;

use super::render::{SCHEMA_VERSION, Templates, render};
use crate::{Db, content_hash};

/// One row of an index shard, as its Markdown shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash)]
pub struct ShardRow {
    pub slug: String,
    pub title: String,
    pub aliases: Vec<String>,
    /// The page file, relative to the output folder.
    pub path: String,
    /// The page relative to `indexes/`.
    pub href: String,
    pub sources: u64,
    pub summary: String,
}

/// One page row of the index: its section, its shard row and its file's hash.
#[salsa::input(debug)]
pub struct IndexedPage {
    #[returns(ref)]
    pub section: String,
    #[returns(ref)]
    pub row: ShardRow,
    #[returns(ref)]
    pub hash: String,
}

/// Every page row, sorted by section and slug, and the hash of the shard and root templates (with the
/// code that renders them), which every shard's stored rows hash includes.
#[salsa::input(singleton, debug)]
pub struct PageIndex {
    #[returns(ref)]
    pub pages: Vec<IndexedPage>,
    #[returns(ref)]
    pub template_hash: String,
}

/// A section's name, as a query key.
#[salsa::interned(debug)]
pub struct Section<'db> {
    #[returns(ref)]
    pub name: String,
}

/// The pages of each section, in slug order. Reads only each page's section.
#[salsa::tracked(returns(ref))]
pub fn sections(db: &dyn Db, index: PageIndex) -> BTreeMap<String, Vec<IndexedPage>> {
    let mut sections: BTreeMap<String, Vec<IndexedPage>> = BTreeMap::new();
    for &page in index.pages(db) {
        sections.entry(page.section(db).clone()).or_default().push(page);
    }
    sections
}

fn section_pages<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> &'db [IndexedPage] {
    sections(db, index).get(section.name(db)).map_or(&[], Vec::as_slice)
}

/// A section's rows, as its Markdown shows them.
#[salsa::tracked(returns(ref))]
pub fn shard_rows<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Vec<ShardRow> {
    section_pages(db, index, section).iter().map(|page| page.row(db).clone()).collect()
}

/// The hash of what a section's Markdown shows (its rows and the templates), which the index stores: a
/// fresh process renders a shard only when it differs from the stored one. Hashed from the rows' fields
/// (with their lengths), not from a serialized copy: a fresh process hashes every section.
#[salsa::tracked(returns(ref))]
pub fn shard_rows_hash<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> String {
    use std::hash::Hash;
    let mut hasher = crate::hash::ContentHasher::default();
    (shard_rows(db, index, section), index.template_hash(db)).hash(&mut hasher);
    hasher.hex()
}

#[derive(Serialize)]
struct ShardModel<'a> {
    schema: u32,
    section: &'a str,
    json_href: String,
    pages: &'a [ShardRow],
}

/// A section's Markdown, through the `shard.md.j2` template. An error names the template line.
#[salsa::tracked(returns(ref))]
pub fn shard_markdown<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Result<String, String> {
    let name = section.name(db);
    let model = ShardModel {
        schema: SCHEMA_VERSION,
        section: name,
        json_href: format!("machine/{name}.json"),
        pages: shard_rows(db, index, section),
    };
    render("shard.md.j2", Templates::get(db).shard(db), &model)
}

/// One index entry: the line of a section's Markdown that lists a page, which search returns as an
/// `index_entry` and cites by its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardEntry {
    pub slug: String,
    pub title: String,
    pub start: u32,
    pub end: u32,
    /// 1-based.
    pub line: u32,
}

/// A section's index entries: one per row whose page link the Markdown holds (a custom template may leave
/// a row without it, and that row gets none). Empty when the template fails.
#[salsa::tracked(returns(ref))]
pub fn shard_entries<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Vec<ShardEntry> {
    let Ok(markdown) = shard_markdown(db, index, section) else { return Vec::new() };
    let mut entries = Vec::new();
    // Rows are found in order, and lines counted from the previous row on: one pass over the shard.
    let (mut from, mut line) = (0, 1);
    for row in shard_rows(db, index, section) {
        let Some(at) = markdown[from..].find(&format!("]({})", row.href)).map(|at| at + from) else { continue };
        let start = markdown[..at].rfind('\n').map_or(0, |newline| newline + 1);
        let end = markdown[at..].find('\n').map_or(markdown.len(), |newline| at + newline);
        line += markdown[from..start].matches('\n').count();
        from = end;
        let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
        entries.push(ShardEntry {
            slug: row.slug.clone(),
            title: row.title.clone(),
            start: offset(start),
            end: offset(end),
            line: offset(line),
        });
    }
    entries
}

/// A section's JSON file: its rows, each with its page file's hash.
#[salsa::tracked(returns(ref))]
pub fn shard_json<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> String {
    let hashes: Vec<&str> = section_pages(db, index, section).iter().map(|page| page.hash(db).as_str()).collect();
    shard_json_text(section.name(db), shard_rows(db, index, section), &hashes)
}

/// A section's JSON file, serialized as it stands (its fields in the alphabetical order the file has always
/// had), with no `serde_json::Value` tree built on the way.
#[derive(Serialize)]
struct ShardJson<'a> {
    pages: Vec<JsonRow<'a>>,
    schema: u32,
    section: &'a str,
}

/// A row of a shard's JSON: the row and the page file's hash.
#[derive(Serialize)]
struct JsonRow<'a> {
    aliases: &'a [String],
    hash: &'a str,
    href: &'a str,
    path: &'a str,
    slug: &'a str,
    sources: u64,
    summary: &'a str,
    title: &'a str,
}

/// The JSON file of a section with these rows and page hashes.
#[must_use]
pub fn shard_json_text(section: &str, rows: &[ShardRow], hashes: &[&str]) -> String {
    let pages = rows
        .iter()
        .zip(hashes)
        .map(|(row, hash)| JsonRow {
            aliases: &row.aliases,
            hash,
            href: &row.href,
            path: &row.path,
            slug: &row.slug,
            sources: row.sources,
            summary: &row.summary,
            title: &row.title,
        })
        .collect();
    let json = ShardJson { pages, schema: SCHEMA_VERSION, section };
    // About 300 bytes a row: one allocation instead of a doubling buffer (a section can hold thousands).
    let mut text = Vec::with_capacity(256 + 320 * rows.len());
    serde_json::to_writer_pretty(&mut text, &json).expect("rows serialize");
    text.push(b'\n');
    String::from_utf8(text).expect("serde_json writes UTF-8")
}

#[derive(Serialize)]
struct RootSection {
    section: String,
    pages: usize,
    href: String,
    json_href: String,
}

/// The root catalog's model: every section and its page count.
#[salsa::tracked(returns(ref))]
fn root_model(db: &dyn Db, index: PageIndex) -> serde_json::Value {
    let sections = sections(db, index);
    let listed: Vec<RootSection> = sections
        .iter()
        .map(|(section, pages)| RootSection {
            section: section.clone(),
            pages: pages.len(),
            href: format!("{section}.md"),
            json_href: format!("machine/{section}.json"),
        })
        .collect();
    let total: usize = sections.values().map(Vec::len).sum();
    serde_json::json!({"schema": SCHEMA_VERSION, "pages": total, "sections": listed})
}

/// The page count the root lists.
#[must_use]
pub fn root_page_count(db: &dyn Db, index: PageIndex) -> usize {
    sections(db, index).values().map(Vec::len).sum()
}

/// The hash of what the root shows, which the index stores as its rows hash.
#[salsa::tracked(returns(ref))]
pub fn root_rows_hash(db: &dyn Db, index: PageIndex) -> String {
    content_hash(format!("{}{}", root_model(db, index), index.template_hash(db)).as_bytes())
}

/// The root catalog's Markdown, through the `root.md.j2` template.
#[salsa::tracked(returns(ref))]
pub fn root_markdown(db: &dyn Db, index: PageIndex) -> Result<String, String> {
    render("root.md.j2", Templates::get(db).root(db), root_model(db, index))
}
