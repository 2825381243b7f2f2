//! `knowledge eval --judged FILE`: retrieval quality on the project's own index, against questions judged
//! by the files and sections that answer them.
//!
//! The set is a tab-separated file, one question a line: `id`, the question, then one judgment a field,
//! `PATH=GRADE` (the whole file answers) or `PATH#Section title=GRADE` (that section does), or the single
//! field `none` for a question the knowledge base cannot answer. Lines starting with `#` are comments.
//!
//! Scores (every mode through the same `search::search` agents use, ten results):
//! - file level: results collapsed to their source file at their best rank; a file's grade is the best
//!   of its judgments. Generated pages and index entries are counted two ways: as misses (`pages as
//!   misses`), and as the best-graded source they quote that is not ranked yet (`pages as sources`).
//! - chunk level: every result graded by its section (a chunk lies in a judged section when the section's
//!   title is in its heading path; a whole-file judgment grades every chunk of the file); the ideal
//!   ranking is taken over every chunk of the index.
//! - the share of the top ten that are generated pages or index entries.
//! - for `ask`: the share of answerable questions it answers, and of unanswerable ones it declines.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;
use serde::Serialize;

use super::{EvalError, Latency, Mode, score};
use crate::retrieval::access::Access;
use crate::retrieval::search::{self, Highlight, ResultKind, SearchRequest};
use crate::store::postgres::PgStore;
use knowledge_queries::SourceRef;

/// Every chunk's id and heading path, by source path.
type ChunkSections = HashMap<String, Vec<(String, Vec<String>)>>;

/// One judged question.
#[derive(Debug, Clone)]
pub struct Question {
    pub id: String,
    pub text: String,
    /// Empty for a question the knowledge base cannot answer.
    pub judgments: Vec<Judgment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgment {
    pub path: String,
    /// The section's title, or none for the whole file.
    pub section: Option<String>,
    pub grade: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct JudgedReport {
    pub mode: Mode,
    /// Answerable questions scored.
    pub questions: usize,
    pub unanswerable: usize,
    pub file_ndcg_at_10: f64,
    pub file_ndcg_at_10_pages_as_sources: f64,
    pub file_recall_at_10: f64,
    pub file_mrr_at_10: f64,
    pub chunk_ndcg_at_10: f64,
    /// Generated pages and index entries among the top ten, over all top tens.
    pub non_source_share_at_10: f64,
    /// `ask`'s answers: answerable questions it answered, unanswerable ones it said were not found.
    pub ask_answered: f64,
    /// Answerable questions `ask` answered citing a file judged to answer them.
    pub ask_answered_from_judged: f64,
    /// Answerable questions whose answer's first sentence cites a file judged to answer them: what a reader
    /// reads first.
    pub ask_opened_from_judged: f64,
    pub ask_declined: f64,
    pub latency_ms: Latency,
    pub per_question: Vec<QuestionScore>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QuestionScore {
    pub id: String,
    pub file_ndcg_at_10: f64,
    /// The 1-based rank of the first file that answers, within ten.
    pub first_answer: Option<usize>,
    pub ask_found: bool,
    /// `ask` cited a file judged to answer the question.
    pub ask_cites_answer: bool,
    /// The answer's first sentence cites a file judged to answer the question.
    pub ask_opens_with_answer: bool,
    /// The top ten as `PATH` (source chunks) or `PATH (page)`.
    pub top: Vec<String>,
}

/// Reads a judged set.
pub fn read_questions(path: &Path) -> Result<Vec<Question>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read { path: path.to_path_buf(), source })?;
    let error = |line: usize, message: String| EvalError::Parse { path: path.to_path_buf(), line, message };
    let mut questions = Vec::new();
    let mut ids = HashSet::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let [id, question, judged @ ..] = fields.as_slice() else {
            return Err(error(index + 1, "expected `id<TAB>question<TAB>judgments`".to_string()));
        };
        if !ids.insert((*id).to_string()) {
            return Err(error(index + 1, format!("the id `{id}` is used twice")));
        }
        let judgments = match judged {
            [] => return Err(error(index + 1, "no judgment: give `PATH=GRADE` fields or `none`".to_string())),
            ["none"] => Vec::new(),
            fields => fields
                .iter()
                .map(|field| parse_judgment(field))
                .collect::<Result<_, _>>()
                .map_err(|bad| error(index + 1, bad.to_string()))?,
        };
        questions.push(Question { id: (*id).to_string(), text: (*question).to_string(), judgments });
    }
    Ok(questions)
}

/// Why a judgment field does not read as one.
#[derive(Debug, thiserror::Error)]
enum BadJudgment {
    #[error("`{0}`: expected `PATH=GRADE` or `PATH#Section=GRADE`")]
    NoGrade(String),
    #[error("`{0}`: the grade must be a whole number")]
    NotANumber(String),
}

fn parse_judgment(field: &str) -> Result<Judgment, BadJudgment> {
    let (target, grade) = field.rsplit_once('=').ok_or_else(|| BadJudgment::NoGrade(field.to_string()))?;
    let grade: u32 = grade.trim().parse().map_err(|_| BadJudgment::NotANumber(field.to_string()))?;
    let (path, section) = match target.split_once('#') {
        Some((path, section)) => (path, Some(section.trim().to_string())),
        None => (target, None),
    };
    Ok(Judgment { path: path.trim().to_string(), section, grade })
}

/// Scores `questions` against the index behind `conn`, as `access` may read it.
pub fn evaluate(
    conn: &Connection,
    questions: &[Question],
    mode: Mode,
    access: &Access,
) -> Result<JudgedReport, EvalError> {
    let cited = page_citations(conn).map_err(EvalError::Search)?;
    let chunks = chunk_sections(conn).map_err(EvalError::Search)?;
    score_questions(
        questions,
        mode,
        &cited,
        &chunks,
        |question| crate::retrieval::ask::answer(conn, question, 600, access).map_err(EvalError::Search),
        |request| search::search(conn, request, access).map_err(EvalError::Search),
    )
}

/// Scores `questions` against `project` of the Postgres store, as `principal` may read it: the same
/// scoring as [`evaluate`] over the store's search and answers.
pub fn evaluate_postgres(
    store: &mut PgStore,
    project: &str,
    questions: &[Question],
    mode: Mode,
    principal: Option<&str>,
) -> Result<JudgedReport, EvalError> {
    let (cited, chunks) = store_sections(store, project).map_err(|source| store.error(source))?;
    let projects = [project.to_string()];
    // Both closures read the one connection, one after the other.
    let store = std::cell::RefCell::new(store);
    score_questions(
        questions,
        mode,
        &cited,
        &chunks,
        |question| {
            Ok(crate::retrieval::ask::answer_postgres(&mut store.borrow_mut(), &projects, question, 600, principal)?)
        },
        |request| Ok(search::search_postgres(&mut store.borrow_mut(), &projects, request, principal)?),
    )
}

/// The scores of `questions`, asking `ask` for answers and `search` for rankings; `cited` and `chunks` are
/// the index's page citations and chunk sections.
fn score_questions(
    questions: &[Question],
    mode: Mode,
    cited: &HashMap<String, Vec<String>>,
    chunks: &ChunkSections,
    mut ask: impl FnMut(&str) -> Result<crate::retrieval::ask::Answer, EvalError>,
    mut search: impl FnMut(&SearchRequest) -> Result<search::SearchResponse, EvalError>,
) -> Result<JudgedReport, EvalError> {
    let search_mode = mode.search_mode();
    let mut per_question = Vec::new();
    let mut totals = [0.0_f64; 6];
    let (mut answered, mut answered_from_judged, mut opened_from_judged, mut declined, mut unanswerable) =
        (0, 0, 0, 0, 0);
    let mut latencies = Vec::new();
    for question in questions {
        let asked = ask(&question.text)?;
        if question.judgments.is_empty() {
            unanswerable += 1;
            declined += usize::from(!asked.found);
            continue;
        }
        answered += usize::from(asked.found);
        let file_grades = file_grades(&question.judgments);
        let cites_answer = asked.citations.iter().any(|c| file_grades.get(&c.path).is_some_and(|&grade| grade > 0));
        answered_from_judged += usize::from(asked.found && cites_answer);
        let request = SearchRequest {
            query: question.text.clone(),
            mode: search_mode,
            limit: 10,
            kinds: Vec::new(),
            entity_types: Vec::new(),
            highlight: Highlight::Markdown,
        };
        let clock = Instant::now();
        let response = search(&request)?;
        latencies.push(clock.elapsed().as_secs_f64() * 1000.0);
        if let Some(reason) = response.degraded_reason.clone().filter(|_| response.degraded) {
            return Err(EvalError::Embeddings(reason));
        }
        let (scores, scored) = score_ranking(question, &response, cited, chunks, &file_grades, &asked, cites_answer);
        for (total, value) in totals.iter_mut().zip(scores) {
            *total += value;
        }
        opened_from_judged += usize::from(scored.ask_opens_with_answer);
        per_question.push(scored);
    }
    let scored = per_question.len();
    let mean = |total: f64, count: usize| if count == 0 { 0.0 } else { total / count as f64 };
    Ok(JudgedReport {
        mode,
        questions: scored,
        unanswerable,
        file_ndcg_at_10: mean(totals[0], scored),
        file_ndcg_at_10_pages_as_sources: mean(totals[1], scored),
        file_recall_at_10: mean(totals[2], scored),
        file_mrr_at_10: mean(totals[3], scored),
        chunk_ndcg_at_10: mean(totals[4], scored),
        non_source_share_at_10: mean(totals[5], scored),
        ask_answered: mean(answered as f64, scored),
        ask_answered_from_judged: mean(answered_from_judged as f64, scored),
        ask_opened_from_judged: mean(opened_from_judged as f64, scored),
        ask_declined: mean(declined as f64, unanswerable),
        latency_ms: Latency::of(latencies),
        per_question,
    })
}

/// Whether a found answer's first sentence cites a file judged to answer: it cites the first citation, since
/// citations are numbered as the answer first cites them.
fn opens_with_answer(asked: &crate::retrieval::ask::Answer, file_grades: &HashMap<String, u32>) -> bool {
    asked.found && asked.citations.first().is_some_and(|c| file_grades.get(&c.path).is_some_and(|&grade| grade > 0))
}

/// One answerable question's scores from its ranking: file nDCG@10 (pages missed, then pages as their
/// sources), recall, MRR, chunk nDCG@10 and the share of results that are not source chunks; and its line
/// of the report.
fn score_ranking(
    question: &Question,
    response: &search::SearchResponse,
    cited: &HashMap<String, Vec<String>>,
    chunks: &ChunkSections,
    file_grades: &HashMap<String, u32>,
    asked: &crate::retrieval::ask::Answer,
    cites_answer: bool,
) -> ([f64; 6], QuestionScore) {
    let results: Vec<(ResultKind, &str, &str)> =
        response.results.iter().map(|r| (r.kind, r.source.path.as_str(), r.id.as_str())).collect();
    let missed = file_ranking(&results, cited, file_grades, false);
    let as_sources = file_ranking(&results, cited, file_grades, true);
    let missed_refs: Vec<&str> = missed.iter().map(String::as_str).collect();
    let as_sources_refs: Vec<&str> = as_sources.iter().map(String::as_str).collect();
    let [file_ndcg, recall, _, mrr] = score(&missed_refs, file_grades);
    let [pages_as_sources, ..] = score(&as_sources_refs, file_grades);
    let chunk_ndcg = chunk_ndcg(&results, chunks, &question.judgments);
    let non_source = results.iter().filter(|(kind, ..)| *kind != ResultKind::SourceChunk).count();
    let scored = QuestionScore {
        id: question.id.clone(),
        file_ndcg_at_10: file_ndcg,
        first_answer: missed_refs.iter().position(|id| file_grades.get(*id).is_some_and(|&g| g > 0)).map(|r| r + 1),
        ask_found: asked.found,
        ask_cites_answer: cites_answer,
        ask_opens_with_answer: opens_with_answer(asked, file_grades),
        top: results
            .iter()
            .map(|(kind, path, _)| match kind {
                ResultKind::SourceChunk => (*path).to_string(),
                _ => format!("{path} (page)"),
            })
            .collect(),
    };
    ([file_ndcg, pages_as_sources, recall, mrr, chunk_ndcg, non_source as f64 / 10.0], scored)
}

/// A file's grade: the best of its judgments, whole-file or by section.
fn file_grades(judgments: &[Judgment]) -> HashMap<String, u32> {
    let mut grades: HashMap<String, u32> = HashMap::new();
    for judgment in judgments {
        let grade = grades.entry(judgment.path.clone()).or_default();
        *grade = (*grade).max(judgment.grade);
    }
    grades
}

/// The results as a ranking of files, each once at its best rank. A generated page or index entry is a
/// miss of its own (a unique id), or, with `pages_as_sources`, the best-graded file it quotes that is not
/// ranked yet.
fn file_ranking(
    results: &[(ResultKind, &str, &str)],
    cited: &HashMap<String, Vec<String>>,
    grades: &HashMap<String, u32>,
    pages_as_sources: bool,
) -> Vec<String> {
    let mut ranking: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (kind, path, id) in results {
        let file = if *kind == ResultKind::SourceChunk {
            (*path).to_string()
        } else if pages_as_sources {
            // A page is known by its path; an index entry by its chunk (a shard's rows share one path).
            let key = if *kind == ResultKind::IndexEntry { *id } else { *path };
            let quoted = cited.get(key).map(Vec::as_slice).unwrap_or_default();
            let best = quoted
                .iter()
                .filter(|file| !seen.contains(*file))
                .max_by_key(|file| grades.get(*file).copied().unwrap_or(0));
            best.cloned().unwrap_or_else(|| format!("miss:{id}"))
        } else {
            format!("miss:{id}")
        };
        if seen.insert(file.clone()) {
            ranking.push(file);
        }
    }
    ranking
}

/// nDCG@10 over chunks: each result graded by the judgments its file and section meet; the ideal is the
/// best ten grades over every chunk of the index.
fn chunk_ndcg(results: &[(ResultKind, &str, &str)], chunks: &ChunkSections, judgments: &[Judgment]) -> f64 {
    let grade_of = |path: &str, headings: &[String]| -> u32 {
        judgments
            .iter()
            .filter(|j| j.path == path)
            .filter(|j| j.section.as_ref().is_none_or(|s| headings.iter().any(|h| same_title(h, s))))
            .map(|j| j.grade)
            .max()
            .unwrap_or(0)
    };
    let mut judged: HashMap<String, u32> = HashMap::new();
    for path in judgments.iter().map(|j| j.path.as_str()).collect::<HashSet<_>>() {
        for (id, headings) in chunks.get(path).map(Vec::as_slice).unwrap_or_default() {
            judged.insert(id.clone(), grade_of(path, headings));
        }
    }
    let ranking: Vec<&str> = results.iter().map(|(_, _, id)| *id).collect();
    score(&ranking, &judged)[0]
}

/// Section titles compared as a reader would: case, code marks and surrounding space aside.
fn same_title(heading: &str, section: &str) -> bool {
    let plain = |s: &str| s.replace('`', "").trim().to_lowercase();
    plain(heading) == plain(section)
}

/// The source files a generated page quotes, by the page's path, and an index entry's page quotes, by
/// the entry's chunk id.
fn page_citations(conn: &Connection) -> rusqlite::Result<HashMap<String, Vec<String>>> {
    Ok(by_page(crate::store::page_quotes(conn)?, crate::store::index_entry_pages(conn)?))
}

/// The source paths each page quotes (by the page's path), and each index entry's page quotes (by the
/// entry's chunk id), from the pages' quotes and the entries' pages.
fn by_page(quotes: Vec<(String, String)>, entries: Vec<(String, String)>) -> HashMap<String, Vec<String>> {
    let mut by_page: HashMap<String, Vec<String>> = HashMap::new();
    for (page, path) in quotes {
        by_page.entry(SourceRef::page(&page).path()).or_default().push(path);
    }
    // An index entry stands for its page: its chunk's identifiers column holds the page's slug.
    for (entry, page) in entries {
        let quoted = by_page.get(&SourceRef::page(&page).path()).cloned().unwrap_or_default();
        by_page.entry(entry).or_default().extend(quoted);
    }
    by_page
}

/// Chunks' (source path, id, heading path as JSON) as each path's chunks with their headings.
fn sections_of(chunks: Vec<(String, String, String)>) -> ChunkSections {
    let mut by_path: ChunkSections = HashMap::new();
    for (path, id, headings) in chunks {
        let headings: Vec<String> = serde_json::from_str(&headings).unwrap_or_default();
        by_path.entry(path).or_default().push((id, headings));
    }
    by_path
}

/// Every chunk's id and heading path, by source path.
fn chunk_sections(conn: &Connection) -> rusqlite::Result<ChunkSections> {
    Ok(sections_of(crate::store::chunk_headings(conn)?))
}

/// [`page_citations`] and [`chunk_sections`] of `project` in the Postgres store.
fn store_sections(
    store: &mut PgStore,
    project: &str,
) -> Result<(HashMap<String, Vec<String>>, ChunkSections), ::postgres::Error> {
    use crate::store::postgres as pg;
    let by_page = by_page(pg::page_quotes(store, project)?, pg::index_entry_pages(store, project)?);
    Ok((by_page, sections_of(pg::chunk_headings(store, project)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judgments_parse_files_sections_and_unanswerable_questions() {
        let dir = tempfile::tempdir().unwrap();
        let set = dir.path().join("set.tsv");
        std::fs::write(
            &set,
            "# comment\nq1\twhat is x\tsrc/a.md#The `X` Rule=2\tsrc/b.md=1\nu1\tcapital of France\tnone\n",
        )
        .unwrap();
        let questions = read_questions(&set).unwrap();
        assert_eq!(questions.len(), 2);
        assert_eq!(
            questions[0].judgments,
            [
                Judgment { path: "src/a.md".into(), section: Some("The `X` Rule".into()), grade: 2 },
                Judgment { path: "src/b.md".into(), section: None, grade: 1 },
            ]
        );
        assert!(questions[1].judgments.is_empty());
        std::fs::write(&set, "q1\twhat\tsrc/a.md=two\n").unwrap();
        let error = read_questions(&set).unwrap_err().to_string();
        assert!(error.ends_with("set.tsv:1: `src/a.md=two`: the grade must be a whole number"), "{error}");
    }

    #[test]
    fn pages_count_as_misses_or_as_the_best_source_they_quote() {
        let grades: HashMap<String, u32> = [("a.md".to_string(), 2), ("b.md".to_string(), 1)].into();
        let cited: HashMap<String, Vec<String>> =
            [("knowledge://wiki/x".to_string(), vec!["b.md".to_string(), "a.md".to_string()])].into();
        let results = [
            (ResultKind::WikiPage, "knowledge://wiki/x", "p1"),
            (ResultKind::SourceChunk, "a.md", "c1"),
            (ResultKind::SourceChunk, "b.md", "c2"),
        ];
        assert_eq!(file_ranking(&results, &cited, &grades, false), ["miss:p1", "a.md", "b.md"]);
        // The page stands for a.md, its best-graded quoted file; a.md's own chunk then adds nothing.
        assert_eq!(file_ranking(&results, &cited, &grades, true), ["a.md", "b.md"]);
        // An index entry is known by its chunk, not by its shard's path, which every row of the shard shares.
        let cited: HashMap<String, Vec<String>> = [
            ("entry-1".to_string(), vec!["b.md".to_string()]),
            ("knowledge://index/general".to_string(), vec!["a.md".to_string()]),
        ]
        .into();
        let entry = [(ResultKind::IndexEntry, "knowledge://index/general", "entry-1")];
        assert_eq!(file_ranking(&entry, &cited, &grades, true), ["b.md"]);
    }

    #[test]
    fn a_chunk_is_graded_by_the_section_it_lies_in() {
        let judgments = [Judgment { path: "a.md".into(), section: Some("Rules".into()), grade: 2 }];
        let chunks: ChunkSections = [(
            "a.md".to_string(),
            vec![
                ("c1".to_string(), vec!["Intro".to_string()]),
                ("c2".to_string(), vec!["Intro".into(), "`Rules`".into()]),
            ],
        )]
        .into();
        let hit = [(ResultKind::SourceChunk, "a.md", "c2")];
        let wrong_section = [(ResultKind::SourceChunk, "a.md", "c1")];
        assert_eq!(chunk_ndcg(&hit, &chunks, &judgments), 1.0);
        assert_eq!(chunk_ndcg(&wrong_section, &chunks, &judgments), 0.0);
    }
}
