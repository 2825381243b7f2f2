//! Hashes what decides the bytes a build derives: the source files of the queries and of this crate, the
//! templates, the manifests and `Cargo.lock` (the dependency versions: another pulldown-cmark may parse
//! differently). Any edit to one changes the hash, and with it the pipeline fingerprint: the index is then
//! re-derived instead of trusted. Where the tree sits is not part of it.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    // Read when the script runs, not baked in when it compiles: a target folder shared by two checkouts
    // reuses one compiled script, which must hash the checkout being built.
    let crate_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let crate_dir = crate_dir.as_path();
    let roots = [crate_dir.join("src"), crate_dir.join("../queries/src"), crate_dir.join("../templates")];
    let mut files = Vec::new();
    for root in &roots {
        println!("cargo::rerun-if-changed={}", root.display());
        collect(root, &mut files);
    }
    // A packaged crate has no workspace around it: the files it lacks are simply not hashed.
    for file in ["Cargo.toml", "../queries/Cargo.toml", "../Cargo.lock"].map(|f| crate_dir.join(f)) {
        println!("cargo::rerun-if-changed={}", file.display());
        if file.is_file() {
            files.push(file);
        }
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
