//! `knowledge web search QUERY`: a provider's own web search, only when kc.toml turns `[web]` on, within its
//! domain lists and result cap. It prints what was found, and files it only with `--file`: as read-only
//! sources under their URLs, which the next build indexes.

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::config::Project;
use knowledge::escape;

use super::Invocation;
use super::output::print;

#[derive(Subcommand)]
pub(crate) enum WebCommand {
    /// Search the web with a provider's own search tool (`[web] enabled = true` in kc.toml).
    Search {
        query: String,
        /// The provider to ask, by its name in kc.toml (default: the default provider).
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// Record the results (URL, title, snippet, retrieval time, provider) as read-only sources that the
        /// next build indexes and cites under their URLs.
        #[arg(long)]
        file: bool,
        /// A permission label for the filed results (repeatable), beside `[ingest] labels`.
        #[arg(long = "label", value_name = "LABEL", requires = "file")]
        labels: Vec<String>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(command: WebCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    let WebCommand::Search { query, provider, file, labels, json } = command;
    let project = Project::discover(&at.start)?;
    let web = &project.config.web;
    if !web.enabled {
        anyhow::bail!("web search is off: set `[web] enabled = true` in kc.toml to allow it");
    }
    let provider = knowledge::providers::find(&project, provider.as_deref()).map_err(anyhow::Error::msg)?;
    let results = provider.web_search(&query, web).map_err(anyhow::Error::msg)?;
    let filed = if file {
        Some(knowledge::providers::ingest::file_web_results(&project, &query, &results, &labels)?)
    } else {
        None
    };
    let shown = match &filed {
        Some(filed) => serde_json::json!({ "results": results, "filed": filed }),
        None => serde_json::to_value(&results)?,
    };
    print(json, &shown, |out| {
        if results.is_empty() {
            writeln!(out, "no results")?;
        }
        for (n, result) in results.iter().enumerate() {
            writeln!(out, "{}. {} <{}>", n + 1, escape(&result.title), escape(&result.url))?;
            if !result.snippet.is_empty() {
                writeln!(out, "   {}", escape(&result.snippet))?;
            }
        }
        if let Some(filed) = &filed {
            let kept = results.len() - filed.len();
            let kept = if kept > 0 { format!(" ({kept} already ingested as pages, kept)") } else { String::new() };
            writeln!(out, "filed {} results{kept}; the next `knowledge build` indexes them", filed.len())?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
