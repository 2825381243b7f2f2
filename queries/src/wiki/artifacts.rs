//! The artifact catalog as queries: each generated file's row (what it is, where it goes under the output
//! folder, its content's hash and size, and what the catalog says of it), derived from the page or shard
//! it holds. The driver stores the row of each artifact it writes, and the file sync and the remote
//! artifact store follow the catalog.
//!
//! Most kinds are declared here once ([`DECLARED_KINDS`]): a name and the query that derives each of its
//! artifacts with its text. One driver (`compiler/src/wiki/declared.rs`) compares them with the catalog
//! and writes their rows, texts, log events and files alike. Pages and section shards are also sources (search
//! reads their chunks) and have their own rows (citations, backlinks, shard rows), so their driver is
//! their own.

use std::sync::Arc;

use serde_json::json;

use super::llms::{LLMS_PATH, is_llms_text, llms_files};
use super::render::{SCHEMA_VERSION, WikiPage, render_page};
use super::shards::{PageIndex, Section, root_markdown, root_page_count, shard_json, shard_markdown, shard_page_count};
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
    let model = page.model(db);
    let metadata = json!({"title": model.title, "section": model.section, "sources": page.source_count(db)});
    let path = format!("wiki/{}/{}.md", model.section, model.slug);
    Ok(Artifact::of(SourceRef::page(&model.slug).path(), "page", path, markdown, &metadata))
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

/// An artifact of a declared kind: its catalog row and the text its file holds, which the index keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedFile {
    pub artifact: Artifact,
    pub text: Arc<str>,
}

/// A kind of artifact, declared once: its name (the catalog's `kind`, and its counters' key in a build's
/// summary) and the query that derives every artifact of the kind from the page index, or the template's
/// error. The driver derives each declared kind while the wiki is on; an artifact it no longer derives
/// is removed.
pub struct ArtifactKind {
    pub name: &'static str,
    pub derive: fn(&dyn Db, PageIndex) -> Result<Vec<DerivedFile>, String>,
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
        name: "root",
        derive: root_files,
        at: |path| path == "indexes/root.md",
        ours: |bytes| looks_generated(&String::from_utf8_lossy(bytes)),
        mime: "text/markdown",
        description: "The index's sections and how many pages each holds.",
    },
    ArtifactKind {
        name: "schema",
        derive: schema_files,
        at: |path| path.starts_with("schemas/"),
        ours: is_schema,
        mime: "text/markdown",
        description: "The format of the generated pages and index shards.",
    },
    ArtifactKind {
        name: "llms",
        derive: llms_files,
        at: |path| path == LLMS_PATH,
        ours: is_llms_text,
        mime: "text/plain",
        description: "Every generated page by section with its summary (llms.txt): a map of the wiki for agents.",
    },
];

/// The root catalog, `indexes/root.md`.
fn root_files(db: &dyn Db, index: PageIndex) -> Result<Vec<DerivedFile>, String> {
    let text = root_markdown(db, index).as_ref().map_err(Clone::clone)?;
    let artifact = root_artifact(db, index).clone()?;
    Ok(vec![DerivedFile { artifact, text: text.as_str().into() }])
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
fn schema_files(_: &dyn Db, _: PageIndex) -> Result<Vec<DerivedFile>, String> {
    let metadata = json!({"version": SCHEMA_VERSION});
    let uri = format!("knowledge://schema/v{SCHEMA_VERSION}");
    let artifact = Artifact::of(uri, "schema", format!("schemas/v{SCHEMA_VERSION}.md"), SCHEMA_DOC, &metadata);
    Ok(vec![DerivedFile { artifact, text: SCHEMA_DOC.into() }])
}
