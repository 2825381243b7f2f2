//! `knowledge ask`: a context pack turned into an extractive, cited draft answer. No model writes
//! anything: the answer is sentences of the knowledge base itself, each with the citation of the excerpt
//! it comes from, and a question nothing answers gets "Not found in the knowledge base." instead of a guess.

use rusqlite::Connection;
use serde::Serialize;

use crate::retrieval::access::Access;
use crate::retrieval::context::{self, ContextPack};
use crate::retrieval::{search, terms};

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
    answer_in(&mut search::SqliteIndex { conn }, question, max_tokens, access)
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
    let pack = context::pack_in(index, question, max_tokens, 6, access)?;
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    // Words that ask for an overview ("everything about lifetimes") frame the question; they are not what
    // an answer must hold.
    let content: Vec<String> =
        pack.intent.iter().filter(|t| !search::OVERVIEW_WORDS.contains(&t.as_str())).cloned().collect();
    let total = index.chunk_total()?;
    let asked = if content.is_empty() { &pack.intent } else { &content };
    let weights = terms::QueryStems::read_from(&stemmer, asked, total, |words| index.word_frequencies(words))?;
    Ok(draft(question, &pack, &weights))
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

/// The sentences that hold the most of the question's words, weighted by rarity (at least half the
/// weight), best first, in the order of the pack's excerpts on ties. Weighting is what lets a question
/// about something the knowledge base never mentions come back not found: "the capital of France" holds
/// one common word the Rust book has ("capital") and one it never uses, which outweighs it.
fn draft(question: &str, pack: &ContextPack, weights: &terms::QueryStems) -> Answer {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let mut candidates: Vec<(f64, usize, usize, String)> = Vec::new();
    for (item, excerpt) in pack.items.iter().enumerate() {
        for (at, sentence) in sentences(&excerpt.text).into_iter().enumerate() {
            let words: std::collections::HashSet<String> = terms::stems(&stemmer, &sentence).into_iter().collect();
            let covered = weights.coverage(|stem| words.contains(stem));
            if covered >= 0.5 {
                candidates.push((covered, item, at, sentence));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    candidates.truncate(MAX_SENTENCES);
    let mut citations: Vec<AnswerCitation> = Vec::new();
    let mut parts = Vec::new();
    for (_, item, _, sentence) in candidates {
        let excerpt = &pack.items[item];
        let n = match citations.iter().find(|c| c.reference == excerpt.reference) {
            Some(citation) => citation.n,
            None => {
                citations.push(AnswerCitation::of(citations.len() + 1, excerpt));
                citations.len()
            }
        };
        parts.push(format!("{sentence} [{n}]"));
    }
    if parts.is_empty() {
        return not_found(question, pack.items.len());
    }
    Answer {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        question: question.to_string(),
        found: true,
        answer: parts.join(" "),
        citations,
        run_id: None,
        excerpts_considered: pack.items.len(),
        sentences: None,
        generated: None,
    }
}

/// An excerpt's sentences and list items, on one line each, without Markdown heading marks.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let block = block.trim();
        // Code, headings (a title is no answer), and HTML tags standing alone (the Rust book's
        // `<Listing number="8-6" caption="…">`) are no sentences.
        let html_tag = block.starts_with('<') && block.ends_with('>') && !block.contains('\n');
        if block.is_empty() || block.starts_with("```") || html_tag {
            continue;
        }
        let tag = |line: &str| line.starts_with('<') && line.ends_with('>');
        let lines: Vec<&str> = block.lines().filter(|l| !l.trim_start().starts_with('#') && !tag(l.trim())).collect();
        if lines.is_empty() {
            continue;
        }
        let listed = lines.iter().all(|l| l.trim_start().starts_with(['-', '*', '|']));
        let pieces: Vec<String> = if listed {
            lines.iter().map(|l| l.trim().to_string()).collect()
        } else {
            let flat = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
            split_sentences(&flat)
        };
        for piece in pieces {
            let piece = piece.trim().to_string();
            if piece.split_whitespace().count() >= 3 {
                out.push(piece);
            }
        }
    }
    out
}

/// Abbreviations a sentence does not end at.
const ABBREVIATIONS: [&str; 8] = ["e.g.", "i.e.", "etc.", "vs.", "cf.", "Mr.", "Dr.", "No."];

/// Prose cut into sentences: after `.`, `?` or `!` (closing quotes and brackets kept with it) and a space,
/// when the next word starts as a sentence does (a capital, a digit, a quote, a bracket or code) and the
/// word before is not an abbreviation or an initial.
fn split_sentences(prose: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let bytes = prose.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if matches!(bytes[at], b'.' | b'?' | b'!') {
            let mut end = at + 1;
            while end < bytes.len() && matches!(bytes[end], b'"' | b'\'' | b')' | b']' | b'*' | b'_') {
                end += 1;
            }
            let next = prose[end..].strip_prefix(' ').and_then(|rest| rest.chars().next());
            let starts_sentence =
                next.is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || "\"'`([*_“‘".contains(c));
            let word = prose[start..end].rsplit(' ').next().unwrap_or_default();
            let abbreviation = ABBREVIATIONS.contains(&word)
                || (bytes[at] == b'.' && word.len() == 2 && word.starts_with(|c: char| c.is_uppercase()));
            if starts_sentence && !abbreviation {
                pieces.push(prose[start..end].to_string());
                start = end + 1;
                at = start;
                continue;
            }
        }
        at += 1;
    }
    if start < prose.len() {
        pieces.push(prose[start..].to_string());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_prose_and_lists_and_drop_code() {
        let text = "## Rules\n\nEach value has an owner. There is one owner at a time.\n\n- First rule here\n- Second rule here\n\n<Listing number=\"4-1\" caption=\"A variable and the scope in which it is valid\">\n\n```\ncode here now\n```\n\n</Listing>";
        assert_eq!(
            sentences(text),
            ["Each value has an owner.", "There is one owner at a time.", "- First rule here", "- Second rule here"]
        );
    }

    #[test]
    fn headings_are_no_sentences_and_prose_splits_at_questions_but_not_abbreviations() {
        let text = "<a id=\"new\"></a>\n### Creating a New Vector\n\nWhy use a vector? It grows, e.g. with `push`. Call \
                    `Vec::new` (see Listing 8-1). Then use it! The U.S. version is the same.";
        assert_eq!(
            sentences(text),
            [
                "Why use a vector?",
                "It grows, e.g. with `push`.",
                "Call `Vec::new` (see Listing 8-1).",
                "Then use it!",
                "The U.S. version is the same."
            ]
        );
    }
}
