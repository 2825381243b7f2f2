//! Keyword retrieval: FTS5 and BM25 over the quoted query words, the coverage and phrase re-rank, and the
//! snippet of each result.

use std::collections::HashSet;

use rusqlite::{Connection, params};

use super::*;

/// The keyword retrieval: the whole ranked candidate pool, re-ranked, without snippets.
pub(super) fn keyword<I: SearchIndex>(
    index: &mut I,
    request: &SearchRequest,
    access: &Access,
    query_stems: &QueryStems,
    cache: &mut StemCache,
) -> Result<SearchResponse, I::Error> {
    let mut response = empty_response(request);
    let terms = response.terms.clone();
    if terms.is_empty() || request.limit == 0 {
        return Ok(response);
    }
    let mut results = index.keyword_pool(request, access, &terms, (request.limit * 4).max(50))?;
    let query_phrase = words(&request.query);
    for result in &mut results {
        rerank(result, cache, &terms, query_stems, &query_phrase);
    }
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    response.results = results;
    Ok(response)
}

/// The SQLite index's keyword pool: FTS5's BM25 over the quoted query words, title weighted over body.
pub(super) fn sqlite_pool(
    conn: &Connection,
    request: &SearchRequest,
    access: &Access,
    terms: &[String],
    pool: usize,
) -> rusqlite::Result<Vec<SearchResult>> {
    // Pages, index entries, notes and entity excerpts are few, so a kind filter names their chunks rather
    // than every source chunk.
    let chunks_where = |condition: String| {
        format!("SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {condition}")
    };
    let kind_filter = match request.kind_filter("s.path") {
        KindFilter::All => "1".to_string(),
        KindFilter::Except(condition) => format!("rowid NOT IN ({})", chunks_where(condition)),
        // `+rowid`: offered to FTS5 as a rowid constraint, the set would drive one MATCH per listed chunk
        // (1.4 s for tokio's 8,000 entity excerpts); as a plain filter it is read once and tested per match.
        KindFilter::Only(condition) => format!("+rowid IN ({})", chunks_where(condition)),
        KindFilter::Nothing => return Ok(Vec::new()),
    };
    let match_expression = match_expression(terms);
    let pool_size = i64::try_from(pool).unwrap_or(i64::MAX);

    // Rank on the FTS5 table alone and join only the pool: joining before the sort would join every match.
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {RESULT_COLUMNS}, -top.score
         FROM (SELECT rowid, bm25(chunks_fts, 2.0, 1.0, 0.5) AS score FROM chunks_fts
               WHERE chunks_fts MATCH ?1 AND {} AND {kind_filter} ORDER BY score LIMIT ?2) AS top
         JOIN chunks c ON c.seq = top.rowid JOIN sources s ON s.id = c.source_id
         -- A chunk whose revision is not its source's current one could cite text that is gone.
         WHERE c.revision = s.revision",
        access.chunk_filter("rowid")
    ))?;
    statement
        .query_map(params![match_expression, pool_size], |row| {
            let bm25: f64 = row.get(13)?;
            let mut result = result_from_row(row)?;
            result.score = bm25;
            (result.scores.keyword, result.scores.bm25) = (bm25, bm25);
            Ok(result)
        })?
        .collect()
}

/// Words in a snippet, at most.
pub(super) const SNIPPET_WORDS: usize = 32;

/// The passage of `text` of at most [`SNIPPET_WORDS`] words that holds the most distinct query stems (the
/// earliest such, its matches centred), on one line, matched words between the highlight marks and `…`
/// where text was cut. None when no word matches. Computed from the chunk in hand: a second FTS5 query for its `snippet()`
/// cost about 0.8 ms of a 3 ms search.
pub(super) fn snippet(
    text: &str,
    query: &HashSet<String>,
    cache: &mut StemCache,
    highlight: Highlight,
) -> Option<String> {
    // Each word's span, and which query stem it matches (an index into `stems`).
    let mut spans: Vec<(usize, usize, Option<usize>)> = Vec::new();
    let mut stems: Vec<String> = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                let matched =
                    cache.stem(&text[from..at].to_lowercase()).filter(|stem| query.contains(*stem)).map(|stem| {
                        stems.iter().position(|known| known == stem).unwrap_or_else(|| {
                            stems.push(stem.clone());
                            stems.len() - 1
                        })
                    });
                spans.push((from, at, matched));
                start = None;
            }
            _ => {}
        }
    }
    if stems.is_empty() {
        return None;
    }
    // Slide a window of `width` words, counting each stem's matches in it.
    let width = SNIPPET_WORDS.min(spans.len());
    let mut counts = vec![0_usize; stems.len()];
    let mut distinct = 0;
    let (mut best, mut found) = (0, 0);
    for (at, &(.., matched)) in spans.iter().enumerate() {
        if let Some(stem) = matched {
            counts[stem] += 1;
            distinct += usize::from(counts[stem] == 1);
        }
        if let Some(stem) = at.checked_sub(width).and_then(|gone| spans[gone].2) {
            counts[stem] -= 1;
            distinct -= usize::from(counts[stem] == 0);
        }
        if at + 1 >= width && distinct > found {
            (best, found) = (at + 1 - width, distinct);
        }
    }
    // The earliest best window ends at its last match; centre the matches in it instead.
    let matched: Vec<usize> = (best..best + width).filter(|&at| spans[at].2.is_some()).collect();
    let (first, last) = (matched[0], matched[matched.len() - 1]);
    let slack = width - (last - first + 1);
    let best = first.saturating_sub(slack / 2).min(spans.len() - width);
    let window = &spans[best..best + width];
    let (open, close) = highlight.marks();
    let mut out = String::new();
    if best > 0 {
        out.push('…');
    }
    // The source's text is escaped (no control character of its own reaches a terminal), the marks are not.
    let mut cursor = window[0].0;
    for &(from, to, matched) in window {
        out.push_str(&crate::escape_text(&text[cursor..from]));
        if matched.is_some() {
            out.push_str(open);
            out.push_str(&text[from..to]);
            out.push_str(close);
        } else {
            out.push_str(&text[from..to]);
        }
        cursor = to;
    }
    if best + width < spans.len() {
        out.push('…');
    } else {
        out.push_str(&crate::escape_text(&text[cursor..]));
    }
    Some(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Applies the coverage and phrase boosts and records why the result matched.
pub(super) fn rerank(
    result: &mut SearchResult,
    cache: &mut StemCache,
    terms: &[String],
    query: &QueryStems,
    phrase: &[String],
) {
    let body = result.text.to_lowercase();
    let title = result.title.to_lowercase();
    let body_tokens = tokens(&body);
    let title_tokens = tokens(&title);
    let body_stems = cache.stems_of(&body_tokens);
    let title_stems = cache.stems_of(&title_tokens);
    let exact: HashSet<&str> = body_tokens.iter().chain(&title_tokens).copied().collect();

    let covered = |stem: &str| body_stems.contains(stem) || title_stems.contains(stem);
    let coverage = query.graded_coverage(covered, |word| exact.contains(word));
    let all_covered = query.weights.iter().all(|(stem, _)| covered(stem));
    let has_phrase = phrase.len() >= 2 && body_tokens.windows(phrase.len()).any(|w| w == phrase);

    let mut score = result.scores.bm25 * (1.0 + coverage);
    if has_phrase {
        score *= 1.5;
    }
    result.scores.coverage = coverage;
    result.scores.keyword = score;
    result.score = score;

    if terms.iter().any(|t| exact.contains(t.as_str())) {
        result.reason.push("exact_term".into());
    }
    if coverage > 0.0 && terms.iter().all(|t| !exact.contains(t.as_str())) {
        result.reason.push("stemmed_term".into());
    }
    if has_phrase {
        result.reason.push("phrase_match".into());
    }
    if query.weights.iter().any(|(s, _)| title_stems.contains(s)) {
        result.reason.push("title_match".into());
    }
    if query.weights.len() > 1 && all_covered {
        result.reason.push("all_terms".into());
    }
}

pub(super) fn match_expression(terms: &[String]) -> String {
    terms.iter().map(|term| format!("\"{}\"", term.replace('"', "\"\""))).collect::<Vec<_>>().join(" OR ")
}
