//! The command line's global arguments and its subcommands (clap); each subcommand's own arguments live
//! in its module.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::{
    ask, build, cache, changes, context, embeddings, entity, eval, get, ingest, init, lint, list, notes, providers,
    reindex, search, serve, stats, storage, web, wiki,
};

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
    Init(init::InitArgs),
    /// Compile the sources kc.toml names into the index; only what changed is recomputed.
    Build(build::BuildArgs),
    /// Search the index and print ranked, cited excerpts.
    Search(search::SearchArgs),
    /// Answer a question with sentences from the knowledge base, each cited; records the run in the index.
    Ask(ask::AskArgs),
    /// Embeddings: vector-only search over the index's generation.
    Embeddings {
        #[command(subcommand)]
        command: embeddings::EmbeddingsCommand,
    },
    /// The embeddings generations: what is ready, pending and missing.
    Reindex {
        #[command(subcommand)]
        command: reindex::ReindexCommand,
    },
    /// Check links, wikilinks, footnotes, front matter and duplicates. Read-only; exits 1 on errors.
    Lint(lint::LintArgs),
    /// Score retrieval: on a test collection (BEIR layout) compiled with the settings of kc.toml, if any,
    /// or with `--judged`, on the project's own index against questions judged by file and section.
    Eval(eval::EvalArgs),
    /// Add a note to the notes store; the next build indexes it as knowledge://item/ID.
    Add(notes::AddArgs),
    /// The notes store.
    Notes {
        #[command(subcommand)]
        command: NotesCommand,
    },
    /// Counts of sources, chunks and builds, the last build, and which search modes work.
    Stats(stats::StatsArgs),
    /// Web search through a provider's own search tool, when kc.toml allows it (`[web]`).
    Web {
        #[command(subcommand)]
        command: web::WebCommand,
    },
    /// Code entities (`[code]`): components, symbols, tests and decisions, their relationships, and impact
    /// and test plans.
    Entity {
        #[command(subcommand)]
        command: entity::EntityCommand,
    },
    /// The wiki: file a recorded answer as a hand-written page.
    Wiki {
        #[command(subcommand)]
        command: wiki::WikiCommand,
    },
    /// The model providers kc.toml configures: list them, check their keys, list a provider's models.
    Providers {
        #[command(subcommand)]
        command: providers::ProvidersCommand,
    },
    /// List indexed sources (by path) or builds (newest first), a page at a time.
    List(list::ListArgs),
    /// What recent builds changed, source by source, with the commit each build recorded.
    Changes(changes::ChangesArgs),
    /// Sources from outside the tree: read a `file:///`, `https://`, `s3://` or `open-files://` ref into
    /// the ingested store, which the next build indexes.
    Ingest {
        #[command(subcommand)]
        command: ingest::IngestCommand,
    },
    /// Publish the committed index to the shared build cache (`[cache] url`), keyed by its fingerprint and
    /// the checkout's commit.
    Publish(cache::CacheArgs),
    /// Fetch the nearest published index for this checkout (its commit, else the newest ancestor), verify
    /// it and put it in place, so the next build is incremental from it.
    Pull(cache::CacheArgs),
    /// Where the index and its artifacts are stored, locally and in object storage.
    Storage {
        #[command(subcommand)]
        command: storage::StorageCommand,
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
    Get(get::GetArgs),
    /// Serve the index to agents over MCP on stdin and stdout. Read-only: it never builds or writes.
    Serve(serve::ServeArgs),
    /// Print a completion script for a shell: `knowledge completions bash > ~/.local/share/bash-completion/completions/knowledge`.
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `knowledge man > ~/.local/share/man/man1/knowledge.1`.
    Man,
    /// `knowledge "QUESTION" [ask's options]`: a quoted question (words and a space, or a `?`) is asked, as
    /// `knowledge ask` would.
    #[command(external_subcommand)]
    Prompt(Vec<String>),
}

/// The prompt form's arguments, parsed as `ask`'s.
#[derive(Parser)]
#[command(name = "knowledge", no_binary_name = true)]
pub(crate) struct PromptCli {
    #[command(flatten)]
    pub(crate) ask: ask::AskArgs,
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
    /// indexed text and provenance (the same answer as `knowledge get`), or with `--purpose`, decide
    /// whether the source may be used for it.
    Resolve(get::ResolveArgs),
}

#[derive(Subcommand)]
pub(crate) enum ContextCommand {
    /// The best cited excerpts for QUERY within a token budget (schema knowledge-agent-context-pack v1).
    Pack(context::PackArgs),
}
