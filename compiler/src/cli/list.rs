//! `knowledge list`: indexed sources, builds, pages or index shards, a page at a time.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::escape;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct ListArgs {
    #[arg(value_enum)]
    kind: knowledge::retrieval::reader::ListKind,
    /// With `runs`: which runs, builds (the default) or recorded `knowledge ask` answers.
    #[arg(long = "kind", id = "run_kind", value_enum, default_value_t = knowledge::retrieval::reader::RunKind::Build)]
    run_kind: knowledge::retrieval::reader::RunKind,
    /// The `next_cursor` of the previous page.
    #[arg(long)]
    cursor: Option<String>,
    #[arg(long, default_value_t = 100)]
    limit: u32,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Read a Postgres store's projects instead of the local index (sources, notes and runs; pages and
    /// index shards are listed from the local index, beside their files).
    #[command(flatten)]
    store: super::output::StoreArgs,
}

pub(crate) fn run(args: ListArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    use knowledge::retrieval::reader::{ListKind, RunKind, list, list_postgres};
    let kind = match (args.kind, args.run_kind) {
        (ListKind::Runs, RunKind::Ask) => ListKind::AskRuns,
        (_, RunKind::Build) => args.kind,
        (_, RunKind::Ask) => anyhow::bail!("`--kind ask` lists runs: use `knowledge list runs --kind ask`"),
    };
    let (cursor, limit) = (args.cursor.as_deref(), args.limit);
    // A store configured in kc.toml does not hold pages or shards: they are listed locally unless a
    // store is named on the command line (which then says where to read them).
    let in_store = args.store.named() || kind.in_store();
    let store = if in_store { args.store.open(args.db.as_deref(), at)? } else { None };
    let listing = match store {
        Some((mut store, projects)) => list_postgres(&mut store, &projects, kind, cursor, limit, at.principal())?,
        None => {
            let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
            list(&conn, kind, cursor, limit, &access)?
        }
    };
    print(args.json, &listing, |out| {
        for source in listing.sources.iter().flatten() {
            let project = source.project.as_ref().map_or(String::new(), |project| format!("{}: ", escape(project)));
            writeln!(
                out,
                "{project}{}  {}  {} chunks",
                escape(&source.path),
                escape(&source.title),
                source.chunk_count
            )?;
        }
        for run in listing.runs.iter().flatten() {
            let project = run.project.as_ref().map_or(String::new(), |project| format!("{}: ", escape(project)));
            // An answer says what was asked and whether it was found; a redacted one says neither.
            let asked = match (&run.summary["question"], &run.summary["found"]) {
                (serde_json::Value::String(question), serde_json::Value::Bool(found)) => {
                    format!("  {}  {}", if *found { "found" } else { "not found" }, escape(question))
                }
                _ => String::new(),
            };
            writeln!(out, "{project}{}  {}{asked}", run.id, run.finished_at)?;
        }
        for page in listing.pages.iter().flatten() {
            writeln!(
                out,
                "{}  {}  {} sources  {}",
                escape(&page.slug),
                escape(&page.title),
                page.source_count,
                escape(&page.path)
            )?;
        }
        for index in listing.indexes.iter().flatten() {
            writeln!(out, "{}  {} pages", escape(&index.path), index.page_count)?;
        }
        match &listing.next_cursor {
            Some(cursor) => writeln!(out, "more: --cursor {cursor}"),
            None => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
