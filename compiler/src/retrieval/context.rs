//! Context packs: the best cited excerpts for a query that fit a token budget, for an agent's prompt.
//!
//! One function for `knowledge context pack` and the MCP tool `knowledge_context_pack`. The budget is a
//! hard limit under a stated, deterministic count: a token is ⌈UTF-8 bytes / 4⌉ of an excerpt's text and of
//! its citation ref. Excerpts are taken in search order, at most two per source so one long document does
//! not crowd out the rest; an excerpt that does not fit is cut at a sentence or line end that fits, or left
//! out when too little of it would remain. Every excerpt keeps the offsets of exactly the text it carries.

use std::collections::HashMap;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use crate::retrieval::search::{self, Highlight, SearchRequest};

/// The schema name and version every pack carries.
pub const SCHEMA: &str = "knowledge-agent-context-pack";
/// Version 2: `suggested_wiki_updates` are objects (`proposals::WikiUpdate`), not sentences.
pub const SCHEMA_VERSION: u32 = 2;

/// At most this many excerpts come from one source.
const PER_SOURCE: usize = 2;
/// A cut excerpt must keep at least this many tokens to be worth including.
const MIN_EXCERPT_TOKENS: usize = 24;

#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct ContextPack {
    pub schema: std::borrow::Cow<'static, str>,
    pub schema_version: u32,
    pub query: String,
    /// The query as search reads it: its meaningful terms, lowercased.
    pub intent: Vec<String>,
    pub items: Vec<PackItem>,
    pub budget: Budget,
    /// How current the excerpts are.
    pub freshness: Freshness,
    /// How permissions shaped the pack.
    pub permissions: String,
    /// Selected sources that carry an unresolved contradiction marker (see `knowledge lint`).
    pub conflicts: Vec<Conflict>,
    /// Durable wiki updates the pack suggests: a page for an answer no page covers, a refresh of a page
    /// whose cited sources changed, a page where nothing answers.
    pub suggested_wiki_updates: Vec<crate::retrieval::proposals::WikiUpdate>,
    /// The pack could not use semantic search; `degraded_reason` says why.
    pub degraded: bool,
    pub degraded_reason: Option<String>,
    /// The search's [`search::SearchResponse::semantic_floor`]; internal.
    #[serde(skip)]
    #[schemars(skip)]
    pub semantic_floor: Option<f64>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct PackItem {
    /// A compact citation: `file://PATH@REV12#Lstart-Lend`, resolvable with `knowledge get`.
    #[serde(rename = "ref")]
    pub reference: String,
    pub chunk_id: String,
    pub title: String,
    pub text: String,
    /// The excerpt was cut to fit the budget; its offsets and lines cover exactly `text`.
    pub truncated: bool,
    pub source: search::ResultSource,
    pub citation: search::Citation,
    pub tokens: usize,
    pub score: f64,
    /// What each retriever said of the excerpt (`ask` weighs it); not part of the pack's JSON.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) scores: Option<search::Scores>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct Budget {
    pub max_tokens: usize,
    pub max_items: usize,
    pub used_tokens: usize,
    /// How tokens are counted.
    pub counting: std::borrow::Cow<'static, str>,
    /// Search results left out because the budget or the per-source limit was reached.
    pub omitted: usize,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct Freshness {
    /// The build that wrote the index, and when it finished.
    pub index_run: Option<String>,
    pub index_built_at: Option<String>,
    /// Every excerpt's revision is its source's current revision in the index.
    pub all_current: bool,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, JsonSchema)]
pub struct Conflict {
    pub path: String,
    pub line: u32,
    pub marker: String,
}

/// Tokens of a text under the pack's counting rule.
#[must_use]
pub fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Builds a pack for `query` within `max_tokens` and `max_items`, from what `access` may read.
pub fn pack(
    conn: &Connection,
    query: &str,
    max_tokens: usize,
    max_items: usize,
    access: &crate::retrieval::access::Access,
) -> rusqlite::Result<ContextPack> {
    pack_cached(conn, &mut search::SearchCache::default(), query, max_tokens, max_items, access)
}

/// [`pack`] through the connection's `cache` (see [`search::search_cached`]).
pub fn pack_cached(
    conn: &Connection,
    cache: &mut search::SearchCache,
    query: &str,
    max_tokens: usize,
    max_items: usize,
    access: &crate::retrieval::access::Access,
) -> rusqlite::Result<ContextPack> {
    pack_in(&mut search::SqliteIndex::new(conn, cache)?, query, max_tokens, max_items, access)
}

/// [`pack`] over `projects` of the Postgres store, as `principal` may read them.
pub fn pack_postgres(
    store: &mut crate::store::postgres::PgStore,
    projects: &[String],
    query: &str,
    max_tokens: usize,
    max_items: usize,
    principal: Option<&str>,
) -> Result<ContextPack, search::StoreReadError> {
    let scope = search::StoreScope::of(store, projects, principal)?;
    let mut index = search::PgIndex::new(store, scope.projects, scope.generation);
    pack_in(&mut index, query, max_tokens, max_items, &scope.access).map_err(|source| index.error(source).into())
}

/// What a pack may still hold: tokens, items, and items per source.
struct PackBudget {
    max_tokens: usize,
    max_items: usize,
    used: usize,
    per_source: HashMap<String, usize>,
}

impl PackBudget {
    /// `result` as the pack's next item, cut to the tokens left; `None` when it is nested in (or around) an
    /// item already packed, or the pack, its source's share or the tokens left cannot hold it.
    fn take(&mut self, result: search::SearchResult, items: &[PackItem]) -> Option<PackItem> {
        // An entity's excerpt and the text chunk around it hold the same bytes: a result inside (or around)
        // an excerpt already packed adds nothing but tokens.
        let (start, end) = (result.citation.start_offset, result.citation.end_offset);
        let nested = items.iter().any(|item| {
            item.source.path == result.source.path
                && ((item.citation.start_offset <= start && end <= item.citation.end_offset)
                    || (start <= item.citation.start_offset && item.citation.end_offset <= end))
        });
        let from_source = self.per_source.get(&result.source.path).copied().unwrap_or(0);
        if nested || items.len() >= self.max_items || from_source >= PER_SOURCE {
            return None;
        }
        let reference = citation_ref(
            &result.source.path,
            &result.source.revision,
            result.citation.start_line,
            result.citation.end_line,
        );
        let available = self.max_tokens.saturating_sub(self.used + tokens(&reference));
        let (text, truncated) = fit(&result.text, available)?;
        let mut citation = result.citation.clone();
        let mut reference = reference;
        if truncated {
            citation.end_offset = citation.start_offset + u32::try_from(text.len()).unwrap_or(u32::MAX);
            citation.end_line = citation.start_line + u32::try_from(text.matches('\n').count()).unwrap_or(0);
            reference =
                citation_ref(&result.source.path, &result.source.revision, citation.start_line, citation.end_line);
        }
        let cost = tokens(&text) + tokens(&reference);
        if self.used + cost > self.max_tokens {
            return None;
        }
        self.used += cost;
        *self.per_source.entry(result.source.path.clone()).or_default() += 1;
        let mut source = result.source.clone();
        source.hash = knowledge_queries::content_hash(text.as_bytes());
        Some(PackItem {
            reference,
            chunk_id: result.id,
            title: result.title,
            text,
            truncated,
            source,
            citation,
            tokens: cost,
            score: result.score,
            scores: Some(result.scores),
        })
    }
}

/// [`pack`] over any index: the excerpts, and the wiki updates they suggest.
pub(crate) fn pack_in<I: search::SearchIndex>(
    index: &mut I,
    query: &str,
    max_tokens: usize,
    max_items: usize,
    access: &crate::retrieval::access::Access,
) -> Result<ContextPack, I::Error> {
    let mut pack = excerpts_in(index, query, max_tokens, max_items, access)?;
    pack.suggested_wiki_updates = crate::retrieval::proposals::for_pack(index, &pack)?;
    Ok(pack)
}

/// A pack's excerpts, without the wiki updates it would suggest (which `ask` does not read).
pub(crate) fn excerpts_in<I: search::SearchIndex>(
    index: &mut I,
    query: &str,
    max_tokens: usize,
    max_items: usize,
    access: &crate::retrieval::access::Access,
) -> Result<ContextPack, I::Error> {
    let request = SearchRequest {
        query: query.to_string(),
        // Hybrid where the index has an embeddings generation; keyword, and `degraded` with the reason, where not.
        mode: search::SearchMode::Hybrid,
        limit: (max_items * 4).clamp(20, 100),
        kinds: Vec::new(),
        entity_types: Vec::new(),
        highlight: Highlight::Markdown,
    };
    // Search returns no navigation (a table of contents, a list of links), so none fills a budget.
    let mut response = search::search_in(index, &request, access)?;
    let mut budget = PackBudget { max_tokens, max_items, used: 0, per_source: HashMap::new() };
    let mut items: Vec<PackItem> = Vec::new();
    let mut omitted = 0;
    for result in std::mem::take(&mut response.results) {
        match budget.take(result, &items) {
            Some(item) => items.push(item),
            None => omitted += 1,
        }
    }

    let (freshness, conflicts) = freshness_and_conflicts(index, &items)?;
    Ok(ContextPack {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        query: query.to_string(),
        intent: response.terms,
        items,
        budget: Budget {
            max_tokens,
            max_items,
            used_tokens: budget.used,
            counting: "ceil(UTF-8 bytes / 4) of each excerpt's text and citation ref".into(),
            omitted,
        },
        freshness,
        permissions:
            "filtered by permission labels before search: every excerpt is readable by the requesting principal"
                .to_string(),
        conflicts,
        suggested_wiki_updates: Vec::new(),
        degraded: response.degraded,
        degraded_reason: response.degraded_reason,
        semantic_floor: response.semantic_floor,
    })
}

/// `file://PATH@REV12#Lstart-Lend` (`knowledge://item/ID@…` for a note).
pub(crate) fn citation_ref(path: &str, revision: &str, start_line: u32, end_line: u32) -> String {
    let source = knowledge_queries::SourceRef::from_path(path).uri();
    format!("{source}@{}#L{start_line}-L{end_line}", &revision[..revision.len().min(12)])
}

/// The longest prefix of `text` within `available` tokens that ends where a sentence or a block ends, or all
/// of it; `None` when less than `MIN_EXCERPT_TOKENS` would remain, and the pack takes the next result instead.
/// A window with no sentence's end after its heading is cut at its last line end only when it holds no
/// block's end either: a heading and half a sentence is no excerpt a reader can use.
fn fit(text: &str, available: usize) -> Option<(String, bool)> {
    if tokens(text) <= available {
        return Some((text.to_string(), false));
    }
    let limit = knowledge_queries::floor_char_boundary(text, available * 4);
    let window = &text[..limit];
    let end = knowledge_queries::last_sentence_or_block_end(window).or_else(|| window.rfind('\n'))?;
    let cut = window[..end].trim_end();
    (tokens(cut) >= MIN_EXCERPT_TOKENS).then(|| (cut.to_string(), true))
}

/// Whether every excerpt is its source's current revision, and the contradiction markers recorded in the
/// lint facts of the selected sources.
fn freshness_and_conflicts<I: search::SearchIndex>(
    index: &mut I,
    items: &[PackItem],
) -> Result<(Freshness, Vec<Conflict>), I::Error> {
    let (index_run, index_built_at) = index.index_run()?;
    let mut all_current = true;
    let mut conflicts = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for item in items {
        let state = index.source_state(&item.source)?;
        all_current &= state.as_ref().is_some_and(|(revision, _)| *revision == item.source.revision);
        let Some((_, facts)) = state.filter(|_| seen.insert(item.source.path.clone())) else { continue };
        let Ok(parsed) = serde_json::from_str::<knowledge_queries::LintFacts>(&facts) else { continue };
        conflicts.extend(parsed.markers.into_iter().map(|m| Conflict {
            path: item.source.path.clone(),
            line: m.line,
            marker: m.value,
        }));
    }
    Ok((Freshness { index_run, index_built_at, all_current }, conflicts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An excerpt too long for its budget is cut where a sentence ends, not at a line end inside one; one
    /// whose window holds no sentence's end after its heading is left out (the pack takes the next result),
    /// and a text with no block either is cut at its last line end.
    #[test]
    fn an_excerpt_is_cut_at_a_sentence_or_left_out() {
        let wrapped = "# Borrowing\n\nThe first sentence is\nwrapped here. The second one goes\non and on.\n";
        let (cut, truncated) = fit(&wrapped.repeat(4), 40).expect("an excerpt");
        assert!(truncated);
        assert!(cut.ends_with("wrapped here.") || cut.ends_with("on and on."), "{cut:?}");
        let endless = "a clause that never stops\n".repeat(40);
        assert_eq!(fit(&format!("# Borrowing\n\n{endless}"), 40), None, "a heading and half a sentence");
        let (cut, truncated) = fit(&endless, 40).expect("no block: cut at a line end");
        assert!(truncated);
        assert!(cut.ends_with("never stops"), "{cut:?}");
        assert!(tokens(&cut) >= MIN_EXCERPT_TOKENS && tokens(&cut) <= 40);
    }
}
