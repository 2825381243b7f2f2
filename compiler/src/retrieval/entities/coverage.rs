//! The `covers` edges: which tests reach which components and symbols, resolved from the names a test's
//! body uses and the items its file imports, within what its crate can see.

use super::*;

impl EntityGraph {
    /// `covers`: a test covers the components its file belongs to or imports, and each symbol of those
    /// components (or of its own file) whose name its body uses; a method only when the test also names its
    /// type. In Rust the type must be named exactly, in the body or by the file's imports (`use
    /// tokio::sync::Mutex`, or the trait `use salsa::Database` that brings a method into scope); elsewhere it
    /// may be named inside another identifier (`NewStore()` names `Store`, `book` names `Book`).
    /// Names a Rust test's file imports from another crate do not count: `std::sync::Mutex::lock` in a
    /// test of tokio is not tokio's `Mutex::lock`. A Rust test reaches only what its crate can: an
    /// integration test (`tests/…`) sees the library's public items and its own target's modules, and the
    /// library's tests never see the items of `tests/`, `examples/` or `benches/`.
    pub(super) fn resolve_covers(&mut self) {
        let mut symbols_by_name: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
        // The modules each file declares (`mod common;`): local roots of its `use` paths, and the targets'
        // shared modules it reaches.
        let mut modules_by_path: FxHashMap<&str, FxHashSet<&str>> = FxHashMap::default();
        for (index, node) in self.nodes.iter().enumerate() {
            if let Fields::Symbol(symbol) = &node.fields {
                if symbol.symbol_kind == "module" {
                    modules_by_path.entry(node.info.anchor.path.as_str()).or_default().insert(node.info.name.as_str());
                } else {
                    symbols_by_name.entry(node.info.name.as_str()).or_default().push(index);
                }
            }
        }
        // For a method, its type as a test must name it (`Mutex` of `sync::Mutex::lock`), if it has one; none
        // for other symbols. Computed once: candidates are tried millions of times on a large repository.
        let method_type: Vec<Option<Option<&str>>> = self
            .nodes
            .iter()
            .map(|node| match &node.fields {
                Fields::Symbol(s) if s.symbol_kind == "method" => {
                    Some(s.container.as_deref().map(|c| c.rsplit([':', '.']).next().unwrap_or(c)))
                }
                _ => None,
            })
            .collect();
        let no_modules = FxHashSet::default();
        let mut covers = FxHashMap::default();
        let mut covered_by: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
        for (test, node) in self.nodes.iter().enumerate() {
            let Fields::Test(fields) = &node.fields else { continue };
            let mut components: BTreeSet<usize> = self.imported_components(test, fields).into_iter().collect();
            components.extend(self.owner[test]);
            let modules = modules_by_path.get(node.info.anchor.path.as_str()).unwrap_or(&no_modules);
            let imports = self.rust_imports(fields, modules);
            let references: BTreeSet<&str> =
                fields.references.iter().map(String::as_str).filter(|r| !imports.foreign.contains(*r)).collect();
            // Other languages may name a type inside another identifier: their references, lowercased once.
            let lowercase: Vec<String> = if fields.language == "rust" {
                Vec::new()
            } else {
                references.iter().map(|r| r.to_lowercase()).collect()
            };
            let mut symbols = Vec::new();
            for reference in &references {
                // A method is used after `.` or `::`; a variable of its name (`let lock = …`) is not it.
                let member = fields.members.binary_search_by(|m| m.as_str().cmp(reference)).is_ok();
                for &symbol in symbols_by_name.get(reference).into_iter().flatten() {
                    let method = method_type[symbol];
                    if method.is_some() && !member {
                        continue;
                    }
                    let named = method.flatten().is_none_or(|container| {
                        self.names_container(fields, &imports, &references, &lowercase, symbol, container)
                    });
                    if named && self.reaches(test, symbol, &components, modules) {
                        symbols.push(symbol);
                    }
                }
            }
            symbols.sort_unstable();
            symbols.dedup();
            for &covered in symbols.iter().chain(&components) {
                covered_by.entry(covered).or_default().push(test);
            }
            covers.insert(test, (symbols, components.into_iter().collect()));
        }
        self.covers = covers;
        self.covered_by = covered_by;
    }

    /// Whether a test names the type `container` of the method `symbol`: in Rust, by an import whose path
    /// leads to the symbol's module (a test target's own modules are judged by what the target can reach),
    /// or, when the file imports no such name, in its body; in other languages, inside any of its
    /// references (`lowercase`).
    fn names_container(
        &self,
        fields: &TestPayload,
        imports: &RustImports<'_>,
        references: &BTreeSet<&str>,
        lowercase: &[String],
        symbol: usize,
        container: &str,
    ) -> bool {
        let Fields::Symbol(payload) = &self.nodes[symbol].fields else { return false };
        if fields.language == "rust" {
            match imports.local.get(container) {
                Some(paths) => {
                    self.target[symbol].is_some() || paths.iter().any(|path| leads_to(path.as_deref(), payload))
                }
                None => references.contains(container),
            }
        } else {
            let container = container.to_lowercase();
            lowercase.iter().any(|r| r.contains(&container))
        }
    }

    /// Whether a test can reach a symbol: one of its own file, or of a component it belongs to or imports,
    /// within what a Rust test's crate can see. `modules` are the modules the test's file declares.
    fn reaches(&self, test: usize, symbol: usize, components: &BTreeSet<usize>, modules: &FxHashSet<&str>) -> bool {
        if self.nodes[symbol].info.anchor.path == self.nodes[test].info.anchor.path {
            return true;
        }
        if !self.owner[symbol].is_some_and(|c| components.contains(&c)) {
            return false;
        }
        let public = matches!(&self.nodes[symbol].fields, Fields::Symbol(s) if s.visibility == "public");
        let rust = matches!(&self.nodes[test].fields, Fields::Test(t) if t.language == "rust");
        match (&self.target[test], &self.target[symbol]) {
            // Another crate's library is seen through its public items.
            (None, None) => !rust || public || self.owner[symbol] == self.owner[test],
            // An integration test, example or bench links its library: its public items only.
            (Some(_), None) => public,
            (None, Some(_)) => false,
            // Within one target (`tests/parallel/`), or a shared module its file declares (`mod common;` for
            // `tests/common/mod.rs`).
            (Some(own), Some(other)) => {
                self.owner[symbol] == self.owner[test]
                    && (own == other || target_module(other).is_some_and(|m| modules.contains(m)))
            }
        }
    }

    /// The names a Rust test's file (and body) imports, told apart: from crates that are not components
    /// here (`use std::sync::{Arc, Mutex}`: `Arc` and `Mutex` are std's), and from this repository (its
    /// crates, `crate`, `self`, `super`, and the modules the file declares), each with its path.
    fn rust_imports<'a>(&self, fields: &'a TestPayload, modules: &FxHashSet<&str>) -> RustImports<'a> {
        let mut imports = RustImports::default();
        if fields.language != "rust" {
            return imports;
        }
        for import in &fields.imports {
            for UseItem { path, visible: name, .. } in use_items(import) {
                let root = path.first().copied().unwrap_or(name);
                let relative = matches!(root, "self" | "super") || modules.contains(root);
                let local = relative
                    || root == "crate"
                    || self.components.iter().any(|&c| self.nodes[c].info.name.replace('-', "_") == root);
                if !local {
                    imports.foreign.insert(name);
                } else {
                    // A relative path could lead anywhere: it names every module.
                    let within = if relative || path.is_empty() { None } else { Some(path[1..].to_vec()) };
                    imports.local.entry(name).or_default().push(within);
                }
            }
        }
        // `task::spawn` with `task` from `tokio_test`, or `std::thread::spawn`: that crate's function.
        for path in &fields.paths {
            if let Some((root, rest)) = path.split_once("::")
                && (matches!(root, "std" | "core" | "alloc") || imports.foreign.contains(root))
            {
                imports.foreign.insert(rest.rsplit("::").next().unwrap_or(rest));
            }
        }
        imports
    }

    /// The components a test's file imports: a crate by its name (`knowledge_queries::…`), a Python
    /// package by its top module, a JavaScript package by name or a relative path, a Go module by prefix.
    fn imported_components(&self, test: usize, fields: &TestPayload) -> Vec<usize> {
        let path = &self.nodes[test].info.anchor.path;
        let mut found = Vec::new();
        for import in &fields.imports {
            let import = import.trim_start_matches("::");
            let first = import.split([':', '.', '/', '{']).next().unwrap_or("").trim();
            let by_name = |c: &&usize| {
                let name = &self.nodes[**c].info.name;
                match fields.language.as_str() {
                    "rust" | "python" => name.replace('-', "_").eq_ignore_ascii_case(first),
                    "go" => import == name || import.starts_with(&format!("{name}/")),
                    _ => import == name || import.starts_with(&format!("{name}/")),
                }
            };
            if import.starts_with('.') && matches!(fields.language.as_str(), "javascript" | "typescript") {
                let target = join_relative(folder(path), import);
                found.extend(owning_component(&self.nodes, &self.components, &target));
            } else {
                found.extend(self.components.iter().filter(by_name).copied());
            }
        }
        found
    }
}

/// The names a Rust test imports, by where they come from: a local name with the module paths it is
/// imported from below its crate (`None` for a relative `self::`/`super::` path), a foreign one alone.
#[derive(Default)]
struct RustImports<'a> {
    local: FxHashMap<&'a str, Vec<Option<Vec<&'a str>>>>,
    foreign: FxHashSet<&'a str>,
}

/// Whether an import path below a crate (`sync` of `tokio::sync::Mutex`) leads to the module a symbol is
/// in (`sync::mutex`, and the inline modules of its container): it is a prefix of it. Re-exports from
/// elsewhere are not followed.
pub(super) fn leads_to(path: Option<&[&str]>, symbol: &SymbolPayload) -> bool {
    let Some(path) = path else { return true };
    let mut module: Vec<&str> = symbol.module.split("::").filter(|m| *m != "crate" && !m.is_empty()).collect();
    if let Some(container) = &symbol.container {
        let parts: Vec<&str> = container.split("::").collect();
        module.extend(&parts[..parts.len() - 1]);
    }
    module.starts_with(path)
}

/// The Cargo target outside the library that a Rust symbol's or test's file belongs to, relative to its
/// package's folder: an integration test, example or bench file directly in `tests/`, `examples/` or
/// `benches/` is a crate of its own (`tests/sync_mutex.rs`), a folder there is one crate or a module
/// several share (`tests/common/`), and `build.rs` is the build script. `None` for the library (`src/`)
/// and for anything that is not Rust in a Cargo package.
pub(super) fn cargo_target(component: &Node, node: &Node) -> Option<String> {
    let Fields::Component(package) = &component.fields else { return None };
    let path = node.info.anchor.path.as_str();
    if package.ecosystem != "cargo" || !path.ends_with(".rs") {
        return None;
    }
    let relative = if package.root.is_empty() { path } else { path.strip_prefix(&format!("{}/", package.root))? };
    if relative == "build.rs" {
        return Some(relative.to_string());
    }
    let (folder, rest) = relative.split_once('/')?;
    if !matches!(folder, "tests" | "examples" | "benches") {
        return None;
    }
    Some(match rest.split_once('/') {
        Some((unit, _)) => format!("{folder}/{unit}/"),
        None => relative.to_string(),
    })
}

/// The module name a target is declared by in another file of its folder: `common` for `tests/common/`
/// or `tests/common.rs`.
fn target_module(target: &str) -> Option<&str> {
    let (_, unit) = target.split_once('/')?;
    Some(unit.trim_end_matches('/').trim_end_matches(".rs")).filter(|m| !m.is_empty())
}
