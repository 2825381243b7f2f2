//! `llms.txt`: the wiki as the llmstxt.org convention lists a site for language models and agents (the
//! project's name as its heading, a line on what the files are, then each section's pages as links with
//! their summaries), derived from the page rows the index holds, as the shards are.
//!
//! Its format is the convention's, not the user's, so it has no template.

use serde::Deserialize;

use super::artifacts::{Artifact, DerivedFile};
use super::render::{SCHEMA_VERSION, markdown_text};
use super::shards::{IndexedPage, PageIndex, root_page_count, sections};
use crate::Db;

/// The file, relative to the output folder.
pub(super) const LLMS_PATH: &str = "llms.txt";

/// Its uri, as the catalog and the server name it.
pub(super) const LLMS_URI: &str = "knowledge://llms.txt";

/// What `llms.txt` shows of a page: the fields of its row in its section's JSON file that the list reads.
#[derive(Deserialize)]
struct LlmsEntry {
    title: String,
    path: String,
    summary: String,
}

/// A page's line in the list, made from its row's JSON. Re-runs whenever the row's JSON does (it holds the
/// page file's hash, which every edit of the page changes), and stops there unless the line changed, so an
/// edit of a page's text leaves the list alone; a list made again joins its pages' lines, each made once
/// (formatting every page's line again took most of a re-made list's time).
#[salsa::tracked(returns(ref))]
pub(super) fn llms_entry(db: &dyn Db, page: IndexedPage) -> Option<String> {
    let entry: LlmsEntry = serde_json::from_str(page.json(db)).ok()?;
    let title = one_line(&markdown_text(&entry.title));
    let summary = one_line(&entry.summary);
    Some(if summary.is_empty() {
        format!("- [{title}]({})\n", entry.path)
    } else {
        format!("- [{title}]({}): {summary}\n", entry.path)
    })
}

/// The text of `llms.txt`.
#[salsa::tracked(returns(ref))]
pub fn llms_text(db: &dyn Db, index: PageIndex) -> String {
    let sections = sections(db, index);
    let pages = root_page_count(db, index);
    // A project that names itself in `kc.toml` heads the file with its name; an index must not depend on
    // the folder it sits in, so the folder's name is never used.
    let name = one_line(index.project_name(db));
    let of = if name.is_empty() { String::new() } else { format!(" of {name}") };
    let heading = if name.is_empty() { "Wiki".to_string() } else { name };
    let mut text = format!(
        "# {heading}{DESCRIPTION}{of}: {pages} concept page{} in {} section{}, each gathered from the \
         project's documents, every quote cited by source ref, revision and lines.\n\n\
         The index is [indexes/root.md](indexes/root.md); the page and index formats are described in \
         [schemas/v{SCHEMA_VERSION}.md](schemas/v{SCHEMA_VERSION}.md).\n",
        if pages == 1 { "" } else { "s" },
        sections.len(),
        if sections.len() == 1 { "" } else { "s" },
    );
    for (section, pages) in sections {
        text.push_str(&format!("\n## {}\n\n", one_line(section)));
        for line in pages.iter().filter_map(|&page| llms_entry(db, page).as_deref()) {
            text.push_str(line);
        }
    }
    text
}

/// The stamp of `llms.txt`: a hash of the project's name and each section's pages' row digests in the order
/// the file lists them. A row's digest covers its title, file and summary, all the list shows of a page, and
/// never its page file's hash, so a fresh process neither reads every page's row nor makes the list to learn
/// that an edit of a page's text left it as it was. (Code that writes the list differently is a new binary,
/// whose build fingerprint makes the whole index again.)
#[salsa::tracked(returns(ref))]
pub fn llms_stamp(db: &dyn Db, index: PageIndex) -> String {
    use std::hash::Hash;
    let mut hasher = crate::hash::ContentHasher::default();
    index.project_name(db).hash(&mut hasher);
    for (section, pages) in sections(db, index) {
        section.hash(&mut hasher);
        pages.len().hash(&mut hasher);
        for page in pages {
            page.digest(db).hash(&mut hasher);
        }
    }
    hasher.hex()
}

/// The one `llms.txt` artifact, a declared kind ([`super::artifacts::DECLARED_KINDS`]).
pub(super) fn llms_file(db: &dyn Db, index: PageIndex) -> Result<DerivedFile, String> {
    let text = llms_text(db, index);
    let metadata = serde_json::json!({"pages": root_page_count(db, index)});
    let artifact = Artifact::of(LLMS_URI.to_string(), "llms", LLMS_PATH.to_string(), text, &metadata);
    Ok(DerivedFile { artifact, text: text.as_str().into(), source: None })
}

/// The line that follows `llms.txt`'s heading, which tells the tool's file from a user's.
const DESCRIPTION: &str = "\n\n> The compiled wiki";

/// Whether a file's bytes are an `llms.txt` this tool wrote.
pub(super) fn is_llms_text(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.starts_with("# ") && text.lines().next().is_some_and(|heading| text[heading.len()..].starts_with(DESCRIPTION))
}

/// Text on one line: a line break or another control character in a title would end its list item, or
/// move a terminal's cursor for whoever reads the file there.
fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_control())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_string()
}
