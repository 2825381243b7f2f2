//! `knowledge changes`: what recent builds changed, source by source, with the commit each recorded.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::escape;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct ChangesArgs {
    /// How many builds, newest first.
    #[arg(long, default_value_t = 10)]
    runs: u32,
    /// Only builds after this run id or RFC 3339 time.
    #[arg(long)]
    since: Option<String>,
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

pub(crate) fn run(args: ChangesArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let since = args.since.as_deref();
    let changes = match args.store.open(args.db.as_deref(), at)? {
        Some((mut store, projects)) => knowledge::retrieval::reader::recent_changes_postgres(
            &mut store,
            &projects,
            args.runs,
            since,
            at.principal(),
        )?,
        None => {
            let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
            knowledge::retrieval::reader::recent_changes(&conn, args.runs, since, &access)?
        }
    };
    print(args.json, &changes, |out| {
        if changes.is_empty() {
            writeln!(out, "no changes recorded")?;
        }
        for change in &changes {
            let commit = change.run.vcs["commit"].as_str().map(|c| format!(" (commit {})", &c[..c.len().min(12)]));
            let project = change.run.project.as_ref().map_or(String::new(), |project| format!("{}: ", escape(project)));
            writeln!(out, "{project}{} at {}{}", change.run.id, change.run.finished_at, commit.unwrap_or_default())?;
            for event in &change.events {
                writeln!(out, "  {} {}", event.kind, escape(&event.path))?;
            }
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
