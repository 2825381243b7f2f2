//! `knowledge context pack`: the best cited excerpts for a query within a hard token budget.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use knowledge::retrieval::context::ContextPack;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct PackArgs {
    query: String,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    store: super::output::StoreArgs,
}

/// A pack's budget and where it is read and printed: what `context pack` and `proposals context` share.
#[derive(clap::Args)]
pub(crate) struct BudgetArgs {
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
}

pub(crate) fn pack(args: PackArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let pack: knowledge::retrieval::context::ContextPack = match super::output::remote(args.budget.db.as_deref(), at)? {
        Some(mut remote) => {
            let arguments = serde_json::json!({"query": args.query, "max_tokens": args.budget.max_tokens, "max_items": args.budget.max_items});
            serde_json::from_value(remote.call("knowledge_context_pack", arguments).map_err(anyhow::Error::msg)?)?
        }
        None => match args.store.open(args.budget.db.as_deref(), at)? {
            Some((mut store, projects)) => {
                let (query, tokens, items) = (&args.query, args.budget.max_tokens, args.budget.max_items);
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
                let (index, conn, access) = open_as(args.budget.db, &at.start, at.principal())?;
                knowledge::retrieval::context::pack(
                    &conn,
                    &args.query,
                    args.budget.max_tokens,
                    args.budget.max_items,
                    &access,
                )
                .with_context(|| format!("packing context from `{}`", index.display()))?
            }
        },
    };
    print(args.budget.json, &pack, |out| print_pack(out, &pack, "excerpts"))?;
    Ok(ExitCode::SUCCESS)
}

/// A pack as a reader sees it: each item under its title and ref, the budget, and the suggested updates.
fn print_pack(out: &mut dyn Write, pack: &ContextPack, what: &str) -> std::io::Result<()> {
    for item in &pack.items {
        let (title, reference) = (knowledge::escape(&item.title), knowledge::escape(&item.reference));
        writeln!(out, "## {title}\n[{reference}]\n\n{}\n", knowledge::escape_text(&item.text))?;
    }
    writeln!(
        out,
        "{} {what}, {} of {} tokens ({})",
        pack.items.len(),
        pack.budget.used_tokens,
        pack.budget.max_tokens,
        pack.budget.counting
    )?;
    for update in &pack.suggested_wiki_updates {
        writeln!(
            out,
            "suggested: {} \"{}\": {}",
            update.action,
            knowledge::escape(&update.title),
            knowledge::escape(&update.reason)
        )?;
        if let Some(command) = &update.command {
            writeln!(out, "  {}", knowledge::escape(command))?;
        }
    }
    Ok(())
}

/// Where a proposals pack reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProposalsFrom {
    /// The run ledger: earlier answers on the topic and questions asked more than once.
    Loops,
    /// The sources: the context pack for the topic, with its suggested updates.
    Sources,
}

#[derive(clap::Args)]
pub(crate) struct ProposalsArgs {
    /// What the pack is read from.
    #[arg(long, value_enum, default_value_t = ProposalsFrom::Loops)]
    from: ProposalsFrom,
    /// The topic the agent loop is about to work on.
    #[arg(long)]
    topic: String,
    #[command(flatten)]
    budget: BudgetArgs,
}

/// `knowledge proposals context`: the context-pack schema over the run ledger (or the sources), for an agent
/// loop, with the wiki updates it proposes.
pub(crate) fn proposals(args: ProposalsArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let (index, conn, access) = open_as(args.budget.db, &at.start, at.principal())?;
    let pack = match args.from {
        ProposalsFrom::Loops => knowledge::retrieval::proposals::loops_pack(
            &conn,
            &args.topic,
            args.budget.max_tokens,
            args.budget.max_items,
            &access,
        ),
        ProposalsFrom::Sources => knowledge::retrieval::context::pack(
            &conn,
            &args.topic,
            args.budget.max_tokens,
            args.budget.max_items,
            &access,
        ),
    }
    .with_context(|| format!("reading proposals from `{}`", index.display()))?;
    let what = if args.from == ProposalsFrom::Loops { "earlier answers" } else { "excerpts" };
    print(args.budget.json, &pack, |out| print_pack(out, &pack, what))?;
    Ok(ExitCode::SUCCESS)
}
