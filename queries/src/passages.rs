//! Passage keys: each line of a source as a 64-bit key, so builds can record when a line first appeared and
//! `knowledge introduced` can look a passage's lines up by the same keys. A line is keyed by its words
//! (whitespace collapsed), so re-indenting or re-wrapping spaces does not make it new; blank lines have none.

/// The key of one line; `None` for a blank one.
#[must_use]
pub fn line_key(line: &str) -> Option<i64> {
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(first.as_bytes());
    for word in words {
        hasher.update(b" ");
        hasher.update(word.as_bytes());
    }
    let digest = hasher.finalize();
    let bytes: [u8; 8] = digest.as_bytes()[..8].try_into().expect("a digest has 8 bytes");
    Some(i64::from_le_bytes(bytes))
}

/// The distinct keys of a text's lines, sorted.
#[must_use]
pub fn line_keys(text: &str) -> Vec<i64> {
    let mut keys: Vec<i64> = text.lines().filter_map(line_key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_keyed_by_its_words() {
        assert_eq!(line_key("  Each value has an owner.\t"), line_key("Each value  has an owner."));
        assert_ne!(line_key("Each value has an owner."), line_key("Each value has two owners."));
        assert_eq!(line_key("   "), None);
        assert_eq!(line_keys("b\n\na\nb\n").len(), 2);
    }
}
