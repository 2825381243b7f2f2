//! Near-duplicate chunks across sources: the share of word 5-grams two chunks have in common (their
//! Jaccard similarity), found without comparing every pair. Each chunk gets a MinHash signature; chunks
//! whose signatures agree on a whole band of it become candidates (locality-sensitive hashing), and only
//! candidates are compared exactly, so a report never rests on an estimate. A build stores each chunk's
//! signature with it, so lint reads signatures, and the text of candidates only.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::sources::minhash::{BANDS, ROWS, Signature, jaccard, mix, shingle_set, signature_from_bytes};

/// A chunk to compare: where it is, its signature, and where its text is.
#[derive(Debug, Clone)]
pub struct ChunkText {
    pub path: String,
    /// The source's revision: chunks of byte-identical files are exact duplicates, reported as such.
    pub revision: String,
    pub start_line: u32,
    pub end_line: u32,
    /// `None` for a chunk too short to compare.
    pub signature: Option<Signature>,
    pub body: Body,
}

impl ChunkText {
    /// A chunk as the index stores it: its signature from its bytes, its text left in its row.
    #[must_use]
    pub fn stored(chunk: crate::store::StoredChunk) -> ChunkText {
        ChunkText {
            path: chunk.path,
            revision: chunk.revision,
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            signature: chunk.minhash.as_deref().and_then(signature_from_bytes),
            body: Body::Stored(chunk.seq),
        }
    }
}

/// A chunk's text: in hand (a file lint parsed), or the chunk's row in the index, read only if needed.
#[derive(Debug, Clone)]
pub enum Body {
    Text(String),
    Stored(i64),
}

/// A pair of near-duplicate chunks (indexes into the input) and their similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct NearDuplicate {
    pub(super) first: usize,
    pub(super) second: usize,
    pub(super) similarity: f64,
}

/// A band bucket this full is boilerplate shared by many files; its members are not paired with each other.
const MAX_BUCKET: usize = 64;
/// A chunk with near duplicates in more sources than this is a standard text the project repeats on
/// purpose (a license header, RFC 2119's key words), not a copy someone forgot: none of its pairs is reported.
const MAX_COPIES: usize = 3;

/// Pairs of chunks from different sources whose word 5-gram Jaccard similarity is at least `threshold`.
/// `stored_texts` reads the texts of stored chunks by row, for the candidates only.
pub(super) fn near_duplicates<E>(
    chunks: &[&ChunkText],
    threshold: f64,
    stored_texts: impl FnOnce(&[i64]) -> Result<HashMap<i64, String>, E>,
) -> Result<Vec<NearDuplicate>, E> {
    // Band buckets: each (band key, chunk) entry, sorted so that a bucket is a run of equal keys (the key
    // hashes the band's number with its rows). Sorting a flat list beats a map of vectors here.
    let mut entries: Vec<(u64, usize)> = Vec::with_capacity(chunks.len() * BANDS);
    for (index, chunk) in chunks.iter().enumerate() {
        let Some(signature) = &chunk.signature else { continue };
        for band in 0..BANDS {
            let key = signature[band * ROWS..(band + 1) * ROWS].iter().fold(band as u64, |h, v| mix(h ^ v));
            entries.push((key, index));
        }
    }
    entries.sort_unstable();
    let mut candidates: Vec<(usize, usize)> = Vec::new();
    for bucket in entries.chunk_by(|a, b| a.0 == b.0).filter(|m| m.len() > 1 && m.len() <= MAX_BUCKET) {
        for (at, &(_, a)) in bucket.iter().enumerate() {
            for &(_, b) in &bucket[at + 1..] {
                let (first, second) = (a.min(b), a.max(b));
                let (x, y) = (&chunks[first], &chunks[second]);
                if x.path != y.path && x.revision != y.revision {
                    candidates.push((first, second));
                }
            }
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    // Exact shingle sets, for the candidates only.
    let mut involved: Vec<usize> = candidates.iter().flat_map(|&(a, b)| [a, b]).collect();
    involved.sort_unstable();
    involved.dedup();
    let rows: Vec<i64> = involved
        .iter()
        .filter_map(|&index| match chunks[index].body {
            Body::Stored(row) => Some(row),
            Body::Text(_) => None,
        })
        .collect();
    let stored = stored_texts(&rows)?;
    let sets: HashMap<usize, Vec<u64>> = involved
        .into_par_iter()
        .map(|index| {
            let text = match &chunks[index].body {
                Body::Text(text) => text.as_str(),
                Body::Stored(row) => stored.get(row).map_or("", String::as_str),
            };
            (index, shingle_set(text))
        })
        .collect();
    let pairs: Vec<NearDuplicate> = candidates
        .into_iter()
        .filter_map(|(first, second)| {
            let similarity = jaccard(&sets[&first], &sets[&second]);
            (similarity >= threshold).then_some(NearDuplicate { first, second, similarity })
        })
        .collect();
    let mut copies: HashMap<usize, std::collections::HashSet<&str>> = HashMap::new();
    for pair in &pairs {
        copies.entry(pair.first).or_default().insert(&chunks[pair.second].path);
        copies.entry(pair.second).or_default().insert(&chunks[pair.first].path);
    }
    let boilerplate = |chunk: usize| copies.get(&chunk).is_some_and(|sources| sources.len() > MAX_COPIES);
    Ok(pairs.into_iter().filter(|pair| !boilerplate(pair.first) && !boilerplate(pair.second)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::minhash::{signature, signature_bytes};

    fn chunk(path: &str, text: &str) -> ChunkText {
        ChunkText {
            path: path.to_string(),
            revision: knowledge_queries::content_hash(text.as_bytes()),
            start_line: 1,
            end_line: 3,
            signature: signature(text),
            body: Body::Text(text.to_string()),
        }
    }

    fn near_duplicates(chunks: &[ChunkText], threshold: f64) -> Vec<NearDuplicate> {
        let chunks: Vec<&ChunkText> = chunks.iter().collect();
        super::near_duplicates(&chunks, threshold, |_| Ok::<_, ()>(HashMap::new())).unwrap()
    }

    #[test]
    fn stored_texts_are_read_for_candidates_only_and_signatures_survive_storage() {
        let edited = BASE.replace("regularly looks", "constantly looks");
        let stored = |path: &str, text: &str, row: i64| ChunkText {
            signature: signature(text).and_then(|signature| signature_from_bytes(&signature_bytes(&signature))),
            body: Body::Stored(row),
            ..chunk(path, text)
        };
        let unrelated = "A short note that is far too short to compare with anything at all.";
        let chunks = [stored("a.md", BASE, 7), chunk("b.md", &edited), stored("c.md", unrelated, 9)];
        let mut asked = Vec::new();
        let found = super::near_duplicates(&chunks.iter().collect::<Vec<_>>(), 0.8, |rows: &[i64]| {
            asked = rows.to_vec();
            Ok::<_, ()>(HashMap::from([(7, BASE.to_string())]))
        })
        .unwrap();
        assert_eq!(asked, [7], "only the candidate's text is read");
        assert_eq!(found.len(), 1);
        assert_eq!(signature_from_bytes(&[0; 7]), None);
    }

    const BASE: &str = "Ownership is a set of rules that govern how a Rust program manages memory. All programs have \
                        to manage the way they use a computer's memory while running. Some languages have garbage \
                        collection that regularly looks for no-longer-used memory as the program runs; in other \
                        languages, the programmer must explicitly allocate and free the memory.";

    #[test]
    fn a_lightly_edited_copy_is_found_and_an_unrelated_text_is_not() {
        let edited = BASE.replace("regularly looks", "constantly looks");
        let unrelated = "Lifetimes are another kind of generic that we have already been using. Rather than \
                         ensuring that a type has the behavior we want, lifetimes ensure that references are valid \
                         as long as we need them to be, which every reference in Rust has as its scope.";
        let chunks = [chunk("a.md", BASE), chunk("b.md", &edited), chunk("c.md", unrelated)];
        let found = near_duplicates(&chunks, 0.8);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].first, found[0].second), (0, 1));
        assert!(found[0].similarity > 0.8 && found[0].similarity < 1.0);
    }

    #[test]
    fn text_repeated_in_many_sources_is_boilerplate() {
        let chunks: Vec<ChunkText> =
            (0..6).map(|n| chunk(&format!("{n}.md"), &format!("{BASE} Number {n}."))).collect();
        assert!(near_duplicates(&chunks, 0.8).is_empty());
        assert_eq!(near_duplicates(&chunks[..4], 0.8).len(), 6, "four copies: each has three others, all reported");
    }

    #[test]
    fn the_threshold_holds_exactly_and_short_or_same_file_chunks_are_skipped() {
        let half = format!("{} Something else entirely, about lifetimes and borrowing and the stack.", &BASE[..150]);
        let chunks = [chunk("a.md", BASE), chunk("b.md", &half), chunk("a.md", &BASE.replace("Some", "Many"))];
        assert!(near_duplicates(&chunks, 0.9).is_empty(), "a different half is below 0.9; the same file never pairs");
        let short = [chunk("a.md", "A short note."), chunk("b.md", "A short note!")];
        assert!(near_duplicates(&short, 0.5).is_empty());
    }
}
