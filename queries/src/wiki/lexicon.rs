//! What the planner knows of general English: the words that are never a noun. A concept is named by a
//! noun or a noun phrase; a plain word a text sets in italics that English uses only as a verb, an
//! adjective or an adverb ("*seems*", "*regardless*", "*critical*") is stressed, not introduced.
//!
//! The list (`lexicon/not_nouns.txt`) is generated from WordNet 3.0 by `lexicon/generate.py`: every
//! inflected form of a verb, adjective or adverb in common use (tagged in WordNet's sense-tagged corpus)
//! none of whose lemmas is a noun. Technical words are rare in general English and so are not on it
//! (`unsafe`, `mutable`, `nightly`); WordNet's license is `lexicon/LICENSE-WordNet`.

use std::collections::HashSet;
use std::sync::OnceLock;

const NOT_NOUNS: &str = include_str!("lexicon/not_nouns.txt");

/// Whether English uses `word` (one word, any case) only as a verb, adjective or adverb form.
#[must_use]
pub(crate) fn is_never_a_noun(word: &str) -> bool {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let words = WORDS.get_or_init(|| NOT_NOUNS.lines().collect());
    word.bytes().all(|b| b.is_ascii_alphabetic()) && words.contains(word.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_adjectives_and_adverbs_are_never_nouns_and_technical_words_are_not_on_the_list() {
        for word in ["Seems", "applies", "regardless", "Critical", "evaluate", "ensure", "warns", "includes"] {
            assert!(is_never_a_noun(word), "{word}");
        }
        // Nouns, words that are also nouns, forms of nouns, words general English rarely uses, phrases.
        for word in ["borrowing", "capture", "matching", "changes", "news", "unsafe", "nightly", "rustc", "two words"] {
            assert!(!is_never_a_noun(word), "{word}");
        }
    }

    #[test]
    fn the_list_is_sorted_lowercase_words() {
        let words: Vec<&str> = NOT_NOUNS.lines().collect();
        assert!(words.len() > 10_000);
        assert!(words.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(words.iter().all(|word| word.bytes().all(|b| b.is_ascii_lowercase())));
    }
}
