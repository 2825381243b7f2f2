//! Proposals: durable wiki updates a context pack suggests, and the pack an agent loop reads over the run
//! ledger (`knowledge proposals context --from loops`).
//!
//! A pack proposes a page when its question is answered from sources no page covers (no excerpt is a page,
//! and no generated page quotes an excerpt's source), a refresh of a page among its excerpts whose cited
//! sources changed since it cited them (its `file://PATH@REV` refs, as lint's `stale_citation` reads
//! them), and a page on the question when nothing answers it (no excerpt, or none `ask` answers from). The loops pack holds earlier answers (each
//! its question, its answer and its citations' refs, never the cited sources' text) and proposes filing an
//! answer to a question asked more than once.

use std::collections::{BTreeMap, HashSet};

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::access::Access;
use super::context::{self, Budget, ContextPack, Freshness, PackItem};
use super::search::{Citation, ResultSource, SearchIndex};
use knowledge_queries::{Origin, SourceRef};

/// One suggested durable update to the wiki.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WikiUpdate {
    /// `create_page` (the answer's sources have no page), `refresh_page` (a page's cited sources changed),
    /// `fill_gap` (nothing answers the question), or `file_answer` (a question asked more than once).
    pub action: String,
    /// The page's title, or the page to refresh's.
    pub title: String,
    /// Why, in a sentence.
    pub reason: String,
    /// The page to refresh (its ref).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// The sources the update would draw on, or whose change it follows (refs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// The recorded answers it concerns (run ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// A command that starts the update; writing stays the user's explicit step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// The updates a pack suggests. Whether its excerpts answer the query is `ask`'s own decision on them.
pub(crate) fn for_pack<I: SearchIndex>(index: &mut I, pack: &ContextPack) -> Result<Vec<WikiUpdate>, I::Error> {
    let (query, items) = (pack.query.as_str(), pack.items.as_slice());
    let ask = format!("knowledge ask {}  # then: knowledge wiki file-answer RUN_ID", shell_quoted(query));
    if items.is_empty() || !super::ask::drafted(index, query, pack)?.found {
        return Ok(vec![WikiUpdate {
            action: "fill_gap".into(),
            title: query.to_string(),
            reason: format!("Nothing in the knowledge base answers \"{query}\": a page on it would fill the gap."),
            page: None,
            sources: Vec::new(),
            runs: Vec::new(),
            command: None,
        }]);
    }
    let mut updates = Vec::new();
    let mut sources: Vec<&ResultSource> = Vec::new();
    for item in items {
        if !sources.iter().any(|s| s.path == item.source.path) {
            sources.push(&item.source);
        }
    }
    // Pages among the excerpts whose cited sources changed since they cited them.
    for source in &sources {
        let Some((_, facts)) = index.source_state(source)? else { continue };
        let Ok(facts) = serde_json::from_str::<knowledge_queries::LintFacts>(&facts) else { continue };
        let mut changed = Vec::new();
        for reference in &facts.source_refs {
            let Some((path, revision)) = knowledge_queries::lint::pinned_revision(&reference.value) else { continue };
            let cited =
                ResultSource { path: path.clone(), uri: SourceRef::from_path(&path).uri(), ..(*source).clone() };
            let current = index.source_state(&cited)?.map(|(current, _)| current);
            if current.is_some_and(|current| !current.starts_with(&revision)) && !changed.contains(&cited.uri) {
                changed.push(cited.uri);
            }
        }
        if !changed.is_empty() {
            let title =
                items.iter().find(|i| i.source.path == source.path).map(|i| i.title.clone()).unwrap_or_default();
            updates.push(WikiUpdate {
                action: "refresh_page".into(),
                title,
                reason: format!("{} of the sources this page cites changed since it cited them.", changed.len()),
                page: Some(source.uri.clone()),
                sources: changed,
                runs: Vec::new(),
                command: Some("knowledge lint  # names each stale citation".into()),
            });
        }
    }
    // The answer's sources with no page: none is a page, and no generated page quotes one.
    let is_page = |path: &str| SourceRef::from_path(path).origin() == Origin::Page;
    let mut covered = sources.iter().any(|s| is_page(&s.path));
    for source in sources.iter().filter(|s| !is_page(&s.path)) {
        if covered {
            break;
        }
        covered = !index.quoting_pages(&source.path)?.is_empty();
    }
    if !covered {
        updates.push(WikiUpdate {
            action: "create_page".into(),
            title: query.to_string(),
            reason: format!("{} sources answer this, and no wiki page covers any of them.", sources.len()),
            page: None,
            sources: sources.iter().take(8).map(|s| s.uri.clone()).collect(),
            runs: Vec::new(),
            command: Some(ask),
        });
    }
    Ok(updates)
}

fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The pack an agent loop reads before it works on `topic`: the earlier answers to questions on it (each its
/// question, answer and citations' refs, in the pack schema, no cited text), and proposals to file answers
/// to questions asked more than once. An answer is included only when the principal may read every source
/// it cites; a question no source answered, only for a principal who reads everything.
pub fn loops_pack(
    conn: &Connection,
    topic: &str,
    max_tokens: usize,
    max_items: usize,
    access: &Access,
) -> rusqlite::Result<ContextPack> {
    let terms = topic_terms(topic);
    let answers = prior_answers(conn, &terms, access)?;
    let mut items = Vec::new();
    let (mut used, mut omitted) = (0, 0);
    for (score, run_id, answer) in &answers {
        let item = answer_item(run_id, answer, *score);
        if items.len() >= max_items || used + item.tokens > max_tokens {
            omitted += 1;
            continue;
        }
        used += item.tokens;
        items.push(item);
    }
    let (index_run, index_built_at) = crate::store::index_run(conn)?;
    Ok(ContextPack {
        schema: context::SCHEMA.into(),
        schema_version: context::SCHEMA_VERSION,
        query: topic.to_string(),
        intent: super::terms::query_terms(topic),
        items,
        budget: Budget {
            max_tokens,
            max_items,
            used_tokens: used,
            counting: "ceil(UTF-8 bytes / 4) of each answer's text and run ref".into(),
            omitted,
        },
        freshness: Freshness { index_run, index_built_at, all_current: true },
        permissions: "earlier answers whose every citation the requesting principal may read; no cited text".into(),
        conflicts: Vec::new(),
        suggested_wiki_updates: repeated_questions(&answers),
        degraded: false,
        degraded_reason: None,
        semantic_floor: None,
    })
}

/// The recorded answers that share a word with the topic and that the principal may see, each with the share
/// of the topic's words it holds, best first and, among equals, newest first.
fn prior_answers(
    conn: &Connection,
    terms: &std::collections::BTreeSet<String>,
    access: &Access,
) -> rusqlite::Result<Vec<(f64, String, serde_json::Value)>> {
    let mut answers = Vec::new();
    for (run_id, summary) in crate::store::ask_runs(conn, 1000)? {
        let Ok(answer) = serde_json::from_str::<serde_json::Value>(&summary) else { continue };
        let readable = if answer["found"] == true {
            cited_paths(&answer).iter().all(|path| access.can_read_path(path))
        } else {
            access.reads_everything()
        };
        let question = answer["question"].as_str().unwrap_or_default();
        let asked = text_stems(&format!("{question} {}", answer["answer"].as_str().unwrap_or_default()));
        let shared = terms.iter().filter(|t| asked.contains(*t)).count();
        if readable && shared > 0 {
            answers.push((shared as f64 / terms.len().max(1) as f64, run_id, answer));
        }
    }
    answers.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    Ok(answers)
}

/// One earlier answer as a pack item: its run's ref, the question as title, the answer and its refs as text.
fn answer_item(run_id: &str, answer: &serde_json::Value, score: f64) -> PackItem {
    let text = answer_text(answer);
    let reference = format!("knowledge://run/{run_id}");
    let tokens = context::tokens(&text) + context::tokens(&reference);
    let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
    PackItem {
        reference: reference.clone(),
        chunk_id: run_id.to_string(),
        title: answer["question"].as_str().unwrap_or_default().to_string(),
        source: ResultSource {
            uri: reference.clone(),
            path: reference,
            revision: run_id.to_string(),
            hash: knowledge_queries::content_hash(text.as_bytes()),
            project: None,
        },
        citation: Citation {
            start_offset: 0,
            end_offset: u32::try_from(text.len()).unwrap_or(u32::MAX),
            start_line: 1,
            end_line: lines.max(1),
        },
        text,
        truncated: false,
        tokens,
        score,
        scores: None,
    }
}

/// An answer as a loop reads it: the answer, whether it was found, and one line per citation ref.
fn answer_text(answer: &serde_json::Value) -> String {
    let mut text = answer["answer"].as_str().unwrap_or_default().trim().to_string();
    if answer["found"] != true {
        text = "Not found in the knowledge base.".to_string();
    }
    for citation in answer["citations"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "\n[{}] {}",
            citation["n"],
            citation["ref"].as_str().unwrap_or_else(|| citation["path"].as_str().unwrap_or_default())
        ));
    }
    text
}

fn cited_paths(answer: &serde_json::Value) -> Vec<&str> {
    answer["citations"].as_array().into_iter().flatten().filter_map(|c| c["path"].as_str()).collect()
}

/// A text's topic: the stems of its search terms (lowercased, stopwords dropped), so that "vendor" and
/// "vendoring" are one topic.
fn topic_terms(text: &str) -> std::collections::BTreeSet<String> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    super::terms::query_terms(text).iter().flat_map(|term| super::terms::stems(&stemmer, term)).collect()
}

/// Every word stem of a text (no cap: an answer is read whole).
fn text_stems(text: &str) -> std::collections::BTreeSet<String> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    super::terms::stems(&stemmer, text).into_iter().collect()
}

/// Questions asked more than once (the same topic words), each proposing that its newest found answer be
/// filed as a page.
fn repeated_questions(answers: &[(f64, String, serde_json::Value)]) -> Vec<WikiUpdate> {
    let mut groups: BTreeMap<Vec<String>, Vec<(&String, &serde_json::Value)>> = BTreeMap::new();
    for (_, run_id, answer) in answers {
        let key: Vec<String> = topic_terms(answer["question"].as_str().unwrap_or_default()).into_iter().collect();
        if !key.is_empty() {
            groups.entry(key).or_default().push((run_id, answer));
        }
    }
    let mut seen = HashSet::new();
    let mut updates = Vec::new();
    for asked in groups.values().filter(|asked| asked.len() > 1) {
        let mut runs: Vec<String> = asked.iter().map(|(run, _)| (*run).clone()).collect();
        runs.sort_unstable_by(|a, b| b.cmp(a));
        let Some((newest, answer)) = asked.iter().filter(|(_, a)| a["found"] == true).max_by_key(|(run, _)| *run)
        else {
            continue;
        };
        if !seen.insert(newest.to_string()) {
            continue;
        }
        updates.push(WikiUpdate {
            action: "file_answer".into(),
            title: answer["question"].as_str().unwrap_or_default().to_string(),
            reason: format!("Asked {} times: a page would answer it once, cited, for every later loop.", asked.len()),
            page: None,
            sources: cited_paths(answer).iter().map(|p| SourceRef::from_path(p).uri()).collect(),
            runs,
            command: Some(format!("knowledge wiki file-answer {newest}")),
        });
    }
    updates
}
