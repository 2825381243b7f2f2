//! Where a sentence ends in prose: one rule for a page's summary, a quote's excerpt, a chunk's overlap and
//! the sentences `ask` answers with, so that none of them quotes a piece of a sentence as a whole one.

/// Abbreviations a sentence never ends at, whatever follows (any case): "e.g." and "i.e." (also written
/// "eg." and "ie.") stand before an example, "cf." and "vs." before what is compared, "Mr." and "Dr." before
/// a name.
const ABBREVIATIONS: [&[u8]; 8] = [b"e.g", b"i.e", b"eg", b"ie", b"cf", b"vs", b"mr", b"dr"];

/// The longest footnote label read as one after a sentence's stop (`[^note]`): a label is a short word, so
/// a run of `.[^` with no `]` costs its length, not its length at every stop.
pub const FOOTNOTE_LABEL_BYTES: usize = 64;

/// How much of the word after a stop is read for a capital: a product's name starts in lower case and has
/// one early (`mdBook`, `macOS`, `iOS`).
const NEXT_WORD_BYTES: usize = 16;

/// Offsets just after each sentence end in `text`: `.`, `?` or `!`, with any closing quote, bracket or
/// emphasis and footnote marks (`type.[^1] When`), followed by white space and a word that starts as a
/// sentence does. A word in lower case goes on the sentence ("top-level (i.e., not parameters, etc.) path
/// segments", "the U.S. version"), unless it holds a capital or a digit (`mdBook`); so does the stop of an
/// abbreviation ([`ABBREVIATIONS`]). Linear in the text: each stop reads back a few bytes and forward to
/// the next word's first few.
pub fn sentence_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    (0..bytes.len()).filter_map(move |at| {
        let stop = bytes[at] == b'.';
        if !matches!(bytes[at], b'.' | b'?' | b'!')
            || (stop && (ends_an_abbreviation(bytes, at) || numbers_an_item(bytes, at)))
        {
            return None;
        }
        let mut end = at + 1;
        while end < bytes.len() && matches!(bytes[end], b'"' | b'\'' | b')' | b']' | b'*' | b'_') {
            end += 1;
        }
        end = after_footnote_marks(bytes, end);
        (bytes.get(end)?.is_ascii_whitespace() && starts_a_sentence(&bytes[end..])).then_some(end)
    })
}

/// The last offset in `text` where a sentence or a block ends: a sentence's end ([`sentence_ends`]), or a line
/// end before a blank line or a line that opens a list item, a heading, a quote, a table row or a fence. A
/// text cut there (a context pack's excerpt cut to its budget) ends with a whole sentence, where a cut at
/// any line end leaves a piece of a sentence wrapped over lines ("An _associated function_ is a function
/// that’s").
#[must_use]
pub fn last_sentence_or_block_end(text: &str) -> Option<usize> {
    let mut block = text.match_indices('\n').map(|(at, _)| at).filter(|&at| {
        // The text may end inside the next line (a window of a longer one): a line is blank only when it ends.
        let rest = &text[at + 1..];
        let (next, whole) = rest.split_once('\n').map_or((rest, false), |(line, _)| (line, true));
        (whole && next.trim().is_empty()) || opens_a_block(next) || next.trim_start().starts_with(['`', '~'])
    });
    // The last block end is looked for from the text's end.
    sentence_ends(text).last().into_iter().chain(block.next_back()).max()
}

/// Whether a line opens a block of its own inside a paragraph's lines: a list item, a heading, a quote or a
/// table row. (A fence opens one too, but a chunk's overlap never starts at code, so its callers say.)
pub(crate) fn opens_a_block(line: &str) -> bool {
    crate::text::starts_list_item(line) || line.trim_start().starts_with(['#', '>', '|'])
}

/// The sentences of prose, each trimmed, where [`sentence_ends`] ends them.
pub fn split_sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    sentence_ends(text).chain(std::iter::once(text.len())).filter_map(move |end| {
        let sentence = text[start..end].trim();
        start = end;
        (!sentence.is_empty()).then_some(sentence)
    })
}

/// Whether the stop at `at` numbers a list item: it follows digits that open their line ("1. Install").
fn numbers_an_item(bytes: &[u8], at: usize) -> bool {
    let digits = bytes[..at].iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let before = &bytes[..at - digits];
    let indent = before.iter().rev().take_while(|&&b| b == b' ' || b == b'\t').count();
    digits > 0 && (before.len() == indent || before[before.len() - indent - 1] == b'\n')
}

/// Whether the stop at `at` closes an abbreviation of [`ABBREVIATIONS`] standing as a word of its own.
fn ends_an_abbreviation(bytes: &[u8], at: usize) -> bool {
    ABBREVIATIONS.iter().any(|abbreviation| {
        at.checked_sub(abbreviation.len()).is_some_and(|start| {
            bytes[start..at].eq_ignore_ascii_case(abbreviation)
                && (start == 0 || !bytes[start - 1].is_ascii_alphanumeric())
        })
    })
}

/// Past the footnote marks that follow a stop at `from` (`[^1][^2]`).
fn after_footnote_marks(bytes: &[u8], mut from: usize) -> usize {
    while bytes[from..].starts_with(b"[^") {
        let label = &bytes[from + 2..];
        match label.iter().take(FOOTNOTE_LABEL_BYTES).position(|&b| b == b']' || b.is_ascii_whitespace()) {
            Some(close) if close > 0 && label[close] == b']' => from += 2 + close + 1,
            _ => break,
        }
    }
    from
}

/// Whether the text after a stop (white space, then a word) goes on as a new sentence: it ends, or its
/// word does not start with a lower-case letter, or is a name written so (a capital or a digit early,
/// `mdBook`, or a dot, colon, slash or underscore inside it, `docs.rs`, `crates.io`).
fn starts_a_sentence(rest: &[u8]) -> bool {
    let from = rest.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(rest.len());
    let rest = &rest[from..rest.len().min(from + NEXT_WORD_BYTES)];
    let word = &rest[..rest.iter().position(u8::is_ascii_whitespace).unwrap_or(rest.len())];
    let Some(first) = word.first() else { return true };
    if !first.is_ascii_lowercase() {
        return true;
    }
    let inside = word.strip_suffix(b".").unwrap_or(word);
    let inside = &inside[..inside.iter().rposition(u8::is_ascii_alphanumeric).map_or(0, |last| last + 1)];
    inside.iter().any(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || matches!(b, b'.' | b':' | b'/' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<&str> {
        split_sentences(text).collect()
    }

    #[test]
    fn a_stop_before_a_word_in_lower_case_goes_on_the_sentence() {
        let text =
            "Note that all top-level (i.e., not parameters, etc.) path\nsegments are types. The last may be any.";
        assert_eq!(
            split(text),
            ["Note that all top-level (i.e., not parameters, etc.) path\nsegments are types.", "The last may be any."]
        );
        assert_eq!(split("The U.S. version is the same."), ["The U.S. version is the same."]);
        assert_eq!(split("Use the CLI. mdBook then builds it."), ["Use the CLI.", "mdBook then builds it."]);
        assert_eq!(split("Ask the owners. docs.rs shows them."), ["Ask the owners.", "docs.rs shows them."]);
        assert_eq!(split("Open it. the end. and more, etc. so on"), ["Open it. the end. and more, etc. so on"]);
        assert_eq!(split("It grows, e.g. With `push`. Done"), ["It grows, e.g. With `push`.", "Done"]);
        assert_eq!(split("Open it (Eg. The note) first. Done"), ["Open it (Eg. The note) first.", "Done"]);
        assert_eq!(split("Stand on one leg. Then"), ["Stand on one leg.", "Then"], "a word ending in eg is none");
        assert_eq!(split("See xxe.g. This"), ["See xxe.g.", "This"], "a word ending in e.g is no abbreviation");
        assert_eq!(
            split("Why? It grows! (See 8-1.) `Vec` too. 2 more."),
            ["Why?", "It grows!", "(See 8-1.)", "`Vec` too.", "2 more."]
        );
    }

    #[test]
    fn a_cut_ends_at_a_sentence_or_a_block_not_inside_a_wrapped_sentence() {
        let text = "It is a function. An _associated function_ is a function that’s\nimplemented on a type.";
        assert_eq!(last_sentence_or_block_end(text), Some("It is a function.".len()));
        let list = "Steps:\n\n1. Install it\n2. Run it";
        assert_eq!(last_sentence_or_block_end(list), Some("Steps:\n\n1. Install it".len()), "an item starts a block");
        assert_eq!(split("Steps:\n  1. Install.\n12. Run"), ["Steps:\n  1. Install.", "12. Run"]);
        assert_eq!(split("Read chapter 5. Then run."), ["Read chapter 5.", "Then run."], "a number ends a sentence");
        assert_eq!(last_sentence_or_block_end("one wrapped\nline"), None);
        assert_eq!(last_sentence_or_block_end("It ends. A window cut\n"), Some("It ends.".len()), "no blank line seen");
        assert_eq!(last_sentence_or_block_end("A paragraph\n\nAnother"), Some("A paragraph".len()));
    }

    #[test]
    fn footnote_marks_after_the_stop_end_the_sentence_with_it() {
        assert_eq!(
            split("Deref coercion converts a reference.[^1] When we call `add`, Rust coerces it.[^2][^3] Done."),
            ["Deref coercion converts a reference.[^1]", "When we call `add`, Rust coerces it.[^2][^3]", "Done."]
        );
        let long = format!("It ends.[^{}] Next one.", "x".repeat(FOOTNOTE_LABEL_BYTES));
        assert_eq!(split(&long), [long.as_str()], "a label past the limit is no footnote mark");
        let flood = "a.[^".repeat(100_000);
        assert_eq!(split(&flood), [flood.as_str()], "no `]`: no mark, and one pass over the run");
        let stops = "a. ".repeat(100_000) + "B";
        assert_eq!(sentence_ends(&stops).count(), 1, "only the stop before a capital ends one");
    }
}
