//! `knowledge search`: ranked, cited excerpts, optionally with a context pack.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::escape;
use knowledge::retrieval::search::{ResultKind, SearchMode};

use super::Invocation;
use super::output::{cli_search, print, print_search};

#[derive(clap::Args)]
pub(crate) struct SearchArgs {
    /// The query: any text; words are matched individually, phrases and titles rank higher.
    query: String,
    /// How many results to return.
    #[arg(long, short = 'n', default_value_t = 10)]
    limit: usize,
    /// Only results of this kind (repeatable).
    #[arg(long, value_enum)]
    kind: Vec<ResultKind>,
    /// How to retrieve: keyword (BM25), semantic (embeddings) or hybrid (both, fused by rank).
    #[arg(long, value_enum, default_value_t = SearchMode::Keyword)]
    mode: SearchMode,
    /// Shorthand for `--mode hybrid`.
    #[arg(long, conflicts_with = "mode")]
    semantic: bool,
    /// Add a context pack for the query (2,000 tokens) to the answer: with `--json`, as `context`.
    #[arg(long)]
    context: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

pub(crate) fn run(args: SearchArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let mode = if args.semantic { SearchMode::Hybrid } else { args.mode };
    let (json, query) = (args.json, &args.query);
    let (conn, access, response) = cli_search(args.db, at, query, mode, args.limit, args.kind, json)?;
    if !args.context {
        print(json, &response, |out| print_search(out, &response))?;
    } else {
        let pack = knowledge::retrieval::context::pack(&conn, query, 2000, 8, &access)?;
        print(json, &serde_json::json!({"search": response, "context": pack}), |out| {
            print_search(out, &response)?;
            writeln!(out, "context pack: {} excerpts, {} tokens", pack.items.len(), pack.budget.used_tokens)?;
            pack.items.iter().try_for_each(|item| writeln!(out, "  {}", escape(&item.reference)))
        })?;
    }
    Ok(ExitCode::SUCCESS)
}
