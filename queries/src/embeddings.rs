//! The embedding stage's part of the query graph: which chunks a generation lacks a vector entry for, and
//! which distinct texts those entries embed.
//!
//! The driver keeps one [`EmbeddingSource`] per source the stage looks at (its chunks as the committed
//! index holds them and the generation's ready entries for them) and sets a field only when its value
//! changed; the [`EmbeddingScope`] singleton lists the sources of this build's stage. Then:
//! - [`source_needs`] re-runs only for a source whose chunks or entries changed;
//! - [`generation_needs`] gathers them and keeps one entry per distinct text, so a text two chunks share is
//!   embedded once.
//!
//! The vectors are a cache keyed by model and text hash, outside the graph: the graph says which texts the
//! generation needs, and the driver asks the cache which of them it already holds before it calls a provider.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::{Db, content_hash};

/// One chunk as the committed index holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexedChunk {
    pub id: String,
    /// The chunk's title (document title and heading path), which is embedded with its text.
    pub title: String,
    pub text: String,
    pub revision: String,
    pub start: u32,
    pub end: u32,
}

/// A ready entry of the generation: the revision and offsets of the chunk text its vector embeds, and the
/// hash of the text it embedded ([`embedded_text`]): an entry that embedded another text for the chunk (a
/// binary that read its markup otherwise) is no longer ready.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReadyEntry {
    pub chunk_id: String,
    pub revision: String,
    pub start: u32,
    pub end: u32,
    pub text_hash: String,
}

/// One source the embedding stage looks at. The driver creates one per source ref.
#[salsa::input(debug)]
pub struct EmbeddingSource {
    #[returns(ref)]
    pub source_ref: String,
    /// Its chunks, in order.
    #[returns(ref)]
    pub chunks: Vec<IndexedChunk>,
    /// The generation's ready entries for its chunks, sorted; none for a full reindex, which embeds every
    /// chunk again.
    #[returns(ref)]
    pub ready: Vec<ReadyEntry>,
}

/// The sources this build's embedding stage looks at: those the build derived when the generation was
/// complete before it, every source otherwise.
#[salsa::input(singleton, debug)]
pub struct EmbeddingScope {
    #[returns(ref)]
    pub sources: Vec<EmbeddingSource>,
}

/// A chunk without a ready entry for its current revision and offsets (a chunk re-cut by a `[chunking]`
/// change may keep its id and move), with the text its vector embeds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EmbeddingNeed {
    pub chunk_id: String,
    pub revision: String,
    pub start: u32,
    pub end: u32,
    /// What the provider embeds: the chunk's title, a blank line, its text (shared, not copied, by the
    /// driver's plan).
    pub text: Arc<str>,
    /// The hash of `text`, which keys the vector.
    pub hash: String,
}

/// A source's chunks that lack a ready entry.
#[salsa::tracked(returns(ref))]
pub fn source_needs(db: &dyn Db, source: EmbeddingSource) -> Vec<EmbeddingNeed> {
    let ready = source.ready(db);
    source
        .chunks(db)
        .iter()
        .filter_map(|chunk| {
            let text = embedded_text(source.source_ref(db), chunk);
            let hash = content_hash(text.as_bytes());
            // `ReadyEntry`'s order is its fields' in turn.
            let key = (chunk.id.as_str(), chunk.revision.as_str(), chunk.start, chunk.end, hash.as_str());
            let found = ready.binary_search_by(|entry| {
                (entry.chunk_id.as_str(), entry.revision.as_str(), entry.start, entry.end, entry.text_hash.as_str())
                    .cmp(&key)
            });
            found.is_err().then(|| EmbeddingNeed {
                chunk_id: chunk.id.clone(),
                revision: chunk.revision.clone(),
                start: chunk.start,
                end: chunk.end,
                hash,
                text: text.into(),
            })
        })
        .collect()
}

/// What a chunk's vector embeds: its title, then its text without MDX's markup lines (`import` and
/// `export` statements, components' tags, `{/* … */}` comments, outside code blocks), which Docusaurus,
/// Starlight and Nextra pages open with and which would weigh in the chunk's meaning: a Starlight page's
/// chunk opening with five `import` lines sat at cosine 0.43 to the question its one sentence answers, 0.77
/// without them. A chunk without such lines is embedded as written, and keeps its vector (reading
/// Markdown's comments and links' targets out as well lowered the Rust book's semantic file nDCG@10 from
/// 0.9124 to 0.9010, docs/performance.md); so are code and plain text.
#[must_use]
pub fn embedded_text(source_ref: &str, chunk: &IndexedChunk) -> String {
    // A project file's ref is `file://PATH`, whose kind its path's extension says; a page's or an ingested
    // source's ref says it is Markdown.
    let source = crate::SourceRef::from_uri(source_ref);
    let path = if source.origin() == crate::Origin::File { source.name() } else { source_ref };
    let text = match crate::SourceKind::from_path(path) {
        crate::SourceKind::Markdown => without_mdx_markup(&chunk.text),
        crate::SourceKind::Text | crate::SourceKind::Code => std::borrow::Cow::Borrowed(chunk.text.as_str()),
    };
    format!("{}\n\n{}", chunk.title, text)
}

/// A text without the lines outside code blocks that are MDX's markup alone, a line of components' tags
/// read as its attributes' quoted values (a listing's caption, a tab's label: [`crate::mdx::tags_text`]);
/// the text itself when it has none.
fn without_mdx_markup(text: &str) -> std::borrow::Cow<'_, str> {
    let mut fences = crate::Fences::default();
    let (mut kept, mut read_out) = (String::with_capacity(text.len()), false);
    for line in text.lines() {
        let trimmed = line.trim();
        if fences.is_code(line) || !crate::mdx::is_markup_line(trimmed) {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        read_out = true;
        let said = if crate::mdx::is_component_tags(trimmed) { crate::mdx::tags_text(trimmed) } else { String::new() };
        if !said.is_empty() {
            kept.push_str(&said);
            kept.push('\n');
        }
    }
    if read_out { std::borrow::Cow::Owned(kept.trim().to_string()) } else { std::borrow::Cow::Borrowed(text) }
}

/// One need of a source, named by its place in [`source_needs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NeedRef {
    pub source: EmbeddingSource,
    pub index: usize,
}

/// What a generation lacks across the stage's sources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenerationNeeds {
    /// Every chunk without a ready entry, source by source.
    pub entries: Vec<NeedRef>,
    /// The place in `entries` of the first entry of each distinct text: one vector serves every entry with
    /// that text.
    pub first_of_text: Vec<usize>,
    /// The chunks looked at.
    pub checked: u64,
}

/// The entries and the distinct texts the generation lacks across the scope's sources.
#[salsa::tracked(returns(ref))]
pub fn generation_needs(db: &dyn Db, scope: EmbeddingScope) -> GenerationNeeds {
    let mut needs = GenerationNeeds::default();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    for &source in scope.sources(db) {
        needs.checked += source.chunks(db).len() as u64;
        for (index, need) in source_needs(db, source).iter().enumerate() {
            if seen.insert(need.hash.as_str()) {
                needs.first_of_text.push(needs.entries.len());
            }
            needs.entries.push(NeedRef { source, index });
        }
    }
    needs
}

impl NeedRef {
    /// The need this names.
    #[must_use]
    pub fn get(self, db: &dyn Db) -> &EmbeddingNeed {
        &source_needs(db, self.source)[self.index]
    }
}
