//! The code-entity tools: the same functions `knowledge entity` calls, read-only, with strict arguments.

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{KnowledgeServer, ToolError};
use crate::retrieval::entities::{
    self, Coverage, EntityChange, EntityDetail, EntityGraph, EntityInfo, ImpactPlan, Introduced, ResolvedDependency,
    TestPlan,
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SlugArgs {
    /// An entity slug (`component/NAME`, `symbol/PATH#NAME`, `test/PATH#NAME`, `decision/STEM`); a component
    /// may also be named by its folder (`component/queries`).
    pub(super) slug: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GetEntityArgs {
    /// An entity slug (`component/NAME`, `symbol/PATH#NAME`, `test/PATH#NAME`, `decision/STEM`); a component
    /// may also be named by its folder (`component/queries`).
    pub(super) slug: String,
    /// At most this many relationships of each relation and direction (default 100; 0: all); `omitted`
    /// counts the rest.
    #[serde(default)]
    pub(super) limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListEntitiesArgs {
    /// `component`, `symbol`, `api` (public symbols), `test` or `decision`; every entity when absent.
    #[serde(default, rename = "type")]
    pub(super) entity_type: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CoordinateArgs {
    /// `crates.io:serde@1`, `npm:react@^18`, `pypi:requests@>=2`, `go:MODULE@VERSION`, or a bare name.
    pub(super) coordinate: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ComponentArgs {
    /// A component slug (`component/NAME`) or its folder (`component/FOLDER`).
    pub(super) component: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RecentChangesArgs {
    /// At most this many changes, newest first (default 50, at most 1000).
    #[serde(default)]
    pub(super) limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct EntityList {
    pub(super) entities: Vec<EntityInfo>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct EntityChanges {
    pub(super) changes: Vec<EntityChange>,
}

#[tool_router(router = entity_router, vis = "pub(super)")]
impl KnowledgeServer {
    #[tool(
        description = "One code entity (a component, symbol, test or decision, with `[code]` enabled): its typed \
                       payload, its anchor (path, revision, lines, byte offsets, citation ref) and its \
                       relationships (depends_on, implemented_by, covers, governs, affects), at most 100 of each relation \
                       and direction unless `limit` says otherwise, with `omitted` counting the rest.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_get_entity(
        &self,
        Parameters(args): Parameters<GetEntityArgs>,
    ) -> Result<Json<EntityDetail>, ToolError> {
        let limit = args.limit.map_or(entities::RELATIONSHIP_LIMIT, |limit| limit as usize);
        self.read(move |conn, access| {
            EntityGraph::cached(conn, access)
                .and_then(|graph| graph.detail(&args.slug, limit))
                .map(Json)
                .map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "The code entities of a type (`component`, `symbol`, `api` for public symbols, `test`, \
                       `decision`), or all, each with its anchor.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_list_entities(
        &self,
        Parameters(args): Parameters<ListEntitiesArgs>,
    ) -> Result<Json<EntityList>, ToolError> {
        self.read(move |conn, access| {
            let graph = EntityGraph::cached(conn, access).map_err(ToolError::from)?;
            let entities = graph.list(args.entity_type.as_deref()).map_err(ToolError::from)?;
            Ok(Json(EntityList { entities }))
        })
        .await
    }

    #[tool(
        description = "Whether a dependency coordinate names a component of this project (`internal`), of a \
                       repository kc.toml's `[dependencies]` maps (`mapped`), or neither (`external`).",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_resolve_dependency(
        &self,
        Parameters(args): Parameters<CoordinateArgs>,
    ) -> Result<Json<ResolvedDependency>, ToolError> {
        let mapped = self.project.dependencies.clone();
        self.read(move |conn, access| {
            let graph = EntityGraph::cached(conn, access).map_err(ToolError::from)?;
            entities::resolve_dependency(&graph, &args.coordinate, &mapped).map(Json).map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "What an edit of an entity affects, one hop over depends_on, governs, implemented_by and \
                       affects; which of those no test covers (gaps); and its outbound dependencies on other \
                       repositories.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_impact_plan(
        &self,
        Parameters(args): Parameters<SlugArgs>,
    ) -> Result<Json<ImpactPlan>, ToolError> {
        let mapped = self.project.dependencies.clone();
        self.read(move |conn, access| {
            let graph = EntityGraph::cached(conn, access).map_err(ToolError::from)?;
            entities::impact_plan(&graph, &args.slug, &mapped).map(Json).map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "The impact plan of an entity with concrete test targets: for each gap the file to add a \
                       test to and the command that runs it; the existing tests to run.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_test_plan(&self, Parameters(args): Parameters<SlugArgs>) -> Result<Json<TestPlan>, ToolError> {
        let mapped = self.project.dependencies.clone();
        self.read(move |conn, access| {
            let graph = EntityGraph::cached(conn, access).map_err(ToolError::from)?;
            entities::test_plan(&graph, &args.slug, &mapped).map(Json).map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "A component's tests, and which of its public symbols they cover.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_coverage_for(
        &self,
        Parameters(args): Parameters<ComponentArgs>,
    ) -> Result<Json<Coverage>, ToolError> {
        self.read(move |conn, access| {
            let graph = EntityGraph::cached(conn, access).map_err(ToolError::from)?;
            entities::coverage_for(&graph, &args.component).map(Json).map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "The build that introduced an entity (its commit, branch, pull request and CI run as the \
                       build recorded them) and the changes to it since.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_which_pr_introduced(
        &self,
        Parameters(args): Parameters<SlugArgs>,
    ) -> Result<Json<Introduced>, ToolError> {
        self.read(move |conn, access| {
            entities::which_pr_introduced(conn, access, &args.slug).map(Json).map_err(ToolError::from)
        })
        .await
    }

    #[tool(
        description = "The newest entity changes (added, changed, removed, old -> new) the builds recorded.",
        annotations(read_only_hint = true)
    )]
    async fn knowledge_recent_entity_changes(
        &self,
        Parameters(args): Parameters<RecentChangesArgs>,
    ) -> Result<Json<EntityChanges>, ToolError> {
        let limit = args.limit.unwrap_or(50).clamp(1, 1000) as usize;
        self.read(move |conn, access| {
            entities::recent_changes(conn, access, limit)
                .map(|changes| Json(EntityChanges { changes }))
                .map_err(ToolError::from)
        })
        .await
    }
}
