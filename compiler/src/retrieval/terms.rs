//! A query's terms and stems: how query text and chunk text become the words ranking compares, with the
//! stems' weights (BM25's idf) and the cache of stems one search reuses. Shared by keyword ranking, hybrid's
//! coverage, snippets and `ask`.

use rustc_hash::{FxHashMap, FxHashSet};

use rust_stemmers::{Algorithm, Stemmer};

/// At most this many distinct terms are searched, the first ones of the query; agents sometimes paste
/// paragraphs, and a pasted book must cost no more than its first words (docs/deployment.md).
pub const MAX_TERMS: usize = 32;

/// Words that carry no meaning for ranking; dropped from a query unless it holds nothing else.
const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "should", "so", "that", "the", "their", "then",
    "there", "these", "this", "to", "was", "what", "when", "where", "which", "who", "why", "will", "with", "you",
    "your",
];

/// A word's second letter as the stemmer may write it: `y` and `i` alike.
fn y_as_i(letter: char) -> char {
    if letter == 'y' { 'i' } else { letter }
}

/// Stems of the words that could match the query, remembered across the results of one search. The
/// English stemmer keeps a word's first letter, and in a stem of three letters or more its second too, `y`
/// read as `i` ("lying" stems to "lie"): of 659,077 words (every word of the corpora in `../shared/corpora`
/// and every string of three or four letters, alone and with `ing`, `ed` or `ies`), none broke this. So a
/// word that starts no query stem this way can never stem to one and is not stemmed at all: the rerank
/// stems a few words per chunk, not all of them.
pub(crate) struct StemCache {
    stemmer: Stemmer,
    /// Each query stem's first letter and, for a stem of three letters or more, its second.
    starts: Vec<(char, Option<char>)>,
    /// Each word stemmed so far, as the place of its stem in `stems`: one lookup a word read again.
    known: FxHashMap<String, usize>,
    stems: Vec<String>,
}

impl StemCache {
    pub(crate) fn new(query: &QueryStems) -> StemCache {
        StemCache::for_stems(query.weights.iter().map(|(stem, _)| stem))
    }

    pub(crate) fn for_stems<'a>(stems: impl IntoIterator<Item = &'a String>) -> StemCache {
        let mut starts: Vec<(char, Option<char>)> = Vec::new();
        for stem in stems {
            let mut letters = stem.chars();
            let Some(first) = letters.next() else { continue };
            let second = letters.next().filter(|_| stem.chars().nth(2).is_some()).map(y_as_i);
            if !starts.contains(&(first, second)) {
                starts.push((first, second));
            }
        }
        StemCache {
            stemmer: Stemmer::create(Algorithm::English),
            starts,
            known: FxHashMap::default(),
            stems: Vec::new(),
        }
    }

    /// Whether a lowercased word starts as a query stem does, so that it may stem to one (or be one of the
    /// query's own words, which stem to them).
    pub(crate) fn may_match(&self, word: &str) -> bool {
        let mut letters = word.chars();
        letters.next().is_some_and(|first| self.starts_as_a_stem(first, letters.next()))
    }

    /// Whether a lowercased word's first two letters start as a query stem does.
    fn starts_as_a_stem(&self, first: char, second: Option<char>) -> bool {
        let second = second.map(y_as_i);
        self.starts.iter().any(|&(start, then)| start == first && then.is_none_or(|then| Some(then) == second))
    }

    /// The stem of a word as the text writes it, or none when it cannot be a query stem: a word is
    /// lowercased (copied) only when it has capitals and may be one, as a snippet reads every word.
    pub(crate) fn stem_as_written(&mut self, word: &str) -> Option<&String> {
        if !word.is_ascii() {
            return self.stem(&word.to_lowercase());
        }
        if !word.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.stem(word);
        }
        let mut letters = word.chars().map(|c| c.to_ascii_lowercase());
        let first = letters.next()?;
        if !self.starts_as_a_stem(first, letters.next()) {
            return None;
        }
        self.stem(&word.to_ascii_lowercase())
    }

    /// The stem of a lowercased word, or none when it cannot be a query stem.
    pub(crate) fn stem(&mut self, word: &str) -> Option<&String> {
        if !self.may_match(word) {
            return None;
        }
        let at = match self.known.get(word) {
            Some(&at) => at,
            None => {
                self.stems.push(stem_word(&self.stemmer, word));
                self.known.insert(word.to_string(), self.stems.len() - 1);
                self.stems.len() - 1
            }
        };
        self.stems.get(at)
    }
}

/// What a text holds of a query, read one lowercased word at a time: which of the query's stems its words
/// have, and which of the query's own words stand in it as written.
pub(crate) struct Held {
    stems: Vec<bool>,
    words: Vec<String>,
}

impl Held {
    pub(crate) fn new(query: &QueryStems) -> Held {
        Held { stems: vec![false; query.weights.len()], words: Vec::new() }
    }

    /// Takes in the text's next word, lowercased. Only a word that may stem to a query stem is stemmed.
    pub(crate) fn read(&mut self, query: &QueryStems, cache: &mut StemCache, word: &str) {
        let Some(stem) = cache.stem(word) else { return };
        if let Some(at) = query.weights.iter().position(|(known, _)| known == stem) {
            self.stems[at] = true;
        }
        if !self.words.iter().any(|held| held == word) && query.words.iter().flatten().any(|own| own == word) {
            self.words.push(word.to_string());
        }
    }

    /// Whether the text has a word of this query stem.
    pub(crate) fn has_stem(&self, query: &QueryStems, stem: &str) -> bool {
        query.weights.iter().position(|(known, _)| known == stem).is_some_and(|at| self.stems[at])
    }

    /// Whether the query's own word stands in the text as written.
    pub(crate) fn has_word(&self, word: &str) -> bool {
        self.words.iter().any(|held| held == word)
    }

    /// Whether the text has a word of some stem of the query.
    pub(crate) fn has_some_stem(&self) -> bool {
        self.stems.contains(&true)
    }
}

/// The query's distinct word stems, each weighted by its rarity in the index (BM25's idf): in the
/// coverage rerank a rare word that names the topic outweighs the common words around it, which with
/// equal weights outvoted it (Cranfield and SciFact, docs/performance.md). Compound terms
/// (`std::fs::read`) count by their words, as the text's words are compared.
pub(crate) struct QueryStems {
    pub(crate) weights: Vec<(String, f64)>,
    /// For each stem (in the order of `weights`), the query's own words that stem to it.
    words: Vec<Vec<String>>,
}

impl QueryStems {
    /// Weights from `total` chunks and the number holding each word, which `frequencies` gives for the
    /// query's words (one word per distinct stem) at once: the same weights over any index. A word an index
    /// leaves out of its keyword index (`None`: a stop word) weighs as one every chunk holds.
    pub(crate) fn read_from<E>(
        stemmer: &Stemmer,
        terms: &[String],
        total: f64,
        frequencies: impl FnOnce(&[String]) -> Result<Vec<Option<f64>>, E>,
    ) -> Result<QueryStems, E> {
        let mut stems: Vec<String> = Vec::new();
        let mut words_of: Vec<Vec<String>> = Vec::new();
        for word in terms.iter().flat_map(|term| words(term)) {
            let stem = stem_word(stemmer, &word);
            match stems.iter().position(|known| *known == stem) {
                Some(at) => words_of[at].push(word),
                None => {
                    stems.push(stem);
                    words_of.push(vec![word]);
                }
            }
        }
        let first_words: Vec<String> = words_of.iter().map(|words| words[0].clone()).collect();
        let found = frequencies(&first_words)?;
        let weights = stems
            .into_iter()
            .zip(found)
            .map(|(stem, found)| {
                let found = found.unwrap_or(total);
                (stem, (1.0 + (total - found + 0.5) / (found + 0.5)).ln())
            })
            .collect();
        Ok(QueryStems { weights, words: words_of })
    }

    /// Like [`QueryStems::coverage`], but a stem that only a different word of the text shares (the
    /// stemmer folds "genetically" and "genetics" into one stem) counts [`STEM_ONLY`] of its weight; the
    /// query's own word counts whole.
    pub(crate) fn graded_coverage(&self, covered: impl Fn(&str) -> bool, exact: impl Fn(&str) -> bool) -> f64 {
        self.share(|stem, words| {
            if words.iter().any(|word| exact(word)) {
                1.0
            } else if covered(stem) {
                STEM_ONLY
            } else {
                0.0
            }
        })
    }

    /// The weighted share of the query's stems that `covered` holds: 0 to 1.
    pub(crate) fn coverage(&self, covered: impl Fn(&str) -> bool) -> f64 {
        self.share(|stem, _| if covered(stem) { 1.0 } else { 0.0 })
    }

    /// The weighted share of the query's stems, each credited 0 to 1 by `credit` (given the stem and the
    /// query's words that stem to it).
    fn share(&self, credit: impl Fn(&str, &[String]) -> f64) -> f64 {
        let total: f64 = self.weights.iter().map(|(_, weight)| weight).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let credited: f64 =
            self.weights.iter().zip(&self.words).map(|((stem, weight), words)| weight * credit(stem, words)).sum();
        credited / total
    }
}

/// What a query stem matched only through another word of the same stem counts for, against 1 for the
/// query's own word. Chosen on Cranfield (each half of its queries gained: 0.3577 -> 0.3600 and 0.3475 ->
/// 0.3512 nDCG@10 at 0.75; 0.5 lost on one half) and the judged Rust book set (docs/performance.md).
const STEM_ONLY: f64 = 0.75;

/// The distinct, lowercased search terms of a query: words split at whitespace and at characters FTS5
/// treats specially, stopwords dropped unless nothing else is left.
#[must_use]
pub fn query_terms(query: &str) -> Vec<String> {
    read_terms(query).0
}

/// Whether a query holds more distinct words than [`query_terms`] searches (its first [`MAX_TERMS`]): the
/// rest are ignored, and the answer says so.
#[must_use]
pub fn terms_dropped(query: &str) -> bool {
    read_terms(query).1
}

/// The query's terms, and whether a further distinct word was left out. One pass that stops at the first
/// word past the cap, so a pasted book costs what reading its first words costs (issue 40: a set of the
/// words seen, not a search of a list, keeps it linear).
fn read_terms(query: &str) -> (Vec<String>, bool) {
    let mut meaningful = Vec::new();
    let mut stopwords = Vec::new();
    // Stopwords past the cap matter only to a query of stopwords alone.
    let mut stopwords_dropped = false;
    let mut seen = FxHashSet::default();
    let mut after_how = false;
    // A hyphen joins words ("fast-twitch", "sex-determining"), not an identifier's parts: the words are
    // searched on their own, and the phrase still earns the phrase boost.
    for word in query.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | ':' | '_' | '\'' | '’'))) {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        // A negated auxiliary ("haven't") names no topic: a stopword, searched only in a query of nothing else.
        let (word, stopword) = match without_clitic(&word) {
            Some(term) => {
                let measure = after_how && MEASURE_WORDS.contains(&term.as_str());
                let stopword = measure || STOPWORDS.contains(&term.as_str());
                (term, stopword)
            }
            None => (word, true),
        };
        if !word.is_empty() {
            after_how = word == "how";
        }
        if word.is_empty() || !seen.insert(word.clone()) {
            continue;
        }
        if !stopword {
            if meaningful.len() == MAX_TERMS {
                return (meaningful, true);
            }
            meaningful.push(word);
        } else if stopwords.len() < MAX_TERMS {
            stopwords.push(word);
        } else {
            stopwords_dropped = true;
        }
    }
    if meaningful.is_empty() { (stopwords, stopwords_dropped) } else { (meaningful, false) }
}

/// Words that, right after "how", ask for a measure rather than name a topic ("how many vacation days",
/// "how long is the sabbatical", "how much is known about …"): read as stopwords there. The answer holds a
/// number or a time, seldom the word, and a text that holds the word for another reason ("longer absences")
/// is no nearer the answer; elsewhere the word is a term ("wrap long lines").
const MEASURE_WORDS: &[&str] = &[
    "big",
    "deep",
    "early",
    "far",
    "fast",
    "frequently",
    "large",
    "late",
    "long",
    "many",
    "much",
    "often",
    "old",
    "quickly",
    "small",
    "soon",
];

/// English clitics a word may end with after an apostrophe: the possessive and the contracted verbs.
const CLITICS: [&str; 6] = ["s", "m", "re", "ve", "ll", "d"];

/// A query word without its English clitic, as a term: "crate's" is "crate", "I'm" is "i"; a negated
/// auxiliary ("haven't", "don't", "can't") is `None`: it names no topic, and is read as a stopword. The text
/// index splits words at apostrophes, so a clitic kept would be searched as a word of its own: "m" or "t",
/// which no text holds as a word, weighed as the question's rarest term (and its subject, to `ask`). A word
/// with an apostrophe elsewhere ("o'clock", an identifier) is kept as it is.
fn without_clitic(word: &str) -> Option<String> {
    let Some((base, clitic)) = word.rsplit_once(['\'', '’']) else { return Some(word.to_string()) };
    if clitic == "t" && base.ends_with('n') {
        return None;
    }
    if CLITICS.contains(&clitic) && !base.is_empty() {
        return Some(base.trim_end_matches(['\'', '’']).to_string());
    }
    Some(word.to_string())
}

pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The English stems of a text's words, as the keyword index and the re-rank compare them.
pub(crate) fn stems(stemmer: &Stemmer, text: &str) -> Vec<String> {
    words(text).iter().map(|w| stem_word(stemmer, w)).collect()
}

pub(crate) fn stem_word(stemmer: &Stemmer, word: &str) -> String {
    stemmer.stem(word).into_owned()
}

#[cfg(test)]
mod tests {
    use rust_stemmers::{Algorithm, Stemmer};

    use super::{Held, QueryStems, STEM_ONLY, StemCache, query_terms, stem_word};
    use knowledge_queries::each_lowercased_word;

    #[test]
    fn a_word_that_stems_to_a_query_stem_is_stemmed_and_others_are_passed_over() {
        let stemmer = Stemmer::create(Algorithm::English);
        // Stems that change a word's ending, its second letter, or are the stemmer's exceptions.
        let words = [
            "lying",
            "dying",
            "tying",
            "skies",
            "early",
            "gently",
            "generously",
            "cries",
            "ties",
            "happily",
            "running",
            "hopped",
            "agreed",
            "news",
            "idly",
            "only",
            "by",
            "is",
            "a",
            "ownership",
        ];
        for word in words {
            let stem = stem_word(&stemmer, word);
            let mut cache = StemCache::for_stems([&stem]);
            assert_eq!(cache.stem(word), Some(&stem), "{word} -> {stem}");
            assert!(cache.may_match(word), "{word}");
        }
        let mut cache = StemCache::for_stems([&"ownership".to_string(), &"li".to_string()]);
        for other in ["borrow", "oxen", "o", ""] {
            assert_eq!(cache.stem(other), None, "{other}");
        }
        assert!(cache.may_match("lo"), "a stem of two letters is matched by its first");
    }

    #[test]
    fn a_stem_only_another_word_shares_counts_less_than_the_query_word() {
        let query = QueryStems {
            weights: vec![("genet".to_string(), 3.0), ("mous".to_string(), 1.0)],
            words: vec![vec!["genetically".to_string()], vec!["mouse".to_string()]],
        };
        let stems = ["genet", "mous"];
        let graded = |text: &[&str]| query.graded_coverage(|stem| stems.contains(&stem), |word| text.contains(&word));
        assert_eq!(graded(&["genetically", "mouse"]), 1.0);
        assert_eq!(graded(&["genetics", "mouse"]), (3.0 * STEM_ONLY + 1.0) / 4.0);
        assert!(graded(&["genetically", "mice"]) > graded(&["genetics", "mouse"]), "the rare word's form counts most");
    }

    /// What a text holds of a query: each stem any word of it has, and only the query's own words as written;
    /// a word is stemmed as written in any case.
    #[test]
    fn a_text_holds_the_stems_its_words_have_and_the_query_words_it_writes() {
        let stemmer = Stemmer::create(Algorithm::English);
        let words = ["borrowing", "checker", "rules"];
        let query = QueryStems {
            weights: words.iter().map(|word| (stem_word(&stemmer, word), 1.0)).collect(),
            words: words.iter().map(|word| vec![(*word).to_string()]).collect(),
        };
        let mut cache = StemCache::new(&query);
        let mut held = Held::new(&query);
        each_lowercased_word("The Borrowed value; the CHECKER checks", |word| held.read(&query, &mut cache, word));
        assert!(held.has_stem(&query, &stem_word(&stemmer, "borrowing")), "borrowed shares borrowing's stem");
        assert!(held.has_stem(&query, &stem_word(&stemmer, "checker")));
        assert!(!held.has_stem(&query, &stem_word(&stemmer, "rules")));
        assert!(held.has_word("checker"), "written in capitals, it is the query's own word");
        assert!(!held.has_word("borrowing") && !held.has_word("borrowed"), "only the query's own words are held");
        assert!(held.has_some_stem());
        assert!(!Held::new(&query).has_some_stem());
        for written in ["Borrowing", "BORROWING", "borrowing"] {
            assert_eq!(cache.stem_as_written(written), Some(&stem_word(&stemmer, "borrowing")), "{written}");
        }
        assert_eq!(cache.stem_as_written("Zebra"), None, "no query stem starts so");
    }

    #[test]
    fn query_terms_drop_fts_syntax_and_stopwords() {
        assert_eq!(query_terms("what are the ownership rules?"), ["ownership", "rules"]);
        assert_eq!(query_terms("NEAR(\"a\" b) AND title:x*"), ["near", "b", "title:x"]);
        assert_eq!(query_terms("the"), ["the"], "a query of stopwords keeps them");
        assert_eq!(query_terms("std::fs::read pkg.mod"), ["std::fs::read", "pkg.mod"]);
        assert_eq!(query_terms("fast-twitch fibres"), ["fast", "twitch", "fibres"], "hyphenated words are words");
        assert_eq!(
            query_terms("can I see my crate's docs while I'm writing, since I haven’t yet?"),
            ["see", "crate", "docs", "while", "writing", "since", "yet"],
            "a possessive or contracted verb is its word alone, a negated auxiliary no term"
        );
        assert_eq!(query_terms("o'clock rock'n'roll"), ["o'clock", "rock'n'roll"], "other apostrophes stay");
        assert_eq!(query_terms("don't panic"), ["panic"]);
        assert_eq!(query_terms("How many vacation days?"), ["vacation", "days"], "a measure after how is no term");
        assert_eq!(query_terms("how long is the sabbatical"), ["sabbatical"]);
        assert_eq!(query_terms("wrap long lines"), ["wrap", "long", "lines"], "elsewhere it is one");
        assert_eq!(query_terms("how long"), ["how", "long"], "a query of nothing else keeps it");
        assert_eq!(query_terms("don't"), ["don't"], "a query of a negated auxiliary alone searches it");
        for hostile in ["'", "''s", "’’", "n't", "'t'", "s'", "a''''b", "’s’s’s"] {
            assert!(query_terms(hostile).iter().all(|term| !term.is_empty()), "{hostile:?}");
        }
        assert!(query_terms("  \"*^()  ").is_empty());
        let long: String = (0..100).map(|n| format!("word{n} the ")).collect();
        assert_eq!(query_terms(&long).len(), super::MAX_TERMS, "the first terms are kept");
        assert_eq!(query_terms(&long)[0], "word0");
        assert!(super::terms_dropped(&long) && !super::terms_dropped("ownership rules"));
        // A query of stopwords alone keeps its first 32 of them, and says the rest were left out.
        let stopwords = super::STOPWORDS[..40].join(" ");
        assert_eq!(query_terms(&stopwords), super::STOPWORDS[..32]);
        assert!(super::terms_dropped(&stopwords));
        assert!(!super::terms_dropped(&format!("{stopwords} ownership")), "a meaningful word: stopwords go anyway");
    }

    #[test]
    fn query_terms_take_time_linear_in_the_query() {
        // 100,000 distinct words took 52–73 s per search before (issue 40, item 10): the terms alone were
        // quadratic. A bound of 2 s for a 1 MB query holds with a wide margin on a loaded machine.
        let huge: String = (0..150_000).map(|n| format!("w{n} ")).collect();
        let started = std::time::Instant::now();
        assert_eq!(query_terms(&huge).len(), super::MAX_TERMS);
        let _ = super::terms_dropped(&huge);
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    }
}
