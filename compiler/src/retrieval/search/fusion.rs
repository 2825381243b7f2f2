//! Hybrid search's second half: a convex combination of the keyword and semantic scores by document, and
//! the expansion of the best fused results through the wiki graph (citations and backlinks).

use rustc_hash::{FxHashMap, FxHashSet};

use super::*;

/// The semantic score's share of a fused score, the keyword score's being the rest. Scores are fused, not
/// ranks: a list's scores say how sure it is, where its ranks say only its order, so a chunk one list
/// scores far above the rest can lead though the other list ranks it low (Bruch, Gai and Ingber, "An
/// Analysis of Fusion Functions for Hybrid Retrieval", 2023). The cosine is fused as it is (its range is
/// known: at most 1), the keyword score divided by the list's best (BM25 has no bound). Chosen on the judged
/// Rust-book and mdBook-guide questions and Cranfield against reciprocal-rank fusion (docs/performance.md,
/// "Search quality and answers").
pub(super) const SEMANTIC_SHARE: f64 = 0.8;

/// How much each further chunk of a document is worth against the one before it: a document's second
/// chunk ranks at 0.7 of its document's fused score, so a document the retrievers are sure of places its
/// next chunks above documents they barely found, but a document scored in the middle cannot fill the top
/// five with its chunks (docs/cli.md, "Hybrid ranking"). Chosen on the judged sets: 0.5 to 0.7 rank files
/// alike and 0.7 ranks a question's judged sections best; above it, files are lost (docs/performance.md).
pub(super) const NEXT_CHUNK: f64 = 0.7;

/// A keyword share (a keyword score over the list's best) and a cosine fused: a chunk's own, or a document's
/// best of each.
fn fused_score(words: f64, meaning: f64) -> f64 {
    SEMANTIC_SHARE * meaning + (1.0 - SEMANTIC_SHARE) * words
}

/// The keyword and the semantic ranking fused by document, then by chunk.
///
/// A chunk's fused score is [`SEMANTIC_SHARE`] times its cosine plus the rest times its keyword score over
/// the keyword list's best; a list that did not return the chunk gives it 0. A document's score is the
/// same sum of its best cosine and its best keyword score among its chunks (one chunk may hold the words
/// and another the meaning). Within a document its chunks are ordered by their own fused score, and the
/// document's n-th chunk scores the document's score times [`NEXT_CHUNK`]ⁿ. Fused over chunks, a document
/// that both lists place in the middle could fill three of the top five with chunks and push out the
/// document one list is sure of.
pub(super) fn fuse(keyword: Vec<SearchResult>, semantic: Vec<SearchResult>) -> Vec<SearchResult> {
    let best_keyword = keyword.iter().map(|result| result.scores.keyword).fold(0.0, f64::max);
    let keyword_share = |result: &SearchResult| {
        if best_keyword > 0.0 { result.scores.keyword.max(0.0) / best_keyword } else { 0.0 }
    };
    let cosine = |result: &SearchResult| result.scores.semantic.unwrap_or(0.0).max(0.0);
    let mut fused: Vec<SearchResult> = Vec::new();
    let mut at: FxHashMap<i64, usize> = FxHashMap::default();
    for result in keyword {
        at.insert(result.rowid, fused.len());
        fused.push(result);
    }
    for result in semantic {
        match at.get(&result.rowid) {
            Some(&index) => {
                let existing = &mut fused[index];
                existing.scores.semantic = result.scores.semantic;
                existing.reason.push("semantic_match".into());
            }
            None => {
                at.insert(result.rowid, fused.len());
                fused.push(result);
            }
        }
    }
    // Each document's best keyword share and best cosine, whichever chunks hold them.
    let mut best_of: FxHashMap<String, (f64, f64)> = FxHashMap::default();
    for result in &mut fused {
        let (words, meaning) = (keyword_share(result), cosine(result));
        result.scores.fused = Some(fused_score(words, meaning));
        let best = best_of.entry(document_of(result)).or_insert((0.0, 0.0));
        *best = (best.0.max(words), best.1.max(meaning));
    }
    // Chunks by their own fused score; each document's chunks counted off in that order.
    fused.sort_by(|a, b| {
        b.scores.fused.unwrap_or(0.0).total_cmp(&a.scores.fused.unwrap_or(0.0)).then_with(|| a.id.cmp(&b.id))
    });
    let mut placed: FxHashMap<String, i32> = FxHashMap::default();
    for result in &mut fused {
        let document = document_of(result);
        let (words, meaning) = best_of.get(&document).copied().unwrap_or_default();
        let before = placed.entry(document).or_insert(0);
        result.score = fused_score(words, meaning) * NEXT_CHUNK.powi(*before);
        *before += 1;
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    fused
}

/// The document a result belongs to, as fusion counts documents: its source, or its entity.
fn document_of(result: &SearchResult) -> String {
    match &result.entity {
        Some(entity) => entity.slug.clone(),
        None => result.source.path.clone(),
    }
}

/// The paths among `results` whose source the last build added or changed (a build that derived
/// everything again records no such events, so it marks nothing). One query over the last run's events.
pub(super) fn fresh_paths<I: SearchIndex>(
    index: &mut I,
    results: &[SearchResult],
) -> Result<FxHashSet<String>, I::Error> {
    let paths: FxHashSet<&str> = results.iter().map(|r| r.source.path.as_str()).collect();
    if paths.is_empty() {
        return Ok(FxHashSet::default());
    }
    let mut paths: Vec<&str> = paths.into_iter().collect();
    paths.sort_unstable();
    index.fresh_paths(&paths)
}

/// How many of the fused results are expanded through the wiki graph.
pub(super) const EXPAND_FROM: usize = 10;

/// The graph neighbours of `results`, in the order of the results they come from: for a generated page,
/// the chunks holding the quotes it cites (reason `citation`); for a source chunk, the pages that quote
/// its source (reason `backlink`). `allow` filters them (permissions and kinds) before they are read.
pub(super) fn expand<I: SearchIndex>(
    index: &mut I,
    results: &[SearchResult],
    allow: &dyn Fn(&str, Option<&str>) -> bool,
) -> Result<Vec<SearchResult>, I::Error> {
    let mut seen: FxHashSet<i64> = FxHashSet::default();
    let mut related = Vec::new();
    for result in results {
        let (neighbours, reason) = match SourceRef::from_path(&result.source.path).page_slug() {
            Some(slug) => (index.cited_chunks(slug)?, "citation"),
            None => (index.quoting_pages(&result.source.path)?, "backlink"),
        };
        for (seq, path) in neighbours {
            // Neighbours are text chunks and pages, never entity excerpts.
            let Some(seq) = seq.filter(|seq| allow(&path, None) && seen.insert(*seq)) else { continue };
            if let Some(mut neighbour) = index.chunk(seq)? {
                neighbour.reason.push(reason.into());
                related.push(neighbour);
            }
        }
    }
    Ok(related)
}

/// Adds graph neighbours after the fused results: one already there gains the neighbour's reason; the
/// others follow, in expansion order, scored below the last fused result.
pub(super) fn append_related(mut fused: Vec<SearchResult>, related: Vec<SearchResult>) -> Vec<SearchResult> {
    let at: FxHashMap<i64, usize> = fused.iter().enumerate().map(|(i, r)| (r.rowid, i)).collect();
    let floor = fused.last().map_or(1.0, |last| last.score);
    let mut added = 0.0;
    for mut result in related {
        if let Some(&index) = at.get(&result.rowid) {
            for reason in result.reason {
                if !fused[index].reason.contains(&reason) {
                    fused[index].reason.push(reason);
                }
            }
            continue;
        }
        added += 1.0;
        result.score = floor / (1.0 + added);
        result.scores.fused = Some(result.score);
        fused.push(result);
    }
    fused
}
