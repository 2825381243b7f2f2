//! The read side: answers from a committed index, through a read-only connection, for the CLI and the
//! server alike. Permissions (`access`) apply inside every query; `search` ranks (keyword, semantic, fused),
//! `context` packs results into a token budget, `ask` answers from a pack, `reader` resolves refs and lists,
//! and `eval` measures search quality through the same functions.

pub mod access;
pub mod ask;
pub mod context;
pub mod entities;
pub mod eval;
pub mod export;
pub mod filing;
pub mod generated;
pub mod history;
pub mod proposals;
pub mod reader;
pub mod resolve;
pub mod search;
pub mod terms;
