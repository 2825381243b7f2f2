//! One writer at a time: `knowledge build` (and its maintenance siblings) hold an exclusive lock on
//! `build.lock` in the output folder for as long as they write the index or the generated files. A second
//! writer waits for the first; the lock file names the holder's pid so the waiting one can say whom it waits
//! for. The operating system drops the lock when its holder exits, killed or not, so a stale lock never
//! blocks anyone.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// The lock file's name inside the output folder.
pub const LOCK_FILE: &str = "build.lock";

/// The held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct WriterLock {
    _lock: FileLock,
}

impl WriterLock {
    /// Takes the lock on `output_dir`, waiting while another process holds it; `waiting` is told once,
    /// with the holder's pid when the lock file names one.
    pub fn acquire(output_dir: &Path, waiting: impl FnOnce(Option<u32>)) -> std::io::Result<WriterLock> {
        Ok(WriterLock { _lock: FileLock::acquire_telling(output_dir, LOCK_FILE, waiting)? })
    }
}

/// An exclusive lock on a file in a folder the tool owns, held until dropped; the file names its holder's
/// pid. A file already there that holds anything else is someone's own and is refused, never overwritten.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Takes the lock `name` in `folder`, waiting while another process holds it.
    pub fn acquire(folder: &Path, name: &str) -> std::io::Result<FileLock> {
        FileLock::acquire_telling(folder, name, |_| {})
    }

    fn acquire_telling(folder: &Path, name: &str, waiting: impl FnOnce(Option<u32>)) -> std::io::Result<FileLock> {
        let path = folder.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.file_type().is_file()) {
            return Err(not_ours(&path, "it is not a plain file"));
        }
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
        let mut holder = String::new();
        // A pid, or nothing (a new file, or one whose holder never wrote); a file that holds anything else
        // (or is too long to be a pid) is the user's.
        if file.metadata()?.len() > 20 || file.read_to_string(&mut holder).is_err() || !is_pid_or_empty(&holder) {
            return Err(not_ours(&path, "it holds something other than a lock holder's pid"));
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                waiting(holder.trim().parse().ok());
                file.lock()?;
            }
            Err(TryLockError::Error(error)) => return Err(error),
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        Ok(FileLock { _file: file })
    }
}

fn is_pid_or_empty(text: &str) -> bool {
    text.trim().bytes().all(|b| b.is_ascii_digit())
}

fn not_ours(path: &Path, why: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("`{}` is not a lock file of this tool ({why}); move it away to build here", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_own_file_at_the_locks_path_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "my notes\n").unwrap();
        let error = WriterLock::acquire(dir.path(), |_| {}).unwrap_err();
        assert!(error.to_string().contains("not a lock file of this tool"), "{error}");
        assert_eq!(std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(), "my notes\n");
        std::fs::write(dir.path().join(LOCK_FILE), "4242").unwrap();
        drop(WriterLock::acquire(dir.path(), |_| {}).unwrap());
        assert_eq!(std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(), std::process::id().to_string());
    }
}
