//! `knowledge ask`: an answer made of cited sentences, or "not found"; the run is recorded in the index.

use std::io::Write;
use std::process::ExitCode;

use knowledge::escape;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct AskArgs {
    question: String,
    /// The budget of the context pack the answer draws on (tokens: ⌈UTF-8 bytes / 4⌉).
    #[arg(long, default_value_t = 1200)]
    max_tokens: usize,
    /// Print the answer as JSON (schema knowledge-answer v1).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: AskArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let (index, conn, access) = open_as(None, &at.start, at.principal())?;
    let mut answer = knowledge::retrieval::ask::answer(&conn, &args.question, args.max_tokens, &access)?;
    drop(conn);
    if let Err(error) = knowledge::retrieval::ask::record(&index, &mut answer) {
        writeln!(std::io::stderr(), "warning: the answer was not recorded: {}", knowledge::error_chain(&error))?;
    }
    print(args.json, &answer, |out| {
        writeln!(out, "{}", answer.answer)?;
        for citation in &answer.citations {
            writeln!(out, "[{}] {} ({})", citation.n, escape(&citation.reference), escape(&citation.title))?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
