//! The vector index's scan against the memory-bandwidth floor: `cargo bench -p knowledge --bench vectors`.
//!
//! 100,000 synthetic 384-dimension vectors (random, L2-normalized) in one matrix; 100 top-10 searches with
//! random queries (every row allowed, as for the default principal, and again with half the rows filtered
//! out inside the scan). The floor is the time to read the matrix once on every core (a parallel sum of the
//! same bytes); the scan can be no faster than that.

use std::time::{Duration, Instant};

use knowledge::embeddings::{MatrixIndex, VectorIndex};
use rayon::prelude::*;

const ROWS: usize = 100_000;
const DIMENSIONS: usize = 384;

fn main() {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let vector = |random: &mut dyn FnMut() -> f32| {
        let mut v: Vec<f32> = (0..DIMENSIONS).map(|_| random()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    };
    let matrix: Vec<f32> = (0..ROWS).flat_map(|_| vector(&mut random)).collect();
    let rows: Vec<(i64, String, Option<String>)> =
        (0..ROWS).map(|i| (i as i64, if i % 2 == 0 { "a.md" } else { "b.md" }.to_string(), None)).collect();
    let bytes = matrix.len() * 4;
    let index = MatrixIndex::from_matrix(DIMENSIONS, matrix.clone(), rows);
    let queries: Vec<Vec<f32>> = (0..100).map(|_| vector(&mut random)).collect();

    // The floor: read every byte of the matrix once, on every core, doing the least work per byte (a sum);
    // the fastest of 20 runs. A scan must read the same bytes, so it cannot beat this.
    let floor = (0..20)
        .map(|_| {
            let start = Instant::now();
            let total: f32 = matrix.par_chunks(1 << 16).map(lane_sum).sum();
            std::hint::black_box(total);
            start.elapsed()
        })
        .min()
        .unwrap();
    let bandwidth = bytes as f64 / floor.as_secs_f64();

    let time = |allow: &knowledge::embeddings::Allow<'_>| {
        let mut times: Vec<Duration> = queries
            .iter()
            .map(|query| {
                let start = Instant::now();
                std::hint::black_box(index.search(query, 10, allow));
                start.elapsed()
            })
            .collect();
        times.sort();
        (times[times.len() / 2], times[times.len() * 95 / 100])
    };
    let (all_p50, all_p95) = time(&|_, _| true);
    let (half_p50, half_p95) = time(&|path, _| path == "a.md");
    println!(
        "| vectors | MB scanned | read bandwidth | floor (one read) | top-10 p50 | p95 | p50 / floor | half filtered p50 | p95 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {ROWS} × {DIMENSIONS} | {:.1} | {:.1} GB/s | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}× | {:.2} ms | {:.2} ms |",
        bytes as f64 / 1e6,
        bandwidth / 1e9,
        floor.as_secs_f64() * 1e3,
        all_p50.as_secs_f64() * 1e3,
        all_p95.as_secs_f64() * 1e3,
        all_p50.as_secs_f64() / floor.as_secs_f64(),
        half_p50.as_secs_f64() * 1e3,
        half_p95.as_secs_f64() * 1e3,
    );
}

/// A sum in eight lanes: as little work per byte as the compiler can vectorize, so reading is the cost.
fn lane_sum(block: &[f32]) -> f32 {
    let (lanes, rest) = block.as_chunks::<8>();
    let mut sums = [0.0_f32; 8];
    for x in lanes {
        for lane in 0..8 {
            sums[lane] += x[lane];
        }
    }
    sums.iter().sum::<f32>() + rest.iter().sum::<f32>()
}
