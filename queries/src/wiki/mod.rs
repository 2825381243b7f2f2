//! The wiki compiler's pure half: concept signals per source, the page plan across sources, each page's
//! model, and rendering. The driver (`compiler/src/wiki/`) sets the catalog, asks for the pages, reads the
//! quoted texts from the index and writes files.

mod artifacts;
mod graph;
mod lexicon;
mod llms;
mod plan;
mod render;
mod shards;
mod signals;
mod summary;
mod terms;

pub use artifacts::{
    Artifact, ArtifactKind, Counted, DECLARED_KINDS, DerivedFile, FileSource, KeptText, SCHEMA_DOC, Stamped,
    declared_kind, declared_kind_at, looks_generated, page_artifact, page_artifact_of, root_artifact, shard_artifact,
    shard_json_artifact,
};
pub use graph::{
    Catalog, CatalogEntry, PageView, Planned, PlannedPage, StoredView, View, page_model, page_model_hash,
    page_text_hash, planned_pages,
};
#[cfg(test)]
pub(crate) use llms::{llms_stamp, llms_text};
pub use plan::{
    CatalogSource, Mention, PagePlan, Plan, PlanSettings, PlanSignal, SourceLinks, concept_key, concept_keys,
    place_ranks, plan, plan_reads, plan_signal, source_links, split_signals,
};
pub use render::{
    Backlink, PageLink, PageModel, Quote, SCHEMA_VERSION, SourceLink, TableHeader, Templates, WikiPage, check_template,
    is_attribution_line, readable_excerpt, render, render_page,
};
pub use shards::{
    IndexedPage, PageIndex, Section, ShardEntry, ShardRow, root_markdown, root_page_count, sections, shard_entries,
    shard_json, shard_json_text, shard_markdown, shard_rows, shard_rows_hash,
};
pub use signals::{Excerpt, Signal, SignalKind, TableHeaderPlace, signals_of};
pub use summary::{SUMMARY_SENTENCES, SummaryLine, lead_summary, row_sentence, sends_elsewhere};
