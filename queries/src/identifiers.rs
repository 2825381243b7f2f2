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
        if token.is_empty() {
            continue;
        }
        let parts = split_compound(token);
        if parts.len() > 1 {
            for part in parts {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(part);
            }
        }
    }
    out
}

/// Splits at separators and at lower-to-upper case changes.
fn split_compound(token: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in token.split(['.', ':', '_', '-', '/']).filter(|p| !p.is_empty()) {
        let mut start = 0;
        let mut previous: Option<char> = None;
        for (at, c) in piece.char_indices() {
            if let Some(prev) = previous
                && prev.is_lowercase()
                && c.is_uppercase()
            {
                parts.push(&piece[start..at]);
                start = at;
            }
            previous = Some(c);
        }
        parts.push(&piece[start..]);
    }
    parts
}
