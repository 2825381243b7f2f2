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
    _file: File,
}

impl WriterLock {
    /// Takes the lock on `output_dir`, waiting while another process holds it; `waiting` is told once,
    /// with the holder's pid when the lock file names one.
    pub fn acquire(output_dir: &Path, waiting: impl FnOnce(Option<u32>)) -> std::io::Result<WriterLock> {
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(output_dir.join(LOCK_FILE))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                waiting(holder.trim().parse().ok());
                file.lock()?;
            }
            Err(TryLockError::Error(error)) => return Err(error),
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        Ok(WriterLock { _file: file })
    }
}
