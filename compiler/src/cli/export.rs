//! `knowledge export [--json]`: the index's chunks, pages and citations as JSON lines in the output folder's
//! `exports/`, for other tools.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use knowledge::config::Project;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct ExportArgs {
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: ExportArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let (index, conn, access) = open_as(None, &at.start, at.principal())?;
    let output_dir = project.output_dir();
    let report = knowledge::retrieval::export::export(&conn, &access, &output_dir)
        .with_context(|| format!("exporting `{}` to `{}`", index.display(), output_dir.display()))?;
    print(args.json, &report, |out| {
        for file in &report.files {
            writeln!(out, "wrote {} ({} rows)", knowledge::escape(&file.path), file.rows)?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
