//! Repository hygiene: every Rust file says what it is for in a `//!` doc on its first line, and the store
//! (all SQL, at the bottom of the layers) depends on no module above it.

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

/// The modules of `compiler/src` that `path`'s code names through `crate::` (a `use` or a path), other than
/// the crate root's own functions.
fn crate_modules_named(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut named = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(&name);
        if module.is_dir() || module.with_extension("rs").is_file() {
            named.push(name);
        }
    }
    named.sort();
    named.dedup();
    named
}

#[test]
fn the_store_depends_on_no_module_above_it() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut above = Vec::new();
    for file in rust_files(&store) {
        for module in crate_modules_named(&file).into_iter().filter(|m| m != "store") {
            above.push(format!("{}: crate::{module}", file.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(rust_files(&store).len() >= 2, "the walk found the store");
    assert!(above.is_empty(), "the store must not import feature modules: {above:#?}");
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
