//! The vector files' search at scale: `cargo bench -p knowledge --bench vector_files -- [ROWS] [QUERIES]`.
//!
//! Writes a base of ROWS (default 1,000,000) 384-dimension vectors twice, with its 4-bit rows and without,
//! and searches both for the top 10 with QUERIES (default 100) queries: recall@10 of the 4-bit search
//! against the exact one, and each one's time in process (p50, p95) after a first search that maps the file.
//! Two sets of vectors: random (uniform on the sphere: the nearest are barely nearer than the rest, the
//! hardest case for a ranking by approximate scores) and clustered (2,000 centres with noise, as text
//! embeddings cluster by topic), each query a stored vector with noise; 20 rows a source path, in order, as a
//! build streams a source's chunks together. Also reports the time to write the
//! file with its 4-bit rows against the time to write the same bytes of vectors alone (the floor): each the
//! median of three rounds, the two alternating (one write's dirty pages slow the next on a shared disk), and
//! the median of the rounds' ratios.

use std::path::Path;
use std::time::{Duration, Instant};

use knowledge::embeddings::{MappedIndex, VectorIndex, write_base};

const DIMENSIONS: usize = 384;

struct Random(u64);

impl Random {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn vector(&mut self) -> Vec<f32> {
        (0..DIMENSIONS).map(|_| self.next()).collect()
    }
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn near(random: &mut Random, centre: &[f32], noise: f32) -> Vec<f32> {
    normalized(centre.iter().map(|x| x + noise * random.next()).collect())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let queries: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    println!(
        "| vectors | rows | recall@10, 4-bit | 4-bit p50 / p95 | exact p50 / p95 | write, with 4-bit rows | write, vectors only (floor) | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for set in ["random", "clustered"] {
        let mut random = Random(0x2545_f491_4f6c_dd1d);
        let centres: Vec<Vec<f32>> = (0..2000).map(|_| normalized(random.vector())).collect();
        let vectors: Vec<Vec<f32>> = (0..rows)
            .map(|i| match set {
                "random" => normalized(random.vector()),
                _ => near(&mut random, &centres[i % centres.len()], 0.12),
            })
            .collect();
        let query_vectors: Vec<Vec<f32>> =
            (0..queries).map(|q| near(&mut random, &vectors[(q * 7919) % rows], 0.08)).collect();
        let table: Vec<(i64, String, Vec<f32>)> =
            vectors.into_iter().enumerate().map(|(i, v)| (i as i64, format!("docs/{}.md", i / 20), v)).collect();
        let (mut floors, mut writes) = (Vec::new(), Vec::new());
        let mut indexes = Vec::new();
        for quantized in [true, true, true, false] {
            if quantized {
                floors.push(write_floor(&table));
            }
            let dir = tempfile::tempdir().unwrap();
            let index = dir.path().join("knowledge.db");
            let start = Instant::now();
            write_base(&index, "bench:384", "run-1", &table, quantized).unwrap();
            if quantized {
                writes.push(start.elapsed());
            }
            // The first file with 4-bit rows and the one without are searched.
            if !quantized || indexes.is_empty() {
                let mapped = MappedIndex::open(&index, "bench:384", "run-1").expect("the file opens");
                indexes.push((dir, mapped));
            }
        }
        let median = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        let ratios: Vec<f64> = writes.iter().zip(&floors).map(|(w, f)| w.as_secs_f64() / f.as_secs_f64()).collect();
        let seconds = |times: &[Duration]| median(times.iter().map(Duration::as_secs_f64).collect());
        let search = |index: &MappedIndex| -> (Vec<Vec<i64>>, Duration, Duration) {
            index.search(&query_vectors[0], 10, &|_, _| true);
            let mut took = Vec::new();
            let found = query_vectors
                .iter()
                .map(|query| {
                    let start = Instant::now();
                    let hits = index.search(query, 10, &|_, _| true);
                    took.push(start.elapsed());
                    hits.into_iter().map(|hit| hit.seq).collect()
                })
                .collect();
            took.sort();
            (found, took[took.len() / 2], took[took.len() * 95 / 100])
        };
        let (approximate, a50, a95) = search(&indexes[0].1);
        let (exact, e50, e95) = search(&indexes[1].1);
        let matched: usize =
            approximate.iter().zip(&exact).map(|(a, e)| a.iter().filter(|s| e.contains(s)).count()).sum();
        let total: usize = exact.iter().map(Vec::len).sum();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {set} | {rows} | {:.4} | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {:.2} s | {:.2} s | {:.2}× |",
            matched as f64 / total as f64,
            ms(a50),
            ms(a95),
            ms(e50),
            ms(e95),
            seconds(&writes),
            seconds(&floors),
            median(ratios),
        );
    }
}

/// The floor of writing a file: the same vectors' bytes written and made durable, nothing else.
fn write_floor(table: &[(i64, String, Vec<f32>)]) -> Duration {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path: &Path = &dir.path().join("floor");
    let start = Instant::now();
    let file = std::fs::File::create(path).unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
    for (_, _, vector) in table {
        out.write_all(bytemuck::cast_slice(vector)).unwrap();
    }
    out.flush().unwrap();
    drop(out);
    file.sync_data().unwrap();
    start.elapsed()
}
