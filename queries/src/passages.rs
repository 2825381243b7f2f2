//! Passage keys: each line of a source as a 64-bit key, so builds can record when a line first appeared and
//! `knowledge introduced` can look a passage's lines up by the same keys. A line is keyed by its words
//! (whitespace collapsed), so re-indenting or re-wrapping spaces does not make it new; blank lines have none.

/// The key of one line; `None` for a blank one.
#[must_use]
pub fn line_key(line: &str) -> Option<i64> {
    key_of(line, &mut String::new())
}

/// The key of one line, its words collapsed into `words` (a buffer reused across lines) and hashed at once:
/// the same bytes, so the same key, as hashing each word and space in turn, which cost a build a hash
/// update per word.
fn key_of(line: &str, words: &mut String) -> Option<i64> {
    words.clear();
    for word in line.split_whitespace() {
        if !words.is_empty() {
            words.push(' ');
        }
        words.push_str(word);
    }
    if words.is_empty() {
        return None;
    }
    let digest = blake3::hash(words.as_bytes());
    let bytes: [u8; 8] = digest.as_bytes()[..8].try_into().expect("a digest has 8 bytes");
    Some(i64::from_le_bytes(bytes))
}

/// The distinct keys of a text's lines, sorted.
#[must_use]
pub fn line_keys(text: &str) -> Vec<i64> {
    let mut words = String::new();
    let mut keys: Vec<i64> = text.lines().filter_map(|line| key_of(line, &mut words)).collect();
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
        // The key of a line stays what indexes hold: the first 8 bytes of the BLAKE3 hash of its words joined
        // by single spaces (passage origins recorded by earlier builds are looked up by it).
        let words = blake3::hash(b"Each value has an owner.");
        let expected = i64::from_le_bytes(words.as_bytes()[..8].try_into().unwrap());
        assert_eq!(line_key(" Each\tvalue  has an owner. "), Some(expected));
        assert_eq!(line_keys("x\n Each value has\tan owner.\n\n"), {
            let mut keys = vec![expected, line_key("x").unwrap()];
            keys.sort_unstable();
            keys
        });
    }
}
