//! The MCP tools' arguments, as clients send them: strict (unknown fields are an error), each field
//! described for the client's model.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::retrieval::reader::{Change, ListKind};
use crate::retrieval::search::{EntityType, ResultKind, SearchMode};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The query: any text. Words are matched individually; phrases and titles rank higher.
    pub query: String,
    /// `keyword`, `semantic` or `hybrid` (the default).
    #[serde(default)]
    pub mode: Option<SearchMode>,
    /// How many results, 1 to 100 (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only results of these kinds.
    #[serde(default)]
    pub kinds: Option<Vec<ResultKind>>,
    /// Only entity results of these types (`component`, `symbol`, `test`, `decision`); with no `kinds`,
    /// entities alone.
    #[serde(default)]
    pub entity_types: Option<Vec<EntityType>>,
    /// Also return each result's whole chunk as `text` (default false: the `snippet` is the excerpt, and
    /// `knowledge_get` with the result's `id` returns the chunk).
    #[serde(default)]
    pub include_text: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// A chunk id, a `file://` source ref, or a project-relative path.
    #[serde(rename = "ref")]
    pub reference: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// What to list: `sources` or `runs`.
    pub kind: ListKind,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Items per page, 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentChangesArgs {
    /// How many builds, newest first (default 10).
    #[serde(default)]
    pub runs: Option<u32>,
    /// Only builds after this run id or RFC 3339 time.
    #[serde(default)]
    pub since: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextPackArgs {
    /// What the context is for: any text.
    pub query: String,
    /// The token budget, a hard limit (default 2000); a token is ceil(UTF-8 bytes / 4).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// At most this many excerpts (default 8).
    #[serde(default)]
    pub max_items: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposalsArgs {
    /// The topic the agent loop is about to work on.
    pub topic: String,
    /// `loops` (the default): earlier answers on the topic from the run ledger; `sources`: the context pack.
    #[serde(default)]
    pub from: Option<ProposalsFrom>,
    /// The token budget, a hard limit (default 2000).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// At most this many items (default 8).
    #[serde(default)]
    pub max_items: Option<u32>,
}

/// Where a proposals pack reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalsFrom {
    Loops,
    Sources,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question.
    pub question: String,
    /// The budget of the context pack the answer draws on (default 1200 tokens).
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintArgs {
    /// Only findings in these project-relative files or folders.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// The least severe findings to return: `error`, `warning` (the default) or `info`.
    #[serde(default)]
    pub severity: Option<crate::lint::Severity>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStatusArgs {
    /// The run id (`knowledge ask --json` prints it as `run_id`); the last build when absent.
    #[serde(default)]
    pub run_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveSourceArgs {
    /// A chunk id, a source ref (`file://PATH`, an ingested source's `https://…` ref) or a project path.
    #[serde(rename = "ref")]
    pub reference: String,
    /// `knowledge_answer` (the default) or `knowledge_index`.
    #[serde(default)]
    pub purpose: Option<String>,
}

/// The changes of recent builds.
#[derive(Debug, serde::Serialize, JsonSchema)]
pub struct RecentChanges {
    pub changes: Vec<Change>,
}
