//! `knowledge init`: a commented `kc.toml` and the starter pages of the output folder.

use std::path::{Path, PathBuf};

use crate::config::scope::{self, Scope};
use crate::config::{CONFIG_FILE, DEFAULT_CONFIG};

/// The output folder's `.gitignore`: what belongs to one machine. The rest is the team's to commit
/// (docs/configuration.md has the table).
pub const OUTPUT_GITIGNORE: &str = "\
# Written by `knowledge init`: the parts of this folder that belong to one machine. Commit the rest:
# wiki/ (generated and hand-written pages), indexes/, schemas/, logs/, notes.json, ingested.json and
# ingested/. See docs/configuration.md in the knowledge repository.
/knowledge.db
/knowledge.db-*
/artifacts.stat
/*.lock
.*.tmp
/.*.db
/.notes.json.*
/.ingested.json.*
/ingested/.*
/exports/
";

const STARTER_WIKI: &str = "# Wiki\n\nHand-written pages in this folder are sources like any other: `knowledge build` indexes them\nand never overwrites them.\n";

#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("`{}` already exists (pass --force to overwrite it)", .0.display())]
    Exists(PathBuf),
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes `kc.toml` in `root`, and the starter `wiki/README.md` and the `.gitignore` of the machine-local
/// parts in the default output folder. Returns the files written. Starter files that exist are left alone.
/// For the global scope, the kc.toml is the global knowledge base's ([`scope::global_config`]).
pub fn init(root: &Path, force: bool, scope: Scope) -> Result<Vec<PathBuf>, InitError> {
    let config_path = root.join(CONFIG_FILE);
    if config_path.exists() && !force {
        return Err(InitError::Exists(config_path));
    }
    let mut written = Vec::new();
    let (config, output) = match scope {
        Scope::Project => (DEFAULT_CONFIG.to_string(), crate::config::OutputConfig::default().dir.into_inner()),
        Scope::Global => (scope::global_config(), scope::GLOBAL_OUTPUT_DIR.to_string()),
    };
    write(&config_path, &config)?;
    written.push(config_path);
    let output = root.join(output);
    for (path, text) in [(output.join("wiki/README.md"), STARTER_WIKI), (output.join(".gitignore"), OUTPUT_GITIGNORE)] {
        if !path.exists() {
            write(&path, text)?;
            written.push(path);
        }
    }
    Ok(written)
}

fn write(path: &Path, text: &str) -> Result<(), InitError> {
    let wrap = |source| InitError::Write { path: path.to_path_buf(), source };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(wrap)?;
    }
    std::fs::write(path, text).map_err(wrap)
}
