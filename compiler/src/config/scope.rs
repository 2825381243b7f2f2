//! Scopes: `project` (the kc.toml found from the working folder up, the default) and `global`, the user's own
//! knowledge base for notes and sources that belong to no repository, at `$KNOWLEDGE_HOME` or
//! `~/.hasna/knowledge/`. The global knowledge base is a project like any other (its own kc.toml, its index
//! under `index/`); only where it is found differs, and it is never looked for in parent folders.

use std::path::{Path, PathBuf};

/// The variable that moves the global knowledge base (and the credentials file beside it).
pub const HOME_VARIABLE: &str = "KNOWLEDGE_HOME";

/// The global knowledge base's folder under the user's home folder.
pub const DEFAULT_HOME: &str = ".hasna/knowledge";

/// The global knowledge base's output folder, inside its home.
pub const GLOBAL_OUTPUT_DIR: &str = "index";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The project: the kc.toml found from the working folder (or `-C DIR`) up.
    #[default]
    Project,
    /// The user's own knowledge base: `$KNOWLEDGE_HOME`, or `~/.hasna/knowledge/`.
    Global,
}

#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("neither `{HOME_VARIABLE}` nor `HOME` is set: the global knowledge base has no home")]
    NoHome,
    #[error(
        "no global knowledge base at `{}` (run `knowledge init --scope global` to create one)",
        .0.display()
    )]
    NotInitialized(PathBuf),
}

/// The global knowledge base's folder: `$KNOWLEDGE_HOME`, else `$HOME/.hasna/knowledge`.
pub fn global_home() -> Result<PathBuf, ScopeError> {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    set(HOME_VARIABLE).or_else(|| set("HOME").map(|home| home.join(DEFAULT_HOME))).ok_or(ScopeError::NoHome)
}

/// The folder a command of `scope` starts in: `start` for the project; the global home, which must hold
/// its kc.toml (unless `creating`, for `init`), for the global scope.
pub fn start_folder(scope: Scope, start: &Path, creating: bool) -> Result<PathBuf, ScopeError> {
    match scope {
        Scope::Project => Ok(start.to_path_buf()),
        Scope::Global => {
            let home = global_home()?;
            if !creating && !home.join(super::CONFIG_FILE).is_file() {
                return Err(ScopeError::NotInitialized(home));
            }
            Ok(home)
        }
    }
}

/// The kc.toml `knowledge init --scope global` writes: the default, named `global`, its index under
/// `index/`.
#[must_use]
pub fn global_config() -> String {
    super::DEFAULT_CONFIG
        .replace("# name = \"my-project\"", "name = \"global\"")
        .replace("dir = \".hasna/knowledge\"", &format!("dir = \"{GLOBAL_OUTPUT_DIR}\""))
}
