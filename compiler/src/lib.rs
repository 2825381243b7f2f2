//! `knowledge`: compiles a repository's documents into a searchable, citable SQLite index.
//!
//! The driver: it reads files and `kc.toml`, sets the salsa inputs of `knowledge-queries`, runs the queries,
//! writes the index, and answers searches from it. See `docs/architecture.md` for the map.

pub mod access;
pub mod ask;
pub mod build;
pub mod config;
pub mod context;
pub mod db;
pub mod embeddings;
pub mod eval;
pub mod init;
pub mod lint;
pub mod mcp;
pub mod notes;
pub mod reader;
pub mod search;
pub mod sources;
pub mod store;
pub mod vcs;
pub mod wiki;

/// An error and its causes on one line, `: `-separated, for answers and warnings that are one line.
#[must_use]
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
