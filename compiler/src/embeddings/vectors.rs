//! The vector index searches scan: the `VectorIndex` interface and `MatrixIndex`, one generation's vectors
//! as one matrix, scanned with the permission filter applied inside.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rusqlite::Connection;

/// Nearest-vector search over one generation. Searches and their output depend only on this interface:
/// [`MatrixIndex`] scans; an ANN index or pgvector can take its place.
pub trait VectorIndex: Send + Sync {
    /// How many vectors it holds.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `k` rows most similar to `query` (cosine: the vectors are normalized) among those `allow`
    /// accepts (by source path and the entity the chunk is the excerpt of), best first. `allow` is applied
    /// inside the search, never to its results.
    fn search(&self, query: &[f32], k: usize, allow: &Allow<'_>) -> Vec<VectorHit>;
}

/// One row a vector search found.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorHit {
    /// The chunk's row (`chunks.seq`).
    pub seq: i64,
    pub similarity: f32,
    /// The chunk's source path as the index searched knows it: a reader checks it against the chunk's row.
    pub path: String,
}

/// Which rows a search may return, by source path and entity slug (`None` for a chunk of the text).
pub type Allow<'a> = dyn Fn(&str, Option<&str>) -> bool + Sync + 'a;

/// The vectors of one generation as one contiguous matrix, scanned in parallel.
pub struct MatrixIndex {
    dimensions: usize,
    /// Row i's vector is `matrix[i * dimensions..(i + 1) * dimensions]`.
    matrix: Vec<f32>,
    /// The chunk's row in `chunks` (`seq`), its source's path and its entity, for filters.
    rows: Vec<(i64, String, Option<String>)>,
}

/// The vector index searches of `model` use for the index `conn` reads: its vector files, memory-mapped, when
/// they hold the vectors of the index's last run (the build keeps them so), otherwise every vector loaded
/// from SQLite. Kept as long as the process for the latest index state it saw: a search after a new build
/// (another `last_run`) opens again. A search between a build's commit and its vector files (the build
/// writes them after) loads from SQLite, and the next search tries the files again rather than keep that
/// load for the run. Every principal shares it; permissions are applied by the scan.
pub fn vector_index(conn: &Connection, model: &str) -> rusqlite::Result<Arc<dyn VectorIndex>> {
    /// The run an index was opened for, whether it is the mapped files, and the index.
    type Cache = Mutex<HashMap<(String, String), (String, bool, Arc<dyn VectorIndex>)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let file = conn.path().unwrap_or_default().to_string();
    let run = crate::store::meta(conn, "last_run")?.unwrap_or_default();
    let cache = CACHE.get_or_init(Cache::default);
    let key = (file.clone(), model.to_string());
    let cached = cache.lock().expect("the cache lock is never poisoned").get(&key).cloned();
    let loaded = match cached {
        Some((seen, true, index)) if seen == run => return Ok(index),
        Some((seen, false, index)) if seen == run => Some(index),
        _ => None,
    };
    let mapped =
        (!file.is_empty()).then(|| super::MappedIndex::open(std::path::Path::new(&file), model, &run)).flatten();
    let (is_mapped, index): (bool, Arc<dyn VectorIndex>) = match (mapped, loaded) {
        (Some(mapped), _) => (true, Arc::new(mapped)),
        (None, Some(loaded)) => return Ok(loaded),
        (None, None) => (false, Arc::new(MatrixIndex::load(conn, model)?)),
    };
    cache.lock().expect("the cache lock is never poisoned").insert(key, (run, is_mapped, index.clone()));
    Ok(index)
}

impl MatrixIndex {
    /// Loads the ready vectors of `model`.
    pub fn load(conn: &Connection, model: &str) -> rusqlite::Result<MatrixIndex> {
        let mut index = MatrixIndex { dimensions: 0, matrix: Vec::new(), rows: Vec::new() };
        crate::store::each_ready_vector(conn, model, |seq, path, entity, dimensions, bytes| {
            let dimensions = usize::try_from(dimensions).unwrap_or(0);
            if dimensions == 0
                || bytes.len() != dimensions * 4
                || (index.dimensions != 0 && dimensions != index.dimensions)
            {
                return;
            }
            index.dimensions = dimensions;
            index.matrix.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            index.rows.push((seq, path, entity));
        })?;
        Ok(index)
    }

    /// An index over vectors already in memory (`matrix` holds `rows.len()` vectors of `dimensions`), for
    /// benchmarks and tests. `rows` are (`chunks.seq`, source path, entity slug).
    #[must_use]
    pub fn from_matrix(dimensions: usize, matrix: Vec<f32>, rows: Vec<(i64, String, Option<String>)>) -> MatrixIndex {
        assert_eq!(matrix.len(), dimensions * rows.len(), "one vector per row");
        MatrixIndex { dimensions, matrix, rows }
    }
}

impl VectorIndex for MatrixIndex {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn search(&self, query: &[f32], k: usize, allow: &Allow<'_>) -> Vec<VectorHit> {
        let row = |at: usize| {
            let (_, path, entity) = &self.rows[at];
            (path.as_str(), entity.as_deref())
        };
        scan(&self.matrix, self.dimensions, query, k, allow, &row)
            .into_iter()
            .map(|(at, similarity)| VectorHit { seq: self.rows[at].0, similarity, path: self.rows[at].1.clone() })
            .collect()
    }
}

/// The `k` rows of `matrix` (rows of `dimensions` floats) most similar to `query`, best first, as (row,
/// similarity), among those `allow` accepts by the path and entity `row` gives.
pub(super) fn scan<'rows>(
    matrix: &[f32],
    dimensions: usize,
    query: &[f32],
    k: usize,
    allow: &Allow<'_>,
    row: &RowNames<'rows>,
) -> Vec<(usize, f32)> {
    if query.len() != dimensions || dimensions == 0 {
        return Vec::new();
    }
    let scores = |rows: std::ops::Range<usize>, out: &mut Vec<f32>| {
        out.extend(rows.map(|at| dot(&matrix[at * dimensions..(at + 1) * dimensions], query)));
    };
    scan_rows(matrix.len() / dimensions, k, allow, row, &scores)
}

/// A row's source path and entity, by its index.
pub(super) type RowNames<'rows> = dyn Fn(usize) -> (&'rows str, Option<&'rows str>) + Sync + 'rows;

/// Appends the scores of a range of rows, in order: one call a block, so a scorer's loop over rows is its
/// own (the 4-bit rows' AVX2 loop is not entered once a row).
pub(super) type BlockScores<'a> = dyn Fn(std::ops::Range<usize>, &mut Vec<f32>) + Sync + 'a;

/// The `k` of `rows` rows with the highest score, best first, as (row, score), among those `allow`
/// accepts by the path and entity `row` gives. Each block of rows is scored at once and keeps its own best
/// `k` (in parallel), checking `allow` only for the rows that would enter it, and the blocks' lists are
/// merged.
pub(super) fn scan_rows<'rows>(
    rows: usize,
    k: usize,
    allow: &Allow<'_>,
    row: &RowNames<'rows>,
    scores: &BlockScores<'_>,
) -> Vec<(usize, f32)> {
    if k == 0 || rows == 0 {
        return Vec::new();
    }
    // A few blocks per thread: each keeps its own best, and a row enters a block's best (and is checked
    // against `allow`) about k × (1 + ln(block / k)) times per block, so fewer, larger blocks check fewer
    // rows (at a million rows and k = 200, 4,096-row blocks checked a fifth of them).
    let block_rows = (rows / (4 * rayon::current_num_threads())).max(4096);
    let best = (0..rows.div_ceil(block_rows))
        .into_par_iter()
        .map(|block| {
            let mut top = TopK::new(k);
            let first = block * block_rows;
            let mut block_scores = Vec::with_capacity(block_rows);
            scores(first..rows.min(first + block_rows), &mut block_scores);
            for (at, score) in (first..).zip(block_scores) {
                if top.admits(score) {
                    let (path, entity) = row(at);
                    if allow(path, entity) {
                        top.push(at, score);
                    }
                }
            }
            top
        })
        .reduce(|| TopK::new(k), TopK::merge);
    best.into_sorted()
}

/// The best `k` (row, score) pairs seen so far: a min-heap on the score, so a row that enters costs
/// `log k` (the 8-bit search keeps hundreds).
struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Scored>>,
}

/// A row's score, ordered by score and then by row (the lower row first among equals).
#[derive(Clone, Copy, PartialEq)]
struct Scored(f32, usize);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    /// Whether a row of this score would be kept.
    fn admits(&self, score: f32) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|worst| score > worst.0.0)
    }

    fn push(&mut self, row: usize, score: f32) {
        self.heap.push(Reverse(Scored(score, row)));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    fn merge(mut self, other: TopK) -> TopK {
        for Reverse(Scored(score, row)) in other.heap {
            if self.admits(score) {
                self.push(row, score);
            }
        }
        self
    }

    /// Best first; among equal scores, the lower row first.
    fn into_sorted(self) -> Vec<(usize, f32)> {
        self.heap.into_sorted_vec().into_iter().map(|Reverse(Scored(score, row))| (row, score)).collect()
    }
}

/// A dot product in eight lanes, which the compiler turns into SIMD (one running sum could not be
/// reordered, so it would stay scalar).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_lanes, a_rest) = a.as_chunks::<8>();
    let (b_lanes, b_rest) = b.as_chunks::<8>();
    let mut sums = [0.0_f32; 8];
    for (x, y) in a_lanes.iter().zip(b_lanes) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum::<f32>()
}

/// Whether the processor has AVX2, checked once per process.
#[cfg(target_arch = "x86_64")]
pub(super) fn avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| std::arch::is_x86_feature_detected!("avx2"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_keeps_the_best_k_and_applies_the_filter_inside() {
        let index = MatrixIndex {
            dimensions: 2,
            matrix: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8, -1.0, 0.0],
            rows: vec![
                (10, "a.md".into(), None),
                (11, "b.md".into(), None),
                (12, "secret.md".into(), None),
                (13, "d.md".into(), Some("symbol/d.rs#f".into())),
            ],
        };
        let found = |query: &[f32], k: usize, allow: &Allow<'_>| -> Vec<(i64, f32)> {
            index.search(query, k, allow).into_iter().map(|hit| (hit.seq, hit.similarity)).collect()
        };
        assert_eq!(found(&[1.0, 0.0], 2, &|_, _| true), [(10, 1.0), (12, 0.6)]);
        assert_eq!(found(&[1.0, 0.0], 2, &|path, _| path != "secret.md"), [(10, 1.0), (11, 0.0)]);
        assert_eq!(found(&[-1.0, 0.0], 1, &|_, entity| entity.is_some()), [(13, 1.0)]);
    }
}
