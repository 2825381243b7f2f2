//! Who may read what. A source's permission labels come from its front matter (`visibility`, `labels`)
//! and from `[permissions] rules`; a principal reads a source when every label on it is `public` or granted
//! to the principal in `[permissions.principals]`. The default principal is granted nothing: it reads
//! unlabelled and public sources only.
//!
//! A label `[permissions.purposes.knowledge_answer]` denies is unreadable to every principal: the index
//! keeps it (search cannot be told apart from a missing source), but no answer, excerpt or count shows it.
//!
//! Every read applies an `Access` inside its query, before ranking, snippets and counts, and answers for an
//! unreadable source exactly as for a missing one, so no output can tell that it exists.

use std::collections::{BTreeMap, HashSet};

use rusqlite::Connection;

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("unknown principal `{name}`; the index defines {}", if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    Unknown { name: String, known: Vec<String> },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// The labels `purpose` may not read, as the index was built with them (`[permissions.purposes]`).
pub fn denied_labels(conn: &Connection, purpose: &str) -> rusqlite::Result<Vec<String>> {
    Ok(denied_in(crate::store::meta(conn, "purposes")?.as_deref(), purpose))
}

/// The labels `purpose` may not read, from the stored purposes (JSON).
fn denied_in(purposes: Option<&str>, purpose: &str) -> Vec<String> {
    let mut purposes: BTreeMap<String, Vec<String>> =
        purposes.and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default();
    purposes.remove(purpose).unwrap_or_default()
}

/// What one principal may read in one index.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Ids of the sources the principal may not read, sorted.
    hidden: Vec<i64>,
    hidden_paths: HashSet<String>,
    granted: HashSet<String>,
    /// Labels no answer may read, whoever asks (`[permissions.purposes.knowledge_answer] deny_labels`).
    denied: HashSet<String>,
}

impl Access {
    /// The access of `principal` (`None`: the default principal) under the principals the index was built
    /// with, for answers: what `knowledge_answer` denies is hidden too.
    pub fn load(conn: &Connection, principal: Option<&str>) -> Result<Access, AccessError> {
        Access::load_for(conn, principal, Some("knowledge_answer"))
    }

    /// The access of `principal` for `purpose`: with `None`, by the principal's grants alone.
    pub fn load_for(conn: &Connection, principal: Option<&str>, purpose: Option<&str>) -> Result<Access, AccessError> {
        let principals = crate::store::meta(conn, "principals")?;
        let purposes = crate::store::meta(conn, "purposes")?;
        let rows = crate::store::labelled_sources(conn)?;
        Access::of(principals.as_deref(), purposes.as_deref(), principal, purpose, rows)
    }

    /// The access of `principal` for `purpose` in an index whose meta holds `principals` and `purposes`
    /// (JSON, as the build stored them), given its labelled sources as (id, path, labels) rows.
    pub fn of(
        principals: Option<&str>,
        purposes: Option<&str>,
        principal: Option<&str>,
        purpose: Option<&str>,
        labelled: impl IntoIterator<Item = (i64, String, String)>,
    ) -> Result<Access, AccessError> {
        let principals: BTreeMap<String, Vec<String>> =
            principals.and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default();
        let granted: HashSet<String> = match principal {
            None => HashSet::new(),
            Some(name) => principals
                .get(name)
                .ok_or_else(|| AccessError::Unknown {
                    name: name.to_string(),
                    known: principals.keys().cloned().collect(),
                })?
                .iter()
                .map(|label| label.trim().to_lowercase())
                .collect(),
        };
        let denied = match purpose {
            Some(purpose) => denied_in(purposes, purpose).into_iter().collect(),
            None => HashSet::new(),
        };
        let mut access = Access { granted, denied, ..Access::default() };
        for (id, path, labels) in labelled {
            if !access.can_read_labels(&labels) {
                access.hidden.push(id);
                access.hidden_paths.insert(path);
            }
        }
        access.hidden.sort_unstable();
        Ok(access)
    }

    /// Adds what `other` hides (another project's sources, by their ids in a shared store).
    pub fn hide_also(&mut self, other: Access) {
        self.hidden.extend(other.hidden);
        self.hidden.sort_unstable();
        self.hidden_paths.extend(other.hidden_paths);
    }

    /// Whether sources with these labels (comma-separated, as stored) are readable: each label is public or
    /// granted, and none is denied to answers.
    #[must_use]
    pub fn can_read_labels(&self, labels: &str) -> bool {
        labels
            .split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .all(|l| !self.denied.contains(l) && (l == "public" || self.granted.contains(l)))
    }

    /// Whether the source at `path` is readable. A path the index does not hold is readable: there is
    /// nothing of it to show.
    #[must_use]
    pub fn can_read_path(&self, path: &str) -> bool {
        !self.hidden_paths.contains(path)
    }

    /// Whether nothing in the index is hidden from this principal.
    #[must_use]
    pub fn reads_everything(&self) -> bool {
        self.hidden.is_empty()
    }

    /// Whether `text` names an unreadable source (a message that cites one must not be shown).
    #[must_use]
    pub fn mentions_hidden(&self, text: &str) -> bool {
        self.hidden_paths.iter().any(|path| text.contains(path.as_str()))
    }

    /// The ids of the sources the principal may not read, sorted: all that tells two principals' reads of
    /// one index state apart.
    #[must_use]
    pub fn hidden_sources(&self) -> &[i64] {
        &self.hidden
    }
}
