//! What the benchmarks share: copying a corpus's Markdown files into a temporary project, and listing files.

use std::path::{Path, PathBuf};

/// Copies the Markdown files under `from` to `to`, keeping their folders; returns how many and their bytes.
pub(crate) fn copy_markdown(from: &Path, to: &Path) -> (usize, u64) {
    let mut count = 0;
    let mut bytes = 0;
    for path in walk_files(from) {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let target = to.join(path.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        bytes += std::fs::copy(&path, &target).unwrap();
        count += 1;
    }
    (count, bytes)
}

/// Every file below `dir`.
pub(crate) fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
