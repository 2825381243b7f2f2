//! The wiki compiler's pure half: concept signals per source, the page plan across sources, and rendering.
//! The driver (`compiler/src/wiki.rs`) reads the catalog from the index, fills the models and writes files.

mod plan;
mod render;
mod signals;
mod summary;

pub use plan::{CatalogSource, Mention, PagePlan, PlanSettings, concept_key, plan};
pub use render::{
    Backlink, PageLink, PageModel, Quote, SCHEMA_VERSION, SourceLink, Templates, WikiPage, check_template, render,
    render_page,
};
pub use signals::{Excerpt, Signal, SignalKind, signals_of};
pub use summary::{SUMMARY_SENTENCES, SummaryLine, lead_summary};
