//! Code entities as agents ask about them (docs/code.md): one entity with its relationships, the entities
//! of a type, and (in `plan`) what an edit affects and which tests it needs; (in `history`) what changed.
//!
//! The index stores each file's entities; the edges between them are resolved here, on every read, from
//! what the payloads record: a manifest's dependencies (`depends_on`, and its reverse `affects`), which
//! component's folder holds a file (`implemented_by`), the names a test uses and the files it imports
//! (`covers`), the components a decision names (`governs`). Only entities of sources the principal may
//! read are loaded, so no edge leads to a hidden one.

mod coverage;
mod history;
mod plan;

use coverage::cargo_target;

pub use history::{EntityChange, Introduced, recent_changes, which_pr_introduced};
pub use plan::{Affected, Coverage, ImpactPlan, TestPlan, TestTarget, coverage_for, impact_plan, test_plan};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use knowledge_queries::code::{
    ComponentPayload, DecisionPayload, EntityType, SymbolPayload, TestPayload, UseItem, use_items,
};
use rusqlite::Connection;
use rustc_hash::{FxHashMap, FxHashSet};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::retrieval::access::Access;

#[derive(Debug, thiserror::Error)]
pub enum EntityError {
    #[error("no entity `{0}` (see `knowledge entity list`)")]
    NotFound(String),
    #[error("unknown entity type `{0}`; the types are component, symbol, api, test, decision")]
    UnknownType(String),
    #[error("`{0}` is not a component")]
    NotComponent(String),
    /// Two manifests name their packages alike (`component/bar` in two fixture folders): each is named by
    /// its folder instead.
    #[error("`{slug}` names {} entities; name one of them: {}", .candidates.len(), .candidates.join(", "))]
    Ambiguous { slug: String, candidates: Vec<String> },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// One entity with its anchor: where in which revision of which file it is defined.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EntityInfo {
    pub slug: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    pub name: String,
    /// The component whose folder holds the entity's file (none for a component, or a file outside every
    /// component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The type's fields (docs/code.md).
    pub payload: serde_json::Value,
    pub anchor: Anchor,
}

/// Where an entity is defined: the source, its revision, lines and byte offsets, and the citation ref
/// `file://PATH@REV#Lstart-Lend` that `knowledge get` resolves.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Anchor {
    pub path: String,
    pub revision: String,
    pub start_line: u32,
    pub end_line: u32,
    pub start_offset: u32,
    pub end_offset: u32,
    pub source_ref: String,
}

/// A relationship of an entity, seen from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Relationship {
    /// `depends_on`, `implemented_by`, `covers`, `governs` or `affects`.
    pub relation: String,
    /// `outgoing` (this entity depends on, is implemented by, covers, governs, affects the other) or
    /// `incoming`.
    pub direction: String,
    /// The other entity, when it is in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// For an external dependency: `crates.io:serde@1`, `npm:react@^18`, `pypi:requests@>=2`, `go:…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinate: Option<String>,
    /// Why the edge holds, in a few words.
    pub because: String,
}

/// `get_entity`: the entity, its relationships, and its provenance.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EntityDetail {
    #[serde(flatten)]
    pub entity: EntityInfo,
    /// At most the limit of each relation and direction (default [`RELATIONSHIP_LIMIT`]), in path order.
    pub relationships: Vec<Relationship>,
    /// How many relationships of each `relation direction` the limit left out (a large component's
    /// `implemented_by outgoing`); absent when none was.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub omitted: BTreeMap<String, usize>,
}

/// The relationships of one relation and direction an entity's detail lists by default: enough to read,
/// where a large crate's component has thousands (tokio's: 6,282 symbols and 1,671 tests, 1.6 MB of JSON).
/// Its impact, test plan and coverage answer for all of them.
pub const RELATIONSHIP_LIMIT: usize = 100;

/// `knowledge entity stats`: entity counts by type and edge counts by relation.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EntityStats {
    pub entities: BTreeMap<String, usize>,
    pub edges: BTreeMap<String, usize>,
    pub external_dependencies: usize,
}

/// The typed payload of a loaded entity.
#[derive(Debug, Clone)]
pub(crate) enum Fields {
    Component(ComponentPayload),
    Symbol(SymbolPayload),
    Test(TestPayload),
    Decision(DecisionPayload),
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) info: EntityInfo,
    pub(crate) fields: Fields,
}

/// Every entity the principal may read, with the edges resolved between them.
pub struct EntityGraph {
    pub(crate) nodes: Vec<Node>,
    by_slug: FxHashMap<String, usize>,
    /// Slugs more than one entity carries (packages of one name in two folders).
    repeated: FxHashSet<String>,
    components: Vec<usize>,
    /// The component each node's file belongs to.
    owner: Vec<Option<usize>>,
    /// For a Rust file of a Cargo package outside its library: the separate target it belongs to
    /// (`tests/sync_mutex.rs`, `tests/common/`, `examples/calc/`, `build.rs`), which is a crate of its own.
    target: Vec<Option<String>>,
    /// For each test: the symbols and the components it covers.
    covers: FxHashMap<usize, (Vec<usize>, Vec<usize>)>,
    /// For each symbol or component: the tests that cover it.
    covered_by: FxHashMap<usize, Vec<usize>>,
}

impl EntityGraph {
    /// The graph of what the principal may read, from a cache that lives as long as the process and holds
    /// the latest index state it saw for each set of hidden sources: the server answers entity requests
    /// without reloading the graph until a build commits (another `last_run`). A graph is only ever read.
    pub fn cached(conn: &Connection, access: &Access) -> Result<Arc<EntityGraph>, EntityError> {
        type Key = (String, Vec<i64>);
        type Cache = Mutex<HashMap<Key, (String, Arc<EntityGraph>)>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let run = crate::store::meta(conn, "last_run")?.unwrap_or_default();
        let key = (conn.path().unwrap_or_default().to_string(), access.hidden_sources().to_vec());
        let cache = CACHE.get_or_init(Cache::default);
        if let Some((seen, graph)) = cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key)
            && *seen == run
        {
            return Ok(graph.clone());
        }
        let graph = Arc::new(EntityGraph::load(conn, access)?);
        let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
        // Graphs of older index states are never asked for again.
        cache.retain(|_, (seen, _)| *seen == run);
        cache.insert(key, (run, graph.clone()));
        Ok(graph)
    }

    /// Loads the readable entities of the index and resolves their edges.
    pub fn load(conn: &Connection, access: &Access) -> Result<EntityGraph, EntityError> {
        let mut nodes = Vec::new();
        for row in crate::store::entity_rows(conn, access.hidden_sources())? {
            let crate::store::EntityRow { slug, entity_type, name, payload, path, revision, .. } = row;
            let anchor = Anchor {
                source_ref: crate::retrieval::context::citation_ref(&path, &revision, row.start_line, row.end_line),
                path,
                revision,
                start_line: row.start_line,
                end_line: row.end_line,
                start_offset: row.start_offset,
                end_offset: row.end_offset,
            };
            let fields = match EntityType::parse(&entity_type) {
                Some(EntityType::Component) => serde_json::from_str(&payload).ok().map(Fields::Component),
                Some(EntityType::Symbol) => serde_json::from_str(&payload).ok().map(Fields::Symbol),
                Some(EntityType::Test) => serde_json::from_str(&payload).ok().map(Fields::Test),
                Some(EntityType::Decision) => serde_json::from_str(&payload).ok().map(Fields::Decision),
                None => None,
            };
            // A payload this binary cannot read comes from another version's index, which a build replaces.
            let Some(fields) = fields else { continue };
            let payload = serde_json::from_str(&payload).unwrap_or_default();
            nodes.push(Node { info: EntityInfo { slug, entity_type, name, component: None, payload, anchor }, fields });
        }
        Ok(EntityGraph::resolve(nodes))
    }

    fn resolve(mut nodes: Vec<Node>) -> EntityGraph {
        // The first entity of a slug answers for it inside the graph, as its edges were resolved.
        let mut by_slug: FxHashMap<String, usize> = FxHashMap::default();
        let mut repeated = FxHashSet::default();
        for (index, node) in nodes.iter().enumerate() {
            if *by_slug.entry(node.info.slug.clone()).or_insert(index) != index {
                repeated.insert(node.info.slug.clone());
            }
        }
        let components: Vec<usize> =
            (0..nodes.len()).filter(|&i| matches!(nodes[i].fields, Fields::Component(_))).collect();
        // A file belongs to a component of its own language's ecosystem: a Cargo workspace at the root does
        // not own the TypeScript beside it. Components and decisions belong to none.
        let owner: Vec<Option<usize>> = nodes
            .iter()
            .map(|node| match node.fields {
                Fields::Symbol(_) | Fields::Test(_) => owning_component(&nodes, &components, &node.info.anchor.path),
                Fields::Component(_) | Fields::Decision(_) => None,
            })
            .collect();
        for index in 0..nodes.len() {
            if let Some(c) = owner[index] {
                nodes[index].info.component = Some(nodes[c].info.slug.clone());
            }
        }
        let target = (0..nodes.len()).map(|i| owner[i].and_then(|c| cargo_target(&nodes[c], &nodes[i]))).collect();
        let mut graph = EntityGraph {
            nodes,
            by_slug,
            repeated,
            components,
            owner,
            target,
            covers: FxHashMap::default(),
            covered_by: FxHashMap::default(),
        };
        graph.resolve_covers();
        graph
    }

    /// A slug, or a component named by its folder (`component/queries` for the crate in `queries/`).
    pub(crate) fn index_of(&self, slug: &str) -> Option<usize> {
        self.by_slug.get(slug).copied().or_else(|| {
            let folder = slug.strip_prefix("component/")?;
            self.components.iter().copied().find(|&c| match &self.nodes[c].fields {
                Fields::Component(payload) => payload.root == folder || payload.root.rsplit('/').next() == Some(folder),
                _ => false,
            })
        })
    }

    /// The entity a user names: a slug only one entity carries, or a component's folder. A slug several
    /// entities carry is refused with the names that tell them apart.
    pub(crate) fn find(&self, slug: &str) -> Result<usize, EntityError> {
        if self.repeated.contains(slug) {
            let candidates = (0..self.nodes.len())
                .filter(|&index| self.nodes[index].info.slug == slug)
                .map(|index| match &self.nodes[index].fields {
                    Fields::Component(payload) => format!("component/{}", payload.root),
                    _ => self.nodes[index].info.anchor.source_ref.clone(),
                })
                .collect();
            return Err(EntityError::Ambiguous { slug: slug.to_string(), candidates });
        }
        self.index_of(slug).ok_or_else(|| EntityError::NotFound(slug.to_string()))
    }

    /// The entity and its relationships, at most `limit` of each relation and direction (0: all), with the
    /// counts of those left out.
    pub fn detail(&self, slug: &str, limit: usize) -> Result<EntityDetail, EntityError> {
        let index = self.find(slug)?;
        let mut kept: BTreeMap<String, usize> = BTreeMap::new();
        let mut omitted: BTreeMap<String, usize> = BTreeMap::new();
        let mut relationships = self.relationships(index);
        relationships.retain(|edge| {
            let key = format!("{} {}", edge.relation, edge.direction);
            let count = kept.entry(key.clone()).or_default();
            *count += 1;
            let keep = limit == 0 || *count <= limit;
            if !keep {
                *omitted.entry(key).or_default() += 1;
            }
            keep
        });
        Ok(EntityDetail { entity: self.nodes[index].info.clone(), relationships, omitted })
    }

    pub(crate) fn slug(&self, index: usize) -> &str {
        &self.nodes[index].info.slug
    }

    pub(crate) fn owner(&self, index: usize) -> Option<usize> {
        self.owner[index]
    }

    /// The Cargo target outside the library that the entity's file belongs to (`tests/sync_mutex.rs`).
    pub(crate) fn target(&self, index: usize) -> Option<&str> {
        self.target[index].as_deref()
    }

    /// A public symbol of its component's library: its API. Items of tests, examples, benches and build
    /// scripts are crates of their own, never the library's API.
    pub(crate) fn is_api(&self, index: usize) -> bool {
        matches!(&self.nodes[index].fields, Fields::Symbol(s) if s.visibility == "public")
            && self.target[index].is_none()
    }

    pub(crate) fn covered_by(&self, index: usize) -> &[usize] {
        self.covered_by.get(&index).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn component_indexes(&self) -> &[usize] {
        &self.components
    }

    /// The internal component a dependency names, preferring the depending component's own ecosystem.
    fn dependency_target(&self, ecosystem: &str, name: &str) -> Option<usize> {
        let named = |c: &usize| self.nodes[*c].info.name == name;
        let ecosystem_of = |c: usize| match &self.nodes[c].fields {
            Fields::Component(p) => p.ecosystem.as_str(),
            _ => "",
        };
        self.components
            .iter()
            .copied()
            .filter(named)
            .find(|&c| ecosystem_of(c) == ecosystem)
            .or_else(|| self.components.iter().copied().find(named))
    }

    /// A component's dependencies: internal ones as entity indexes, external ones as coordinates (with
    /// `workspace = true` requirements read from the workspace that declares them).
    pub(crate) fn dependencies(&self, component: usize) -> Vec<(Option<usize>, String, String)> {
        let Fields::Component(payload) = &self.nodes[component].fields else { return Vec::new() };
        // A workspace's `[workspace.dependencies]` are requirements its members may inherit, not what the
        // workspace depends on: a member that uses one lists it as its own.
        payload
            .dependencies
            .iter()
            .filter(|dependency| dependency.scope != "workspace")
            .map(|dependency| match self.dependency_target(&payload.ecosystem, &dependency.name) {
                Some(target) if target != component && self.may_be_internal(&payload.ecosystem, dependency) => {
                    (Some(target), String::new(), dependency.scope.clone())
                }
                _ => {
                    let mut dependency = dependency.clone();
                    if dependency.requirement == "workspace"
                        && let Some(version) = self.workspace_requirement(&dependency.name)
                    {
                        dependency.requirement = version;
                    }
                    (None, dependency.coordinate(&payload.ecosystem), dependency.scope.clone())
                }
            })
            .collect()
    }

    fn workspace_requirement(&self, name: &str) -> Option<String> {
        self.workspace_dependency(name).map(|d| d.requirement.clone())
    }

    /// A workspace's `[workspace.dependencies]` entry for `name`: a virtual workspace's, or a root package's
    /// that is also the workspace.
    fn workspace_dependency(&self, name: &str) -> Option<&knowledge_queries::code::Dependency> {
        self.components.iter().find_map(|&c| match &self.nodes[c].fields {
            Fields::Component(p) => p.dependencies.iter().find(|d| d.scope == "workspace" && d.name == name),
            _ => None,
        })
    }

    /// Whether a dependency can be a component here: Cargo takes one from the tree only by `path` (its own,
    /// or through `workspace = true` its workspace entry's); `rustc-hash = "2"` comes from crates.io even
    /// where a crate of that name sits in the repository. Other ecosystems resolve by name.
    fn may_be_internal(&self, ecosystem: &str, dependency: &knowledge_queries::code::Dependency) -> bool {
        ecosystem != "cargo"
            || dependency.path.is_some()
            || (dependency.requirement == "workspace"
                && self.workspace_dependency(&dependency.name).is_some_and(|d| d.path.is_some()))
    }

    /// The components that depend on `component`.
    pub(crate) fn dependents(&self, component: usize) -> Vec<usize> {
        self.components
            .iter()
            .copied()
            .filter(|&c| c != component && self.dependencies(c).iter().any(|(target, ..)| *target == Some(component)))
            .collect()
    }

    /// The decisions that govern `component`.
    pub(crate) fn governing(&self, component: usize) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&d| self.governs(d, component)).collect()
    }

    /// The components `decision` governs.
    pub(crate) fn governed(&self, decision: usize) -> Vec<usize> {
        self.components.iter().copied().filter(|&c| self.governs(decision, c)).collect()
    }

    /// Whether a decision governs a component: it lists it in `components`, or its text names it.
    fn governs(&self, decision: usize, component: usize) -> bool {
        let (Fields::Decision(decision), Fields::Component(payload)) =
            (&self.nodes[decision].fields, &self.nodes[component].fields)
        else {
            return false;
        };
        let name = self.nodes[component].info.name.to_lowercase();
        let folder_name = payload.root.rsplit('/').next().unwrap_or("").to_lowercase();
        decision.components.iter().any(|c| {
            let c = c.trim().to_lowercase();
            c == name || (!folder_name.is_empty() && c == folder_name)
        }) || (payload.component_kind != "workspace" && name.len() >= 3 && decision.terms.binary_search(&name).is_ok())
    }

    /// The symbols whose file belongs to `component`.
    pub(crate) fn implementing(&self, component: usize) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&s| self.owner[s] == Some(component) && matches!(self.nodes[s].fields, Fields::Symbol(_)))
            .collect()
    }

    fn relationships(&self, index: usize) -> Vec<Relationship> {
        let edge = |relation: &str, direction: &str, other: usize, because: String| Relationship {
            relation: relation.to_string(),
            direction: direction.to_string(),
            slug: Some(self.slug(other).to_string()),
            coordinate: None,
            because,
        };
        let mut edges = Vec::new();
        match &self.nodes[index].fields {
            Fields::Component(_) => {
                for (target, coordinate, scope) in self.dependencies(index) {
                    edges.push(match target {
                        Some(target) => {
                            edge("depends_on", "outgoing", target, format!("a {scope} dependency in the manifest"))
                        }
                        None => Relationship {
                            relation: "depends_on".into(),
                            direction: "outgoing".into(),
                            slug: None,
                            coordinate: Some(coordinate),
                            because: format!("a {scope} dependency in the manifest, not a component here"),
                        },
                    });
                }
                for dependent in self.dependents(index) {
                    edges.push(edge("affects", "outgoing", dependent, "it depends on this component".into()));
                }
                for symbol in self.implementing(index) {
                    edges.push(edge(
                        "implemented_by",
                        "outgoing",
                        symbol,
                        "its file is in the component's folder".into(),
                    ));
                }
                for decision in self.governing(index) {
                    edges.push(edge("governs", "incoming", decision, "the decision names the component".into()));
                }
                for &test in self.covered_by(index) {
                    edges.push(edge("covers", "incoming", test, "the test is in or imports the component".into()));
                }
            }
            Fields::Symbol(_) => {
                if let Some(component) = self.owner[index] {
                    edges.push(edge(
                        "implemented_by",
                        "incoming",
                        component,
                        "its file is in the component's folder".into(),
                    ));
                }
                for &test in self.covered_by(index) {
                    edges.push(edge("covers", "incoming", test, "the test's body uses its name".into()));
                }
            }
            Fields::Test(_) => {
                if let Some((symbols, components)) = self.covers.get(&index) {
                    for &symbol in symbols {
                        edges.push(edge("covers", "outgoing", symbol, "the test's body uses its name".into()));
                    }
                    for &component in components {
                        edges.push(edge(
                            "covers",
                            "outgoing",
                            component,
                            "the test is in or imports the component".into(),
                        ));
                    }
                }
            }
            Fields::Decision(_) => {
                for component in self.governed(index) {
                    edges.push(edge("governs", "outgoing", component, "the decision names the component".into()));
                }
            }
        }
        edges
    }

    /// How many entities of each type the principal may read, and how many edges of each relation join
    /// them (each edge once, from its outgoing end; an external dependency counts under `depends_on` and
    /// again under `external_dependencies`).
    #[must_use]
    pub fn stats(&self) -> EntityStats {
        let mut stats = EntityStats::default();
        for (index, node) in self.nodes.iter().enumerate() {
            *stats.entities.entry(node.info.entity_type.clone()).or_default() += 1;
            for edge in self.relationships(index).into_iter().filter(|edge| edge.direction == "outgoing") {
                *stats.edges.entry(edge.relation).or_default() += 1;
                stats.external_dependencies += usize::from(edge.coordinate.is_some());
            }
        }
        stats
    }

    /// `list_entities`: every entity of a type (`api`: the libraries' public symbols), in path order.
    pub fn list(&self, entity_type: Option<&str>) -> Result<Vec<EntityInfo>, EntityError> {
        let wanted = match entity_type {
            None | Some("api") => None,
            Some(name) => Some(EntityType::parse(name).ok_or_else(|| EntityError::UnknownType(name.to_string()))?),
        };
        Ok((0..self.nodes.len())
            .filter(|&i| match (entity_type, wanted) {
                (Some("api"), _) => self.is_api(i),
                (_, Some(wanted)) => self.nodes[i].info.entity_type == wanted.as_str(),
                _ => true,
            })
            .map(|i| self.nodes[i].info.clone())
            .collect())
    }
}

/// The ecosystem whose manifests own a file of this path's language.
fn ecosystem_of(path: &str) -> Option<&'static str> {
    use knowledge_queries::code::Language;
    Some(match Language::from_path(path)? {
        Language::Rust => "cargo",
        Language::Python => "pypi",
        Language::Go => "go",
        Language::TypeScript | Language::Tsx | Language::JavaScript => "npm",
    })
}

/// The component of the file's ecosystem with the deepest folder that holds `path`.
fn owning_component(nodes: &[Node], components: &[usize], path: &str) -> Option<usize> {
    let ecosystem = ecosystem_of(path);
    components
        .iter()
        .copied()
        .filter(|&c| match &nodes[c].fields {
            Fields::Component(p) => {
                ecosystem.is_none_or(|e| e == p.ecosystem)
                    && (p.root.is_empty() || path.starts_with(&format!("{}/", p.root)))
            }
            _ => false,
        })
        .max_by_key(|&c| match &nodes[c].fields {
            // Deeper first; between a package and a workspace at one folder, the package.
            Fields::Component(p) => (p.root.len(), p.component_kind == "package"),
            _ => (0, false),
        })
}

fn folder(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// `folder` joined with a relative import (`../src/cache`), normalized.
fn join_relative(folder: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// `[dependencies]` of kc.toml: other repositories' indexes, by name, for `resolve_dependency`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ResolvedDependency {
    pub coordinate: String,
    /// `internal` (a component of this project), `mapped` (a component of a repository `[dependencies]`
    /// maps), or `external`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<EntityInfo>,
}

/// `resolve_dependency`: whether a coordinate (`crates.io:serde@1`, or a bare name) names a component of
/// this project or of a repository `[dependencies]` maps to its index. Query time only: each mapped index
/// is opened read-only, as the default principal of that index would read it.
pub fn resolve_dependency(
    graph: &EntityGraph,
    coordinate: &str,
    mapped: &[(String, PathBuf)],
) -> Result<ResolvedDependency, EntityError> {
    let name = coordinate.split_once(':').map_or(coordinate, |(_, rest)| rest);
    let name = match name.rsplit_once('@') {
        // A scoped npm name (`@app/web`) keeps its leading `@`.
        Some((name, _)) if !name.is_empty() => name,
        _ => name,
    };
    let found = |graph: &EntityGraph| {
        graph
            .component_indexes()
            .iter()
            .find(|&&c| graph.nodes[c].info.name == name)
            .map(|&c| graph.nodes[c].info.clone())
    };
    if let Some(entity) = found(graph) {
        return Ok(ResolvedDependency {
            coordinate: coordinate.into(),
            status: "internal".into(),
            repository: None,
            entity: Some(entity),
        });
    }
    for (repository, index) in mapped {
        // A mapped index that is missing or unreadable resolves nothing; the others still answer.
        let Ok(conn) = crate::store::open_read_only(index) else { continue };
        let Ok(access) = Access::load(&conn, None) else { continue };
        let other = EntityGraph::load(&conn, &access)?;
        if let Some(entity) = found(&other) {
            return Ok(ResolvedDependency {
                coordinate: coordinate.into(),
                status: "mapped".into(),
                repository: Some(repository.clone()),
                entity: Some(entity),
            });
        }
    }
    Ok(ResolvedDependency { coordinate: coordinate.into(), status: "external".into(), repository: None, entity: None })
}

#[cfg(test)]
mod tests {
    use super::coverage::leads_to;
    use knowledge_queries::code::SymbolPayload;

    #[test]
    fn an_import_path_leads_to_the_modules_below_it() {
        let symbol = |module: &str, container: Option<&str>| SymbolPayload {
            language: "rust".into(),
            symbol_kind: "method".into(),
            visibility: "public".into(),
            module: module.into(),
            container: container.map(Into::into),
            signature: String::new(),
        };
        let mutex = symbol("sync::mutex", Some("Mutex"));
        assert!(leads_to(Some(&["sync"]), &mutex));
        assert!(leads_to(Some(&[]), &mutex), "a re-export at the crate root");
        assert!(!leads_to(Some(&["loom", "sync"]), &mutex), "tokio's loom shim is another Mutex");
        assert!(leads_to(None, &mutex), "a relative path");
        assert!(leads_to(Some(&["sync"]), &symbol("crate", Some("sync::Mutex"))), "an inline module");
    }
}
