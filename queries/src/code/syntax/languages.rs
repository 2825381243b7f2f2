//! The syntax walk for Python, Go and TypeScript/JavaScript: their declarations and their tests.

use super::*;

impl Walker<'_> {
    pub(super) fn python(&mut self, node: Node<'_>, anchor: Node<'_>, container: &[String]) {
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

    pub(super) fn go(&mut self, node: Node<'_>) {
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

    pub(super) fn script(&mut self, node: Node<'_>, anchor: Node<'_>, container: &[String], exported: bool) {
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
    pub(super) fn script_tests(&mut self, root: Node<'_>) {
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
