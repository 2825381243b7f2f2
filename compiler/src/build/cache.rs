//! A shared build cache in object storage (`[cache] url = "s3://BUCKET/PREFIX"`): `knowledge publish` puts
//! the committed index there, keyed by the build fingerprint and the commit it was built from, and
//! `knowledge pull` fetches the nearest published index for this checkout's commit (the same commit, else
//! the newest published ancestor), verifies it, and puts it in place; the next `knowledge build` is then
//! incremental from it instead of cold.
//!
//! Like a remote build cache, a missing, foreign or damaged entry costs time, never correctness: an entry
//! is taken only if its bytes hash as published, it opens as an index in this binary's format, and it was
//! built with this project's fingerprint (binary, chunking, labels, …). The build after a pull checks every
//! source against the index as any build does (a stat that moved means the file is read and hashed), so a
//! pulled index can at worst make that build re-derive more.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::remote::{Remote, RemoteError};
use crate::config::Project;
use crate::store;

/// Published indexes kept per fingerprint, newest first.
const KEEP: usize = 50;

/// The list of published indexes for one fingerprint (`PREFIX/FINGERPRINT/index.json`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Published {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub commit: String,
    pub run_id: Option<String>,
    /// The content hash of the index file.
    pub hash: String,
    pub size: u64,
    pub published_at: String,
}

/// What `publish` or `pull` did.
#[derive(Debug, Clone, Serialize)]
pub struct CacheReport {
    pub target: String,
    pub fingerprint: String,
    /// The commit of the checkout (publish) or of the entry taken (pull).
    pub commit: Option<String>,
    /// `published`, `already_published`, `pulled`, `exact` / `ancestor` (how the pulled commit relates to the
    /// checkout's), or `none` (nothing usable: the next build is cold).
    pub outcome: String,
    pub entry: Option<Entry>,
    /// Entries passed over and why (another hash, format or fingerprint), so a stale cache shows itself.
    pub rejected: Vec<String>,
}

/// Why the build cache could not be published to or pulled from.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("no build cache: set `[cache] url = \"s3://BUCKET/PREFIX\"` in kc.toml")]
    NotConfigured,
    #[error("`knowledge publish` keys the index by commit: this checkout has no Git HEAD")]
    NoCommit,
    #[error("the index is not this project's last build (another fingerprint): run `knowledge build` first")]
    NotLastBuild,
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("{}", crate::error_chain(.0))]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot {action} `{}`: {error}", path.display())]
    Io { action: &'static str, path: std::path::PathBuf, error: std::io::Error },
}

/// Why a published index was passed over.
#[derive(Debug, thiserror::Error)]
enum Rejection {
    #[error("{}", crate::error_chain(.0))]
    Unreadable(store::StoreError),
    #[error("not an index: {0}")]
    NotAnIndex(rusqlite::Error),
    #[error("an index in another format")]
    OtherFormat,
    #[error("built with another fingerprint")]
    OtherFingerprint,
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

fn prefix(project: &Project) -> Result<Remote, CacheError> {
    let target = project.config.cache.url.as_ref().ok_or(CacheError::NotConfigured)?;
    Ok(Remote::new(target.get_ref())?)
}

/// Publishes the committed index under this build's fingerprint and the checkout's commit.
pub fn publish(project: &Project) -> Result<CacheReport, CacheError> {
    let remote = prefix(project)?;
    let fingerprint = super::settings::fingerprint(project);
    let commit = crate::sources::vcs::context(&project.root).commit.ok_or(CacheError::NoCommit)?;
    let output_dir = project.output_dir();
    let index = output_dir.join(store::DB_FILE);
    let conn = store::open_read_only(&index)?;
    let stored = store::meta(&conn, "fingerprint")?;
    if stored.as_deref() != Some(fingerprint.as_str()) {
        return Err(CacheError::NotLastBuild);
    }
    let run_id = store::meta(&conn, "last_run")?;
    // A consistent copy of the committed index, whatever its write-ahead log holds.
    let snapshot = temporary(&output_dir, "publish");
    let _ = std::fs::remove_file(&snapshot);
    store::snapshot_into(&conn, &snapshot)?;
    drop(conn);
    let bytes =
        std::fs::read(&snapshot).map_err(|error| CacheError::Io { action: "read", path: snapshot.clone(), error });
    let _ = std::fs::remove_file(&snapshot);
    let bytes = bytes?;
    let entry = Entry {
        commit: commit.clone(),
        run_id,
        hash: knowledge_queries::content_hash(&bytes),
        size: bytes.len() as u64,
        published_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    let key = format!("{fingerprint}/{commit}.db");
    let mut report = CacheReport {
        target: remote.target().to_string(),
        fingerprint: fingerprint.clone(),
        commit: Some(commit.clone()),
        outcome: "published".to_string(),
        entry: Some(entry.clone()),
        rejected: Vec::new(),
    };
    // Published indexes are immutable: one already there for this commit stays.
    match remote.put(&key, &bytes, "application/vnd.sqlite3", None) {
        Ok(_) => {}
        Err(RemoteError::AnotherWriter { .. }) => {
            report.outcome = "already_published".to_string();
            return Ok(report);
        }
        Err(error) => return Err(error.into()),
    }
    let list_key = format!("{fingerprint}/index.json");
    let (mut published, etag) = match remote.get(&list_key)? {
        Some((bytes, etag)) => (serde_json::from_slice::<Published>(&bytes).unwrap_or_default(), etag),
        None => (Published::default(), None),
    };
    published.entries.retain(|e| e.commit != commit);
    published.entries.insert(0, entry);
    published.entries.truncate(KEEP);
    let json = serde_json::to_vec_pretty(&published).expect("the list serializes");
    remote.put(&list_key, &json, "application/json", etag.as_deref())?;
    Ok(report)
}

/// Fetches the nearest published index for the checkout and puts it in place of the local one.
pub fn pull(project: &Project) -> Result<CacheReport, CacheError> {
    let remote = prefix(project)?;
    let fingerprint = super::settings::fingerprint(project);
    let head = crate::sources::vcs::context(&project.root).commit;
    let mut report = CacheReport {
        target: remote.target().to_string(),
        fingerprint: fingerprint.clone(),
        commit: None,
        outcome: "none".to_string(),
        entry: None,
        rejected: Vec::new(),
    };
    let Some((list, _)) = remote.get(&format!("{fingerprint}/index.json"))? else { return Ok(report) };
    let published: Published = serde_json::from_slice(&list).unwrap_or_default();
    // The list is anyone's to write who can write the prefix: a commit names an object key and is handed
    // to git, so only a hexadecimal object name is taken (`--upload-pack=…` or `../x` never is).
    let (published, foreign): (Vec<Entry>, Vec<Entry>) =
        published.entries.into_iter().partition(|entry| is_object_name(&entry.commit));
    report
        .rejected
        .extend(foreign.iter().map(|entry| format!("{}: not a commit's object name", crate::escape(&entry.commit))));
    let published = Published { entries: published };
    // The checkout's own commit first, then the newest ancestor of it.
    let mut candidates: Vec<(&Entry, &str)> = Vec::new();
    if let Some(head) = &head {
        candidates.extend(published.entries.iter().filter(|e| &e.commit == head).map(|e| (e, "exact")));
        candidates.extend(
            published
                .entries
                .iter()
                .filter(|e| &e.commit != head && is_ancestor(&project.root, &e.commit, head))
                .map(|e| (e, "ancestor")),
        );
    }
    let output_dir = project.output_dir();
    std::fs::create_dir_all(&output_dir).map_err(|error| CacheError::Io {
        action: "create",
        path: output_dir.clone(),
        error,
    })?;
    for (entry, relation) in candidates {
        let Some((bytes, _)) = remote.get(&format!("{fingerprint}/{}.db", entry.commit))? else {
            report.rejected.push(format!("{}: listed but missing", entry.commit));
            continue;
        };
        if knowledge_queries::content_hash(&bytes) != entry.hash {
            report.rejected.push(format!("{}: its bytes do not hash as published", entry.commit));
            continue;
        }
        let candidate = temporary(&output_dir, "pull");
        std::fs::write(&candidate, &bytes).map_err(|error| CacheError::Io {
            action: "write",
            path: candidate.clone(),
            error,
        })?;
        match verify(&candidate, &fingerprint) {
            Ok(()) => {
                install(&candidate, &output_dir)?;
                report.commit = Some(entry.commit.clone());
                report.outcome = relation.to_string();
                report.entry = Some(entry.clone());
                return Ok(report);
            }
            Err(reason) => {
                let _ = std::fs::remove_file(&candidate);
                report.rejected.push(format!("{}: {reason}", entry.commit));
            }
        }
    }
    Ok(report)
}

/// Whether the file at `path` is an index in this binary's format built with `fingerprint`.
fn verify(path: &Path, fingerprint: &str) -> Result<(), Rejection> {
    let conn = store::open_read_only(path).map_err(Rejection::Unreadable)?;
    let prior = store::read_prior(&conn).map_err(Rejection::NotAnIndex)?;
    if prior.needs_schema {
        return Err(Rejection::OtherFormat);
    }
    let stored = store::meta(&conn, "fingerprint")?;
    if stored.as_deref() != Some(fingerprint) {
        return Err(Rejection::OtherFingerprint);
    }
    Ok(())
}

/// Puts the verified `candidate` in place of the index, under the writer's lock: the old index's
/// write-ahead log is merged and removed first, so no log of the old file is ever read against the new one.
fn install(candidate: &Path, output_dir: &Path) -> Result<(), CacheError> {
    let _lock = store::writer_lock(output_dir, |_| {})?;
    let index = output_dir.join(store::DB_FILE);
    if index.exists() {
        store::merge_the_log(&index)?;
    }
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(output_dir.join(format!("{}{suffix}", store::DB_FILE)));
    }
    std::fs::rename(candidate, &index).map_err(|error| CacheError::Io { action: "replace", path: index, error })
}

/// A Git object name: 40 (SHA-1) or 64 (SHA-256) hexadecimal digits.
fn is_object_name(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `commit` is an ancestor of `head` in the checkout's history (Git decides; without Git, no).
fn is_ancestor(root: &Path, commit: &str, head: &str) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-base", "--is-ancestor", commit, head])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn temporary(output_dir: &Path, purpose: &str) -> PathBuf {
    output_dir.join(format!(".{purpose}.{}.db", std::process::id()))
}
