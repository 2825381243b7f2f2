//! The Rust half of the syntax walk: items, `impl` blocks, items made by macros, and what a test's body
//! imports.

use super::*;

impl Walker<'_> {
    /// What a Rust test's body imports itself: its own `use` declarations, and the standard library's types
    /// it names by path (`std::sync::Mutex::new(..)` names `std::sync::Mutex`), so that those names are
    /// known not to be this repository's; and the functions it calls through a module's path
    /// (`task::spawn`), whose module may be another crate's.
    pub(super) fn rust_body_imports(&self, body: Node<'_>) -> (Vec<String>, Vec<String>) {
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

    pub(super) fn rust(&mut self, node: Node<'_>, before: &[Node<'_>], container: &[String], members_public: bool) {
        if node.kind() == "macro_invocation" {
            self.rust_macro_items(node, container, members_public);
            return;
        }
        if node.kind() == "use_declaration" {
            if let Some(argument) = node.child_by_field_name("argument") {
                let import = self.text_of(argument);
                // `use tokio::test as maybe_tokio_test;` makes `#[maybe_tokio_test]` a test attribute.
                for item in crate::code::use_items(import) {
                    if item.name.ends_with("test") && item.visible != item.name {
                        self.test_aliases.insert(item.visible.to_string());
                    }
                }
                self.imports.insert(import.to_string());
            }
            return;
        }
        let visibility = self.visibility_of(node, members_public);
        let is_test = self.marked_as_test(before);
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

    /// An item's visibility: its own (`pub`, `pub(…)`, or none: public inside a trait or an enum's members),
    /// no wider than the modules around it (`pub` inside a private `mod tests` is not the crate's API).
    fn visibility_of(&self, node: Node<'_>, members_public: bool) -> &'static str {
        let mut cursor = node.walk();
        let modifier = node.named_children(&mut cursor).find(|c| c.kind() == "visibility_modifier");
        let own = match modifier.map(|m| self.text_of(m)) {
            Some("pub") => "public",
            Some(_) => "crate",
            None if members_public => "public",
            None => "private",
        };
        narrower(own, self.scope)
    }

    /// Whether the attributes right before an item mark it a test: `#[test]`, `#[tokio::test]`, `#[rstest]`,
    /// `#[test_case(..)]`, or an alias a `use` made of one.
    fn marked_as_test(&self, before: &[Node<'_>]) -> bool {
        before.iter().rev().take_while(|n| n.kind() == "attribute_item").any(|attribute| {
            let inner = self.text_of(*attribute).trim_start_matches("#[").trim_end_matches(']');
            let path = inner.split('(').next().unwrap_or("").trim();
            let last = path.rsplit("::").next().unwrap_or(path);
            matches!(last, "test" | "rstest") || last.starts_with("test_case") || self.test_aliases.contains(last)
        })
    }

    /// The items of an item-level macro block (tokio's `cfg_rt! { pub fn spawn… }`, `feature! { … }`),
    /// which the grammar sees only as tokens: the braces' contents parsed again as Rust items, as a range
    /// of the same text, so that their offsets stay the file's.
    pub(super) fn rust_macro_items(&mut self, node: Node<'_>, container: &[String], members_public: bool) {
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
}
