//! The terms a source's prose uses again and again: where it discusses a concept, whichever source names it.
//!
//! A concept's page should quote every source that explains it, not only the one that defines it or links
//! to it: the Rust book defines ownership in one chapter, and the chapters on strings, closures, `Rc<T>` and
//! threads each explain what ownership means there without linking back. Such a source uses the concept's
//! name several times. Per source (so an edit re-derives only its own terms), the words and two-word phrases
//! of its prose are counted, with code, link targets and HTML left out, and the most used become
//! [`super::SignalKind::Term`] signals. The planner attaches a term only to a concept something else names.

use rustc_hash::FxHashMap;

use crate::markdown::{BlockKind, ParsedDocument};
use crate::text::WordSet;

/// A word used fewer times than this is mentioned in passing, not discussed.
pub(super) const TERM_MIN_COUNT: u32 = 3;

/// A two-word phrase is rarer and says more: twice is enough (the Rust book's threads chapter names
/// "interior mutability" twice, and that is where it explains why `Mutex<T>` has it).
pub(super) const PHRASE_MIN_COUNT: u32 = 2;

/// The most terms one source gives: its most used ones. Bounds what a long source adds to the catalog
/// (the Rust book's closures chapter uses about 230 words and phrases twice or more, counted 2026-12-03); the
/// concepts a source discusses are among what it uses most.
pub(super) const TERM_MAX_PER_SOURCE: usize = 96;

/// The most distinct words and phrases one source's count holds: past it, only those already seen are
/// counted. A book chapter has a few thousand; a file of a million distinct words (generated data, a word
/// list) would otherwise cost a build time and memory for terms none of which is used twice.
const MAX_CANDIDATES: usize = 65_536;

/// One repeated term of a source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RepeatedTerm {
    /// The term as first written, lowercased.
    pub label: String,
    pub count: u32,
    /// Where the term first stands in the block that uses it most: the place a page quotes.
    pub densest: usize,
}

/// The key a concept is matched by: its [`super::concept_key`] with each word's plural folded
/// (`Smart Pointers` and `smart pointer` meet at `smart-pointer`).
#[must_use]
pub(super) fn term_key(name: &str) -> String {
    fold_key(&super::concept_key(name))
}

/// A concept key with each word's plural `s` dropped.
#[must_use]
pub(super) fn fold_key(key: &str) -> String {
    let mut folded = String::with_capacity(key.len());
    for (n, word) in key.split('-').enumerate() {
        if n > 0 {
            folded.push('-');
        }
        folded.push_str(singular(word));
    }
    folded
}

/// A word without a plural's `s`: `pointers` → `pointer`, `macros` → `macro`; `class`, `bus` and short
/// words are kept.
fn singular(word: &str) -> &str {
    if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") && !word.ends_with("is")
    {
        &word[..word.len() - 1]
    } else {
        word
    }
}

/// Whether a word is too common to be a term: English function words and the verbs and adverbs every
/// text uses. Compared lowercased.
#[must_use]
pub(super) fn is_common(word: &str) -> bool {
    let mut lower = String::new();
    lowercase_into(&mut lower, word.trim_matches(|c: char| !c.is_alphanumeric()));
    is_common_lowercase(&lower)
}

/// [`is_common`] of a word already lowercased.
fn is_common_lowercase(word: &str) -> bool {
    // A set: every word of every prose block of a build is looked up here, and a binary search of the list
    // cost about 3 % of a cold build.
    static SET: WordSet = WordSet::new(COMMON);
    word.len() < 3 || SET.contains(word)
}

/// Sorted, for a reader.
const COMMON: &[&str] = &[
    "about",
    "above",
    "actually",
    "add",
    "adds",
    "after",
    "again",
    "against",
    "all",
    "almost",
    "already",
    "also",
    "although",
    "always",
    "among",
    "and",
    "another",
    "any",
    "anything",
    "are",
    "aren't",
    "around",
    "because",
    "been",
    "before",
    "being",
    "below",
    "best",
    "better",
    "between",
    "bit",
    "bits",
    "both",
    "but",
    "call",
    "called",
    "calls",
    "can",
    "can't",
    "cannot",
    "case",
    "cases",
    "contain",
    "contains",
    "could",
    "did",
    "does",
    "doesn't",
    "doing",
    "don't",
    "done",
    "down",
    "during",
    "each",
    "either",
    "else",
    "enough",
    "even",
    "every",
    "exactly",
    "first",
    "following",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "getting",
    "give",
    "given",
    "gives",
    "going",
    "good",
    "got",
    "had",
    "has",
    "have",
    "having",
    "her",
    "here",
    "his",
    "how",
    "however",
    "into",
    "isn't",
    "it's",
    "its",
    "itself",
    "just",
    "kind",
    "kinds",
    "know",
    "last",
    "later",
    "least",
    "less",
    "let",
    "let's",
    "like",
    "likely",
    "look",
    "lot",
    "lots",
    "made",
    "make",
    "makes",
    "making",
    "many",
    "may",
    "mean",
    "means",
    "might",
    "more",
    "most",
    "much",
    "must",
    "need",
    "needs",
    "never",
    "new",
    "next",
    "nor",
    "not",
    "now",
    "off",
    "often",
    "once",
    "one",
    "only",
    "other",
    "others",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "part",
    "rather",
    "really",
    "refer",
    "refers",
    "same",
    "see",
    "seen",
    "several",
    "she",
    "should",
    "show",
    "shown",
    "shows",
    "similar",
    "simply",
    "since",
    "some",
    "something",
    "sort",
    "still",
    "stuff",
    "such",
    "sure",
    "take",
    "takes",
    "than",
    "that",
    "that's",
    "the",
    "their",
    "them",
    "then",
    "there",
    "there's",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "though",
    "three",
    "through",
    "thus",
    "too",
    "two",
    "under",
    "until",
    "upon",
    "use",
    "used",
    "uses",
    "using",
    "very",
    "want",
    "was",
    "way",
    "ways",
    "we'll",
    "we're",
    "we've",
    "well",
    "were",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "won't",
    "work",
    "works",
    "would",
    "yet",
    "you",
    "you'll",
    "you're",
    "your",
    "yours",
];

/// The source's most used terms ([`TERM_MAX_PER_SOURCE`] at most, each used [`TERM_MIN_COUNT`] times or
/// more), most used first.
#[must_use]
pub(super) fn repeated_terms(text: &str, doc: &ParsedDocument) -> Vec<RepeatedTerm> {
    // Terms are counted by the hash of their key, and a label is made only for the few that are used
    // enough: a file of distinct words (most of any long file's) would otherwise allocate a string for
    // each. Two keys meeting in 64 bits would add their counts, once in billions of files.
    let mut tally: FxHashMap<u64, Tally<'_>> = FxHashMap::default();
    let mut order = 0usize;
    // Buffers reused for every word.
    let (mut word, mut previous) = (String::new(), String::new());
    // An HTML block (a man page's `<dl>` of options) is markup a page cannot quote: its words are no place.
    let prose = |b: &&crate::Block| b.kind == BlockKind::Other && !text[b.start as usize..].starts_with('<');
    for (block, span) in doc.blocks.iter().enumerate().filter(|(_, b)| prose(b)) {
        let mut before: Option<Word<'_>> = None;
        for found in words(text, span.start as usize, span.end as usize) {
            lowercase_into(&mut word, found.text);
            let common = is_common_lowercase(&word);
            let key = singular(&word);
            if let Some(first) = before.as_ref().filter(|_| found.joined && !common) {
                let first_key = singular(&previous);
                if first_key != key {
                    let hash = hash_of(&[first_key, "-", key]);
                    count(&mut tally, hash, (first.text, Some(found.text)), block, first.start, &mut order);
                }
            }
            if !common {
                count(&mut tally, hash_of(&[key]), (found.text, None), block, found.start, &mut order);
            }
            std::mem::swap(&mut word, &mut previous);
            before = (!common).then_some(found);
        }
    }
    let mut terms: Vec<(usize, RepeatedTerm)> = tally
        .into_values()
        .filter_map(|mut t| {
            t.close_block();
            let least = if t.words.1.is_some() { PHRASE_MIN_COUNT } else { TERM_MIN_COUNT };
            (t.count >= least).then(|| (t.first, RepeatedTerm { label: t.label(), count: t.count, densest: t.best_at }))
        })
        .collect();
    terms.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(&b.0)));
    terms.truncate(TERM_MAX_PER_SOURCE);
    terms.into_iter().map(|(_, term)| term).collect()
}

/// The hash of a key given in parts.
fn hash_of(parts: &[&str]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    for part in parts {
        hasher.write(part.as_bytes());
        hasher.write_u8(0xff);
    }
    hasher.finish()
}

/// `raw` lowercased into `out`, without a possessive `'s`, with a typographic apostrophe made plain.
fn lowercase_into(out: &mut String, raw: &str) {
    let raw = raw.strip_suffix("'s").or_else(|| raw.strip_suffix("’s")).unwrap_or(raw);
    out.clear();
    if raw.is_ascii() {
        out.extend(raw.bytes().map(|b| char::from(b.to_ascii_lowercase())));
    } else {
        out.extend(raw.chars().flat_map(char::to_lowercase).map(|c| if c == '’' { '\'' } else { c }));
    }
}

/// A term's count, and the block that uses it most so far.
struct Tally<'a> {
    /// The term's word, or its two words, as first written.
    words: (&'a str, Option<&'a str>),
    count: u32,
    /// When it was first seen, to break ties in a stable order.
    first: usize,
    block: usize,
    in_block: u32,
    block_at: usize,
    best: u32,
    best_at: usize,
}

impl Tally<'_> {
    fn close_block(&mut self) {
        if self.in_block > self.best {
            (self.best, self.best_at) = (self.in_block, self.block_at);
        }
    }

    /// The term as first written, lowercased.
    fn label(&self) -> String {
        let mut label = String::new();
        lowercase_into(&mut label, self.words.0);
        if let Some(second) = self.words.1 {
            let mut word = String::new();
            lowercase_into(&mut word, second);
            label.push(' ');
            label.push_str(&word);
        }
        label
    }
}

fn count<'a>(
    tally: &mut FxHashMap<u64, Tally<'a>>,
    key: u64,
    words: (&'a str, Option<&'a str>),
    block: usize,
    at: usize,
    order: &mut usize,
) {
    *order += 1;
    if tally.len() >= MAX_CANDIDATES && !tally.contains_key(&key) {
        return;
    }
    let entry = tally.entry(key).or_insert_with(|| Tally {
        words,
        count: 0,
        first: *order,
        block,
        in_block: 0,
        block_at: at,
        best: 0,
        best_at: at,
    });
    entry.count += 1;
    if entry.block != block {
        entry.close_block();
        (entry.block, entry.in_block, entry.block_at) = (block, 0, at);
    }
    entry.in_block += 1;
}

/// Where the first part of a camel-case identifier ends (`Hash` of `HashMap`); `None` for a word of one
/// part (`Mutex`, `HTTP`, `len`).
fn camel_part(word: &str) -> Option<usize> {
    let bytes = word.as_bytes();
    (1..bytes.len()).find(|&at| bytes[at].is_ascii_uppercase() && bytes[at - 1].is_ascii_lowercase())
}

/// A word of prose, as it stands in the text.
struct Word<'a> {
    text: &'a str,
    start: usize,
    /// Whether only spaces (or emphasis marks, or a hyphen) stand between it and the word before, so that
    /// the two make a phrase.
    joined: bool,
}

/// Where the word starting at `at` ends (before `end`): letters and digits, and an apostrophe inside a word
/// ("don't").
fn word_end(text: &str, mut at: usize, end: usize) -> usize {
    while at < end {
        let Some(ch) = text[at..].chars().next() else { break };
        let inner_apostrophe =
            matches!(ch, '\'' | '’') && text[at + ch.len_utf8()..].chars().next().is_some_and(char::is_alphanumeric);
        if !(ch.is_alphanumeric() || inner_apostrophe) {
            break;
        }
        at += ch.len_utf8();
    }
    at
}

/// The words of `text[start..end]` a reader reads as prose: inline code, link targets, HTML tags and
/// comments, URLs and template placeholders are skipped, and each breaks a phrase.
fn words(text: &str, start: usize, end: usize) -> impl Iterator<Item = Word<'_>> + '_ {
    let bytes = text.as_bytes();
    let mut at = start;
    let mut joined = false;
    let mut in_code = false;
    std::iter::from_fn(move || {
        while at < end {
            let c = bytes[at];
            if c.is_ascii_alphabetic() || c >= 0x80 && text[at..].chars().next().is_some_and(char::is_alphabetic) {
                let word_start = at;
                at = word_end(text, at, end);
                // In code, an identifier in camel case is the words it is made of (`HashMap` is "hash map",
                // `RefCell` "ref cell"), one after another as a phrase.
                if in_code && let Some(part) = camel_part(&text[word_start..at]) {
                    at = word_start + part;
                }
                let word = Word { text: &text[word_start..at], start: word_start, joined };
                joined = !in_code || text[at..end].starts_with(|c: char| c.is_ascii_uppercase());
                // A URL is no prose: skip what is left of it.
                if text[at..end].starts_with("://") {
                    while at < end && !bytes[at].is_ascii_whitespace() {
                        at += 1;
                    }
                    joined = false;
                    continue;
                }
                return Some(word);
            }
            if in_code && c != b'`' {
                at += text[at..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            let rest = &text[at..end];
            let skip_to =
                |open: usize, close: &str| rest[open..].find(close).map_or(end, |n| at + open + n + close.len());
            at = match c {
                b' ' | b'\n' | b'\t' | b'*' | b'_' | b'-' => at + 1,
                // Inline code names what prose discusses (`Mutex<T>`, `Rc<T>`): its words count, but make no
                // phrase with the prose around them.
                b'`' => {
                    let ticks = rest.bytes().take_while(|&b| b == b'`').count();
                    joined = false;
                    in_code = !in_code;
                    at + ticks
                }
                b'<' if rest.starts_with("<!--") => {
                    joined = false;
                    skip_to(4, "-->")
                }
                b'<' => {
                    joined = false;
                    skip_to(1, ">")
                }
                b']' if rest.starts_with("](") => {
                    joined = false;
                    skip_to(2, ")")
                }
                b']' if rest.starts_with("][") => {
                    joined = false;
                    skip_to(2, "]")
                }
                b'{' if rest.starts_with("{{") => {
                    joined = false;
                    skip_to(2, "}}")
                }
                _ => {
                    joined = false;
                    at + text[at..].chars().next().map_or(1, char::len_utf8)
                }
            };
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<(String, u32)> {
        let doc = crate::markdown::parse_document(crate::SourceKind::Markdown, text);
        repeated_terms(text, &doc).into_iter().map(|t| (t.label, t.count)).collect()
    }

    #[test]
    fn words_and_phrases_used_three_times_are_terms_most_used_first() {
        let text = "Ownership moves the value. Smart pointers own data, and smart pointers track ownership.\n\n\
                    A smart pointer is a struct. Ownership again, and the cat once.\n";
        let found = terms(text);
        assert_eq!(found[0], ("ownership".to_string(), 3));
        assert!(found.contains(&("smart pointers".to_string(), 3)), "{found:?}");
        assert!(found.contains(&("pointers".to_string(), 3)), "the plural folds into one count: {found:?}");
        assert!(!found.iter().any(|(label, _)| label == "cat" || label == "the" || label == "and"), "{found:?}");
    }

    #[test]
    fn code_link_targets_html_and_urls_are_not_prose() {
        let text = "See [the book](ownership.html) <a id=\"ownership\"></a> \
                    https://example.com/ownership <!-- ownership --> {{ownership}} [text][ownership].\n\n\
                    <dl><dt>ownership</dt>\n<dd>ownership ownership</dd></dl>\n\n\
                    ```\nownership ownership ownership\n```\n";
        assert!(terms(text).is_empty(), "{:?}", terms(text));
    }

    #[test]
    fn inline_code_counts_its_words_but_makes_no_phrase() {
        let text = "A `Mutex<T>` guards data; `Mutex` locks. The mutex is held: `lock < mutex`.\n\
                    A `HashMap<K, V>` maps; `HashMap::new` makes one hash map.\n";
        let found = terms(text);
        assert!(found.contains(&("mutex".to_string(), 4)), "{found:?}");
        assert!(found.contains(&("hash map".to_string(), 3)), "camel case splits into a phrase: {found:?}");
        assert!(!found.iter().any(|(label, _)| label.starts_with("mutex ") || label.ends_with(" mutex")), "{found:?}");
    }

    #[test]
    fn a_phrase_does_not_run_across_punctuation() {
        let text = "Smart, pointers. Smart, pointers. Smart, pointers.\n";
        let found = terms(text);
        assert!(!found.iter().any(|(label, _)| label.contains(' ')), "{found:?}");
    }

    #[test]
    fn the_place_is_the_block_that_uses_the_term_most() {
        let text =
            "Closures once.\n\nAnother paragraph on closures: closures capture, closures move.\n\nClosures last.\n";
        let doc = crate::markdown::parse_document(crate::SourceKind::Markdown, text);
        let term = repeated_terms(text, &doc).into_iter().find(|t| t.label == "closures").expect("a term");
        assert_eq!(term.count, 5);
        assert_eq!(term.densest, text.find("closures:").unwrap());
    }

    #[test]
    fn plurals_fold_in_keys() {
        assert_eq!(term_key("Smart Pointers"), "smart-pointer");
        assert_eq!(term_key("smart pointer"), "smart-pointer");
        assert_eq!(term_key("Class"), "class");
        assert_eq!(term_key("Status"), "status");
        assert_eq!(term_key("Macros"), "macro");
        assert!(
            COMMON.windows(2).all(|pair| pair[0] < pair[1]),
            "COMMON stays sorted, so that a reader finds a word and a repeat shows"
        );
    }
}
