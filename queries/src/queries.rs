//! The tracked functions: one noun each.
//!
//! `parse(file)` reads a source's structure; `outline(file)` is the small, cross-file view of it (title,
//! headings, links, front matter) that later cross-file queries read, so a paragraph edit elsewhere never
//! re-runs them; `chunks(file)` splits the source for the index.

use std::sync::Arc;

use crate::Db;
use crate::chunking::{Chunk, ChunkingParams, chunk_document};
use crate::facts::{LintFacts, lint_facts as derive_lint_facts};
use crate::front_matter::FrontMatter;
use crate::inputs::{ChunkingSettings, LintSettings, SourceFile, SourceKind};
use crate::markdown::{ParsedDocument, parse_document};
use crate::wiki::{Signal, signals_of};

/// The structure of one source. Re-runs when the file's text changes. An MDX source's structure is read from
/// its parse view (`mdx::parse_view`: its imports, expressions and components' tags no blocks, its indentation
/// no code, as MDX reads it), its blocks still ranges of its own text.
#[salsa::tracked(returns(ref), lru = 256)]
pub fn parse(db: &dyn Db, file: SourceFile) -> ParsedDocument {
    let path = file.path(db);
    let kind = SourceKind::from_path(path);
    if kind == SourceKind::Markdown && crate::mdx::is_mdx(path) {
        return crate::markdown::parse_mdx(file.text(db));
    }
    parse_document(kind, file.text(db))
}

/// What other documents and the catalog need to know about a source. It holds no offsets or line
/// numbers, so an edit that only moves text leaves it equal.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Outline {
    pub kind: SourceKind,
    /// The front matter `title`, else the first level-1 heading, else a heading that opens the document, else
    /// the file name without extension.
    pub title: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headings: Vec<OutlineHeading>,
    /// Link targets in document order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front_matter: Option<FrontMatter>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OutlineHeading {
    pub level: u8,
    pub text: String,
    pub anchor: String,
}

/// The outline of one source. Equal outlines backdate, so queries that read only outlines do not re-run
/// after an edit that changes no heading, link or front matter.
#[salsa::tracked(returns(ref))]
pub fn outline(db: &dyn Db, file: SourceFile) -> Outline {
    let doc = parse(db, file);
    let path = file.path(db);
    let title = doc
        .front_matter
        .as_ref()
        .and_then(|fm| fm.scalar("title"))
        .map(str::trim)
        .filter(|title| !title.is_empty())
        .map(str::to_string)
        .or_else(|| doc.headings.iter().find(|h| h.level == 1).map(|h| h.text.clone()))
        // Books whose chapters open with a level-2 heading (mdBook sub-chapters): the opening heading. HTML
        // before it (`<!-- comments -->`, `<a id="old-anchor"></a>` kept for old links) opens nothing.
        .or_else(|| {
            let text = file.text(db);
            let html = |block: &crate::markdown::Block| {
                block.kind == crate::markdown::BlockKind::Other
                    && text
                        .get(block.start as usize..block.end as usize)
                        .is_some_and(|b| b.trim_start().starts_with('<'))
            };
            match doc.blocks.iter().find(|block| !html(block))?.kind {
                crate::markdown::BlockKind::Heading(index) => Some(doc.headings[index as usize].text.clone()),
                _ => None,
            }
        })
        .filter(|title| !title.is_empty())
        .unwrap_or_else(|| file_stem(path).to_string());
    Outline {
        kind: doc.kind,
        title,
        headings: doc
            .headings
            .iter()
            .map(|h| OutlineHeading { level: h.level, text: h.text.clone(), anchor: h.anchor.clone() })
            .collect(),
        links: doc.links.iter().map(|link| link.target.clone()).collect(),
        front_matter: doc.front_matter.clone(),
    }
}

/// The chunks of one source. Re-runs when the text or the `[chunking]` settings change.
#[salsa::tracked(returns(clone))]
pub fn chunks(db: &dyn Db, file: SourceFile) -> Arc<[Chunk]> {
    let settings = ChunkingSettings::get(db);
    let params = ChunkingParams { target_bytes: settings.target_bytes(db), overlap_bytes: settings.overlap_bytes(db) };
    chunk_document(file.path(db), file.text(db), parse(db, file), params).into()
}

/// What lint rules look at in one source. Re-runs when the text or the contradiction patterns change.
#[salsa::tracked(returns(ref))]
pub fn lint_facts(db: &dyn Db, file: SourceFile) -> LintFacts {
    let settings = LintSettings::try_get(db);
    let patterns = settings.map(|settings| settings.contradiction_patterns(db).clone()).unwrap_or_default();
    let in_wiki = settings.is_some_and(|settings| crate::links::in_folder(file.path(db), settings.wiki_folder(db)));
    derive_lint_facts(file.text(db), parse(db, file), &patterns, in_wiki)
}

/// The concept signals of one source: what it names and links, with the excerpts a page would quote.
#[salsa::tracked(returns(ref))]
pub fn concept_signals(db: &dyn Db, file: SourceFile) -> Vec<Signal> {
    let chunks = chunks(db, file);
    signals_of(&outline(db, file).title, file.text(db), parse(db, file), &chunks)
}

fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}
