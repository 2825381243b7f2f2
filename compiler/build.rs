//! Hashes the source files of the queries and of this crate, so that a build can tell whether a stored
//! index was derived by the same code. Any edit to either changes the hash, and with it the pipeline
//! fingerprint: the index is then re-derived instead of trusted.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots = [crate_dir.join("src"), crate_dir.join("../queries/src")];
    let mut files = Vec::new();
    for root in &roots {
        println!("cargo::rerun-if-changed={}", root.display());
        collect(root, &mut files);
    }
    files.sort();
    // FNV-1a over relative path and contents: stable across platforms and enough to detect a change.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        let relative = file.strip_prefix(crate_dir).expect("file is under the crate folder");
        let bytes = fs::read(file).expect("read source file");
        for byte in relative.to_string_lossy().as_bytes().iter().chain(&[0u8]).chain(&bytes) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo::rustc-env=KNOWLEDGE_SOURCE_HASH={hash:016x}");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}
