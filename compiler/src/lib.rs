//! `knowledge`: compiles a repository's documents into a searchable, citable SQLite index.
//!
//! The driver: it reads files and `kc.toml`, sets the salsa inputs of `knowledge-queries`, runs the queries,
//! writes the index, and answers searches from it. See `docs/architecture.md` for the map.

// The layers, bottom first: each imports only the ones above it in this list (`tests/tidy.rs` checks it).
// Blank lines keep rustfmt from sorting them.
pub mod store;

pub mod config;

pub mod sources;

pub mod providers;

pub mod embeddings;

pub mod wiki;

pub mod lint;

pub mod build;

pub mod retrieval;

pub mod serve;

/// An error and its causes on one line, `: `-separated, for answers and warnings that are one line.
#[must_use]
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Milliseconds since `clock`, as the summaries report them.
#[must_use]
pub fn elapsed_ms(clock: std::time::Instant) -> u64 {
    u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Test hook for crash tests: `KNOWLEDGE_FAILPOINT=NAME` aborts the process (as a kill would) the first time
/// the build reaches the failpoint `NAME`, and `NAME:N` the N-th time. The failpoints sit at every kind of
/// write a build makes: `before-commit` (inside the index transaction), `after-commit`, `before-stage-commit` (inside the
/// embedding stage's transaction), `log`, `write`
/// (a generated file's temporary file), `rename`, `unlink` and `stat-cache`.
pub fn failpoint(name: &str) {
    static TARGET: std::sync::OnceLock<Option<(String, u64)>> = std::sync::OnceLock::new();
    static HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let value = std::env::var("KNOWLEDGE_FAILPOINT").ok()?;
        match value.split_once(':') {
            Some((name, nth)) => Some((name.to_string(), nth.parse().ok()?)),
            None => Some((value, 1)),
        }
    });
    if let Some((target, nth)) = target
        && target == name
        && HITS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == *nth
    {
        std::process::abort();
    }
}

/// A file name or other untrusted text as a human-readable output shows it: control characters (a newline,
/// an escape sequence, C1 controls such as U+0085) and the characters that reorder or break a line without
/// showing (bidirectional controls such as U+202E, the line and paragraph separators) are written as Rust
/// escapes (`\n`, `\u{1b}`, `\u{202e}`), so a hostile name cannot start a line of its own in a terminal or
/// a CI log (GitHub reads `::error ...` lines as workflow commands), move the cursor, or read backwards.
/// The one rule for every human output and annotation; [`escape_text`] for a source's text, whose line breaks
/// stay.
#[must_use]
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    escape_where(text, unsafe_on_a_terminal)
}

/// A source's text (a snippet, a chunk, an answer) as a human-readable output shows it: like [`escape`],
/// but its line breaks and tabs stay as they are.
#[must_use]
pub fn escape_text(text: &str) -> std::borrow::Cow<'_, str> {
    escape_where(text, |c| c != '\n' && c != '\t' && unsafe_on_a_terminal(c))
}

/// Whether a character may not reach a terminal or a log raw.
fn unsafe_on_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_rule_escapes_what_a_terminal_would_act_on() {
        for (raw, shown) in [
            ("a\u{1b}[2Jb", "a\\u{1b}[2Jb"),
            ("bell\u{7}", "bell\\u{7}"),
            ("next\u{85}line", "next\\u{85}line"),
            ("evil\u{202e}txt.md", "evil\\u{202e}txt.md"),
            ("iso\u{2066}late", "iso\\u{2066}late"),
            ("sep\u{2028}arator", "sep\\u{2028}arator"),
            ("two\nlines", "two\\nlines"),
            ("plain ünïcode 日本", "plain ünïcode 日本"),
        ] {
            assert_eq!(super::escape(raw), shown, "{raw:?}");
        }
        assert_eq!(
            super::escape_text("line one\n\tline two\u{1b}]8;;x\u{7}"),
            "line one\n\tline two\\u{1b}]8;;x\\u{7}"
        );
        assert_eq!(super::escape_text("cr\roverwrites"), "cr\\roverwrites");
    }
}
