//! Repository hygiene: every Rust file says what it is for in a `//!` doc on its first line, the top-level
//! modules of `compiler/src` are layers, each importing only those below it, the store (all SQL, at the
//! bottom) depends on no module above it, and the docs the repository compiles pass `knowledge lint`.

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

/// The repository compiles its own docs (`kc.toml`): they pass the pre-commit check a user's would. `lint`
/// reads the tree and writes nothing.
#[test]
fn the_repositorys_own_docs_lint_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"))
        .arg("-C")
        .arg(&root)
        .arg("lint")
        .output()
        .expect("the binary runs");
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{said}");
    assert!(said.lines().any(|line| line.starts_with("0 errors,")), "{said}");
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

/// The layers of `compiler/src`, bottom first, as `lib.rs` declares them: each may import only the layers
/// before it, so there is no cycle and a reader can learn the crate from the bottom up.
const LAYERS: [&str; 10] =
    ["store", "config", "sources", "providers", "embeddings", "wiki", "lint", "build", "retrieval", "serve"];

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut upward = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        let top =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        // The binary's own modules sit above every layer.
        if top == "main" || top == "lib" || top == "cli" {
            continue;
        }
        let Some(level) = LAYERS.iter().position(|layer| *layer == top) else {
            panic!("`{}` is in no layer: add it to LAYERS (and to lib.rs in the same order)", relative.display());
        };
        seen.insert(top.clone());
        for named in crate_modules_named(&file) {
            match LAYERS.iter().position(|layer| *layer == named) {
                Some(other) if other < level || named == top => {}
                _ => upward.push(format!("{}: crate::{named}", relative.display())),
            }
        }
    }
    assert_eq!(seen.len(), LAYERS.len(), "every layer has code: {seen:?}");
    assert!(upward.is_empty(), "imports of a layer at or above the importer's own: {upward:#?}");
}

#[test]
fn lib_declares_the_layers_in_order() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let declared: Vec<&str> = lib.lines().filter_map(|line| line.strip_prefix("pub mod ")?.strip_suffix(';')).collect();
    assert_eq!(declared, LAYERS, "lib.rs declares the layers bottom first");
}

/// What marks a line as SQL: a string literal that opens with a statement's keyword, a condition built into
/// a string, or a call that runs a statement (rusqlite's and the `postgres` crate's).
const SQL_MARKERS: [&str; 30] = [
    "\"SELECT ",
    "\"SELECT\n",
    "\"INSERT ",
    "\"UPDATE ",
    "\"DELETE ",
    "\"WITH ",
    "\"CREATE ",
    "\"DROP ",
    "\"PRAGMA ",
    "\"REPLACE ",
    "\"BEGIN",
    "\"COMMIT",
    "\"ROLLBACK",
    "\"VACUUM ",
    "\"ATTACH ",
    " LIKE '",
    " NOT LIKE ",
    " NOT IN (",
    "json_each(",
    "json_extract(",
    ".prepare(",
    ".prepare_cached(",
    ".execute(",
    ".execute_batch(",
    ".batch_execute(",
    ".query_row(",
    ".query_one(",
    ".query_opt(",
    ".pragma_update(",
    ".pragma_query_value(",
];

/// The lines of SQL in `file` outside its unit tests (a `#[cfg(test)]` module closes a file) and comments.
fn sql_lines(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut found = Vec::new();
    for (n, line) in outside_test_modules(&text).into_iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if SQL_MARKERS.iter().any(|marker| code.contains(marker)) {
            found.push(format!("{}: {}", n + 1, code));
        }
    }
    found
}

/// The store is the only owner of SQL: no statement, condition or call that runs one anywhere else in the
/// compiler or the query graph, so a schema change is read and tested in one layer.
#[test]
fn sql_lives_only_in_the_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let store = root.join("compiler/src/store");
    let mut outside = Vec::new();
    let mut checked = 0;
    for dir in ["compiler/src", "queries/src"] {
        for file in rust_files(&root.join(dir)).into_iter().filter(|file| !file.starts_with(&store)) {
            checked += 1;
            let relative = file.strip_prefix(&root).unwrap().display().to_string();
            outside.extend(sql_lines(&file).into_iter().map(|line| format!("{relative}:{line}")));
        }
    }
    assert!(checked > 50, "the walk found the sources");
    assert!(outside.is_empty(), "SQL outside compiler/src/store: {outside:#?}");
    // The detector sees the store's own statements, conditions and calls.
    for file in ["embeddings.rs", "ledger.rs", "search.rs", "postgres/search.rs"] {
        assert!(!sql_lines(&store.join(file)).is_empty(), "{file}");
    }
}

/// The error type of each `Result<T, E>` written on `line` (the last top-level argument of two).
fn result_error_types(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in line.match_indices("Result<") {
        let mut depth = 0;
        let mut arguments = vec![String::new()];
        for c in line[at + "Result".len()..].chars() {
            match c {
                '<' => {
                    depth += 1;
                    if depth == 1 {
                        continue;
                    }
                }
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                // A tuple's commas separate its fields, not the result's arguments.
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ',' if depth == 1 => {
                    arguments.push(String::new());
                    continue;
                }
                _ => {}
            }
            arguments.last_mut().expect("one argument at least").push(c);
        }
        if arguments.len() == 2 {
            found.push(arguments[1].trim().to_string());
        }
    }
    found
}

/// Errors are typed: no function in the compiler answers `Result<_, String>`, so a caller can tell one
/// failure from another without reading its words, and a cause is never flattened away by accident.
#[test]
fn no_result_carries_a_string_error() {
    assert_eq!(result_error_types("fn f() -> Result<HashMap<i64, String>, E> {"), ["E"]);
    assert_eq!(result_error_types("fn f() -> Result<Vec<(u8, u8)>, String> {"), ["String"]);
    assert_eq!(result_error_types("fn f() -> Result<(Vec<u8>, Option<u8>), String> {"), ["String"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut stringly = Vec::new();
    for file in rust_files(&root.join("compiler/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate().filter(|(_, line)| !line.trim_start().starts_with("//")) {
            if result_error_types(line).iter().any(|error| error == "String") {
                stringly.push(format!("{}:{}: {}", file.strip_prefix(&root).unwrap().display(), n + 1, line.trim()));
            }
        }
    }
    assert!(stringly.is_empty(), "functions whose error is a String: {stringly:#?}");
}

/// The longest a function may be, in lines from its signature to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// The lines of `text`, those of its `#[cfg(test)] mod …` modules blanked (line numbers kept). A
/// `#[cfg(test)]` on anything else (a helper function, a match arm) hides nothing that follows it.
fn outside_test_modules(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    while at < lines.len() {
        let next = (at + 1..lines.len()).find(|&n| !lines[n].trim().is_empty());
        let is_module = next.is_some_and(|n| {
            let item = lines[n].trim_start();
            ["mod ", "pub mod ", "pub(crate) mod ", "pub(super) mod "].iter().any(|start| item.starts_with(start))
        });
        if !(lines[at].trim_start().starts_with("#[cfg(test)]") && is_module) {
            at += 1;
            continue;
        }
        let mut end = next.expect("a module follows");
        let mut depth = 0;
        for (n, line) in lines.iter().enumerate().skip(end) {
            let code = code_of(line);
            depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
            end = n;
            if depth <= 0 && (code.contains('}') || code.trim_end().ends_with(';')) {
                break;
            }
        }
        for line in &mut lines[at..=end] {
            *line = "";
        }
        at = end + 1;
    }
    lines
}

/// `line` without its string and character literals and its `//` comment, so braces in them do not count.
fn code_of(line: &str) -> String {
    let mut code = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            // A character literal (`'{'`, `'\''`), not a lifetime (`'a`).
            '\'' if matches!(chars.clone().nth(1), Some('\'')) || chars.peek() == Some(&'\\') => {
                if chars.next() == Some('\\') {
                    chars.next();
                }
                while chars.next().is_some_and(|c| c != '\'') {}
            }
            '/' if chars.peek() == Some(&'/') => break,
            _ => code.push(c),
        }
    }
    code
}

/// Each function of `text` (outside its `#[cfg(test)]` module) longer than [`MAX_FUNCTION_LINES`], as
/// (first line, lines, name).
fn long_functions(text: &str) -> Vec<(usize, usize, String)> {
    let lines = outside_test_modules(text);
    let mut long = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let code = code_of(line);
        let Some(at) = code.find("fn ") else { continue };
        let before = code[..at].trim();
        let is_item = before.is_empty()
            || before.split_whitespace().all(|word| {
                matches!(word, "pub" | "async" | "const" | "unsafe" | "extern") || word.starts_with("pub(")
            });
        if !is_item {
            continue;
        }
        let name: String = code[at + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let (mut depth, mut opened) = (0_i32, false);
        for (end, line) in lines.iter().enumerate().skip(start) {
            let code = code_of(line);
            for c in code.chars() {
                match c {
                    '{' => (depth, opened) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if !opened && code.trim_end().ends_with(';') {
                break;
            }
            if opened && depth == 0 {
                if end - start + 1 > MAX_FUNCTION_LINES {
                    long.push((start + 1, end - start + 1, name.clone()));
                }
                break;
            }
        }
    }
    long
}

/// A function a reader can hold in mind: none in the compiler or the query graph is longer than
/// [`MAX_FUNCTION_LINES`] lines.
#[test]
fn no_function_is_longer_than_a_screen() {
    let short = "fn f() {\n    let s = \"}\";\n    let c = '}';\n    g::<'_>();\n}\n";
    assert!(long_functions(short).is_empty());
    // A test module is left out; a `#[cfg(test)]` helper before other code hides none of it.
    let body = "    x();\n".repeat(MAX_FUNCTION_LINES);
    let tests = format!("#[cfg(test)]\nmod tests {{\n    fn t() {{\n{body}    }}\n}}\n");
    assert!(long_functions(&tests).is_empty());
    let helper = format!("#[cfg(test)]\nfn helper() {{}}\n\nfn h() {{\n{body}}}\n");
    assert_eq!(long_functions(&helper), [(4, MAX_FUNCTION_LINES + 2, "h".to_string())]);
    let long = format!("pub(crate) fn g() {{\n{}}}\n", "    x();\n".repeat(MAX_FUNCTION_LINES));
    assert_eq!(long_functions(&long), [(1, MAX_FUNCTION_LINES + 2, "g".to_string())]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for dir in ["compiler/src", "queries/src"] {
        for file in rust_files(&root.join(dir)) {
            let relative = file.strip_prefix(&root).unwrap().display().to_string();
            // The query graph's own tests are a module of files of their own.
            if relative.contains("/tests/") {
                continue;
            }
            for (line, length, name) in long_functions(&std::fs::read_to_string(&file).unwrap()) {
                found.push(format!("{relative}:{line}: `{name}` is {length} lines"));
            }
        }
    }
    assert!(found.is_empty(), "functions longer than {MAX_FUNCTION_LINES} lines: {found:#?}");
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

/// The pre-commit hook named for CI checks and writes nothing (`build --check`); the writing build has a
/// hook of its own (issue 42).
#[test]
fn the_build_check_hook_runs_a_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let hooks = std::fs::read_to_string(root.join(".pre-commit-hooks.yaml")).unwrap();
    let entry_of = |id: &str| {
        let block = hooks.split("- id: ").find(|block| block.starts_with(&format!("{id}\n"))).unwrap();
        block.lines().find_map(|line| line.trim().strip_prefix("entry: ")).unwrap().to_string()
    };
    assert_eq!(entry_of("knowledge-build-check"), "knowledge build --check");
    assert_eq!(entry_of("knowledge-build"), "knowledge build");
    assert_eq!(entry_of("knowledge-lint"), "knowledge lint");
}

/// Every install or run command the docs give uses Cargo.lock (`--locked`): without it `cargo install`
/// resolves every dependency anew, to versions no test ran with (issue 42).
#[test]
fn install_commands_in_the_docs_use_the_lock_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md"), root.join(".pre-commit-hooks.yaml")];
    files.extend(std::fs::read_dir(root.join("docs")).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_file()));
    let mut unlocked = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let command = line.contains("cargo install") || line.trim_start().starts_with("cargo run");
            if command && !line.contains("--locked") {
                unlocked.push(format!("{}:{}: {line}", file.strip_prefix(&root).unwrap().display(), n + 1));
            }
        }
    }
    assert!(unlocked.is_empty(), "install commands without --locked: {unlocked:#?}");
}

/// The release workflow builds every target docs/install.md lists, each with the lock file, and packs it with
/// `.ci/package`, which this test runs on the test build: the archive holds the binary, the README, the man
/// page and the completions, and its checksum file verifies (issue 42; the workflow itself needs GitHub).
#[test]
fn the_release_workflow_builds_every_documented_target_and_its_packaging_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let workflow = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    let install = std::fs::read_to_string(root.join("docs/install.md")).unwrap();
    let documented: Vec<&str> = install
        .lines()
        .filter_map(|line| line.strip_prefix("| `")?.split_once('`').map(|(target, _)| target))
        .collect();
    let built: Vec<&str> =
        workflow.lines().filter_map(|line| line.trim().strip_prefix("- target: ")).map(str::trim).collect();
    assert_eq!(built, documented, "the workflow's targets and docs/install.md's");
    assert_eq!(documented.len(), 5);
    assert!(workflow.contains("cargo build --release --locked -p knowledge --target ${{ matrix.target }}"));
    assert!(workflow.contains(".ci/package ${{ matrix.target }} target/${{ matrix.target }}/release/knowledge dist"));

    let out = tempfile::tempdir().unwrap();
    let packed = std::process::Command::new("bash")
        .arg(root.join(".ci/package"))
        .args(["x86_64-unknown-linux-gnu", env!("CARGO_BIN_EXE_knowledge")])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(packed.status.success(), "{}", String::from_utf8_lossy(&packed.stderr));
    let version = env!("CARGO_PKG_VERSION");
    let archive = format!("knowledge-{version}-x86_64-unknown-linux-gnu.tar.gz");
    let listing = std::process::Command::new("tar").arg("-tzf").arg(out.path().join(&archive)).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    for file in ["knowledge", "README.md", "knowledge.1", "completions/knowledge.bash", "completions/knowledge.zsh"] {
        let path = format!("knowledge-{version}-x86_64-unknown-linux-gnu/{file}");
        assert!(listing.lines().any(|line| line == path), "{path} is not in the archive:\n{listing}");
    }
    let checked = std::process::Command::new("sha256sum")
        .args(["-c", &format!("{archive}.sha256")])
        .current_dir(out.path())
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stdout));
}
