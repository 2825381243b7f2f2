//! `knowledge serve`: the read-only MCP server, over stdio or streamable HTTP.

use std::path::PathBuf;
use std::process::ExitCode;

use super::Invocation;
use super::output::index_path;

#[derive(clap::Args)]
pub(crate) struct ServeArgs {
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
}

pub(crate) fn run(args: ServeArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let index = index_path(args.db, args.dir.as_deref().unwrap_or(&at.start))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let principal = at.principal.clone();
    match args.http {
        Some(address) => {
            runtime.block_on(knowledge::serve::serve_http(index, principal, address, args.allow_remote))?
        }
        None => runtime.block_on(knowledge::serve::serve_stdio(index, principal))?,
    }
    Ok(ExitCode::SUCCESS)
}
