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
/// an escape sequence) are written as Rust escapes (`\n`, `\u{1b}`), so a hostile name cannot start a line
/// of its own in a terminal or a CI log (GitHub reads `::error ...` lines as workflow commands).
#[must_use]
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    std::borrow::Cow::Owned(escaped)
}
