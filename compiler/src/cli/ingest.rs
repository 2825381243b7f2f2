//! `knowledge ingest source|refresh|list|rm`: the ingested store, sources from outside the tree that the
//! next build indexes under their refs. Ingest writes that store only, never the index.

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::config::Project;
use knowledge::escape;
use knowledge::providers::ingest::{self, IngestReport};

use super::Invocation;
use super::output::print;

#[derive(Subcommand)]
pub(crate) enum IngestCommand {
    /// Read REF (`file:///…`, `https://…`, `s3://BUCKET/KEY`, `open-files://ID`) within `[ingest]`'s limits
    /// and store its text; again, it re-reads only what changed upstream.
    Source {
        #[arg(value_name = "REF")]
        reference: String,
        /// A permission label for the source (repeatable), beside `[ingest] labels`.
        #[arg(long = "label", value_name = "LABEL")]
        labels: Vec<String>,
        /// The purpose the source is read for; ingest's is `knowledge_index` (the design's form), and a
        /// label `[permissions.purposes.knowledge_index]` denies is refused before anything is read.
        #[arg(long, value_name = "PURPOSE")]
        purpose: Option<String>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read every ingested source again; exits 1 when any could not be read (the others are stored).
    Refresh {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The ingested sources, by ref.
    List {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget an ingested source; the next build drops it from the index.
    Rm {
        #[arg(value_name = "REF")]
        reference: String,
    },
}

pub(crate) fn run(command: IngestCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    match command {
        IngestCommand::Source { reference, labels, purpose, json } => {
            if let Some(purpose) = purpose {
                check_index_purpose(&project, &purpose, &labels)?;
            }
            let report = ingest::ingest(&project, &reference, &labels)?;
            print(json, &report, |out| print_report(out, &report))?;
            Ok(ExitCode::SUCCESS)
        }
        IngestCommand::Refresh { json } => {
            let results = ingest::refresh(&project)?;
            let failed = results.iter().filter(|r| r.is_err()).count();
            let shown: Vec<serde_json::Value> = results
                .iter()
                .map(|result| match result {
                    Ok(report) => serde_json::to_value(report).expect("reports serialize"),
                    Err(error) => serde_json::json!({ "error": knowledge::error_chain(error) }),
                })
                .collect();
            print(json, &shown, |out| {
                for result in &results {
                    match result {
                        Ok(report) => print_report(out, report)?,
                        Err(error) => writeln!(out, "error: {}", escape(&knowledge::error_chain(error)))?,
                    }
                }
                Ok(())
            })?;
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        IngestCommand::List { json } => {
            let sources = knowledge::sources::ingested::load(&project.output_dir())?;
            print(json, &sources, |out| {
                for source in &sources {
                    writeln!(
                        out,
                        "{}  {}  {}  {}",
                        escape(&source.reference),
                        source.resolver,
                        source.retrieved_at,
                        escape(&source.title)
                    )?;
                }
                Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
        IngestCommand::Rm { reference } => {
            let removed = knowledge::sources::ingested::remove(&project.output_dir(), &reference)?;
            writeln!(
                std::io::stdout(),
                "removed {} (the next `knowledge build` drops it from the index)",
                escape(&removed.reference)
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_report(out: &mut impl Write, report: &IngestReport) -> std::io::Result<()> {
    let outcome = match report.outcome {
        knowledge::sources::ingested::Outcome::Added => "added",
        knowledge::sources::ingested::Outcome::Changed => "changed",
        knowledge::sources::ingested::Outcome::Unchanged => "unchanged",
    };
    writeln!(
        out,
        "{outcome} {}  ({}, revision {}): {} (the next `knowledge build` indexes it)",
        escape(&report.reference),
        report.resolver,
        escape(&report.revision_id),
        escape(&report.title)
    )
}

/// `--purpose`: ingest reads for `knowledge_index` only, and a label given here or by `[ingest] labels` that
/// `[permissions.purposes.knowledge_index]` denies is refused now (the build would keep the source out of
/// the index anyway, judging every label it ends up with).
fn check_index_purpose(project: &Project, purpose: &str, labels: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(
        purpose == "knowledge_index",
        "--purpose {}: ingest reads sources for `knowledge_index`",
        escape(purpose)
    );
    let denied = project.config.permissions.denied_for("knowledge_index");
    let given = labels.iter().chain(&project.config.ingest.labels).map(|l| l.trim().to_lowercase());
    for label in given {
        anyhow::ensure!(
            !denied.contains(&label),
            "labelled `{}`, which `[permissions.purposes.knowledge_index]` keeps out of the index: nothing is read",
            escape(&label)
        );
    }
    Ok(())
}
