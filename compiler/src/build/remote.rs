//! Artifacts in object storage: with `[output] artifacts = "s3://BUCKET/PREFIX"`, each build puts the
//! generated files (pages, shards, schemas, the day logs) under the prefix, in the output folder's layout,
//! after the index is committed and the local files follow it. The index's `storage_objects` catalog is the
//! source of truth; the remote copy of it, `PREFIX/storage_objects.json`, says what the prefix holds (each
//! object's hash and ETag), so only what differs is uploaded or deleted.
//!
//! Writes are conditional, so two writers never clobber each other: an object is replaced only if its ETag is
//! still the one the catalog recorded (`If-Match`), a new one only if absent (`If-None-Match: *`), and the
//! catalog itself likewise. A writer that loses a race gets an error naming the object; the next build reads
//! the new catalog and reconciles. A remote that cannot be reached fails the build's upload, never its index.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::providers::http::{Client, HttpError};
use crate::providers::s3::{self, S3Environment};
use crate::store::CatalogObject;

/// What a conditional write that lost says: the words callers recognise it by.
pub const ANOTHER_WRITER: &str = "another writer is publishing here";

/// The remote catalog's key under the prefix.
pub const CATALOG_KEY: &str = "storage_objects.json";

/// What the sync did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RemoteSync {
    /// `s3://BUCKET/PREFIX`.
    pub target: String,
    pub uploaded: u64,
    pub deleted: u64,
    pub unchanged: u64,
}

/// The remote catalog: every object under the prefix, by path.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RemoteCatalog {
    pub version: u32,
    /// The build that last wrote it.
    pub run_id: Option<String>,
    pub objects: BTreeMap<String, RemoteObject>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteObject {
    pub uri: String,
    pub kind: String,
    pub hash: String,
    pub size: u64,
    /// The object's ETag as the store gave it when it was written.
    pub etag: String,
}

/// The objects the output folder should have remotely: the catalog's, and the day logs (not cataloged: they
/// only grow), each with its content hash.
pub fn local_objects(conn: &rusqlite::Connection, output_dir: &Path) -> Result<Vec<CatalogObject>, RemoteError> {
    let mut objects = crate::store::catalog_objects(conn)?;
    let logs = output_dir.join("logs");
    for entry in walk_files(&logs) {
        let Ok(bytes) = std::fs::read(&entry) else { continue };
        let path = entry.strip_prefix(output_dir).unwrap_or(&entry);
        let path = crate::sources::slash_joined(path);
        objects.push(CatalogObject {
            uri: format!("knowledge://{path}"),
            kind: "log".to_string(),
            path,
            hash: knowledge_queries::content_hash(&bytes),
            size: bytes.len() as u64,
        });
    }
    Ok(objects)
}

/// Why the remote artifact store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("`{0}` is not s3://BUCKET/PREFIX")]
    NotAPrefix(String),
    #[error(transparent)]
    Credentials(#[from] crate::providers::s3::MissingCredentials),
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{url}: {error}")]
    Body { url: String, error: std::io::Error },
    #[error("{url}: no ETag in the answer")]
    NoEtag { url: String },
    #[error("{target}/{path} changed since it was read: {ANOTHER_WRITER}; build again to reconcile")]
    AnotherWriter { target: String, path: String },
    #[error("{target}/{CATALOG_KEY} is not a catalog: {error}")]
    NotACatalog { target: String, error: serde_json::Error },
    #[error("{target}/{CATALOG_KEY} names the object `{object}`, which is not a plain path under the prefix: refused")]
    NotAPlainPath { target: String, object: String },
    #[error("cannot read `{}`: {error}", path.display())]
    Read { path: std::path::PathBuf, error: std::io::Error },
    #[error("`{}` is not what the index lists; build again", .0.display())]
    NotAsIndexed(std::path::PathBuf),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// An object's bytes and its ETag.
pub type Fetched = (Vec<u8>, Option<String>);

/// A store at `target` (`s3://BUCKET/PREFIX`) with the environment's credentials.
pub struct Remote {
    bucket: String,
    prefix: String,
    target: String,
    environment: S3Environment,
    client: Client,
}

impl Remote {
    pub fn new(target: &str) -> Result<Remote, RemoteError> {
        let (bucket, prefix) =
            crate::config::s3_prefix(target).ok_or_else(|| RemoteError::NotAPrefix(target.to_string()))?;
        Ok(Remote {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            target: target.to_string(),
            environment: S3Environment::from_env()?,
            client: Client::without_redirects(60, 2),
        })
    }

    fn key(&self, path: &str) -> String {
        if self.prefix.is_empty() { path.to_string() } else { format!("{}/{path}", self.prefix) }
    }

    /// The remote catalog and its ETag; an empty one and none when the prefix has no catalog yet.
    pub fn catalog(&self) -> Result<(RemoteCatalog, Option<String>), RemoteError> {
        match self.get(CATALOG_KEY)? {
            Some((bytes, etag)) => {
                let catalog = serde_json::from_slice(&bytes)
                    .map_err(|error| RemoteError::NotACatalog { target: self.target.clone(), error })?;
                Ok((catalog, etag))
            }
            None => Ok((RemoteCatalog::default(), None)),
        }
    }

    /// The object at `path` and its ETag, or `None` when there is none.
    pub fn get(&self, path: &str) -> Result<Option<Fetched>, RemoteError> {
        use std::io::Read as _;
        let signed = s3::signed_get(&self.environment, &self.bucket, &self.key(path), &s3::amz_date_now(), &[]);
        let headers: Vec<(&str, String)> = signed.headers.iter().map(|(n, v)| (*n, v.clone())).collect();
        match self.client.fetch(&signed.url, &headers) {
            Ok(response) => {
                let etag = etag_of(&response);
                let mut bytes = Vec::new();
                response
                    .into_body()
                    .into_reader()
                    .read_to_end(&mut bytes)
                    .map_err(|error| RemoteError::Body { url: signed.url.clone(), error })?;
                Ok(Some((bytes, etag)))
            }
            Err(error) if error.status() == Some(404) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// The target this prefix was made for (`s3://BUCKET/PREFIX`).
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// PUTs `body` at `path` on condition: `If-Match` the ETag it had, or `If-None-Match: *` for a new one.
    /// Its new ETag.
    pub fn put(
        &self,
        path: &str,
        body: &[u8],
        content_type: &str,
        expected: Option<&str>,
    ) -> Result<String, RemoteError> {
        let condition = match expected {
            Some(etag) => ("if-match", etag.to_string()),
            None => ("if-none-match", "*".to_string()),
        };
        let extra = [("content-type", content_type.to_string()), condition];
        let signed = s3::signed_request(
            &self.environment,
            "PUT",
            &self.bucket,
            &self.key(path),
            body,
            &s3::amz_date_now(),
            &extra,
        );
        let headers: Vec<(&str, String)> = signed.headers.iter().map(|(n, v)| (*n, v.clone())).collect();
        match self.client.put(&signed.url, &headers, body) {
            Ok(response) => etag_of(&response).ok_or_else(|| RemoteError::NoEtag { url: signed.url.clone() }),
            Err(error) if error.status() == Some(412) => {
                Err(RemoteError::AnotherWriter { target: self.target.clone(), path: path.to_string() })
            }
            Err(error) => Err(error.into()),
        }
    }

    fn delete(&self, path: &str) -> Result<(), RemoteError> {
        let signed = s3::signed_request(
            &self.environment,
            "DELETE",
            &self.bucket,
            &self.key(path),
            b"",
            &s3::amz_date_now(),
            &[],
        );
        let headers: Vec<(&str, String)> = signed.headers.iter().map(|(n, v)| (*n, v.clone())).collect();
        match self.client.delete(&signed.url, &headers) {
            Err(error) if error.status() != Some(404) => Err(error.into()),
            _ => Ok(()),
        }
    }

    /// Makes the prefix hold `local` (read from `output_dir`): uploads what differs, deletes what is gone, then
    /// the catalog, each on condition.
    pub fn sync(
        &self,
        local: &[CatalogObject],
        output_dir: &Path,
        run_id: Option<&str>,
    ) -> Result<RemoteSync, RemoteError> {
        let (before, catalog_etag) = self.catalog()?;
        // The remote catalog is anyone's to write who can write the prefix: every object it names must be a
        // plain path below the prefix (an HTTP client resolves `..` in a URL's path), or nothing is synced.
        if let Some(path) = before.objects.keys().find(|path| !crate::store::paths::is_plain_relative(path)) {
            return Err(RemoteError::NotAPlainPath {
                target: self.target.clone(),
                object: crate::escape(path).into_owned(),
            });
        }
        let mut after = RemoteCatalog { version: 1, run_id: run_id.map(str::to_string), objects: BTreeMap::new() };
        let mut sync = RemoteSync { target: self.target.clone(), ..RemoteSync::default() };
        for object in local {
            let prior = before.objects.get(&object.path);
            if let Some(prior) = prior.filter(|prior| prior.hash == object.hash) {
                after.objects.insert(object.path.clone(), prior.clone());
                sync.unchanged += 1;
                continue;
            }
            let file = output_dir.join(&object.path);
            let bytes = std::fs::read(&file).map_err(|error| RemoteError::Read { path: file.clone(), error })?;
            // The file sync made it what the index says; anything else is a bug or a race with an editor.
            if knowledge_queries::content_hash(&bytes) != object.hash {
                return Err(RemoteError::NotAsIndexed(file));
            }
            let etag = self.put(&object.path, &bytes, content_type(&object.path), prior.map(|p| p.etag.as_str()))?;
            let remote = RemoteObject {
                uri: object.uri.clone(),
                kind: object.kind.clone(),
                hash: object.hash.clone(),
                size: object.size,
                etag,
            };
            after.objects.insert(object.path.clone(), remote);
            sync.uploaded += 1;
        }
        for path in before.objects.keys().filter(|path| !after.objects.contains_key(*path)) {
            self.delete(path)?;
            sync.deleted += 1;
        }
        if sync.uploaded > 0 || sync.deleted > 0 || catalog_etag.is_none() {
            let json = serde_json::to_vec_pretty(&after).expect("the catalog serializes");
            self.put(CATALOG_KEY, &json, "application/json", catalog_etag.as_deref())?;
        }
        Ok(sync)
    }
}

fn etag_of(response: &ureq::http::Response<ureq::Body>) -> Option<String> {
    response.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_string)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("md") => "text/markdown; charset=utf-8",
        Some("json") => "application/json",
        Some("jsonl") => "application/x-ndjson",
        _ => "application/octet-stream",
    }
}

fn walk_files(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else { return files };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}
