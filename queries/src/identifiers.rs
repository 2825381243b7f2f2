//! The de-dotted rendering of identifiers, indexed beside the text so that a search for one part of
//! `std::fs::read`, `serde_json`, `pkg.mod` or `HashMap` finds the whole.

/// The parts of every compound identifier in `text`, space-separated, or an empty string when there are
/// none. A compound identifier joins word characters with `.`, `::`, `_`, `-` or `/`, or changes case
/// inside a word (`HashMap` → `Hash Map`). Plain words add nothing: the text column already holds them.
#[must_use]
pub fn identifier_parts(text: &str) -> String {
    let mut out = String::new();
    for token in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | ':' | '_' | '-' | '/'))) {
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
