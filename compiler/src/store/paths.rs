//! Paths the tool reads from its own stored files (the ingested sources' list, the index's artifact rows,
//! a remote catalog): each must name a place inside the folder the tool owns, because those files travel
//! with the repository (the output folder is often committed) and so arrive with any pull request.
//!
//! A stored path is checked twice: as text (relative, `/`-separated, no `.` or `..` part, no backslash or
//! NUL), then on disk (no part of the way from the owning folder to it is a symbolic link), so neither a
//! crafted entry nor a link planted under the folder leads a read, write or delete outside it.

use std::path::{Path, PathBuf};

/// Why a stored path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnedPathError {
    #[error("`{path}` is not a plain relative path inside `{}`", folder.display())]
    NotPlain { path: String, folder: PathBuf },
    #[error("`{path}` leads through the symbolic link `{}`, which may point outside `{}`", link.display(), folder.display())]
    ThroughLink { path: String, link: PathBuf, folder: PathBuf },
}

/// A refused path is an I/O error to the writers that meet it (the file sync, the day log, ingest, export):
/// permission denied, with the reason.
impl From<OwnedPathError> for std::io::Error {
    fn from(error: OwnedPathError) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, error)
    }
}

/// Whether `path` is a plain relative path: `/`-separated names, none empty, `.` or `..`, with no
/// backslash (a separator on Windows), NUL or other control character.
#[must_use]
pub fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.chars().any(|c| c == '\\' || c.is_control())
        && path.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// `folder/path` when `path` is plain and no part of the way to it below `folder` is a symbolic link (what
/// does not exist yet is no link). The folder itself is the caller's to trust.
pub fn inside(folder: &Path, path: &str) -> Result<PathBuf, OwnedPathError> {
    if !is_plain_relative(path) {
        return Err(OwnedPathError::NotPlain { path: path.to_string(), folder: folder.to_path_buf() });
    }
    let mut resolved = folder.to_path_buf();
    for part in path.split('/') {
        resolved.push(part);
        match std::fs::symlink_metadata(&resolved) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(OwnedPathError::ThroughLink {
                    path: path.to_string(),
                    link: resolved,
                    folder: folder.to_path_buf(),
                });
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(folder.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_plain() {
        for plain in ["ingested/a.md", "wiki/general/page.md", "a", "a..b/c.md", ".hidden"] {
            assert!(is_plain_relative(plain), "{plain}");
        }
        for hostile in
            ["", "/etc/passwd", "../victim.txt", "ingested/../../x", "a//b", "a/./b", "a/", "a\\..\\b", "a\0b", "a\nb"]
        {
            assert!(!is_plain_relative(hostile), "{hostile:?}");
        }
    }

    #[test]
    fn a_link_on_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/file.md"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), dir.path().join("real/link.md")).unwrap();
        assert_eq!(inside(dir.path(), "real/file.md").unwrap(), dir.path().join("real/file.md"));
        assert_eq!(inside(dir.path(), "real/new/deeper.md").unwrap(), dir.path().join("real/new/deeper.md"));
        assert!(matches!(inside(dir.path(), "linked/file.md"), Err(OwnedPathError::ThroughLink { .. })));
        assert!(matches!(inside(dir.path(), "real/link.md"), Err(OwnedPathError::ThroughLink { .. })));
        assert!(matches!(inside(dir.path(), "../file.md"), Err(OwnedPathError::NotPlain { .. })));
    }
}
