//! Content hashing: the revision of a source and the identity of a chunk's text.

/// The hex BLAKE3 digest of `bytes`, truncated to 128 bits (32 hex digits).
///
/// 128 bits keep collisions out of reach for any corpus while keeping refs short enough to quote.
#[must_use]
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = blake3::hash(bytes);
    let mut hex = digest.to_hex().to_string();
    hex.truncate(32);
    hex
}
