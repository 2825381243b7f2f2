//! A tolerant reader for the YAML front matter subset that documentation uses.
//!
//! It reads top-level `key: value` pairs, quoted scalars, flow lists (`[a, b]`) and block lists (`- a`).
//! Nested maps and other YAML features are kept as raw text, so a value is never silently lost.
//! A line it cannot read becomes a [`ParseProblem`](crate::ParseProblem), never an error.

use std::collections::BTreeMap;

/// The front matter of a document, by key, in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct FrontMatter {
    pub fields: BTreeMap<String, FrontMatterValue>,
}

/// One front matter value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum FrontMatterValue {
    Scalar(String),
    List(Vec<String>),
}

impl FrontMatter {
    /// The value of `key` when it is a scalar.
    #[must_use]
    pub fn scalar(&self, key: &str) -> Option<&str> {
        match self.fields.get(key)? {
            FrontMatterValue::Scalar(value) => Some(value),
            FrontMatterValue::List(_) => None,
        }
    }
}

/// Reads the lines between the `---` fences. Returns the fields and, for each unreadable line, its
/// 0-based index among `body`'s lines with a message.
pub(crate) fn read(body: &str) -> (FrontMatter, Vec<(usize, String)>) {
    let mut front_matter = FrontMatter::default();
    let mut problems = Vec::new();
    // The key whose value the following indented lines continue: a block list, a block scalar (`>` or `|`),
    // a multi-line plain scalar or a nested map.
    let mut open_key: Option<String> = None;
    for (index, raw) in body.lines().enumerate() {
        let line = raw.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with([' ', '\t']) || line.starts_with("- ") || line == "-";
        if indented {
            match &open_key {
                Some(key) => append_continuation(&mut front_matter, key, line.trim()),
                None => problems.push((index, format!("indented line without a key: `{}`", line.trim()))),
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            problems.push((index, format!("expected `key: value`, found `{line}`")));
            open_key = None;
            continue;
        };
        let key = key.trim().to_string();
        let value = value.trim();
        let parsed = if value.is_empty() { FrontMatterValue::Scalar(String::new()) } else { parse_value(value) };
        front_matter.fields.insert(key.clone(), parsed);
        open_key = Some(key);
    }
    (front_matter, problems)
}

fn append_continuation(front_matter: &mut FrontMatter, key: &str, line: &str) {
    let entry = front_matter.fields.entry(key.to_string()).or_insert_with(|| FrontMatterValue::Scalar(String::new()));
    if let Some(item) = line.strip_prefix("- ").or_else(|| (line == "-").then_some("")) {
        let item = unquote(item.trim()).to_string();
        match entry {
            FrontMatterValue::List(items) => return items.push(item),
            FrontMatterValue::Scalar(text) if text.is_empty() => return *entry = FrontMatterValue::List(vec![item]),
            FrontMatterValue::Scalar(_) => {}
        }
    }
    match entry {
        // A nested map under a list: keep the raw line, so nothing is lost.
        FrontMatterValue::List(items) => items.push(line.to_string()),
        FrontMatterValue::Scalar(text) => {
            // A block scalar indicator (`>`, `|`, `>-`, `|+`) gives way to the text it introduces.
            if text.starts_with(['>', '|']) && text.len() <= 2 {
                text.clear();
            }
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(line);
        }
    }
}

fn parse_value(value: &str) -> FrontMatterValue {
    if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        let items =
            inner.split(',').map(|item| unquote(item.trim()).to_string()).filter(|item| !item.is_empty()).collect();
        return FrontMatterValue::List(items);
    }
    FrontMatterValue::Scalar(unquote(value).to_string())
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}
