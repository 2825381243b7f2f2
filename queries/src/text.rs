//! Byte offsets to 1-based line numbers, and what a Markdown line is.

/// The byte offset at which each line starts, for turning offsets into line numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<u32>,
}

impl LineIndex {
    #[must_use]
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.bytes().enumerate().filter(|&(_, byte)| byte == b'\n').map(|(at, _)| offset(at + 1)));
        LineIndex { line_starts }
    }

    /// The 1-based line holding the byte at `offset`.
    #[must_use]
    pub fn line_of(&self, at: u32) -> u32 {
        let index = self.line_starts.partition_point(|&start| start <= at);
        offset(index)
    }
}

impl LineIndex {
    /// The 1-based line and 1-based column (in characters) of the byte at `at`.
    #[must_use]
    pub fn line_column(&self, text: &str, at: u32) -> (u32, u32) {
        let line = self.line_of(at);
        let line_start = self.line_starts[line as usize - 1] as usize;
        let at = (at as usize).min(text.len());
        let column = text.get(line_start..at).map_or(0, |prefix| prefix.chars().count());
        (line, offset(column + 1))
    }
}

/// Line and column of offsets asked mostly in increasing order (a document's links, its footnotes): each
/// column is counted on from the last one asked on the same line, so a line of thousands of links is read
/// once, not once per link (issue 40: that made a build quadratic in a long paragraph's size).
pub(crate) struct ColumnCursor<'a> {
    lines: &'a LineIndex,
    text: &'a str,
    /// The last offset asked that was a character boundary: its line, byte and column (0-based, in
    /// characters from the line's start).
    last: std::cell::Cell<(u32, usize, usize)>,
}

impl<'a> ColumnCursor<'a> {
    #[must_use]
    pub(crate) fn new(lines: &'a LineIndex, text: &'a str) -> ColumnCursor<'a> {
        ColumnCursor { lines, text, last: std::cell::Cell::new((0, 0, 0)) }
    }

    /// What [`LineIndex::line_column`] gives for `at`.
    #[must_use]
    pub(crate) fn line_column(&self, at: u32) -> (u32, u32) {
        let line = self.lines.line_of(at);
        let line_start = self.lines.line_starts[line as usize - 1] as usize;
        let at = (at as usize).min(self.text.len());
        if !self.text.is_char_boundary(at) || at < line_start {
            return (line, 1);
        }
        let (last_line, last_byte, last_column) = self.last.get();
        let (from, counted) =
            if last_line == line && last_byte <= at { (last_byte, last_column) } else { (line_start, 0) };
        let column = counted + self.text[from..at].chars().count();
        self.last.set((line, at, column));
        (line, offset(column + 1))
    }
}

/// Source files are capped far below 4 GiB by the driver, so every offset fits in a `u32`.
pub(crate) fn offset(at: usize) -> u32 {
    u32::try_from(at).expect("source files are smaller than 4 GiB")
}

/// How many items two sorted lists without repeats share, counted by one merge.
#[must_use]
pub fn shared_sorted<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}

/// The best `k` of `items` by `order` (best first), sorted: only they are sorted, after a selection, since
/// a ranking keeps a few of many.
pub fn keep_best<T>(items: &mut Vec<T>, k: usize, mut order: impl FnMut(&T, &T) -> std::cmp::Ordering) {
    if items.len() > k {
        items.select_nth_unstable_by(k, &mut order);
        items.truncate(k);
    }
    items.sort_unstable_by(order);
}

/// Whether a line, leading space aside, starts a list item or a table row: `- `, `* `, `+ `, `1. `,
/// `1) ` or `|`.
#[must_use]
pub fn starts_list_item(line: &str) -> bool {
    line.trim_start().starts_with('|') || after_item_marker(line).is_some()
}

/// A list item's text after its marker (`- `, `* `, `+ `, `1. `, `1) `) and the space after it; a line that
/// opens with no marker, leading space aside.
#[must_use]
pub fn list_item_body(line: &str) -> &str {
    after_item_marker(line).map_or(line.trim_start(), str::trim_start)
}

/// The rest of a line after the list item's marker it opens with, leading space aside.
fn after_item_marker(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let marked = |rest: &&str| rest.is_empty() || rest.starts_with([' ', '\t']);
    let ordered = || ordered_marker(line).map(|marker| &line[marker..]);
    line.strip_prefix(['-', '*', '+']).filter(marked).or_else(|| ordered().filter(marked))
}

/// Whether a line is a table's delimiter row, which parts its header from its body: `| --- | :-: |` (cells of
/// dashes, colons and spaces between pipes, at least one dash).
#[must_use]
pub(crate) fn is_table_delimiter(line: &str) -> bool {
    let line = line.trim();
    line.contains('|') && line.contains('-') && line.bytes().all(|b| matches!(b, b'|' | b'-' | b':' | b' ' | b'\t'))
}

/// The texts a sentence sets in emphasis (`_refutable_`, `*scope*`, `**Trait**`): a run that opens with `_`
/// or `*` after a non-word character and before a non-space, and closes with the same after a non-space and
/// before a non-word character (so a list item's `* ` marker opens nothing). One pass over the sentence.
pub fn emphasized_spans(sentence: &str) -> impl Iterator<Item = &str> {
    let bytes = sentence.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let mark = bytes[at];
            let opens = matches!(mark, b'_' | b'*') && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric());
            at += 1;
            if !opens {
                continue;
            }
            while at < bytes.len() && bytes[at] == mark {
                at += 1;
            }
            let start = at;
            if bytes.get(start).is_none_or(u8::is_ascii_whitespace) {
                continue;
            }
            while at < bytes.len() {
                let closes = bytes[at] == mark
                    && !bytes[at - 1].is_ascii_whitespace()
                    && bytes.get(at + 1).is_none_or(|b| !b.is_ascii_alphanumeric());
                if closes && at > start {
                    let span = &sentence[start..at];
                    while at < bytes.len() && bytes[at] == mark {
                        at += 1;
                    }
                    return Some(span);
                }
                at += 1;
            }
        }
        None
    })
}

/// The length of the ordered list item's marker that starts `line` (`12.` or `3)`), if any. The number is
/// read up to its first non-digit, never further: a caller may pass the rest of a long text, and a search
/// for the `.` could cross all of it.
fn ordered_marker(line: &str) -> Option<usize> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && matches!(line.as_bytes().get(digits), Some(b'.' | b')'))).then_some(digits + 1)
}

/// Whether a text is navigation, which points at answers and holds none: a table of contents or a list of
/// links (at least three lines, and most of its lines, headings and blank lines aside, list items or table
/// rows made of links with a few words of their own, or lines of links alone), a text whose every line is
/// links alone (mdBook's `SUMMARY.md` lists its first chapters as bare links: `[Introduction](README.md)`),
/// or a text with nothing to read outside its headings and its markup (an anchor kept for old links, a
/// comment to editors, a rule id).
#[must_use]
pub fn is_navigation(text: &str) -> bool {
    let visible = without_html_markup(text);
    let mut fences = Fences::default();
    let mut lines: Vec<&str> = Vec::new();
    for line in visible.lines().map(str::trim) {
        let code = fences.is_code(line);
        // A rule id (the Rust Reference's `r[link]` before a chapter's title) or an admonition's opening line is
        // markup, as a heading is.
        if !line.is_empty() && (code || !(is_heading_line(line) || is_block_label(line))) {
            lines.push(line);
        }
    }
    if lines.is_empty() {
        return true;
    }
    let (mut bare, mut linked) = (0, 0);
    for line in &lines {
        if is_links_alone(line) {
            (bare, linked) = (bare + 1, linked + 1);
        } else if is_link_item(line) {
            linked += 1;
        }
    }
    bare == lines.len() || (lines.len() >= 3 && linked * 2 > lines.len())
}

/// Whether a line is links and nothing else: Markdown links (`[text](destination)`) and wikilinks
/// (`[[note]]`), with nothing but spaces and punctuation between them. One pass, so a long line of
/// brackets costs its length.
#[must_use]
fn is_links_alone(line: &str) -> bool {
    // An ordered item's number is its marker, not a word of its own (a bullet is punctuation anyway).
    let line = line.trim_start();
    let line = ordered_marker(line).map_or(line, |marker| &line[marker..]);
    let bytes = line.as_bytes();
    let (mut at, mut links) = (0, 0);
    while at < bytes.len() {
        match bytes[at] {
            b'[' if bytes.get(at + 1) == Some(&b'[') => match line[at + 2..].find("]]") {
                Some(end) => (at, links) = (at + 2 + end + 2, links + 1),
                None => return false,
            },
            b'[' => {
                let Some(text_end) = line[at + 1..].find(']').map(|end| at + 1 + end) else { return false };
                if bytes.get(text_end + 1) != Some(&b'(') {
                    return false;
                }
                let Some(end) = line[text_end + 2..].find(')') else { return false };
                (at, links) = (text_end + 2 + end + 1, links + 1);
            }
            _ => {
                let letter = line[at..].chars().next().unwrap_or_default();
                if letter.is_alphanumeric() {
                    return false;
                }
                at += letter.len_utf8();
            }
        }
    }
    links > 0
}

/// Which lines of a Markdown text are code, read line by line: a fence line, or a line inside a fenced
/// block. Only a run of at least as many of the opening character, with nothing after it, closes a fence,
/// so a `~~~` block that shows a ```` ``` ```` block stays code throughout, as it does for a Markdown
/// reader; and a line that opens with three backticks and holds another (```` ```x = 1``` ````) is inline
/// code, not a fence (CommonMark: a backtick fence's info string holds no backtick).
#[derive(Debug, Default)]
pub struct Fences {
    open: Option<(char, usize)>,
}

impl Fences {
    /// Whether `line`, the next line of the text, is a fence or inside a fenced block.
    pub fn is_code(&mut self, line: &str) -> bool {
        let trimmed = line.trim();
        if let Some(marker @ ('`' | '~')) = trimmed.chars().next() {
            let run = trimmed.chars().take_while(|c| *c == marker).count();
            let rest = &trimmed[run..];
            match self.open {
                None if run >= 3 && !(marker == '`' && rest.contains('`')) => {
                    self.open = Some((marker, run));
                    return true;
                }
                Some((open, length)) if open == marker && run >= length && rest.trim().is_empty() => {
                    self.open = None;
                    return true;
                }
                _ => {}
            }
        }
        self.open.is_some()
    }

    /// The fence the lines read so far left open: its character and how many of it.
    #[must_use]
    pub fn open(&self) -> Option<(char, usize)> {
        self.open
    }
}

/// Calls `each` with every word of `text` lowercased: the words of `text.to_lowercase()`, without lowercasing
/// (and so copying) the whole text, as a search's re-rank reads its 50 chunks and a build each file that sets
/// a word in italics. A word is lowercased alone, so a Greek capital sigma followed by a period and a letter
/// reads as final (`ς`), where the whole text's lowercasing reads on past the period.
pub fn each_lowercased_word(text: &str, mut each: impl FnMut(&str)) {
    // Read byte by byte, a character decoded only outside ASCII; whether an ASCII word needs lowercasing is
    // told on the same pass.
    let bytes = text.as_bytes();
    let mut lowered = String::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii() && !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let (start, mut ascii, mut upper) = (at, true, false);
        while let Some(&byte) = bytes.get(at) {
            if byte.is_ascii() {
                if !byte.is_ascii_alphanumeric() {
                    break;
                }
                upper |= byte.is_ascii_uppercase();
                at += 1;
            } else {
                let c = text[at..].chars().next().expect("a character starts here");
                if !c.is_alphanumeric() {
                    break;
                }
                ascii = false;
                at += c.len_utf8();
            }
        }
        if at == start {
            // A character outside ASCII that is no word's.
            at += text[at..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let word = &text[start..at];
        if !ascii {
            // A letter may lowercase to what is no word's character (`İ` to `i` and a combining dot).
            for part in word.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                each(part);
            }
        } else if upper {
            lowered.clear();
            lowered.push_str(word);
            lowered.make_ascii_lowercase();
            each(&lowered);
        } else {
            each(word);
        }
    }
}

/// A fixed list of lowercased words looked up as a set, hashed once per process on first use: the common
/// words that wiki terms and page summaries pass over, which every word of a build's prose is looked up in.
pub(crate) struct WordSet {
    words: &'static [&'static str],
    set: std::sync::OnceLock<rustc_hash::FxHashSet<&'static str>>,
}

impl WordSet {
    pub(crate) const fn new(words: &'static [&'static str]) -> WordSet {
        WordSet { words, set: std::sync::OnceLock::new() }
    }

    pub(crate) fn contains(&self, word: &str) -> bool {
        self.set.get_or_init(|| self.words.iter().copied().collect()).contains(word)
    }
}

/// Whether `text` holds `needle` (a short marker: a fence, a placeholder's braces, a footnote's `[^`), found
/// by `memchr`'s SIMD search: std's `contains` sets up a two-way search as dearly as a short text takes to
/// scan, and a build asks this of every quote and block (about 4 % of a rust-rfcs cold build's instructions).
#[must_use]
pub(crate) fn holds(text: &str, needle: &str) -> bool {
    find(text, needle).is_some()
}

/// Where `needle` first stands in `text`, as [`holds`] finds it.
#[must_use]
pub(crate) fn find(text: &str, needle: &str) -> Option<usize> {
    memchr::memmem::find(text.as_bytes(), needle.as_bytes())
}

/// Whether a line is a rule id: a name, then one bracketed token without spaces (`r[items.use.intro]`), as
/// the Rust Reference puts one on its own line before each rule. Markup, not text: shown out of its file it
/// reads `ritems.use.intro`.
fn is_rule_id(line: &str) -> bool {
    let Some((name, rest)) = line.split_once('[') else { return false };
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphabetic())
        && rest
            .strip_suffix(']')
            .is_some_and(|id| !id.is_empty() && !id.contains(['[', ']']) && !id.contains(char::is_whitespace))
}

/// Whether a line is a label of the block below it, on a line of its own: a rule id ([`is_rule_id`]), an
/// admonition's opening line as MkDocs writes it (`!!! tip`, `??? note "Title"`, `???+ warning`; the tip
/// itself is the indented text below), a custom container's fence ([`is_container_fence`]), VitePress' import of
/// a file's code (`<<< ./deploy.yaml#content`, which the site replaces with the file's text), or MDX's markup
/// (a component's tags, `<Tabs>`, `<TabItem label="npm">`, `</Aside>`; a comment to editors; an import). Markup,
/// not text: a quote, a snippet or an answer that showed it would show `!!! tip` and nothing of the tip. A
/// quote's marks and the line's indent are no part of it.
#[must_use]
pub fn is_block_label(line: &str) -> bool {
    let line = line.trim_start_matches(|c: char| c == '>' || c.is_whitespace()).trim_end();
    let code_import = line.strip_prefix("<<< ").is_some_and(|file| !file.trim().is_empty());
    is_rule_id(line)
        || is_admonition_opening(line)
        || is_container_fence(line)
        || code_import
        || crate::mdx::is_markup_line(line)
}

/// Whether a line opens an MDX component's tag that it does not close, its attributes on the lines below
/// (`<CommandTabs npm="npm run tauri add notification"`): markup a reader never sees, whose head a snippet cut
/// inside it would show.
#[must_use]
pub fn opens_component_tag(line: &str) -> bool {
    crate::mdx::opens_component_tag(line.trim_start_matches(|c: char| c == '>' || c.is_whitespace()).trim_end())
}

/// A custom container's opening or closing line, as VitePress, Docusaurus and Pandoc write them (`::: tip NOTE`,
/// `:::warning`, `:::note[Title]`, `::: {.note}`, `::: code-group`, and `:::` alone to close): three or more
/// colons, then nothing or a word, braces or brackets.
fn is_container_fence(line: &str) -> bool {
    let colons = line.bytes().take_while(|&b| b == b':').count();
    let rest = line[colons..].trim_start();
    colons >= 3 && (rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '{' || c == '['))
}

/// An admonition's opening line: `!!!`, `???` or `???+`, a space, its type (a lowercase word: `note`, `tip`,
/// `danger`), then nothing but a quoted title or `inline` options.
fn is_admonition_opening(line: &str) -> bool {
    let Some(rest) = ["!!! ", "??? ", "???+ "].iter().find_map(|marker| line.strip_prefix(marker)) else {
        return false;
    };
    let kind_end = rest.find(' ').unwrap_or(rest.len());
    let (kind, after) = rest.split_at(kind_end);
    let after = after.trim();
    !kind.is_empty()
        && kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && (after.is_empty() || after.starts_with('"') || after.starts_with("inline"))
}

/// Whether a line opens a content tab as MkDocs' Material theme writes it (`=== "macOS and Linux"`,
/// `===+ "Windows"`: the tab's content, a platform's command, is the indented block below it), a group of
/// tabs as VitePress does (`::: code-group`, each fenced block below it a tab), or is a JSX component's tags
/// (`<Tabs>`, `<TabItem label="npm">`, `<Steps>`), which in MDX wrap the content a sentence introduces.
#[must_use]
pub fn is_content_tab(line: &str) -> bool {
    if crate::mdx::is_component_tags(line.trim()) {
        return true;
    }
    // VitePress groups a block's tabs in a container of their own.
    if line.strip_prefix(":::").is_some_and(|rest| rest.trim() == "code-group") {
        return true;
    }
    let Some(rest) = ["=== \"", "===! \"", "===+ \""].iter().find_map(|marker| line.strip_prefix(marker)) else {
        return false;
    };
    rest.len() > 1 && rest.ends_with('"')
}

/// An ATX heading line: one to six `#` and a space (or nothing).
#[must_use]
pub fn is_heading_line(line: &str) -> bool {
    let marks = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&marks) && line[marks..].chars().next().is_none_or(char::is_whitespace)
}

/// Whether a block is markup a reader never sees, and nothing else: HTML comments and tags with only
/// whitespace around them (an anchor kept so that old links still land, a note to the book's editors).
/// The chunker leaves such blocks out of chunks, so their words are never searched.
#[must_use]
pub fn is_markup_only(block: &str) -> bool {
    let mut rest = block.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        rest = match skip_html(rest) {
            Some(after) => after.trim_start(),
            None => return false,
        };
    }
    true
}

/// The text after one HTML comment or tag that `text` starts with; `None` when it starts with neither. An
/// unclosed comment runs to the end, as it does for a Markdown reader.
fn skip_html(text: &str) -> Option<&str> {
    if let Some(after) = text.strip_prefix("<!--") {
        return Some(after.find("-->").map_or("", |end| &after[end + 3..]));
    }
    let name = text.strip_prefix('<')?;
    let name = name.strip_prefix('/').unwrap_or(name);
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    text.find('>').map(|end| &text[end + 1..])
}

/// `text` without its HTML comments and tags, everything else kept in place.
fn without_html_markup(text: &str) -> std::borrow::Cow<'_, str> {
    // A tag needs a `>` after it: past the last one no `<` starts a tag, so the text after it is kept as it
    // is, and no search for a `>` runs from each `<` of a text like `<3<3<3…` to its end.
    let Some(last_close) = text.rfind('>') else {
        return std::borrow::Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = text[at..].find('<') {
        let open = at + found;
        out.push_str(&text[at..open]);
        if open > last_close && !text[open..].starts_with("<!--") {
            at = open;
            break;
        }
        match skip_html(&text[open..]) {
            Some(after) => at = text.len() - after.len(),
            None => {
                out.push('<');
                at = open + 1;
            }
        }
    }
    out.push_str(&text[at..]);
    std::borrow::Cow::Owned(out)
}

/// Whether a line is a link in a list, as a table of contents or a "related" list holds them: a list item
/// or table row with a link and at most [`NAVIGATION_WORDS`] words beside its links. A sentence that
/// mentions a link is prose, not navigation.
#[must_use]
pub fn is_link_item(line: &str) -> bool {
    words_beside_links(line).is_some_and(|words| words <= NAVIGATION_WORDS)
}

/// The words of its own a list item of links may hold and still be navigation ("- [Delta](../d.md), line 3").
const NAVIGATION_WORDS: usize = 4;

/// The words a list item or table row with a link (`[text](target)` or `[[target]]`) says beside its links:
/// outside every bracketed and parenthesized run (links' texts and targets, wikilinks), its marker aside.
/// `None` for a line that is no such item. One pass that stops past `NAVIGATION_WORDS`: every search asks
/// this of each line of each candidate, and a page's quote of each mention's item.
#[must_use]
pub fn words_beside_links(item: &str) -> Option<usize> {
    if !starts_list_item(item) || !(item.contains("](") || item.contains("[[")) {
        return None;
    }
    let item = list_item_body(item);
    let (mut words, mut in_word, mut depth) = (0, false, 0_usize);
    for c in item.chars() {
        let letter = match c {
            '[' | '(' => {
                depth += 1;
                false
            }
            ']' | ')' => {
                depth = depth.saturating_sub(1);
                false
            }
            c => depth == 0 && c.is_alphanumeric(),
        };
        if letter && !in_word {
            words += 1;
            if words > NAVIGATION_WORDS {
                return Some(words);
            }
        }
        in_word = letter;
    }
    Some(words)
}

/// Whether a text holds nothing but note embeds (`![[note]]`, `![[note#heading]]`): a place that only
/// transcludes other notes and says nothing of its own.
#[must_use]
pub fn is_only_embeds(text: &str) -> bool {
    let mut rest = text.trim_start();
    let mut embeds = 0;
    while let Some(after) = rest.strip_prefix("![[") {
        let Some(end) = after.find("]]") else { return false };
        rest = after[end + 2..].trim_start();
        embeds += 1;
    }
    embeds > 0 && rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::{
        Fences, each_lowercased_word, is_block_label, is_content_tab, is_link_item, is_links_alone, is_markup_only,
        is_navigation, is_only_embeds, starts_list_item,
    };

    /// A block's label is markup on a line of its own: a rule id, an admonition's opening line or a custom
    /// container's fence, not prose that starts with the same marks.
    #[test]
    fn a_block_label_is_a_rule_id_an_admonitions_opening_line_or_a_containers_fence() {
        for line in [
            "r[type.pointer.intro]",
            "!!! tip",
            "!!! note \"Python versions\"",
            "??? warning",
            "???+ example",
            "::: tip NOTE",
            ":::warning",
            ":::note[Title]",
            "::: {.note}",
            ":::",
            "::::",
            "> > r[a.b] ",
            "    !!! tip",
            "   <<< ./static-deploy-github-pages.yaml#content [.github/workflows/deploy.yml]",
        ] {
            assert!(is_block_label(line), "{line:?}");
        }
        for line in [
            "!!! Wow, that is loud!",
            "!!!tip",
            "??? what is this?",
            "!!! Tip",
            "Note: r[x] ",
            "[[Compost]]",
            "=== \"Tab\"",
            ":: x",
            "::: 3 colons",
            ":::)",
            "<<< ",
            "a <<< b",
        ] {
            assert!(!is_block_label(line), "{line:?}");
        }
        for line in ["=== \"macOS and Linux\"", "===+ \"Windows\"", "===! \"pip\"", "::: code-group", ":::code-group"] {
            assert!(is_content_tab(line), "{line:?}");
        }
        for line in ["===", "=== \"", "=== unquoted", "a === \"b\"", "==== \"x\""] {
            assert!(!is_content_tab(line), "{line:?}");
        }
    }

    /// A marker is found wherever it stands, as std's search finds it.
    #[test]
    fn a_marker_is_found_as_a_substring_search_finds_it() {
        for (text, needle) in
            [("```rust", "```"), ("a ``` b", "```"), ("ends ~~", "~~~"), ("é{{x}}", "{{"), ("", "[^"), ("a[^1]", "[^")]
        {
            assert_eq!(super::find(text, needle), text.find(needle), "{text:?} {needle:?}");
            assert_eq!(super::holds(text, needle), text.contains(needle), "{text:?} {needle:?}");
        }
    }

    /// A text's words, lowercased one at a time, are the words of the whole text lowercased: ASCII, capitals,
    /// digits, letters that lowercase to two characters (`İ`), `ß`, a final sigma and scripts without case.
    #[test]
    fn words_lowercased_one_at_a_time_are_the_whole_texts() {
        let texts = [
            "The Borrow-Checker's RULES: 2 owners?\nNo_one `Vec<T>`",
            "İstanbul İİ ÇAĞRI straße STRASSE ΟΔΟΣ Σ σΣ ΣΑ",
            "日本語 テキスト, Ǆemal ǅ ǈ — “quoted” ÅNGSTRÖM 3RD",
            "",
        ];
        // And random texts of these characters (a capital sigma aside: see `each_lowercased_word`).
        let alphabet: Vec<char> = "aZ9 _-.'’\n\tİıßẞÅé日\u{301}😀Ǆ".chars().collect();
        let mut state = 0x2545_f491_u64;
        let random: Vec<String> = (0..2_000)
            .map(|_| {
                (0..state % 24)
                    .map(|_| {
                        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                        alphabet[(state >> 33) as usize % alphabet.len()]
                    })
                    .collect()
            })
            .collect();
        for text in texts.iter().copied().chain(random.iter().map(String::as_str)) {
            let whole = text.to_lowercase();
            let expected: Vec<&str> = whole.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
            let mut read: Vec<String> = Vec::new();
            each_lowercased_word(text, |word| read.push(word.to_string()));
            assert_eq!(read, expected, "{text}");
        }
    }

    #[test]
    fn a_fence_opens_and_closes_as_commonmark_reads_it() {
        let text = "```export RUST_NEW_ERROR_FORMAT=true``` is inline code\nprose\n~~~~md\n```rust\n~~~ not a close\n~~~~\nprose\n```rust\ncode\n```\nprose";
        let mut fences = Fences::default();
        let code: Vec<bool> = text.lines().map(|line| fences.is_code(line)).collect();
        assert_eq!(code, [false, false, true, true, true, true, false, true, true, true, false]);
    }

    #[test]
    fn only_embeds() {
        assert!(is_only_embeds("![[dendron.topic.cli#summary,1:#*]]"));
        assert!(is_only_embeds("  ![[a]]\n\n![[b|c]]  "));
        assert!(!is_only_embeds("![[a]] and a word"));
        assert!(!is_only_embeds("See ![[a]]"));
        assert!(!is_only_embeds("![[unclosed"));
        assert!(!is_only_embeds("   "));
    }

    #[test]
    fn list_items_and_link_items() {
        for item in ["- a", "* a", "+ a", "  1. a", "2) a", "| a | b |", "-"] {
            assert!(starts_list_item(item), "{item}");
        }
        for prose in ["*Note*: a", "**[A](a.md)**, lines 1", "-a", "1.5 times", "a - b"] {
            assert!(!starts_list_item(prose), "{prose}");
        }
        assert!(is_link_item("- [Getting Started](ch01.md)"));
        assert!(is_link_item("    - [[compost]]"));
        assert!(is_link_item("- [Delta](../d.md), line 3"));
        assert!(!is_link_item("- [Borrowing](b.md) lets a function use a value without taking it over."));
        assert!(!is_link_item("See [ownership](ch04.md)."), "not a list item");
        assert!(!is_link_item("- no link at all"));
        // The words beside the links: marker, texts and targets aside, table pipes no words.
        assert_eq!(super::words_beside_links("- Using with [JFrog](jfrog.md)"), Some(2));
        assert_eq!(super::words_beside_links("12. [[note|Its title]] (old)"), Some(0));
        assert_eq!(super::words_beside_links("| [[a]] | [b](c.md) |"), Some(0));
        assert_eq!(super::words_beside_links("- custom domains for [[x]]"), Some(3));
        assert_eq!(super::words_beside_links("See [x](y.md)."), None, "not a list item");
        // An item's text after its marker; a line with no marker as it is.
        let bodies = [("- a b", "a b"), ("  12.  **x:** y", "**x:** y"), ("3) a", "a"), ("-", ""), ("**b**", "**b**")];
        for (item, body) in bodies {
            assert_eq!(super::list_item_body(item), body, "{item}");
        }
        assert_eq!(super::list_item_body("-a"), "-a", "no space after the dash: no marker");
    }

    #[test]
    fn a_list_of_links_is_navigation_and_prose_with_links_is_not() {
        let toc =
            "# Summary\n\n- [Intro](intro.md)\n- [Ownership](ch04.md)\n    - [Borrowing](ch04-02.md)\n1. [[Compost]]\n";
        assert!(is_navigation(toc));
        let prose = "See [ownership](ch04.md) for how values move between owners in a program.\n\
                     - [Borrowing](b.md) lets a function use a value without taking it over at all.\n\
                     Values are dropped when their owner goes out of scope.\n";
        assert!(!is_navigation(prose));
        assert!(is_navigation("- [One](a.md)\n- [Two](b.md)\n"), "links alone, however few, say nothing");
        assert!(!is_navigation("- [One](a.md), the first\n- [Two](b.md), then\n"), "two items are too few to tell");
        assert!(is_navigation("# Summary\n\n[Introduction](README.md)\n"), "a link alone says nothing");
        let prefix =
            "# The Book\n\n[The Book](title-page.md)\n[Foreword](foreword.md)\n\n## Basics\n\n- [Intro](a.md)\n";
        assert!(is_navigation(prefix));
        assert!(!is_navigation("[Ownership](ch04.md) moves a value to its new owner.\n"), "words of its own");
        assert!(!is_navigation("# Links\n\n[Ownership](ch04.md)\n\nValues are dropped when their owner goes.\n"));
    }

    #[test]
    fn a_line_of_links_alone_holds_no_word_of_its_own() {
        assert!(is_links_alone("[Introduction](README.md)"));
        assert!(is_links_alone("[A](a.md), [B](b.md) · [[c]]"));
        assert!(is_links_alone("12. [A](a.md)") && is_links_alone("- [A](a.md)") && is_links_alone("| [A](a) |"));
        assert!(!is_links_alone("12 [A](a.md)"), "a number that marks no item is a word");
        assert!(!is_links_alone("[A](a.md) and more"));
        assert!(!is_links_alone("[A] is not a link"), "brackets without a destination");
        assert!(!is_links_alone("[A](a.md"), "unclosed");
        assert!(!is_links_alone("[[open"));
        assert!(!is_links_alone("— ·"), "no link at all");
        assert!(!is_links_alone("[Ünïcode](u.md) é"));
        // One pass each: a search of the rest of the line per bracket would take minutes here.
        assert!(!is_links_alone(&"[".repeat(100_000)));
        assert!(!is_links_alone(&"[a](".repeat(50_000)));
        assert!(!is_links_alone(&"[a]".repeat(50_000)));
    }

    #[test]
    fn a_text_of_headings_and_markup_is_navigation_and_code_is_not() {
        let anchors = "<!-- Old heading. Do not remove or links may break. -->\n\n<a id=\"sharing-a-mutex\"></a>\n\n### Sharing\n";
        assert!(is_navigation(anchors), "nothing to read");
        assert!(is_navigation("<!--\nA comment\nover lines\n-->\n"));
        assert!(is_navigation("r[link]\n"), "a rule id alone, as the Rust Reference puts one before a title");
        assert!(is_navigation("r[link.crt]\n\n## Static and dynamic C runtimes\n"));
        assert!(
            !is_navigation("r[link.intro]\nThe compiler supports various methods to link crates.\n"),
            "a rule read"
        );
        assert!(!is_navigation("<a id=\"x\"></a>\n\nA `Vec<T>` grows.\n"), "the sentence is read");
        assert!(!is_navigation("```python\n# a comment\n```\n"), "a code block holds code");
        assert!(!is_navigation("~~~md\n```\n# shown\n```\n~~~\n"), "a fence inside another is code too");
        assert!(!is_navigation("#hashtag is a word here\n"), "not a heading");
        let hostile = "<3 ".repeat(50_000) + "<a id=\"x\">";
        assert!(!is_navigation(&hostile), "text before the last tag is read");
        assert!(!is_navigation(&"<a<a ".repeat(50_000)), "an unclosed tag is text");
    }

    #[test]
    fn markup_only_blocks_are_comments_and_tags_without_text() {
        assert!(is_markup_only("<a id=\"sharing-a-mutext-between-multiple-threads\"></a>"));
        assert!(is_markup_only("<!-- Old heading. -->\n<a id=\"old\"></a>\n"));
        assert!(is_markup_only("<!-- unclosed"));
        assert!(!is_markup_only("<kbd>S</kbd>"), "the key is read");
        assert!(!is_markup_only("a < b and c > d"));
        assert!(!is_markup_only("<3 love"));
        assert!(!is_markup_only(""));
    }
}

#[cfg(test)]
mod markup_tests {
    use super::{emphasized_spans, is_table_delimiter};

    #[test]
    fn emphasized_spans_open_after_a_non_word_and_close_before_one() {
        let spans: Vec<&str> =
            emphasized_spans("* A *trait object*, **bold** and _x_y_ but snake_case_name, 2 * 3 * 4 and *open")
                .collect();
        assert_eq!(spans, ["trait object", "bold", "x_y"]);
        let flood = "*a ".repeat(100_000);
        assert_eq!(emphasized_spans(&flood).count(), 0, "no span closes: one pass");
    }

    #[test]
    fn a_delimiter_row_is_dashes_colons_and_pipes() {
        assert!(is_table_delimiter("| --- | :-: |"));
        assert!(is_table_delimiter("|-|"));
        assert!(!is_table_delimiter("| a | b |"));
        assert!(!is_table_delimiter("---"), "a thematic break has no pipe");
        assert!(!is_table_delimiter("| |"), "no dash");
    }
}

#[cfg(test)]
mod column_tests {
    use super::{ColumnCursor, LineIndex};

    #[test]
    fn the_cursor_gives_the_columns_line_column_gives_in_any_order() {
        let text = "ab ünï [x](y)\n\ncafé [[z]] ß x\nlast";
        let lines = LineIndex::new(text);
        let cursor = ColumnCursor::new(&lines, text);
        let offsets: Vec<u32> =
            (0..=text.len() as u32).chain((0..=text.len() as u32).rev()).chain([3, 20, 5, 40]).collect();
        for at in offsets {
            assert_eq!(cursor.line_column(at), lines.line_column(text, at), "at {at}");
        }
    }
}
