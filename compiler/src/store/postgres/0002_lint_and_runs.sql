-- Migration 2: the lint findings each project's last build stored, and the rest of the run ledger, so
-- `knowledge lint --stored` and the server's `knowledge_lint`, run and change tools answer from the store.

-- The build whose findings the store holds: a publish replaces them when the local index's differ.
-- NULL for a project published before this migration, so its next publish sends them.
ALTER TABLE knowledge_projects ADD COLUMN lint_run TEXT;

CREATE TABLE knowledge_lint_findings (
    project TEXT NOT NULL REFERENCES knowledge_projects(project) ON DELETE CASCADE,
    run_id TEXT NOT NULL,
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    col INTEGER NOT NULL,
    severity TEXT NOT NULL,             -- error | warning | info
    code TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX knowledge_lint_findings_by_path ON knowledge_lint_findings(project, path, line, col);

-- What the run ledger's readers show beside a run's counters (`knowledge_run_status`, recent changes):
-- the binary that built it, the commit and CI context, and each event's detail (why a file was skipped).
ALTER TABLE knowledge_runs ADD COLUMN tool_version TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_runs ADD COLUMN vcs JSONB NOT NULL DEFAULT '{}';
ALTER TABLE knowledge_run_events ADD COLUMN detail TEXT;
