//! Counts words with the fast hasher.

use rustc_hash::FxHashMap;

pub mod summary;

/// Word counts of a text.
pub struct Counter {
    counts: FxHashMap<String, usize>,
}

impl Counter {
    pub fn new() -> Self {
        Counter { counts: FxHashMap::default() }
    }

    pub fn add(&mut self, text: &str) {
        for word in text.split_whitespace() {
            *self.counts.entry(word.to_lowercase()).or_insert(0) += 1;
        }
    }

    pub fn count(&self, word: &str) -> usize {
        self.counts.get(word).copied().unwrap_or(0)
    }
}

fn normalize(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_strips_punctuation() {
        assert_eq!(normalize("Word!"), "word");
    }
}
