//! Listings, the run ledger, statistics and the stored lint findings over the Postgres store: the same
//! answers as the SQLite index's, across the projects a principal may read, each item naming its project.
//! Each project's own principals decide what is hidden there (a path hidden in one project says nothing
//! about another's). Text is ordered and compared bytewise (`COLLATE "C"`), as SQLite and the merges here
//! do, whatever the database's collation.

use ::postgres::Row;

use super::postgres::number;
use super::*;
use crate::retrieval::search::{NO_EMBEDDINGS, ProjectScope, StoreReadError};
use crate::store::postgres::PgStore;

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
        let rows = store
            .rows(
                "SELECT path, line, col, severity, code, message FROM knowledge_lint_findings WHERE project = $1
                 ORDER BY path COLLATE \"C\", line, col, code COLLATE \"C\"",
                &[&scope.project],
            )
            .map_err(failed(store))?;
        findings.extend(
            rows.iter()
                .map(|row| LintFinding {
                    path: row.get(0),
                    line: number(row, 1),
                    column: number(row, 2),
                    severity: row.get(3),
                    code: row.get(4),
                    message: row.get(5),
                    project: Some(scope.project.clone()),
                })
                .filter(|finding| is_shown(finding, paths, min_severity, &scope.access)),
        );
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
    let not_generated = crate::store::not_generated();
    for scope in &scopes {
        let hidden = scope.access.hidden_sources().to_vec();
        let row = store
            .rows(
                &format!(
                    "SELECT (SELECT count(*) FROM knowledge_sources
                             WHERE project = $1 AND {not_generated} AND NOT (id = ANY($2))),
                            (SELECT count(*) FROM knowledge_chunks
                             WHERE project = $1 AND entity IS NULL AND NOT (source_id = ANY($2))
                               AND source_id IN (SELECT id FROM knowledge_sources
                                                 WHERE project = $1 AND {not_generated})),
                            (SELECT count(*) FROM knowledge_pages WHERE project = $1),
                            (SELECT count(*) FROM knowledge_runs WHERE project = $1 AND kind = 'build')"
                ),
                &[&scope.project, &hidden],
            )
            .map_err(failed(store))?;
        let count = |at: usize| row[0].get::<_, i64>(at).cast_unsigned();
        stats.sources += count(0);
        stats.chunks += count(1);
        stats.pages += count(2);
        stats.runs += count(3);
        let last = builds(store, scope, "$2::text IS NULL", &None::<String>, 1)?.into_iter().next();
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
            let waiting = store
                .rows(
                    &format!(
                        "SELECT count(*) FROM knowledge_chunks c
                         WHERE c.project = $1 AND c.entity IS NULL AND NOT {}
                           AND NOT EXISTS (SELECT 1 FROM knowledge_vectors v WHERE v.chunk_seq = c.seq AND v.model = $2)",
                        Origin::Note.sql_condition("c.path")
                    ),
                    &[&scope.project, model],
                )
                .map_err(failed(store))?[0]
                .get::<_, i64>(0);
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
    let since = since.map(str::to_string);
    let mut changes = Vec::new();
    for scope in ProjectScope::each(store, projects, principal)? {
        let condition = "$2::text IS NULL OR id COLLATE \"C\" > $2 OR started_at COLLATE \"C\" > $2";
        for run in builds(store, &scope, condition, &since, limit)? {
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
        let rows = store
            .rows(
                "SELECT id, kind, status, started_at, finished_at, tool_version, summary::text FROM knowledge_runs
                 WHERE project = $1 AND (($2::text IS NULL AND kind = 'build') OR id = $2)
                 ORDER BY id COLLATE \"C\" DESC LIMIT 1",
                &[&scope.project, &id],
            )
            .map_err(failed(store))?;
        let Some(row) = rows.first() else { continue };
        let run = RunStatus {
            id: row.get(0),
            kind: row.get(1),
            status: row.get(2),
            started_at: row.get(3),
            finished_at: row.get(4),
            tool_version: row.get(5),
            summary: serde_json::from_str(row.get::<_, &str>(6)).unwrap_or_default(),
            events: Vec::new(),
            project: Some(scope.project.clone()),
        };
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
            let selected = if kind == ListKind::Notes {
                Origin::Note.sql_condition("path")
            } else {
                format!("({} OR {})", Origin::File.sql_condition("path"), Origin::External.sql_condition("path"))
            };
            // Projects in the order given; within one, by path.
            let start = scopes.iter().position(|s| s.project == after_project).unwrap_or(0);
            let mut items: Vec<SourceItem> = Vec::new();
            for scope in &scopes[start..] {
                let after = if scope.project == after_project { after_path } else { "" };
                let hidden = scope.access.hidden_sources().to_vec();
                let rows = store
                    .rows(
                        &format!(
                            "SELECT uri, path, title, kind, revision, size, chunk_count FROM knowledge_sources
                             WHERE project = $1 AND path COLLATE \"C\" > $2 AND {selected} AND NOT (id = ANY($3))
                             ORDER BY path COLLATE \"C\" LIMIT $4"
                        ),
                        &[&scope.project, &after, &hidden, &(fetch - items.len() as i64)],
                    )
                    .map_err(failed(store))?;
                items.extend(rows.iter().map(|row| SourceItem {
                    uri: row.get(0),
                    path: row.get(1),
                    title: row.get(2),
                    source_kind: row.get(3),
                    revision: row.get(4),
                    size: row.get::<_, i64>(5).cast_unsigned(),
                    chunk_count: u64::from(number(row, 6)),
                    project: Some(scope.project.clone()),
                }));
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
                let condition = "$2::text IS NULL OR id COLLATE \"C\" < $2";
                items.extend(runs_of(store, scope, kind.run_kind(), condition, &before, fetch)?);
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

/// A project's builds matching `condition` (over `$2`, the cursor or `since`), newest first, `limit` of
/// them: [`runs_of`] for builds.
fn builds(
    store: &mut PgStore,
    scope: &ProjectScope,
    condition: &str,
    key: &Option<String>,
    limit: i64,
) -> Result<Vec<RunItem>, StoreReadError> {
    runs_of(store, scope, RunKind::Build, condition, key, limit)
}

/// A project's runs of `kind` matching `condition`, newest first, `limit` of them; a principal who cannot
/// read every source of the project sees each summary [redacted](RunKind::redacted). Asks against the store
/// are not recorded, so it holds builds only today.
fn runs_of(
    store: &mut PgStore,
    scope: &ProjectScope,
    kind: RunKind,
    condition: &str,
    key: &Option<String>,
    limit: i64,
) -> Result<Vec<RunItem>, StoreReadError> {
    let rows = store
        .rows(
            &format!(
                "SELECT id, started_at, finished_at, status, tool_version, vcs::text, summary::text FROM knowledge_runs
                 WHERE project = $1 AND kind = '{}' AND ({condition}) ORDER BY id COLLATE \"C\" DESC LIMIT $3",
                kind.as_str()
            ),
            &[&scope.project, key, &limit],
        )
        .map_err(failed(store))?;
    let redact = !scope.access.reads_everything();
    Ok(rows
        .iter()
        .map(|row| RunItem {
            id: row.get(0),
            started_at: row.get(1),
            finished_at: row.get(2),
            status: row.get(3),
            tool_version: row.get(4),
            vcs: serde_json::from_str(row.get::<_, &str>(5)).unwrap_or_default(),
            summary: if redact {
                kind.redacted()
            } else {
                serde_json::from_str(row.get::<_, &str>(6)).unwrap_or_default()
            },
            project: Some(scope.project.clone()),
        })
        .collect())
}

/// A run's events in order, each with the labels of the source it names.
fn events(store: &mut PgStore, project: &str, run_id: &str) -> Result<Vec<(ChangeEvent, String)>, StoreReadError> {
    let rows = store
        .rows(
            "SELECT kind, path, old_revision, new_revision, detail, labels FROM knowledge_run_events
             WHERE project = $1 AND run_id = $2 ORDER BY seq",
            &[&project, &run_id],
        )
        .map_err(failed(store))?;
    Ok(rows
        .iter()
        .map(|row: &Row| {
            let event = ChangeEvent {
                kind: row.get(0),
                path: row.get(1),
                old_revision: row.get(2),
                new_revision: row.get(3),
                detail: row.get(4),
            };
            (event, row.get(5))
        })
        .collect())
}
