//! `knowledge get` and `knowledge source resolve`: a chunk, a source or a cited line range from the index.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::escape;
use knowledge::retrieval::reader::Resolved;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct GetArgs {
    /// The ref to resolve.
    reference: String,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

pub(crate) fn run(args: GetArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
    let resolved = knowledge::retrieval::reader::resolve(&conn, &args.reference, &access)?;
    print(args.json, &resolved, |out| print_resolved(out, &resolved))?;
    Ok(ExitCode::SUCCESS)
}

fn print_resolved(out: &mut impl Write, resolved: &Resolved) -> std::io::Result<()> {
    match (&resolved.chunk, &resolved.source) {
        (Some(chunk), _) => {
            let c = &chunk.citation;
            writeln!(out, "{}", escape(&chunk.title))?;
            writeln!(
                out,
                "{}:{}-{}  rev {}  hash {}",
                escape(&chunk.source.path),
                c.start_line,
                c.end_line,
                chunk.source.revision,
                chunk.source.hash
            )?;
            writeln!(out)?;
            writeln!(out, "{}", chunk.text)
        }
        (None, Some(source)) if resolved.lines.is_some() => {
            let lines = resolved.lines.as_ref().expect("checked above");
            writeln!(out, "{}", escape(&source.title))?;
            let stale = if lines.stale { "  (cited at another revision: the lines may have moved)" } else { "" };
            writeln!(
                out,
                "{}#L{}-L{}  rev {}{stale}",
                escape(&source.uri),
                lines.start_line,
                lines.end_line,
                lines.revision
            )?;
            writeln!(out)?;
            write!(out, "{}", lines.text)
        }
        (None, Some(source)) => {
            writeln!(out, "{}", escape(&source.title))?;
            writeln!(out, "{}  {}  {} bytes  rev {}", escape(&source.uri), source.mime, source.size, source.revision)?;
            writeln!(out)?;
            for chunk in &source.chunks {
                writeln!(out, "{}  lines {}-{}  {}", chunk.id, chunk.start_line, chunk.end_line, escape(&chunk.title))?;
            }
            Ok(())
        }
        (None, None) => Ok(()),
    }
}
