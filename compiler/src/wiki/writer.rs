//! The `[wiki] writer`: a provider's model writes a page's lead summary from the page's numbered quotes,
//! and every sentence is checked against the quotes it cites by the rule `ask --generate` answers are
//! checked with (`knowledge_queries::citations`). Sentences that fail are dropped and counted; a page left
//! with fewer than [`MIN_SUPPORTED`] keeps its extractive summary. Writings are cached in the index by what
//! they were written from (the writer, the prompt's version, the title and the quotes sent), so a page
//! rendered again from the same quotes is not written again, and a no-op build calls no one. A build's
//! budget (`max_pages`, `max_cost_usd`) and a provider failure leave the rest extractive and owed: the next
//! build writes them.

use knowledge_queries::citations::check_sentences;
use knowledge_queries::wiki::{PageModel, SummaryLine, readable_excerpt};
use knowledge_queries::{SourceRef, content_hash};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::config::{EXTRACTIVE_WRITER, Project};
use crate::providers::{Prompt, Provider};
use crate::store::{self, RunEvent, WritingRow};

/// The version of [`INSTRUCTIONS`] and of how the excerpts are sent; part of every writing's key, so a
/// new prompt writes pages again.
pub const PROMPT_VERSION: u32 = 1;

/// Supported sentences a written summary needs; with fewer, the page keeps its extractive summary.
pub const MIN_SUPPORTED: usize = 2;

/// Quotes sent to the model, at most, in footnote order (the definition first, then the places ranked by
/// how much each source discusses the concept).
const MAX_EXCERPTS: usize = 4;

/// Characters of one quote sent, at most, cut at a sentence's end where there is one: a summary needs a
/// quote's point, not all of it, and a small local model reads a long prompt slowly.
const EXCERPT_CHARS: usize = 500;

/// Sentences a written summary shows, at most.
const MAX_SENTENCES: usize = 5;

/// Output tokens a summary may use.
const MAX_OUTPUT_TOKENS: u32 = 350;

/// What the model is told. The worked example matters: small models cite after the right clause with one,
/// and echo the excerpts without it (docs/wiki.md). It is from another field, so that a sentence a model
/// copies from it shares no words with the excerpts and is dropped.
const INSTRUCTIONS: &str = "You write the opening paragraph of an encyclopedia page about one concept, from \
numbered excerpts of the documentation. Write one sentence for each excerpt that says something about the \
concept, in the excerpts' order. Each sentence restates what that one excerpt says \
about the concept, in the excerpt's own words, and ends with the excerpt's number in square brackets, like [2]. \
Say nothing an excerpt does not say: no general knowledge and no examples of your own. Write plain sentences: \
no headings, lists, code blocks or Markdown.\n\n\
An example from another field, to show the form only: Concept: Tides. Excerpts: [1] \"Tides are the rise and \
fall of sea levels caused by the gravity of the Moon and the Sun. They are predictable.\" [2] \"Most coasts see \
two high tides and two low tides each day.\"\n\
Answer: Tides are the rise and fall of sea levels caused by the gravity of the Moon and the Sun [1]. Most coasts \
see two high tides and two low tides each day [2].";

/// What the writer did in one build, as the build's summary reports it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WriterCounters {
    /// `PROVIDER/MODEL`.
    pub writer: String,
    /// Calls to the provider.
    pub calls: u64,
    /// Pages rendered with a written summary, from a call or the cache.
    pub written: u64,
    /// Of those, pages whose writing the cache held.
    pub cached: u64,
    /// Pages whose writing had fewer than [`MIN_SUPPORTED`] supported sentences: they keep the extractive
    /// summary (and are not written again until their quotes change).
    pub refused: u64,
    /// Pages left extractive by the budget or a provider failure; the next build writes them.
    pub owed: u64,
    /// Sentences the calls wrote that held up, and those dropped.
    pub sentences_supported: u64,
    pub sentences_dropped: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// From the provider's `prices` in kc.toml; 0 without them.
    pub cost_usd: f64,
    /// Why the writer stopped calling in this build, when it did.
    pub failure: Option<String>,
}

/// A written sentence as the cache keeps it: its text as the model wrote it, the footnotes it cites, and why
/// it does not hold up (`None` when it does).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct StoredSentence {
    text: String,
    notes: Vec<u32>,
    problem: Option<String>,
}

/// What the writer left a page with: the cache key of the writing it shows or refused (`None` when it
/// had nothing to write from), and whether the page is owed a writing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageWriting {
    pub key: Option<String>,
    pub owed: bool,
}

/// The writer one build uses.
pub struct Writer {
    provider: Provider,
    model: String,
    max_pages: Option<u32>,
    max_cost_usd: Option<f64>,
    pub counters: WriterCounters,
}

/// What the pages' model hashes and the `[wiki]` fingerprint hold of the writer: `"extractive"`, or the
/// provider, its endpoint and model, and the prompt's version.
#[must_use]
pub fn identity(project: &Project) -> String {
    match provider_of(project) {
        None => EXTRACTIVE_WRITER.to_string(),
        Some(provider) => {
            format!("{}/{}/{}/v{PROMPT_VERSION}", provider.name, provider.base_url, provider.model_for(None))
        }
    }
}

/// The provider `[wiki] writer` names (the configuration checked that it exists).
fn provider_of(project: &Project) -> Option<Provider> {
    let name = project.config.wiki.writer.get_ref();
    if name == EXTRACTIVE_WRITER {
        return None;
    }
    crate::providers::configured(project).into_iter().find(|provider| &provider.name == name)
}

impl Writer {
    /// The writer `kc.toml` configures; `None` for the extractive one.
    #[must_use]
    pub fn configured(project: &Project) -> Option<Writer> {
        let provider = provider_of(project)?;
        let model = provider.model_for(None).to_string();
        let counters = WriterCounters { writer: format!("{}/{model}", provider.name), ..WriterCounters::default() };
        let wiki = &project.config.wiki;
        Some(Writer { provider, model, max_pages: wiki.max_pages, max_cost_usd: wiki.max_cost_usd, counters })
    }

    /// `PROVIDER/MODEL`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.counters.writer
    }

    /// What a writing of `input` and `output` tokens costs, by the provider's prices.
    #[must_use]
    pub fn cost(&self, input: u64, output: u64) -> Option<f64> {
        self.provider.cost(input, output)
    }

    /// Gives `model` (its quotes filled) a written summary from the cache or the provider, or leaves the
    /// extractive one; records each call's usage in `events`, for the run ledger.
    pub fn write(
        &mut self,
        conn: &Connection,
        model: &mut PageModel,
        run_id: &str,
        events: &mut Vec<RunEvent>,
    ) -> rusqlite::Result<PageWriting> {
        let Some(request) = Request::of(model) else { return Ok(PageWriting::default()) };
        let key = request.key(&self.provider, &self.model);
        if let Some(cached) = store::find_writing(conn, &key)? {
            if self.apply(model, &cached) {
                self.counters.cached += 1;
            }
            return Ok(PageWriting { key: Some(key), owed: false });
        }
        if !self.within_budget(&request) {
            self.counters.owed += 1;
            return Ok(PageWriting { key: None, owed: true });
        }
        // Temperature 0: the writing is cached as what this model writes from these quotes.
        let prompt = Prompt {
            instructions: INSTRUCTIONS,
            input: &request.input,
            max_output_tokens: MAX_OUTPUT_TOKENS,
            temperature: Some(0.0),
        };
        let generation = match self.provider.generate(Some(&self.model), &prompt, &mut |_| {}) {
            Ok(generation) => generation,
            Err(message) => {
                // A provider that failed once (no key, unreachable, refusing) is not asked again in this
                // build: every page would wait for the same error. The failed call is in the ledger too.
                events.push(self.ledger_event(
                    "provider_error",
                    &model.slug,
                    serde_json::json!({"error": message.to_string()}),
                ));
                self.counters.failure = Some(message.to_string());
                self.counters.owed += 1;
                return Ok(PageWriting { key: None, owed: true });
            }
        };
        self.counters.calls += 1;
        let cost = self.provider.cost(generation.input_tokens, generation.output_tokens);
        self.counters.input_tokens += generation.input_tokens;
        self.counters.output_tokens += generation.output_tokens;
        self.counters.cost_usd += cost.unwrap_or(0.0);
        let sentences = checked_sentences(&generation.text, &request.excerpts);
        let supported = sentences.iter().filter(|s| s.problem.is_none()).count();
        self.counters.sentences_supported += supported as u64;
        self.counters.sentences_dropped += (sentences.len() - supported) as u64;
        let writing = WritingRow {
            key: key.clone(),
            writer: self.name().to_string(),
            sentences: serde_json::to_string(&sentences).expect("sentences serialize"),
            accepted: supported >= MIN_SUPPORTED,
            input_tokens: generation.input_tokens,
            output_tokens: generation.output_tokens,
            cost_usd: cost,
        };
        store::save_writing(conn, &writing, run_id)?;
        self.apply(model, &writing);
        let usage = serde_json::json!({
            "input_tokens": generation.input_tokens,
            "output_tokens": generation.output_tokens,
            "cost_usd": cost,
            "sentences": sentences.len(),
            "supported": supported,
        });
        events.push(self.ledger_event("provider_usage", &model.slug, usage));
        Ok(PageWriting { key: Some(key), owed: false })
    }

    /// A run-ledger event of kind `kind` on the page `slug`: `detail`'s fields and who was called.
    fn ledger_event(&self, kind: &'static str, slug: &str, mut detail: serde_json::Value) -> RunEvent {
        detail["purpose"] = "wiki_page".into();
        detail["provider"] = self.provider.name.clone().into();
        detail["kind"] = self.provider.kind.as_str().into();
        detail["model"] = self.model.clone().into();
        RunEvent {
            kind,
            path: SourceRef::page(slug).path(),
            old_revision: None,
            new_revision: None,
            detail: Some(detail.to_string()),
            labels: None,
        }
    }

    /// Puts an accepted writing's supported sentences in place of the extractive summary; says whether it
    /// did.
    fn apply(&mut self, model: &mut PageModel, writing: &WritingRow) -> bool {
        if !writing.accepted {
            self.counters.refused += 1;
            return false;
        }
        let sentences: Vec<StoredSentence> = serde_json::from_str(&writing.sentences).unwrap_or_default();
        model.summary = sentences
            .into_iter()
            .filter(|sentence| sentence.problem.is_none())
            .filter_map(|sentence| {
                // Escaped as it is shown, not as it is stored: the cache keeps what the model wrote.
                let text = as_page_text(&sentence.text);
                Some(SummaryLine { note: *sentence.notes.first()?, notes: sentence.notes, text })
            })
            .collect();
        model.written_by = Some(writing.writer.clone());
        self.counters.written += 1;
        true
    }

    /// Whether one more call fits the build's budget: `max_pages` calls, and `max_cost_usd` with this call
    /// estimated at its prompt's length (four characters a token) and the most it may write.
    fn within_budget(&self, request: &Request) -> bool {
        if self.counters.failure.is_some() || self.max_pages.is_some_and(|most| self.counters.calls >= u64::from(most))
        {
            return false;
        }
        let Some(most) = self.max_cost_usd else { return true };
        let prompt_tokens = (INSTRUCTIONS.len() + request.input.len()) as u64 / 4;
        let estimate = self.provider.cost(prompt_tokens, u64::from(MAX_OUTPUT_TOKENS)).unwrap_or(0.0);
        self.counters.cost_usd + estimate <= most
    }
}

/// What a page is written from: the user's message, and the excerpts as sent, by footnote number (an
/// empty text for a footnote not sent, which then supports nothing).
struct Request {
    input: String,
    excerpts: Vec<String>,
}

impl Request {
    /// The request for a page with its quotes filled; `None` when it quotes nothing.
    fn of(model: &PageModel) -> Option<Request> {
        let quotes: Vec<_> = model.quotes().filter(|quote| !quote.text.trim().is_empty()).take(MAX_EXCERPTS).collect();
        if quotes.is_empty() {
            return None;
        }
        let last = quotes.iter().map(|quote| quote.note).max().unwrap_or(0) as usize;
        let mut excerpts = vec![String::new(); last];
        let mut input = format!("Concept: {}\n\nExcerpts:\n", model.title);
        for quote in quotes {
            let text = shortened(&prose(&readable_excerpt(&quote.text)));
            if text.is_empty() {
                continue;
            }
            input.push_str(&format!("\n[{}] {}\n", quote.note, text));
            excerpts[quote.note as usize - 1] = text;
        }
        // Excerpts of code alone say nothing a summary can restate.
        excerpts.iter().any(|text| !text.is_empty()).then_some(Request { input, excerpts })
    }

    /// The cache key: the writer, the prompt's version and the message sent.
    fn key(&self, provider: &Provider, model: &str) -> String {
        let material = format!(
            "v{PROMPT_VERSION}\n{}\n{}\n{}\n{model}\n{}",
            provider.name,
            provider.kind.as_str(),
            provider.base_url,
            self.input
        );
        content_hash(material.as_bytes())
    }
}

/// A written sentence as the page shows it: the model's words and inline code, never its markup. Control
/// and bidirectional-override characters are dropped (the page is read on terminals too); outside code
/// spans, `<`, `[`, `]` and `\` are escaped, so a sentence cannot open HTML, a link or a footnote of its
/// own; a leading `#`, `>`, `-`, `+` or `=` cannot make it a block.
fn as_page_text(sentence: &str) -> String {
    let bidi = |c: char| matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    let clean: String = sentence.chars().filter(|&c| !c.is_control() && !bidi(c)).collect();
    let mut out = String::with_capacity(clean.len() + 8);
    if clean.starts_with(['#', '>', '-', '+', '=']) {
        out.push('\\');
    }
    let mut in_code = false;
    for c in clean.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code && matches!(c, '<' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    // An unclosed code span would run into the next sentence: close it.
    if in_code {
        out.push('`');
    }
    out
}

/// A quote's prose on one line: code blocks left out (a summary restates what the text says, and a model
/// copies code badly), hard-wrapped lines joined, so the model writes sentences that do not break mid-line.
fn prose(text: &str) -> String {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match fence {
            Some(marker) if trimmed.starts_with(marker) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") || trimmed.starts_with("~~~") => fence = Some(&trimmed[..3]),
            None => out.push(trimmed.trim_start_matches('>').trim()),
        }
    }
    out.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A quote cut to [`EXCERPT_CHARS`], at the last sentence's end before it where there is one, else at a
/// space.
fn shortened(text: &str) -> String {
    let text = text.trim();
    if text.len() <= EXCERPT_CHARS {
        return text.to_string();
    }
    let cut = knowledge_queries::floor_char_boundary(text, EXCERPT_CHARS);
    let head = &text[..cut];
    let end = head.rfind(". ").map(|at| at + 1).or_else(|| head.rfind(char::is_whitespace)).unwrap_or(cut);
    format!("{} …", head[..end].trim_end())
}

/// The sentences of a written summary, each checked against the quotes it cites: a repeated sentence, or one
/// past the summary's length, is marked with why it is not shown.
fn checked_sentences(text: &str, excerpts: &[String]) -> Vec<StoredSentence> {
    let excerpts: Vec<&str> = excerpts.iter().map(String::as_str).collect();
    let mut seen = std::collections::HashSet::new();
    let mut shown = 0;
    check_sentences(text, &excerpts)
        .into_iter()
        .map(|sentence| {
            // A small model may loop, writing the same sentences again; and a summary has a length.
            let mut problem = sentence.problem;
            if !seen.insert(sentence.text.to_lowercase()) {
                problem = Some("repeats an earlier sentence".to_string());
            } else if problem.is_none() && shown == MAX_SENTENCES {
                problem = Some(format!("past the summary's {MAX_SENTENCES} sentences"));
            }
            shown += usize::from(problem.is_none());
            StoredSentence { notes: sentence.cites.iter().map(|&n| n as u32).collect(), text: sentence.text, problem }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{EXCERPT_CHARS, as_page_text, prose, shortened};

    #[test]
    fn a_written_sentence_cannot_carry_markup_or_terminal_controls() {
        assert_eq!(
            as_page_text("See <script>x</script> and [a](http://e.vil)[^9] in `Vec<T>[0]`\u{1b}[31m\u{202E}."),
            "See \\<script>x\\</script> and \\[a\\](http://e.vil)\\[^9\\] in `Vec<T>[0]`\\[31m."
        );
        assert_eq!(as_page_text("# Not a heading, `open code"), "\\# Not a heading, `open code`");
    }

    #[test]
    fn a_quote_is_sent_as_its_prose_on_one_line() {
        let quote = "Each value has\nan owner.\n\n```rust\nlet s = 1;\n```\n\n> Quoted text\n> goes on.";
        assert_eq!(prose(quote), "Each value has an owner. Quoted text goes on.");
    }

    #[test]
    fn a_long_quote_is_cut_at_a_sentence_end() {
        let sentence = "Each value has an owner. ";
        let text = sentence.repeat(EXCERPT_CHARS / sentence.len() + 5);
        let cut = shortened(&text);
        assert!(cut.ends_with("owner. …"), "{cut}");
        assert!(cut.len() <= EXCERPT_CHARS + 4);
        assert_eq!(shortened("  short one.  "), "short one.");
    }
}
