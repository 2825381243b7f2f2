//! `knowledge ask --generate`: a provider writes the answer from a context pack, and every sentence's
//! citations are checked mechanically: each `[n]` must name an excerpt of the pack, and the sentence must
//! share most of its words with one excerpt it cites. A sentence that fails is marked unsupported, never
//! passed off as cited.

use knowledge_queries::citations;
use rusqlite::Connection;
use serde::Serialize;

use crate::providers::{Generation, Prompt, Provider, ProviderError};
use crate::retrieval::access::Access;
use crate::retrieval::ask::{self, Answer, AnswerCitation, NOT_FOUND};
use crate::retrieval::context::{self, ContextPack};

/// What every provider is told. The excerpts follow in the message, numbered as the answer cites them.
pub const INSTRUCTIONS: &str = "Answer the question using only the numbered excerpts below. End every sentence \
with the numbers of the excerpts that support it, in square brackets, like [1] or [1][3]. Do not add anything \
the excerpts do not say. If the excerpts do not answer the question, reply exactly: Not found in the knowledge base.";

/// Output tokens a generated answer may use.
const MAX_OUTPUT_TOKENS: u32 = 800;

/// A sentence of a generated answer, as checked.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CheckedSentence {
    pub text: String,
    /// The excerpts it cites, by their number in the pack.
    pub cites: Vec<usize>,
    pub supported: bool,
    /// Why it is not supported.
    pub problem: Option<String>,
}

/// Who wrote the answer and what it cost.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct GenerationInfo {
    pub provider: String,
    pub kind: std::borrow::Cow<'static, str>,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// From the provider's `prices` in kc.toml, when it has them.
    pub cost_usd: Option<f64>,
}

/// Why a generated answer could not be made.
#[derive(Debug, thiserror::Error)]
pub enum GenerationError {
    /// The context pack could not be read from the index.
    #[error(transparent)]
    Index(#[from] rusqlite::Error),
    /// The context pack could not be read from the Postgres store.
    #[error("{}", crate::error_chain(.0))]
    Store(#[from] crate::retrieval::search::StoreReadError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// Answers `question` with `provider` from the pack of what `access` may read; `delta` gets the text as the
/// model writes it. A pack with no excerpt is answered "not found" without calling anyone.
pub fn answer(
    conn: &Connection,
    question: &str,
    max_tokens: usize,
    access: &Access,
    provider: &Provider,
    model: Option<&str>,
    delta: &mut dyn FnMut(&str),
) -> Result<Answer, GenerationError> {
    let pack = context::pack(conn, question, max_tokens, ANSWER_ITEMS, access)?;
    answer_from(&pack, question, provider, model, delta)
}

/// [`answer`] from the pack of `projects` in the Postgres store, as `principal` may read them.
#[allow(clippy::too_many_arguments)]
pub fn answer_postgres(
    store: &mut crate::store::postgres::PgStore,
    projects: &[String],
    question: &str,
    max_tokens: usize,
    principal: Option<&str>,
    provider: &Provider,
    model: Option<&str>,
    delta: &mut dyn FnMut(&str),
) -> Result<Answer, GenerationError> {
    let pack = context::pack_postgres(store, projects, question, max_tokens, ANSWER_ITEMS, principal)?;
    answer_from(&pack, question, provider, model, delta)
}

/// The most excerpts a generated answer's pack holds.
pub const ANSWER_ITEMS: usize = 8;

/// The provider's answer from `pack` (of at most [`ANSWER_ITEMS`] excerpts), checked; "not found" without
/// calling anyone when the pack is empty. A caller that reads the pack in a transaction (the server) ends
/// it first: the model takes seconds, and a read held that long keeps the index's log from being
/// checkpointed.
pub fn answer_from(
    pack: &ContextPack,
    question: &str,
    provider: &Provider,
    model: Option<&str>,
    delta: &mut dyn FnMut(&str),
) -> Result<Answer, GenerationError> {
    let model = provider.model_for(model).to_string();
    if pack.items.is_empty() {
        let mut answer = ask::not_found(question, 0);
        answer.sentences = Some(Vec::new());
        return Ok(answer);
    }
    let input = prompt_input(question, pack);
    let prompt =
        Prompt { instructions: INSTRUCTIONS, input: &input, max_output_tokens: MAX_OUTPUT_TOKENS, temperature: None };
    let generation = provider.generate(Some(&model), &prompt, delta)?;
    Ok(checked(question, pack, provider, &model, &generation))
}

/// The user's message: the question, then each excerpt with its number, title and ref.
fn prompt_input(question: &str, pack: &ContextPack) -> String {
    let mut input = format!("Question: {question}\n\nExcerpts:\n");
    for (n, item) in pack.items.iter().enumerate() {
        input.push_str(&format!("\n[{}] {} ({})\n{}\n", n + 1, item.title, item.reference, item.text.trim()));
    }
    input
}

/// The answer as checked against the pack.
fn checked(question: &str, pack: &ContextPack, provider: &Provider, model: &str, generation: &Generation) -> Answer {
    let info = GenerationInfo {
        provider: provider.name.clone(),
        kind: provider.kind.as_str().into(),
        model: model.to_string(),
        input_tokens: generation.input_tokens,
        output_tokens: generation.output_tokens,
        cost_usd: provider.cost(generation.input_tokens, generation.output_tokens),
    };
    let text = generation.text.trim();
    if replied_not_found(text) {
        let mut answer = ask::not_found(question, pack.items.len());
        answer.sentences = Some(Vec::new());
        answer.generated = Some(info);
        return answer;
    }
    // An answer ships only when it can say where it came from: a reply with no sentence the excerpts
    // support (a small model's `[3][4]`, citation marks alone, or a paragraph that cites nothing the pack
    // holds) is not found, its sentences kept with what is wrong with each.
    let sentences = check(text, pack);
    if !sentences.iter().any(|sentence| sentence.supported) {
        let mut answer = ask::not_found(question, pack.items.len());
        answer.sentences = Some(sentences);
        answer.generated = Some(info);
        return answer;
    }
    let mut cited: Vec<usize> = sentences.iter().flat_map(|s| s.cites.iter().copied()).collect();
    cited.sort_unstable();
    cited.dedup();
    let citations =
        cited.into_iter().filter_map(|n| Some(AnswerCitation::of(n, pack.items.get(n.checked_sub(1)?)?))).collect();
    Answer {
        schema: ask::SCHEMA.into(),
        schema_version: ask::SCHEMA_VERSION,
        question: question.to_string(),
        found: true,
        answer: text.to_string(),
        citations,
        run_id: None,
        excerpts_considered: pack.items.len(),
        sentences: Some(sentences),
        generated: Some(info),
    }
}

/// Whether a model's reply is the "not found" the instructions ask for (a trailing stop or more words after
/// it aside): the answer is then not found by the model's own word, not for want of a supported sentence.
#[must_use]
pub fn replied_not_found(reply: &str) -> bool {
    reply.trim().starts_with(NOT_FOUND.trim_end_matches('.'))
}

/// Splits a generated answer into sentences and checks each one's citations against the pack, by the rule
/// the wiki writer's pages are checked with (`knowledge_queries::citations`).
#[must_use]
pub fn check(text: &str, pack: &ContextPack) -> Vec<CheckedSentence> {
    let excerpts: Vec<&str> = pack.items.iter().map(|item| item.text.as_str()).collect();
    citations::check_sentences(text, &excerpts)
        .into_iter()
        .map(|sentence| CheckedSentence {
            supported: sentence.supported(),
            text: sentence.text,
            cites: sentence.cites,
            problem: sentence.problem,
        })
        .collect()
}
