//! The index on Postgres (`[store] url = "postgres://…"`): where a build publishes its committed index for
//! readers on other machines, one project (repository) per scope, with pgvector for vectors and Postgres
//! full-text search for keywords.
//!
//! The local SQLite index stays the build's working state: it is the persisted half of the query graph,
//! which decides what changed. After each build commits, `publish` brings the project's rows in Postgres
//! in line with it in one Postgres transaction, sending only what differs: a source whose revision, derived
//! run, labels or vectors changed has its rows replaced, a page whose hash changed likewise, and a build
//! that changed nothing costs one row read. Readers never see half a build, and two builders of one
//! project take turns (a transaction-scoped advisory lock).
//!
//! The schema is versioned: `knowledge_migrations` records each migration applied, and a binary applies
//! those it lacks (under an advisory lock) and refuses a database that has migrations it does not know.

use std::collections::HashMap;

mod ledger;
mod publish;
mod resolve;
mod search;

pub use ledger::{
    chunks_without_vectors, lint_findings, project_counts, run_events, run_items, run_status, source_items,
};
pub use publish::{PublishReport, publish, record_summary};
pub use resolve::PgResolve;
pub(crate) use resolve::number;
pub use search::{EXACT_BELOW, PgSearch, chunk_headings, index_entry_pages, labelled_sources, page_quotes};

/// The migrations this binary knows, in order: (version, SQL).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("0001_index.sql")),
    (2, include_str!("0002_lint_and_runs.sql")),
    (3, include_str!("0003_title_index.sql")),
    (4, include_str!("0004_project_text_indexes.sql")),
    (5, include_str!("0005_vector_index_function.sql")),
];

/// A publish that writes at least this many chunks refreshes the planner's statistics.
const ANALYZE_AFTER: u64 = 10_000;

/// The advisory lock key migrations take (any constant; both writers and readers agree on it).
const MIGRATION_LOCK: i64 = 0x6b6e_6f77_6c65_6467;

#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    #[error("Postgres store `{target}`: {source}")]
    Postgres {
        target: String,
        #[source]
        source: postgres::Error,
    },
    #[error("reading the local index to publish it: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "the Postgres store `{target}` has schema migration {found}, newer than this binary's {known}: upgrade knowledge"
    )]
    Newer { target: String, found: i32, known: i32 },
    #[error(
        "the Postgres store `{target}` has schema migration {found}, older than this binary's {known}: a `knowledge build` with this store migrates it"
    )]
    Older { target: String, found: i32, known: i32 },
    #[error("the Postgres store `{target}` holds no project `{project}` (run `knowledge build` with this store first)")]
    NoProject { target: String, project: String },
    #[error("{what}: the store is Postgres with pgvector, `postgres://USER@HOST:PORT/DATABASE` (or `postgresql://`)")]
    NotPostgres { what: String },
}

/// A connection to the Postgres store, with where it leads (without a password) for messages.
pub struct PgStore {
    client: postgres::Client,
    /// `host/database`, safe to print.
    pub target: String,
    /// Statements prepared on this connection, by their SQL: a reader (a server, an eval) asks the same
    /// few queries again and again, and each unprepared one costs a second round trip.
    statements: HashMap<String, postgres::Statement>,
}

impl PgStore {
    /// Connects a writer and applies any migration the database lacks.
    pub fn connect(url: &str) -> Result<PgStore, PostgresError> {
        let mut store = PgStore::open(url)?;
        store.migrate()?;
        Ok(store)
    }

    /// Connects a reader: the session is read-only (the server never writes, even by mistake), and the
    /// store must hold the schema this binary reads; a reader never migrates it.
    pub fn connect_reader(url: &str) -> Result<PgStore, PostgresError> {
        let mut store = PgStore::open(url)?;
        let applied = (|| -> Result<i32, postgres::Error> {
            store.client.batch_execute("SET default_transaction_read_only = on")?;
            let row = store.client.query_one(
                "SELECT CASE WHEN to_regclass('knowledge_migrations') IS NULL THEN 0
                             ELSE (SELECT coalesce(max(version), 0) FROM knowledge_migrations) END",
                &[],
            )?;
            Ok(row.get(0))
        })()
        .map_err(|source| store.error(source))?;
        store.check_version(applied, true)?;
        Ok(store)
    }

    fn open(url: &str) -> Result<PgStore, PostgresError> {
        // Only the scheme is named: the rest of a URL may hold a password.
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            let what = url.split_once("://").map_or_else(
                || "a store URL without a scheme".to_string(),
                |(scheme, _)| format!("a `{}://` store URL", crate::escape(scheme)),
            );
            return Err(PostgresError::NotPostgres { what });
        }
        let target = redacted(url);
        let client = url
            .parse::<postgres::Config>()
            .and_then(|config| config.connect(postgres::NoTls))
            .map_err(|source| PostgresError::Postgres { target: target.clone(), source })?;
        Ok(PgStore { client, target, statements: HashMap::new() })
    }

    /// Refuses a schema newer than this binary's (and, for a reader, an older one: a writer migrates it).
    fn check_version(&self, applied: i32, exact: bool) -> Result<(), PostgresError> {
        let known = MIGRATIONS.last().map_or(0, |(version, _)| *version);
        let target = self.target.clone();
        if applied > known {
            return Err(PostgresError::Newer { target, found: applied, known });
        }
        if exact && applied < known {
            return Err(PostgresError::Older { target, found: applied, known });
        }
        Ok(())
    }

    /// `sql`, prepared once per connection.
    fn prepared(&mut self, sql: &str) -> Result<postgres::Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// Runs a prepared `sql`: its rows.
    fn rows(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.client.query(&statement, params)
    }

    /// Wraps a Postgres error with the store it came from.
    pub fn error(&self, source: postgres::Error) -> PostgresError {
        PostgresError::Postgres { target: self.target.clone(), source }
    }

    fn migrate(&mut self) -> Result<(), PostgresError> {
        let target = self.target.clone();
        let fail = |source| PostgresError::Postgres { target: target.clone(), source };
        let mut tx = self.client.transaction().map_err(fail)?;
        let applied = (|| -> Result<i32, postgres::Error> {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS knowledge_migrations (
                     version INTEGER PRIMARY KEY,
                     applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                 )",
            )?;
            let row = tx.query_one("SELECT coalesce(max(version), 0) FROM knowledge_migrations", &[])?;
            let applied: i32 = row.get(0);
            for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version > applied) {
                tx.batch_execute(sql)?;
                tx.execute("INSERT INTO knowledge_migrations (version) VALUES ($1)", &[version])?;
            }
            Ok(applied)
        })()
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        self.check_version(applied, false)
    }
}

/// `postgres://user:secret@host:port/db?x` as `host:port/db`, or the socket folder for a Unix socket.
#[must_use]
pub fn redacted(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let socket = query.split('&').find_map(|pair| pair.strip_prefix("host="));
    match socket {
        Some(folder) if rest.starts_with('/') || rest.is_empty() => format!("{folder}{rest}"),
        _ => rest.to_string(),
    }
}

/// The project's meta table as published; an error naming the project when no build has published it.
pub fn project_meta(store: &mut PgStore, project: &str) -> Result<HashMap<String, String>, PostgresError> {
    let row = store
        .client
        .query_opt("SELECT meta FROM knowledge_projects WHERE project = $1", &[&project])
        .map_err(|source| store.error(source))?
        .ok_or_else(|| PostgresError::NoProject { target: store.target.clone(), project: project.to_string() })?;
    let meta: serde_json::Value = row.get(0);
    Ok(serde_json::from_value(meta).unwrap_or_default())
}
