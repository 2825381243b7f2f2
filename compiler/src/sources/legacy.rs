//! The legacy JSON store of the systems `knowledge` replaces (`~/.open-knowledge/db.json`: `{"items": [...]}`,
//! each item an `id`, `title`, `content`, optional `url`, `tags`, `archived` and `created_at`), read for
//! migration: `knowledge import legacy` brings each live item into the notes store as a note under its own id,
//! so it is indexed and cited as `knowledge://item/ID`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::notes::Note;

/// Where the legacy store lives, under the user's home folder.
pub const DEFAULT_PATH: &str = ".open-knowledge/db.json";

/// The largest legacy store read: a file past it is refused rather than read into memory whole.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LegacyError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is {size} bytes, more than a legacy store of {MAX_BYTES} bytes is read", path.display())]
    TooLarge { path: PathBuf, size: u64 },
    /// The message names the line and column (serde's words).
    #[error("`{}` is not a legacy store: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

#[derive(Debug, Deserialize)]
struct LegacyStore {
    items: Vec<LegacyItem>,
}

#[derive(Debug, Deserialize)]
struct LegacyItem {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    archived: bool,
    #[serde(default)]
    created_at: Option<String>,
}

/// The notes a legacy store holds, and what was left out.
#[derive(Debug, Default)]
pub struct LegacyNotes {
    pub notes: Vec<Note>,
    /// Archived items, which the legacy tools hid: not imported.
    pub archived: usize,
    /// Items with neither title nor content.
    pub empty: usize,
    /// Items whose id an earlier item of the file already took: the first one is kept.
    pub repeated: usize,
}

/// Reads the legacy store at `path` as notes. Each note keeps its item's id when the id is a plain name
/// (letters, digits, `_` and `-`, at most 64); any other id becomes a hash of itself, so no id can make a
/// path or a ref of its own. The text is the title as a heading, the content, and the URL and tags as lines.
pub fn read(path: &Path) -> Result<LegacyNotes, LegacyError> {
    let read_error = |source| LegacyError::Read { path: path.to_path_buf(), source };
    let size = std::fs::metadata(path).map_err(read_error)?.len();
    if size > MAX_BYTES {
        return Err(LegacyError::TooLarge { path: path.to_path_buf(), size });
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    let store: LegacyStore = serde_json::from_slice(&bytes)
        .map_err(|error| LegacyError::Invalid { path: path.to_path_buf(), message: error.to_string() })?;
    let mut found = LegacyNotes::default();
    let mut seen = std::collections::HashSet::new();
    for item in store.items {
        if item.archived {
            found.archived += 1;
            continue;
        }
        let text = note_text(&item);
        if text.is_empty() {
            found.empty += 1;
            continue;
        }
        let id = note_id(&item.id);
        if !seen.insert(id.clone()) {
            found.repeated += 1;
            continue;
        }
        let created_ns = item
            .created_at
            .as_deref()
            .and_then(instant_of)
            .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |since| i64::try_from(since.as_nanos()).unwrap_or(i64::MAX));
        found.notes.push(Note { id, text, created_ns });
    }
    Ok(found)
}

/// The instant an RFC 3339 time names: with `Z`, a numeric offset (`+02:00`, `-0500`) or none (read as
/// UTC, as the legacy tool wrote it). `None` when it is no such time.
fn instant_of(at: &str) -> Option<std::time::SystemTime> {
    let at = at.trim();
    let (local, offset) = match at.strip_suffix(['Z', 'z']) {
        Some(local) => (local, 0),
        None => split_offset(at)?,
    };
    let local = humantime::parse_rfc3339_weak(local).ok()?;
    let shift = std::time::Duration::from_secs(offset.unsigned_abs());
    // Local time is UTC plus the offset: UTC is local minus it.
    if offset >= 0 { local.checked_sub(shift) } else { local.checked_add(shift) }
}

/// A time without `Z`, split into the time and its offset from UTC in seconds (0 when it names none), or
/// `None` when its offset is malformed. The offset's sign comes after the time's `T`: a date's own `-`
/// come before it.
fn split_offset(at: &str) -> Option<(&str, i64)> {
    let Some(time) = at.find(['T', 't', ' ']) else { return Some((at, 0)) };
    let Some(sign) = at[time..].rfind(['+', '-']).map(|found| time + found) else { return Some((at, 0)) };
    let digits: Vec<i64> =
        at[sign + 1..].chars().filter(|c| *c != ':').map(|c| c.to_digit(10).map(i64::from)).collect::<Option<_>>()?;
    let [h1, h2, m1, m2] = digits[..] else { return None };
    let (hours, minutes) = (h1 * 10 + h2, m1 * 10 + m2);
    if hours > 23 || minutes > 59 {
        return None;
    }
    let seconds = hours * 3600 + minutes * 60;
    Some((&at[..sign], if at[sign..].starts_with('-') { -seconds } else { seconds }))
}

fn note_id(id: &str) -> String {
    let plain =
        !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        id.to_string()
    } else {
        let mut hashed = knowledge_queries::content_hash(id.as_bytes());
        hashed.truncate(12);
        hashed
    }
}

fn note_text(item: &LegacyItem) -> String {
    let title = item.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let content = item.content.trim();
    if title.is_empty() && content.is_empty() {
        return String::new();
    }
    let mut text = String::new();
    if !title.is_empty() {
        text.push_str(&format!("# {title}\n\n"));
    }
    if !content.is_empty() {
        text.push_str(content);
        text.push_str("\n\n");
    }
    if let Some(url) = item.url.as_deref().map(str::trim).filter(|url| !url.is_empty()) {
        text.push_str(&format!("Source: <{url}>\n\n"));
    }
    let tags: Vec<&str> = item.tags.iter().map(|t| t.trim()).filter(|t| !t.is_empty()).collect();
    if !tags.is_empty() {
        text.push_str(&format!("Tags: {}\n", tags.join(", ")));
    }
    text.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_creation_time_with_a_numeric_offset_is_the_same_instant_in_utc() {
        let utc = instant_of("2026-06-08T12:34:56Z").unwrap();
        assert_eq!(instant_of("2026-06-08T14:34:56+02:00"), Some(utc));
        assert_eq!(instant_of("2026-06-08T07:34:56-0500"), Some(utc));
        assert_eq!(instant_of("2026-06-08T12:34:56"), Some(utc), "no offset reads as UTC");
        assert_eq!(instant_of(" 2026-06-08T12:34:56.000z "), Some(utc));
        let fraction = instant_of("2026-06-08T14:34:56.5+02:00").unwrap();
        assert_eq!(fraction.duration_since(utc).unwrap(), std::time::Duration::from_millis(500));
        for malformed in
            ["2026-06-08T12:34:56+25:00", "2026-06-08T12:34:56+02", "2026-06-08T12:34:56+0x:00", "yesterday", ""]
        {
            assert_eq!(instant_of(malformed), None, "{malformed}");
        }
    }

    #[test]
    fn ids_that_are_not_plain_names_are_hashed() {
        assert_eq!(note_id("k_lz3abc_x9y8z7"), "k_lz3abc_x9y8z7");
        for hostile in ["../../etc/passwd", "a/b", "", "x y", &"a".repeat(65), "é"] {
            let id = note_id(hostile);
            assert_eq!(id.len(), 12, "{hostile}");
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{hostile}");
        }
    }
}
