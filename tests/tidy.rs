//! Repository hygiene: every Rust file says what it is for in a `//!` doc on its first line.

use std::path::{Path, PathBuf};

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut missing = Vec::new();
    let mut checked = 0;
    for dir in ["compiler/src", "compiler/benches", "compiler/build.rs", "queries/src", "tests"] {
        for file in rust_files(&root.join(dir)) {
            checked += 1;
            let text = std::fs::read_to_string(&file).unwrap();
            if !text.starts_with("//!") {
                missing.push(file.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    assert!(checked > 10, "the walk found the sources");
    assert!(missing.is_empty(), "files without a leading `//!` doc: {missing:#?}");
}

fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
