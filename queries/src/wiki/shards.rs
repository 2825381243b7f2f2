//! Index shards as queries: a catalog per section (Markdown, its index-entry chunks, and JSON) and the
//! root catalog, derived from the page rows the index holds.
//!
//! The driver keeps one [`IndexedPage`] per page row and sets its fields only when the row changed. A
//! section's rows hash re-runs only when a row's digest of that section changed or the templates did; its
//! Markdown and entries only when the rows hash did; its JSON also when a page's hash did (the hash is only
//! in the JSON, so a page whose text changed but whose row did not leaves the Markdown as it was).
//!
//! Each page row carries its digest and its part of the JSON file, stored with the page: a fresh process
//! (a one-shot build) re-makes the JSON of an edited page's section from those small values, and reads the
//! section's whole rows only when their digests say its Markdown must be rendered again.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::render::{SCHEMA_VERSION, Templates, render};
use crate::Db;

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

impl ShardRow {
    /// The row of a page stored at `path` (relative to the output folder).
    #[must_use]
    pub fn new(slug: String, title: String, aliases: Vec<String>, path: String, sources: u64, summary: String) -> Self {
        ShardRow { slug, title, href: format!("../{path}"), aliases, path, sources, summary }
    }

    /// The hash of what the section's Markdown shows of the row: every field, with the lengths of its
    /// strings and lists.
    #[must_use]
    pub fn digest(&self) -> String {
        use std::hash::Hash;
        let mut hasher = crate::hash::ContentHasher::default();
        self.hash(&mut hasher);
        hasher.hex()
    }

    /// The row as its section's JSON file holds it, with the page file's `hash`: the row's object,
    /// indented as an element of the file's `pages` list.
    #[must_use]
    pub fn json(&self, hash: &str) -> String {
        let row = JsonRow {
            aliases: &self.aliases,
            hash,
            href: &self.href,
            path: &self.path,
            slug: &self.slug,
            sources: self.sources,
            summary: &self.summary,
            title: &self.title,
        };
        let object = serde_json::to_string_pretty(&row).expect("rows serialize");
        let mut json = String::with_capacity(object.len() + 64);
        for (n, line) in object.lines().enumerate() {
            if n > 0 {
                json.push('\n');
            }
            json.push_str(JSON_ROW_INDENT);
            json.push_str(line);
        }
        json
    }
}

/// A row's indentation in its section's JSON file: inside the top object's `pages` list.
const JSON_ROW_INDENT: &str = "    ";

/// One page row of the index: its section, what its section's files show of it, and the row itself when
/// the driver has read it.
#[salsa::input(debug)]
pub struct IndexedPage {
    #[returns(ref)]
    pub section: String,
    /// [`ShardRow::digest`] of its row.
    #[returns(ref)]
    pub digest: String,
    /// [`ShardRow::json`] of its row and its page file's hash.
    #[returns(ref)]
    pub json: String,
    /// The row, which only a section's Markdown and entries read. A fresh process leaves it unread (`None`)
    /// until the section's rows hash differs from the stored one; the driver reads a section's rows
    /// before it asks for the section's Markdown ([`shard_rows`] panics on an unread row).
    #[returns(ref)]
    pub row: Option<ShardRow>,
}

/// Every page row, sorted by section and slug, the hash of the shard and root templates (with the
/// code that renders them), which every shard's stored rows hash includes, and the project's name as
/// `kc.toml` gives it (empty when it gives none), which heads `llms.txt`.
#[salsa::input(singleton, debug)]
pub struct PageIndex {
    #[returns(ref)]
    pub pages: Vec<IndexedPage>,
    #[returns(ref)]
    pub template_hash: String,
    #[returns(ref)]
    pub project_name: String,
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

/// One section's pages: a query of its own, which re-runs whenever any section's pages change but keeps its
/// value (salsa's early cutoff) when this section's are the same, so that a page added to one section
/// leaves every other section's count, hash and JSON alone (on dendron-vault each of its 45 sections' JSON
/// was joined again from its rows whenever a page came or went anywhere).
#[salsa::tracked(returns(ref))]
fn section_pages<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Vec<IndexedPage> {
    sections(db, index).get(section.name(db)).cloned().unwrap_or_default()
}

/// How many pages a section lists: a query of its own, so that another section's change leaves what reads
/// it alone.
#[salsa::tracked]
pub fn shard_page_count<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> usize {
    section_pages(db, index, section).len()
}

/// A section's rows, as its Markdown shows them.
///
/// # Panics
/// When a row of the section is unread: the driver reads them before it asks for the Markdown.
#[salsa::tracked(returns(ref))]
pub fn shard_rows<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Vec<ShardRow> {
    section_pages(db, index, section)
        .iter()
        .map(|page| page.row(db).clone().expect("the driver reads a section's rows before its Markdown"))
        .collect()
}

/// The hash of what a section's Markdown shows (its rows and the templates), which the index stores: a
/// fresh process renders a shard only when it differs from the stored one. Made of the rows' digests, so
/// it needs no row read.
#[salsa::tracked(returns(ref))]
pub fn shard_rows_hash<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> String {
    use std::hash::Hash;
    let mut hasher = crate::hash::ContentHasher::default();
    for page in section_pages(db, index, section) {
        page.digest(db).hash(&mut hasher);
    }
    index.template_hash(db).hash(&mut hasher);
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
pub fn shard_json<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Arc<str> {
    let rows = section_pages(db, index, section).iter().map(|page| page.json(db).as_str());
    shard_json_text(section.name(db), rows).into()
}

/// A row of a shard's JSON, its fields in the alphabetical order the file has always had.
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

/// The JSON file of a section from its rows' [`ShardRow::json`]: the object `serde_json` writes pretty
/// (`pages`, `schema`, `section`), joined from the stored rows instead of serialized again.
#[must_use]
pub fn shard_json_text<'a>(section: &str, rows: impl Iterator<Item = &'a str> + Clone) -> String {
    let section = serde_json::to_string(section).expect("strings serialize");
    let ending = format!("  \"schema\": {SCHEMA_VERSION},\n  \"section\": {section}\n}}\n");
    // Sized exactly: a section can hold thousands of rows, and a buffer that doubles as it fills touches
    // (and page-faults) about twice the file's size.
    const OPENING: &str = "{\n  \"pages\": [";
    const CLOSING: &str = "\n  ],\n";
    let (count, bytes) = rows.clone().fold((0, 0), |(count, bytes), row| (count + 1, bytes + row.len()));
    // Each row is preceded by `\n` or `,\n`.
    let mut text = String::with_capacity(OPENING.len() + bytes + 2 * count + CLOSING.len() + ending.len());
    text.push_str(OPENING);
    let mut first = true;
    for row in rows {
        text.push_str(if first { "\n" } else { ",\n" });
        text.push_str(row);
        first = false;
    }
    text.push_str(if first { "],\n" } else { CLOSING });
    text.push_str(&ending);
    text
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

/// The root catalog's Markdown, through the `root.md.j2` template.
#[salsa::tracked(returns(ref))]
pub fn root_markdown(db: &dyn Db, index: PageIndex) -> Result<String, String> {
    render("root.md.j2", Templates::get(db).root(db), root_model(db, index))
}
