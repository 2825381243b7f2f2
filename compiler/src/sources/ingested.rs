//! The ingested store: sources from outside the tree that `knowledge ingest source` read (`https://`,
//! `s3://`, `file:///…`, `open-files://`) and web results `knowledge web search --file` recorded. Each one's
//! text, as ingest converted it, is a Markdown file in `OUTPUT/ingested/`, opened by a front matter block
//! with its provenance (ref, resolver, owner, upstream revision, labels); `OUTPUT/ingested.json` lists
//! them. A build indexes each file under its ref, like any source, and cites it by that ref.
//!
//! Ingest changes these files, never the index, and writes each atomically (a temporary file, then a
//! rename): a build sees a source's old text or its new one, never half of either.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The list of ingested sources, in the output folder.
pub const INGESTED_FILE: &str = "ingested.json";
/// The folder of their texts, in the output folder.
pub const INGESTED_DIR: &str = "ingested";

/// One ingested source, as the list records it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ingested {
    /// The ref it is indexed and cited by.
    #[serde(rename = "ref")]
    pub reference: String,
    /// How it was read: `file`, `https`, `s3`, `open-files` or `web` (a web search result).
    pub resolver: String,
    /// Whose it is: the host, the bucket, the manifest's owner, the provider that searched.
    pub owner: String,
    /// The revision upstream gave (an ETag, the manifest's revision id) or the content hash.
    pub revision_id: String,
    /// The MIME type the content came as.
    pub mime: String,
    pub title: String,
    pub labels: Vec<String>,
    /// When it was last read (RFC 3339, UTC).
    pub retrieved_at: String,
    /// Its text file, relative to the output folder.
    pub file: String,
    /// The hash of that file's content.
    pub hash: String,
}

/// What a resolver read: the source before it is stored.
#[derive(Debug, Clone)]
pub struct Document {
    pub reference: String,
    pub resolver: &'static str,
    pub owner: String,
    pub revision_id: String,
    pub mime: String,
    pub title: String,
    pub labels: Vec<String>,
    /// Markdown (HTML already converted).
    pub text: String,
}

/// What storing a document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Added,
    Changed,
    Unchanged,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct IngestedFile {
    version: u32,
    sources: Vec<Ingested>,
}

#[derive(Debug, thiserror::Error)]
pub enum IngestedError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not an ingested-sources file: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no ingested source `{0}`")]
    Missing(String),
    #[error(
        "the ingested source `{reference}` names its text file `{file}`, which is not a file in `{INGESTED_DIR}/`: refused"
    )]
    Outside {
        reference: String,
        file: String,
        #[source]
        source: crate::store::paths::OwnedPathError,
    },
}

impl Ingested {
    /// Its text file, when the list names one inside the output folder's `ingested/` (the list is often
    /// committed, so it arrives with pull requests): a plain name in that folder, reached through no link.
    pub fn text_path(&self, output_dir: &Path) -> Result<PathBuf, IngestedError> {
        let outside =
            |source| IngestedError::Outside { reference: self.reference.clone(), file: self.file.clone(), source };
        let name = self.file.strip_prefix(INGESTED_DIR).and_then(|rest| rest.strip_prefix('/'));
        match name {
            Some(name) if !name.contains('/') && !name.starts_with('.') => {
                crate::store::paths::inside(output_dir, &self.file).map_err(outside)
            }
            _ => Err(outside(crate::store::paths::OwnedPathError::NotPlain {
                path: self.file.clone(),
                folder: output_dir.join(INGESTED_DIR),
            })),
        }
    }
}

/// The ingested sources in `output_dir`, sorted by ref; none when the list does not exist.
pub fn load(output_dir: &Path) -> Result<Vec<Ingested>, IngestedError> {
    let path = output_dir.join(INGESTED_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(IngestedError::Read { path, source }),
    };
    let file: IngestedFile = serde_json::from_str(&text)
        .map_err(|e| IngestedError::Invalid { path: path.clone(), message: e.to_string() })?;
    Ok(file.sources)
}

/// Stores `document` (its text file, then the list) and says whether it is new, changed or as it was. An
/// unchanged document keeps its file, so the next build has nothing to re-derive; only `retrieved_at` moves.
pub fn store(output_dir: &Path, document: &Document, now: &str) -> Result<(Ingested, Outcome), IngestedError> {
    let _lock = lock(output_dir)?;
    let mut sources = load(output_dir)?;
    let text = with_front_matter(document);
    let hash = knowledge_queries::content_hash(text.as_bytes());
    let file = format!("{INGESTED_DIR}/{}.md", file_stem(&document.reference));
    let position = sources.iter().position(|s| s.reference == document.reference);
    let outcome = match position.map(|i| &sources[i]) {
        Some(prior) if prior.hash == hash && prior.text_path(output_dir).is_ok_and(|path| path.is_file()) => {
            Outcome::Unchanged
        }
        Some(_) => Outcome::Changed,
        None => Outcome::Added,
    };
    if outcome != Outcome::Unchanged {
        write_atomically(output_dir, &file, text.as_bytes())?;
    }
    let entry = Ingested {
        reference: document.reference.clone(),
        resolver: document.resolver.to_string(),
        owner: document.owner.clone(),
        revision_id: document.revision_id.clone(),
        mime: document.mime.clone(),
        title: document.title.clone(),
        labels: document.labels.clone(),
        retrieved_at: now.to_string(),
        file,
        hash,
    };
    match position {
        Some(i) => sources[i] = entry.clone(),
        None => sources.push(entry.clone()),
    }
    save(output_dir, sources)?;
    Ok((entry, outcome))
}

/// Removes the ingested source `reference` and its text. An entry whose file is not in `ingested/` is
/// refused, list and file untouched: removing it must never delete a file elsewhere.
pub fn remove(output_dir: &Path, reference: &str) -> Result<Ingested, IngestedError> {
    let _lock = lock(output_dir)?;
    let mut sources = load(output_dir)?;
    let position = sources
        .iter()
        .position(|s| s.reference == reference)
        .ok_or_else(|| IngestedError::Missing(reference.to_string()))?;
    let file = sources[position].text_path(output_dir)?;
    let removed = sources.remove(position);
    save(output_dir, sources)?;
    match std::fs::remove_file(&file) {
        Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
            return Err(IngestedError::Write { path: file, source });
        }
        _ => {}
    }
    Ok(removed)
}

/// The keys ingest writes into a stored text's front matter; the source's own values for them give way.
/// `labels` last: a stored text keeps it when it is read back as a document ([`document_text`]).
const PROVENANCE_KEYS: [&str; 8] =
    ["title", "source", "resolver", "source_owner", "revision_id", "mime", "body_line", "labels"];

/// The text a build indexes: the document's provenance as front matter (so its title and labels reach the
/// index the way a file's do, and the provenance view reads the rest), then the document. A document's own
/// front matter is merged in: its other fields stay (its `visibility` among them, so a source marked
/// internal stays internal), and its `labels` join the ingest's.
fn with_front_matter(document: &Document) -> String {
    let (own, body) = split_front_matter(&document.text);
    let mut labels = document.labels.clone();
    if let Some(own) = knowledge_queries::front_matter(&document.text) {
        match own.fields.get("labels") {
            Some(knowledge_queries::FrontMatterValue::Scalar(label)) => labels.push(label.clone()),
            Some(knowledge_queries::FrontMatterValue::List(list)) => labels.extend(list.iter().cloned()),
            None => {}
        }
    }
    let mut labels: Vec<String> = labels.iter().map(|l| l.trim().to_lowercase()).filter(|l| !l.is_empty()).collect();
    labels.sort();
    labels.dedup();
    // The front matter reader takes a value to its line's end and strips one pair of outer quotes.
    let value = |text: &str| format!("\"{}\"", text.replace(['\r', '\n'], " "));
    let mut text = String::from("---\n");
    text.push_str(&format!("title: {}\n", value(&document.title)));
    text.push_str(&format!("source: {}\n", value(&document.reference)));
    text.push_str(&format!("resolver: {}\n", value(document.resolver)));
    text.push_str(&format!("source_owner: {}\n", value(&document.owner)));
    text.push_str(&format!("revision_id: {}\n", value(&document.revision_id)));
    text.push_str(&format!("mime: {}\n", value(&document.mime)));
    let body_line = body_line(&document.text);
    if body_line > 1 {
        text.push_str(&format!("body_line: {body_line}\n"));
    }
    if !labels.is_empty() {
        text.push_str(&format!("labels: [{}]\n", labels.join(", ")));
    }
    text.push_str(&own_fields(own.unwrap_or_default(), &PROVENANCE_KEYS));
    text.push_str("---\n\n");
    text.push_str(body.trim());
    text.push('\n');
    text
}

/// A stored text as the document it was made from: the source's own front matter fields (without the
/// provenance ingest wrote, but with the labels, which merged the source's own) and its body. Storing it
/// again gives the same text; its labels can only grow that way, never lose one the source carried.
#[must_use]
pub fn document_text(stored: &str) -> String {
    let (block, body) = split_front_matter(stored);
    let own = own_fields(block.unwrap_or_default(), &PROVENANCE_KEYS[..PROVENANCE_KEYS.len() - 1]);
    if own.is_empty() { body.trim().to_string() } else { format!("---\n{own}---\n\n{}", body.trim()) }
}

/// The 1-based line of a document where the body a stored text keeps begins: after the document's own front
/// matter and the blank lines ingest trims.
fn body_line(document: &str) -> usize {
    let (_, body) = split_front_matter(document);
    let lead = document.len() - body.trim_start().len();
    document[..lead].matches('\n').count() + 1
}

/// How many lines a stored text's provenance block moves its body down from where the body stood in the
/// document ingest read. Chunks of an ingested source are cited in the document's own lines (a 3-line text
/// at L1–3, not below the block); their byte offsets still address the stored text, whose hash is the
/// source's revision.
#[must_use]
pub fn line_shift(stored: &str) -> u32 {
    let (block, body) = split_front_matter(stored);
    let lead = stored.len() - body.trim_start().len();
    let header_lines = stored[..lead].matches('\n').count();
    let body_line = block
        .and_then(|block| block.lines().find_map(|line| line.strip_prefix("body_line:")))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(1);
    u32::try_from(header_lines.saturating_sub(body_line.saturating_sub(1))).unwrap_or(0)
}

/// The lines of a front matter block whose keys are not in `dropped`, each key with the indented lines
/// that continue it.
fn own_fields(block: &str, dropped: &[&str]) -> String {
    let mut kept = String::new();
    let mut keep = false;
    for line in block.lines() {
        let continues = line.starts_with([' ', '\t']) || line.starts_with("- ");
        if !continues {
            let key = line.split_once(':').map_or("", |(key, _)| key.trim());
            keep = !line.trim().is_empty() && !dropped.contains(&key);
        }
        if keep {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// A text's leading front matter block (the lines between the `---` fences) and what follows it.
#[must_use]
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else { return (None, text) };
    match rest.find("\n---\n") {
        Some(end) => (Some(&rest[..=end]), rest[end + 5..].trim_start_matches('\n')),
        None if rest.starts_with("---\n") => (Some(""), &rest[4..]),
        None => (None, text),
    }
}

/// A file name for a ref: readable where it can be, unique by a hash of the whole ref.
fn file_stem(reference: &str) -> String {
    let readable: String = reference
        .split_once("://")
        .map_or(reference, |(_, rest)| rest)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c.to_ascii_lowercase() } else { '_' })
        .take(60)
        .collect();
    let hash = knowledge_queries::content_hash(reference.as_bytes());
    format!("{}-{}", readable.trim_matches('_'), &hash[..12])
}

fn save(output_dir: &Path, mut sources: Vec<Ingested>) -> Result<(), IngestedError> {
    sources.sort_by(|a, b| a.reference.cmp(&b.reference));
    let json = serde_json::to_string_pretty(&IngestedFile { version: 1, sources }).expect("list serializes") + "\n";
    write_atomically(output_dir, INGESTED_FILE, json.as_bytes())
}

/// Ingest's writers take turns: each reads the list, changes it and writes it back under this lock, so
/// two at once both keep their source (a list read before another's write would lose it).
fn lock(output_dir: &Path) -> Result<crate::store::FileLock, IngestedError> {
    let wrap = |source| IngestedError::Write { path: output_dir.join(LOCK_FILE), source };
    std::fs::create_dir_all(output_dir).map_err(wrap)?;
    crate::store::FileLock::acquire(output_dir, LOCK_FILE).map_err(wrap)
}

/// The lock ingest's writers take, in the output folder.
pub const LOCK_FILE: &str = "ingested.lock";

/// Writes `relative` (inside `output_dir`, through no link) by a temporary file and a rename.
fn write_atomically(output_dir: &Path, relative: &str, bytes: &[u8]) -> Result<(), IngestedError> {
    let path = output_dir.join(relative);
    let wrap = |source| IngestedError::Write { path: path.clone(), source };
    // Checked before any folder is made: nothing is created through a link either.
    crate::store::paths::inside(output_dir, relative).map_err(|error| wrap(error.into()))?;
    let folder = path.parent().expect("a file in the output folder");
    std::fs::create_dir_all(folder).map_err(wrap)?;
    let name = path.file_name().expect("a file name").to_string_lossy();
    let temporary = folder.join(format!(".{name}.{}", std::process::id()));
    std::fs::write(&temporary, bytes).map_err(wrap)?;
    std::fs::rename(&temporary, &path).map_err(wrap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(text: &str) -> Document {
        Document {
            reference: "https://docs.example.org/guide?x=1".to_string(),
            resolver: "https",
            owner: "docs.example.org".to_string(),
            revision_id: "\"etag-1\"".to_string(),
            mime: "text/html".to_string(),
            title: "[Guide]: the\nbasics".to_string(),
            labels: vec!["internal".to_string()],
            text: text.to_string(),
        }
    }

    #[test]
    fn storing_again_tells_added_changed_and_unchanged_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (entry, outcome) = store(dir.path(), &document("# Guide\n\nHello."), "t1").unwrap();
        assert_eq!(outcome, Outcome::Added);
        assert!(entry.file.starts_with("ingested/docs.example.org_guide_x_1-"), "{}", entry.file);
        let text = std::fs::read_to_string(dir.path().join(&entry.file)).unwrap();
        assert!(
            text.starts_with("---\ntitle: \"[Guide]: the basics\"\nsource: \"https://docs.example.org/guide?x=1\"\n")
        );
        assert!(text.contains("labels: [internal]\n---\n\n# Guide\n\nHello.\n"), "{text}");
        assert_eq!(store(dir.path(), &document("# Guide\n\nHello."), "t2").unwrap().1, Outcome::Unchanged);
        assert_eq!(load(dir.path()).unwrap()[0].retrieved_at, "t2");
        assert_eq!(store(dir.path(), &document("# Guide\n\nHello again."), "t3").unwrap().1, Outcome::Changed);
        assert_eq!(load(dir.path()).unwrap().len(), 1);
        // The source's own front matter: its fields stay, its labels join, its provenance keys give way; and
        // the stored text gives back the document it was made from.
        let mut own =
            document("---\ntitle: Own title\nvisibility: internal\nlabels: [hr]\nauthors:\n  - Ann\n---\n# Guide\n");
        own.title = "Own title".to_string();
        let (entry, _) = store(dir.path(), &own, "t4").unwrap();
        let stored = std::fs::read_to_string(dir.path().join(&entry.file)).unwrap();
        assert!(stored.starts_with("---\ntitle: \"Own title\"\n"), "{stored}");
        assert!(
            stored.contains("labels: [hr, internal]\nvisibility: internal\nauthors:\n  - Ann\n---\n\n# Guide\n"),
            "{stored}"
        );
        let again = Document { text: document_text(&stored), labels: vec!["internal".to_string()], ..own };
        assert_eq!(store(dir.path(), &again, "t5").unwrap().1, Outcome::Unchanged);
        let removed = remove(dir.path(), "https://docs.example.org/guide?x=1").unwrap();
        assert!(!dir.path().join(removed.file).exists());
        assert!(load(dir.path()).unwrap().is_empty());
        assert!(matches!(remove(dir.path(), "https://nowhere"), Err(IngestedError::Missing(_))));
    }
}
