//! Hybrid search's second half: reciprocal-rank fusion of the keyword and semantic rankings, and the
//! expansion of the best fused results through the wiki graph (citations and backlinks).

use std::collections::HashSet;

use rusqlite::Connection;

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
pub(super) fn fresh_paths(conn: &Connection, results: &[SearchResult]) -> rusqlite::Result<HashSet<String>> {
    let paths: HashSet<&str> = results.iter().map(|r| r.source.path.as_str()).collect();
    if paths.is_empty() {
        return Ok(HashSet::new());
    }
    let listed = serde_json::to_string(&paths).unwrap_or_default();
    let mut statement = conn.prepare_cached(
        "SELECT DISTINCT path FROM run_events
         WHERE run_id = (SELECT value FROM meta WHERE key = 'last_run')
               AND kind IN ('source_added', 'source_changed') AND path IN (SELECT value FROM json_each(?1))",
    )?;
    statement.query_map([listed], |row| row.get(0))?.collect()
}

/// How many of the fused results are expanded through the wiki graph.
pub(super) const EXPAND_FROM: usize = 10;

/// The graph neighbours of `results`, in the order of the results they come from: for a generated page,
/// the chunks holding the quotes it cites (reason `citation`); for a source chunk, the pages that quote
/// its source (reason `backlink`). `allow` filters them (permissions and kinds) before they are read.
pub(super) fn expand(
    conn: &Connection,
    results: &[SearchResult],
    allow: &dyn Fn(&str, Option<&str>) -> bool,
) -> rusqlite::Result<Vec<SearchResult>> {
    let mut seen: HashSet<i64> = HashSet::new();
    let mut related = Vec::new();
    let mut cited = conn.prepare_cached(
        "SELECT DISTINCT (SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id
                          WHERE s.path = t.path AND c.start_offset <= t.start_offset AND t.start_offset < c.end_offset
                                AND c.entity IS NULL
                          ORDER BY c.ordinal LIMIT 1), t.path
         FROM citations t WHERE t.page = ?1 ORDER BY t.note",
    )?;
    let page = Origin::Page.prefix();
    let mut quoting = conn.prepare_cached(&format!(
        "SELECT (SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id
                 WHERE s.path = '{page}' || p.page ORDER BY c.ordinal LIMIT 1), '{page}' || p.page
         FROM page_sources p WHERE p.path = ?1 ORDER BY p.page",
    ))?;
    for result in results {
        let (neighbours, reason): (Vec<(Option<i64>, String)>, &'static str) =
            match SourceRef::from_path(&result.source.path).page_slug() {
                Some(slug) => (
                    cited.query_map([slug], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<rusqlite::Result<_>>()?,
                    "citation",
                ),
                None => (
                    quoting
                        .query_map([&result.source.path], |row| Ok((row.get(0)?, row.get(1)?)))?
                        .collect::<rusqlite::Result<_>>()?,
                    "backlink",
                ),
            };
        for (seq, path) in neighbours {
            // Neighbours are text chunks and pages, never entity excerpts.
            let Some(seq) = seq.filter(|seq| allow(&path, None) && seen.insert(*seq)) else { continue };
            if let Some(mut neighbour) = chunk_result(conn, seq)? {
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
