//! Rust `use` trees read as the names they import, each with its path: what test-attribute aliases and
//! (in the compiler) a test's imports are judged by.

/// One name a `use` tree imports: the path above it, its own name, and the name it is visible by
/// (`MutexGuard as Guard`: `MutexGuard` and `Guard`; `Trait as _` keeps the trait's name, since its
/// methods still come into scope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseItem<'a> {
    pub path: Vec<&'a str>,
    pub name: &'a str,
    pub visible: &'a str,
}

/// The items of a `use` tree: `crate::loom::sync::{Mutex, MutexGuard as Guard}` gives `Mutex` and
/// `Guard` (as `MutexGuard`), both under `crate::loom::sync`. Globs and `self` import no name.
pub fn use_items(import: &str) -> Vec<UseItem<'_>> {
    let mut items = Vec::new();
    let mut path: Vec<&str> = Vec::new();
    // The path length at each open `{`, and the visible name of the item waiting for its `,`, `}` or end
    // (the item's own name is the last segment of `path`).
    let mut groups: Vec<usize> = Vec::new();
    let mut pending: Option<&str> = None;
    let mut alias_next = false;
    let mut rest = import.trim_start_matches("::");
    while let Some(c) = rest.chars().next() {
        if c.is_alphanumeric() || c == '_' {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let word = &rest[..end];
            rest = &rest[end..];
            if word == "as" {
                alias_next = true;
            } else if alias_next {
                alias_next = false;
                if word != "_" {
                    pending = pending.map(|_| word);
                }
            } else {
                path.push(word);
                pending = Some(word);
            }
            continue;
        }
        rest = &rest[c.len_utf8()..];
        match c {
            '{' => {
                groups.push(path.len());
                pending = None;
            }
            ',' | '}' => {
                finish(&path, pending.take(), &mut items);
                if c == '}' {
                    groups.pop();
                }
                path.truncate(groups.last().copied().unwrap_or(0));
            }
            '*' => pending = None,
            _ => {}
        }
    }
    finish(&path, pending, &mut items);
    items
}

/// The item waiting at the end of `path`, visible as `pending`, unless it is the path's own `self`.
fn finish<'a>(path: &[&'a str], pending: Option<&'a str>, items: &mut Vec<UseItem<'a>>) {
    if let (Some(visible), Some((&name, above))) = (pending, path.split_last())
        && name != "self"
    {
        items.push(UseItem { path: above.to_vec(), name, visible });
    }
}

#[cfg(test)]
mod tests {
    use super::use_items;

    #[test]
    fn a_use_tree_gives_each_name_with_its_path() {
        let items = |import| {
            use_items(import)
                .into_iter()
                .map(|item| format!("{}|{}|{}", item.path.join("::"), item.name, item.visible))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            items("crate::loom::sync::{Mutex, MutexGuard as Guard}"),
            ["crate::loom::sync|Mutex|Mutex", "crate::loom::sync|MutexGuard|Guard"]
        );
        assert_eq!(items("std::{io::{self, Read}, sync::Arc}"), ["std::io|Read|Read", "std::sync|Arc|Arc"]);
        assert_eq!(items("tokio::test as maybe_tokio_test"), ["tokio|test|maybe_tokio_test"]);
        assert_eq!(items("tokio::{test as maybe_tokio_test}"), ["tokio|test|maybe_tokio_test"]);
        assert_eq!(items("salsa::Database as _"), ["salsa|Database|Database"]);
        assert_eq!(items("super::*"), Vec::<String>::new());
        assert_eq!(items("::salsa"), ["|salsa|salsa"]);
    }
}
