//! `knowledge ask`: a context pack turned into an extractive, cited draft answer. No model writes
//! anything: the answer is sentences of the knowledge base itself, each with the citation of the excerpt
//! it comes from, and a question nothing answers gets "Not found in the knowledge base." instead of a guess.

use rusqlite::Connection;
use serde::Serialize;

use crate::retrieval::access::Access;
use crate::retrieval::context::{self, ContextPack};
use crate::retrieval::{search, terms};
use knowledge_queries::{
    Fences, is_block_label, is_content_tab, is_heading_line, list_item_body, starts_list_item, wiki,
};

pub const SCHEMA: &str = "knowledge-answer";
pub const SCHEMA_VERSION: u32 = 1;
/// What the answer says when no excerpt answers the question.
pub const NOT_FOUND: &str = "Not found in the knowledge base.";

/// Sentences in an answer, at most.
const MAX_SENTENCES: usize = 3;

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Answer {
    pub schema: std::borrow::Cow<'static, str>,
    pub schema_version: u32,
    pub question: String,
    /// Whether the knowledge base answers the question; when not, `answer` says so and cites nothing.
    pub found: bool,
    /// The draft: sentences quoted from the excerpts, each followed by its citation number, `[1]`.
    pub answer: String,
    pub citations: Vec<AnswerCitation>,
    /// The run that recorded this answer in the index, when it could be recorded.
    pub run_id: Option<String>,
    /// The context pack's excerpts the answer chose from.
    pub excerpts_considered: usize,
    /// A generated answer's sentences, each with its citations as checked against the pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentences: Option<Vec<crate::retrieval::generated::CheckedSentence>>,
    /// Who generated the answer, and its token usage and cost; absent for the extractive draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<crate::retrieval::generated::GenerationInfo>,
}

/// The answer to a question nothing in the knowledge base answers.
#[must_use]
pub fn not_found(question: &str, excerpts_considered: usize) -> Answer {
    Answer {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        question: question.to_string(),
        found: false,
        answer: NOT_FOUND.to_string(),
        citations: Vec::new(),
        run_id: None,
        excerpts_considered,
        sentences: None,
        generated: None,
    }
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct AnswerCitation {
    pub n: usize,
    /// `file://PATH@REV12#Lstart-Lend`, as context packs cite; `knowledge get` resolves it.
    #[serde(rename = "ref")]
    pub reference: String,
    pub title: String,
    pub path: String,
    pub revision: String,
}

impl AnswerCitation {
    /// The citation numbered `n` of a context pack's excerpt.
    #[must_use]
    pub fn of(n: usize, excerpt: &crate::retrieval::context::PackItem) -> AnswerCitation {
        AnswerCitation {
            n,
            reference: excerpt.reference.clone(),
            title: excerpt.title.clone(),
            path: excerpt.source.path.clone(),
            revision: excerpt.source.revision.clone(),
        }
    }
}

/// Answers `question` from what `access` may read.
pub fn answer(conn: &Connection, question: &str, max_tokens: usize, access: &Access) -> rusqlite::Result<Answer> {
    answer_cached(conn, &mut search::SearchCache::default(), question, max_tokens, access)
}

/// [`answer`] through the connection's `cache` (see [`search::search_cached`]).
pub fn answer_cached(
    conn: &Connection,
    cache: &mut search::SearchCache,
    question: &str,
    max_tokens: usize,
    access: &Access,
) -> rusqlite::Result<Answer> {
    answer_in(&mut search::SqliteIndex::new(conn, cache)?, question, max_tokens, access)
}

/// [`answer`] from `projects` of the Postgres store, as `principal` may read them. Nothing is recorded.
pub fn answer_postgres(
    store: &mut crate::store::postgres::PgStore,
    projects: &[String],
    question: &str,
    max_tokens: usize,
    principal: Option<&str>,
) -> Result<Answer, search::StoreReadError> {
    let scope = search::StoreScope::of(store, projects, principal)?;
    let mut index = search::PgIndex::new(store, scope.projects, scope.generation);
    answer_in(&mut index, question, max_tokens, &scope.access).map_err(|source| index.error(source).into())
}

fn answer_in<I: search::SearchIndex>(
    index: &mut I,
    question: &str,
    max_tokens: usize,
    access: &Access,
) -> Result<Answer, I::Error> {
    let pack = context::excerpts_in(index, question, max_tokens, 6, access)?;
    drafted(index, question, &pack)
}

/// The answer `pack`'s excerpts give `question`: the one rule that decides found or not found, for `ask`
/// and for the wiki updates a pack suggests.
pub(crate) fn drafted<I: search::SearchIndex>(
    index: &mut I,
    question: &str,
    pack: &ContextPack,
) -> Result<Answer, I::Error> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let topic = topic_terms(&pack.intent);
    let total = index.chunk_total()?;
    let weights = terms::QueryStems::read_from(&stemmer, &topic, total, |words| index.word_frequencies(words))?;
    Ok(draft(question, pack, &weights))
}

/// Records the answer as a run in the index (the run id is set on the answer).
pub fn record(index: &std::path::Path, answer: &mut Answer) -> Result<(), crate::store::StoreError> {
    let run_id = crate::build::run_id(std::time::SystemTime::now());
    answer.run_id = Some(run_id.clone());
    let record = crate::store::AskRecord {
        summary: serde_json::to_string(&*answer).expect("answers serialize"),
        question: &answer.question,
        found: answer.found,
        answer: &answer.answer,
        citations: answer
            .citations
            .iter()
            .map(|c| crate::store::AskCitation { path: &c.path, revision: &c.revision, reference: &c.reference })
            .collect(),
        generation: answer.generated.as_ref().map(|info| {
            let unsupported = answer.sentences.iter().flatten().filter(|s| !s.supported).count();
            let mut detail = serde_json::to_value(info).expect("generation info serializes");
            detail["unsupported_sentences"] = unsupported.into();
            detail.to_string()
        }),
    };
    let recorded = crate::store::Store::open_for_build(index).and_then(|mut store| store.record_ask(&run_id, &record));
    if recorded.is_err() {
        answer.run_id = None;
    }
    recorded
}

/// Words that frame a question instead of naming what it is about ("shadowing versus making a variable
/// mutable", "the best way to", "I want to", "what happens when", "how does it work", "several packages in one
/// repository"): an answer need not hold them, and one the knowledge base never uses must not sink an
/// answerable question. Overview words ("everything about lifetimes") frame it too.
const FRAMING_WORDS: &[&str] = &[
    "able",
    "actually",
    "also",
    "anything",
    "best",
    "better",
    "compare",
    "compared",
    "comparison",
    "difference",
    "differences",
    "exactly",
    "get",
    "happen",
    "happened",
    "happens",
    "help",
    "instead",
    "just",
    "know",
    "multiple",
    "need",
    "possible",
    "really",
    "several",
    "something",
    "thing",
    "things",
    "various",
    "versus",
    "vs",
    "want",
    "way",
    "ways",
    "we",
    "work",
    "works",
    "us",
    "our",
];

/// Words of English's closed classes that the search keeps (pronouns, quantifiers, auxiliaries, adverbs of
/// degree and time) and that name no topic: "how do I count how many people read each chapter" is
/// about people reading chapters, and a passage that counts the words "in each chapter" holds nothing of it
/// by holding "each". Verbs stay topic words, however light ("lets readers edit" answers "let readers edit"),
/// and so does negation: "doesn't test code blocks" answers "not supposed to be tested".
const CLOSED_CLASS_WORDS: &[&str] = &[
    "all", "already", "always", "am", "another", "any", "been", "being", "but", "could", "each", "even", "ever",
    "every", "few", "had", "has", "have", "he", "her", "here", "him", "his", "many", "may", "might", "more", "most",
    "much", "must", "never", "often", "one", "ones", "only", "other", "others", "same", "shall", "she", "still",
    "such", "than", "them", "they", "those", "too", "very", "was", "were", "would", "yet",
];

/// The question's terms that name its topic: its search terms without framing, overview and closed-class
/// words (all of them, when nothing else is left).
fn topic_terms(intent: &[String]) -> Vec<String> {
    let topical = |term: &&String| {
        let term = term.as_str();
        !FRAMING_WORDS.contains(&term) && !search::OVERVIEW_WORDS.contains(&term) && !CLOSED_CLASS_WORDS.contains(&term)
    };
    let topic: Vec<String> = intent.iter().filter(topical).cloned().collect();
    if topic.is_empty() { intent.to_vec() } else { topic }
}

/// How much evidence an excerpt must carry to answer the question: the share of the topic's weight its text
/// and headings hold, plus [`SEMANTIC_WEIGHT`] times how much nearer in meaning it is to the question than
/// [`FLOOR_SHARE`] of the search's semantic floor (the cosine of an ordinary chunk of the index, see
/// [`search::SearchResponse::semantic_floor`]) when the index has embeddings (docs/cli.md, "ask"). The floor
/// matters where every chunk is near the question: one that names the corpus's own subject ("connect mdbook
/// to a postgres database") sits as near the guide's every page as a question the guide answers does to its
/// answer. Fitted on the judged Rust-book and mdBook-guide questions with the local all-MiniLM-L6-v2
/// (docs/performance.md); keyword-only indexes use the topic share alone.
const EVIDENCE_MIN: f64 = 1.12;
const SEMANTIC_WEIGHT: f64 = 3.0;
const FLOOR_SHARE: f64 = 0.5;
const EVIDENCE_MIN_KEYWORD: f64 = 0.65;

/// A list item shorter than this names a topic; it says nothing about it.
const LIST_ITEM_WORDS: usize = 6;

/// Whether a list item says something (a sentence of a few words, ended as one, or a term's definition),
/// rather than naming a topic as a chapter's overview lists them ("- How to create threads to run multiple
/// pieces of code").
fn says_something(item: &str) -> bool {
    (ends_with_one_of(item, &['.', '!', '?']) && item.split_whitespace().count() >= LIST_ITEM_WORDS)
        || defines_its_term(item)
}

/// Whether a list item defines the term it opens with, set in bold or as code and followed by a colon, as a
/// reference lists its keys and flags ("- **title:** The title of the book", "- `--open`: Opens the book"):
/// what it says of the term is its answer, ended with a stop or not.
fn defines_its_term(item: &str) -> bool {
    let item = list_item_body(item);
    let term_end = ["**", "__", "`"].iter().find_map(|mark| {
        let rest = item.strip_prefix(mark)?;
        let close = rest.find(mark)?;
        (close > 0).then(|| mark.len() + close + mark.len())
    });
    let Some(term_end) = term_end else { return false };
    let (term, rest) = item.split_at(term_end);
    let term = term.trim_matches(['*', '_', '`']);
    // The colon inside the emphasis ("**title:**") or right after it ("**title**:", "`src`:").
    let said = if term.ends_with(':') { Some(rest) } else { rest.strip_prefix(':') };
    said.is_some_and(|said| prose_words(said) >= DEFINITION_WORDS)
}

/// The fewest words of prose a definition item says of its term ("The title of the book"): a command alone
/// ("**Build Command**: `npm run build`") or links alone ("**Related:** [esbuild#…](…)") say nothing.
const DEFINITION_WORDS: usize = 3;

/// How many words of a text are prose: outside code spans and links, holding a letter.
fn prose_words(text: &str) -> usize {
    let mut prose = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['`', '[']) {
        prose.push_str(&rest[..at]);
        prose.push(' ');
        let markup = &rest[at..];
        rest = if let Some(code) = markup.strip_prefix('`') {
            // An unclosed code span runs to the end.
            code.find('`').map_or("", |close| &code[close + 1..])
        } else {
            // A link, its text and its target (`[text](target)`); a bracket that opens none is a character.
            match markup.find("](").and_then(|middle| markup[middle..].find(')').map(|close| middle + close + 1)) {
                Some(end) => &markup[end..],
                None => &markup[1..],
            }
        };
    }
    prose.push_str(rest);
    prose.split_whitespace().filter(|word| word.chars().any(char::is_alphabetic)).count()
}

/// Whether a text ends with one of `stops`, closing emphasis, code, brackets and quotes aside (`… *here*.`,
/// `(see below.)`).
fn ends_with_one_of(text: &str, stops: &[char]) -> bool {
    text.trim_end_matches(['*', '_', '`', ')', '"', '\'', '”']).ends_with(stops)
}

/// The draft: the best sentences of the excerpts that answer the question, best first.
///
/// An excerpt answers when it carries enough evidence: most of the topic's words, weighted by rarity, in its
/// text and headings, or (with embeddings) fewer of them in an excerpt whose meaning is close to the
/// question's, as a question phrased in a user's words is. A question about something the knowledge base
/// never mentions ("the capital of France") names a rare or absent word no excerpt holds and finds no
/// excerpt near it in meaning. Within the answering excerpts, sentences are ranked by the share of the
/// topic they hold, those naming the question's subject (its rarest topic words) first; a heading, a code
/// block or a list item of a few words (a list of topics) is no answer.
fn draft(question: &str, pack: &ContextPack, weights: &terms::QueryStems) -> Answer {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let subject = subject_stems(weights);
    let asks_what_it_is = asks_for_a_definition(question);
    let semantic = pack.items.iter().any(|item| item.scores.as_ref().is_some_and(|s| s.semantic.is_some()));
    let floor = semantic.then(|| pack.semantic_floor.unwrap_or(0.0));
    let mut candidates: Vec<Candidate> = Vec::new();
    // The first prose sentence of the best excerpt that answers: what the answer is when no sentence holds a
    // word of the topic (a section that defines its subject in other words: "An admonition is a special type
    // of callout or notice block" for "a warning or note box").
    let mut lead: Option<Candidate> = None;
    for (item, excerpt) in pack.items.iter().enumerate() {
        if !carries_evidence(excerpt, weights, &stemmer, floor) {
            continue;
        }
        let page = knowledge_queries::SourceRef::from_path(&excerpt.source.path).page_slug().is_some();
        // Without embeddings an excerpt's first sentence stands for it only where its title or headings name
        // the topic: its evidence may lie in its code alone (`llm`'s example prompt for "the capital of France").
        let may_lead = floor.is_some() || names_topic(&excerpt.title, weights, &stemmer);
        for (at, Sentence { text: sentence, block }) in sentences(&excerpt.text, page).into_iter().enumerate() {
            // An item that introduces the example shown below it says something: how to do what it names.
            if starts_list_item(&sentence) && !says_something(&sentence) && block.is_none() {
                continue;
            }
            // What the reader is shown: the sentence without markup that means nothing outside its file (a
            // comment, a link's reference label, a relative link's target), as a wiki page shows a quote; a
            // reference definition or a comment alone is no sentence.
            // Trimmed: markup taken from the sentence's start (a footnote's `[^label]:`) leaves its space.
            let shown = wiki::readable_excerpt(&sentence).trim().to_string();
            // A question the text asks ("So, if we can't put side effects in reducers, where can we put
            // them?") restates the reader's and answers nothing; the sentences after it do.
            if shown.is_empty() || ends_with_one_of(&shown, &['?']) {
                continue;
            }
            let sends_elsewhere = wiki::sends_elsewhere(&shown);
            let leads = !starts_list_item(&sentence) && sentence.ends_with(['.', '!']) && !sends_elsewhere;
            if lead.is_none() && may_lead && leads {
                lead = Some(Candidate::lead(item, at, shown.clone()));
            }
            let words = sentence_words(&stemmer, &sentence, block.as_deref());
            let share = weights.coverage(|stem| words.contains(stem));
            if share > 0.0 {
                let names_subject = subject.iter().any(|stem| words.contains(stem));
                let defines_subject = asks_what_it_is && defines(&shown, weights, &subject, &stemmer);
                // "See the following rules:" introduces what follows it; it sends the reader nowhere else.
                let points_elsewhere = sends_elsewhere && !shown.ends_with(':');
                candidates.push(Candidate {
                    defines_subject,
                    names_subject,
                    points_elsewhere,
                    share,
                    item,
                    at,
                    shown,
                    block,
                });
            }
        }
    }
    let mut candidates = best(candidates);
    if candidates.is_empty() {
        candidates.extend(lead);
    }
    if candidates.is_empty() {
        return not_found(question, pack.items.len());
    }
    let (answer, citations) = written(&candidates, pack);
    Answer {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        question: question.to_string(),
        found: true,
        answer,
        citations,
        run_id: None,
        excerpts_considered: pack.items.len(),
        sentences: None,
        generated: None,
    }
}

/// A sentence's words, stemmed, with the command of the command line it introduces: a tldr item ("Extract an
/// archive:") names its command only in the example below it. The command's arguments are not counted (`llm`'s
/// example prompts a model with "What is the capital of France?"), nor is a longer block or a list: its many
/// words would outweigh the sentence that introduces it.
fn sentence_words(
    stemmer: &rust_stemmers::Stemmer,
    sentence: &str,
    block: Option<&str>,
) -> std::collections::HashSet<String> {
    let read = match block {
        Some(block) if is_code_line(block) => format!("{sentence}\n{}", command_words(block)),
        _ => sentence.to_string(),
    };
    held_stems(stemmer, &read)
}

/// The stems of a text's words, and of a word that runs letters into digits (`edition2021`, `python3`) the
/// stems of its letters and of its digits too: the mdBook guide's `edition2021` annotation holds the "2021
/// edition" a question names. The search's words stay whole (a question's `utf8` is one word).
fn held_stems(stemmer: &rust_stemmers::Stemmer, text: &str) -> std::collections::HashSet<String> {
    let mut held = std::collections::HashSet::new();
    for word in terms::words(text) {
        let letters = word.trim_end_matches(|c: char| c.is_ascii_digit());
        if !letters.is_empty() && letters.len() < word.len() && letters.chars().all(char::is_alphabetic) {
            held.insert(terms::stem_word(stemmer, letters));
            held.insert(word[letters.len()..].to_string());
        }
        held.insert(terms::stem_word(stemmer, &word));
    }
    held
}

/// The candidates an answer quotes, best first, at most [`MAX_SENTENCES`]: a sentence that sends the reader
/// elsewhere ("See the preprocessors documentation …") after every sentence that says something itself, then
/// (for "what is X") those that define the subject, then those naming it, then by the share of the topic
/// discounted by the excerpt's place ([`EXCERPT_RANK_DISCOUNT`]);
/// each said once, where it ranks best (a page quoting a source repeats the source's words), and each example
/// shown once, below the best sentence introducing it. A piece of a sentence another one holds whole is that
/// sentence cut where a chunk begins or ends (chunks overlap): the whole one is said, once.
fn best(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        (a.points_elsewhere.cmp(&b.points_elsewhere))
            .then(b.defines_subject.cmp(&a.defines_subject))
            .then(b.names_subject.cmp(&a.names_subject))
            .then(b.ranked_share().total_cmp(&a.ranked_share()))
            .then(a.item.cmp(&b.item))
            .then(a.at.cmp(&b.at))
    });
    // The list items a chosen sentence shows below it: said already.
    let mut shown_below = std::collections::HashSet::new();
    let mut chosen: Vec<Candidate> = Vec::new();
    for candidate in candidates {
        if chosen.len() == MAX_SENTENCES {
            break;
        }
        // Said already, whole or within a chosen sentence (a sentence contains itself).
        if shown_below.contains(&candidate.shown) || chosen.iter().any(|s| s.shown.contains(candidate.shown.as_str())) {
            continue;
        }
        // The same sentence with other numbers (a release's announcement repeated for the next: "… play with
        // Vite 4", "… play with Vite 5"): said once.
        let numbers_aside = without_digits(&candidate.shown);
        if chosen.iter().any(|sentence| without_digits(&sentence.shown) == numbers_aside) {
            continue;
        }
        // A whole sentence takes the place of the first piece of it chosen before; any other piece goes.
        let holds = |sentence: &Candidate| candidate.shown.contains(sentence.shown.as_str());
        // The example a chosen sentence shows, introduced again in other words (two pages, one block): shown once.
        if candidate.block.is_some()
            && chosen.iter().any(|sentence| sentence.block == candidate.block && !holds(sentence))
        {
            continue;
        }
        let place = chosen.iter().position(holds).unwrap_or(chosen.len());
        chosen.retain(|sentence| !holds(sentence));
        shown_below.extend(candidate.block.iter().flat_map(|block| block.lines().map(str::to_string)));
        chosen.insert(place, candidate);
    }
    chosen
}

/// A text without its ASCII digits.
fn without_digits(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// A sentence an answer may quote: whether it names the question's subject, whether it only sends the reader
/// elsewhere, the share of the topic it holds, the excerpt it is in and its place there, what the reader is
/// shown, and the code block or list it introduces.
struct Candidate {
    defines_subject: bool,
    names_subject: bool,
    points_elsewhere: bool,
    share: f64,
    item: usize,
    at: usize,
    shown: String,
    block: Option<String>,
}

/// How much less a sentence's share of the topic counts for each place its excerpt stands below the pack's
/// first: the search ranked the excerpts by meaning as well as by words, and a sentence of a lower one leads
/// only when it holds clearly more of the topic ("how do I use redux with typescript": the TypeScript page's
/// advice before a video course's description, which names "use" too). Measured on the judged sets'
/// first sentences and on the uv, Vite, Tauri and Redux readings (docs/performance.md).
const EXCERPT_RANK_DISCOUNT: f64 = 0.7;

impl Candidate {
    /// The share of the topic the sentence holds, discounted by its excerpt's place in the pack.
    fn ranked_share(&self) -> f64 {
        self.share * EXCERPT_RANK_DISCOUNT.powi(i32::try_from(self.item).unwrap_or(i32::MAX))
    }

    /// The first prose sentence of an answering excerpt, the answer when no sentence holds a word of the topic.
    fn lead(item: usize, at: usize, shown: String) -> Candidate {
        Candidate {
            defines_subject: false,
            names_subject: false,
            points_elsewhere: false,
            share: 0.0,
            item,
            at,
            shown,
            block: None,
        }
    }
}

/// The answer's text, each sentence followed by its citation number (and by the code block or list it
/// introduces, on lines of its own), and the citations.
fn written(candidates: &[Candidate], pack: &ContextPack) -> (String, Vec<AnswerCitation>) {
    let mut citations: Vec<AnswerCitation> = Vec::new();
    let mut answer = String::new();
    for candidate in candidates {
        let excerpt = &pack.items[candidate.item];
        let n = match citations.iter().find(|c| c.reference == excerpt.reference) {
            Some(citation) => citation.n,
            None => {
                citations.push(AnswerCitation::of(citations.len() + 1, excerpt));
                citations.len()
            }
        };
        if !answer.is_empty() {
            answer.push_str(if answer.ends_with('\n') { "\n" } else { " " });
        }
        answer.push_str(&format!("{} [{n}]", candidate.shown));
        if let Some(block) = &candidate.block {
            answer.push_str(&format!("\n\n{block}\n"));
        }
    }
    (answer.trim_end().to_string(), citations)
}

/// Whether an excerpt carries enough evidence to answer: the share of the topic's weight its text and
/// headings hold, plus, where the index has embeddings (`floor` is the search's semantic floor), how much
/// nearer in meaning it is to the question than an ordinary chunk ([`EVIDENCE_MIN`]).
fn carries_evidence(
    excerpt: &context::PackItem,
    weights: &terms::QueryStems,
    stemmer: &rust_stemmers::Stemmer,
    floor: Option<f64>,
) -> bool {
    let held = topic_share(&format!("{}\n{}", excerpt.title, excerpt.text), weights, stemmer);
    let Some(floor) = floor else { return held >= EVIDENCE_MIN_KEYWORD };
    let cosine = excerpt.scores.as_ref().and_then(|s| s.semantic).unwrap_or(0.0);
    held + SEMANTIC_WEIGHT * (cosine - FLOOR_SHARE * floor) >= EVIDENCE_MIN
}

/// Whether a text holds a word of the topic.
fn names_topic(text: &str, weights: &terms::QueryStems, stemmer: &rust_stemmers::Stemmer) -> bool {
    topic_share(text, weights, stemmer) > 0.0
}

/// The share of the topic's weight a text's words hold.
fn topic_share(text: &str, weights: &terms::QueryStems, stemmer: &rust_stemmers::Stemmer) -> f64 {
    let words = held_stems(stemmer, text);
    weights.coverage(|stem| words.contains(stem))
}

/// The stems that name the question's subject: its rarest topic words (those weighing at least half of the
/// heaviest).
fn subject_stems(weights: &terms::QueryStems) -> Vec<String> {
    let heaviest = weights.weights.iter().map(|(_, weight)| *weight).fold(0.0, f64::max);
    weights.weights.iter().filter(|(_, weight)| *weight >= heaviest / 2.0).map(|(stem, _)| stem.clone()).collect()
}

/// Whether a question asks what something is or means ("what is a refutable pattern", "what are the
/// ownership rules", "what does the 'static lifetime mean", "define shadowing").
fn asks_for_a_definition(question: &str) -> bool {
    let question = question.trim().to_lowercase();
    let words: Vec<&str> = question.split_whitespace().collect();
    match words.as_slice() {
        ["what", "is" | "are", ..] | ["what's" | "what’s", ..] | ["define", ..] => true,
        ["what", "does" | "do", .., last] => last.trim_end_matches(['?', '.', '!']) == "mean",
        _ => false,
    }
}

/// How many words may open a definition before its verb ("The 'static lifetime of a string literal is …").
const DEFINED_WITHIN_WORDS: usize = 8;

/// Words that join the words of a name ("the type of a pointer", "trait and lifetime bounds").
const PHRASE_WORDS: &[&str] = &["a", "an", "and", "of", "the"];

/// Whether a sentence defines the question's subject as a book or a manual does, naming it by the question's
/// own topic words and no others: it sets them in emphasis ("Patterns that can fail to match for some
/// possible value are _refutable_.", "A *field expression* is …"), or opens with them before `is`, `are`,
/// `means` or `refers to` ("The boolean type is …"; not "Textual scope is …" for "textual types", nor
/// "Because ownership is …"). A question ("But what use is a type you can never create values for?")
/// defines nothing, nor does a sentence cut where its chunk ends ("An _associated function_ is a function
/// that’s").
fn defines(sentence: &str, weights: &terms::QueryStems, subject: &[String], stemmer: &rust_stemmers::Stemmer) -> bool {
    if !ends_with_one_of(sentence, &['.', '!', ':']) {
        return false;
    }
    // The words name the subject: each is a topic word or joins them ("the", "of"), and every subject word is
    // among them ("The trait is known as …" does not define "impl trait").
    let names_the_subject = |words: &mut dyn Iterator<Item = &str>| {
        let mut named: Vec<String> = Vec::new();
        for word in words {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
            if word.is_empty() || PHRASE_WORDS.contains(&word.as_str()) {
                continue;
            }
            let stem = terms::stem_word(stemmer, &word);
            if !weights.weights.iter().any(|(topic, _)| *topic == stem) {
                return false;
            }
            named.push(stem);
        }
        subject.iter().all(|stem| named.contains(stem))
    };
    if knowledge_queries::emphasized_spans(sentence).any(|span| names_the_subject(&mut span.split_whitespace())) {
        return true;
    }
    let words: Vec<&str> = sentence.split_whitespace().take(DEFINED_WITHIN_WORDS + 1).collect();
    let verb = words.iter().position(|word| matches!(*word, "is" | "are" | "means" | "refers"));
    verb.is_some_and(|at| names_the_subject(&mut words[..at].iter().copied()))
}

/// A code block or list an answer may show: at most this many lines (a code block's fences included) and
/// bytes.
const SHOWN_BLOCK_LINES: usize = 14;
const SHOWN_BLOCK_BYTES: usize = 1_000;

/// A sentence of an excerpt, on one line, and the block it introduces when it ends in a colon right before
/// a fenced block ("rustdoc doesn't test code blocks which contain the `ignore` attribute:") or a list ("The
/// list of built-in derives are:"): without the block, such a sentence points at nothing.
#[derive(Debug, PartialEq)]
struct Sentence {
    text: String,
    block: Option<String>,
}

/// An excerpt's sentences and list items, on one line each, without Markdown heading or quote marks.
///
/// The text is read line by line: code inside fences (even across blank lines), headings (a title is no
/// answer), HTML tags standing alone (the Rust book's `<Listing number="8-6" caption="…">`), an
/// admonition's `[!NOTE]` line and a rule id (the Rust Reference's `r[type.pointer.intro]`) are no
/// sentences. A list item runs from its marker to the next item or blank line, its wrapped lines joined;
/// prose runs to a blank line and is cut into sentences. A fenced block that follows a paragraph or item
/// ending in a colon (blank lines between) is kept with it, as written but for the quote marks and the
/// fence's indent, when it closes within the excerpt and is short ([`SHOWN_BLOCK_LINES`],
/// [`SHOWN_BLOCK_BYTES`]), and so is a short list that follows such a paragraph (the items as a quote shows
/// them); its last sentence carries the block. In a generated `page`, the lines that say where its quotes come from
/// ([`wiki::is_attribution_line`]) are no sentences either.
fn sentences(text: &str, page: bool) -> Vec<Sentence> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut fences = Fences::default();
    let mut open = false;
    // The piece a fence or a list item opening now follows: the last one, with only blank lines since.
    let mut adjacent: Option<usize> = None;
    let mut block: Option<FencedBlock> = None;
    for raw in text.lines() {
        // A quote's `>` marks come off first, a quote's inside a quote too (a page quoting a source's alert):
        // a fence inside a quote opens and closes code as one outside does.
        let line = raw.trim().trim_start_matches(['>', ' ', '\t']).trim_end();
        let opening = fences.open().is_none();
        let code = fences.is_code(line);
        if code {
            if opening {
                // Only a piece ending in a colon introduces a block; the lines of any other are not kept.
                let introduces = adjacent.filter(|&piece| introduces_what_follows(&pieces[piece]));
                block = introduces.map(|piece| FencedBlock::open(raw, piece));
            } else if let Some(open_block) = &mut block {
                open_block.read(raw);
            }
            if fences.open().is_none()
                && let Some(closed) = block.take()
            {
                let piece = closed.piece;
                pieces[piece].block = closed.shown();
            }
        }
        // A paragraph of one inline code span alone is a command, as tldr writes each example: code, never a
        // sentence, shown below the piece ending in a colon that introduces it. (Such a line inside a paragraph
        // or an item, wrapped there, is part of its prose.)
        if !code && !open && is_code_line(line) {
            let introduced_by =
                adjacent.filter(|&at| introduces_what_follows(&pieces[at]) && pieces[at].block.is_none());
            if let Some(at) = introduced_by {
                pieces[at].block = Some(line.to_string());
            }
            adjacent = None;
            open = false;
            continue;
        }
        // A content tab's label (`=== "macOS and Linux"`) stands between the piece that introduces a block and
        // the block, the tab's content: the first tab's block is the one shown.
        if !code && !open && is_content_tab(line) {
            continue;
        }
        let tag = line.starts_with('<') && line.ends_with('>');
        let markup = is_heading_line(line) || tag || line.starts_with("[!") || is_block_label(line);
        if code || line.is_empty() || markup || (page && wiki::is_attribution_line(line)) {
            // Each of these ends the paragraph or item before it; a blank line leaves it before a fence.
            if !line.is_empty() || code {
                adjacent = None;
            }
            open = false;
            continue;
        }
        // An item right after a paragraph (blank lines between), or after an item of the list that paragraph
        // introduces, is in that paragraph's list.
        let introduced_by = adjacent.and_then(|at| if pieces[at].item { pieces[at].introduced_by } else { Some(at) });
        match pieces.last_mut() {
            _ if starts_list_item(line) => {
                pieces.push(Piece { text: line.to_string(), item: true, block: None, introduced_by, follows: None });
            }
            Some(piece) if open => {
                piece.text.push(' ');
                piece.text.push_str(line);
            }
            _ => {
                // The paragraph right before this one (only blank lines between), if any.
                let follows = adjacent.filter(|&at| !pieces[at].item);
                pieces.push(Piece { text: line.to_string(), item: false, block: None, introduced_by: None, follows });
            }
        }
        adjacent = Some(pieces.len() - 1);
        open = true;
    }
    sentences_of(pieces)
}

/// A fenced block being read: the piece that introduces it, the fence's quote marks and indent, whether it is
/// Rust, and its lines (fences included) up to one past what may be shown.
struct FencedBlock {
    piece: usize,
    quoted: usize,
    indent: usize,
    rust: bool,
    lines: Vec<String>,
}

impl FencedBlock {
    /// The block its opening fence line `raw` starts, introduced by `piece`.
    fn open(raw: &str, piece: usize) -> FencedBlock {
        let (fence, quoted) = unquote(raw, usize::MAX);
        let indent = indent_of(fence, usize::MAX);
        let info = fence.trim_start().trim_start_matches(['`', '~']);
        let rust = info.split([',', ' ']).next() == Some("rust");
        FencedBlock { piece, quoted, indent, rust, lines: vec![fence[indent..].trim_end().to_string()] }
    }

    /// Reads the block's next line (its closing fence too), without its quote marks and the fence's indent.
    fn read(&mut self, raw: &str) {
        // Lines past the limit are not kept: the block will not be shown.
        if self.lines.len() > SHOWN_BLOCK_LINES {
            return;
        }
        let (unquoted, _) = unquote(raw, self.quoted);
        let line = unquoted[indent_of(unquoted, self.indent)..].trim_end();
        // A Rust example's lines marked `# ` are the boilerplate the book hides from its reader.
        let hidden = self.rust && (line.trim_start() == "#" || line.trim_start().starts_with("# "));
        if !hidden {
            self.lines.push(line.to_string());
        }
    }

    /// The block as an answer shows it: when short, and more than placeholders for code kept elsewhere.
    fn shown(self) -> Option<String> {
        let bytes: usize = self.lines.iter().map(|line| line.len() + 1).sum();
        let short = self.lines.len() <= SHOWN_BLOCK_LINES && bytes <= SHOWN_BLOCK_BYTES;
        (short && !only_placeholders(&self.lines)).then(|| self.lines.join("\n"))
    }
}

/// A paragraph's prose, or one list item, as [`sentences`] reads it, the short code block or list it
/// introduces, for an item the paragraph that introduces its list, and for a paragraph the one right before it.
struct Piece {
    text: String,
    item: bool,
    block: Option<String>,
    introduced_by: Option<usize>,
    follows: Option<usize>,
}

/// The commands a command line runs: each pipeline stage's leading words (`cargo vendor` in
/// `` `cargo vendor {{path/to/directory}} > .cargo/config.toml` ``, `echo` and `argon2` in
/// `` `echo "{{password}}" | argon2 "{{salt}}"` ``), up to its first placeholder, option, quote or path.
fn command_words(text: &str) -> String {
    // A placeholder may hold a `|` of its own (`{{[-w|--wrap]}}`): it goes before the stages are cut, in one
    // pass over the line.
    let mut line = String::new();
    let mut rest = text.trim_matches('`');
    while let Some(start) = rest.find("{{") {
        line.push_str(&rest[..start]);
        line.push_str(" {} ");
        rest = rest[start + 2..].find("}}").map_or("", |end| &rest[start + 2 + end + 2..]);
    }
    line.push_str(rest);
    let plain = |word: &&str| {
        word.starts_with(|c: char| c.is_alphanumeric())
            && word.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
    };
    let mut words: Vec<&str> = Vec::new();
    for stage in line.split(" | ").flat_map(|stage| stage.split(" && ")) {
        words.extend(stage.split_whitespace().take_while(plain));
    }
    words.join(" ")
}

/// Whether a line is one inline code span and nothing else (`` `tar xf {{archive.tar}}` ``).
fn is_code_line(line: &str) -> bool {
    let inside = line.strip_prefix('`').and_then(|rest| rest.strip_suffix('`'));
    inside.is_some_and(|inside| !inside.is_empty() && !inside.contains('`'))
}

/// Whether a piece ends in a colon: it introduces the code block or list that follows it.
fn introduces_what_follows(piece: &Piece) -> bool {
    piece.text.trim_end().ends_with(':')
}

/// The fewest words a sentence has: fewer ("For example:", "Note:") say nothing of their own.
const SENTENCE_WORDS: usize = 3;

/// The pieces' sentences: prose cut, an item whole, each at least [`SENTENCE_WORDS`] words and kept once; a piece's block
/// goes with its last sentence, which ends in the colon that introduces it.
fn sentences_of(mut pieces: Vec<Piece>) -> Vec<Sentence> {
    // A paragraph that introduces no code gets its short list as its block: the items as the reader reads them.
    for at in 0..pieces.len() {
        if pieces[at].item || pieces[at].block.is_some() || !introduces_what_follows(&pieces[at]) {
            continue;
        }
        let items: Vec<String> = pieces[at + 1..]
            .iter()
            .take_while(|piece| piece.introduced_by == Some(at))
            .take(SHOWN_BLOCK_LINES + 1)
            .map(|piece| wiki::readable_excerpt(&piece.text))
            .collect();
        let bytes: usize = items.iter().map(|item| item.len() + 1).sum();
        if !items.is_empty() && items.len() <= SHOWN_BLOCK_LINES && bytes <= SHOWN_BLOCK_BYTES {
            pieces[at].block = Some(items.join("\n"));
        }
    }
    let mut out: Vec<Sentence> = Vec::new();
    // The sentence each piece said last, where it said one (its index in `out`).
    let mut last_said: Vec<Option<usize>> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        // "For example:" alone says nothing: the example it introduces goes below the sentence before it, which
        // the example shows ("To add a Git dependency source, prefix its URL with `git+`." above `uv add git+…`).
        if piece.block.is_some()
            && piece.text.split_whitespace().count() < SENTENCE_WORDS
            && introduces_what_follows(&piece)
        {
            let before = piece.follows.and_then(|at| last_said[at]).filter(|&said| out[said].block.is_none());
            if let Some(said) = before {
                out[said].block = piece.block;
            }
            last_said.push(None);
            continue;
        }
        let mut said = None;
        let mut split = if piece.item {
            vec![piece.text]
        } else {
            knowledge_queries::split_sentences(&piece.text).map(str::to_string).collect()
        };
        let last = split.pop();
        let split = split.into_iter().map(|text| (text, None)).chain(last.map(|text| (text, piece.block)));
        for (sentence, block) in split {
            let sentence = sentence.trim();
            if sentence.split_whitespace().count() >= SENTENCE_WORDS && !out.iter().any(|seen| seen.text == sentence) {
                out.push(Sentence { text: sentence.to_string(), block });
                said = Some(out.len() - 1);
            }
        }
        last_said.push(said);
    }
    out
}

/// Whether a fenced block's lines (its fences first and last) hold only placeholders for code kept elsewhere
/// (mdBook's `{{#rustdoc_include ../listings/…/main.rs}}`): the reader outside the book is shown no code.
fn only_placeholders(lines: &[String]) -> bool {
    let inside = lines.get(1..lines.len().saturating_sub(1)).unwrap_or_default();
    inside.iter().all(|line| line.trim().is_empty() || line.trim_start().starts_with("{{#"))
}

/// How many of a line's first `most` bytes are its indent: spaces and tabs, which are one byte each, so the
/// line cut there is cut between characters (another space, U+3000, is text).
fn indent_of(line: &str, most: usize) -> usize {
    line.bytes().take(most).take_while(|byte| matches!(byte, b' ' | b'\t')).count()
}

/// A line without the first `most` quote marks (`> `, `> > `) it starts with, its indent kept, and how many
/// it had: a code line starting with `>` (a prompt, a shift) inside no quote keeps it.
fn unquote(line: &str, most: usize) -> (&str, usize) {
    let mut rest = line;
    let mut marks = 0;
    while marks < most
        && let Some(inner) = rest.trim_start().strip_prefix('>')
    {
        rest = inner.strip_prefix(' ').unwrap_or(inner);
        marks += 1;
    }
    (rest, marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sentences of `text`, without the code they introduce.
    fn texts(text: &str) -> Vec<String> {
        sentences(text, false).into_iter().map(|sentence| sentence.text).collect()
    }

    /// The sentences of `text`, each with the block it shows below it.
    fn with_blocks(text: &str) -> Vec<(String, Option<String>)> {
        sentences(text, false).into_iter().map(|sentence| (sentence.text, sentence.block)).collect()
    }

    /// Adds to `pack` an excerpt like its first, at `reference`, holding `text`.
    fn add_excerpt(pack: &mut ContextPack, reference: &str, text: &str) {
        let mut excerpt = pack.items[0].clone();
        excerpt.reference = reference.into();
        excerpt.text = text.into();
        pack.items.push(excerpt);
    }

    /// The weights of a topic whose words each appear in 5 of 100 chunks.
    fn evenly_weighted(topic: &[&str]) -> terms::QueryStems {
        weighted(&topic.iter().map(|&word| (word, 5.0)).collect::<Vec<_>>())
    }

    /// The weights of a topic whose words each appear in the given number of 100 chunks.
    fn weighted(topic: &[(&str, f64)]) -> terms::QueryStems {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let words: Vec<String> = topic.iter().map(|(word, _)| word.to_string()).collect();
        let frequencies = |_: &[String]| Ok::<_, ()>(topic.iter().map(|&(_, chunks)| Some(chunks)).collect());
        terms::QueryStems::read_from(&stemmer, &words, 100.0, frequencies).expect("weights")
    }

    /// A pack of one excerpt whose cosine to the question is `cosine`, from a search whose semantic floor is
    /// `floor`.
    fn pack_of(text: &str, cosine: f64, floor: f64) -> ContextPack {
        let source = crate::store::ResultSource {
            uri: "file://src/ci.md".into(),
            path: "src/ci.md".into(),
            revision: "0".repeat(64),
            hash: "0".repeat(64),
            project: None,
        };
        let citation = crate::store::Citation { start_offset: 0, end_offset: 1, start_line: 1, end_line: 1 };
        let item = context::PackItem {
            reference: "file://src/ci.md@000000000000#L1-L1".into(),
            chunk_id: "c1".into(),
            title: "Installing mdBook".into(),
            text: text.into(),
            truncated: false,
            source,
            citation,
            tokens: 10,
            score: cosine,
            scores: Some(search::Scores {
                keyword: 1.0,
                bm25: 1.0,
                coverage: 0.1,
                semantic: Some(cosine),
                fused: None,
            }),
        };
        ContextPack {
            schema: context::SCHEMA.into(),
            schema_version: context::SCHEMA_VERSION,
            query: String::new(),
            intent: Vec::new(),
            items: vec![item],
            budget: context::Budget { max_tokens: 600, max_items: 6, used_tokens: 10, counting: "".into(), omitted: 0 },
            freshness: context::Freshness { index_run: None, index_built_at: None, all_current: true },
            permissions: String::new(),
            conflicts: Vec::new(),
            suggested_wiki_updates: Vec::new(),
            degraded: false,
            degraded_reason: None,
            semantic_floor: Some(floor),
        }
    }

    #[test]
    fn nearness_in_meaning_counts_above_the_searchs_semantic_floor() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let topic: Vec<String> = ["connect", "mdbook", "postgres", "database"].map(String::from).to_vec();
        // Of 100 chunks, 90 hold "mdbook"; the other words none.
        let frequencies = |words: &[String]| {
            Ok::<_, ()>(words.iter().map(|word| Some(if word == "mdbook" { 90.0 } else { 0.0 })).collect())
        };
        let weights = terms::QueryStems::read_from(&stemmer, &topic, 100.0, frequencies).expect("weights");
        let text = "Install mdbook in CI with the prebuilt binaries; it takes seconds.";
        let question = "connect mdbook to a postgres database";
        let near = draft(question, &pack_of(text, 0.59, 0.10), &weights);
        assert!(near.found, "an excerpt far nearer the question than an ordinary chunk answers: {}", near.answer);
        let ordinary = draft(question, &pack_of(text, 0.59, 0.46), &weights);
        assert!(!ordinary.found, "as near as the index's 20th nearest chunk is no evidence: {}", ordinary.answer);
    }

    /// An answer's sentences are shown as a reader reads them outside their file: no comment, no reference
    /// label, no relative link's target; a reference definition is no sentence.
    #[test]
    fn answers_show_sentences_without_markup_that_means_nothing_outside_their_file() {
        let weights = evenly_weighted(&["closure", "trait"]);
        let text = "Recall from [“Moving Captured Values”][moving]<!-- ignore --> that a closure takes one trait. \
                    See [the closures chapter](ch13-01-closures.md) for each closure trait.\n\n\
                    [moving]: ch13-01-closures.md#moving-captured-values-out-of-closures\n\n\
                    [^once]: See [closure traits][moving] once more.";
        let answer = draft("closure traits", &pack_of(text, 0.9, 0.1), &weights);
        assert!(answer.found);
        assert_eq!(
            answer.answer,
            "Recall from “Moving Captured Values” that a closure takes one trait. [1] \
             See the closures chapter for each closure trait. [1] See closure traits once more. [1]"
        );
    }

    /// A word running letters into digits holds its letters and its digits: `edition2021` answers for the
    /// "2021 edition", with no embeddings to make up for the word.
    #[test]
    fn a_word_running_letters_into_digits_holds_both() {
        let weights = weighted(&[("compile", 5.0), ("2021", 1.0), ("edition", 5.0)]);
        let text = "Individual code blocks can be compiled with the `edition2018` or `edition2021` annotations.";
        let mut pack = pack_of(text, 0.0, 0.0);
        pack.items[0].scores = None;
        let answer = draft("compile with the 2021 edition", &pack, &weights);
        assert!(answer.found, "{}", answer.answer);
        assert!(answer.answer.starts_with("Individual code blocks"), "{}", answer.answer);

        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let held = |text: &str| {
            let mut held: Vec<String> = held_stems(&stemmer, text).into_iter().collect();
            held.sort();
            held
        };
        assert_eq!(held("python3 editions"), ["3", "edit", "python", "python3"]);
        assert_eq!(
            held("3d x86_64 a1b"),
            ["3d", "64", "86", "a1b", "x", "x86"],
            "digits first or between letters: whole"
        );
    }

    /// A reference's item that defines its key answers for the key, ended with a stop or not; an overview's
    /// item naming a topic, a command alone or links alone do not.
    #[test]
    fn a_list_item_defining_its_term_answers_for_it() {
        let weights = evenly_weighted(&["author", "book"]);
        let text = "This is general information about your book.\n\n\
                    - **title:** The title of the book\n\
                    - **authors:** The author(s) of the book\n\
                    - **Build Command**: `npm run build` for the book\n\
                    - Books and their authors\n";
        let answer = draft("set the author names of the book", &pack_of(text, 0.9, 0.1), &weights);
        assert!(answer.answer.starts_with("- **authors:** The author(s) of the book [1]"), "{}", answer.answer);
        assert!(!answer.answer.contains("Books and their authors"), "{}", answer.answer);
        assert!(!answer.answer.contains("Build Command"), "{}", answer.answer);

        assert!(says_something("- `--open`: Opens the book in your browser"));
        assert!(says_something("* __src__: where the sources are found"));
        assert!(says_something("2. **build-dir:** The directory to put the rendered book in"), "an ordered item too");
        assert!(!says_something("- **Related:** [esbuild#symlinks](https://esbuild.github.io), [webpack](x)"));
        assert!(!says_something("- **Note:** see `x`"));
        assert!(!says_something("- **title** The title of the book"), "no colon: a bold phrase, no definition");
        assert_eq!(prose_words("a [b](c) `d e` [not a link and `f"), 5);
    }

    #[test]
    fn sentences_split_prose_and_lists_and_drop_code() {
        let text = "## Rules\n\nEach value has an owner. There is one owner at a time.\n\n- First rule here\n- Second rule here\n\n<Listing number=\"4-1\" caption=\"A variable and the scope in which it is valid\">\n\n```\ncode here now\n```\n\n</Listing>";
        assert_eq!(
            texts(text),
            ["Each value has an owner.", "There is one owner at a time.", "- First rule here", "- Second rule here"]
        );
    }

    #[test]
    fn code_across_blank_lines_quote_marks_and_wrapped_list_items() {
        let text = "Set it up for you:\n```bash\nbook/\n\nsrc/ holds the chapters now\n```\n\n~~~md\n```rust\nfn main() { let x = 5; }\n```\n~~~\n\n> [!NOTE]\n> A note \
                    in a quote.\n\n- **title:** The title\n  of the book.\n- **authors:** The author(s) of it.\n\n\
                    Each value has an owner.\n\nEach value has an owner.";
        assert_eq!(
            texts(text),
            [
                "Set it up for you:",
                "A note in a quote.",
                "- **title:** The title of the book.",
                "- **authors:** The author(s) of it.",
                "Each value has an owner.",
            ],
            "code is no sentence, a wrapped item is one line, a repeated sentence is kept once"
        );
    }

    #[test]
    fn a_fence_inside_a_quote_is_code() {
        let text = "> Run it so:\n>\n> ```sh\n> cargo run --release. It prints Done when it ends.\n> ```\n>\n> It builds the whole book.";
        assert_eq!(texts(text), ["Run it so:", "It builds the whole book."]);
    }

    #[test]
    fn a_quote_inside_a_quote_loses_both_marks() {
        let text = "> > [!NOTE]\n> > The boolean type acts similarly to an enumerated type.";
        assert_eq!(texts(text), ["The boolean type acts similarly to an enumerated type."]);
    }

    #[test]
    fn a_rule_id_line_is_no_part_of_the_sentence_after_it() {
        let text = "r[type.pointer.raw.intro]\nRaw pointers are pointers without safety or liveness guarantees.";
        assert_eq!(texts(text), ["Raw pointers are pointers without safety or liveness guarantees."]);
    }

    #[test]
    fn headings_are_no_sentences_and_prose_splits_at_questions_but_not_abbreviations() {
        let text = "<a id=\"new\"></a>\n### Creating a New Vector\n\nWhy use a vector? It grows, e.g. with `push`. Call \
                    `Vec::new` (see Listing 8-1). Then use it! The U.S. version is the same.";
        assert_eq!(
            texts(text),
            [
                "Why use a vector?",
                "It grows, e.g. with `push`.",
                "Call `Vec::new` (see Listing 8-1).",
                "Then use it!",
                "The U.S. version is the same."
            ]
        );
    }

    #[test]
    fn a_sentence_ending_in_a_colon_carries_the_short_block_it_introduces() {
        let text = "Rustdoc does not test a block marked so:\n\n```rust,ignore\nfn main() {}\n```\n\n\
                    Nor one in another language.\n```toml\n[book]\n```\n\n\
                    - Add it to the file:\n\n  ```toml\n  [output.html]\n    fold = true\n  ```\n\n\
                    > Quoted, it runs so:\n>\n> ```sh\n> > cargo run\n> ```\n\n\
                    A prompt is kept as it is written:\n\n```console\n> cargo run\n```\n\n\
                    A Rust example hides its boilerplate:\n\n```rust,ignore\n# fn add(x: i32) -> i32 { x }\n#\n#[test]\nlet three = add(3);\n```\n\n\
                    - An indent is cut at a character:\n\n  ```text\n\u{3000}wide\n  ```\n\n\
                    A long one is left out:\n\n```\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n```\n\n\
                    A listing kept elsewhere is no code to show:\n\n```rust\n{{#rustdoc_include ../listings/main.rs}}\n```\n\n\
                    The excerpt ends inside this one:\n\n```rust\nfn cut() {";
        let carried = with_blocks(text);
        let code = |block: &str| Some(block.to_string());
        assert_eq!(
            carried,
            [
                ("Rustdoc does not test a block marked so:".into(), code("```rust,ignore\nfn main() {}\n```")),
                ("Nor one in another language.".into(), None),
                ("- Add it to the file:".into(), code("```toml\n[output.html]\n  fold = true\n```")),
                ("Quoted, it runs so:".into(), code("```sh\n> cargo run\n```")),
                ("A prompt is kept as it is written:".into(), code("```console\n> cargo run\n```")),
                (
                    "A Rust example hides its boilerplate:".into(),
                    code("```rust,ignore\n#[test]\nlet three = add(3);\n```")
                ),
                ("- An indent is cut at a character:".into(), code("```text\n\u{3000}wide\n```")),
                ("A long one is left out:".into(), None),
                ("A listing kept elsewhere is no code to show:".into(), None),
                ("The excerpt ends inside this one:".into(), None),
            ]
        );
    }

    /// A tldr page: its description in a quote, then each example an item ending in a colon and a line of one
    /// inline code span. The command is no sentence; it is shown below the item that introduces it.
    #[test]
    fn a_line_of_inline_code_alone_is_the_example_its_item_introduces() {
        let page = "# tar\n\n> Archiving utility, often combined with `gzip`.\n\
                    > More information: <https://www.gnu.org/software/tar/manual/tar.html>.\n\n\
                    - E[x]tract a (compressed) archive [f]ile into the current directory:\n\n\
                    `tar xf {{path/to/source.tar[.gz|.bz2|.xz]}}`\n\n\
                    A paragraph that ends without a colon:\n\nnot code `this` line\n\n\
                    Two spans are prose: `a` and `b` together.\n\n`lone` `pair`\n\n\
                    - An item wrapped over a line of code alone, set to:\n  `https://example.com/{path}`\n  \
                    where the path is the page's.";
        assert_eq!(
            with_blocks(page),
            [
                ("Archiving utility, often combined with `gzip`.".into(), None),
                ("More information: <https://www.gnu.org/software/tar/manual/tar.html>.".into(), None),
                (
                    "- E[x]tract a (compressed) archive [f]ile into the current directory:".into(),
                    Some("`tar xf {{path/to/source.tar[.gz|.bz2|.xz]}}`".into())
                ),
                ("A paragraph that ends without a colon:".into(), None),
                ("not code `this` line".into(), None),
                ("Two spans are prose: `a` and `b` together.".into(), None),
                (
                    "- An item wrapped over a line of code alone, set to: `https://example.com/{path}` where the \
                     path is the page's."
                        .into(),
                    None
                ),
            ]
        );
    }

    /// A command's page answers with what it says, never with its address first nor a command line alone:
    /// "More information: <…>" sends the reader elsewhere and goes last, and an item answers with the example
    /// it introduces, whose command names the subject the item's words leave out.
    #[test]
    fn a_command_is_answered_by_its_examples_and_description_before_its_address() {
        let page = "> Vendor all dependencies of a project into the specified directory.\n\
                    > More information: <https://doc.rust-lang.org/cargo/commands/cargo-vendor.html>.\n\n\
                    - Copy what a project uses into a directory:\n\n`cargo vendor {{path/to/directory}}`";
        let weights = evenly_weighted(&["cargo", "vendor"]);
        let answer = draft("what does cargo vendor do", &pack_of(page, 0.9, 0.1), &weights);
        assert_eq!(
            answer.answer,
            "- Copy what a project uses into a directory: [1]\n\n`cargo vendor {{path/to/directory}}`\n\n\
             Vendor all dependencies of a project into the specified directory. [1] \
             More information: <https://doc.rust-lang.org/cargo/commands/cargo-vendor.html>. [1]"
        );
    }

    /// MkDocs' content tabs and admonitions: the first tab's block is the one the sentence introducing the tabs
    /// shows, and an admonition's opening line is markup, no sentence (its indented text is).
    #[test]
    fn the_first_content_tab_is_the_example_its_sentence_introduces() {
        let page = "Install uv with the standalone installer:\n\n=== \"macOS and Linux\"\n\n    ```console\n    \
                    $ curl -LsSf https://astral.sh/uv/install.sh | sh\n    ```\n\n=== \"Windows\"\n\n    ```pwsh-session\n    \
                    PS> irm https://astral.sh/uv/install.ps1 | iex\n    ```\n\n!!! tip \"Other ways\"\n\n    \
                    uv may also be installed with pip, Homebrew, and more.";
        assert_eq!(
            with_blocks(page),
            [
                (
                    "Install uv with the standalone installer:".into(),
                    Some("```console\n$ curl -LsSf https://astral.sh/uv/install.sh | sh\n```".into())
                ),
                ("uv may also be installed with pip, Homebrew, and more.".into(), None),
            ]
        );
    }

    /// VitePress' containers: a code group's first block is the example its sentence introduces, a tip's opening
    /// line is no part of the tip's sentence, a closing `:::` and a file's imported code (`<<< ./file`) are no
    /// sentences.
    #[test]
    fn vitepress_containers_and_imports_are_markup() {
        let page = "In your project, you can install the `vite` CLI using:\n\n::: code-group\n\n```bash [npm]\n$ npm install -D vite\n```\n\n\
                    ```bash [Yarn]\n$ yarn add -D vite\n```\n\n:::\n\n:::tip Note\nIf you serve the HTML from a backend, use an integration.\n:::\n\n\
                    <<< ./static-deploy-github-pages.yaml#content .github/workflows/deploy.yml";
        assert_eq!(
            with_blocks(page),
            [
                (
                    "In your project, you can install the `vite` CLI using:".into(),
                    Some("```bash [npm]\n$ npm install -D vite\n```".into())
                ),
                ("If you serve the HTML from a backend, use an integration.".into(), None),
            ]
        );
    }

    /// MDX's markup: an import, a comment to editors and a component's tags are no sentences, and a sentence over
    /// `<Tabs>` introduces the first tab's block, as a sentence over a list wrapped in `<Steps>` introduces it.
    #[test]
    fn mdx_components_are_markup_and_wrap_what_their_sentence_introduces() {
        let page = "import { Tabs, TabItem } from '@astrojs/starlight/components';\n\n{/* prettier-ignore */}\n\
                    Install the plugin with your package manager:\n\n<Tabs>\n  <TabItem label=\"npm\">\n    ```sh\n    \
                    npm run tauri add notification\n    ```\n  </TabItem>\n  <TabItem label=\"cargo\">\n    ```sh\n    \
                    cargo tauri add notification\n    ```\n  </TabItem>\n</Tabs>\n\nFollow these steps to send a notification:\n\n\
                    <Steps>\n1. Check if permission is granted\n2. Send the notification\n</Steps>";
        assert_eq!(
            with_blocks(page),
            [
                (
                    "Install the plugin with your package manager:".into(),
                    Some("```sh\nnpm run tauri add notification\n```".into())
                ),
                (
                    "Follow these steps to send a notification:".into(),
                    Some("1. Check if permission is granted\n2. Send the notification".into())
                ),
                ("1. Check if permission is granted".into(), None),
                ("2. Send the notification".into(), None),
            ]
        );
        let weights = evenly_weighted(&["send", "notif"]);
        let answer = draft("send a notification", &pack_of(page, 0.9, 0.1), &weights);
        assert!(answer.answer.contains("1. Check if permission is granted"), "{}", answer.answer);
        assert!(!answer.answer.contains("import") && !answer.answer.contains('<'), "{}", answer.answer);
    }

    /// One announcement repeated for each release ("… play with Vite 4", "… play with Vite 5") is said once.
    #[test]
    fn a_sentence_repeated_with_other_numbers_is_said_once() {
        let page = "Use `pnpm create vite` to scaffold a project, or play with Vite 4 online.\n\n\
                    Use `pnpm create vite` to scaffold a project, or play with Vite 5 online.\n\n\
                    A project is scaffolded from a template.";
        let weights = evenly_weighted(&["scaffold", "project"]);
        let answer = draft("scaffold a project", &pack_of(page, 0.9, 0.1), &weights);
        assert_eq!(answer.answer.matches("Use `pnpm create vite`").count(), 1, "{}", answer.answer);
        assert!(answer.answer.contains("A project is scaffolded"), "{}", answer.answer);
    }

    /// "For example:" alone says nothing: its example goes below the sentence right before it, unless that
    /// sentence shows a block of its own or a heading stands between them.
    #[test]
    fn a_bare_for_example_gives_its_example_to_the_sentence_before_it() {
        let page = "To add a Git source, prefix its URL with `git+`.\n\nFor example:\n\n```console\n$ uv add git+https://x\n```\n\n\
                    ## Paths\n\nFor example:\n\n```console\n$ uv add ./path\n```\n\n\
                    Run this first:\n\n```console\n$ uv init\n```\n\nFor example:\n\n```console\n$ uv sync\n```";
        assert_eq!(
            with_blocks(page),
            [
                (
                    "To add a Git source, prefix its URL with `git+`.".into(),
                    Some("```console\n$ uv add git+https://x\n```".into())
                ),
                ("Run this first:".into(), Some("```console\n$ uv init\n```".into())),
            ]
        );
    }

    /// Two sentences that introduce the same example (two pages say one thing before one block): the example is
    /// shown once, below the better sentence.
    #[test]
    fn an_example_introduced_twice_is_shown_once() {
        let page = "To constrain the lockfile to Linux, exclude Windows:\n\n```toml\nenvironments = [\"linux\"]\n```\n\n\
                    To constrain the lockfile to Linux and avoid solving for Windows:\n\n```toml\nenvironments = [\"linux\"]\n```\n\n\
                    A lockfile is solved for every platform unless constrained.";
        let weights = evenly_weighted(&["constrain", "lockfile", "linux", "windows"]);
        let answer = draft("constrain the lockfile to linux, not windows", &pack_of(page, 0.9, 0.1), &weights);
        assert_eq!(answer.answer.matches("environments = ").count(), 1, "{}", answer.answer);
        assert!(answer.answer.contains("A lockfile is solved"), "{}", answer.answer);
    }

    /// A word of quantity frames a question as "versus" does: "several packages in one repository" is about
    /// packages and a repository, and a sentence holding "several" alone ("`uv sync` has several flags") is
    /// no nearer it.
    #[test]
    fn words_of_quantity_name_no_topic() {
        let intent: Vec<String> =
            ["several", "packages", "repository", "multiple", "various"].iter().map(|word| word.to_string()).collect();
        assert_eq!(topic_terms(&intent), ["packages", "repository"]);
    }

    /// A pack of two excerpts, `first` ranked above `second`.
    fn pack_of_two(first: &str, second: &str) -> ContextPack {
        let mut pack = pack_of(first, 0.9, 0.1);
        let mut item = pack.items[0].clone();
        item.text = second.into();
        item.reference = "file://src/ci.md@000000000000#L2-L2".into();
        pack.items.push(item);
        pack
    }

    /// A sentence of a lower-ranked excerpt leads only when it holds clearly more of the topic: the search
    /// ranked the excerpts by meaning as well as words.
    #[test]
    fn a_lower_excerpts_sentence_leads_only_by_a_margin() {
        let weights = weighted(&[("use", 60.0), ("redux", 30.0), ("typescript", 5.0)]);
        let question = "how do I use redux with typescript";
        let pack = pack_of_two("Redux Toolkit is written in TypeScript.", "This course uses Redux and TypeScript.");
        let answer = draft(question, &pack, &weights);
        assert!(answer.answer.starts_with("Redux Toolkit is written in TypeScript. [1]"), "{}", answer.answer);
        let pack = pack_of_two("TypeScript checks types.", "This course uses Redux and TypeScript.");
        let answer = draft(question, &pack, &weights);
        assert!(answer.answer.starts_with("This course uses Redux and TypeScript. [1]"), "{}", answer.answer);
    }

    /// A question the text asks itself is no answer; the statements around it are.
    #[test]
    fn a_question_in_the_text_is_no_answer() {
        let text = "So, if we can't put side effects in reducers, where can we put them? \
                    Side effects belong in middleware such as thunks.";
        let weights = evenly_weighted(&["put", "side", "effects"]);
        let answer = draft("where should I put side effects", &pack_of(text, 0.9, 0.1), &weights);
        assert!(answer.found, "{}", answer.answer);
        assert_eq!(answer.answer, "Side effects belong in middleware such as thunks. [1]");
        let only_a_question = "Where can we put side effects?";
        let answer = draft("where should I put side effects", &pack_of(only_a_question, 0.9, 0.1), &weights);
        assert!(!answer.found, "{}", answer.answer);
    }

    /// Pronouns and quantifiers name no topic; verbs do, however light ("lets readers edit"), and negation, and
    /// a question of nothing else keeps its words.
    #[test]
    fn closed_class_words_name_no_topic() {
        let terms = |words: &[&str]| -> Vec<String> { words.iter().map(|word| word.to_string()).collect() };
        let intent = terms(&["count", "many", "people", "read", "each", "chapter"]);
        assert_eq!(topic_terms(&intent), ["count", "people", "read", "chapter"]);
        let intent = terms(&["code", "example", "not", "supposed", "tested", "skip", "them", "let", "show"]);
        assert_eq!(topic_terms(&intent), ["code", "example", "not", "supposed", "tested", "skip", "let", "show"]);
        assert_eq!(topic_terms(&terms(&["each", "one"])), ["each", "one"]);
    }

    #[test]
    fn a_code_line_is_one_inline_span_and_nothing_else() {
        for line in ["`tar xf {{archive.tar}}`", "`a`"] {
            assert!(is_code_line(line), "{line}");
        }
        for line in ["`", "``", "```", "```rust", "`a` and `b`", "`a` b", "a `b`", "``a``"] {
            assert!(!is_code_line(line), "{line}");
        }
    }

    /// A command line's command, stage by stage, without its placeholders, options, quotes and paths.
    #[test]
    fn a_command_line_names_the_commands_it_runs() {
        assert_eq!(command_words("`cargo vendor {{path/to/directory}} > .cargo/config.toml`"), "cargo vendor");
        assert_eq!(command_words("`echo \"{{password}}\" | argon2 \"{{salt_text}}\"`"), "echo argon2");
        assert_eq!(command_words("`base64 {{[-w|--wrap]}} {{0|76|...}} {{path/to/file}}`"), "base64");
        assert_eq!(command_words("`acme.sh --issue --standalone`"), "acme.sh");
        assert_eq!(command_words("`make && sudo make install`"), "make sudo make install");
        assert_eq!(command_words("`llm {{[-m|--model]}} {{orca}} \"{{What is the capital of France?}}\"`"), "llm");
    }

    /// Without embeddings, a question whose words an excerpt holds only in an example's arguments is not
    /// answered from it: neither the example's item nor the excerpt's first sentence says anything about it.
    #[test]
    fn words_only_a_commands_arguments_hold_answer_nothing_without_embeddings() {
        let page = "> Interact with language models from the command line.\n\n\
                    - Run a prompt with a model:\n\n`llm {{[-m|--model]}} {{orca}} \"{{What is the capital of France?}}\"`";
        let mut pack = pack_of(page, 0.0, 0.0);
        pack.items[0].scores.as_mut().expect("scores").semantic = None;
        let answer = draft("what is the capital of france", &pack, &evenly_weighted(&["capital", "france"]));
        assert!(!answer.found, "{}", answer.answer);
        // With the topic in its title the excerpt is about it, and its first sentence answers.
        pack.items[0].title = "France".into();
        let answer = draft("what is the capital of france", &pack, &evenly_weighted(&["capital", "france"]));
        assert_eq!(answer.answer, "Interact with language models from the command line. [1]");
    }

    /// An answer's sentence that introduces code is followed by it, on lines of its own after its citation.
    #[test]
    fn an_answer_shows_the_code_its_sentence_introduces() {
        let weights = evenly_weighted(&["skip", "test"]);
        let text =
            "To skip a test, mark its block so:\n\n```rust,ignore\nfn main() {}\n```\n\nA skipped test is not run.";
        let answer = draft("skip a test", &pack_of(text, 0.9, 0.1), &weights);
        assert_eq!(
            answer.answer,
            "To skip a test, mark its block so: [1]\n\n```rust,ignore\nfn main() {}\n```\n\nA skipped test is not run. [1]"
        );
    }

    /// A generated page's sentences are its quotes and its prose: the lines that name a quote's source (its
    /// heading, the lead's `From [Compost](…)`, the footnotes) are no answer, as the Rust Reference's "what is
    /// linkage" was answered with "**Linkage**, lines 38–38".
    #[test]
    fn a_pages_attribution_lines_are_no_sentences() {
        let page = include_str!("../../../golden/wiki/expected/wiki/garden/compost.md");
        let body = &page[page.find("\n# ").expect("a title")..];
        let prose = |page: bool| -> Vec<String> {
            sentences(body, page).into_iter().map(|s| s.text).filter(|s| !starts_list_item(s)).collect()
        };
        assert_eq!(
            prose(true),
            [
                "**Compost** is decomposed organic matter that gardeners add to [[soil]] to feed it.",
                "Coffee grounds and eggshells break down quickly; meat and dairy do not belong there.",
                "Healthy soil holds water and air.",
                "Mixing in [[compost]] and leaf mould improves it, as the kitchen scraps note explains.",
            ]
        );
        assert!(
            prose(false).iter().any(|s| s.starts_with("**[Kitchen scraps]")),
            "a source's line of that shape is text"
        );
    }

    /// A page quoting a source repeats its words: the answer says a sentence once, citing where it ranks best.
    #[test]
    fn a_sentence_two_excerpts_hold_is_said_once() {
        let weights = evenly_weighted(&["notation"]);
        let mut pack = pack_of("The following notations are used by the grammar.", 0.9, 0.1);
        let quoting = "> The following notations are used by the grammar.\n\nA notation names a rule.";
        add_excerpt(&mut pack, "knowledge://wiki/notation@000000000000#L1-L1", quoting);
        let answer = draft("notation", &pack, &weights);
        assert_eq!(answer.answer, "The following notations are used by the grammar. [1] A notation names a rule. [2]");
    }

    /// Chunks overlap, so the next chunk may start inside a sentence the one before holds whole: the piece is
    /// no sentence of its own, and the whole one is said once, wherever either ranks.
    #[test]
    fn a_sentence_cut_where_a_chunk_begins_is_said_whole_once() {
        let weights = evenly_weighted(&["cons", "list", "recursive"]);
        let whole = "Recursive types are rare, but by starting with the cons list we explore boxes.";
        let piece = "but by starting with the cons list we explore boxes.";
        for (first, second) in [(whole, piece), (piece, whole)] {
            let mut pack = pack_of(&format!("{first} A cons list is recursive."), 0.9, 0.1);
            add_excerpt(&mut pack, "file://b.md@000000000000#L1-L1", second);
            let answer = draft("a recursive cons list", &pack, &weights);
            assert_eq!(answer.answer.matches("we explore boxes").count(), 1, "{}", answer.answer);
            assert!(answer.answer.contains(whole), "{}", answer.answer);
        }
        // A list item holding two sentences chosen before it: it is said once, in their place.
        let weights = evenly_weighted(&["cons"]);
        let mut pack = pack_of("A cons list is short and recursive. Each cons cell holds a box.", 0.9, 0.1);
        add_excerpt(
            &mut pack,
            "file://b.md@000000000000#L1-L1",
            "- A cons list is short and recursive. Each cons cell holds a box.",
        );
        let answer = draft("cons", &pack, &weights);
        assert_eq!(answer.answer.matches("Each cons cell holds a box.").count(), 1, "{}", answer.answer);
        assert_eq!(answer.answer.matches("short and recursive").count(), 1, "{}", answer.answer);
    }

    /// A sentence that sends the reader elsewhere comes after one that says something itself, whatever its share.
    #[test]
    fn a_sentence_that_points_elsewhere_comes_last() {
        let weights = evenly_weighted(&["preprocessor", "markdown", "plugin"]);
        let text = "See the plugin page for each preprocessor that changes markdown. \
                    A preprocessor changes the markdown before it is rendered.";
        let answer = draft("a plugin that changes the markdown", &pack_of(text, 0.9, 0.1), &weights);
        assert_eq!(
            answer.answer,
            "A preprocessor changes the markdown before it is rendered. [1] \
             See the plugin page for each preprocessor that changes markdown. [1]"
        );
    }

    /// "What is X" is answered with the sentence that defines X, wherever it stands and however much of the
    /// topic the others hold.
    #[test]
    fn a_question_of_what_something_is_is_answered_by_its_definition_first() {
        // "pattern" is a common word of the book, "refutable" a rare one: the subject.
        let weights = weighted(&[("refutable", 2.0), ("pattern", 40.0)]);
        let text = "Now that you know refutable and irrefutable patterns, let's cover pattern syntax. \
                    Patterns that can fail to match for some possible value are _refutable_.";
        let definition = "Patterns that can fail to match for some possible value are _refutable_. [1]";
        let answer = draft("what is a refutable pattern", &pack_of(text, 0.9, 0.1), &weights);
        assert!(answer.answer.starts_with(definition), "{}", answer.answer);
        // Asked another way, the sentence holding more of the topic leads, as before.
        let answer = draft("when is a refutable pattern used", &pack_of(text, 0.9, 0.1), &weights);
        assert!(answer.answer.starts_with("Now that you know"), "{}", answer.answer);
    }

    #[test]
    fn a_definition_names_the_whole_subject_in_emphasis_or_before_its_verb() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let weights = evenly_weighted(&["trait", "objects"]);
        let subject = subject_stems(&weights);
        let defines = |sentence: &str| defines(sentence, &weights, &subject, &stemmer);
        assert!(defines("A *trait object* is an opaque value of another type."));
        assert!(defines("We call such a value a _trait object_."));
        assert!(defines("Trait objects are unsized."));
        assert!(!defines("The trait is known as the implemented trait."), "half the subject");
        assert!(!defines("Dynamic trait objects are unsized."), "a word the question does not use");
        assert!(!defines("Because trait objects are unsized, they sit behind a pointer."));
        assert!(!defines("What use are *trait objects*?"), "a question");
        assert!(!defines("A *trait object* is a value that’s"), "cut where its chunk ends");
        assert!(!defines("Trait objects have the same layout as the value."), "no verb that defines");
    }

    #[test]
    fn questions_of_what_something_is_or_means() {
        for asked in [
            "what is ownership",
            "What are the ownership rules?",
            "what's a crate",
            "what’s a crate",
            "define shadowing",
        ] {
            assert!(asks_for_a_definition(asked), "{asked}");
        }
        assert!(asks_for_a_definition("what does the 'static lifetime mean?"));
        for asked in ["what does the question mark operator do", "how is ownership checked", "is it safe"] {
            assert!(!asks_for_a_definition(asked), "{asked}");
        }
    }

    /// A sentence that introduces a short list shows it, as a reader reads it, and its items are not said again.
    #[test]
    fn a_sentence_ending_in_a_colon_shows_the_short_list_it_introduces() {
        let text = "The built-in derives are:\n\n- [`Clone`](clone.md), which copies a value\n- `Copy`\n\n\
                    Derives run in order.\n\n- Not introduced by a colon, this list stays apart";
        let carried = with_blocks(text);
        assert_eq!(
            carried[0],
            ("The built-in derives are:".into(), Some("- `Clone`, which copies a value\n- `Copy`".into()))
        );
        assert!(carried.contains(&("Derives run in order.".into(), None)), "no list follows it");
        assert!(carried.contains(&("- Not introduced by a colon, this list stays apart".into(), None)));
        let long = format!("Fifteen items follow here:\n{}", "- an item of the list\n".repeat(15));
        assert_eq!(sentences(&long, false)[0].block, None, "a list of more than 14 items is not shown");
        let weights = evenly_weighted(&["derive", "clone"]);
        let answer = draft("derive clone", &pack_of(text, 0.9, 0.1), &weights);
        assert_eq!(
            answer.answer,
            "The built-in derives are: [1]\n\n- `Clone`, which copies a value\n- `Copy`\n\nDerives run in order. [1]"
        );
    }
}
