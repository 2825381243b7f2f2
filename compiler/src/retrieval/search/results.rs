//! What a search is asked and what it answers: the request, the modes, and each result with its source ref,
//! revision, offsets, scores and reasons (the JSON the CLI prints and the MCP server returns).

use knowledge_queries::{Origin, SourceRef};
use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub use crate::store::{Citation, ResultSource};

/// Why semantic search is unavailable in this version.
pub const NO_EMBEDDINGS: &str =
    "no embeddings generation: [embeddings] provider is `none`, so searches are keyword-only";

/// Result kinds: chunks of sources, of generated wiki pages, rows of the wiki's index shards, notes, and
/// code entities (their search excerpts: the start of each entity's own text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum ResultKind {
    SourceChunk,
    WikiPage,
    IndexEntry,
    LegacyItem,
    Entity,
}

/// The entity types a search can be narrowed to (`entity_type`), as slugs begin with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum EntityType {
    Component,
    Symbol,
    Test,
    Decision,
}

impl EntityType {
    /// What the slugs of this type's entities begin with.
    pub(super) fn slug_prefix(self) -> &'static str {
        match self {
            EntityType::Component => "component/",
            EntityType::Symbol => "symbol/",
            EntityType::Test => "test/",
            EntityType::Decision => "decision/",
        }
    }
}

/// The entity a result of kind `entity` is the excerpt of.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntityMatch {
    /// What `knowledge entity get` and `knowledge_get_entity` take.
    pub slug: String,
    #[serde(rename = "type")]
    pub entity_type: String,
}

impl EntityMatch {
    pub(super) fn from_slug(slug: String) -> EntityMatch {
        let entity_type = slug.split_once('/').map_or("", |(t, _)| t).to_string();
        EntityMatch { slug, entity_type }
    }
}

/// How results are retrieved: keyword (BM25), semantic (vector similarity) or both fused.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
pub enum SearchMode {
    #[default]
    Keyword,
    Semantic,
    Hybrid,
}

impl SearchMode {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            SearchMode::Keyword => "keyword",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl SearchRequest {
    /// Whether results of `kind` were asked for (no kinds: every kind, or only entities when entity types
    /// are named).
    pub(super) fn wants(&self, kind: ResultKind) -> bool {
        if self.kinds.is_empty() {
            self.entity_types.is_empty() || kind == ResultKind::Entity
        } else {
            self.kinds.contains(&kind)
        }
    }

    /// The kinds of chunk the request wants, as the store filters them.
    pub(super) fn wanted_kinds(&self) -> crate::store::WantedKinds {
        crate::store::WantedKinds {
            sources: self.wants(ResultKind::SourceChunk),
            pages: self.wants(ResultKind::WikiPage),
            shards: self.wants(ResultKind::IndexEntry),
            notes: self.wants(ResultKind::LegacyItem),
            entities: self.wants(ResultKind::Entity),
            entity_prefixes: self.entity_types.iter().map(|t| t.slug_prefix()).collect(),
        }
    }

    /// Whether a chunk, by its source's path and the entity it is the excerpt of, is of a wanted kind.
    pub(super) fn wants_chunk(&self, path: &str, entity: Option<&str>) -> bool {
        match entity {
            Some(slug) => {
                self.wants(ResultKind::Entity)
                    && (self.entity_types.is_empty()
                        || self.entity_types.iter().any(|t| slug.starts_with(t.slug_prefix())))
            }
            None => self.wants(result_kind(path)),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub mode: SearchMode,
    pub limit: usize,
    /// Empty means every kind.
    pub kinds: Vec<ResultKind>,
    /// Entity results of these types only (empty: every type). Naming any, with no `kinds`, asks for
    /// entities alone.
    pub entity_types: Vec<EntityType>,
    /// The marks put around matched terms in snippets.
    pub highlight: Highlight,
}

/// Marks around matched terms in snippets: Markdown bold for JSON and pipes, ANSI bold for terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Highlight {
    #[default]
    Markdown,
    Ansi,
}

impl Highlight {
    pub(super) fn marks(self) -> (&'static str, &'static str) {
        match self {
            Highlight::Markdown => ("**", "**"),
            Highlight::Ansi => ("\u{1b}[1m", "\u{1b}[0m"),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchResponse {
    pub query: String,
    /// The terms the query was reduced to, as matched.
    pub terms: Vec<String>,
    /// The query held more distinct words than are searched (its first 32): the rest were ignored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terms_dropped: bool,
    pub mode: Cow<'static, str>,
    /// True when the requested mode could not be served as asked (no embeddings: keyword results only).
    pub degraded: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    /// The embeddings generation semantic scores came from, when any did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings_model: Option<String>,
    /// The semantic scores come from the `fake` provider: fine for tests, meaningless for quality.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fake_embeddings: bool,
    pub results: Vec<SearchResult>,
    /// How near an ordinary chunk of the index is to the query, in semantic and hybrid modes: the cosine of
    /// the semantic list's [`SEMANTIC_FLOOR_RANK`]th nearest chunk (its farthest, when it holds fewer).
    /// Internal: `ask` weighs a passage's nearness above it.
    #[serde(skip)]
    #[schemars(skip)]
    pub semantic_floor: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchResult {
    /// The chunk's row in the keyword index; internal.
    #[serde(skip)]
    pub(super) rowid: i64,
    pub kind: ResultKind,
    pub id: String,
    pub title: String,
    /// The whole chunk: exactly the cited bytes. Left out of MCP answers unless asked for (the snippet is
    /// the excerpt there; `knowledge_get` returns the chunk).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The best-matching passage, at most 32 tokens of the chunk with matched terms between the request's
    /// highlight marks; the chunk's first 160 characters when no keyword matched.
    pub snippet: String,
    #[serde(serialize_with = "rounded")]
    pub score: f64,
    pub scores: Scores,
    pub source: ResultSource,
    pub citation: Citation,
    pub reason: Vec<Cow<'static, str>>,
    /// Other sources holding this result's text word for word (copies are returned once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_in: Vec<String>,
    /// For an `entity` result, the entity whose excerpt it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<EntityMatch>,
    /// The generated page a `wiki_page` chunk or an `index_entry` row belongs to; internal.
    #[serde(skip)]
    pub(super) page: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Scores {
    /// BM25 (higher is better) times the coverage and phrase boosts.
    #[serde(serialize_with = "rounded")]
    pub keyword: f64,
    #[serde(serialize_with = "rounded")]
    pub bm25: f64,
    /// The share of the query's words the chunk contains, each word weighted by its rarity (idf).
    #[serde(serialize_with = "rounded")]
    pub coverage: f64,
    /// Cosine similarity to the query's embedding, when the chunk was among the nearest vectors.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "rounded_some")]
    pub semantic: Option<f64>,
    /// The chunk's fused score in a hybrid search: 0.8 × its cosine + 0.2 × its keyword score over the
    /// keyword list's best (docs/cli.md, "Hybrid ranking").
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "rounded_some")]
    pub fused: Option<f64>,
}

/// A score to six significant digits: what orders results, without the bytes of a full float.
pub(super) fn rounded<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    let digits = 5 - value.abs().log10().floor().clamp(-10.0, 5.0) as i32;
    let scale = 10_f64.powi(digits);
    serializer.serialize_f64((value * scale).round() / scale)
}

pub(super) fn rounded_some<S: serde::Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => rounded(value, serializer),
        None => serializer.serialize_none(),
    }
}

/// The kind of a result, by its source's path.
pub(super) fn result_kind(path: &str) -> ResultKind {
    match SourceRef::from_path(path).origin() {
        Origin::Note => ResultKind::LegacyItem,
        Origin::Page => ResultKind::WikiPage,
        Origin::Shard => ResultKind::IndexEntry,
        Origin::File | Origin::External => ResultKind::SourceChunk,
    }
}
