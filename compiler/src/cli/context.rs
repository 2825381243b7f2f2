//! `knowledge context pack`: the best cited excerpts for a query within a hard token budget.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct PackArgs {
    query: String,
    /// The budget: a hard limit, counting ceil(UTF-8 bytes / 4) per excerpt and citation ref.
    #[arg(long, default_value_t = 2000)]
    max_tokens: usize,
    #[arg(long, default_value_t = 8)]
    max_items: usize,
    /// Print the pack as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    #[command(flatten)]
    store: super::output::StoreArgs,
}

pub(crate) fn pack(args: PackArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let pack: knowledge::retrieval::context::ContextPack = match super::output::remote(args.db.as_deref(), at)? {
        Some(mut remote) => {
            let arguments =
                serde_json::json!({"query": args.query, "max_tokens": args.max_tokens, "max_items": args.max_items});
            serde_json::from_value(remote.call("knowledge_context_pack", arguments).map_err(anyhow::Error::msg)?)?
        }
        None => match args.store.open(args.db.as_deref(), at)? {
            Some((mut store, projects)) => {
                let (query, tokens, items) = (&args.query, args.max_tokens, args.max_items);
                knowledge::retrieval::context::pack_postgres(
                    &mut store,
                    &projects,
                    query,
                    tokens,
                    items,
                    at.principal(),
                )?
            }
            None => {
                let (index, conn, access) = open_as(args.db, &at.start, at.principal())?;
                knowledge::retrieval::context::pack(&conn, &args.query, args.max_tokens, args.max_items, &access)
                    .with_context(|| format!("packing context from `{}`", index.display()))?
            }
        },
    };
    print(args.json, &pack, |out| {
        for item in &pack.items {
            let (title, reference) = (knowledge::escape(&item.title), knowledge::escape(&item.reference));
            writeln!(out, "## {title}\n[{reference}]\n\n{}\n", knowledge::escape_text(&item.text))?;
        }
        writeln!(
            out,
            "{} excerpts, {} of {} tokens ({})",
            pack.items.len(),
            pack.budget.used_tokens,
            pack.budget.max_tokens,
            pack.budget.counting
        )
    })?;
    Ok(ExitCode::SUCCESS)
}
