//! Symbols and tests from a code file's syntax tree (tree-sitter): modules, functions, methods, types,
//! traits, classes and interfaces with their visibility, and test functions with the names their bodies
//! use. Only declarations are read: a function's body is never searched for nested definitions.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use super::{Entity, EntityType, Payload, SymbolPayload, TestPayload, offset32};

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

    /// What a Rust test's body imports itself: its own `use` declarations, and the standard library's types
    /// it names by path (`std::sync::Mutex::new(..)` names `std::sync::Mutex`), so that those names are
    /// known not to be this repository's; and the functions it calls through a module's path
    /// (`task::spawn`), whose module may be another crate's.
    fn rust_body_imports(&self, body: Node<'_>) -> (Vec<String>, Vec<String>) {
        let mut imports = BTreeSet::new();
        let mut paths = BTreeSet::new();
        let mut cursor = body.walk();
        // Each node with whether it is the path above another path's name (`std::thread` in
        // `std::thread::spawn`), which calls nothing itself.
        let mut stack = vec![(body, false)];
        while let Some((node, inner_path)) = stack.pop() {
            match node.kind() {
                "use_declaration" => {
                    if let Some(argument) = node.child_by_field_name("argument") {
                        imports.insert(self.text_of(argument).to_string());
                    }
                    continue;
                }
                "scoped_identifier" | "scoped_type_identifier" => {
                    let path = self.text_of(node);
                    let last = path.rsplit("::").next().unwrap_or("");
                    let standard = ["std::", "core::", "alloc::"].iter().any(|root| path.starts_with(root));
                    if standard && last.starts_with(|c: char| c.is_uppercase()) {
                        imports.insert(path.to_string());
                    }
                    // `module::function`: a lowercase segment before a lowercase leaf, from a root that is no
                    // relative path (`super::helper` is this crate's).
                    let segments: Vec<&str> = path.split("::").collect();
                    let lowercase = |s: &str| s.starts_with(|c: char| c.is_lowercase() || c == '_');
                    if node.kind() == "scoped_identifier"
                        && !inner_path
                        && segments.len() >= 2
                        && segments.iter().all(|s| s.chars().all(|c| c.is_alphanumeric() || c == '_'))
                        && !matches!(segments[0], "crate" | "self" | "super" | "Self")
                        && lowercase(segments[segments.len() - 2])
                        && lowercase(last)
                    {
                        paths.insert(path.to_string());
                    }
                }
                _ => {}
            }
            let path_child = (node.kind() == "scoped_identifier").then(|| node.child_by_field_name("path")).flatten();
            stack.extend(node.named_children(&mut cursor).map(|child| (child, Some(child) == path_child)));
        }
        (imports.into_iter().collect(), paths.into_iter().collect())
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

    fn rust(&mut self, node: Node<'_>, before: &[Node<'_>], container: &[String], members_public: bool) {
        if node.kind() == "macro_invocation" {
            self.rust_macro_items(node, container, members_public);
            return;
        }
        if node.kind() == "use_declaration" {
            if let Some(argument) = node.child_by_field_name("argument") {
                let import = self.text_of(argument);
                // `use tokio::test as maybe_tokio_test;` makes `#[maybe_tokio_test]` a test attribute.
                for item in super::use_items(import) {
                    if item.name.ends_with("test") && item.visible != item.name {
                        self.test_aliases.insert(item.visible.to_string());
                    }
                }
                self.imports.insert(import.to_string());
            }
            return;
        }
        let visibility = {
            let mut cursor = node.walk();
            let modifier = node.named_children(&mut cursor).find(|c| c.kind() == "visibility_modifier");
            let own = match modifier.map(|m| self.text_of(m)) {
                Some("pub") => "public",
                Some(_) => "crate",
                None if members_public => "public",
                None => "private",
            };
            // An item is no more visible than the modules around it: `pub` inside a private `mod tests` is not
            // the crate's API.
            narrower(own, self.scope)
        };
        // The attributes right before an item: `#[test]`, `#[tokio::test]`, `#[rstest]`, `#[test_case(..)]`.
        let is_test = before.iter().rev().take_while(|n| n.kind() == "attribute_item").any(|attribute| {
            let inner = self.text_of(*attribute).trim_start_matches("#[").trim_end_matches(']');
            let path = inner.split('(').next().unwrap_or("").trim();
            let last = path.rsplit("::").next().unwrap_or(path);
            matches!(last, "test" | "rstest") || last.starts_with("test_case") || self.test_aliases.contains(last)
        });
        let kind = match node.kind() {
            "function_item" | "function_signature_item" => {
                // Inside a macro block the item's parent is the block's own tree; the block's place says.
                let in_body =
                    |p: Node<'_>| p.kind() == "declaration_list" || (p.parent().is_none() && self.in_impl_macro);
                if container.is_empty() || node.parent().is_some_and(|p| !in_body(p)) { "function" } else { "method" }
            }
            "struct_item" => "struct",
            "enum_item" => "enum",
            "union_item" => "union",
            "trait_item" => "trait",
            "type_item" => "type",
            "const_item" | "static_item" => "const",
            "macro_definition" => "macro",
            "mod_item" => "module",
            "impl_item" => {
                let Some(type_node) = node.child_by_field_name("type") else { return };
                let type_name = self.text_of(type_node).split('<').next().unwrap_or("").trim().to_string();
                let trait_impl = node.child_by_field_name("trait").is_some();
                if let Some(body) = node.child_by_field_name("body") {
                    let mut inner = container.to_vec();
                    inner.push(type_name);
                    self.declarations(body, &inner, trait_impl);
                }
                return;
            }
            _ => return,
        };
        let Some(name) = self.name_of(node) else { return };
        // Functions inside a module are functions of that module, not methods of a type.
        let kind = if kind == "method" && container_is_module(node) { "function" } else { kind };
        if kind == "function" && is_test {
            let body = node.child_by_field_name("body");
            self.test(node, body, container, name);
            return;
        }
        self.symbol(node, container, name, kind, visibility);
        if matches!(kind, "module" | "trait")
            && let Some(body) = node.child_by_field_name("body")
        {
            let mut inner = container.to_vec();
            inner.push(name.to_string());
            let outer = std::mem::replace(&mut self.scope, visibility);
            self.declarations(body, &inner, kind == "trait");
            self.scope = outer;
        }
    }

    /// The items of an item-level macro block (tokio's `cfg_rt! { pub fn spawn… }`, `feature! { … }`),
    /// which the grammar sees only as tokens: the braces' contents parsed again as Rust items, as a range
    /// of the same text, so that their offsets stay the file's.
    fn rust_macro_items(&mut self, node: Node<'_>, container: &[String], members_public: bool) {
        let mut cursor = node.walk();
        let Some(body) = node.named_children(&mut cursor).find(|c| c.kind() == "token_tree") else { return };
        if !self.text_of(body).starts_with('{') || !self.text_of(body).ends_with('}') || body.byte_range().len() < 2 {
            return;
        }
        let (start, end) = (body.start_position(), body.end_position());
        let inside = tree_sitter::Range {
            start_byte: body.start_byte() + 1,
            end_byte: body.end_byte() - 1,
            start_point: tree_sitter::Point { row: start.row, column: start.column + 1 },
            end_point: tree_sitter::Point { row: end.row, column: end.column.saturating_sub(1) },
        };
        let mut parser = tree_sitter::Parser::new();
        if parser.set_language(&self.language.grammar()).is_err() || parser.set_included_ranges(&[inside]).is_err() {
            return;
        }
        if let Some(tree) = parser.parse(self.text, None) {
            // A block in an `impl` or trait body holds methods.
            let in_impl = node.parent().is_some_and(|p| {
                (p.kind() == "declaration_list" && !container_is_module(node))
                    || (p.parent().is_none() && self.in_impl_macro)
            });
            let outer = std::mem::replace(&mut self.in_impl_macro, in_impl);
            self.declarations(tree.root_node(), container, members_public);
            self.in_impl_macro = outer;
        }
    }

    fn python(&mut self, node: Node<'_>, anchor: Node<'_>, container: &[String]) {
        match node.kind() {
            "decorated_definition" => {
                if let Some(definition) = node.child_by_field_name("definition") {
                    self.python(definition, node, container);
                }
            }
            "import_statement" => {
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    let name =
                        if name.kind() == "aliased_import" { name.child_by_field_name("name") } else { Some(name) };
                    if let Some(name) = name {
                        self.imports.insert(self.text_of(name).to_string());
                    }
                }
            }
            "import_from_statement" => {
                if let Some(module) = node.child_by_field_name("module_name") {
                    self.imports.insert(self.text_of(module).to_string());
                }
            }
            "function_definition" => {
                let Some(name) = self.name_of(node) else { return };
                let in_test_class = container.last().is_some_and(|c| c.starts_with("Test"));
                if name.starts_with("test") && (self.test_file || in_test_class) {
                    self.test(anchor, node.child_by_field_name("body"), container, name);
                    return;
                }
                let kind = if container.is_empty() { "function" } else { "method" };
                let visibility = if name.starts_with('_') && !name.starts_with("__") { "private" } else { "public" };
                self.symbol(anchor, container, name, kind, visibility);
            }
            "class_definition" => {
                let Some(name) = self.name_of(node) else { return };
                let visibility = if name.starts_with('_') { "private" } else { "public" };
                self.symbol(anchor, container, name, "class", visibility);
                if let Some(body) = node.child_by_field_name("body") {
                    let mut inner = container.to_vec();
                    inner.push(name.to_string());
                    let mut cursor = body.walk();
                    let members: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
                    for member in members {
                        self.python(member, member, &inner);
                    }
                }
            }
            _ => {}
        }
    }

    fn go(&mut self, node: Node<'_>) {
        let visibility = |name: &str| if name.starts_with(|c: char| c.is_uppercase()) { "public" } else { "crate" };
        match node.kind() {
            "import_declaration" => {
                let mut stack = vec![node];
                let mut cursor = node.walk();
                while let Some(n) = stack.pop() {
                    if n.kind() == "import_spec"
                        && let Some(path) = n.child_by_field_name("path")
                    {
                        self.imports.insert(self.text_of(path).trim_matches('"').to_string());
                    }
                    stack.extend(n.named_children(&mut cursor));
                }
            }
            "function_declaration" => {
                let Some(name) = self.name_of(node) else { return };
                if self.test_file && (name.starts_with("Test") || name.starts_with("Fuzz")) {
                    self.test(node, node.child_by_field_name("body"), &[], name);
                    return;
                }
                self.symbol(node, &[], name, "function", visibility(name));
            }
            "method_declaration" => {
                let Some(name) = self.name_of(node) else { return };
                let receiver = node
                    .child_by_field_name("receiver")
                    .and_then(|r| {
                        let mut stack = vec![r];
                        let mut cursor = r.walk();
                        while let Some(n) = stack.pop() {
                            if n.kind() == "type_identifier" {
                                return Some(self.text_of(n).to_string());
                            }
                            stack.extend(n.named_children(&mut cursor));
                        }
                        None
                    })
                    .unwrap_or_default();
                self.symbol(node, &[receiver], name, "method", visibility(name));
            }
            "type_declaration" => {
                let mut cursor = node.walk();
                let specs: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for spec in specs.into_iter().filter(|s| matches!(s.kind(), "type_spec" | "type_alias")) {
                    let Some(name) = self.name_of(spec) else { continue };
                    let kind = match spec.child_by_field_name("type").map(|t| t.kind()) {
                        Some("struct_type") => "struct",
                        Some("interface_type") => "interface",
                        _ => "type",
                    };
                    self.symbol(spec, &[], name, kind, visibility(name));
                }
            }
            _ => {}
        }
    }

    fn script(&mut self, node: Node<'_>, anchor: Node<'_>, container: &[String], exported: bool) {
        let visibility = if exported { "public" } else { "private" };
        match node.kind() {
            "export_statement" => {
                if let Some(declaration) = node.child_by_field_name("declaration") {
                    self.script(declaration, node, container, true);
                }
            }
            "import_statement" => {
                if let Some(source) = node.child_by_field_name("source") {
                    let source = self.text_of(source).trim_matches(|c| c == '"' || c == '\'' || c == '`');
                    self.imports.insert(source.to_string());
                }
            }
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                if let Some(name) = self.name_of(node) {
                    self.symbol(anchor, container, name, "function", visibility);
                }
            }
            "class_declaration" | "abstract_class_declaration" => {
                let Some(name) = self.name_of(node) else { return };
                self.symbol(anchor, container, name, "class", visibility);
                if let Some(body) = node.child_by_field_name("body") {
                    let mut inner = container.to_vec();
                    inner.push(name.to_string());
                    let mut cursor = body.walk();
                    let members: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
                    for member in members.into_iter().filter(|m| m.kind() == "method_definition") {
                        let Some(method) = self.name_of(member) else { continue };
                        let private = method.starts_with('#')
                            || member
                                .named_child(0)
                                .is_some_and(|m| m.kind() == "accessibility_modifier" && self.text_of(m) != "public");
                        let visibility = if private { "private" } else { visibility };
                        self.symbol(member, &inner, method, "method", visibility);
                    }
                }
            }
            "interface_declaration" => {
                if let Some(name) = self.name_of(node) {
                    self.symbol(anchor, container, name, "interface", visibility);
                }
            }
            "type_alias_declaration" => {
                if let Some(name) = self.name_of(node) {
                    self.symbol(anchor, container, name, "type", visibility);
                }
            }
            "enum_declaration" => {
                if let Some(name) = self.name_of(node) {
                    self.symbol(anchor, container, name, "enum", visibility);
                }
            }
            "lexical_declaration" | "variable_declaration" => {
                // `const handler = () => …` and `const f = function () …` are functions by another spelling.
                let mut cursor = node.walk();
                let declarators: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                for declarator in declarators.into_iter().filter(|d| d.kind() == "variable_declarator") {
                    let is_function = declarator
                        .child_by_field_name("value")
                        .is_some_and(|v| matches!(v.kind(), "arrow_function" | "function_expression" | "function"));
                    if is_function && let Some(name) = self.name_of(declarator) {
                        self.symbol(anchor, container, name, "function", visibility);
                    }
                }
            }
            _ => {}
        }
    }

    /// `describe(...)`, `test(...)` and `it(...)` calls anywhere in a script test file: each `test`/`it`
    /// with a string name is a test, named within its enclosing `describe`s.
    fn script_tests(&mut self, root: Node<'_>) {
        let mut stack: Vec<(Node<'_>, Vec<String>)> = vec![(root, Vec::new())];
        let mut cursor = root.walk();
        while let Some((node, describes)) = stack.pop() {
            let mut inner = describes.clone();
            if node.kind() == "call_expression"
                && let Some(function) = node.child_by_field_name("function")
            {
                let callee = self.text_of(function);
                let callee = callee.split('.').next().unwrap_or(callee);
                let arguments = node.child_by_field_name("arguments");
                let title = arguments
                    .and_then(|a| a.named_child(0))
                    .filter(|t| matches!(t.kind(), "string" | "template_string"));
                if let Some(title) = title {
                    let title = self.text_of(title).trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string();
                    match callee {
                        "describe" => inner.push(title),
                        "test" | "it" => {
                            self.test(node, arguments, &describes, &title);
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            // Pushed in reverse so that tests come out in file order.
            for child in children.into_iter().rev() {
                stack.push((child, inner.clone()));
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
