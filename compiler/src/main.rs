//! The `knowledge` command line: argument parsing, output formats, progress bars and exit codes.
//!
//! Exit codes: 0 success, 1 findings (reserved for lint and `--check`), 2 usage, configuration or I/O
//! errors, 101 internal errors (panics). Results go to stdout; warnings, errors and progress to stderr.

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use knowledge::build::Compiler;
use knowledge::config::Project;
use knowledge::escape;
use knowledge::search::SearchMode;

use cli::args::*;
use cli::output::*;
use cli::progress::*;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            if error.chain().any(is_broken_pipe) {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {error}");
            for cause in error.chain().skip(1) {
                let _ = writeln!(stderr, "  Cause: {cause}");
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

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let start = match &cli.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().context("reading the working directory")?,
    };
    let principal = cli.principal;
    match cli.command {
        Command::Init { force } => {
            let written = knowledge::init::init(&start, force)?;
            let mut out = std::io::stdout().lock();
            for path in written {
                writeln!(out, "wrote {}", path.display())?;
            }
            writeln!(out, "next: edit kc.toml, then run `knowledge build`")?;
        }
        Command::Build { json, watch: true, .. } => {
            let project = Project::discover(&start)?;
            let root = project.root.clone();
            knowledge::watch::watch(&project.config_path, &Quiet, |rebuild| {
                print_rebuild(json, &root, rebuild).is_ok()
            })?;
        }
        Command::Build { json, check: true, .. } => {
            let project = Project::discover(&start)?;
            let check = knowledge::build::check(&project)?;
            print(json, &check, |out| {
                if let Some(reason) = &check.reason {
                    writeln!(out, "every source would be re-derived: {reason}")?;
                }
                for work in &check.work {
                    writeln!(out, "would run: {work}")?;
                }
                for (label, paths) in
                    [("added", &check.added), ("changed", &check.changed), ("removed", &check.removed)]
                {
                    for path in paths {
                        writeln!(out, "{label}: {}", escape(path))?;
                    }
                }
                for drift in &check.artifacts {
                    writeln!(out, "{}: {} (generated)", drift.state, escape(&drift.path))?;
                }
                if check.up_to_date {
                    writeln!(out, "the index is up to date")
                } else {
                    writeln!(out, "the index is out of date")
                }
            })?;
            if !check.up_to_date {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Build { json, check: false, watch: false } => {
            let project = Project::discover(&start)?;
            let show_progress = !json && std::io::stderr().is_terminal();
            let summary = if show_progress {
                Compiler::new().build(&project, &Bars::default())?
            } else {
                Compiler::new().build(&project, &Quiet)?
            };
            let mut stderr = std::io::stderr().lock();
            for skipped in &summary.skipped {
                writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
            }
            for path in &summary.blocked {
                writeln!(
                    stderr,
                    "warning: not writing `{}`: a file the build did not generate is in its place",
                    escape(path)
                )?;
            }
            if let Some(reason) = summary.embeddings.as_ref().and_then(|e| e.degraded.as_ref()) {
                writeln!(stderr, "warning: embeddings incomplete, semantic search is degraded: {reason}")?;
            }
            print(json, &summary, |out| print_build(out, &project.root, &summary))?;
        }
        Command::Search { query, limit, kind, mode, semantic, context, json, db } => {
            let mode = if semantic { SearchMode::Hybrid } else { mode };
            let (conn, access, response) =
                cli_search(db, &start, principal.as_deref(), &query, mode, limit, kind, json)?;
            if !context {
                print(json, &response, |out| print_search(out, &response))?;
            } else {
                let pack = knowledge::context::pack(&conn, &query, 2000, 8, &access)?;
                print(json, &serde_json::json!({"search": response, "context": pack}), |out| {
                    print_search(out, &response)?;
                    writeln!(out, "context pack: {} excerpts, {} tokens", pack.items.len(), pack.budget.used_tokens)?;
                    pack.items.iter().try_for_each(|item| writeln!(out, "  {}", escape(&item.reference)))
                })?;
            }
        }
        Command::Ask { question, max_tokens, json } => {
            let (index, conn, access) = open_as(None, &start, principal.as_deref())?;
            let mut answer = knowledge::ask::answer(&conn, &question, max_tokens, &access)?;
            drop(conn);
            if let Err(error) = knowledge::ask::record(&index, &mut answer) {
                writeln!(
                    std::io::stderr(),
                    "warning: the answer was not recorded: {}",
                    knowledge::error_chain(&error)
                )?;
            }
            print(json, &answer, |out| {
                writeln!(out, "{}", answer.answer)?;
                for citation in &answer.citations {
                    writeln!(out, "[{}] {} ({})", citation.n, escape(&citation.reference), escape(&citation.title))?;
                }
                Ok(())
            })?;
        }
        Command::Embeddings { command: EmbeddingsCommand::Search { query, limit, json, db } } => {
            let (_, _, response) =
                cli_search(db, &start, principal.as_deref(), &query, SearchMode::Semantic, limit, Vec::new(), json)?;
            print(json, &response, |out| print_search(out, &response))?;
            if response.degraded {
                let reason = response.degraded_reason.as_deref().unwrap_or("no embeddings generation");
                writeln!(std::io::stderr(), "error: semantic search is unavailable: {}", escape(reason))?;
                return Ok(ExitCode::from(2));
            }
        }
        Command::Reindex { command: ReindexCommand::Enqueue { full, json } } => {
            let project = Project::discover(&start)?;
            let job = enqueue(&project, full)?;
            print(json, &serde_json::json!({ "job": job }), |out| {
                writeln!(out, "queued {job}; the next build does it")
            })?;
        }
        Command::Reindex { command: ReindexCommand::Embeddings { full, json } } => {
            let project = Project::discover(&start)?;
            enqueue(&project, full)?;
            let summary = Compiler::new().build(&project, &Quiet)?;
            print(json, &summary, |out| print_build(out, &project.root, &summary))?;
        }
        Command::Embeddings { command: EmbeddingsCommand::Index { model, json } } => {
            let mut project = Project::discover(&start)?;
            if let Some(model) = model {
                anyhow::ensure!(
                    project.config.embeddings.provider == knowledge::config::EmbeddingProvider::OpenAi,
                    "--model names a model of the `openai` provider; [embeddings] provider is another"
                );
                project.config.embeddings.model = Some(model);
            }
            anyhow::ensure!(
                project.config.embeddings.provider != knowledge::config::EmbeddingProvider::None,
                "[embeddings] provider is `none`: there is nothing to embed with"
            );
            let summary = Compiler::new().build(&project, &Quiet)?;
            print(json, &summary, |out| print_build(out, &project.root, &summary))?;
        }
        Command::Reindex { command: ReindexCommand::Status { json, db } } => {
            let (_, conn, _) = open_as(db, &start, principal.as_deref())?;
            let generations = knowledge::embeddings::status(&conn)?;
            print(json, &generations, |out| {
                if generations.is_empty() {
                    writeln!(out, "no embeddings generation ([embeddings] provider is `none`)")?;
                }
                for g in &generations {
                    writeln!(
                        out,
                        "{}{}: {} ready, {} pending, {} missing, {} stale, {} queued jobs, {} vectors ({} dimensions)",
                        g.model,
                        if g.current { " (current)" } else { "" },
                        g.ready,
                        g.pending,
                        g.missing,
                        g.stale,
                        g.queued,
                        g.vectors,
                        g.dimensions
                    )?;
                }
                Ok(())
            })?;
        }
        Command::Lint { paths, format, error_on_warning, exit_zero } => {
            let project = Project::discover(&start)?;
            // Like `git -C`, `-C DIR` makes paths relative to DIR.
            let only = knowledge::lint::relative_paths(&project, &start, &paths).map_err(anyhow::Error::msg)?;
            let report = knowledge::lint_command::lint(&mut Compiler::new(), &project, &only);
            let mut stderr = std::io::stderr().lock();
            for skipped in &report.skipped {
                writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
            }
            for path in &report.unlinted {
                writeln!(stderr, "warning: not linted: `{}` holds no source that `[sources]` selects", escape(path))?;
            }
            let rendered = match format {
                LintFormat::Human => knowledge::lint::render_human(&report, std::io::stdout().is_terminal()),
                LintFormat::Json => knowledge::lint::render_json(&report),
                LintFormat::Sarif => knowledge::lint::render_sarif(&report),
                LintFormat::Github => knowledge::lint::render_github(&report),
            };
            std::io::stdout().lock().write_all(rendered.as_bytes())?;
            let failed = report.summary.errors > 0 || (error_on_warning && report.summary.warnings > 0);
            if failed && !exit_zero {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Eval { judged: Some(set), db, mode, json, min_ndcg, .. } => {
            let (_, conn, access) = open_as(db, &start, principal.as_deref())?;
            // Like git's `-C`, a relative path is read from the folder the command runs as if started in.
            let questions = knowledge::eval::judged::read_questions(&start.join(set))?;
            let report = knowledge::eval::judged::evaluate(&conn, &questions, mode, &access)?;
            print(json, &report, |out| print_judged(out, &report))?;
            if min_ndcg.is_some_and(|min| report.file_ndcg_at_10 < min) {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Eval { corpus, queries, qrels, mode, json, min_ndcg, .. } => {
            let (Some(corpus), Some(queries), Some(qrels)) = (corpus, queries, qrels) else {
                unreachable!("clap requires --corpus, --queries and --qrels together, or --judged")
            };
            let settings = match Project::discover(&start) {
                Ok(project) => project,
                Err(knowledge::config::ConfigError::NotFound(_)) => Project::with_defaults(&start),
                Err(error) => return Err(error.into()),
            };
            let report = knowledge::eval::evaluate(&settings, &corpus, &queries, &qrels, mode)?;
            print(json, &report, |out| print_eval(out, &report))?;
            if min_ndcg.is_some_and(|min| report.ndcg_at_10 < min) {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Context { command: ContextCommand::Pack { query, max_tokens, max_items, json, db } } => {
            let (index, conn, access) = open_as(db, &start, principal.as_deref())?;
            let pack = knowledge::context::pack(&conn, &query, max_tokens, max_items, &access)
                .with_context(|| format!("packing context from `{}`", index.display()))?;
            print(json, &pack, |out| {
                for item in &pack.items {
                    writeln!(
                        out,
                        "## {}
[{}]

{}
",
                        item.title, item.reference, item.text
                    )?;
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
        }
        Command::Add { text } => {
            let project = Project::discover(&start)?;
            let note = knowledge::notes::add(&project.output_dir(), &text)?;
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "added {}{} (the next `knowledge build` indexes it)",
                knowledge::notes::NOTE_PREFIX,
                note.id
            )?;
        }
        Command::Notes { command: NotesCommand::List { json } } => {
            let project = Project::discover(&start)?;
            let notes = knowledge::notes::load(&project.output_dir())?;
            print(json, &notes, |out| {
                for note in &notes {
                    writeln!(
                        out,
                        "{}{}  {}",
                        knowledge::notes::NOTE_PREFIX,
                        note.id,
                        note.text.lines().next().unwrap_or_default()
                    )?;
                }
                Ok(())
            })?;
        }
        Command::Notes { command: NotesCommand::Rm { id } } => {
            let project = Project::discover(&start)?;
            let note = knowledge::notes::remove(&project.output_dir(), &id)?;
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "removed {}{} (the next `knowledge build` drops it from the index)",
                knowledge::notes::NOTE_PREFIX,
                note.id
            )?;
        }
        Command::Stats { json, db } => {
            let (_, conn, access) = open_as(db, &start, principal.as_deref())?;
            let stats = knowledge::reader::stats(&conn, &access)?;
            print(json, &stats, |out| {
                writeln!(
                    out,
                    "{} sources, {} chunks, {} wiki pages, {} builds",
                    stats.sources, stats.chunks, stats.pages, stats.runs
                )?;
                if let Some(run) = &stats.last_run {
                    writeln!(out, "last build: {} at {}", run.id, run.finished_at)?;
                }
                writeln!(out, "search modes: {}", stats.search_modes.join(", "))
            })?;
        }
        Command::List { kind, cursor, limit, json, db } => {
            let (_, conn, access) = open_as(db, &start, principal.as_deref())?;
            let listing = knowledge::reader::list(&conn, kind, cursor.as_deref(), limit, &access)?;
            print(json, &listing, |out| {
                for source in listing.sources.iter().flatten() {
                    writeln!(
                        out,
                        "{}  {}  {} chunks",
                        escape(&source.path),
                        escape(&source.title),
                        source.chunk_count
                    )?;
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
        }
        Command::Changes { runs, since, json, db } => {
            let (_, conn, access) = open_as(db, &start, principal.as_deref())?;
            let changes = knowledge::reader::recent_changes(&conn, runs, since.as_deref(), &access)?;
            print(json, &changes, |out| {
                for change in &changes {
                    let commit =
                        change.run.vcs["commit"].as_str().map(|c| format!(" (commit {})", &c[..c.len().min(12)]));
                    writeln!(out, "{} at {}{}", change.run.id, change.run.finished_at, commit.unwrap_or_default())?;
                    for event in &change.events {
                        writeln!(out, "  {} {}", event.kind, escape(&event.path))?;
                    }
                }
                Ok(())
            })?;
        }
        Command::Get { reference, json, db }
        | Command::Source { command: SourceCommand::Resolve { reference, json, db } } => {
            let (_, conn, access) = open_as(db, &start, principal.as_deref())?;
            let resolved = knowledge::reader::resolve(&conn, &reference, &access)?;
            print(json, &resolved, |out| print_resolved(out, &resolved))?;
        }
        Command::Serve { dir, db, http, allow_remote } => {
            let index = index_path(db, dir.as_deref().unwrap_or(&start))?;
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            match http {
                Some(address) => {
                    runtime.block_on(knowledge::mcp::serve_http(index, principal, address, allow_remote))?
                }
                None => runtime.block_on(knowledge::mcp::serve_stdio(index, principal))?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
