//! MinHash signatures of word 5-grams: what near-duplicate lint compares, and what a build stores with
//! each chunk so lint need not read texts. A leaf module: the build computes signatures, lint reads them.

/// A MinHash signature: `BANDS` bands of `ROWS` hashes.
pub type Signature = [u64; BANDS * ROWS];

/// Words per shingle.
pub(crate) const SHINGLE_WORDS: usize = 5;
/// Chunks with fewer shingles than this are too short for similarity to mean anything (a title and a
/// sentence of boilerplate).
pub(crate) const MIN_SHINGLES: usize = 24;
/// The signature: `BANDS` bands of `ROWS` hashes (a power of two slots). Two chunks of similarity s share a
/// band with probability about 1 − (1 − s⁴)⁸: 0.98 at s = 0.8, 0.71 at 0.6, 0.25 at 0.4; the exact check then
/// applies the threshold.
pub(crate) const BANDS: usize = 8;
pub(crate) const ROWS: usize = 4;
/// Calls `each` with the hash of every word 5-gram of a text, in order. Words are runs of ASCII letters
/// and digits and non-ASCII bytes (so letters of any script), lowercased; each word is hashed with FNV-1a.
pub(crate) fn for_each_shingle(text: &str, mut each: impl FnMut(u64)) {
    let mut window = [0_u64; SHINGLE_WORDS];
    let mut words = 0usize;
    let mut word: Option<u64> = None;
    for byte in text.bytes().chain(std::iter::once(b' ')) {
        if byte.is_ascii_alphanumeric() || byte >= 0x80 {
            let h = word.unwrap_or(0xcbf2_9ce4_8422_2325);
            word = Some((h ^ u64::from(byte.to_ascii_lowercase())).wrapping_mul(0x0100_0000_01b3));
        } else if let Some(hash) = word.take() {
            window[words % SHINGLE_WORDS] = hash;
            words += 1;
            if words >= SHINGLE_WORDS {
                // The window in word order, oldest first, each word rotated by its place so that order
                // counts, then one finalizer: a full mix per word cost more than the rest of lint.
                let combined = (0..SHINGLE_WORDS)
                    .map(|k| window[(words + k) % SHINGLE_WORDS].rotate_left(13 * k as u32))
                    .fold(0_u64, |h, w| h ^ w);
                each(mix(combined));
            }
        }
    }
}

/// The sorted, distinct shingle hashes of a text.
pub(crate) fn shingle_set(text: &str) -> Vec<u64> {
    let mut hashes = Vec::new();
    for_each_shingle(text, |h| hashes.push(h));
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// One-permutation MinHash: each shingle hash falls into one slot of the signature by its top bits, and a
/// slot keeps the least of its hashes, in one pass over the text. `None` for a text with fewer than
/// [`MIN_SHINGLES`] shingles. An empty slot stays `u64::MAX`.
#[must_use]
pub fn signature(text: &str) -> Option<Signature> {
    const SLOT_BITS: u32 = (BANDS * ROWS).trailing_zeros();
    let mut signature = [u64::MAX; BANDS * ROWS];
    let mut count = 0;
    for_each_shingle(text, |shingle| {
        count += 1;
        let slot = (shingle >> (64 - SLOT_BITS)) as usize;
        signature[slot] = signature[slot].min(shingle << SLOT_BITS);
    });
    (count >= MIN_SHINGLES).then_some(signature)
}

/// A signature as the index stores it: its hashes as little-endian bytes.
#[must_use]
pub fn signature_bytes(signature: &Signature) -> Vec<u8> {
    signature.iter().flat_map(|hash| hash.to_le_bytes()).collect()
}

/// A stored signature; `None` for bytes of another length (an index from another version is not read).
#[must_use]
pub fn signature_from_bytes(bytes: &[u8]) -> Option<Signature> {
    let mut signature = [0_u64; BANDS * ROWS];
    if bytes.len() != signature.len() * 8 {
        return None;
    }
    for (slot, word) in signature.iter_mut().zip(bytes.chunks_exact(8)) {
        *slot = u64::from_le_bytes(word.try_into().expect("eight bytes"));
    }
    Some(signature)
}

/// Jaccard similarity of two sorted, distinct hash lists.
pub(crate) fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let shared = knowledge_queries::shared_sorted(a, b);
    shared as f64 / (a.len() + b.len() - shared) as f64
}

/// SplitMix64's finalizer: a fast, well-mixed 64-bit hash step.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
