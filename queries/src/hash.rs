//! Content hashing: the revision of a source and the identity of a chunk's text.

/// The hex BLAKE3 digest of `bytes`, truncated to 128 bits (32 hex digits).
///
/// 128 bits keep collisions out of reach for any corpus while keeping refs short enough to quote.
#[must_use]
pub fn content_hash(bytes: &[u8]) -> String {
    short_hex(&blake3::hash(bytes))
}

/// A digest as [`content_hash`] writes it: the first 32 hex digits.
fn short_hex(digest: &blake3::Hash) -> String {
    let mut hex = digest.to_hex().to_string();
    hex.truncate(32);
    hex
}

/// A `Hasher` that feeds BLAKE3: the [`content_hash`] of values' `Hash` streams (every field, with the
/// lengths of its strings and lists), cheaper than hashing a serialized copy. A `Hash` stream is many
/// writes of a few bytes, so they are gathered and handed to BLAKE3 in blocks.
#[derive(Default)]
pub(crate) struct ContentHasher {
    hasher: blake3::Hasher,
    pending: Vec<u8>,
}

impl ContentHasher {
    const BLOCK: usize = 16 * 1024;

    /// The digest as [`content_hash`] writes it.
    pub(crate) fn hex(&mut self) -> String {
        self.hasher.update(&self.pending);
        self.pending.clear();
        short_hex(&self.hasher.finalize())
    }
}

impl std::hash::Hasher for ContentHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= Self::BLOCK {
            self.hasher.update(&self.pending);
            self.pending.clear();
        }
    }

    fn finish(&self) -> u64 {
        unreachable!("the digest is read with `hex`")
    }
}
