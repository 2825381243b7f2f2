//! `knowledge build`: one build, `--check` (what a build would do, written nowhere), or `--watch`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use knowledge::build::Compiler;
use knowledge::config::Project;
use knowledge::escape;

use super::Invocation;
use super::output::{print, print_build};
use super::progress::{Bars, Quiet};

#[derive(clap::Args)]
pub(crate) struct BuildArgs {
    /// Print the build summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Write nothing; exit 1 when a build would change the index, listing why (a CI gate).
    #[arg(long, conflicts_with = "watch")]
    check: bool,
    /// Keep running: watch the project and build again after each change, one line per build.
    #[arg(long)]
    watch: bool,
    /// Publish the committed index to this Postgres store (else `KNOWLEDGE_STORE_URL`, else `[store] url`).
    #[arg(long, value_name = "URL", conflicts_with_all = ["check", "watch"])]
    store: Option<String>,
}

pub(crate) fn run(args: BuildArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let mut project = Project::discover(&at.start)?;
    if let Some(url) = args.store {
        anyhow::ensure!(knowledge::config::is_postgres_url(&url), "--store is `postgres://USER@HOST:PORT/DATABASE`");
        project.config.store.from_command_line = Some(url);
    }
    if args.watch {
        let root = project.root.clone();
        knowledge::build::watch::watch(&project.config_path, &Quiet, |rebuild| {
            print_rebuild(args.json, &root, rebuild).is_ok()
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.check {
        return check(&project, args.json);
    }
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let mut compiler = Compiler::new();
    let summary =
        if show_progress { compiler.build(&project, &Bars::default())? } else { compiler.build(&project, &Quiet)? };
    // The process ends after printing: freeing the query graph's inputs and memos one by one would only
    // delay that (about 0.3 ms of a one-file dendron-vault build, by a profile).
    std::mem::forget(compiler);
    let mut stderr = std::io::stderr().lock();
    for skipped in &summary.skipped {
        writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
    }
    for path in &summary.blocked {
        writeln!(stderr, "warning: not writing `{}`: a file the build did not generate is in its place", escape(path))?;
    }
    if let Some(writer) = &summary.wiki_writer
        && let Some(failure) = &writer.failure
    {
        writeln!(
            stderr,
            "warning: the wiki writer stopped ({} pages keep their extractive summary; the next build writes them): {}",
            writer.owed,
            escape(failure)
        )?;
    }
    if let Some(reason) = summary.embeddings.as_ref().and_then(|e| e.degraded.as_ref()) {
        writeln!(stderr, "warning: embeddings incomplete, semantic search is degraded: {reason}")?;
    }
    print(args.json, &summary, |out| print_build(out, &project.root, &summary))?;
    Ok(ExitCode::SUCCESS)
}

/// `--check`: exit 1 when a build would change the index, listing why.
fn check(project: &Project, json: bool) -> anyhow::Result<ExitCode> {
    let check = knowledge::build::check(project)?;
    print(json, &check, |out| {
        if let Some(reason) = &check.reason {
            writeln!(out, "every source would be re-derived: {reason}")?;
        }
        for work in &check.work {
            writeln!(out, "would run: {work}")?;
        }
        for (label, paths) in [("added", &check.added), ("changed", &check.changed), ("removed", &check.removed)] {
            for path in paths {
                writeln!(out, "{label}: {}", escape(path))?;
            }
        }
        for drift in &check.artifacts {
            writeln!(out, "{}: {} (generated)", drift.state, escape(&drift.path))?;
        }
        if let Some(writing) = check.writing.as_ref().filter(|writing| writing.pages > 0) {
            let cost = writing.estimated_cost_usd.map_or_else(
                || "no prices in kc.toml to estimate the cost".to_string(),
                |cost| format!("about ${cost:.4}"),
            );
            writeln!(
                out,
                "wiki writer ({}): up to {} pages written ({} owed), {cost}",
                escape(&writing.writer),
                writing.pages,
                writing.owed
            )?;
        }
        if check.up_to_date {
            writeln!(out, "the index is up to date")
        } else {
            writeln!(out, "the index is out of date")
        }
    })?;
    Ok(if check.up_to_date { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// One line per build of `--watch`: what changed, what was derived again, how long from the first change
/// to the committed index; or one JSON object per line with `--json`. Warnings go to stderr.
fn print_rebuild(json: bool, root: &Path, rebuild: &knowledge::build::watch::Rebuild) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let ms = rebuild.latency.as_secs_f64() * 1000.0;
    let changed: Vec<String> = rebuild.changed.iter().map(|path| escape(path).into_owned()).collect();
    match &rebuild.outcome {
        Err(error) => {
            let error = error.to_string();
            writeln!(std::io::stderr(), "error: {}", escape(&error))?;
            if json {
                let line = serde_json::json!({"changed": rebuild.changed, "error": error, "latency_ms": ms});
                writeln!(out, "{line}")?;
            }
        }
        Ok(summary) if json => {
            let mut line = serde_json::to_value(summary).map_err(std::io::Error::other)?;
            line["changed"] = serde_json::json!(rebuild.changed);
            line["latency_ms"] = serde_json::json!(ms);
            line["walked"] = serde_json::json!(rebuild.walked);
            writeln!(out, "{line}")?;
        }
        Ok(summary) if rebuild.changed.is_empty() => print_build(&mut out, root, summary)?,
        Ok(summary) => {
            let (s, c, p) = (&summary.sources, &summary.chunks, &summary.pages);
            let what = if summary.wrote {
                format!(
                    "{} added, {} changed, {} removed; {} chunks computed, {} reused; {} queries; {} pages rendered",
                    s.added, s.changed, s.removed, c.computed, c.reused, summary.queries.executed, p.rendered
                )
            } else {
                "nothing to rebuild".to_string()
            };
            writeln!(out, "{ms:.1} ms  {}: {what}", changed.join(", "))?;
        }
    }
    if let Ok(summary) = &rebuild.outcome {
        let mut stderr = std::io::stderr().lock();
        for skipped in &summary.skipped {
            writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
        }
    }
    out.flush()
}
