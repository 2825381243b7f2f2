//! Listings, the run ledger, statistics and the stored lint findings over the Postgres store: the same
//! answers as the SQLite index's, across the projects a principal may read, each item naming its project.
//! Each project's own principals decide what is hidden there (a path hidden in one project says nothing
//! about another's). Merges across projects compare text bytewise, as the store orders it.

use super::*;
use crate::retrieval::search::{NO_EMBEDDINGS, ProjectScope, StoreReadError};
use crate::store::RunsWhere;
use crate::store::postgres::{self as pg, PgStore};

/// Separates a project from a key in a listing's cursor: names never hold it.
const CURSOR_SEPARATOR: char = '\u{1f}';

fn failed(store: &PgStore) -> impl Fn(::postgres::Error) -> StoreReadError + '_ {
    |source| StoreReadError::from(store.error(source))
}

/// The stored lint findings of each readable project, as [`lint_results`] answers for the local index.
/// `run_id` is the build that computed them when one project is read.
pub fn lint_results_postgres(
    store: &mut PgStore,
    projects: &[String],
    paths: &[String],
    min_severity: crate::lint::Severity,
    principal: Option<&str>,
) -> Result<LintResults, StoreReadError> {
    let scopes = ProjectScope::each(store, projects, principal)?;
    let mut findings = Vec::new();
    for scope in &scopes {
        let found = pg::lint_findings(store, &scope.project).map_err(failed(store))?;
        findings.extend(found.into_iter().filter(|finding| is_shown(finding, paths, min_severity, &scope.access)));
    }
    let run_id = match scopes.as_slice() {
        [only] => only.meta.get("lint_run").filter(|id| !id.is_empty()).cloned(),
        _ => None,
    };
    Ok(LintResults { run_id, findings })
}

/// Counts over the readable projects, the newest build among them, and which search modes work.
pub fn stats_postgres(
    store: &mut PgStore,
    projects: &[String],
    principal: Option<&str>,
) -> Result<Stats, StoreReadError> {
    let scopes = ProjectScope::each(store, projects, principal)?;
    let mut stats = Stats {
        format_version: scopes.first().and_then(|s| s.meta.get("format_version").cloned()).unwrap_or_default(),
        sources: 0,
        chunks: 0,
        pages: 0,
        runs: 0,
        last_run: None,
        search_modes: vec!["keyword"],
        degraded: true,
        degraded_reason: Some(NO_EMBEDDINGS.to_string()),
        embeddings_model: None,
    };
    for scope in &scopes {
        let [sources, chunks, pages, runs] =
            pg::project_counts(store, &scope.project, scope.access.hidden_sources()).map_err(failed(store))?;
        stats.sources += sources;
        stats.chunks += chunks;
        stats.pages += pages;
        stats.runs += runs;
        let last = builds(store, scope, RunsWhere::All, 1)?.into_iter().next();
        if let Some(last) = last.filter(|last| stats.last_run.as_ref().is_none_or(|newest| last.id > newest.id)) {
            stats.last_run = Some(last);
        }
        // The first project with a generation decides, as it does for semantic search.
        if stats.embeddings_model.is_none()
            && let Some(model) = scope.meta.get("embeddings_model").filter(|model| !model.is_empty())
        {
            stats.embeddings_model = Some(model.clone());
            stats.search_modes = vec!["keyword", "semantic", "hybrid"];
            // Chunks the generation has no vector for: ones a provider failed on (notes are never embedded).
            let waiting = pg::chunks_without_vectors(store, &scope.project, model).map_err(failed(store))?;
            let finished = scope.meta.get("embedded_run") == scope.meta.get("last_run");
            stats.degraded = !finished || waiting > 0;
            stats.degraded_reason = if !finished {
                Some(format!("project `{}`: the last build's embedding stage did not finish", scope.project))
            } else if waiting > 0 {
                Some(format!("{waiting} chunks are waiting for their embeddings; the next build retries them"))
            } else {
                None
            };
        }
    }
    Ok(stats)
}

/// The last `runs` builds across the readable projects, newest first, or every build since `since` (a run
/// id, or an RFC 3339 time compared with the build's start), each with the events the principal may read.
pub fn recent_changes_postgres(
    store: &mut PgStore,
    projects: &[String],
    runs: u32,
    since: Option<&str>,
    principal: Option<&str>,
) -> Result<Vec<Change>, StoreReadError> {
    let limit = i64::from(runs.clamp(1, 1000));
    let runs = since.map_or(RunsWhere::All, RunsWhere::Since);
    let mut changes = Vec::new();
    for scope in ProjectScope::each(store, projects, principal)? {
        for run in builds(store, &scope, runs, limit)? {
            let events = events(store, &scope.project, &run.id)?
                .into_iter()
                .filter(|(event, labels)| {
                    scope.access.can_read_labels(labels) && scope.access.can_read_path(&event.path)
                })
                .map(|(event, _)| event)
                .collect();
            changes.push(Change { run, events });
        }
    }
    changes.sort_by(|a, b| b.run.id.cmp(&a.run.id));
    changes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(changes)
}

/// The run `id` in the first readable project holding it, or the newest build among them when `None`.
pub fn run_status_postgres(
    store: &mut PgStore,
    projects: &[String],
    id: Option<&str>,
    principal: Option<&str>,
) -> Result<RunStatus, StoreReadError> {
    let missing = || StoreReadError::from(ReaderError::NotFound(id.unwrap_or("the last build").to_string()));
    let mut found: Option<(RunStatus, &ProjectScope)> = None;
    let scopes = ProjectScope::each(store, projects, principal)?;
    for scope in &scopes {
        let Some(run) = pg::run_status(store, &scope.project, id).map_err(failed(store))? else { continue };
        if found.as_ref().is_none_or(|(newest, _)| id.is_none() && run.id > newest.id) {
            found = Some((run, scope));
        }
        if id.is_some() {
            break;
        }
    }
    let (run, scope) = found.ok_or_else(missing)?;
    let events = events(store, &scope.project, &run.id)?;
    super::runs::as_readable(run, events, &scope.access).ok_or_else(missing)
}

/// Sources, notes or builds across the readable projects, `limit` at a time: sources by project then path,
/// builds newest first. Pages and index shards are listed from a local index (their rows live with the
/// artifacts, not in the store).
pub fn list_postgres(
    store: &mut PgStore,
    projects: &[String],
    kind: ListKind,
    cursor: Option<&str>,
    limit: u32,
    principal: Option<&str>,
) -> Result<Listing, StoreReadError> {
    let limit = limit.clamp(1, 1000);
    let fetch = i64::from(limit) + 1;
    let scopes = ProjectScope::each(store, projects, principal)?;
    let empty = Listing { kind, sources: None, runs: None, pages: None, indexes: None, next_cursor: None };
    match kind {
        ListKind::Sources | ListKind::Notes => {
            let after = decode_cursor(cursor, "s:")?.unwrap_or_default();
            let (after_project, after_path) = after.split_once(CURSOR_SEPARATOR).unwrap_or(("", ""));
            let notes = kind == ListKind::Notes;
            // Projects in the order given; within one, by path.
            let start = scopes.iter().position(|s| s.project == after_project).unwrap_or(0);
            let mut items: Vec<SourceItem> = Vec::new();
            for scope in &scopes[start..] {
                let after = if scope.project == after_project { after_path } else { "" };
                let hidden = scope.access.hidden_sources();
                let found = pg::source_items(store, &scope.project, notes, hidden, after, fetch - items.len() as i64)
                    .map_err(failed(store))?;
                items.extend(found);
                if items.len() as i64 >= fetch {
                    break;
                }
            }
            let next_cursor = page_cursor(&mut items, limit, |item| {
                format!("s:{}{CURSOR_SEPARATOR}{}", item.project.as_deref().unwrap_or_default(), item.path)
            });
            Ok(Listing { sources: Some(items), next_cursor, ..empty })
        }
        ListKind::Runs | ListKind::AskRuns => {
            let before = decode_cursor(cursor, "r:")?;
            let mut items = Vec::new();
            for scope in &scopes {
                items.extend(runs_of(store, scope, kind.run_kind(), RunsWhere::Before(before.as_deref()), fetch)?);
            }
            items.sort_by(|a, b| b.id.cmp(&a.id));
            items.truncate(usize::try_from(fetch).unwrap_or(usize::MAX));
            let next_cursor = page_cursor(&mut items, limit, |item| format!("r:{}", item.id));
            Ok(Listing { runs: Some(items), next_cursor, ..empty })
        }
        ListKind::Pages | ListKind::Indexes => Err(StoreReadError::NotInStore(
            "generated pages and index shards are listed from a local index (`--db`), not from a Postgres store",
        )),
    }
}

/// A project's builds, newest first, `limit` of them: [`runs_of`] for builds.
fn builds(
    store: &mut PgStore,
    scope: &ProjectScope,
    runs: RunsWhere<'_>,
    limit: i64,
) -> Result<Vec<RunItem>, StoreReadError> {
    runs_of(store, scope, RunKind::Build, runs, limit)
}

/// A project's runs of `kind`, newest first, `limit` of them; a principal who cannot read every source of
/// the project sees each summary [redacted](RunKind::redacted). Asks against the store are not recorded, so
/// it holds builds only today.
fn runs_of(
    store: &mut PgStore,
    scope: &ProjectScope,
    kind: RunKind,
    runs: RunsWhere<'_>,
    limit: i64,
) -> Result<Vec<RunItem>, StoreReadError> {
    let summaries = kind.summaries(&scope.access);
    pg::run_items(store, &scope.project, kind.as_str(), runs, limit, &summaries).map_err(failed(store))
}

/// A run's events in order, each with the labels of the source it names.
fn events(store: &mut PgStore, project: &str, run_id: &str) -> Result<Vec<(ChangeEvent, String)>, StoreReadError> {
    pg::run_events(store, project, run_id).map_err(failed(store))
}
