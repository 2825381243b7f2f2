//! The artifact catalog as queries: each generated file's row (what it is, where it goes under the output
//! folder, its content's hash and size, and what the catalog says of it), derived from the page or shard
//! it holds. The driver stores the row of each artifact it writes, and the file sync and the remote
//! artifact store follow the catalog.
//!
//! Every kind but pages is declared here once ([`DECLARED_KINDS`]): a name, the queries that stamp and
//! derive each of its artifacts with its text, and what its files are. One driver
//! (`compiler/src/wiki/driver.rs`) compares the stamps with the catalog and writes the rows, texts,
//! source rows, log events and files of every declared kind alike. Pages run on the same driver but are
//! not declared here: a page's quotes are read from the index and its summary may be a provider's, so no
//! pure query derives it, and it has rows of its own (citations, backlinks, its listed sources and its
//! shard row).

use std::sync::Arc;

use serde_json::json;

use super::llms::{LLMS_PATH, LLMS_URI, is_llms_text, llms_file, llms_stamp};
use super::render::{PageModel, SCHEMA_VERSION, WikiPage, render_page};
use super::shards::{
    PageIndex, Section, ShardEntry, root_markdown, root_page_count, sections, shard_entries, shard_json,
    shard_markdown, shard_page_count, shard_rows_hash,
};
use crate::{Db, SourceRef, content_hash};

/// The page and index schema, written as it is.
pub const SCHEMA_DOC: &str = include_str!("../../../templates/schema-v1.md");

/// One row of the artifact catalog.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Artifact {
    /// Its source ref: `knowledge://wiki/SLUG`, `knowledge://index/SECTION` (and `.json`), `knowledge://index/root`,
    /// `knowledge://schema/v1`.
    pub uri: String,
    pub kind: &'static str,
    /// The file, relative to the output folder.
    pub path: String,
    /// The content's hash.
    pub hash: String,
    pub size: u64,
    /// A JSON object: what the catalog lists beside the file (title, section, counts).
    pub metadata: String,
}

impl Artifact {
    pub(super) fn of(
        uri: String,
        kind: &'static str,
        path: String,
        content: &str,
        metadata: &serde_json::Value,
    ) -> Artifact {
        Artifact {
            uri,
            kind,
            path,
            hash: content_hash(content.as_bytes()),
            size: content.len() as u64,
            metadata: metadata.to_string(),
        }
    }
}

/// A rendered page's row. An error is the template's.
#[salsa::tracked(returns(ref))]
pub fn page_artifact(db: &dyn Db, page: WikiPage) -> Result<Artifact, String> {
    let markdown = render_page(db, page).as_ref().map_err(Clone::clone)?;
    Ok(page_artifact_of(page.model(db), page.source_count(db), markdown))
}

/// The row of the page `model` shows as `markdown`, with the sources it gathers.
#[must_use]
pub fn page_artifact_of(model: &PageModel, source_count: u64, markdown: &str) -> Artifact {
    let metadata = json!({"title": model.title, "section": model.section, "sources": source_count});
    let path = format!("wiki/{}/{}.md", model.section, model.slug);
    Artifact::of(SourceRef::page(&model.slug).path(), "page", path, markdown, &metadata)
}

/// A section's Markdown shard's row.
#[salsa::tracked(returns(ref))]
pub fn shard_artifact<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Result<Artifact, String> {
    let markdown = shard_markdown(db, index, section).as_ref().map_err(Clone::clone)?;
    let name = section.name(db);
    let path = format!("indexes/{name}.md");
    Ok(Artifact::of(SourceRef::shard(name).path(), "shard", path, markdown, &shard_metadata(db, index, section)))
}

/// A section's JSON shard's row.
#[salsa::tracked(returns(ref))]
pub fn shard_json_artifact<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> Artifact {
    let name = section.name(db);
    let uri = format!("{}.json", SourceRef::shard(name).path());
    let path = format!("indexes/machine/{name}.json");
    Artifact::of(uri, "shard_json", path, shard_json(db, index, section), &shard_metadata(db, index, section))
}

/// Read through the section's page count, so another section's change leaves this one's alone; and never
/// through its rows, which a fresh process reads only to render the Markdown.
fn shard_metadata<'db>(db: &'db dyn Db, index: PageIndex, section: Section<'db>) -> serde_json::Value {
    json!({"section": section.name(db), "pages": shard_page_count(db, index, section)})
}

/// The root catalog's row: a shard named `root` (no section is named `root`'s empty string). A declared kind.
#[salsa::tracked(returns(ref))]
pub fn root_artifact(db: &dyn Db, index: PageIndex) -> Result<Artifact, String> {
    let markdown = root_markdown(db, index).as_ref().map_err(Clone::clone)?;
    let metadata = json!({"section": "", "pages": root_page_count(db, index)});
    Ok(Artifact::of(SourceRef::shard("root").path(), "root", "indexes/root.md".to_string(), markdown, &metadata))
}

/// An artifact of a declared kind, named before its text is made: its key among the kind's files (a
/// section's name; empty for a kind with one file), its uri, and its stamp, a hash that differs whenever
/// its text may. The driver makes the text only of those whose stamp differs from the stored one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped {
    pub key: String,
    pub uri: String,
    pub stamp: String,
}

/// An artifact of a declared kind: its catalog row, the text its file holds, and, for a file that is also
/// a source, what search reads of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedFile {
    pub artifact: Artifact,
    pub text: Arc<str>,
    pub source: Option<FileSource>,
}

/// A generated file as a source: its title, the heading its passages sit under, and the passages search
/// returns on their own, by their bytes (a shard's index entries, one per page it lists).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSource {
    pub title: String,
    pub heading: String,
    pub entries: Vec<ShardEntry>,
}

/// Where the index keeps a kind's text, from which the file sync restores a missing or edited file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptText {
    /// In `artifact_texts`, with the stamp it was made at.
    Stored,
    /// Nowhere: the text is joined again from the stored page rows of its section (a section's JSON
    /// file, a row of which every edit of one of its pages changes).
    SectionRows,
}

/// Which counters of a build's summary a kind's files count under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// `shards.*`, with the sections' other files.
    WithShards,
    /// `artifacts.NAME.*`, under the kind's own name.
    OnItsOwn,
}

/// A kind of artifact, declared once: its name (the catalog's `kind`), the queries that name its artifacts
/// with their stamps and derive each one's text from the page index (or give the template's error), and
/// what the driver, the file sync and the server need to know of its files. The driver derives each
/// declared kind while the wiki is on; an artifact it no longer derives is removed.
pub struct ArtifactKind {
    pub name: &'static str,
    pub counted: Counted,
    pub stamps: fn(&dyn Db, PageIndex) -> Result<Vec<Stamped>, String>,
    /// The artifact `stamps` named by its key.
    pub derive: fn(&dyn Db, PageIndex, &str) -> Result<DerivedFile, String>,
    /// Whether deriving a file reads the whole page rows of the section its key names, which a fresh
    /// process reads from the index only then (a stamp needs only their digests).
    pub reads_rows: bool,
    pub kept: KeptText,
    /// Whether a file at this path (relative to the output folder) may be one of the kind's.
    pub at: fn(&str) -> bool,
    /// Whether the bytes of a file there are the kind's own: a build may then replace or remove it though
    /// no stat cache says it wrote it (in a fresh clone, say). Anything else is the user's.
    pub ours: fn(&[u8]) -> bool,
    /// Its files' MIME type and what they hold, as the server lists each file as a resource by its uri.
    pub mime: &'static str,
    pub description: &'static str,
}

/// Every declared kind. A new kind is a module of queries and a line here (docs/architecture.md,
/// "Adding an artifact kind").
pub const DECLARED_KINDS: &[ArtifactKind] = &[
    ArtifactKind {
        name: "shard",
        counted: Counted::WithShards,
        stamps: shard_stamps,
        derive: shard_file,
        reads_rows: true,
        kept: KeptText::Stored,
        at: |path| {
            let name = path.strip_prefix("indexes/").unwrap_or("/");
            !name.contains('/') && name.ends_with(".md") && name != "root.md"
        },
        ours: |bytes| looks_generated(&String::from_utf8_lossy(bytes)),
        mime: "text/markdown",
        description: "A section's pages, one line each with its summary.",
    },
    ArtifactKind {
        name: "shard_json",
        counted: Counted::WithShards,
        stamps: shard_json_stamps,
        derive: shard_json_file,
        reads_rows: false,
        kept: KeptText::SectionRows,
        at: |path| {
            path.strip_prefix("indexes/machine/").is_some_and(|name| !name.contains('/') && name.ends_with(".json"))
        },
        ours: is_shard_json,
        mime: "application/json",
        description: "A section's pages as JSON, each with its page file's hash.",
    },
    ArtifactKind {
        name: "root",
        counted: Counted::OnItsOwn,
        stamps: |db, index| single_stamp(db, index, root_file),
        derive: |db, index, _| root_file(db, index),
        reads_rows: false,
        kept: KeptText::Stored,
        at: |path| path == "indexes/root.md",
        ours: |bytes| looks_generated(&String::from_utf8_lossy(bytes)),
        mime: "text/markdown",
        description: "The index's sections and how many pages each holds.",
    },
    ArtifactKind {
        name: "schema",
        counted: Counted::OnItsOwn,
        stamps: |db, index| single_stamp(db, index, schema_file),
        derive: |db, index, _| schema_file(db, index),
        reads_rows: false,
        kept: KeptText::Stored,
        at: |path| path.starts_with("schemas/"),
        ours: is_schema,
        mime: "text/markdown",
        description: "The format of the generated pages and index shards.",
    },
    ArtifactKind {
        name: "llms",
        counted: Counted::OnItsOwn,
        stamps: |db, index| {
            Ok(vec![Stamped { key: String::new(), uri: LLMS_URI.to_string(), stamp: llms_stamp(db, index).clone() }])
        },
        derive: |db, index, _| llms_file(db, index),
        reads_rows: false,
        kept: KeptText::Stored,
        at: |path| path == LLMS_PATH,
        ours: is_llms_text,
        mime: "text/plain",
        description: "Every generated page by section with its summary (llms.txt): a map of the wiki for agents.",
    },
];

/// The declared kind named `name`.
#[must_use]
pub fn declared_kind(name: &str) -> Option<&'static ArtifactKind> {
    DECLARED_KINDS.iter().find(|kind| kind.name == name)
}

/// The declared kind whose files may sit at `path` (relative to the output folder).
#[must_use]
pub fn declared_kind_at(path: &str) -> Option<&'static ArtifactKind> {
    DECLARED_KINDS.iter().find(|kind| (kind.at)(path))
}

/// The stamp of a kind with one file, made whole: its text's hash.
fn single_stamp(
    db: &dyn Db,
    index: PageIndex,
    file: fn(&dyn Db, PageIndex) -> Result<DerivedFile, String>,
) -> Result<Vec<Stamped>, String> {
    let Artifact { uri, hash, .. } = file(db, index)?.artifact;
    Ok(vec![Stamped { key: String::new(), uri, stamp: hash }])
}

/// One artifact per section, keyed by the section's name, with the uri and stamp `of` gives it.
fn per_section(
    db: &dyn Db,
    index: PageIndex,
    of: impl Fn(Section<'_>) -> (String, String),
) -> Result<Vec<Stamped>, String> {
    let stamped = sections(db, index).keys().map(|name| {
        let (uri, stamp) = of(Section::new(db, name.clone()));
        Stamped { key: name.clone(), uri, stamp }
    });
    Ok(stamped.collect())
}

/// Each section's Markdown shard, stamped with the hash of the rows it shows, which needs no row read.
fn shard_stamps(db: &dyn Db, index: PageIndex) -> Result<Vec<Stamped>, String> {
    per_section(db, index, |section| {
        (SourceRef::shard(section.name(db)).path(), shard_rows_hash(db, index, section).clone())
    })
}

/// A section's Markdown shard, a source whose passages are its index entries.
fn shard_file(db: &dyn Db, index: PageIndex, name: &str) -> Result<DerivedFile, String> {
    let section = Section::new(db, name.to_string());
    let text = shard_markdown(db, index, section).as_ref().map_err(Clone::clone)?;
    let artifact = shard_artifact(db, index, section).clone()?;
    let entries = shard_entries(db, index, section).clone();
    let source = FileSource { title: format!("Index: {name}"), heading: name.to_string(), entries };
    Ok(DerivedFile { artifact, text: text.as_str().into(), source: Some(source) })
}

/// Each section's JSON shard, stamped with its text's hash (joined from the rows' stored parts).
fn shard_json_stamps(db: &dyn Db, index: PageIndex) -> Result<Vec<Stamped>, String> {
    per_section(db, index, |section| {
        let artifact = shard_json_artifact(db, index, section);
        (artifact.uri.clone(), artifact.hash.clone())
    })
}

fn shard_json_file(db: &dyn Db, index: PageIndex, name: &str) -> Result<DerivedFile, String> {
    let section = Section::new(db, name.to_string());
    let artifact = shard_json_artifact(db, index, section).clone();
    Ok(DerivedFile { artifact, text: shard_json(db, index, section).clone(), source: None })
}

/// Whether a file's bytes are a section's JSON as this tool writes it: an object with `schema` and `pages`.
fn is_shard_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .is_ok_and(|json| json.get("schema").is_some() && json.get("pages").is_some())
}

/// The root catalog, `indexes/root.md`.
fn root_file(db: &dyn Db, index: PageIndex) -> Result<DerivedFile, String> {
    let text = root_markdown(db, index).as_ref().map_err(Clone::clone)?;
    let artifact = root_artifact(db, index).clone()?;
    Ok(DerivedFile { artifact, text: text.as_str().into(), source: None })
}

/// Whether a file's text is one this compiler generated: front matter with `generated: true`, as every
/// generated Markdown file (a page, a shard, the root) opens.
#[must_use]
pub fn looks_generated(text: &str) -> bool {
    let Some(body) = text.strip_prefix("---\n") else { return false };
    body.lines().take_while(|line| *line != "---").any(|line| line.trim() == "generated: true")
}

/// Whether a file is the schema document as this binary writes it: a user's own schema stays.
fn is_schema(bytes: &[u8]) -> bool {
    bytes == SCHEMA_DOC.as_bytes()
}

/// The schema document, written as it is; it is no source.
fn schema_file(_: &dyn Db, _: PageIndex) -> Result<DerivedFile, String> {
    let metadata = json!({"version": SCHEMA_VERSION});
    let uri = format!("knowledge://schema/v{SCHEMA_VERSION}");
    let artifact = Artifact::of(uri, "schema", format!("schemas/v{SCHEMA_VERSION}.md"), SCHEMA_DOC, &metadata);
    Ok(DerivedFile { artifact, text: SCHEMA_DOC.into(), source: None })
}
