//! Reports of counts.

use crate::Counter;

/// The most frequent of the given words.
pub fn top(counter: &Counter, words: &[&str]) -> Option<String> {
    words.iter().max_by_key(|w| counter.count(w)).map(|w| w.to_string())
}

pub(crate) fn render(word: &str, count: usize) -> String {
    format!("{word}: {count}")
}
