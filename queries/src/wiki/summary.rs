//! A page's lead summary: the few sentences of its quotes most central to what all its sources say,
//! each cited by the footnote of the quote it comes from. Extractive: every word is a source's.

use std::collections::HashSet;

use serde::Serialize;

/// One sentence of the summary: verbatim from a quote (on one line) and that quote's footnote, or written by
/// the `[wiki] writer`'s model and checked against the quotes it cites.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SummaryLine {
    /// The first footnote it cites.
    pub note: u32,
    /// Every footnote it cites, in order.
    pub notes: Vec<u32>,
    pub text: String,
}

impl SummaryLine {
    /// A sentence taken from the quote of footnote `note`.
    #[must_use]
    pub fn quoted(note: u32, text: String) -> SummaryLine {
        SummaryLine { note, notes: vec![note], text }
    }
}

/// Sentences in a summary, at most.
pub const SUMMARY_SENTENCES: usize = 3;

/// Words too common to tie two sentences together.
const COMMON: &[&str] = &[
    "the", "and", "for", "that", "this", "with", "are", "was", "can", "but", "not", "you", "your", "its", "has",
    "have", "from", "which", "will", "would", "when", "then", "than", "there", "these", "those", "into", "also", "use",
    "used", "one", "all", "any", "more", "some", "such", "our", "they", "them", "their", "what", "how",
];

/// The summary of a page titled `title` from its quotes, given as `(footnote, source path, text)` in
/// footnote order, the first being the defining source's own words when `has_lead`.
///
/// The defining source's first sentence opens it (a definition is the best first line). Then the sentences
/// most central to what the other sources say: a sentence's centrality is how much it shares with the
/// sentences of the other sources (cosine over their words), and it must name the concept (hold two of
/// the title's words, or its one word). One sentence per source, [`SUMMARY_SENTENCES`] in all. A sentence holding a link is
/// left out: it points elsewhere ("see the section on ...") rather than saying something, and so is a
/// sentence that is a whole quote (the quote shows it). A page with neither has no summary: a sentence
/// that does not name the concept would mislead; nor does one whose summary is only the lead's first
/// sentence, which the lead shows next.
#[must_use]
pub fn lead_summary(title: &str, quotes: &[(u32, &str, &str)], has_lead: bool) -> Vec<SummaryLine> {
    let sentences: Vec<(u32, &str, String, Vec<String>)> = quotes
        .iter()
        .flat_map(|&(note, path, text)| prose_sentences(text).into_iter().map(move |sentence| (note, path, sentence)))
        .filter(|(_, _, sentence)| !["[[", "<http"].iter().any(|mark| sentence.contains(mark)))
        // A link to another part of the same work ("covered in the “Custom Macros” section in Chapter 20")
        // is a cross-reference: the sentence points there rather than saying something here.
        .filter(|(_, _, sentence)| {
            let lower = sentence.to_lowercase();
            !(sentence.contains('[') && ["section", "chapter", "appendix"].iter().any(|word| lower.contains(word)))
        })
        .map(|(note, path, sentence)| {
            let sentence = plain(&sentence);
            let words = words(&sentence);
            (note, path, sentence, words)
        })
        .collect();
    let title_words = words(title);
    let centrality = |at: usize| -> f64 {
        let (_, path, _, words) = &sentences[at];
        sentences
            .iter()
            .filter(|other| other.1 != *path && !words.is_empty() && !other.3.is_empty())
            .map(|other| {
                crate::text::shared_sorted(words, &other.3) as f64 / ((words.len() * other.3.len()) as f64).sqrt()
            })
            .sum()
    };
    let mut chosen: Vec<SummaryLine> = Vec::new();
    let mut sources: HashSet<&str> = HashSet::new();
    let definition = quotes.first().filter(|_| has_lead).and_then(|&(note, path, _)| {
        sentences.iter().find(|s| s.0 == note && !sends_elsewhere(&s.2)).map(|s| (note, path, s.2.clone()))
    });
    if let Some((note, path, text)) = definition {
        chosen.push(SummaryLine::quoted(note, text));
        sources.insert(path);
    }
    // Naming the concept: two of the title's words, or its one word.
    let names_it = |words: &[String]| crate::text::shared_sorted(words, &title_words) >= title_words.len().min(2);
    let mut scored: Vec<(f64, usize)> = (0..sentences.len())
        .filter(|&at| {
            !sends_elsewhere(&sentences[at].2) && !leans_on_previous(&sentences[at].2) && names_it(&sentences[at].3)
        })
        .map(|at| (centrality(at), at))
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, at) in scored {
        if chosen.len() == SUMMARY_SENTENCES {
            break;
        }
        let (note, path, sentence, _) = &sentences[at];
        // A sentence copied between sources is said once.
        if !chosen.iter().any(|line| line.text == *sentence) && sources.insert(path) {
            chosen.push(SummaryLine::quoted(*note, sentence.clone()));
        }
    }
    // A sentence that is a whole quote is shown by the quote; a summary of the lead's first sentence alone
    // adds nothing to the lead, which follows it.
    let whole_quote = |line: &SummaryLine| {
        quotes.iter().any(|&(note, _, text)| {
            note == line.note && plain(text).split_whitespace().eq(line.text.split_whitespace())
        })
    };
    chosen.retain(|line| !whole_quote(line));
    let lead_note = quotes.first().filter(|_| has_lead).map(|&(note, ..)| note);
    if chosen.iter().all(|line| Some(line.note) == lead_note) {
        chosen.clear();
    }
    chosen
}

/// The sentence of a quote that defines `title`: the first that sets it in emphasis
/// ([`crate::emphasized_spans`]: `*scope*`, `_arms_`, `**Trait**`, or its plural or singular), as a book or a
/// note marks the term it introduces ("A *scope* is the range within a program for which an item is
/// valid."), and that does not lean on the sentence before it, opens as a sentence does (not with a
/// lower-case word or a closing bracket: the rest of a sentence the splitter cut short) and sends the reader
/// nowhere else ("refer to *State Transition*"). A quote's first sentence often only leads up to it ("As a
/// first example of ownership, we'll look at the scope of some variables.").
/// `sentences` are the quote's [`sentences_of_prose`].
fn defining_sentence(sentences: &[String], title: &str) -> Option<String> {
    let title = title.trim().to_lowercase();
    if title.is_empty() {
        return None;
    }
    let singular = title.strip_suffix('s').unwrap_or(&title);
    let forms = [title.clone(), format!("{title}s"), singular.to_string()];
    let defines = |sentence: &&String| {
        let lower = sentence.to_lowercase();
        is_prose_sentence(sentence)
            && opens_a_sentence(sentence)
            && !leans_on_previous(sentence)
            && !["refer to", "see "].iter().any(|referral| lower.contains(referral))
            && crate::emphasized_spans(sentence).any(|span| forms.contains(&span.to_lowercase()))
    };
    sentences.iter().find(defines).cloned()
}

/// Words that open a sentence leaning on the one before it ("However, ...", "This means ..."): out of its
/// place, such a sentence does not say what it refers to.
const LEANING: &[&str] = &[
    "also",
    "additionally",
    "furthermore",
    "however",
    "instead",
    "it",
    "moreover",
    "otherwise",
    "so",
    "that",
    "then",
    "therefore",
    "these",
    "they",
    "this",
    "those",
    "thus",
];

/// Whether a sentence, as a reader sees it, sends the reader elsewhere ("See the section on …", "For more,
/// refer to …", tldr's "More information: <https://…>.") instead of saying something itself: no summary
/// line, and an answer's last resort.
#[must_use]
pub fn sends_elsewhere(sentence: &str) -> bool {
    ["see ", "for more", "more information", "refer to", "check out", "consult "]
        .into_iter()
        .any(|start| opens_with(sentence, start))
}

/// Whether `sentence` opens with `start` in any case: compared at the start alone, since lower-casing a whole
/// sentence to read its first words is work thrown away.
fn opens_with(sentence: &str, start: &str) -> bool {
    sentence.get(..start.len()).is_some_and(|head| head.eq_ignore_ascii_case(start))
}

/// Phrases that open a sentence leaning on the one before it, where their first word alone does not ("In
/// other words, you can use the `environments` setting to _reduce_ …").
const LEANING_PHRASES: &[&str] = &[
    "as a result",
    "by contrast",
    "for example",
    "for instance",
    "in addition",
    "in contrast",
    "in other words",
    "in that case",
    "in this case",
    "on the other hand",
];

/// Whether a sentence opens with a word or a phrase that refers to what came before it.
fn leans_on_previous(sentence: &str) -> bool {
    let first = sentence.split(|c: char| !c.is_alphanumeric()).next().unwrap_or_default().to_lowercase();
    let opens = |phrase: &&str| opens_with(sentence, phrase) && sentence[phrase.len()..].starts_with([',', ' ', ':']);
    LEANING.contains(&first.as_str()) || LEANING_PHRASES.iter().any(opens)
}

/// The sentence an index row says of a page whose lead is `text`: the one that defines `title`
/// ([`defining_sentence`]), else the lead's first sentence of prose of four words or more (not a numbered
/// step's "1.", a label like "Files:", a table row or a list of settings, or a sentence leaning on the one
/// before it), else none: the caller then takes the lead's first line as it is.
#[must_use]
pub fn row_sentence(text: &str, title: &str) -> Option<String> {
    let sentences = sentences_of_prose(text);
    // The lead's own first sentence has nothing before it to lean on ("This EIP adds ...").
    let opening = text.split_whitespace().next().unwrap_or_default();
    defining_sentence(&sentences, title).or_else(|| {
        sentences.into_iter().enumerate().find_map(|(at, sentence)| {
            let first = at == 0 && sentence.split_whitespace().next() == Some(opening);
            let fits = sentence.split_whitespace().count() >= 4
                && !sentence.ends_with([',', ';'])
                && opens_a_sentence(&sentence)
                && (first || !leans_on_previous(&sentence));
            fits.then_some(sentence)
        })
    })
}

/// Whether a sentence opens as one does: not with a lower-case word or a closing bracket, which is the rest
/// of a sentence the splitter cut short.
fn opens_a_sentence(sentence: &str) -> bool {
    sentence.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit() || "*_`\"“'‘@".contains(c))
}

/// A quote's sentences of prose, each on one line: code, headings, tables, lists, block quotes and HTML
/// are left out, as are fragments under six words and run-ons over sixty.
fn prose_sentences(text: &str) -> Vec<String> {
    sentences_of_prose(text).into_iter().filter(|sentence| is_prose_sentence(sentence)).collect()
}

/// Whether a sentence of prose is a whole one a summary may say: six to sixty words, ending as a sentence
/// ends.
fn is_prose_sentence(sentence: &str) -> bool {
    let count = sentence.split_whitespace().count();
    (6..=60).contains(&count) && sentence.ends_with(['.', '?', '!', ')', '"', '*', '_'])
}

/// Every sentence of a quote's prose blocks, each on one line: code, headings, tables, lists, block quotes
/// and HTML are left out, and so is a block's leading line that is one token of markup (the Rust
/// Reference's rule ids, `r[items.use.intro]`).
fn sentences_of_prose(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for block in text.split("\n\n") {
        let mut trimmed = block.trim_start();
        while let Some((first, rest)) = trimmed.split_once('\n')
            && !first.trim().contains(char::is_whitespace)
            && first.contains('[')
        {
            trimmed = rest.trim_start();
        }
        // A code fence may span blank lines: an odd number of fence lines in a block opens or closes one.
        let fences =
            trimmed.lines().filter(|l| l.trim_start().starts_with("```") || l.trim_start().starts_with("~~~")).count();
        let was_code = in_code || fences > 0;
        if fences % 2 == 1 {
            in_code = !in_code;
        }
        if was_code || trimmed.starts_with(['#', '>', '<', '[', '!', '{']) || crate::text::starts_list_item(trimmed) {
            continue;
        }
        // A hard line break (two spaces or a backslash at a line's end) ends a line no sentence runs past: a
        // transcript's "Unknown Speaker  0:13  " label, then what was said.
        for part in trimmed.split_inclusive('\n').collect::<Vec<_>>().split_inclusive(|line| ends_in_a_hard_break(line))
        {
            let flat = part.iter().flat_map(|line| line.split_whitespace()).collect::<Vec<_>>().join(" ");
            out.extend(crate::split_sentences(&flat).map(str::to_string));
        }
    }
    out
}

/// Whether a line of a paragraph ends in a Markdown hard line break: two spaces or a backslash.
fn ends_in_a_hard_break(line: &str) -> bool {
    let line = line.trim_end_matches(['\n', '\r']);
    line.ends_with("  ") || line.ends_with('\\')
}

/// A sentence as a reader sees it: a link's text without its target (`[text](url)`, `[text][label]`,
/// `[label]`), and HTML comments (`<!-- ignore -->`) left out, so that every word is still the source's
/// and no markup reaches the summary.
fn plain(sentence: &str) -> String {
    let mut out = String::with_capacity(sentence.len());
    let mut rest = sentence;
    while let Some(at) = rest.find(['[', '<', '`']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        // Code is kept as written (`- [ ]` is no link).
        if let Some(code) = rest.strip_prefix('`') {
            let end = code.find('`').map_or(rest.len(), |end| end + 2);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        if let Some(comment) = rest.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            continue;
        }
        let Some(inner) =
            rest.strip_prefix('[').and_then(|after| after.find(']').map(|end| (&after[..end], &after[end + 1..])))
        else {
            out.push_str(&rest[..1]);
            rest = &rest[1..];
            continue;
        };
        let (text, after) = inner;
        out.push_str(text);
        // The target: `(url)` or `[label]`, dropped.
        rest = match after.chars().next() {
            Some('(') => after.find(')').map_or(after, |end| &after[end + 1..]),
            Some('[') => after.find(']').map_or(after, |end| &after[end + 1..]),
            _ => after,
        };
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a lowercased word is one of [`COMMON`]: a set, where a scan of the list for every word of every
/// quote's sentences was about a fifth of the summaries' work in a cold build.
fn is_common(word: &str) -> bool {
    static SET: crate::text::WordSet = crate::text::WordSet::new(COMMON);
    SET.contains(word)
}

/// A sentence's words that can tie it to another: lowercase, three letters or more, not [`COMMON`], a
/// plural's `s` dropped ("macros" ties to "macro"); sorted and without repeats, so that the words two
/// sentences share are counted by one merge ([`crate::text::shared_sorted`]) rather than by hashing each word.
fn words(sentence: &str) -> Vec<String> {
    let mut words: Vec<String> = sentence
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !is_common(w))
        .map(|w| if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") { w[..w.len() - 1].to_string() } else { w })
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_that_opens_by_pointing_elsewhere_sends_the_reader_there() {
        for pointer in [
            "See the section on traits.",
            "SEE ALSO the guide.",
            "For more, read on.",
            "Refer to it.",
            "check out x",
            "Consult the guide for details.",
        ] {
            assert!(sends_elsewhere(pointer), "{pointer}");
        }
        for statement in ["Seeds grow.", "Formore is a word.", "A crate: see below.", "Sé", "", "é see "] {
            assert!(!sends_elsewhere(statement), "{statement}");
        }
    }

    #[test]
    fn an_index_row_says_the_leads_first_sentence_of_prose() {
        // The Rust Reference's rule ids are no prose.
        let reference = "r[items.use.intro]\nA _use declaration_ creates one or more local name bindings.";
        assert_eq!(
            row_sentence(reference, "Imports").as_deref(),
            Some("A _use declaration_ creates one or more local name bindings.")
        );
        // The lead's own first sentence leans on nothing; a later one that leans is passed over.
        let abstract_ = "This EIP adds a wallet endpoint for switching chains. It takes four parameters here.";
        assert_eq!(
            row_sentence(abstract_, "Endpoint").as_deref(),
            Some("This EIP adds a wallet endpoint for switching chains.")
        );
        let listed =
            "- Just add the section.\n\nThis is the easiest of all the alternatives. A new section helps readers.";
        assert_eq!(row_sentence(listed, "Section").as_deref(), Some("A new section helps readers."));
        // "e.g." and "i.e." end no sentence; a word that ends in them does.
        let abbreviated =
            "It also detects problem six (e.g. a panic), i.e. the worst one here. A second sentence follows.";
        assert_eq!(
            sentences_of_prose(abbreviated),
            ["It also detects problem six (e.g. a panic), i.e. the worst one here.", "A second sentence follows."]
        );
        assert_eq!(sentences_of_prose("We set the tie. Then more text."), ["We set the tie.", "Then more text."]);
        // Nothing but numbered steps: none, and the caller takes the lead's first line.
        assert_eq!(row_sentence("1. Make a tracking issue.\n2. Wait for it.", "Tracking issue"), None);
    }

    #[test]
    fn a_hard_line_break_ends_a_line_no_sentence_runs_past() {
        let transcript = "Unknown Speaker  0:13  \nHello, I am Mark, an engineer who writes notes daily.\n\n\
                          One line\\\nand the next line, joined by a backslash break.";
        assert_eq!(
            sentences_of_prose(transcript),
            [
                "Unknown Speaker 0:13",
                "Hello, I am Mark, an engineer who writes notes daily.",
                "One line\\",
                "and the next line, joined by a backslash break."
            ]
        );
        let wrapped = "A sentence wrapped\nover two lines.";
        assert_eq!(sentences_of_prose(wrapped), ["A sentence wrapped over two lines."]);
    }

    #[test]
    fn the_defining_sentence_is_the_one_that_sets_the_term_in_emphasis() {
        let scope = "As a first example of ownership, we'll look at the scope of some variables. A *scope* is the \
                     range within a program for which an item is valid.";
        assert_eq!(
            defining_sentence(&sentences_of_prose(scope), "Scope").as_deref(),
            Some("A *scope* is the range within a program for which an item is valid.")
        );
        // Plural in the text, singular in the title, and the other emphasis marks.
        let arms = "All `if` expressions start with the keyword `if`. Blocks of code associated with the \
                    conditions are sometimes called _arms_, just like the arms in `match` expressions.";
        assert!(defining_sentence(&sentences_of_prose(arms), "Arm").is_some_and(|s| s.contains("_arms_")));
        assert!(
            defining_sentence(
                &sentences_of_prose("The **Trait** keyword declares one shared set of methods."),
                "trait"
            )
            .is_some()
        );
        // A sentence leaning on the one before it does not say what it refers to.
        let stream = "The async `recv` method produces a sequence of items over time. This is an instance of a \
                      much more general pattern known as a _stream_.";
        assert_eq!(defining_sentence(&sentences_of_prose(stream), "Stream"), None);
        // The term without emphasis, or inside another word, defines nothing.
        assert_eq!(
            defining_sentence(
                &sentences_of_prose("We look at the scope of some variables in this example here."),
                "Scope"
            ),
            None
        );
        assert_eq!(
            defining_sentence(
                &sentences_of_prose("Each *scoped* name is valid until the end of its block here."),
                "Scope"
            ),
            None
        );
        // The rest of a sentence the splitter cut short, and a sentence that sends the reader elsewhere.
        assert_eq!(
            defining_sentence(
                &sentences_of_prose("}` is really defining a *family* of traits, one for each choice."),
                "Family"
            ),
            None
        );
        assert_eq!(
            defining_sentence(
                &sentences_of_prose("For states discussed below, refer to *State* in the section."),
                "State"
            ),
            None
        );
    }

    #[test]
    fn shared_words_are_counted_as_a_set_intersection_counts_them() {
        let sentences = [
            "Macros expand macros into code, and the macro expands again.",
            "A macro is expanded at compile time; its expansion is code.",
            "Nothing here matches anything there at all.",
            "",
        ];
        for a in sentences {
            for b in sentences {
                let (left, right) = (words(a), words(b));
                let sets: (HashSet<&String>, HashSet<&String>) = (left.iter().collect(), right.iter().collect());
                assert_eq!(
                    crate::text::shared_sorted(&left, &right),
                    sets.0.intersection(&sets.1).count(),
                    "{a} | {b}"
                );
            }
        }
        assert_eq!(crate::text::shared_sorted(&words(sentences[0]), &words(sentences[1])), 2, "macro and code");
    }

    #[test]
    fn the_definition_opens_then_the_sentences_the_sources_share_one_per_source() {
        let quotes = [
            (
                1,
                "a.md",
                "Compost is decayed organic matter from gardens. Compost turns kitchen scraps into humus for garden beds.",
            ),
            (2, "b.md", "A compost heap needs kitchen scraps and dry leaves. Cats dislike the smell of it entirely."),
            (
                3,
                "c.md",
                "Humus from compost feeds the garden beds all winter. See [the beds](beds.md) for garden humus compost.",
            ),
            (4, "d.md", "```\ncompost --turn kitchen scraps garden humus\n```"),
        ];
        let summary = lead_summary("Compost", &quotes, true);
        let texts: Vec<&str> = summary.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts[0], "Compost is decayed organic matter from gardens.", "the definition leads: {texts:?}");
        assert_eq!(summary.iter().map(|l| l.note).collect::<Vec<_>>(), [1, 3, 2], "{texts:?}");
        assert!(
            texts.iter().all(|t| !t.contains("Cats") && !t.contains("See [") && !t.contains("--turn")),
            "{texts:?}"
        );
    }

    #[test]
    fn a_whole_quote_or_the_lead_alone_makes_no_summary() {
        // Only the lead's first sentence qualifies: the lead shows it next.
        let lead_only = [
            (1, "a.md", "Compost is decayed organic matter from gardens. It smells of earth after rain."),
            (2, "b.md", "Cats dislike the smell of the heap behind the shed entirely."),
        ];
        assert_eq!(lead_summary("Compost", &lead_only, true), []);
        // A one-sentence quote is shown whole by the quote, so the summary leaves it out.
        let whole = [
            (1, "a.md", "Compost is decayed organic matter from gardens. Compost feeds garden beds with humus."),
            (2, "b.md", "Compost feeds the garden beds with humus every single year."),
            (3, "c.md", "Garden beds fed with compost give humus to every plant. Nothing else here matters."),
        ];
        let summary = lead_summary("Compost", &whole, true);
        assert_eq!(summary.iter().map(|l| l.note).collect::<Vec<_>>(), [1, 3], "{summary:?}");
    }

    #[test]
    fn a_sentence_with_links_keeps_their_words_and_loses_their_markup() {
        assert_eq!(
            plain("As [“Traits”][traits]<!-- ignore --> showed, a [trait object](ch18.md#objects) is `dyn T`."),
            "As “Traits” showed, a trait object is `dyn T`."
        );
        assert_eq!(
            plain("The `to` snippet expands to `- [ ]` and [more](x.md)."),
            "The `to` snippet expands to `- [ ]` and more."
        );
        let quotes = [
            (1, "a.md", "A trait object points to a type and a table of its methods. It is built at run time."),
            (
                2,
                "b.md",
                "As [“Traits”][traits]<!-- ignore --> showed, a [trait object](x.md) holds a table of methods. It \
                 has no other state.",
            ),
            (3, "c.md", "See [trait objects](x.md) for how a trait object finds its methods at run time."),
            (4, "d.md", "The [“Trait Objects”][objects] section in Chapter 18 says what a trait object's table holds."),
            (5, "e.md", "However, a trait object's table of methods is fixed when the trait object is made. Done."),
            (6, "f.md", "In other words, a trait object's methods are looked up in its table at run time. Done."),
        ];
        let summary = lead_summary("Trait object", &quotes, true);
        let texts: Vec<&str> = summary.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "A trait object points to a type and a table of its methods.",
                "As “Traits” showed, a trait object holds a table of methods."
            ],
            "a pointer (\"See ...\", a link to a section) says nothing itself, nor does a sentence leaning on the one \
             before it"
        );
    }

    #[test]
    fn a_phrase_that_refers_back_leans_as_its_word_does() {
        for leaning in
            ["In other words, it grows.", "for example: this", "On the other hand it shrinks.", "However, no."]
        {
            assert!(leans_on_previous(leaning), "{leaning}");
        }
        for standing in ["In otherworldly terms it grows.", "Informal words.", "For exampled", "Inner words."] {
            assert!(!leans_on_previous(standing), "{standing}");
        }
    }

    #[test]
    fn without_a_definition_or_a_sentence_naming_the_concept_there_is_no_summary() {
        let quotes = [
            (1, "a.md", "Peelings go to the [[humus heap|compost]] rather than the bin, every single day."),
            (2, "b.md", "Healthy soil holds water and air for the roots of every plant."),
            (3, "c.md", "Healthy soil also holds worms that turn the water and air through it."),
        ];
        assert_eq!(lead_summary("Kitchen scraps", &quotes, true), []);
    }
}
