//! Keyword retrieval: FTS5 and BM25 over the quoted query words, the coverage and phrase re-rank, and the
//! snippet of each result.

use rustc_hash::FxHashSet;

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

/// Words in a snippet, at most.
pub(super) const SNIPPET_WORDS: usize = 32;

/// The passage of `text` of at most [`SNIPPET_WORDS`] words that holds the most distinct query stems (the
/// earliest such, its matches centred), on one line, matched words between the highlight marks and `…`
/// where text was cut. None when no word matches. Computed from the chunk in hand: a second FTS5 query for its `snippet()`
/// cost about 0.8 ms of a 3 ms search.
pub(super) fn snippet(
    text: &str,
    query: &FxHashSet<String>,
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
    // Only the query's own words and terms are looked up among the text's words, and each of them starts
    // as its stem does.
    let exact: FxHashSet<&str> =
        body_tokens.iter().chain(&title_tokens).copied().filter(|word| cache.may_match(word)).collect();

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
