//! A Python interpreter with the packages a test needs (the MCP SDK, a JSON Schema validator).
//!
//! `KNOWLEDGE_TEST_PYTHON` wins when set. Otherwise `python3` is used when it imports every package, and
//! else a virtual environment under the target folder, into which the missing packages are installed from
//! PyPI. `.ci/run` installs them up front.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `packages` are pip requirements such as `mcp==2.3.0` or `moto[server]==5.2.5`; the module imported is
/// the name before `==` or `[`, with `-` read as `_`.
pub(crate) fn with_packages(packages: &[&str]) -> PathBuf {
    // Tests of one binary run in parallel; only one of them may create and fill the environment.
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _setup = SETUP.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(python) = std::env::var_os("KNOWLEDGE_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    let modules: Vec<String> =
        packages.iter().map(|p| p.split(['=', '[']).next().unwrap_or(p).replace('-', "_")).collect();
    let imports = format!("import {}", modules.join(", "));
    let imports_all =
        |python: &Path| Command::new(python).args(["-c", &imports]).output().is_ok_and(|o| o.status.success());
    let system = PathBuf::from("python3");
    if imports_all(&system) {
        return system;
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-python");
    let python = venv.join("bin/python");
    if !python.exists() {
        let created = Command::new("python3").arg("-m").arg("venv").arg(&venv).status().expect("python3 runs");
        assert!(
            created.success(),
            "`python3 -m venv` failed; install the test clients with `python3 -m pip install {}` or point \
             KNOWLEDGE_TEST_PYTHON at a Python that has them",
            packages.join(" ")
        );
    }
    if !imports_all(&python) {
        let installed = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(packages)
            .status()
            .expect("pip runs");
        assert!(installed.success(), "pip install {} failed", packages.join(" "));
    }
    python
}
