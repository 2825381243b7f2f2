//! `knowledge entity list|get|impact|test-plan|coverage|resolve|changes|introduced`: the code entities a
//! build with `[code]` derived, their relationships, and the plans agents make from them.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::escape;
use knowledge::retrieval::entities::{self, EntityDetail, EntityGraph, EntityInfo, ImpactPlan, TestPlan};

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct Common {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum EntityCommand {
    /// The entities of a type (component, symbol, api for public symbols, test, decision), or all.
    List {
        entity_type: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// How many entities of each type the index holds, and how many edges of each relation join them.
    Stats {
        #[command(flatten)]
        common: Common,
    },
    /// One entity: its payload, anchor, provenance and relationships.
    Get {
        slug: String,
        /// At most this many relationships of each relation and direction (0: all).
        #[arg(long, default_value_t = entities::RELATIONSHIP_LIMIT)]
        limit: usize,
        #[command(flatten)]
        common: Common,
    },
    /// What an edit of the entity affects (one hop), which of those no test covers, and its outbound
    /// dependencies on other repositories.
    Impact {
        slug: String,
        #[command(flatten)]
        common: Common,
    },
    /// The impact plan with concrete test targets: where to add a test for each gap, which tests to run.
    TestPlan {
        slug: String,
        #[command(flatten)]
        common: Common,
    },
    /// A component's tests and which of its public symbols they cover.
    Coverage {
        component: String,
        #[command(flatten)]
        common: Common,
    },
    /// Whether a dependency coordinate (`crates.io:serde@1`, or a name) is a component here or in a
    /// repository kc.toml's `[dependencies]` maps.
    Resolve {
        coordinate: String,
        #[command(flatten)]
        common: Common,
    },
    /// The newest entity changes the builds recorded.
    Changes {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        common: Common,
    },
    /// The build (commit, pull request) that introduced an entity, and what changed it since.
    Introduced {
        slug: String,
        #[command(flatten)]
        common: Common,
    },
}

fn line(out: &mut impl Write, entity: &EntityInfo) -> std::io::Result<()> {
    writeln!(out, "{}  {}  {}", escape(&entity.slug), escape(&entity.name), escape(&entity.anchor.source_ref))
}

/// An entity's detail: its line, type and revision, component, fields and relationships.
fn write_detail(out: &mut impl Write, detail: &EntityDetail) -> std::io::Result<()> {
    line(out, &detail.entity)?;
    writeln!(out, "type {}  revision {}", detail.entity.entity_type, detail.entity.anchor.revision)?;
    if let Some(component) = &detail.entity.component {
        writeln!(out, "component {}", escape(component))?;
    }
    writeln!(out, "{}", escape(&serde_json::to_string(&detail.entity.payload).unwrap_or_default()))?;
    for edge in &detail.relationships {
        let other = edge.slug.as_deref().or(edge.coordinate.as_deref()).unwrap_or("");
        let arrow = if edge.direction == "outgoing" { "->" } else { "<-" };
        writeln!(out, "  {} {arrow} {}  ({})", edge.relation, escape(other), escape(&edge.because))?;
    }
    for (relation, count) in &detail.omitted {
        writeln!(out, "  … {count} more {relation} (--limit 0 lists all)")?;
    }
    Ok(())
}

/// What changing an entity affects, and the gaps no test covers.
fn write_impact(out: &mut impl Write, plan: &ImpactPlan) -> std::io::Result<()> {
    line(out, &plan.entity)?;
    for affected in &plan.affected {
        let gap = if affected.gap { "  GAP: no test covers it" } else { "" };
        writeln!(out, "  {} {}{gap}", affected.relation, escape(&affected.slug))?;
    }
    for dependency in &plan.outbound {
        let whence = match &dependency.repository {
            Some(repository) => format!("{} in {}", dependency.status, escape(repository)),
            None => dependency.status.clone(),
        };
        writeln!(out, "  outbound {} ({whence})", escape(&dependency.coordinate))?;
    }
    writeln!(out, "{} gaps", plan.gaps.len())
}

/// The tests to run or write for a change to an entity, each with its command.
fn write_test_plan(out: &mut impl Write, plan: &TestPlan) -> std::io::Result<()> {
    line(out, &plan.impact.entity)?;
    for target in &plan.targets {
        writeln!(
            out,
            "  {} {}  for {}: {}\n    $ {}",
            target.action,
            escape(&target.target),
            escape(&target.for_slug),
            escape(&target.reason),
            escape(&target.command)
        )?;
    }
    Ok(())
}

/// Entities by type and edges by relation.
fn write_stats(out: &mut impl Write, stats: &entities::EntityStats) -> std::io::Result<()> {
    for (entity_type, count) in &stats.entities {
        writeln!(out, "{entity_type:<10} {count}")?;
    }
    for (relation, count) in &stats.edges {
        writeln!(out, "{relation:<15} {count} edges")?;
    }
    writeln!(out, "{} external dependencies", stats.external_dependencies)
}

/// A component's tests and the public symbols they leave uncovered.
fn write_coverage(out: &mut impl Write, coverage: &entities::Coverage) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} tests; {} of {} public symbols covered",
        escape(&coverage.component),
        coverage.tests.len(),
        coverage.covered_public_symbols,
        coverage.public_symbols
    )?;
    coverage.uncovered.iter().try_for_each(|slug| writeln!(out, "  uncovered {}", escape(slug)))
}

/// The build that added an entity, and the changes since.
fn write_introduced(out: &mut impl Write, slug: &str, introduced: &entities::Introduced) -> std::io::Result<()> {
    let commit = introduced.commit.as_deref().unwrap_or("unknown commit");
    let pr = introduced.pull_request.as_deref().map_or(String::new(), |pr| format!(", pull request {pr}"));
    writeln!(out, "{} added by run {} ({commit}{pr})", escape(slug), introduced.introduced.run_id)?;
    introduced.later_changes.iter().try_for_each(|c| writeln!(out, "  then {} by run {}", c.change, c.run_id))
}

pub(crate) fn run(command: EntityCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    let mapped =
        || knowledge::config::Project::discover(&at.start).map(|p| p.mapped_dependencies()).unwrap_or_default();
    match command {
        EntityCommand::List { entity_type, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let list = EntityGraph::load(&conn, &access)?.list(entity_type.as_deref())?;
            print(common.json, &list, |out| list.iter().try_for_each(|entity| line(out, entity)))?;
        }
        EntityCommand::Stats { common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let stats = EntityGraph::load(&conn, &access)?.stats();
            print(common.json, &stats, |out| write_stats(out, &stats))?;
        }
        EntityCommand::Get { slug, limit, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let detail = EntityGraph::load(&conn, &access)?.detail(&slug, limit)?;
            print(common.json, &detail, |out| write_detail(out, &detail))?;
        }
        EntityCommand::Impact { slug, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let plan = entities::impact_plan(&EntityGraph::load(&conn, &access)?, &slug, &mapped())?;
            print(common.json, &plan, |out| write_impact(out, &plan))?;
        }
        EntityCommand::TestPlan { slug, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let plan = entities::test_plan(&EntityGraph::load(&conn, &access)?, &slug, &mapped())?;
            print(common.json, &plan, |out| write_test_plan(out, &plan))?;
        }
        EntityCommand::Coverage { component, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let coverage = entities::coverage_for(&EntityGraph::load(&conn, &access)?, &component)?;
            print(common.json, &coverage, |out| write_coverage(out, &coverage))?;
        }
        EntityCommand::Resolve { coordinate, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let resolved = entities::resolve_dependency(&EntityGraph::load(&conn, &access)?, &coordinate, &mapped())?;
            print(common.json, &resolved, |out| {
                let at = resolved.entity.as_ref().map_or(String::new(), |e| format!(" {}", e.anchor.source_ref));
                let repository = resolved.repository.as_deref().map_or(String::new(), |r| format!(" in {r}"));
                writeln!(out, "{}: {}{repository}{}", escape(&resolved.coordinate), resolved.status, escape(&at))
            })?;
            if resolved.status == "external" {
                return Ok(ExitCode::from(1));
            }
        }
        EntityCommand::Changes { limit, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let changes = entities::recent_changes(&conn, &access, limit)?;
            print(common.json, &changes, |out| {
                changes.iter().try_for_each(|c| writeln!(out, "{}  {} {}", c.run_id, c.change, escape(&c.slug)))
            })?;
        }
        EntityCommand::Introduced { slug, common } => {
            let (_, conn, access) = open_as(common.db, &at.start, at.principal())?;
            let introduced = entities::which_pr_introduced(&conn, &access, &slug)?;
            print(common.json, &introduced, |out| write_introduced(out, &slug, &introduced))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
