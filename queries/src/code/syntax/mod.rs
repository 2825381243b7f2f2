//! Symbols and tests from a code file's syntax tree (tree-sitter): modules, functions, methods, types,
//! traits, classes and interfaces with their visibility, and test functions with the names their bodies
//! use. Only declarations are read: a function's body is never searched for nested definitions.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use super::{Entity, EntityType, Payload, SymbolPayload, TestPayload, offset32};

mod languages;
mod rust;

/// A language whose syntax tree is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
}

impl Language {
    /// The language of a path, by extension.
    #[must_use]
    pub fn from_path(path: &str) -> Option<Language> {
        let extension = path.rsplit_once('.')?.1;
        Some(match extension {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "go" => Language::Go,
            _ => return None,
        })
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::TypeScript | Language::Tsx => "typescript",
            Language::JavaScript => "javascript",
            Language::Go => "go",
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    /// What joins a container and a member in a qualified name.
    fn separator(self) -> &'static str {
        match self {
            Language::Rust => "::",
            _ => ".",
        }
    }
}

/// The module path a file's path implies, as the language spells it.
fn module_of(language: Language, path: &str) -> String {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    match language {
        Language::Rust => {
            let inside = stem.rsplit_once("src/").map_or(stem, |(_, rest)| rest);
            let inside = ["/mod", "/lib", "/main"].iter().fold(inside, |s, tail| s.strip_suffix(tail).unwrap_or(s));
            match inside {
                "lib" | "main" | "mod" | "" => "crate".to_string(),
                inside => inside.replace('/', "::"),
            }
        }
        Language::Python => {
            let inside = stem.strip_prefix("src/").unwrap_or(stem);
            let inside = inside.strip_suffix("/__init__").unwrap_or(inside);
            inside.replace('/', ".")
        }
        Language::Go => super::folder(path).to_string(),
        Language::TypeScript | Language::Tsx | Language::JavaScript => stem.to_string(),
    }
}

/// Whether a file holds tests by its name alone (Python's `test_*.py`, Go's `_test.go`, `*.test.ts`).
fn is_test_file(language: Language, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_tests_folder = path.split('/').any(|part| matches!(part, "tests" | "test" | "__tests__"));
    match language {
        Language::Rust => in_tests_folder,
        Language::Python => name.starts_with("test_") || name.ends_with("_test.py") || in_tests_folder,
        Language::Go => name.ends_with("_test.go"),
        Language::TypeScript | Language::Tsx | Language::JavaScript => {
            name.contains(".test.") || name.contains(".spec.") || path.contains("__tests__/")
        }
    }
}

pub(super) fn entities(language: Language, path: &str, text: &str) -> Vec<Entity> {
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&language.grammar()).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else { return Vec::new() };
    let mut walker = Walker {
        language,
        path,
        text,
        lines: crate::LineIndex::new(text),
        module: module_of(language, path),
        test_file: is_test_file(language, path),
        entities: Vec::new(),
        imports: BTreeSet::new(),
        seen: HashMap::new(),
        scope: "public",
        test_aliases: BTreeSet::new(),
        in_impl_macro: false,
    };
    walker.declarations(tree.root_node(), &[], false);
    if walker.test_file && matches!(language, Language::TypeScript | Language::Tsx | Language::JavaScript) {
        walker.script_tests(tree.root_node());
    }
    // A file's imports are every test's in it, wherever they appear, with what its own body imports.
    for entity in &mut walker.entities {
        if let Payload::Test(test) = &mut entity.payload {
            let own = std::mem::take(&mut test.imports);
            test.imports = walker.imports.iter().cloned().chain(own).collect::<BTreeSet<_>>().into_iter().collect();
        }
    }
    walker.entities
}

struct Walker<'a> {
    language: Language,
    path: &'a str,
    text: &'a str,
    /// Line numbers of offsets in `text`: computed once, since every entity asks for two or more.
    lines: crate::LineIndex,
    module: String,
    test_file: bool,
    entities: Vec<Entity>,
    imports: BTreeSet<String>,
    /// Qualified names seen so far: a repeated one (two `impl` blocks with an `fmt`) gets `~2`.
    seen: HashMap<String, u32>,
    /// The visibility of the Rust module (or trait) being walked: what its items can be at most.
    scope: &'static str,
    /// Names a Rust file gives a test attribute (`use tokio::test as maybe_tokio_test;`).
    test_aliases: BTreeSet<String>,
    /// Whether the Rust macro block being walked sits in an `impl` or trait body.
    in_impl_macro: bool,
}

/// The narrower of two visibilities (`private` < `crate` < `public`).
fn narrower(a: &'static str, b: &'static str) -> &'static str {
    let rank = |v: &str| match v {
        "public" => 2,
        "crate" => 1,
        _ => 0,
    };
    if rank(a) <= rank(b) { a } else { b }
}

/// The most identifiers a test records: enough for any one test, bounded for generated ones.
const MAX_REFERENCES: usize = 400;

impl<'a> Walker<'a> {
    fn line_of(&self, offset: usize) -> u32 {
        self.lines.line_of(offset32(offset))
    }

    fn text_of(&self, node: Node<'_>) -> &'a str {
        node.utf8_text(self.text.as_bytes()).unwrap_or("")
    }

    fn name_of(&self, node: Node<'_>) -> Option<&'a str> {
        node.child_by_field_name("name").map(|n| self.text_of(n)).filter(|n| !n.is_empty())
    }

    fn qualified(&mut self, container: &[String], name: &str) -> String {
        let mut parts: Vec<&str> = container.iter().map(String::as_str).collect();
        parts.push(name);
        let qualified = parts.join(self.language.separator());
        let count = self.seen.entry(qualified.clone()).or_insert(0);
        *count += 1;
        if *count == 1 { qualified } else { format!("{qualified}~{count}") }
    }

    fn signature(&self, node: Node<'_>) -> String {
        let line = self.text_of(node).lines().next().unwrap_or("").trim();
        let mut end = line.len().min(200);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line[..end].trim_end_matches('{').trim_end().to_string()
    }

    /// Where a declaration's text starts: at the comments and attributes directly above its node (no blank
    /// line between), so that its anchor, its hash and its search excerpt hold its documentation. A file's
    /// own documentation (`//!`, `/*!`) is nobody's item's.
    fn documented_start(&self, node: Node<'_>) -> usize {
        let mut start = node.start_byte();
        let mut previous = node.prev_sibling();
        while let Some(above) = previous {
            let text = self.text_of(above);
            let describes = matches!(above.kind(), "line_comment" | "block_comment" | "comment" | "attribute_item")
                && !text.starts_with("//!")
                && !text.starts_with("/*!");
            let adjacent = self.text[above.end_byte()..start].trim().is_empty()
                && self.line_of(above.end_byte().saturating_sub(1)) + 1 >= self.line_of(start);
            if !describes || !adjacent {
                break;
            }
            start = above.start_byte();
            previous = above.prev_sibling();
        }
        start
    }

    fn anchored(&self, node: Node<'_>, slug: String, entity_type: EntityType, name: &str, payload: Payload) -> Entity {
        let start = self.documented_start(node);
        Entity {
            slug,
            entity_type,
            name: name.to_string(),
            start_line: self.line_of(start),
            end_line: self.line_of(node.end_byte().saturating_sub(1).max(start)),
            start_offset: offset32(start),
            end_offset: offset32(node.end_byte()),
            hash: String::new(),
            payload,
        }
    }

    fn symbol(&mut self, node: Node<'_>, container: &[String], name: &str, kind: &str, visibility: &str) {
        let qualified = self.qualified(container, name);
        let payload = Payload::Symbol(SymbolPayload {
            language: self.language.name().to_string(),
            symbol_kind: kind.to_string(),
            visibility: visibility.to_string(),
            module: self.module.clone(),
            container: (!container.is_empty()).then(|| container.join(self.language.separator())),
            signature: self.signature(node),
        });
        let entity =
            self.anchored(node, format!("symbol/{}#{qualified}", self.path), EntityType::Symbol, name, payload);
        self.entities.push(entity);
    }

    fn test(&mut self, node: Node<'_>, body: Option<Node<'_>>, container: &[String], name: &str) {
        let qualified = self.qualified(container, name);
        let (references, members) = body.map(|body| self.references(body)).unwrap_or_default();
        let (imports, paths) = match (self.language, body) {
            (Language::Rust, Some(body)) => self.rust_body_imports(body),
            _ => (Vec::new(), Vec::new()),
        };
        let payload = Payload::Test(TestPayload {
            language: self.language.name().to_string(),
            module: self.module.clone(),
            references,
            members,
            imports,
            paths,
        });
        let entity = self.anchored(node, format!("test/{}#{qualified}", self.path), EntityType::Test, name, payload);
        self.entities.push(entity);
    }

    /// The identifiers used under `node`, and those of them used as members (`m.lock()`, `Mutex::lock`,
    /// `book.close()`, `store.Get`), each sorted and deduplicated.
    fn references(&self, node: Node<'_>) -> (Vec<String>, Vec<String>) {
        let mut names = BTreeSet::new();
        let mut members = BTreeSet::new();
        // Each node is looked at from its parent, with the field it fills and the token before it: asking a
        // node for its parent or previous sibling walks the tree again from its root.
        let mut stack = vec![node];
        while let Some(parent) = stack.pop() {
            let mut cursor = parent.walk();
            if !cursor.goto_first_child() {
                continue;
            }
            let mut previous = "";
            loop {
                let child = cursor.node();
                if child.is_named() {
                    let kind = child.kind();
                    if matches!(
                        kind,
                        "identifier"
                            | "field_identifier"
                            | "type_identifier"
                            | "property_identifier"
                            | "shorthand_property_identifier"
                            | "package_identifier"
                    ) {
                        let name = self.text_of(child);
                        if name.len() > 1 && names.len() < MAX_REFERENCES {
                            names.insert(name.to_string());
                            if is_member(kind, parent.kind(), cursor.field_name(), previous) {
                                members.insert(name.to_string());
                            }
                        }
                    } else {
                        stack.push(child);
                    }
                }
                previous = child.kind();
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        (names.into_iter().collect(), members.into_iter().collect())
    }

    /// Walks the declarations directly under `node` (a file, a module body, a class body).
    fn declarations(&mut self, node: Node<'_>, container: &[String], members_public: bool) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for (index, child) in children.iter().enumerate() {
            match self.language {
                Language::Rust => self.rust(*child, &children[..index], container, members_public),
                Language::Python => self.python(*child, *child, container),
                Language::Go => self.go(*child),
                Language::TypeScript | Language::Tsx | Language::JavaScript => {
                    self.script(*child, *child, container, members_public);
                }
            }
        }
    }
}

/// Whether an identifier (of `kind`, filling `field` of a `parent`, after a `previous` token) names a
/// member: a field or method after `.` (Rust, Go, JavaScript, Python), or the last segment of a Rust path
/// (`Mutex::lock`), in code or inside a macro's arguments (`format!("{:?}", m.lock())`, where the grammar
/// sees only tokens).
fn is_member(kind: &str, parent: &str, field: Option<&str>, previous: &str) -> bool {
    match (kind, parent) {
        ("field_identifier" | "property_identifier", _) => true,
        ("identifier", "scoped_identifier") => field == Some("name"),
        ("identifier", "attribute") => field == Some("attribute"),
        ("identifier", "token_tree") => matches!(previous, "." | "::"),
        _ => false,
    }
}

/// Whether a Rust item's nearest enclosing item is a `mod` (its functions are not methods).
fn container_is_module(node: Node<'_>) -> bool {
    node.parent().and_then(|body| body.parent()).is_some_and(|item| item.kind() == "mod_item")
}
