//! `knowledge stats`: counts of sources, chunks, pages and builds, the last build, the working search modes.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct StatsArgs {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Read a Postgres store's projects instead of the local index.
    #[command(flatten)]
    store: super::output::StoreArgs,
}

pub(crate) fn run(args: StatsArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let stats = match args.store.open(args.db.as_deref(), at)? {
        Some((mut store, projects)) => {
            knowledge::retrieval::reader::stats_postgres(&mut store, &projects, at.principal())?
        }
        None => {
            let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
            knowledge::retrieval::reader::stats(&conn, &access)?
        }
    };
    print(args.json, &stats, |out| {
        writeln!(
            out,
            "{} sources, {} chunks, {} wiki pages, {} builds",
            stats.sources, stats.chunks, stats.pages, stats.runs
        )?;
        if let Some(run) = &stats.last_run {
            writeln!(out, "last build: {} at {}", run.id, run.finished_at)?;
        }
        writeln!(out, "search modes: {}", stats.search_modes.join(", "))
    })?;
    Ok(ExitCode::SUCCESS)
}
