//! The command line's global arguments and its subcommands (clap); each subcommand's own arguments live
//! in its module.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::{
    ask, build, cache, changes, context, embeddings, entity, eval, export, get, hosted, ingest, init, lint, list,
    notes, providers, reindex, search, serve, stats, storage, web, wiki,
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
    /// Which knowledge base: `project` (the kc.toml found from here up, the default) or `global`, the user's
    /// own for notes and sources of no repository (`$KNOWLEDGE_HOME`, or `~/.hasna/knowledge/`).
    #[arg(long, global = true, value_enum, default_value_t = knowledge::config::scope::Scope::Project)]
    pub(crate) scope: knowledge::config::scope::Scope,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Write a commented kc.toml and the starter pages of the output folder.
    #[command(after_help = "Example:\n  knowledge init && knowledge build")]
    Init(init::InitArgs),
    /// Compile the sources kc.toml names into the index; only what changed is recomputed.
    #[command(
        after_help = "Example:\n  knowledge build --json        # or: knowledge build --check (CI), knowledge build --watch"
    )]
    Build(build::BuildArgs),
    /// Search the index and print ranked, cited excerpts.
    #[command(after_help = "Example:\n  knowledge search \"ownership rules\" --limit 5 --json")]
    Search(search::SearchArgs),
    /// Answer a question with sentences from the knowledge base, each cited; records the run in the index.
    #[command(
        after_help = "Example:\n  knowledge ask \"what happens when the owner goes out of scope?\"   # or: knowledge \"…?\""
    )]
    Ask(ask::AskArgs),
    /// Embeddings: vector-only search over the index's generation.
    #[command(after_help = "Example:\n  knowledge embeddings search \"borrowing a value\" --json")]
    Embeddings {
        #[command(subcommand)]
        command: embeddings::EmbeddingsCommand,
    },
    /// The embeddings generations: what is ready, pending and missing.
    #[command(after_help = "Example:\n  knowledge reindex status")]
    Reindex {
        #[command(subcommand)]
        command: reindex::ReindexCommand,
    },
    /// Check links, wikilinks, footnotes, front matter and duplicates. Read-only; exits 1 on errors.
    #[command(after_help = "Example:\n  knowledge lint docs/ --format github")]
    Lint(lint::LintArgs),
    /// Score retrieval: on a test collection (BEIR layout) compiled with the settings of kc.toml, if any,
    /// or with `--judged`, on the project's own index against questions judged by file and section.
    #[command(after_help = "Example:\n  knowledge eval --judged docs/eval/rust-book/questions.tsv")]
    Eval(eval::EvalArgs),
    /// Add a note to the notes store; the next build indexes it as knowledge://item/ID.
    #[command(after_help = "Example:\n  knowledge add \"The billing service is owned by the payments team.\"")]
    Add(notes::AddArgs),
    /// The notes store.
    #[command(after_help = "Example:\n  knowledge notes list --json")]
    Notes {
        #[command(subcommand)]
        command: NotesCommand,
    },
    /// Bring notes in from elsewhere: `legacy` reads the legacy JSON store (`~/.open-knowledge/db.json`).
    #[command(after_help = "Example:\n  knowledge import legacy && knowledge build")]
    Import {
        #[command(subcommand)]
        command: ImportCommand,
    },
    /// Where answers come from: `--mode hosted --api-url URL` (a remote server; its key kept outside the
    /// project) or `--mode local` (the local index).
    #[command(
        after_help = "Example:\n  knowledge setup --mode hosted --api-url https://kb.example/mcp --api-key-stdin"
    )]
    Setup(hosted::SetupArgs),
    /// A remote server: the contract it implements, and whether it answers.
    #[command(after_help = "Example:\n  knowledge remote contracts > contracts.json")]
    Remote {
        #[command(subcommand)]
        command: hosted::RemoteCommand,
    },
    /// Proposals for an agent loop: `context --from loops --topic T` is the context-pack schema over the run
    /// ledger (earlier answers and their citations, repeated questions), with the wiki updates it proposes.
    #[command(after_help = "Example:\n  knowledge proposals context --from loops --topic \"billing retries\" --json")]
    Proposals {
        #[command(subcommand)]
        command: ProposalsCommand,
    },
    /// Which build first held a passage (its commit, branch and time): a cited `REF#L…` or a quoted text.
    #[command(
        after_help = "Example:\n  knowledge introduced 'docs/ownership.md#L5-L7'   # or: knowledge introduced '\"each value has an owner\"'"
    )]
    Introduced(get::IntroducedArgs),
    /// Counts of sources, chunks and builds, the last build, and which search modes work.
    #[command(after_help = "Example:\n  knowledge stats --json")]
    Stats(stats::StatsArgs),
    /// Web search through a provider's own search tool, when kc.toml allows it (`[web]`).
    #[command(after_help = "Example:\n  knowledge web search \"rust 2024 edition changes\" --file")]
    Web {
        #[command(subcommand)]
        command: web::WebCommand,
    },
    /// Code entities (`[code]`): components, symbols, tests and decisions, their relationships, and impact
    /// and test plans.
    #[command(after_help = "Example:\n  knowledge entity impact cargo-util --json")]
    Entity {
        #[command(subcommand)]
        command: entity::EntityCommand,
    },
    /// The wiki: file a recorded answer as a hand-written page.
    #[command(after_help = "Example:\n  knowledge wiki file-answer run-20261203T120000000Z-1-0 --approve-write")]
    Wiki {
        #[command(subcommand)]
        command: wiki::WikiCommand,
    },
    /// The model providers kc.toml configures: list them, check their keys, list a provider's models.
    #[command(after_help = "Example:\n  knowledge providers check")]
    Providers {
        #[command(subcommand)]
        command: providers::ProvidersCommand,
    },
    /// List indexed sources (by path) or builds (newest first), a page at a time.
    #[command(after_help = "Example:\n  knowledge list sources --limit 20")]
    List(list::ListArgs),
    /// What recent builds changed, source by source, with the commit each build recorded.
    #[command(after_help = "Example:\n  knowledge changes --runs 3")]
    Changes(changes::ChangesArgs),
    /// Sources from outside the tree: read a `file:///`, `https://`, `s3://` or `open-files://` ref into
    /// the ingested store, which the next build indexes.
    #[command(after_help = "Example:\n  knowledge ingest source https://docs.example.org/guide --label internal")]
    Ingest {
        #[command(subcommand)]
        command: ingest::IngestCommand,
    },
    /// Publish the committed index to the shared build cache (`[cache] url`), keyed by its fingerprint and
    /// the checkout's commit.
    #[command(after_help = "Example:\n  knowledge build && knowledge publish --json")]
    Publish(cache::CacheArgs),
    /// Fetch the nearest published index for this checkout (its commit, else the newest ancestor), verify
    /// it and put it in place, so the next build is incremental from it.
    #[command(after_help = "Example:\n  knowledge pull && knowledge build")]
    Pull(cache::CacheArgs),
    /// Where the index and its artifacts are stored, locally and in object storage.
    #[command(after_help = "Example:\n  knowledge storage status")]
    Storage {
        #[command(subcommand)]
        command: storage::StorageCommand,
    },
    /// Sources in the index.
    #[command(after_help = "Example:\n  knowledge source resolve docs/guide.md --purpose knowledge_answer")]
    Source {
        #[command(subcommand)]
        command: SourceCommand,
    },
    /// Context for an agent's prompt.
    #[command(after_help = "Example:\n  knowledge context pack \"how do we deploy\" --max-tokens 1500 --json")]
    Context {
        #[command(subcommand)]
        command: ContextCommand,
    },
    /// Print a chunk or a source from the index: a chunk id, a file:// ref or a project-relative path.
    #[command(after_help = "Example:\n  knowledge get docs/guide.md#L10-L20")]
    Get(get::GetArgs),
    /// Serve the index to agents over MCP on stdin and stdout. Read-only: it never builds or writes.
    #[command(after_help = "Example:\n  knowledge serve --http 127.0.0.1:8765")]
    Serve(serve::ServeArgs),
    /// Write the index's chunks (with their refs, revisions and offsets), generated pages and their citations
    /// as JSON lines in the output folder's `exports/`, for other tools.
    #[command(after_help = "Example:\n  knowledge export && head -1 .hasna/knowledge/exports/chunks.jsonl")]
    Export(export::ExportArgs),
    /// Print a completion script for a shell: `knowledge completions bash > ~/.local/share/bash-completion/completions/knowledge`.
    #[command(
        after_help = "Example:\n  knowledge completions bash > ~/.local/share/bash-completion/completions/knowledge"
    )]
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `knowledge man > ~/.local/share/man/man1/knowledge.1`.
    #[command(after_help = "Example:\n  knowledge man > ~/.local/share/man/man1/knowledge.1")]
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
pub(crate) enum ProposalsCommand {
    /// A context pack for a topic, from the run ledger (`--from loops`, the default) or the sources.
    Context(context::ProposalsArgs),
}

#[derive(Subcommand)]
pub(crate) enum ImportCommand {
    /// Import the live items of the legacy JSON store as notes under their own ids
    /// (`knowledge://item/ID`); archived items stay behind. Run again, it changes only what changed.
    Legacy {
        /// The store (default: `~/.open-knowledge/db.json`).
        path: Option<PathBuf>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
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
