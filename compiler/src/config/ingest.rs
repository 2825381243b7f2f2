//! `[ingest]`: where `knowledge ingest source` may read from, and within which limits. Every resolver is
//! closed until configured: `file://` reads only inside `file_roots`, `https://` only from `allow_domains`,
//! `open-files://` only through `open_files_manifest`, `s3://` only from `allow_buckets` (with the
//! credentials the environment gives: an `AWS_*` variable set for another tool opens nothing by itself).

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestConfig {
    /// Folders (relative to the project root, or absolute) that `file://` refs must lie inside.
    pub file_roots: Vec<String>,
    /// Hosts (and their subdomains) `https://` refs may name; none: `https://` ingest is off.
    pub allow_domains: Vec<String>,
    /// Buckets `s3://` refs may name; none: `s3://` ingest is off.
    pub allow_buckets: Vec<String>,
    /// Whether `http://` refs (no TLS) to allowed hosts are read too: for a server on a trusted network.
    pub allow_http: bool,
    /// The largest content read, in bytes; a larger one is refused, not cut.
    pub max_bytes: u64,
    /// The time one fetch may take, redirects included.
    pub timeout_seconds: u32,
    /// The MIME types an `https://` or `s3://` answer may have (HTML is converted to Markdown).
    pub content_types: Vec<String>,
    /// The open-files manifest (JSON lines: `id`, `revision_id`, `hash`, `mime`, `text`, optional `title`),
    /// relative to the project root.
    pub open_files_manifest: Option<String>,
    /// Labels every ingested source carries, beside `--label` and `[permissions] rules` on its ref.
    pub labels: Vec<String>,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            file_roots: Vec::new(),
            allow_domains: Vec::new(),
            allow_buckets: Vec::new(),
            allow_http: false,
            max_bytes: 5 * 1024 * 1024,
            timeout_seconds: 30,
            content_types: ["text/html", "application/xhtml+xml", "text/markdown", "text/plain"]
                .map(String::from)
                .to_vec(),
            open_files_manifest: None,
            labels: Vec::new(),
        }
    }
}

/// What a purpose may not read (`[permissions.purposes.NAME] deny_labels`): a source carrying any of these
/// labels is refused for it, whoever asks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PurposeConfig {
    pub deny_labels: Vec<String>,
}

/// The purposes a source is resolved for.
pub const PURPOSES: [&str; 2] = ["knowledge_answer", "knowledge_index"];

/// Whether `host` is `domain` or one of its subdomains.
#[must_use]
pub fn host_in(host: &str, domain: &str) -> bool {
    let (host, domain) = (host.to_ascii_lowercase(), domain.trim().trim_start_matches('.').to_ascii_lowercase());
    !domain.is_empty() && (host == domain || host.ends_with(&format!(".{domain}")))
}
