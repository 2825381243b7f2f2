//! Hybrid search's second half: reciprocal-rank fusion of the keyword and semantic rankings, and the
//! expansion of the best fused results through the wiki graph (citations and backlinks).

use std::collections::HashSet;

use super::*;

/// Reciprocal-rank fusion's constant: ranks, not scores, are fused, since BM25 and cosine are not comparable.
pub(super) const RRF_K: f64 = 60.0;

/// Reciprocal-rank fusion of the keyword and the semantic ranking, deduplicated by chunk.
pub(super) fn fuse(keyword: Vec<SearchResult>, semantic: Vec<SearchResult>) -> Vec<SearchResult> {
    let mut fused: Vec<SearchResult> = Vec::new();
    let mut at: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    for (rank, result) in keyword.into_iter().enumerate() {
        at.insert(result.rowid, fused.len());
        let mut result = result;
        result.scores.fused = Some(1.0 / (RRF_K + rank as f64 + 1.0));
        fused.push(result);
    }
    for (rank, result) in semantic.into_iter().enumerate() {
        let share = 1.0 / (RRF_K + rank as f64 + 1.0);
        match at.get(&result.rowid) {
            Some(&index) => {
                let existing = &mut fused[index];
                existing.scores.semantic = result.scores.semantic;
                existing.scores.fused = Some(existing.scores.fused.unwrap_or(0.0) + share);
                existing.reason.push("semantic_match".into());
            }
            None => {
                let mut result = result;
                result.scores.fused = Some(share);
                fused.push(result);
            }
        }
    }
    for result in &mut fused {
        result.score = result.scores.fused.unwrap_or(0.0);
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    fused
}

/// The paths among `results` whose source the last build added or changed (a build that derived
/// everything again records no such events, so it marks nothing). One query over the last run's events.
pub(super) fn fresh_paths<I: SearchIndex>(
    index: &mut I,
    results: &[SearchResult],
) -> Result<HashSet<String>, I::Error> {
    let paths: HashSet<&str> = results.iter().map(|r| r.source.path.as_str()).collect();
    if paths.is_empty() {
        return Ok(HashSet::new());
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
    let mut seen: HashSet<i64> = HashSet::new();
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
    let at: std::collections::HashMap<i64, usize> = fused.iter().enumerate().map(|(i, r)| (r.rowid, i)).collect();
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
