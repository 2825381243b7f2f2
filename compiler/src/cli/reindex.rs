//! `knowledge reindex enqueue|embeddings|status`: the embedding jobs and each generation's state.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use knowledge::build::Compiler;
use knowledge::config::Project;

use super::Invocation;
use super::output::{open_as, print, print_build};
use super::progress::Quiet;

#[derive(Subcommand)]
pub(crate) enum ReindexCommand {
    /// Queue an embedding job for the configured model (idempotent); the next build does it. `--full`
    /// drops the generation's vectors first, so every chunk is embedded again.
    Enqueue {
        #[arg(long)]
        full: bool,
        /// Print the job as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Queue the job and run the build that does it.
    Embeddings {
        #[arg(long)]
        full: bool,
        /// Print the build summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Per generation: ready, pending, missing and stale entries, and stored vectors.
    Status {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

pub(crate) fn run(command: ReindexCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    match command {
        ReindexCommand::Enqueue { full, json } => {
            let project = Project::discover(&at.start)?;
            let job = enqueue(&project, full)?;
            print(json, &serde_json::json!({ "job": job }), |out| {
                writeln!(out, "queued {job}; the next build does it")
            })?;
        }
        ReindexCommand::Embeddings { full, json } => {
            let project = Project::discover(&at.start)?;
            enqueue(&project, full)?;
            let summary = Compiler::new().build(&project, &Quiet)?;
            print(json, &summary, |out| print_build(out, &project.root, &summary))?;
        }
        ReindexCommand::Status { json, db } => {
            let (_, conn, _) = open_as(db, &at.start, at.principal())?;
            let generations = knowledge::embeddings::status(&conn)?;
            print(json, &generations, |out| {
                if generations.is_empty() {
                    writeln!(out, "no embeddings generation ([embeddings] provider is `none`)")?;
                }
                for g in &generations {
                    writeln!(
                        out,
                        "{}{}: {} ready, {} pending, {} missing, {} stale, {} queued jobs, {} vectors ({} dimensions)",
                        g.model,
                        if g.current { " (current)" } else { "" },
                        g.ready,
                        g.pending,
                        g.missing,
                        g.stale,
                        g.queued,
                        g.vectors,
                        g.dimensions
                    )?;
                }
                Ok(())
            })?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Queues an embedding job for the configured model in the project's index.
fn enqueue(project: &Project, full: bool) -> anyhow::Result<String> {
    let embedder = knowledge::embeddings::configured(project).map_err(anyhow::Error::msg)?;
    let embedder = embedder.context("[embeddings] provider is `none`: there is nothing to reindex")?;
    let index = project.output_dir().join(knowledge::store::DB_FILE);
    // Only an index this binary can read gets a job; otherwise a build must come first.
    knowledge::store::open_read_only(&index)?;
    Ok(knowledge::store::Store::open_for_build(&index)?.enqueue_embeddings(embedder.model(), full)?)
}
