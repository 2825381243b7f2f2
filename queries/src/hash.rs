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

/// [`content_hash`] of a value's `Hash` stream: every field, with the lengths of its strings and lists,
/// fed to BLAKE3. Cheaper than hashing a serialized copy, and as stable as the value's type.
#[must_use]
pub fn value_hash(value: &impl std::hash::Hash) -> String {
    struct Blake3(blake3::Hasher);
    impl std::hash::Hasher for Blake3 {
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
        fn finish(&self) -> u64 {
            unreachable!("the digest is read with `finalize`")
        }
    }
    let mut hasher = Blake3(blake3::Hasher::new());
    value.hash(&mut hasher);
    let mut hex = hasher.0.finalize().to_hex().to_string();
    hex.truncate(32);
    hex
}
