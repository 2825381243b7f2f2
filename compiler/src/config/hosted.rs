//! Hosted mode: a knowledge base answered by a remote server (`knowledge serve --http`, or a hosted service
//! that implements the same contract) instead of its local index. `knowledge setup --mode hosted` records the
//! server's URL as `[remote] url` in the scope's kc.toml (comments and layout kept) and its key in the
//! credentials file, `auth.json` in the global home (mode 0600), never in project state;
//! `KNOWLEDGE_API_URL` and `KNOWLEDGE_API_KEY` override both. `--mode local` forgets the URL.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::scope::{self, ScopeError};

/// The credentials file, in the global home, and the lock its writers take.
pub const AUTH_FILE: &str = "auth.json";
const AUTH_LOCK: &str = "auth.lock";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Answer from the local index (the default): the URL is forgotten.
    Local,
    /// Answer from a remote server: `--api-url` names it.
    Hosted,
}

#[derive(Debug, thiserror::Error)]
pub enum HostedError {
    #[error("`{url}`: the API URL is an http:// or https:// URL, without credentials, spaces or quotes in it")]
    BadUrl { url: String },
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a kc.toml that can be edited: {message}", path.display())]
    Edit { path: PathBuf, message: String },
    #[error("`{}` is not a credentials file: {message}", path.display())]
    InvalidAuth { path: PathBuf, message: String },
    #[error(
        "`{}` may be read by other users (mode {mode:o}): `chmod 600` it, or set up the key again",
        path.display()
    )]
    AuthReadable { path: PathBuf, mode: u32 },
    #[error(transparent)]
    Scope(#[from] ScopeError),
}

/// Checks an API URL: `http://` or `https://`, with a host and no `user:secret@`.
pub fn check_url(url: &str) -> Result<(), HostedError> {
    let bad = || HostedError::BadUrl { url: url.to_string() };
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")).ok_or_else(bad)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Characters a URL carries only escaped: a bare one is a typo or an attempt at something else.
    let unescaped = |c: char| c.is_control() || c.is_whitespace() || matches!(c, '"' | '\\' | '<' | '>' | '`');
    if authority.is_empty() || authority.contains('@') || url.chars().any(unescaped) {
        return Err(bad());
    }
    Ok(())
}

/// Sets (`Some`) or removes (`None`) `[remote] url` in the kc.toml at `path`, keeping the rest of the file as
/// it is. The edited text must still be a configuration this binary reads; it replaces the old one
/// atomically.
pub fn set_remote_url(path: &Path, url: Option<&str>) -> Result<(), HostedError> {
    let text = std::fs::read_to_string(path).map_err(|source| HostedError::Read { path: path.into(), source })?;
    let edit = |message: String| HostedError::Edit { path: path.into(), message };
    let mut document: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| edit(e.to_string()))?;
    match url {
        Some(url) => {
            let remote = document.entry("remote").or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
            let table = remote.as_table_like_mut().ok_or_else(|| edit("`remote` is not a table".into()))?;
            table.insert("url", toml_edit::value(url));
        }
        None => {
            if let Some(table) = document.get_mut("remote").and_then(toml_edit::Item::as_table_like_mut) {
                table.remove("url");
            }
        }
    }
    let edited = document.to_string();
    super::parse(path, &edited).map_err(|e| edit(e.to_string()))?;
    // A kc.toml that is a link (to a configuration a team shares) stays one: the file it names is edited.
    let file = std::fs::canonicalize(path).map_err(|source| HostedError::Read { path: path.into(), source })?;
    write_atomically(&file, edited.as_bytes(), None)
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct AuthFile {
    version: u32,
    /// Per API URL, its key.
    #[serde(default)]
    keys: std::collections::BTreeMap<String, String>,
}

/// The credentials file's path.
pub fn auth_path() -> Result<PathBuf, HostedError> {
    Ok(scope::global_home()?.join(AUTH_FILE))
}

fn read_auth(path: &Path) -> Result<AuthFile, HostedError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(AuthFile::default()),
        Err(source) => return Err(HostedError::Read { path: path.into(), source }),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_err(|source| HostedError::Read { path: path.into(), source })?;
        let mode = mode.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(HostedError::AuthReadable { path: path.into(), mode });
        }
    }
    serde_json::from_str(&text).map_err(|e| HostedError::InvalidAuth { path: path.into(), message: e.to_string() })
}

/// Stores `key` for `url` in the credentials file (created with mode 0600; the other URLs' keys kept).
pub fn store_key(url: &str, key: &str) -> Result<PathBuf, HostedError> {
    let path = auth_path()?;
    let home = path.parent().unwrap_or(Path::new("."));
    let wrap = |source| HostedError::Write { path: path.clone(), source };
    std::fs::create_dir_all(home).map_err(wrap)?;
    // Two setups at once each read, change and write the file: in turn, so neither loses the other's key.
    let _lock = crate::store::FileLock::acquire(home, AUTH_LOCK).map_err(wrap)?;
    let mut auth = read_auth(&path)?;
    auth.version = 1;
    auth.keys.insert(url.to_string(), key.to_string());
    let json = serde_json::to_string_pretty(&auth).expect("credentials serialize") + "\n";
    write_atomically(&path, json.as_bytes(), Some(0o600))?;
    Ok(path)
}

/// The key the credentials file holds for `url`, if any.
pub fn stored_key(url: &str) -> Result<Option<String>, HostedError> {
    Ok(read_auth(&auth_path()?)?.keys.remove(url))
}

/// Writes `bytes` to a temporary file beside `path` (created with `mode`, when given, before any byte is
/// written), makes it durable and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<(), HostedError> {
    let wrap = |source| HostedError::Write { path: path.into(), source };
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(wrap)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".kc-setup").suffix(".tmp");
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = builder.tempfile_in(folder).map_err(wrap)?;
    file.write_all(bytes).map_err(wrap)?;
    file.as_file().sync_data().map_err(wrap)?;
    if mode.is_none() {
        // kc.toml keeps the mode it had.
        if let Ok(metadata) = std::fs::metadata(path) {
            std::fs::set_permissions(file.path(), metadata.permissions()).map_err(wrap)?;
        }
    }
    file.persist(path).map_err(|error| wrap(error.error))?;
    Ok(())
}
