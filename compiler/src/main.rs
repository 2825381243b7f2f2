//! The `knowledge` command line: argument parsing, output formats, progress bars and exit codes.
//!
//! Exit codes: 0 success, 1 findings (reserved for lint and `--check`), 2 usage, configuration or I/O
//! errors, 101 internal errors (panics). Results go to stdout; warnings, errors and progress to stderr.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, Parser};

use cli::args::{Cli, Command, ContextCommand, ImportCommand, NotesCommand, ProposalsCommand, SourceCommand};

/// mimalloc keeps freed memory for reuse. With glibc's allocator every large tensor of the local embedding
/// model was mapped fresh from the kernel and its page faults cost a quarter of the embedding time; cold
/// builds gain too (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // SAFETY: the first thing the process does, before it starts any thread.
    #[cfg(feature = "local-embeddings")]
    #[allow(unsafe_code)]
    unsafe {
        knowledge::embeddings::run_elementwise_inline();
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            if error.chain().any(is_broken_pipe) {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            // An error can quote what a file, a remote server or a provider said: shown escaped.
            let mut said = error.to_string();
            let _ = writeln!(stderr, "error: {}", knowledge::escape_text(&said));
            for cause in error.chain().skip(1).map(|cause| cause.to_string()) {
                // Many errors quote their cause in their own message (SQLite's conversion errors do): a cause
                // the line before already said is not said again.
                if !said.contains(&cause) {
                    let _ = writeln!(stderr, "  Cause: {}", knowledge::escape_text(&cause));
                }
                said = cause;
            }
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let broken = Some(std::io::ErrorKind::BrokenPipe);
    error.downcast_ref::<std::io::Error>().map(std::io::Error::kind) == broken
        || error.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind) == broken
}

/// `knowledge "QUESTION" ...` as `knowledge ask "QUESTION" ...`. Only a question reads as one (a space or a
/// `?` in it): a mistyped subcommand (`knowledge serch`) is an error that says so, not a question.
fn prompt(words: Vec<String>) -> anyhow::Result<cli::ask::AskArgs> {
    let first = words.first().map(String::as_str).unwrap_or_default();
    if !first.trim().contains(char::is_whitespace) && !first.contains('?') {
        anyhow::bail!(
            "unrecognized subcommand `{}` (see `knowledge --help`); to ask a question, quote it: knowledge \"{} ...\"",
            knowledge::escape(first),
            knowledge::escape(first)
        );
    }
    Ok(cli::args::PromptCli::try_parse_from(words)?.ask)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let start = match cli.root.clone() {
        Some(root) if !root.is_dir() => {
            let what = if root.exists() { "is not a folder" } else { "does not exist" };
            anyhow::bail!("-C `{}`: the folder {what}", knowledge::escape(&root.to_string_lossy()));
        }
        Some(root) => root,
        None => std::env::current_dir().context("reading the working directory")?,
    };
    if cli.scope == knowledge::config::scope::Scope::Global && cli.root.is_some() {
        anyhow::bail!("-C names a project: it does not go with --scope global");
    }
    let start = knowledge::config::scope::start_folder(cli.scope, &start, matches!(cli.command, Command::Init(_)))?;
    let at = cli::Invocation { start, principal: cli.principal, scope: cli.scope };
    match cli.command {
        Command::Init(args) => cli::init::run(args, &at),
        Command::Build(args) => cli::build::run(args, &at),
        Command::Search(args) => cli::search::run(args, &at),
        Command::Ask(args) => cli::ask::run(args, &at),
        Command::Embeddings { command } => cli::embeddings::run(command, &at),
        Command::Reindex { command } => cli::reindex::run(command, &at),
        Command::Lint(args) => cli::lint::run(args, &at),
        Command::Eval(args) => cli::eval::run(args, &at),
        Command::Context { command: ContextCommand::Pack(args) } => cli::context::pack(args, &at),
        Command::Add(args) => cli::notes::add(args, &at),
        Command::Notes { command: NotesCommand::List { json } } => cli::notes::list(json, &at),
        Command::Notes { command: NotesCommand::Rm { id } } => cli::notes::remove(&id, &at),
        Command::Import { command: ImportCommand::Legacy { path, json } } => cli::notes::import_legacy(path, json, &at),
        Command::Setup(args) => cli::hosted::setup(args, &at),
        Command::Remote { command } => cli::hosted::run(command, &at),
        Command::Introduced(args) => cli::get::introduced(args, &at),
        Command::Proposals { command: ProposalsCommand::Context(args) } => cli::context::proposals(args, &at),
        Command::Stats(args) => cli::stats::run(args, &at),
        Command::Providers { command } => cli::providers::run(command, &at),
        Command::Wiki { command } => cli::wiki::run(command, &at),
        Command::Entity { command } => cli::entity::run(command, &at),
        Command::Web { command } => cli::web::run(command, &at),
        Command::List(args) => cli::list::run(args, &at),
        Command::Changes(args) => cli::changes::run(args, &at),
        Command::Get(args) => cli::get::run(args, &at),
        Command::Source { command: SourceCommand::Resolve(args) } => cli::get::resolve(args, &at),
        Command::Ingest { command } => cli::ingest::run(command, &at),
        Command::Storage { command } => cli::storage::run(command, &at),
        Command::Publish(args) => cli::cache::publish(args, &at),
        Command::Pull(args) => cli::cache::pull(args, &at),
        Command::Serve(args) => cli::serve::run(args, &at),
        Command::Export(args) => cli::export::run(args, &at),
        // Made in memory, then written: the generator panics on a write error (a closed pipe).
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "knowledge", &mut script);
            std::io::stdout().lock().write_all(&script)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            std::io::stdout().lock().write_all(&page)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Prompt(words) => cli::ask::run(prompt(words)?, &at),
    }
}
