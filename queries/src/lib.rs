//! The query graph of the knowledge compiler: salsa inputs and pure, memoized tracked functions.
//!
//! Nothing in this crate touches the file system, the clock, the network or SQLite.
//! The driver (`compiler/`) reads files, sets inputs, calls the queries and writes what they return.
//! See `docs/architecture.md` for the chain `parse` → `outline` / `chunks`.

mod chunking;
pub mod citations;
pub mod code;
pub mod embeddings;
mod facts;
mod front_matter;
mod hash;
mod identifiers;
mod inputs;
pub mod links;
pub mod lint;
mod markdown;
mod mdx;
pub mod passages;
mod queries;
mod sentences;
mod source_ref;
mod text;
pub mod wiki;

#[cfg(test)]
mod tests;

pub use chunking::{Chunk, ChunkingParams, floor_char_boundary};
pub use facts::{LintFacts, Located, Suppression, WikiLinkFact};
pub use front_matter::{FrontMatter, FrontMatterValue};
pub use hash::content_hash;
pub use identifiers::identifier_parts;
pub use inputs::{ChunkingSettings, CodeSettings, LintSettings, SourceFile, SourceKind};
pub use markdown::{Block, BlockKind, Emphasis, Heading, Link, ParseProblem, ParsedDocument, WikiLink, front_matter};
pub use queries::{Outline, OutlineHeading, chunks, concept_signals, lint_facts, outline, parse};
pub use sentences::{FOOTNOTE_LABEL_BYTES, last_sentence_or_block_end, sentence_ends, split_sentences};
pub use source_ref::{Origin, SCHEME_END, SourceRef, TOOL_SCHEME};
pub use text::{
    Fences, LineIndex, each_lowercased_word, emphasized_spans, is_block_label, is_content_tab, is_heading_line,
    is_link_item, is_markup_only, is_navigation, is_only_embeds, keep_best, list_item_body, opens_component_tag,
    shared_sorted, starts_list_item, words_beside_links,
};

/// The database trait every query takes. The driver's `KnowledgeDb` and the tests' `TestDb` implement it.
#[salsa::db]
pub trait Db: salsa::Database {}
