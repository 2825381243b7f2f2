//! Repository hygiene: every Rust file says what it is for in a `//!` doc on its first line, the top-level
//! modules of `compiler/src` import each other without a cycle (they are layers), and the store (all SQL, at
//! the bottom) depends on no module above it.

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

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Each top-level module (a file, or a folder with its `mod.rs` or sibling file) and the modules it names.
    let mut graph: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        let top =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "main" || top == "lib" {
            continue;
        }
        let named: Vec<String> = crate_modules_named(&file).into_iter().filter(|m| *m != top).collect();
        graph.entry(top).or_default().extend(named);
    }
    assert!(graph.len() > 10, "the walk found the modules: {graph:?}");
    // Depth-first search; a module met again while it is on the path closes a cycle.
    fn visit(
        module: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if !done.insert(module.to_string()) {
            return None;
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = std::collections::BTreeSet::new();
    for module in graph.keys() {
        if let Some(cycle) = visit(module, &graph, &mut Vec::new(), &mut done) {
            panic!("an import cycle between top-level modules: {}", cycle.join(" -> "));
        }
    }
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
