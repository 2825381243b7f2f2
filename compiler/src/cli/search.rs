//! `knowledge search`: ranked, cited excerpts, optionally with a context pack.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::escape;
use knowledge::retrieval::context::ContextPack;
use knowledge::retrieval::search::{EntityType, Highlight, ResultKind, SearchMode, SearchRequest, SearchResponse};

use super::Invocation;
use super::output::{cli_search, postgres_search, print, print_search, remote, terminal_marks};

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
    /// Only entities of this type (repeatable; without `--kind`, implies `--kind entity`).
    #[arg(long, value_enum)]
    entity_type: Vec<EntityType>,
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
    #[command(flatten)]
    store: super::output::StoreArgs,
}

pub(crate) fn run(args: SearchArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let mode = if args.semantic { SearchMode::Hybrid } else { args.mode };
    let (json, query) = (args.json, &args.query);
    let (response, pack) = match remote(args.db.as_deref(), at)? {
        Some(mut remote) => {
            let arguments = serde_json::json!({"query": query, "mode": mode, "limit": args.limit.clamp(1, 100),
                                               "kinds": args.kind, "entity_types": args.entity_type,
                                               "include_text": true});
            let mut response: SearchResponse =
                serde_json::from_value(remote.call("knowledge_search", arguments).map_err(anyhow::Error::msg)?)?;
            if !json && std::io::stdout().is_terminal() {
                terminal_marks(&mut response);
            }
            let pack = if args.context {
                let arguments = serde_json::json!({"query": query, "max_tokens": 2000, "max_items": 8});
                let pack = remote.call("knowledge_context_pack", arguments).map_err(anyhow::Error::msg)?;
                Some(serde_json::from_value::<ContextPack>(pack)?)
            } else {
                None
            };
            (response, pack)
        }
        None => {
            let request = SearchRequest {
                query: query.clone(),
                mode,
                limit: args.limit,
                kinds: args.kind,
                entity_types: args.entity_type,
                highlight: Highlight::default(),
            };
            match args.store.open(args.db.as_deref(), at)? {
                Some((mut store, projects)) => {
                    let response = postgres_search(&mut store, &projects, request, json, at)?;
                    let pack = if args.context {
                        let principal = at.principal();
                        Some(knowledge::retrieval::context::pack_postgres(
                            &mut store, &projects, query, 2000, 8, principal,
                        )?)
                    } else {
                        None
                    };
                    (response, pack)
                }
                None => {
                    let (conn, access, response) = cli_search(args.db, at, request, json)?;
                    let pack = if args.context {
                        Some(knowledge::retrieval::context::pack(&conn, query, 2000, 8, &access)?)
                    } else {
                        None
                    };
                    (response, pack)
                }
            }
        }
    };
    match pack {
        None => print(json, &response, |out| print_search(out, &response))?,
        Some(pack) => print(json, &serde_json::json!({"search": response, "context": pack}), |out| {
            print_search(out, &response)?;
            writeln!(out, "context pack: {} excerpts, {} tokens", pack.items.len(), pack.budget.used_tokens)?;
            pack.items.iter().try_for_each(|item| writeln!(out, "  {}", escape(&item.reference)))
        })?,
    }
    Ok(ExitCode::SUCCESS)
}
