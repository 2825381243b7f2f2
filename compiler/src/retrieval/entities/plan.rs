//! What an edit affects and which tests it needs: `impact_plan`, `test_plan` and `coverage_for`.
//!
//! The impact of an edit is one hop over `depends_on`, `governs`, `implemented_by` and `affects`: for a
//! component, the components that depend on it, the decisions that govern it and its public symbols; for a
//! symbol, its component and, when the symbol is public, the components that depend on that component; for
//! a decision, the components it governs; for a test, what it covers. An affected component or symbol that
//! no test covers is a coverage gap.

use std::collections::BTreeSet;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{EntityError, EntityGraph, EntityInfo, Fields, ResolvedDependency, resolve_dependency};

/// One entity an edit affects.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Affected {
    pub slug: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    pub name: String,
    /// How the edited entity reaches it: `depends_on`, `affects`, `governs`, `implemented_by`, `covers`.
    pub relation: String,
    /// The tests that cover it.
    pub covered_by: Vec<String>,
    /// A component or symbol no test covers.
    pub gap: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImpactPlan {
    pub entity: EntityInfo,
    /// The tests that cover the edited entity itself.
    pub covered_by: Vec<String>,
    pub affected: Vec<Affected>,
    /// The slugs, among the entity and the affected ones, that no test covers.
    pub gaps: Vec<String>,
    /// The edited component's (or its component's) dependencies outside this project, each resolved
    /// against the repositories `[dependencies]` maps.
    pub outbound: Vec<ResolvedDependency>,
}

/// A concrete test to write or run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TestTarget {
    /// `add` (a gap: write a test here) or `run` (an existing test that covers what the edit affects).
    pub action: String,
    /// The gap it closes, or the affected entity the test covers.
    pub for_slug: String,
    /// The file to add the test to, or the test's own slug.
    pub target: String,
    /// The command that runs it.
    pub command: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TestPlan {
    #[serde(flatten)]
    pub impact: ImpactPlan,
    pub targets: Vec<TestTarget>,
}

/// `coverage_for`: a component's tests, and which of its public symbols they cover.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Coverage {
    pub component: String,
    pub tests: Vec<String>,
    pub public_symbols: usize,
    pub covered_public_symbols: usize,
    pub uncovered: Vec<String>,
}

/// What a test could cover: a component, or a symbol of a library (an example's or a test helper's items
/// are no code to test).
fn is_gap_candidate(graph: &EntityGraph, index: usize) -> bool {
    matches!(&graph.nodes[index].fields, Fields::Component(_))
        || matches!(&graph.nodes[index].fields, Fields::Symbol(s) if s.symbol_kind != "module")
            && graph.target(index).is_none()
}

pub fn impact_plan(graph: &EntityGraph, slug: &str, mapped: &[(String, PathBuf)]) -> Result<ImpactPlan, EntityError> {
    let index = graph.find(slug)?;
    let mut reached: Vec<(usize, &str)> = Vec::new();
    let mut component_of_edit = None;
    match &graph.nodes[index].fields {
        Fields::Component(_) => {
            component_of_edit = Some(index);
            reached.extend(graph.dependents(index).into_iter().map(|c| (c, "affects")));
            reached.extend(graph.governing(index).into_iter().map(|d| (d, "governs")));
            reached.extend(
                graph.implementing(index).into_iter().filter(|&s| graph.is_api(s)).map(|s| (s, "implemented_by")),
            );
        }
        Fields::Symbol(_) => {
            if let Some(component) = graph.owner(index) {
                component_of_edit = Some(component);
                reached.push((component, "implemented_by"));
                if graph.is_api(index) {
                    reached.extend(graph.dependents(component).into_iter().map(|c| (c, "affects")));
                }
                reached.extend(graph.governing(component).into_iter().map(|d| (d, "governs")));
            }
        }
        Fields::Decision(_) => {
            reached.extend(graph.governed(index).into_iter().map(|c| (c, "governs")));
        }
        Fields::Test(_) => {
            if let Some((symbols, components)) = graph.covers.get(&index) {
                reached.extend(symbols.iter().chain(components).map(|&e| (e, "covers")));
            }
        }
    }
    let mut seen = BTreeSet::from([index]);
    reached.retain(|(e, _)| seen.insert(*e));
    let tests_of = |e: usize| graph.covered_by(e).iter().map(|&t| graph.slug(t).to_string()).collect::<Vec<_>>();
    let affected: Vec<Affected> = reached
        .iter()
        .map(|&(e, relation)| {
            let covered_by = tests_of(e);
            Affected {
                slug: graph.slug(e).to_string(),
                entity_type: graph.nodes[e].info.entity_type.clone(),
                name: graph.nodes[e].info.name.clone(),
                relation: relation.to_string(),
                gap: covered_by.is_empty() && is_gap_candidate(graph, e),
                covered_by,
            }
        })
        .collect();
    let covered_by = tests_of(index);
    let mut gaps: Vec<String> = Vec::new();
    if covered_by.is_empty() && is_gap_candidate(graph, index) {
        gaps.push(graph.slug(index).to_string());
    }
    gaps.extend(affected.iter().filter(|a| a.gap).map(|a| a.slug.clone()));
    // A component's edit lists all it needs from elsewhere; a symbol's only what another repository mapped
    // here provides, since that is where a change may have to follow (its crate's other dependencies are
    // not touched by an edit of one item).
    let mut outbound = Vec::new();
    if let Some(component) = component_of_edit {
        let edited_component = component == index;
        for (target, coordinate, scope) in graph.dependencies(component) {
            if target.is_none() && scope != "dev" {
                let resolved = resolve_dependency(graph, &coordinate, mapped)?;
                if edited_component || resolved.status == "mapped" {
                    outbound.push(resolved);
                }
            }
        }
    }
    Ok(ImpactPlan { entity: graph.nodes[index].info.clone(), covered_by, affected, gaps, outbound })
}

pub fn test_plan(graph: &EntityGraph, slug: &str, mapped: &[(String, PathBuf)]) -> Result<TestPlan, EntityError> {
    let impact = impact_plan(graph, slug, mapped)?;
    let mut targets = Vec::new();
    for gap in &impact.gaps {
        let index = graph.index_of(gap).expect("a gap is an entity of the graph");
        targets.push(add_target(graph, index));
    }
    // The existing tests to run: those that cover the edited entity or an affected symbol, each once; for a
    // component (edited or affected), its whole suite in one command rather than every test by name.
    let mut run = BTreeSet::new();
    let edited = std::iter::once((&impact.entity.slug, &impact.entity.entity_type, &impact.covered_by));
    let affected = impact.affected.iter().map(|a| (&a.slug, &a.entity_type, &a.covered_by));
    for (slug, entity_type, tests) in edited.chain(affected) {
        if entity_type == "component" {
            if !tests.is_empty() && run.insert(slug.clone()) {
                let index = graph.index_of(slug).expect("an affected component is an entity of the graph");
                let mut target = add_target(graph, index);
                target.action = "run".into();
                target.target = slug.clone();
                target.reason = format!("{} tests are in or import {slug}", tests.len());
                targets.push(target);
            }
            continue;
        }
        for test in tests {
            if run.insert(test.clone()) {
                let index = graph.index_of(test).expect("a covering test is an entity of the graph");
                targets.push(TestTarget {
                    action: "run".into(),
                    for_slug: slug.clone(),
                    target: test.clone(),
                    command: run_command(graph, index),
                    reason: format!("it covers {slug}"),
                });
            }
        }
    }
    Ok(TestPlan { impact, targets })
}

/// Where a test for a gap goes, and what runs it.
fn add_target(graph: &EntityGraph, index: usize) -> TestTarget {
    let node = &graph.nodes[index];
    let slug = node.info.slug.clone();
    let (ecosystem, component_name, root) = component_facts(
        graph,
        graph.owner(index).or(match node.fields {
            Fields::Component(_) => Some(index),
            _ => None,
        }),
    );
    let path = &node.info.anchor.path;
    let stem = path.rsplit_once('.').map_or(path.as_str(), |(stem, _)| stem);
    let extension = path.rsplit_once('.').map_or("", |(_, ext)| ext);
    let has_test_module =
        graph.nodes.iter().any(|n| n.info.anchor.path == *path && matches!(n.fields, Fields::Test(_)));
    let (target, reason) = match (&node.fields, extension) {
        (Fields::Component(_), _) => {
            let folder = join(&root, "tests");
            (folder, format!("no test is in or imports {}", node.info.name))
        }
        (_, "rs") if has_test_module => {
            (format!("{path} (its `mod tests`)"), format!("no test uses `{}`", node.info.name))
        }
        (_, "rs") => (format!("{path} (a new `#[cfg(test)] mod tests`)"), format!("no test uses `{}`", node.info.name)),
        (_, "py") => {
            let module = stem.rsplit('/').next().unwrap_or(stem);
            (join(&root, &format!("tests/test_{module}.py")), format!("no test uses `{}`", node.info.name))
        }
        (_, "go") => (format!("{stem}_test.go"), format!("no test uses `{}`", node.info.name)),
        (_, ext) => (format!("{stem}.test.{ext}"), format!("no test uses `{}`", node.info.name)),
    };
    let command = match ecosystem.as_str() {
        "cargo" => format!("cargo test -p {component_name}"),
        "pypi" => format!("pytest {}", if target.ends_with(".py") { target.as_str() } else { root.as_str() }),
        "go" => format!("go test ./{}", folder_of(path)),
        "npm" if root.is_empty() => "npm test".to_string(),
        "npm" => format!("npm test --prefix {root}"),
        _ => match extension {
            "rs" => "cargo test".to_string(),
            "py" => "pytest".to_string(),
            "go" => format!("go test ./{}", folder_of(path)),
            _ => "npm test".to_string(),
        },
    };
    TestTarget { action: "add".into(), for_slug: slug, target, command, reason }
}

/// The command that runs one existing test.
fn run_command(graph: &EntityGraph, test: usize) -> String {
    let node = &graph.nodes[test];
    let (ecosystem, component_name, _) = component_facts(graph, graph.owner(test));
    let path = &node.info.anchor.path;
    let qualified = node.info.slug.split_once('#').map_or(node.info.name.as_str(), |(_, q)| q);
    match path.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "rs" => {
            let package = if ecosystem == "cargo" { format!(" -p {component_name}") } else { String::new() };
            // An integration test, example or bench is a target of its own: `tests/NAME.rs`, or
            // `tests/NAME/main.rs` and its modules. The name filters by substring, so the module path above
            // the file need not be known.
            let target = match graph.target(test).and_then(|t| t.split_once('/')) {
                Some((folder, unit)) => {
                    let kind = match folder {
                        "examples" => "example",
                        "benches" => "bench",
                        _ => "test",
                    };
                    format!(" --{kind} {}", unit.trim_end_matches('/').trim_end_matches(".rs"))
                }
                None => String::new(),
            };
            format!("cargo test{package}{target} {qualified}")
        }
        "py" => format!("pytest {path}::{}", qualified.replace('.', "::")),
        "go" => format!("go test ./{} -run '^{}$'", folder_of(path), node.info.name),
        _ => format!("npx jest {path} -t '{}'", node.info.name.replace('\'', "\\'")),
    }
}

fn component_facts(graph: &EntityGraph, component: Option<usize>) -> (String, String, String) {
    match component.map(|c| (&graph.nodes[c].fields, &graph.nodes[c].info.name)) {
        Some((Fields::Component(p), name)) => (p.ecosystem.clone(), name.clone(), p.root.clone()),
        _ => (String::new(), String::new(), String::new()),
    }
}

fn join(root: &str, rest: &str) -> String {
    if root.is_empty() { rest.to_string() } else { format!("{root}/{rest}") }
}

fn folder_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(".", |(folder, _)| folder)
}

pub fn coverage_for(graph: &EntityGraph, component: &str) -> Result<Coverage, EntityError> {
    let index = graph.find(component)?;
    if !matches!(graph.nodes[index].fields, Fields::Component(_)) {
        return Err(EntityError::NotComponent(component.to_string()));
    }
    let public: Vec<usize> =
        graph.implementing(index).into_iter().filter(|&s| graph.is_api(s) && is_gap_candidate(graph, s)).collect();
    let mut tests: BTreeSet<String> = graph.covered_by(index).iter().map(|&t| graph.slug(t).to_string()).collect();
    for &symbol in &public {
        tests.extend(graph.covered_by(symbol).iter().map(|&t| graph.slug(t).to_string()));
    }
    let uncovered: Vec<String> =
        public.iter().filter(|&&s| graph.covered_by(s).is_empty()).map(|&s| graph.slug(s).to_string()).collect();
    Ok(Coverage {
        component: graph.slug(index).to_string(),
        tests: tests.into_iter().collect(),
        public_symbols: public.len(),
        covered_public_symbols: public.len() - uncovered.len(),
        uncovered,
    })
}
