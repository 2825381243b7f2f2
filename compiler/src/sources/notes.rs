//! The notes store: short texts added with `knowledge add`, kept in `notes.json` in the output folder (the
//! layout of the systems `knowledge` is compatible with). Notes are sources like files: a build indexes
//! each one as `knowledge://item/ID`, search returns it as a `legacy_item`, and it is not embedded.
//!
//! `add` and `notes rm` change this file, never the index; they write it atomically (a temporary file,
//! then a rename), so a reader or a build sees the old notes or the new, never half of either.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The notes file, in the output folder.
pub const NOTES_FILE: &str = "notes.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub text: String,
    /// Nanoseconds since the Unix epoch.
    pub created_ns: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct NotesFile {
    version: u32,
    items: Vec<Note>,
}

#[derive(Debug, thiserror::Error)]
pub enum NotesError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a notes file: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a note needs text")]
    Empty,
    #[error("no note `{0}`")]
    Missing(String),
}

/// The notes in `output_dir`, oldest first; none when the file does not exist.
pub fn load(output_dir: &Path) -> Result<Vec<Note>, NotesError> {
    let path = output_dir.join(NOTES_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(NotesError::Read { path, source }),
    };
    let file: NotesFile =
        serde_json::from_str(&text).map_err(|e| NotesError::Invalid { path: path.clone(), message: e.to_string() })?;
    Ok(file.items)
}

/// Adds a note and returns it.
pub fn add(output_dir: &Path, text: &str) -> Result<Note, NotesError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(NotesError::Empty);
    }
    let _lock = lock(output_dir)?;
    let mut notes = load(output_dir)?;
    let created_ns =
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let mut id = knowledge_queries::content_hash(format!("{created_ns}\0{text}").as_bytes());
    id.truncate(12);
    let note = Note { id, text: text.to_string(), created_ns };
    notes.push(note.clone());
    save(output_dir, notes)?;
    Ok(note)
}

/// What [`import`] did: notes added, replaced (an id already held with another text) and kept (the same
/// text).
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Imported {
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
}

/// Brings `notes` into the store under their own ids, in one write: a new id is added, a held id whose
/// text differs is replaced (its creation time kept), and one with the same text is left as it is, so an
/// import run again changes nothing.
pub fn import(output_dir: &Path, notes: Vec<Note>) -> Result<Imported, NotesError> {
    let _lock = lock(output_dir)?;
    let mut held = load(output_dir)?;
    let mut imported = Imported::default();
    for note in notes {
        match held.iter_mut().find(|n| n.id == note.id) {
            Some(existing) if existing.text == note.text => imported.unchanged += 1,
            Some(existing) => {
                existing.text = note.text;
                imported.updated += 1;
            }
            None => {
                held.push(note);
                imported.added += 1;
            }
        }
    }
    if imported.added + imported.updated > 0 {
        save(output_dir, held)?;
    }
    Ok(imported)
}

/// Removes the note `id` (with or without its `knowledge://item/` prefix).
pub fn remove(output_dir: &Path, id: &str) -> Result<Note, NotesError> {
    let note = knowledge_queries::SourceRef::from_path(id);
    let id = if note.origin() == knowledge_queries::Origin::Note { note.name() } else { id };
    let _lock = lock(output_dir)?;
    let mut notes = load(output_dir)?;
    let position = notes.iter().position(|n| n.id == id).ok_or_else(|| NotesError::Missing(id.to_string()))?;
    let removed = notes.remove(position);
    save(output_dir, notes)?;
    Ok(removed)
}

/// The lock the notes' writers take, in the output folder.
pub const LOCK_FILE: &str = "notes.lock";

/// `add` and `notes rm` take turns: each reads the notes, changes them and writes them back under this
/// lock, so two at once both keep their change (a file read before another's write would lose it).
fn lock(output_dir: &Path) -> Result<crate::store::FileLock, NotesError> {
    let wrap = |source| NotesError::Write { path: output_dir.join(LOCK_FILE), source };
    std::fs::create_dir_all(output_dir).map_err(wrap)?;
    crate::store::FileLock::acquire(output_dir, LOCK_FILE).map_err(wrap)
}

fn save(output_dir: &Path, items: Vec<Note>) -> Result<(), NotesError> {
    let path = output_dir.join(NOTES_FILE);
    let wrap = |source| NotesError::Write { path: path.clone(), source };
    std::fs::create_dir_all(output_dir).map_err(wrap)?;
    let temporary = output_dir.join(format!(".{NOTES_FILE}.{}", std::process::id()));
    let json = serde_json::to_string_pretty(&NotesFile { version: 1, items }).expect("notes serialize") + "\n";
    std::fs::write(&temporary, json).map_err(wrap)?;
    std::fs::rename(&temporary, &path).map_err(wrap)
}
