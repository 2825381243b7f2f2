//! `knowledge setup --mode local|hosted` and `knowledge remote contracts|status`: where a knowledge base is
//! answered from, and the contract a remote server implements.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::config::Project;
use knowledge::config::hosted::{self, Mode};
use knowledge::escape;

use super::Invocation;
use super::output::{print, remote};

#[derive(clap::Args)]
pub(crate) struct SetupArgs {
    /// `hosted`: answer `search`, `get`, `context pack` and `ask` from the server `--api-url` names;
    /// `local`: from the local index (the URL is forgotten).
    #[arg(long, value_enum)]
    mode: Mode,
    /// The server's URL (`knowledge serve --http` serves `http://ADDRESS/mcp`), recorded as `[remote] url`
    /// in the scope's kc.toml.
    #[arg(long, value_name = "URL", required_if_eq("mode", "hosted"))]
    api_url: Option<String>,
    /// Read the server's key from standard input and keep it in the credentials file (`auth.json` in the
    /// global home, mode 0600), never in the project. `KNOWLEDGE_API_KEY` still overrides it.
    #[arg(long, requires = "api_url")]
    api_key_stdin: bool,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub(crate) enum RemoteCommand {
    /// The contract a remote server implements (schema knowledge-remote-contracts v1): transport,
    /// authentication, and each operation's MCP tool with its input and output schemas. JSON.
    Contracts,
    /// Whether the remote server answers: its statistics and its last build.
    Status {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn setup(args: SetupArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let url = match args.mode {
        Mode::Hosted => args.api_url.as_deref(),
        Mode::Local => None,
    };
    if let Some(url) = url {
        hosted::check_url(url)?;
    }
    let credentials = match (url, args.api_key_stdin) {
        (Some(url), true) => {
            let mut key = String::new();
            std::io::stdin().read_to_string(&mut key)?;
            let key = key.trim();
            anyhow::ensure!(!key.is_empty(), "--api-key-stdin: standard input held no key");
            anyhow::ensure!(!key.chars().any(char::is_control), "--api-key-stdin: a key is one line of text");
            Some(hosted::store_key(url, key)?)
        }
        _ => None,
    };
    hosted::set_remote_url(&project.config_path, url)?;
    let shown = serde_json::json!({
        "mode": args.mode,
        "scope": at.scope,
        "api_url": url,
        "config": project.config_path.to_string_lossy(),
        "credentials": credentials.as_ref().map(|path| path.to_string_lossy()),
    });
    print(args.json, &shown, |out| {
        let config_path = project.config_path.to_string_lossy();
        let config = escape(&config_path);
        match url {
            Some(url) => {
                writeln!(out, "hosted: `{config}` names {} as `[remote] url`", escape(url))?;
                if let Some(path) = &credentials {
                    writeln!(out, "its key is kept in `{}` (mode 0600)", escape(&path.to_string_lossy()))?;
                }
                writeln!(out, "`knowledge remote status` checks that it answers")?;
            }
            None => writeln!(out, "local: `{config}` names no remote server; answers come from the local index")?,
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run(command: RemoteCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    match command {
        RemoteCommand::Contracts => {
            let document = knowledge::serve::contracts::document();
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &document)?;
            writeln!(out)?;
        }
        RemoteCommand::Status { json } => {
            let Some(mut server) = remote(None, at)? else {
                anyhow::bail!(
                    "no remote server: set `KNOWLEDGE_API_URL`, or run `knowledge setup --mode hosted --api-url URL`"
                );
            };
            let stats = server.call("knowledge_stats", serde_json::json!({})).map_err(anyhow::Error::msg)?;
            let last = server.call("knowledge_run_status", serde_json::json!({})).ok();
            let shown = serde_json::json!({ "stats": stats, "last_build": last });
            print(json, &shown, |out| {
                writeln!(
                    out,
                    "the server answers: {} sources, {} chunks, {} builds",
                    stats["sources"], stats["chunks"], stats["runs"]
                )?;
                if let Some(last) = &last {
                    writeln!(
                        out,
                        "last build {} ({}), finished {}",
                        escape(last["id"].as_str().unwrap_or_default()),
                        escape(last["status"].as_str().unwrap_or_default()),
                        escape(last["finished_at"].as_str().unwrap_or("-"))
                    )?;
                }
                Ok(())
            })?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
