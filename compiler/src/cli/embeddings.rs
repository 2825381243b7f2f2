//! `knowledge embeddings index|search`: build the embedding generation, or search it by vector alone.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::build::Compiler;
use knowledge::config::{EmbeddingProvider, Project};
use knowledge::escape;
use knowledge::retrieval::search::{Highlight, SearchMode, SearchRequest};

use super::Invocation;
use super::output::{cli_search, print, print_build, print_search};
use super::progress::Quiet;

#[derive(Subcommand)]
pub(crate) enum EmbeddingsCommand {
    /// Embed every chunk that has no vector in the generation (a build with the embedding stage);
    /// `--model` builds a parallel generation with another model of the `openai` provider, which searches
    /// then use.
    Index {
        #[arg(long)]
        model: Option<String>,
        /// Print the build summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Vector-only search: the chunks nearest the query's embedding, with `scores.semantic`.
    Search {
        query: String,
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: usize,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

pub(crate) fn run(command: EmbeddingsCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    match command {
        EmbeddingsCommand::Index { model, json } => {
            let mut project = Project::discover(&at.start)?;
            if let Some(model) = model {
                anyhow::ensure!(
                    project.config.embeddings.provider == EmbeddingProvider::OpenAi,
                    "--model names a model of the `openai` provider; [embeddings] provider is another"
                );
                project.config.embeddings.model = Some(model);
            }
            anyhow::ensure!(
                project.config.embeddings.provider != EmbeddingProvider::None,
                "[embeddings] provider is `none`: there is nothing to embed with"
            );
            let summary = Compiler::new().build(&project, &Quiet)?;
            print(json, &summary, |out| print_build(out, &project.root, &summary))?;
        }
        EmbeddingsCommand::Search { query, limit, json, db } => {
            let request = SearchRequest {
                query: query.clone(),
                mode: SearchMode::Semantic,
                limit,
                kinds: Vec::new(),
                entity_types: Vec::new(),
                highlight: Highlight::default(),
            };
            let (_, _, response) = cli_search(db, at, request, json)?;
            print(json, &response, |out| print_search(out, &response))?;
            if response.degraded {
                let reason = response.degraded_reason.as_deref().unwrap_or("no embeddings generation");
                writeln!(std::io::stderr(), "error: semantic search is unavailable: {}", escape(reason))?;
                return Ok(ExitCode::from(2));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
