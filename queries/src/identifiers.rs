//! The de-dotted rendering of identifiers, indexed beside the text so that a search for one part of
//! `std::fs::read`, `serde_json`, `pkg.mod` or `HashMap` finds the whole.

/// The parts of every compound identifier in `text`, space-separated, or an empty string when there are
/// none. A compound identifier joins word characters with `.`, `::`, `_`, `-` or `/`, or changes case
/// inside a word (`HashMap` → `Hash Map`). Plain words add nothing: the text column already holds them.
#[must_use]
pub fn identifier_parts(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    // Where a token may start: the text's start, or right after a character that ends one.
    let mut at = 0;
    while at < bytes.len() {
        // A token of lower-case letters and digits alone is a plain word (most of any text): a token is read
        // only where it holds a byte that may make it more (a separator, an upper-case letter, a byte of a
        // character beyond ASCII), from its start, right after the last byte before that one that ends a token
        // (the bytes passed over are ASCII, so that byte is a character). Every chunk of every build is read
        // so: over rust-rfcs' sources, 334 M instructions read byte by byte, 213 M so (docs/performance.md).
        let Some(found) = bytes[at..].iter().position(|&byte| MAY_COMPOUND[usize::from(byte)]) else { break };
        let found = at + found;
        let start =
            bytes[at..found].iter().rposition(|&byte| CLASS[usize::from(byte)] == OTHER).map_or(at, |end| at + end + 1);
        let (token, plain, after) = next_token(&text[start..]);
        at = bytes.len() - after.len();
        if plain {
            continue;
        }
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        // Most tokens are plain words: they are told apart without splitting them.
        if !is_compound(token) {
            continue;
        }
        // A compound token splits into more than one part (tested below): each is written as it is found.
        each_part(token, |part| {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(part);
        });
    }
    out
}

/// The text up to its first character that is neither a word's nor a separator, whether it is a plain ASCII
/// word (as [`is_compound`] reads it once trimmed: no separator between word characters, no lower-case
/// letter before an upper-case one), and the text after that character. Read byte by byte, a character
/// decoded only outside ASCII, and an ASCII token told plain in the same pass (a split at a test of each
/// decoded character, then a trim and a test of each token, cost about 7 % of a rust-rfcs cold build's
/// instructions).
fn next_token(text: &str) -> (&str, bool, &str) {
    let bytes = text.as_bytes();
    let (mut at, mut ascii, mut compound) = (0, true, false);
    // Whether a word character came before, a separator after it, and the last one was lower-case.
    let (mut word_before, mut separated, mut after_lower) = (false, false, false);
    while at < bytes.len() {
        match CLASS[usize::from(bytes[at])] {
            LOWER => {
                compound |= separated;
                (word_before, after_lower) = (true, true);
                // The rest of a run of lower-case letters (most of any text) changes nothing more: it is
                // passed over in a loop of its own.
                at += 1;
                while bytes.get(at).is_some_and(|&byte| CLASS[usize::from(byte)] == LOWER) {
                    at += 1;
                }
                continue;
            }
            UPPER => {
                compound |= separated || after_lower;
                (word_before, after_lower) = (true, false);
            }
            DIGIT => {
                compound |= separated;
                (word_before, after_lower) = (true, false);
            }
            SEPARATOR => (separated, after_lower) = (word_before, false),
            BEYOND_ASCII => {
                let c = text[at..].chars().next().expect("a character starts here");
                if !c.is_alphanumeric() {
                    return (&text[..at], false, &text[at + c.len_utf8()..]);
                }
                ascii = false;
                at += c.len_utf8();
                continue;
            }
            _ => return (&text[..at], ascii && !compound, &text[at + 1..]),
        }
        at += 1;
    }
    (text, ascii && !compound, "")
}

/// What each byte is to [`next_token`]: one table lookup a byte rather than a chain of tests.
const OTHER: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 3;
const SEPARATOR: u8 = 4;
const BEYOND_ASCII: u8 = 5;
const CLASS: [u8; 256] = {
    let mut class = [OTHER; 256];
    let mut byte = 0;
    while byte < 256 {
        class[byte] = match byte as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            b'.' | b':' | b'_' | b'-' | b'/' => SEPARATOR,
            128.. => BEYOND_ASCII,
            _ => OTHER,
        };
        byte += 1;
    }
    class
};

/// The bytes a token must hold to be more than a plain word: a separator, an upper-case letter (a plain
/// word may open with one), or one of a character beyond ASCII.
const MAY_COMPOUND: [bool; 256] = {
    let mut may = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        may[byte] = matches!(CLASS[byte], UPPER | SEPARATOR | BEYOND_ASCII);
        byte += 1;
    }
    may
};

/// Whether a token (trimmed to word characters at both ends) splits into more than one part: it holds a
/// separator, or a lower-case letter followed by an upper-case one.
fn is_compound(token: &str) -> bool {
    let mut after_lower = false;
    for c in token.chars() {
        if matches!(c, '.' | ':' | '_' | '-' | '/') || (after_lower && c.is_uppercase()) {
            return true;
        }
        after_lower = c.is_lowercase();
    }
    false
}

/// Calls `part` with each part of `token`, split at separators and at lower-to-upper case changes.
fn each_part<'a>(token: &'a str, mut part: impl FnMut(&'a str)) {
    for piece in token.split(['.', ':', '_', '-', '/']).filter(|p| !p.is_empty()) {
        let mut start = 0;
        let mut previous: Option<char> = None;
        for (at, c) in piece.char_indices() {
            if let Some(prev) = previous
                && prev.is_lowercase()
                && c.is_uppercase()
            {
                part(&piece[start..at]);
                start = at;
            }
            previous = Some(c);
        }
        part(&piece[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::{each_part, identifier_parts, is_compound};

    #[test]
    fn compound_identifiers_are_split_and_plain_words_left_out() {
        assert_eq!(identifier_parts("Call std::fs::read, then a HashMap."), "std fs read Hash Map");
        assert_eq!(identifier_parts("serde_json and pkg.mod or a-b/c"), "serde json pkg mod a b c");
        assert_eq!(identifier_parts("Plain words, UPPER case, end. x- -y"), "");
        assert_eq!(identifier_parts("an iPhone"), "i Phone");
    }

    /// The parts as a split of the text at every character that is neither a word's nor a separator reads
    /// them, over texts of ASCII, separators, multibyte letters and marks, and random texts of them.
    #[test]
    fn tokens_are_read_as_a_split_at_each_character_reads_them() {
        let by_split = |text: &str| {
            let mut out: Vec<&str> = Vec::new();
            for token in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | ':' | '_' | '-' | '/'))) {
                let token = token.trim_matches(|c: char| !c.is_alphanumeric());
                if is_compound(token) {
                    each_part(token, |part| out.push(part));
                }
            }
            out.join(" ")
        };
        let alphabet: Vec<char> = "aZ9 ._:-/\n`(éÉ日\u{301}😀ǅ—".chars().collect();
        let mut state = 0x5eed_u64;
        for _ in 0..20_000 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let text: String = (0..(state >> 59))
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            assert_eq!(identifier_parts(&text), by_split(&text), "{text:?}");
        }
        let text = "Call std::fs::read on `élanVital` — ÉtéHiver/été, a-b; HashMap.";
        assert_eq!(identifier_parts(text), by_split(text));
    }

    #[test]
    fn a_token_is_compound_exactly_when_it_splits_into_parts() {
        for token in
            ["word", "Word", "WORD", "HashMap", "hashMap", "a.b", "a::b", "x_y", "ÉtéHiver", "été", "a1B", "A1b"]
        {
            let mut parts = 0;
            each_part(token, |_| parts += 1);
            assert_eq!(is_compound(token), parts > 1, "{token}");
        }
    }
}
