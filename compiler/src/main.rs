//! The `knowledge` command line: argument parsing, output formats, progress bars and exit codes.
//!
//! Exit codes: 0 success, 1 findings (reserved for lint and `--check`), 2 usage, configuration or I/O
//! errors, 101 internal errors (panics). Results go to stdout; warnings, errors and progress to stderr.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use knowledge::build::{BuildSummary, Compiler, Reporter};
use knowledge::config::Project;
use knowledge::escape;
use knowledge::reader::Resolved;
use knowledge::search::{Highlight, ResultKind, SearchMode, SearchRequest, SearchResponse};
use knowledge::store::{self, DB_FILE};

#[derive(Parser)]
#[command(name = "knowledge", version, about = "Compile documents into a searchable, citable knowledge index")]
struct Cli {
    /// Run as if started in DIR: kc.toml is looked for there, then in its parents, and path arguments are
    /// relative to it.
    #[arg(short = 'C', long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Read as this principal of `[permissions.principals]`: answers include only what it may read.
    /// Without it, only unlabelled and public sources are read.
    #[arg(long = "as", global = true, value_name = "PRINCIPAL")]
    principal: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a commented kc.toml and the starter pages of the output folder.
    Init {
        /// Overwrite an existing kc.toml.
        #[arg(long)]
        force: bool,
    },
    /// Compile the sources kc.toml names into the index; only what changed is recomputed.
    Build {
        /// Print the build summary as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Write nothing; exit 1 when a build would change the index, listing why (a CI gate).
        #[arg(long, conflicts_with = "watch")]
        check: bool,
        /// Keep running: watch the project and build again after each change, one line per build.
        #[arg(long)]
        watch: bool,
    },
    /// Search the index and print ranked, cited excerpts.
    Search {
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
    },
    /// Answer a question with sentences from the knowledge base, each cited; records the run in the index.
    Ask {
        question: String,
        /// The budget of the context pack the answer draws on (tokens: ⌈UTF-8 bytes / 4⌉).
        #[arg(long, default_value_t = 1200)]
        max_tokens: usize,
        /// Print the answer as JSON (schema knowledge-answer v1).
        #[arg(long)]
        json: bool,
    },
    /// Embeddings: vector-only search over the index's generation.
    Embeddings {
        #[command(subcommand)]
        command: EmbeddingsCommand,
    },
    /// The embeddings generations: what is ready, pending and missing.
    Reindex {
        #[command(subcommand)]
        command: ReindexCommand,
    },
    /// Check links, wikilinks, footnotes, front matter and duplicates. Read-only; exits 1 on errors.
    Lint {
        /// Report findings in these files or folders only (links still resolve against the whole project).
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = LintFormat::Human)]
        format: LintFormat,
        /// Exit 1 on warnings too.
        #[arg(long)]
        error_on_warning: bool,
        /// Exit 0 whatever is found.
        #[arg(long)]
        exit_zero: bool,
    },
    /// Score keyword retrieval on a test collection (BEIR layout) with the settings of kc.toml, if any.
    Eval {
        /// `{"_id", "title", "text"}` per line.
        #[arg(long)]
        corpus: PathBuf,
        /// `{"_id", "text"}` per line.
        #[arg(long)]
        queries: PathBuf,
        /// `query-id<TAB>corpus-id<TAB>score`, with a header line.
        #[arg(long)]
        qrels: PathBuf,
        #[arg(long, value_enum, default_value_t = knowledge::eval::Mode::Keyword)]
        mode: knowledge::eval::Mode,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Exit 1 when nDCG@10 is below this.
        #[arg(long, value_name = "SCORE")]
        min_ndcg: Option<f64>,
    },
    /// Add a note to the notes store; the next build indexes it as knowledge://item/ID.
    Add {
        /// The note's text.
        text: String,
    },
    /// The notes store.
    Notes {
        #[command(subcommand)]
        command: NotesCommand,
    },
    /// Counts of sources, chunks and builds, the last build, and which search modes work.
    Stats {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// List indexed sources (by path) or builds (newest first), a page at a time.
    List {
        #[arg(value_enum)]
        kind: knowledge::reader::ListKind,
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
    },
    /// What recent builds changed, source by source, with the commit each build recorded.
    Changes {
        /// How many builds, newest first.
        #[arg(long, default_value_t = 10)]
        runs: u32,
        /// Only builds after this run id or RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Sources in the index.
    Source {
        #[command(subcommand)]
        command: SourceCommand,
    },
    /// Context for an agent's prompt.
    Context {
        #[command(subcommand)]
        command: ContextCommand,
    },
    /// Print a chunk or a source from the index: a chunk id, a file:// ref or a project-relative path.
    Get {
        /// The ref to resolve.
        reference: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Serve the index to agents over MCP on stdin and stdout. Read-only: it never builds or writes.
    Serve {
        /// The project whose index to serve (the folder holding kc.toml, or below it).
        #[arg(long, value_name = "DIR", conflicts_with = "db")]
        dir: Option<PathBuf>,
        /// The index file to serve; no kc.toml or source tree is needed.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Serve streamable HTTP at http://ADDRESS/mcp instead of stdio (for example 127.0.0.1:8765).
        #[arg(long, value_name = "ADDRESS")]
        http: Option<std::net::SocketAddr>,
        /// Allow --http on an address other than loopback.
        #[arg(long, requires = "http")]
        allow_remote: bool,
    },
}

#[derive(Subcommand)]
enum EmbeddingsCommand {
    /// Embed every chunk that has no vector in the generation (a build with the embedding stage);
    /// `--model` builds a parallel generation with another model of the `openai` provider, which searches
    /// then use.
    Index {
        #[arg(long)]
        model: Option<String>,
        /// Print the build summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Vector-only search: the chunks nearest the query's embedding, with `scores.semantic`.
    Search {
        query: String,
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: usize,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ReindexCommand {
    /// Queue an embedding job for the configured model (idempotent); the next build does it. `--full`
    /// drops the generation's vectors first, so every chunk is embedded again.
    Enqueue {
        #[arg(long)]
        full: bool,
        /// Print the job as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Queue the job and run the build that does it.
    Embeddings {
        #[arg(long)]
        full: bool,
        /// Print the build summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Per generation: ready, pending, missing and stale entries, and stored vectors.
    Status {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum NotesCommand {
    /// The notes in the store, oldest first (from the store itself: no build needed).
    List {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a note by id or `knowledge://item/ID`; the next build removes it from the index.
    Rm { id: String },
}

#[derive(Subcommand)]
enum SourceCommand {
    /// Resolve a chunk id, a `file://` ref (as search results and context packs cite) or a path to its
    /// indexed text and provenance. The same answer as `knowledge get`.
    Resolve {
        reference: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The index file to read, instead of the one kc.toml names.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ContextCommand {
    /// The best cited excerpts for QUERY within a token budget (schema knowledge-agent-context-pack v1).
    Pack {
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
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LintFormat {
    Human,
    Json,
    Sarif,
    Github,
}

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
        Command::Eval { corpus, queries, qrels, mode, json, min_ndcg } => {
            let settings = match Project::discover(&start) {
                Ok(project) => project,
                Err(knowledge::config::ConfigError::NotFound(_)) => Project::with_defaults(&start),
                Err(error) => return Err(error.into()),
            };
            let report = knowledge::eval::evaluate(&settings, &corpus, &queries, &qrels, mode)?;
            print(json, &report, |out| {
                writeln!(
                    out,
                    "{} queries over {} documents, mode {:?}",
                    report.queries, report.documents, report.mode
                )?;
                writeln!(out, "nDCG@10    {:.4}", report.ndcg_at_10)?;
                writeln!(out, "Recall@10  {:.4}", report.recall_at_10)?;
                writeln!(out, "Recall@100 {:.4}", report.recall_at_100)?;
                writeln!(out, "MRR@10     {:.4}", report.mrr_at_10)?;
                writeln!(out, "latency    p50 {:.2} ms, p95 {:.2} ms", report.latency_ms.p50, report.latency_ms.p95)
            })?;
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

/// Prints `value` as pretty JSON, or in its human format.
fn print<T: serde::Serialize>(
    json: bool,
    value: &T,
    human: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
    } else {
        human(&mut out)?;
    }
    Ok(())
}

/// The index (`--db`, or the one kc.toml names), a read-only connection to it, and the principal's access.
fn open_as(
    db: Option<PathBuf>,
    start: &Path,
    principal: Option<&str>,
) -> anyhow::Result<(PathBuf, rusqlite::Connection, knowledge::access::Access)> {
    let index = index_path(db, start)?;
    let conn = store::open_read_only(&index)?;
    let access = knowledge::access::Access::load(&conn, principal)?;
    Ok((index, conn, access))
}

/// The index to read: `--db`, or the one the project's kc.toml names.
fn index_path(db: Option<PathBuf>, start: &Path) -> anyhow::Result<PathBuf> {
    Ok(match db {
        Some(path) => path,
        None => Project::discover(start)?.output_dir().join(DB_FILE),
    })
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

fn print_build(out: &mut impl Write, root: &Path, summary: &BuildSummary) -> std::io::Result<()> {
    let s = &summary.sources;
    let c = &summary.chunks;
    let seconds = summary.wall_ms as f64 / 1000.0;
    if summary.wrote {
        writeln!(
            out,
            "compiled {} sources: {} added, {} changed, {} removed, {} unchanged, {} skipped",
            s.scanned - s.skipped,
            s.added,
            s.changed,
            s.removed,
            s.unchanged,
            s.skipped
        )?;
        writeln!(
            out,
            "chunks: {} computed, {} reused, {} deleted, {} in the index",
            c.computed, c.reused, c.deleted, c.total
        )?;
    } else {
        writeln!(out, "nothing changed: {} sources up to date, {} skipped", s.unchanged, s.skipped)?;
    }
    let (p, i) = (&summary.pages, &summary.shards);
    if p.rendered + p.written + p.deleted + i.rendered + i.written + i.deleted > 0 {
        writeln!(
            out,
            "wiki: {} pages rendered, {} written, {} unchanged, {} deleted; {} index files written",
            p.rendered, p.written, p.unchanged, p.deleted, i.written
        )?;
    }
    if let Some(e) = &summary.embeddings {
        writeln!(
            out,
            "embeddings ({}{}): {} computed, {} reused, {} pending, {} deleted",
            e.model,
            if e.fake { ", fake: for tests only" } else { "" },
            e.computed,
            e.reused,
            e.pending,
            e.deleted
        )?;
    }
    let index = summary.index.strip_prefix(root).unwrap_or(&summary.index);
    writeln!(out, "index: {} ({seconds:.2} s)", index.display())
}

/// A search as the CLI runs it: on the index `--db` names or the project's, as the principal, with terminal
/// highlighting unless the answer is JSON. Returns the connection and access for what follows.
#[allow(clippy::too_many_arguments)]
fn cli_search(
    db: Option<PathBuf>,
    start: &Path,
    principal: Option<&str>,
    query: &str,
    mode: SearchMode,
    limit: usize,
    kinds: Vec<ResultKind>,
    json: bool,
) -> anyhow::Result<(rusqlite::Connection, knowledge::access::Access, SearchResponse)> {
    let (index, conn, access) = open_as(db, start, principal)?;
    let highlight = if !json && std::io::stdout().is_terminal() { Highlight::Ansi } else { Highlight::Markdown };
    let request = SearchRequest { query: query.to_string(), mode, limit, kinds, highlight };
    let response = knowledge::search::search(&conn, &request, &access)
        .with_context(|| format!("searching `{}`", index.display()))?;
    Ok((conn, access, response))
}

/// Queues an embedding job for the configured model in the project's index.
fn enqueue(project: &Project, full: bool) -> anyhow::Result<String> {
    let embedder = knowledge::embeddings::configured(project).map_err(anyhow::Error::msg)?;
    let embedder = embedder.context("[embeddings] provider is `none`: there is nothing to reindex")?;
    let index = project.output_dir().join(knowledge::store::DB_FILE);
    // Only an index this binary can read gets a job; otherwise a build must come first.
    knowledge::store::open_read_only(&index)?;
    Ok(knowledge::store::Store::open_for_build(&index)?.enqueue_embeddings(embedder.model(), full)?)
}

/// One line per build of `--watch`: what changed, what was derived again, how long from the first change
/// to the committed index; or one JSON object per line with `--json`. Warnings go to stderr.
fn print_rebuild(json: bool, root: &Path, rebuild: &knowledge::watch::Rebuild) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let ms = rebuild.latency.as_secs_f64() * 1000.0;
    let changed: Vec<String> = rebuild.changed.iter().map(|path| escape(path).into_owned()).collect();
    match &rebuild.outcome {
        Err(error) => {
            writeln!(std::io::stderr(), "error: {}", escape(error))?;
            if json {
                let line = serde_json::json!({"changed": rebuild.changed, "error": error, "latency_ms": ms});
                writeln!(out, "{line}")?;
            }
        }
        Ok(summary) if json => {
            let mut line = serde_json::to_value(summary).map_err(std::io::Error::other)?;
            line["changed"] = serde_json::json!(rebuild.changed);
            line["latency_ms"] = serde_json::json!(ms);
            writeln!(out, "{line}")?;
        }
        Ok(summary) if rebuild.changed.is_empty() => print_build(&mut out, root, summary)?,
        Ok(summary) => {
            let (s, c, p) = (&summary.sources, &summary.chunks, &summary.pages);
            let what = if summary.wrote {
                format!(
                    "{} added, {} changed, {} removed; {} chunks computed, {} reused; {} queries; {} pages rendered",
                    s.added, s.changed, s.removed, c.computed, c.reused, summary.queries.executed, p.rendered
                )
            } else {
                "nothing to rebuild".to_string()
            };
            writeln!(out, "{ms:.1} ms  {}: {what}", changed.join(", "))?;
        }
    }
    if let Ok(summary) = &rebuild.outcome {
        let mut stderr = std::io::stderr().lock();
        for skipped in &summary.skipped {
            writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
        }
    }
    out.flush()
}

fn print_search(out: &mut impl Write, response: &SearchResponse) -> std::io::Result<()> {
    if response.results.is_empty() {
        return writeln!(out, "no results for {:?}", response.query);
    }
    for (rank, result) in response.results.iter().enumerate() {
        let c = &result.citation;
        let lines = if c.start_line == c.end_line {
            format!("{}", c.start_line)
        } else {
            format!("{}-{}", c.start_line, c.end_line)
        };
        writeln!(out, "{}. {}", rank + 1, escape(&result.title))?;
        writeln!(
            out,
            "   {}:{}  rev {}  score {:.3}",
            escape(&result.source.path),
            lines,
            &result.source.revision[..12],
            result.score
        )?;
        for line in result.snippet.lines().filter(|l| !l.trim().is_empty()) {
            writeln!(out, "   {}", line.trim_end())?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Progress bars on stderr, for a terminal only.
#[derive(Default)]
struct Bars {
    current: Mutex<Option<ProgressBar>>,
}

/// No progress, but a build that waits for another one says so.
struct Quiet;

impl Reporter for Quiet {
    fn waiting(&self, holder: Option<u32>) {
        say_waiting(holder);
    }
}

fn say_waiting(holder: Option<u32>) {
    let holder = holder.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    let _ = writeln!(std::io::stderr(), "waiting for another build to finish{holder}");
}

impl Reporter for Bars {
    fn stage(&self, name: &'static str, total: u64) {
        let bar = if total == 0 {
            ProgressBar::new_spinner()
        } else {
            ProgressBar::new(total).with_style(
                ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            )
        };
        bar.set_message(name);
        *self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar);
    }

    fn advance(&self, by: u64) {
        if let Some(bar) = &*self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            bar.inc(by);
        }
    }

    fn finish_stage(&self) {
        if let Some(bar) = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            bar.finish_and_clear();
        }
    }

    fn waiting(&self, holder: Option<u32>) {
        say_waiting(holder);
    }
}
