//! The command line: one module per subcommand, each with its arguments (clap) and its `run`, and the
//! parts they share: output formats, progress bars and where a command runs.

pub(crate) mod args;
pub(crate) mod output;
pub(crate) mod progress;

pub(crate) mod ask;
pub(crate) mod build;
pub(crate) mod cache;
pub(crate) mod changes;
pub(crate) mod context;
pub(crate) mod embeddings;
pub(crate) mod entity;
pub(crate) mod eval;
pub(crate) mod export;
pub(crate) mod get;
pub(crate) mod hosted;
pub(crate) mod ingest;
pub(crate) mod init;
pub(crate) mod lint;
pub(crate) mod list;
pub(crate) mod notes;
pub(crate) mod providers;
pub(crate) mod reindex;
pub(crate) mod search;
pub(crate) mod serve;
pub(crate) mod stats;
pub(crate) mod storage;
pub(crate) mod web;
pub(crate) mod wiki;

use std::path::PathBuf;

/// Where a command runs: the folder it starts in (`-C DIR`, or the working directory) and the principal it
/// reads as (`--as`).
pub(crate) struct Invocation {
    pub(crate) start: PathBuf,
    pub(crate) principal: Option<String>,
    /// The knowledge base the command works on; `start` is already its folder.
    pub(crate) scope: knowledge::config::scope::Scope,
}

impl Invocation {
    pub(crate) fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }
}
