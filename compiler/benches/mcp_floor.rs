//! The floor of an MCP `knowledge_search`: `cargo bench -p knowledge --bench mcp_floor -- PROJECT [N]`.
//!
//! What any server must do to answer the calls `mcp_raw.py` makes, and nothing more, in one thread of one
//! process: parse each request line, take the query's terms as a search does, score each term not
//! scored before with FTS5's `bm25()` (kept, as a server's connection keeps them), add the kept lists, take
//! the best ten chunks, read those ten rows and write the answer line (each result's ids, title, ref,
//! lines, score and the first 160 characters of its text) to a sink. No re-rank, snippets, permissions,
//! kinds, pages, citations, freshness, runtime or protocol library: a lower bound on the server's CPU per
//! call for issue 44's target, on the same index and machine. Prints the CPU per call (the thread's time on
//! a core, from `/proc/thread-self/schedstat`) and the p50 of each call's wall time, then the same for the
//! same calls again, every word's scores kept (what the floor costs beside FTS5's scoring).
//!
//! PROJECT must be built; the queries are `mcp_raw.py`'s (the index's section titles, in hash order).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use knowledge::retrieval::terms::query_terms;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let Some(project) = arguments.first() else {
        eprintln!("usage: cargo bench -p knowledge --bench mcp_floor -- PROJECT [N]");
        std::process::exit(2);
    };
    let count: usize = arguments.get(1).and_then(|n| n.parse().ok()).unwrap_or(300);
    let index = Path::new(project).join(".hasna/knowledge/knowledge.db");
    let conn = Connection::open_with_flags(&index, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .expect("the project is built");
    conn.pragma_update(None, "mmap_size", 2_i64 << 30).unwrap();
    let titles: Vec<String> = conn
        .prepare("SELECT DISTINCT title FROM chunks ORDER BY hash")
        .unwrap()
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(|title| title.unwrap().rsplit(" > ").next().unwrap_or_default().to_string())
        .collect();
    let requests: Vec<String> = (0..count)
        .map(|n| {
            let query = &titles[n % titles.len()];
            serde_json::json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                "params": {"name": "knowledge_search", "arguments": {"query": query}}})
            .to_string()
        })
        .collect();

    let mut kept: HashMap<String, Arc<[(i64, f64)]>> = HashMap::new();
    let mut sink = std::io::sink();
    let mut walls = Vec::with_capacity(count);
    // Read the index once as the server's first calls would, outside the measure.
    let _ =
        conn.query_row("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'a'", [], |row| row.get::<_, i64>(0));
    // The calls as `mcp_raw.py` makes them, then the same calls again with every word's scores kept: what
    // is left then is the floor's own work beside FTS5's scoring.
    for pass in ["floor", "floor with every word kept"] {
        walls.clear();
        let cpu_before = thread_cpu_ns();
        for request in &requests {
            let started = Instant::now();
            let answer = answer(&conn, &mut kept, request);
            sink.write_all(answer.as_bytes()).unwrap();
            walls.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let cpu = (thread_cpu_ns() - cpu_before) as f64 / 1e6 / count as f64;
        walls.sort_by(f64::total_cmp);
        println!(
            "{pass}, {count} knowledge_search calls on {project}: CPU {cpu:.3} ms per call, wall p50 {:.3} ms, p95 {:.3} ms",
            walls[count / 2],
            walls[count * 95 / 100]
        );
    }
}

/// The answer line to one request.
fn answer(conn: &Connection, kept: &mut HashMap<String, Arc<[(i64, f64)]>>, request: &str) -> String {
    let request: serde_json::Value = serde_json::from_str(request).unwrap();
    // The search's own terms (stopwords dropped, at most 32), each scored as the server scores it.
    let words = query_terms(request["params"]["arguments"]["query"].as_str().unwrap_or_default());
    let mut summed: Vec<(i64, f64)> = Vec::new();
    for (at, word) in words.iter().enumerate() {
        let scores = match kept.get(word) {
            Some(scores) => scores.clone(),
            None => {
                let scores: Arc<[(i64, f64)]> = conn
                    .prepare_cached(
                        "SELECT rowid, -bm25(chunks_fts, 2.0, 1.0, 0.5) FROM chunks_fts WHERE chunks_fts MATCH ?1",
                    )
                    .unwrap()
                    .query_map([format!("\"{}\"", word.replace('"', "\"\""))], |row| Ok((row.get(0)?, row.get(1)?)))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect::<Vec<_>>()
                    .into();
                kept.insert(word.clone(), scores.clone());
                scores
            }
        };
        summed = if at == 0 { scores.to_vec() } else { merge(&summed, &scores) };
    }
    let by_score = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut best = summed;
    if best.len() > 10 {
        best.select_nth_unstable_by(9, by_score);
        best.truncate(10);
    }
    best.sort_by(by_score);
    let mut results = Vec::with_capacity(best.len());
    for (row, score) in best {
        let hit = conn
            .prepare_cached(
                "SELECT c.id, c.title, c.text, s.uri, s.path, c.revision, c.start_line, c.end_line
                 FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.seq = ?1",
            )
            .unwrap()
            .query_row([row], |row| {
                let text: String = row.get(2)?;
                Ok(serde_json::json!({
                    "id": row.get::<_, String>(0)?, "title": row.get::<_, String>(1)?,
                    "text": text.chars().take(160).collect::<String>(),
                    "uri": row.get::<_, String>(3)?, "path": row.get::<_, String>(4)?,
                    "revision": row.get::<_, String>(5)?, "start_line": row.get::<_, i64>(6)?,
                    "end_line": row.get::<_, i64>(7)?, "score": score,
                }))
            })
            .optional()
            .unwrap();
        results.extend(hit);
    }
    let body = serde_json::json!({"results": results}).to_string();
    serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "content": [{"type": "text", "text": body}], "structuredContent": {"results": results}}})
    .to_string()
        + "\n"
}

/// Two row-ordered score lists as one (FTS5 returns a word's matches in row order), a row in both scoring
/// the sum.
fn merge(a: &[(i64, f64)], b: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let mut merged = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => (merged.push(a[i]), i += 1),
            std::cmp::Ordering::Greater => (merged.push(b[j]), j += 1),
            std::cmp::Ordering::Equal => (merged.push((a[i].0, a[i].1 + b[j].1)), (i, j) = (i + 1, j + 1)),
        };
    }
    merged.extend_from_slice(&a[i..]);
    merged.extend_from_slice(&b[j..]);
    merged
}

/// This thread's time on a core so far, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux");
    stat.split_whitespace().next().and_then(|ns| ns.parse().ok()).expect("schedstat's first field")
}
