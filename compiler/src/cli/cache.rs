//! `knowledge publish` and `knowledge pull`: the shared build cache (`[cache] url`). CI publishes the index it
//! built; a checkout pulls the nearest one, and its next build is incremental from there.

use std::io::Write;
use std::process::ExitCode;

use knowledge::build::cache::CacheReport;
use knowledge::config::Project;
use knowledge::escape;

use super::Invocation;
use super::output::print;

#[derive(clap::Args)]
pub(crate) struct CacheArgs {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn publish(args: CacheArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let report = knowledge::build::cache::publish(&project).map_err(anyhow::Error::msg)?;
    print(args.json, &report, |out| {
        let what = if report.outcome == "published" { "published" } else { "already published" };
        writeln!(out, "{what}: the index of {} to {}", report.commit.as_deref().unwrap_or("?"), escape(&report.target))
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn pull(args: CacheArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let report = knowledge::build::cache::pull(&project).map_err(anyhow::Error::msg)?;
    print(args.json, &report, |out| print_pull(out, &report))?;
    // Nothing usable is not an error: the next build is cold, as it would have been.
    Ok(ExitCode::SUCCESS)
}

fn print_pull(out: &mut impl Write, report: &CacheReport) -> std::io::Result<()> {
    match (&report.commit, report.outcome.as_str()) {
        (Some(commit), relation) => writeln!(
            out,
            "pulled the index of {commit} ({}) from {}; the next `knowledge build` is incremental from it",
            if relation == "exact" { "this commit" } else { "an ancestor of this commit" },
            escape(&report.target)
        )?,
        (None, _) => writeln!(
            out,
            "nothing published in {} fits this checkout; the next `knowledge build` is cold",
            escape(&report.target)
        )?,
    }
    for rejected in &report.rejected {
        writeln!(out, "  passed over {}", escape(rejected))?;
    }
    Ok(())
}
