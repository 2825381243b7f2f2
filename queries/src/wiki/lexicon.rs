//! What the planner knows of general English: the words that are never a noun. A concept is named by a
//! noun or a noun phrase; a plain word a text sets in italics that English uses only as a verb, an
//! adjective or an adverb ("*seems*", "*regardless*", "*critical*") is stressed, not introduced.
//!
//! The list (`lexicon/not_nouns.txt`) is generated from WordNet 3.0 by `lexicon/generate.py`: every
//! inflected form of a verb, adjective or adverb in common use (tagged in WordNet's sense-tagged corpus)
//! none of whose lemmas is a noun. Technical words are rare in general English and so are not on it
//! (`unsafe`, `mutable`, `nightly`); WordNet's license is `lexicon/LICENSE-WordNet`.

const NOT_NOUNS: &str = include_str!("lexicon/not_nouns.txt");

/// Whether English uses `word` (one word, any case) only as a verb, adjective or adverb form.
#[must_use]
pub(crate) fn is_never_a_noun(word: &str) -> bool {
    word.bytes().all(|b| b.is_ascii_alphabetic())
        && sorted_lines_contain(NOT_NOUNS.as_bytes(), word.to_ascii_lowercase().as_bytes())
}

/// The labels writers set in bold before a colon to mark an aside, not to name what it is about
/// ("**Note**: the name warrants bikeshedding", "*Rationale*: …", "**Con**: …"): GitHub's and mdBook's
/// admonition kinds and the labels of a proposal's arguments. A glossary's run-in term ("**Orphan check**:
/// …", the Rust book's "**Crates**: …") is not one of them and stays a term.
const ASIDE_LABELS: [&str; 28] = [
    "answer",
    "aside",
    "caution",
    "con",
    "cons",
    "danger",
    "definition",
    "disclaimer",
    "downside",
    "edit",
    "example",
    "examples",
    "hint",
    "important",
    "info",
    "nb",
    "note",
    "pro",
    "pros",
    "purpose",
    "question",
    "rationale",
    "rebuttal",
    "remark",
    "tip",
    "todo",
    "update",
    "warning",
];

/// Whether an emphasized span is an aside's label: one of [`ASIDE_LABELS`] (any case), `followed` by a
/// colon, opening its line (only quote and list marks before it) as "> **Note**, however, that …" does, or
/// shouted ("**NOTE** this normalization …").
#[must_use]
pub(crate) fn is_aside_label(span: &str, opens_line: impl FnOnce() -> bool, followed: &str) -> bool {
    let span = span.trim();
    let shouted = !span.bytes().any(|b| b.is_ascii_lowercase());
    ASIDE_LABELS.iter().any(|label| span.eq_ignore_ascii_case(label))
        && (shouted || followed.trim_start_matches(['*', '_']).starts_with(':') || opens_line())
}

/// Whether `lines` (newline-separated, sorted) holds `word` as a line: a binary search over the text itself.
/// Building a set of the list's 11,985 words cost every process that asked about a millisecond (and few
/// sources ever ask: only for a word set in italics); a search that reads a few lines costs microseconds.
fn sorted_lines_contain(lines: &[u8], word: &[u8]) -> bool {
    // `low` is always the start of a line, and `high` the start of one or the end.
    let (mut low, mut high) = (0, lines.len());
    while low < high {
        let middle = low + (high - low) / 2;
        let start = lines[..middle].iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        let end = lines[start..].iter().position(|&b| b == b'\n').map_or(lines.len(), |at| start + at);
        match lines[start..end].cmp(word) {
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Less => low = end + 1,
            std::cmp::Ordering::Greater => high = start,
        }
    }
    false
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
    fn the_search_finds_every_listed_word_and_nothing_else() {
        let listed: std::collections::HashSet<&str> = NOT_NOUNS.lines().collect();
        for word in NOT_NOUNS.lines() {
            assert!(sorted_lines_contain(NOT_NOUNS.as_bytes(), word.as_bytes()), "{word}");
            // A word that sorts just before or after a listed one, and a prefix, are not on the list
            // unless listed themselves.
            for near in [format!("{word}a"), word[..word.len() - 1].to_string()] {
                let expected = listed.contains(near.as_str());
                assert_eq!(sorted_lines_contain(NOT_NOUNS.as_bytes(), near.as_bytes()), expected, "{near}");
            }
        }
        // Small lists, with and without a last newline.
        for lines in ["", "b\n", "b\nd", "b\nd\n", "b\nd\nf"] {
            for word in ["a", "b", "c", "d", "e", "f", "g", ""] {
                let listed = lines.lines().any(|line| line == word);
                assert_eq!(sorted_lines_contain(lines.as_bytes(), word.as_bytes()), listed, "{word:?} in {lines:?}");
            }
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
