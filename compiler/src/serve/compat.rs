//! The names agents written for the design call besides ours: `knowledge_web_search` (only when the server's
//! operator allows it, and it files nothing), `knowledge_introduced` (claim history), `knowledge_proposals_context`
//! (an agent loop's pack over the run ledger), and the read-only `ok_*`
//! compatibility names of the older tools, each answering exactly as the tool it names.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{KnowledgeServer, ResolveSourceArgs, SearchArgs, StatsArgs, ToolError, inlined_output_schema};
use crate::embeddings::GenerationStatus;
use crate::providers::WebResult;
use crate::retrieval::search::SearchResponse;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WebSearchArgs {
    /// What to search the web for.
    pub(super) query: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct IntroducedArgs {
    /// A cited passage (`REF#L5-L9`: a chunk's or a context pack's ref, or a path with lines), or a text the
    /// sources hold.
    pub(super) passage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct WebResults {
    /// The pages found, within `[web]`'s domains and result cap. Nothing is filed: `knowledge web search
    /// --file` on the command line files results as sources.
    pub(super) results: Vec<WebResult>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct ReindexStatus {
    /// Per embeddings generation: ready, pending, missing and stale entries, queued jobs and vectors.
    pub(super) generations: Vec<GenerationStatus>,
}

/// Why `knowledge_web_search` did not search: the operator did not start the server with a web provider.
const WEB_SEARCH_OFF: &str = "web search is off on this server: its operator starts it with `knowledge serve \
                              --web-provider NAME` (and `[web] enabled = true` in kc.toml) to allow it";

#[tool_router(router = compat_router, vis = "pub(super)")]
impl KnowledgeServer {
    #[tool(
        description = "Search the web with a provider's own search tool, within the project's `[web]` domains and \
                       result cap: each result's URL, title, snippet, retrieval time and provider. Only when the \
                       server's operator allowed it (`knowledge serve --web-provider`); it files nothing.",
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn knowledge_web_search(
        &self,
        Parameters(args): Parameters<WebSearchArgs>,
    ) -> Result<Json<WebResults>, ToolError> {
        let Some((provider, web)) = self.project.web_search.clone() else {
            return Err(ToolError::Failed(WEB_SEARCH_OFF.to_string()));
        };
        tokio::task::spawn_blocking(move || provider.web_search(&args.query, &web))
            .await
            .map_err(ToolError::internal)?
            .map(|results| Json(WebResults { results }))
            .map_err(ToolError::from)
    }

    #[tool(
        description = "Which build first held a passage: for a cited `REF#Lstart-Lend` (or a text, found verbatim \
                       in up to five sources), the build that completed it (the latest of its lines' first \
                       builds) with its commit, branch and time, and each line's first build.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_introduced(
        &self,
        Parameters(args): Parameters<IntroducedArgs>,
    ) -> Result<Json<crate::retrieval::history::Introductions>, ToolError> {
        self.read(move |conn, access| {
            crate::retrieval::history::introduced(conn, &args.passage, access).map(Json).map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "For an agent loop about to work on a topic: the context-pack schema over the run ledger \
                       (`from: loops`, the default: earlier answers on the topic, each its question, answer and \
                       citation refs, never the cited text, and only those whose every source the principal may \
                       read) or over the sources (`from: sources`), with the wiki updates it proposes \
                       (`knowledge proposals context`).",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_proposals_context(
        &self,
        Parameters(args): Parameters<super::ProposalsArgs>,
    ) -> Result<Json<crate::retrieval::context::ContextPack>, ToolError> {
        let max_tokens = args.max_tokens.unwrap_or(2000) as usize;
        let max_items = args.max_items.unwrap_or(8) as usize;
        self.read(move |conn, access| {
            match args.from.unwrap_or(super::ProposalsFrom::Loops) {
                super::ProposalsFrom::Loops => {
                    crate::retrieval::proposals::loops_pack(conn, &args.topic, max_tokens, max_items, access)
                }
                super::ProposalsFrom::Sources => {
                    crate::retrieval::context::pack(conn, &args.topic, max_tokens, max_items, access)
                }
            }
            .map(Json)
            .map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "Compatibility name of `knowledge_web_search`: the same arguments and answer, and the same \
                       operator's gate.",
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn ok_web_search(&self, args: Parameters<WebSearchArgs>) -> Result<Json<WebResults>, ToolError> {
        self.knowledge_web_search(args).await
    }

    #[tool(
        description = "Compatibility name of `knowledge_search`: the same arguments and answer.",
        annotations(read_only_hint = true),
        output_schema = inlined_output_schema::<SearchResponse>()
    )]
    async fn ok_search(&self, args: Parameters<SearchArgs>) -> Result<CallToolResult, ToolError> {
        self.knowledge_search(args).await
    }

    #[tool(
        description = "Compatibility name of `knowledge_resolve_source`: the same arguments and answer.",
        annotations(read_only_hint = true)
    )]
    async fn ok_resolve_source(
        &self,
        args: Parameters<ResolveSourceArgs>,
    ) -> Result<Json<crate::retrieval::resolve::SourceDecision>, ToolError> {
        self.knowledge_resolve_source(args).await
    }

    #[tool(
        description = "The embeddings generations, as `knowledge reindex status` prints them: per generation its \
                       ready, pending, missing and stale entries, queued jobs, vectors and whether searches use it.",
        annotations(read_only_hint = true)
    )]
    async fn ok_reindex_status(
        &self,
        Parameters(_args): Parameters<StatsArgs>,
    ) -> Result<Json<ReindexStatus>, ToolError> {
        self.read(|conn, _access| {
            crate::embeddings::status(conn)
                .map(|generations| Json(ReindexStatus { generations }))
                .map_err(ToolError::from)
        })
        .await
    }
}
