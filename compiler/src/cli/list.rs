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
}

pub(crate) fn run(args: ListArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
    let listing = knowledge::retrieval::reader::list(&conn, args.kind, args.cursor.as_deref(), args.limit, &access)?;
    print(args.json, &listing, |out| {
        for source in listing.sources.iter().flatten() {
            writeln!(out, "{}  {}  {} chunks", escape(&source.path), escape(&source.title), source.chunk_count)?;
        }
        for run in listing.runs.iter().flatten() {
            writeln!(out, "{}  {}", run.id, run.finished_at)?;
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
            writeln!(out, "{}  {} pages", index.path, index.page_count)?;
        }
        match &listing.next_cursor {
            Some(cursor) => writeln!(out, "more: --cursor {cursor}"),
            None => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
