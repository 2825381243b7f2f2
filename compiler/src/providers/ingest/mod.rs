//! `knowledge ingest source REF`: reads a source from outside the tree through its resolver and stores its
//! text, converted to Markdown, in the ingested store (`sources::ingested`), which the next build indexes.
//! Every resolver is closed until `[ingest]` opens it, and each has limits:
//!
//! - `file:///PATH`: only inside `file_roots` (after symlinks are resolved), at most `max_bytes`, text only.
//! - `https://` (and `http://` with `allow_http`): only hosts in `allow_domains`, redirects followed only
//!   to such hosts (never to another scheme: a page cannot send ingest to `file://`), at most `max_bytes`,
//!   within `timeout_seconds`, of the `content_types` listed. Nothing the page links or embeds is fetched.
//! - `s3://BUCKET/KEY`: a signed GET with the environment's credentials, same size and type limits.
//! - `open-files://ID`: the line with that id in `open_files_manifest`.
//!
//! Re-ingesting is incremental by revision: `https://` and `s3://` ask with the stored ETag (a `304` keeps
//! the stored text), `open-files://` compares the manifest's revision id, and a text that hashes the same is
//! not rewritten, so the next build re-derives only what changed.

mod https;

use serde::Serialize;

use crate::config::Project;
use crate::config::ingest::IngestConfig;
use crate::sources::ingested::{self, Document, Ingested, Outcome};

/// What ingesting one ref did.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    #[serde(rename = "ref")]
    pub reference: String,
    pub outcome: Outcome,
    pub resolver: String,
    pub revision_id: String,
    pub title: String,
    /// The stored text file, relative to the output folder.
    pub file: String,
    pub labels: Vec<String>,
}

impl IngestReport {
    fn of(entry: Ingested, outcome: Outcome) -> IngestReport {
        IngestReport {
            reference: entry.reference,
            outcome,
            resolver: entry.resolver,
            revision_id: entry.revision_id,
            title: entry.title,
            file: entry.file,
            labels: entry.labels,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{reference}: {why}")]
    Refused { reference: String, why: Refusal },
    #[error(transparent)]
    Store(#[from] ingested::IngestedError),
}

/// Why a ref is not ingested.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The ref's form, or a rule of `[ingest]`, refuses it.
    #[error("{0}")]
    Rule(String),
    #[error("cannot read `{path}`: {error}")]
    Io { path: String, error: std::io::Error },
    #[error(transparent)]
    Http(#[from] crate::providers::http::HttpError),
    #[error(transparent)]
    Credentials(#[from] crate::providers::s3::MissingCredentials),
    /// The content is not text ingest reads (binary, not UTF-8, unreadable HTML).
    #[error("{0}")]
    Content(String),
}

/// A refusal by rule.
fn rule(message: impl Into<String>) -> Refusal {
    Refusal::Rule(message.into())
}

/// What a resolver read: a document, or word that the stored one is current.
pub(crate) enum Read {
    Document(Document),
    NotModified,
}

/// Ingests `reference` with `labels` (beside `[ingest] labels`).
pub fn ingest(project: &Project, reference: &str, labels: &[String]) -> Result<IngestReport, IngestError> {
    let refused = |why: Refusal| IngestError::Refused { reference: reference.to_string(), why };
    let reference = canonical_ref(reference).map_err(refused)?;
    let reference = reference.as_str();
    let config = &project.config.ingest;
    let labels = labels_of(config, labels).map_err(refused)?;
    let output_dir = project.output_dir();
    let prior = ingested::load(&output_dir)?.into_iter().find(|s| s.reference == reference);
    let read = resolve(project, reference, prior.as_ref()).map_err(refused)?;
    let (entry, outcome) = match read {
        Read::NotModified => {
            let prior = prior.expect("a resolver says not-modified only against a stored source");
            // Upstream's revision is the stored one; new labels still make a new text.
            let document = Document {
                reference: prior.reference.clone(),
                resolver: resolver_name(&prior.resolver),
                owner: prior.owner.clone(),
                revision_id: prior.revision_id.clone(),
                mime: prior.mime.clone(),
                title: prior.title.clone(),
                labels,
                text: stored_body(&output_dir, &prior)?,
            };
            ingested::store(&output_dir, &document, &now())?
        }
        Read::Document(mut document) => {
            document.labels = labels;
            ingested::store(&output_dir, &document, &now())?
        }
    };
    Ok(IngestReport::of(entry, outcome))
}

/// Re-ingests every stored source with the labels it has, in ref order: each one's report or error.
pub fn refresh(project: &Project) -> Result<Vec<Result<IngestReport, IngestError>>, IngestError> {
    let stored = ingested::load(&project.output_dir())?;
    Ok(stored
        .iter()
        .filter(|source| source.resolver != "web")
        .map(|source| {
            let extra: Vec<String> =
                source.labels.iter().filter(|l| !project.config.ingest.labels.contains(l)).cloned().collect();
            ingest(project, &source.reference, &extra)
        })
        .collect())
}

/// Records web search results as read-only sources under their URLs: each one's title, snippet, provider
/// and retrieval time, as the search returned them (the pages themselves are not fetched). A URL already
/// ingested as a page keeps its page.
pub fn file_web_results(
    project: &Project,
    query: &str,
    results: &[crate::providers::WebResult],
    labels: &[String],
) -> Result<Vec<IngestReport>, IngestError> {
    let labels = labels_of(&project.config.ingest, labels)
        .map_err(|why| IngestError::Refused { reference: query.to_string(), why })?;
    let output_dir = project.output_dir();
    let mut reports = Vec::new();
    for result in results {
        // A result whose URL carries credentials is not filed; one with a fragment is filed as its page.
        let Ok(reference) = canonical_ref(&result.url) else { continue };
        let stored = ingested::load(&output_dir)?;
        if stored.iter().any(|s| s.reference == reference && s.resolver != "web") {
            continue;
        }
        let text = format!(
            "# {}

{}

A web search for \"{}\" through `{}` found this page on {}; the text above is the \
             search's snippet, not the page.\n",
            result.title.trim(),
            result.snippet.trim(),
            query.replace(['\n', '\r'], " "),
            result.provider,
            result.retrieved_at,
        );
        let document = Document {
            reference,
            resolver: "web",
            owner: result.provider.clone(),
            revision_id: knowledge_queries::content_hash(text.as_bytes()),
            mime: "text/plain".to_string(),
            title: result.title.clone(),
            labels: labels.clone(),
            text,
        };
        let (entry, outcome) = ingested::store(&output_dir, &document, &result.retrieved_at)?;
        reports.push(IngestReport::of(entry, outcome));
    }
    Ok(reports)
}

fn resolve(project: &Project, reference: &str, prior: Option<&Ingested>) -> Result<Read, Refusal> {
    let config = &project.config.ingest;
    if let Some(path) = reference.strip_prefix("file://") {
        return read_file(project, path).map(Read::Document);
    }
    if reference.starts_with("https://") || reference.starts_with("http://") {
        return https::read(config, reference, prior);
    }
    if reference.starts_with("s3://") {
        return https::read_s3(config, reference, prior);
    }
    if let Some(rest) = reference.strip_prefix("open-files://") {
        return read_open_file(project, reference, &OpenFileSelector::parse(rest)?, prior);
    }
    Err(rule("ingest reads file:///…, https://…, s3://… and open-files://… refs"))
}

/// `file:///PATH`, inside a configured root.
fn read_file(project: &Project, path: &str) -> Result<Document, Refusal> {
    if !path.starts_with('/') {
        return Err(rule(
            "a `file://` ref to ingest names an absolute path (`file:///…`); project files are sources already",
        ));
    }
    let roots = &project.config.ingest.file_roots;
    if roots.is_empty() {
        return Err(rule("`file://` ingest is off: list the folders it may read in `[ingest] file_roots`"));
    }
    // Symlinks and `..` resolve first, so neither can lead out of a root.
    let real = std::fs::canonicalize(path).map_err(|error| Refusal::Io { path: path.to_string(), error })?;
    let inside = roots.iter().any(|root| {
        let root = project.root.join(root);
        std::fs::canonicalize(&root).is_ok_and(|root| real.starts_with(root))
    });
    if !inside {
        return Err(rule(format!("`{}` is outside `[ingest] file_roots`", real.display())));
    }
    let metadata = std::fs::metadata(&real).map_err(|error| Refusal::Io { path: path.to_string(), error })?;
    if !metadata.is_file() {
        return Err(rule(format!("`{path}` is not a file")));
    }
    check_size(metadata.len(), project.config.ingest.max_bytes)?;
    let bytes = std::fs::read(&real).map_err(|error| Refusal::Io { path: path.to_string(), error })?;
    let extension = real.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let mime = match extension.as_str() {
        "html" | "htm" | "xhtml" => "text/html",
        "md" | "markdown" | "mdx" => "text/markdown",
        _ => "text/plain",
    };
    let (title, text) = to_markdown(&bytes, mime)?;
    let fallback = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Document {
        reference: format!("file://{path}"),
        resolver: "file",
        owner: "file".to_string(),
        revision_id: knowledge_queries::content_hash(&bytes),
        mime: mime.to_string(),
        title: title.unwrap_or(fallback),
        labels: Vec::new(),
        text,
    })
}

/// Which manifest entry an `open-files://` ref names, in the forms open-files gives:
/// `file/<file_id>` (its newest revision: the last line with that id), `file/<file_id>/revision/<revision_id>`
/// (that revision, pinned), `source/<source_id>/path/<path>` (the newest entry with that source id and path),
/// and the bare `<file_id>` of earlier manifests, read as `file/<file_id>`.
#[derive(Debug, PartialEq, Eq)]
enum OpenFileSelector {
    File { id: String },
    Revision { id: String, revision_id: String },
    SourcePath { source_id: String, path: String },
}

impl OpenFileSelector {
    fn parse(rest: &str) -> Result<OpenFileSelector, Refusal> {
        let malformed = || {
            rule(format!(
                "`open-files://{rest}`: name a file as `open-files://file/ID`, \
                 `open-files://file/ID/revision/REVISION` or `open-files://source/SOURCE/path/PATH`"
            ))
        };
        let nonempty = |part: &str| (!part.is_empty()).then(|| part.to_string()).ok_or_else(malformed);
        if let Some(file) = rest.strip_prefix("file/") {
            return match file.split_once("/revision/") {
                Some((id, revision_id)) if !revision_id.contains('/') => {
                    Ok(OpenFileSelector::Revision { id: nonempty(id)?, revision_id: nonempty(revision_id)? })
                }
                Some(_) => Err(malformed()),
                None if file.contains('/') => Err(malformed()),
                None => Ok(OpenFileSelector::File { id: nonempty(file)? }),
            };
        }
        if let Some(source) = rest.strip_prefix("source/") {
            let (source_id, path) = source.split_once("/path/").ok_or_else(malformed)?;
            if source_id.contains('/') {
                return Err(malformed());
            }
            return Ok(OpenFileSelector::SourcePath { source_id: nonempty(source_id)?, path: nonempty(path)? });
        }
        if rest.contains('/') {
            return Err(malformed());
        }
        Ok(OpenFileSelector::File { id: nonempty(rest)? })
    }

    fn matches(&self, file: &OpenFile) -> bool {
        match self {
            OpenFileSelector::File { id } => file.id == *id,
            OpenFileSelector::Revision { id, revision_id } => file.id == *id && file.revision_id == *revision_id,
            OpenFileSelector::SourcePath { source_id, path } => {
                file.source_id.as_deref() == Some(source_id) && file.path.as_deref() == Some(path)
            }
        }
    }
}

/// One line of the open-files manifest.
#[derive(serde::Deserialize)]
struct OpenFile {
    id: String,
    revision_id: String,
    /// The open-files source (a drive, a bucket) the file belongs to, and its path there.
    #[serde(default)]
    source_id: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    hash: String,
    mime: String,
    text: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    owner: Option<String>,
}

/// The manifest entry `selector` names, read as a document stored under `reference` (the ref as given: a
/// pinned revision stays that revision). Every line is checked, so a damaged manifest is reported wherever
/// the entry sits; the last matching line is the newest.
fn read_open_file(
    project: &Project,
    reference: &str,
    selector: &OpenFileSelector,
    prior: Option<&Ingested>,
) -> Result<Read, Refusal> {
    let Some(manifest) = &project.config.ingest.open_files_manifest else {
        return Err(rule("`open-files://` ingest is off: name the manifest in `[ingest] open_files_manifest`"));
    };
    let path = project.root.join(manifest);
    let text =
        std::fs::read_to_string(&path).map_err(|error| Refusal::Io { path: path.display().to_string(), error })?;
    let mut found = None;
    for (index, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let file: OpenFile = serde_json::from_str(line)
            .map_err(|e| rule(format!("`{}` line {}: not an open-files entry: {e}", path.display(), index + 1)))?;
        if selector.matches(&file) {
            found = Some(file);
        }
    }
    let Some(file) = found else {
        let what = reference.strip_prefix("open-files://").unwrap_or(reference);
        return Err(rule(format!("no entry `{what}` in `{}`", path.display())));
    };
    if prior.is_some_and(|prior| prior.revision_id == file.revision_id) {
        return Ok(Read::NotModified);
    }
    check_size(file.text.len() as u64, project.config.ingest.max_bytes)?;
    let (title, text) = to_markdown(file.text.as_bytes(), &file.mime)?;
    let _ = file.hash; // The manifest's hash is of the original file, which ingest never sees.
    let fallback = file.path.clone().unwrap_or_else(|| file.id.clone());
    Ok(Read::Document(Document {
        reference: reference.to_string(),
        resolver: "open-files",
        owner: file.owner.unwrap_or_else(|| "open-files".to_string()),
        revision_id: file.revision_id,
        mime: file.mime,
        title: file.title.or(title).unwrap_or(fallback),
        labels: Vec::new(),
        text,
    }))
}

/// The text of a stored source without the front matter ingest wrote.
fn stored_body(output_dir: &std::path::Path, prior: &Ingested) -> Result<String, IngestError> {
    let path = prior.text_path(output_dir)?;
    let text = std::fs::read_to_string(&path)
        .map_err(|source| ingested::IngestedError::Read { path: path.clone(), source })?;
    Ok(ingested::document_text(&text))
}

/// The ref a source is stored and cited by: a web ref without its fragment (the same document; and `#L…`
/// is how citations name lines). One that carries credentials (`https://user:secret@host/…`) is refused, so
/// no secret reaches the index or an answer's citation.
fn canonical_ref(reference: &str) -> Result<String, Refusal> {
    let Some((scheme, rest)) = reference.split_once("://") else { return Ok(reference.to_string()) };
    if !matches!(scheme, "https" | "http") {
        return Ok(reference.to_string());
    }
    let rest = rest.split_once('#').map_or(rest, |(document, _)| document);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(rule("a URL with credentials in it is not ingested: they would be stored and cited"));
    }
    Ok(format!("{scheme}://{rest}"))
}

/// The labels a source gets: `[ingest] labels` and `extra`, trimmed, lowercased, sorted.
fn labels_of(config: &IngestConfig, extra: &[String]) -> Result<Vec<String>, Refusal> {
    let mut labels = Vec::new();
    for label in config.labels.iter().chain(extra) {
        let label = label.trim().to_lowercase();
        if label.is_empty() || label.contains([',', '[', ']', '"', '\n']) {
            return Err(rule(format!("label `{label}`: a label is one word without `,`, brackets or quotes")));
        }
        labels.push(label);
    }
    labels.sort();
    labels.dedup();
    Ok(labels)
}

/// A stored resolver name as the `'static` one documents carry.
fn resolver_name(name: &str) -> &'static str {
    ["file", "https", "s3", "open-files", "web"].into_iter().find(|n| *n == name).unwrap_or("file")
}

pub(crate) fn check_size(bytes: u64, max_bytes: u64) -> Result<(), Refusal> {
    if bytes > max_bytes {
        return Err(rule(format!("{bytes} bytes is over the limit of {max_bytes} (`[ingest] max_bytes`)")));
    }
    Ok(())
}

/// Content of `mime` as (title, Markdown): HTML converted, Markdown and plain text kept. Binary content
/// and invalid UTF-8 are refused.
pub(crate) fn to_markdown(bytes: &[u8], mime: &str) -> Result<(Option<String>, String), Refusal> {
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(Refusal::Content("binary content".to_string()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        Refusal::Content(format!("invalid UTF-8 at line {line}"))
    })?;
    let media = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if media == "text/html" || media == "application/xhtml+xml" {
        let title = html_title(text);
        let markdown = html2text::config::plain()
            .no_link_wrapping()
            .link_footnotes(false)
            .string_from_read(bytes, 10_000)
            .map_err(|e| Refusal::Content(format!("unreadable HTML: {e}")))?;
        return Ok((title, markdown));
    }
    // A Markdown document keeps its front matter (the store merges it with the provenance); its title is
    // the front matter's, else its first heading.
    let own_title = knowledge_queries::front_matter(text).and_then(|f| f.scalar("title").map(str::to_string));
    let body = ingested::split_front_matter(text).1;
    let heading = body.lines().find_map(|line| line.strip_prefix("# ")).map(|t| t.trim().to_string());
    Ok((own_title.filter(|t| !t.trim().is_empty()).or(heading), text.to_string()))
}

/// The text of an HTML document's `<title>`, its common entities decoded.
fn html_title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = html[start..end]
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'");
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// Now, as the ledger writes times.
fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_with_its_title_and_nothing_it_links_is_read() {
        let html = b"<html><head><title>The &amp; Guide</title><script>steal()</script></head><body>\
            <h1>Intro</h1><p>Hello <a href=\"file:///etc/passwd\">there</a>.</p>\
            <img src=\"file:///etc/passwd\"><h2>Next</h2><ul><li>one</li></ul></body></html>";
        let (title, text) = to_markdown(html, "text/html; charset=utf-8").unwrap();
        assert_eq!(title.as_deref(), Some("The & Guide"));
        assert!(text.contains("# Intro") && text.contains("## Next") && text.contains("* one"), "{text}");
        assert!(!text.contains("steal()") && !text.contains("/etc/passwd"), "{text}");
    }

    #[test]
    fn markdown_keeps_its_front_matter_and_titles_by_it_and_binary_is_refused() {
        let (title, text) = to_markdown(b"---\ntitle: x\n---\n# Notes\n\nBody.\n", "text/markdown").unwrap();
        assert_eq!((title.as_deref(), text.as_str()), (Some("x"), "---\ntitle: x\n---\n# Notes\n\nBody.\n"));
        let (title, _) = to_markdown(b"# Notes\n\nBody.\n", "text/markdown").unwrap();
        assert_eq!(title.as_deref(), Some("Notes"));
        assert_eq!(to_markdown(b"a\0b", "text/plain").unwrap_err().to_string(), "binary content");
        assert_eq!(to_markdown(b"ok\n\xff", "text/plain").unwrap_err().to_string(), "invalid UTF-8 at line 2");
    }

    #[test]
    fn web_refs_lose_their_fragment_and_refuse_credentials() {
        assert_eq!(canonical_ref("https://docs.example.org/guide#install").unwrap(), "https://docs.example.org/guide");
        assert_eq!(canonical_ref("https://example.org/a?b=c@d").unwrap(), "https://example.org/a?b=c@d");
        assert!(canonical_ref("https://user:secret@example.org/a").is_err());
        assert_eq!(canonical_ref("open-files://m#1").unwrap(), "open-files://m#1");
    }

    #[test]
    fn open_files_refs_take_the_three_forms_and_the_bare_id() {
        let parse = |rest: &str| OpenFileSelector::parse(rest).ok();
        let file = |id: &str| Some(OpenFileSelector::File { id: id.into() });
        assert_eq!(parse("file/f1"), file("f1"));
        assert_eq!(parse("memo-7"), file("memo-7"));
        assert_eq!(
            parse("file/f1/revision/r2"),
            Some(OpenFileSelector::Revision { id: "f1".into(), revision_id: "r2".into() })
        );
        assert_eq!(
            parse("source/drive/path/teams/ops/runbook.md"),
            Some(OpenFileSelector::SourcePath { source_id: "drive".into(), path: "teams/ops/runbook.md".into() })
        );
        for malformed in [
            "",
            "file/",
            "file/a/b",
            "file/f1/revision/",
            "file/f1/revision/r/x",
            "source/s",
            "source//path/p",
            "source/s/path/",
            "a/b",
        ] {
            assert_eq!(parse(malformed), None, "{malformed}");
        }
    }

    #[test]
    fn labels_are_normalized_and_checked() {
        let config = IngestConfig { labels: vec!["Web".to_string()], ..IngestConfig::default() };
        assert_eq!(labels_of(&config, &["internal".to_string(), "web".to_string()]).unwrap(), ["internal", "web"]);
        assert!(labels_of(&config, &["a,b".to_string()]).is_err());
    }
}
