//! The run ledger and the listings over one project of the Postgres store: the same rows as the SQLite
//! index's `ledger.rs`, each naming its project. Text is ordered and compared bytewise (`COLLATE "C"`), as
//! SQLite does, whatever the database's collation.

use knowledge_queries::Origin;
use postgres::Row;

use super::{PgStore, number};
use crate::store::{
    ChangeEvent, LintFinding, RunItem, RunStatus, RunSummaries, RunsWhere, SourceItem, listed_sources, not_generated,
    origin_condition,
};

/// A project's stored lint findings, by path, line, column and code.
pub fn lint_findings(store: &mut PgStore, project: &str) -> Result<Vec<LintFinding>, postgres::Error> {
    let rows = store.rows(
        "SELECT path, line, col, severity, code, message FROM knowledge_lint_findings WHERE project = $1
         ORDER BY path COLLATE \"C\", line, col, code COLLATE \"C\"",
        &[&project],
    )?;
    Ok(rows
        .iter()
        .map(|row| LintFinding {
            path: row.get(0),
            line: number(row, 1),
            column: number(row, 2),
            severity: row.get(3),
            code: row.get(4),
            message: row.get(5),
            project: Some(project.to_string()),
        })
        .collect())
}

/// A project's (sources, chunks, pages, builds), counted over the sources not in `hidden` as the SQLite
/// index's [`crate::store::index_counts`] counts them.
pub fn project_counts(store: &mut PgStore, project: &str, hidden: &[i64]) -> Result<[u64; 4], postgres::Error> {
    let not_generated = not_generated();
    let rows = store.rows(
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
        &[&project, &hidden],
    )?;
    let count = |at: usize| rows[0].get::<_, i64>(at).cast_unsigned();
    Ok([count(0), count(1), count(2), count(3)])
}

/// A project's chunks the generation `model` has no vector for (notes are never embedded).
pub fn chunks_without_vectors(store: &mut PgStore, project: &str, model: &str) -> Result<i64, postgres::Error> {
    let rows = store.rows(
        &format!(
            "SELECT count(*) FROM knowledge_chunks c
             WHERE c.project = $1 AND c.entity IS NULL AND NOT {}
               AND NOT EXISTS (SELECT 1 FROM knowledge_vectors v WHERE v.chunk_seq = c.seq AND v.model = $2)",
            origin_condition(Origin::Note, "c.path")
        ),
        &[&project, &model],
    )?;
    Ok(rows[0].get(0))
}

/// Up to `limit` of a project's sources (or notes) after the path `after`, by path, among those not in
/// `hidden`.
pub fn source_items(
    store: &mut PgStore,
    project: &str,
    notes: bool,
    hidden: &[i64],
    after: &str,
    limit: i64,
) -> Result<Vec<SourceItem>, postgres::Error> {
    let rows = store.rows(
        &format!(
            "SELECT uri, path, title, kind, revision, size, chunk_count FROM knowledge_sources
             WHERE project = $1 AND path COLLATE \"C\" > $2 AND {} AND NOT (id = ANY($3))
             ORDER BY path COLLATE \"C\" LIMIT $4",
            listed_sources(notes, "path")
        ),
        &[&project, &after, &hidden, &limit],
    )?;
    Ok(rows
        .iter()
        .map(|row| SourceItem {
            uri: row.get(0),
            path: row.get(1),
            title: row.get(2),
            source_kind: row.get(3),
            revision: row.get(4),
            size: row.get::<_, i64>(5).cast_unsigned(),
            chunk_count: u64::from(number(row, 6)),
            project: Some(project.to_string()),
        })
        .collect())
}

/// Up to `limit` of a project's runs of `kind`, newest first, as recorded (summaries unredacted).
pub fn run_items(
    store: &mut PgStore,
    project: &str,
    kind: &str,
    runs: RunsWhere<'_>,
    limit: i64,
    summaries: &RunSummaries,
) -> Result<Vec<RunItem>, postgres::Error> {
    let (condition, key) = match runs {
        RunsWhere::All => ("$2::text IS NULL", None),
        RunsWhere::Before(before) => ("$2::text IS NULL OR id COLLATE \"C\" < $2", before),
        RunsWhere::Since(since) => ("id COLLATE \"C\" > $2 OR started_at COLLATE \"C\" > $2", Some(since)),
    };
    let rows = store.rows(
        &format!(
            "SELECT id, started_at, finished_at, status, tool_version, vcs::text, {}::text FROM knowledge_runs
             WHERE project = $1 AND kind = $4 AND ({condition}) ORDER BY id COLLATE \"C\" DESC LIMIT $3",
            summaries.column()
        ),
        &[&project, &key, &limit, &kind],
    )?;
    Ok(rows
        .iter()
        .map(|row| RunItem {
            id: row.get(0),
            started_at: row.get(1),
            finished_at: row.get(2),
            status: row.get(3),
            tool_version: row.get(4),
            vcs: serde_json::from_str(row.get::<_, &str>(5)).unwrap_or_default(),
            summary: summaries.shown(row.get::<_, Option<&str>>(6)),
            project: Some(project.to_string()),
        })
        .collect())
}

/// A project's run `id`, or its newest build when `None`, without its events.
pub fn run_status(store: &mut PgStore, project: &str, id: Option<&str>) -> Result<Option<RunStatus>, postgres::Error> {
    let rows = store.rows(
        "SELECT id, kind, status, started_at, finished_at, tool_version, summary::text FROM knowledge_runs
         WHERE project = $1 AND (($2::text IS NULL AND kind = 'build') OR id = $2)
         ORDER BY id COLLATE \"C\" DESC LIMIT 1",
        &[&project, &id],
    )?;
    Ok(rows.first().map(|row| RunStatus {
        id: row.get(0),
        kind: row.get(1),
        status: row.get(2),
        started_at: row.get(3),
        finished_at: row.get(4),
        tool_version: row.get(5),
        summary: serde_json::from_str(row.get::<_, &str>(6)).unwrap_or_default(),
        events: Vec::new(),
        project: Some(project.to_string()),
    }))
}

/// A project's run's events in order, each with the labels of the source it names.
pub fn run_events(
    store: &mut PgStore,
    project: &str,
    run_id: &str,
) -> Result<Vec<(ChangeEvent, String)>, postgres::Error> {
    let rows = store.rows(
        "SELECT kind, path, old_revision, new_revision, detail, labels FROM knowledge_run_events
         WHERE project = $1 AND run_id = $2 ORDER BY seq",
        &[&project, &run_id],
    )?;
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
