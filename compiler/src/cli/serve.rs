//! `knowledge serve`: the read-only MCP server, over stdio or streamable HTTP.

use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::config::Project;
use knowledge::serve::{KnowledgeServer, ProjectContext};

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
    /// Allow --http on an address other than loopback (requires --token-env).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Require `Authorization: Bearer TOKEN` on every HTTP request, TOKEN read from the environment variable
    /// NAME (never from the command line, where other users could read it). Required off loopback.
    #[arg(long, value_name = "NAME", requires = "http")]
    token_env: Option<String>,
    /// Let `knowledge_ask` generate its answers with this provider of kc.toml (`[providers.NAME]`), each
    /// sentence's citations checked; without it, answers are extractive. The provider's key is read from
    /// its environment variable here, by the server's operator.
    #[arg(long, value_name = "NAME", conflicts_with = "db")]
    ask_provider: Option<String>,
    /// Let `knowledge_web_search` search the web with this provider of kc.toml (`[providers.NAME]`), within
    /// `[web]`'s domains and cap; kc.toml must set `[web] enabled = true`. Without it, the tool refuses.
    /// Nothing found is filed: the server never writes.
    #[arg(long, value_name = "NAME", conflicts_with = "db")]
    web_provider: Option<String>,
    /// Answer from a Postgres store (searches, gets, context packs, extractive answers, listings, runs, lint,
    /// statistics); several servers may share one store. With `--project`, no kc.toml or index is needed.
    #[command(flatten)]
    store: super::output::StoreArgs,
}

pub(crate) fn run(args: ServeArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let start = args.dir.as_deref().unwrap_or(&at.start);
    // A bare index file serves without a project; a project adds stale status, open files and generation.
    // A Postgres store named on the command line (with its projects) serves without either.
    let project = match (&args.db, Project::discover(start)) {
        (Some(_), _) => None,
        (None, Ok(project)) => Some(project),
        (None, Err(knowledge::config::ConfigError::NotFound(_))) if args.store.named() => None,
        (None, Err(error)) => return Err(error.into()),
    };
    let index = match (&args.db, &project) {
        (None, None) => None,
        _ => Some(index_path(args.db.clone(), start)?),
    };
    let context = match &project {
        None if args.web_provider.is_some() => {
            anyhow::bail!("--web-provider needs a project: its kc.toml names the provider and the `[web]` limits")
        }
        None => ProjectContext::default(),
        Some(project) => {
            let provider = match &args.ask_provider {
                Some(name) => {
                    let provider = knowledge::providers::find(project, Some(name)).map_err(anyhow::Error::msg)?;
                    // A missing key is the operator's error, told at start rather than on every question.
                    provider.check_key().map_err(anyhow::Error::msg)?;
                    Some(provider)
                }
                None => None,
            };
            let mut context = ProjectContext::of(project, provider);
            if let Some(name) = &args.web_provider {
                if !project.config.web.enabled {
                    anyhow::bail!("--web-provider {name}: web search is off: set `[web] enabled = true` in kc.toml");
                }
                let provider = knowledge::providers::find(project, Some(name)).map_err(anyhow::Error::msg)?;
                provider.check_key().map_err(anyhow::Error::msg)?;
                context.web_search = Some((provider, project.config.web.clone()));
            }
            context
        }
    };
    let token = match &args.token_env {
        Some(name) => match std::env::var(name) {
            Ok(token) if !token.trim().is_empty() => Some(token),
            _ => anyhow::bail!("--token-env {name}: the environment variable `{name}` is not set"),
        },
        None => None,
    };
    let mut server = KnowledgeServer::new(index, at.principal.clone(), context);
    // The store's connections outlive the runtime (see `with_store`).
    let store = match args.store.resolve(args.db.as_deref(), project.as_ref())? {
        Some((url, projects)) => Some(std::sync::Arc::new(knowledge::serve::StoreSearch::connect(&url, projects)?)),
        None => None,
    };
    if let Some(store) = &store {
        server = server.with_store(store.clone());
    }
    // Over stdio one client sends requests on one stream: one thread reads, answers and writes them (reads of
    // the index still run on blocking threads), without the wake-ups of a thread per core handing work
    // across. Over HTTP many clients share the server, so each core takes connections.
    let runtime = match args.http {
        Some(_) => tokio::runtime::Builder::new_multi_thread().enable_all().build()?,
        None => tokio::runtime::Builder::new_current_thread().enable_all().build()?,
    };
    let served = match args.http {
        Some(address) => runtime.block_on(knowledge::serve::serve_http(server, address, args.allow_remote, token)),
        None => runtime.block_on(knowledge::serve::serve_stdio(server)),
    };
    drop(runtime);
    drop(store);
    served?;
    Ok(ExitCode::SUCCESS)
}
