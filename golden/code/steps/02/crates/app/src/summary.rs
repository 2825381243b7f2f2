//! Reports of counts.

use crate::Counter;

/// The most frequent of the given words, ties to the first.
pub fn top(counter: &Counter, words: &[&str]) -> Option<String> {
    let best = words.iter().max_by_key(|w| counter.count(w))?;
    Some(best.to_string())
}

pub(crate) fn render(word: &str, count: usize) -> String {
    format!("{word}: {count}")
}
