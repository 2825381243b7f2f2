//! The command line's arguments and subcommands (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use knowledge::search::{ResultKind, SearchMode};

#[derive(Parser)]
#[command(name = "knowledge", version, about = "Compile documents into a searchable, citable knowledge index")]
pub(crate) struct Cli {
    /// Run as if started in DIR: kc.toml is looked for there, then in its parents, and path arguments are
    /// relative to it.
    #[arg(short = 'C', long, global = true, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Read as this principal of `[permissions.principals]`: answers include only what it may read.
    /// Without it, only unlabelled and public sources are read.
    #[arg(long = "as", global = true, value_name = "PRINCIPAL")]
    pub(crate) principal: Option<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
    /// Score retrieval: on a test collection (BEIR layout) compiled with the settings of kc.toml, if any,
    /// or with `--judged`, on the project's own index against questions judged by file and section.
    Eval {
        /// `{"_id", "title", "text"}` per line.
        #[arg(long, required_unless_present = "judged", requires_all = ["queries", "qrels"])]
        corpus: Option<PathBuf>,
        /// `{"_id", "text"}` per line.
        #[arg(long, requires = "corpus")]
        queries: Option<PathBuf>,
        /// `query-id<TAB>corpus-id<TAB>score`, with a header line.
        #[arg(long, requires = "corpus")]
        qrels: Option<PathBuf>,
        /// A judged question set: `id<TAB>question<TAB>PATH[#Section]=GRADE...` (or `none`) per line.
        #[arg(long, conflicts_with = "corpus", value_name = "FILE")]
        judged: Option<PathBuf>,
        /// The index to read with `--judged` (default: the project's).
        #[arg(long, requires = "judged")]
        db: Option<PathBuf>,
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
pub(crate) enum EmbeddingsCommand {
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
pub(crate) enum ReindexCommand {
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
pub(crate) enum NotesCommand {
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
pub(crate) enum SourceCommand {
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
pub(crate) enum ContextCommand {
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
pub(crate) enum LintFormat {
    Human,
    Json,
    Sarif,
    Github,
}
