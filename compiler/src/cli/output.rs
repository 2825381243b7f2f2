//! How results reach people and machines: JSON or each result's human format, with names escaped.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use knowledge::build::BuildSummary;
use knowledge::config::Project;
use knowledge::escape;
use knowledge::retrieval::search::{Highlight, SearchRequest, SearchResponse};
use knowledge::store::{self, DB_FILE};

/// Prints `value` as pretty JSON, or in its human format.
pub(crate) fn print<T: serde::Serialize>(
    json: bool,
    value: &T,
    human: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
    } else {
        human(&mut out)?;
    }
    Ok(())
}

/// The index (`--db`, or the one kc.toml names), a read-only connection to it, and the principal's access.
pub(crate) fn open_as(
    db: Option<PathBuf>,
    start: &Path,
    principal: Option<&str>,
) -> anyhow::Result<(PathBuf, rusqlite::Connection, knowledge::retrieval::access::Access)> {
    let index = index_path(db, start)?;
    let conn = store::open_read_only(&index)?;
    let access = knowledge::retrieval::access::Access::load(&conn, principal)?;
    Ok((index, conn, access))
}

/// The remote server to ask instead of a local index: `KNOWLEDGE_API_URL`, else `[remote] url` of the
/// project's kc.toml; none with `--db`, which names a local index.
pub(crate) fn remote(
    db: Option<&Path>,
    at: &super::Invocation,
) -> anyhow::Result<Option<knowledge::serve::client::Remote>> {
    use knowledge::serve::client::{KEY_VARIABLE, Remote, URL_VARIABLE};
    if db.is_some() {
        return Ok(None);
    }
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (url, key_variable) = match set(URL_VARIABLE) {
        Some(url) => (url, KEY_VARIABLE.to_string()),
        None => {
            let Ok(project) = Project::discover(&at.start) else { return Ok(None) };
            let Some(url) = project.config.remote.url.clone() else { return Ok(None) };
            (url, project.config.remote.api_key_env.clone().unwrap_or_else(|| KEY_VARIABLE.to_string()))
        }
    };
    anyhow::ensure!(
        at.principal.is_none(),
        "--as: a remote server answers as the principal it serves; --as reads a local index"
    );
    // The environment's key first; else the one `knowledge setup --mode hosted` kept for this URL.
    let key = match set(&key_variable) {
        Some(key) => Some(key),
        None => knowledge::config::hosted::stored_key(&url).unwrap_or_else(|error| match error {
            knowledge::config::hosted::HostedError::Scope(_) => None,
            _ => {
                eprintln!("warning: {}", knowledge::escape_text(&knowledge::error_chain(&error)));
                None
            }
        }),
    };
    Ok(Some(Remote::connect(&url, key).map_err(anyhow::Error::msg)?))
}

/// A snippet's Markdown bold marks as a terminal's bold, for answers a remote server marked for JSON.
pub(crate) fn terminal_marks(response: &mut SearchResponse) {
    for result in &mut response.results {
        let mut text = String::with_capacity(result.snippet.len());
        for (n, part) in result.snippet.split("**").enumerate() {
            if n > 0 {
                text.push_str(if n % 2 == 1 { "\u{1b}[1m" } else { "\u{1b}[0m" });
            }
            text.push_str(part);
        }
        result.snippet = text;
    }
}

/// The index to read: `--db`, or the one the project's kc.toml names.
pub(crate) fn index_path(db: Option<PathBuf>, start: &Path) -> anyhow::Result<PathBuf> {
    Ok(match db {
        Some(path) => path,
        None => Project::discover(start)?.output_dir().join(DB_FILE),
    })
}

/// The lines of what providers and the store did in a build: the wiki writer, the embeddings, Postgres.
fn print_providers(out: &mut impl Write, summary: &BuildSummary) -> std::io::Result<()> {
    if let Some(w) = summary.wiki_writer.as_ref().filter(|w| w.written + w.refused + w.owed > 0) {
        writeln!(
            out,
            "wiki writer ({}): {} summaries written ({} from the cache), {} refused, {} owed; {} calls, {} of {} sentences held up, {} + {} tokens, ${:.4}",
            escape(&w.writer),
            w.written,
            w.cached,
            w.refused,
            w.owed,
            w.calls,
            w.sentences_supported,
            w.sentences_supported + w.sentences_dropped,
            w.input_tokens,
            w.output_tokens,
            w.cost_usd,
        )?;
    }
    if let Some(e) = &summary.embeddings {
        writeln!(
            out,
            "embeddings ({}{}): {} computed, {} reused, {} pending, {} deleted{}",
            e.model,
            if e.fake { ", fake: for tests only" } else { "" },
            e.computed,
            e.reused,
            e.pending,
            e.deleted,
            // The provider's speed, where it did enough work to say.
            if e.computed > 0 && e.ms >= 100 {
                format!(" ({:.1} chunks/s)", e.computed as f64 * 1000.0 / e.ms as f64)
            } else {
                String::new()
            }
        )?;
    }
    if let Some(s) = &summary.store {
        writeln!(
            out,
            "store {} (project {}): {} sources written, {} removed, {}{} chunks, {} vectors, {} pages, {} lint findings ({} ms)",
            escape(&s.target),
            escape(&s.project),
            s.sources_written,
            s.sources_removed,
            if s.sources_refreshed > 0 {
                format!("{} derived again unchanged, ", s.sources_refreshed)
            } else {
                String::new()
            },
            s.chunks_written,
            s.vectors_written,
            s.pages_written,
            s.lint_findings_written,
            s.ms
        )?;
    }
    Ok(())
}

pub(crate) fn print_build(out: &mut impl Write, root: &Path, summary: &BuildSummary) -> std::io::Result<()> {
    let s = &summary.sources;
    let c = &summary.chunks;
    let seconds = summary.wall_ms as f64 / 1000.0;
    if summary.wrote {
        writeln!(
            out,
            "compiled {} sources: {} added, {} changed, {} removed, {} unchanged, {} skipped",
            s.scanned - s.skipped,
            s.added,
            s.changed,
            s.removed,
            s.unchanged,
            s.skipped
        )?;
        writeln!(
            out,
            "chunks: {} computed, {} reused, {} deleted, {} in the index",
            c.computed, c.reused, c.deleted, c.total
        )?;
        let e = &summary.entities;
        if e.added + e.changed + e.removed > 0 {
            writeln!(out, "entities: {} added, {} changed, {} removed", e.added, e.changed, e.removed)?;
        }
    } else {
        writeln!(out, "nothing changed: {} sources up to date, {} skipped", s.unchanged, s.skipped)?;
    }
    // Every file that is not a page: the index shards and each declared kind (`llms.txt`, the schema).
    let p = &summary.pages;
    let others = std::iter::once(&summary.shards).chain(summary.artifacts.values());
    let (other_changes, others_written) = others
        .fold((0, 0), |(changes, written), i| (changes + i.rendered + i.written + i.deleted, written + i.written));
    if p.rendered + p.written + p.deleted + other_changes > 0 {
        writeln!(
            out,
            "wiki: {} pages rendered, {} written, {} unchanged, {} deleted; {} other files written",
            p.rendered, p.written, p.unchanged, p.deleted, others_written
        )?;
    }
    print_providers(out, summary)?;
    let index = summary.index.strip_prefix(root).unwrap_or(&summary.index);
    writeln!(out, "index: {} ({seconds:.2} s)", index.display())
}

/// A search as the CLI runs it: on the index `--db` names or the project's, as the principal, with terminal
/// highlighting unless the answer is JSON. Returns the connection and access for what follows.
pub(crate) fn cli_search(
    db: Option<PathBuf>,
    at: &super::Invocation,
    mut request: SearchRequest,
    json: bool,
) -> anyhow::Result<(rusqlite::Connection, knowledge::retrieval::access::Access, SearchResponse)> {
    let (index, conn, access) = open_as(db, &at.start, at.principal())?;
    request.highlight = if !json && std::io::stdout().is_terminal() { Highlight::Ansi } else { Highlight::Markdown };
    let response = knowledge::retrieval::search::search(&conn, &request, &access)
        .with_context(|| format!("searching `{}`", index.display()))?;
    Ok((conn, access, response))
}

/// `--store URL` and `--project NAME`: read a Postgres store instead of the local index.
#[derive(clap::Args)]
pub(crate) struct StoreArgs {
    /// Read this Postgres store instead of the local index (else `KNOWLEDGE_STORE_URL`, else `[store] url`).
    #[arg(long = "store", value_name = "URL")]
    url: Option<String>,
    /// With a Postgres store: read this project (repeatable; a ref resolves in the first that holds it;
    /// default: this project's `[store] project`).
    #[arg(long = "project", value_name = "NAME")]
    projects: Vec<String>,
}

impl StoreArgs {
    /// Whether the command line names a store or its projects.
    pub(crate) fn named(&self) -> bool {
        self.url.is_some() || !self.projects.is_empty()
    }

    /// The store `--store` names for a BEIR collection, which is always published under the project `eval`.
    pub(crate) fn corpus_url(self) -> anyhow::Result<Option<String>> {
        anyhow::ensure!(
            self.projects.is_empty(),
            "--corpus is published under the project `eval`; --project reads a project with --judged"
        );
        Ok(self.url)
    }

    /// The store to read and its projects, when one is named (`--store`, `KNOWLEDGE_STORE_URL` or `project`'s
    /// `[store] url`) and no index file is (`db`); `None` reads the local index.
    pub(crate) fn resolve(
        self,
        db: Option<&Path>,
        project: Option<&Project>,
    ) -> anyhow::Result<Option<(String, Vec<String>)>> {
        if db.is_some() {
            anyhow::ensure!(!self.named(), "--store and --project name a Postgres store; --db reads an index file");
            return Ok(None);
        }
        let url = self.url.or_else(|| match project {
            Some(project) => project.store_url(),
            None => std::env::var("KNOWLEDGE_STORE_URL").ok().filter(|url| !url.is_empty()),
        });
        let Some(url) = url else {
            anyhow::ensure!(
                self.projects.is_empty(),
                "--project needs a Postgres store (--store, KNOWLEDGE_STORE_URL or [store] url)"
            );
            return Ok(None);
        };
        let mut projects = self.projects;
        if projects.is_empty() {
            let project = project.context("no kc.toml here to name the project: pass --project NAME")?;
            projects.push(project.store_project());
        }
        Ok(Some((url, projects)))
    }

    /// [`StoreArgs::resolve`] for a reading command, from the project it runs in, connected read-only.
    pub(crate) fn open(
        self,
        db: Option<&Path>,
        at: &super::Invocation,
    ) -> anyhow::Result<Option<(knowledge::store::postgres::PgStore, Vec<String>)>> {
        let project = Project::discover(&at.start).ok();
        let Some((url, projects)) = self.resolve(db, project.as_ref())? else { return Ok(None) };
        Ok(Some((knowledge::store::postgres::PgStore::connect_reader(&url)?, projects)))
    }
}

/// A search of the Postgres store as the CLI runs it, as the principal, highlighted as [`cli_search`] does.
pub(crate) fn postgres_search(
    store: &mut knowledge::store::postgres::PgStore,
    projects: &[String],
    mut request: SearchRequest,
    json: bool,
    at: &super::Invocation,
) -> anyhow::Result<SearchResponse> {
    request.highlight = if !json && std::io::stdout().is_terminal() { Highlight::Ansi } else { Highlight::Markdown };
    Ok(knowledge::retrieval::search::search_postgres(store, projects, &request, at.principal())?)
}

pub(crate) fn print_search(out: &mut impl Write, response: &SearchResponse) -> std::io::Result<()> {
    // A search that could not be served as asked says so here as in JSON (`degraded`): keyword results
    // presented as semantic ones would mislead.
    if response.degraded {
        let reason = response.degraded_reason.as_deref().unwrap_or("no embeddings");
        writeln!(out, "note: semantic ranking is unavailable ({}): these are keyword results only", escape(reason))?;
    }
    if response.terms_dropped {
        let searched = knowledge::retrieval::terms::MAX_TERMS;
        writeln!(out, "note: the query has more words than are searched; only its first {searched} were")?;
    }
    if response.results.is_empty() {
        return writeln!(out, "no results for \"{}\"", escape(&response.query));
    }
    for (rank, result) in response.results.iter().enumerate() {
        let c = &result.citation;
        let lines = if c.start_line == c.end_line {
            format!("{}", c.start_line)
        } else {
            format!("{}-{}", c.start_line, c.end_line)
        };
        writeln!(out, "{}. {}", rank + 1, escape(&result.title))?;
        if let Some(entity) = &result.entity {
            writeln!(out, "   entity {}", escape(&entity.slug))?;
        }
        let project = result.source.project.as_ref().map_or(String::new(), |project| format!("{}: ", escape(project)));
        writeln!(
            out,
            "   {project}{}:{}  rev {}  score {:.3}",
            escape(&result.source.path),
            lines,
            &result.source.revision[..12],
            result.score
        )?;
        for line in result.snippet.lines().filter(|l| !l.trim().is_empty()) {
            writeln!(out, "   {}", line.trim_end())?;
        }
        writeln!(out)?;
    }
    Ok(())
}
