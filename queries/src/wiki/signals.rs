//! Concept signals: the places in one source that name a concept, each with the excerpt a page would
//! quote. Per file and pure; which signals make a page is decided across files by [`super::plan`].

use serde::{Deserialize, Serialize};

use crate::chunking::Chunk;
use crate::front_matter::{FrontMatter, FrontMatterValue};
use crate::markdown::{BlockKind, ParsedDocument};
use crate::text::offset;

/// The longest excerpt a page quotes, in bytes.
const EXCERPT_BYTES: usize = 600;

/// What kind of mention a signal is. The order is the order of preference when one source mentions a
/// concept several ways: the excerpt a page quotes comes from the first kind present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// The source's own title (front matter `title`, the first level-1 heading, or the file name).
    Title,
    /// A front matter alias of the source.
    Alias,
    /// A term the text defines: `**term** is ...`, `called *term*`.
    Defined,
    /// A term the text introduces by emphasis (`data held in a *vector*`), as books and manuals set a term
    /// in italics where they first explain it: it names a concept, but a weaker one than a definition.
    Introduced,
    /// A heading below the title: counts as a place, never makes a page on its own.
    Heading,
    /// A `[[wikilink]]`; `label` is the part before `|`, `other` the part after it.
    Wikilink,
    /// A relative Markdown link to another file; `label` is the destination.
    Link,
    /// A front matter tag.
    Tag,
    /// A `![[note]]` embed (an Obsidian embed, a Dendron note reference): it resolves like a wikilink, but
    /// its place transcludes the other note and says nothing of its own, so a page lists it, never quotes it.
    Embed,
    /// A word or two-word phrase the source's prose uses again and again ([`super::terms::TERM_MIN_COUNT`] times or
    /// more): where the source discusses a concept something else names. Its place is the passage that uses
    /// it most; it never makes a page on its own.
    Term,
}

impl SignalKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Title => "title",
            SignalKind::Alias => "alias",
            SignalKind::Defined => "defined",
            SignalKind::Introduced => "introduced",
            SignalKind::Heading => "heading",
            SignalKind::Wikilink => "wikilink",
            SignalKind::Link => "link",
            SignalKind::Tag => "tag",
            SignalKind::Embed => "embed",
            SignalKind::Term => "term",
        }
    }

    #[must_use]
    pub fn parse(name: &str) -> Option<SignalKind> {
        SignalKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Every kind, in declaration order.
    pub const ALL: [SignalKind; 10] = [
        SignalKind::Title,
        SignalKind::Alias,
        SignalKind::Defined,
        SignalKind::Introduced,
        SignalKind::Heading,
        SignalKind::Wikilink,
        SignalKind::Link,
        SignalKind::Tag,
        SignalKind::Embed,
        SignalKind::Term,
    ];

    /// Links point at another source's concept; the other kinds name a concept by their label.
    #[must_use]
    pub fn is_reference(self) -> bool {
        matches!(self, SignalKind::Wikilink | SignalKind::Link | SignalKind::Embed)
    }

    /// Whether the signal only adds a place to a concept something else names: a heading or a term.
    #[must_use]
    pub fn is_place_only(self) -> bool {
        matches!(self, SignalKind::Heading | SignalKind::Term)
    }
}

/// One mention of a concept in a source.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Signal {
    pub kind: SignalKind,
    pub label: String,
    pub other: Option<String>,
    pub excerpt: Excerpt,
    /// Whether a page may quote the excerpt: one made only of note embeds (`![[…]]`), or holding a template
    /// placeholder, says nothing of its own, so a page lists its source instead (a document's title, aliases
    /// and tags keep such an excerpt).
    pub quotable: bool,
    /// How much the source uses a term: the binary order of magnitude of its count (3 uses are 1, 4 to 7
    /// are 2, 8 to 15 are 3, ...), so that a page ranks the sources that discuss its concept most first and an
    /// edit that adds a use or two seldom changes what the planner reads. 0 for the other kinds.
    pub weight: u32,
}

/// A byte range of the source that a page quotes, inside one chunk, so its text can be read back from
/// the index without the source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Excerpt {
    pub chunk: u32,
    pub start: u32,
    pub end: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// Where the header of the table whose body row the excerpt is lies: a page shows it above the row.
    pub table_header: Option<TableHeaderPlace>,
}

/// A table's header row and delimiter row, inside one chunk (not always the row's: a long table spans
/// several), and the line the header row is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TableHeaderPlace {
    pub chunk: u32,
    pub start: u32,
    pub end: u32,
    pub line: u32,
}

/// The signals of one parsed source, given its text and chunks.
#[must_use]
pub fn signals_of(title: &str, text: &str, doc: &ParsedDocument, chunks: &[Chunk]) -> Vec<Signal> {
    let Some(lead) = lead_block(text, doc) else { return Vec::new() };
    let mut found = Found { text, doc, chunks, signals: Vec::new() };
    found.push(SignalKind::Title, title, None, lead, 0);
    if let Some(front_matter) = &doc.front_matter {
        for alias in values(front_matter, &["aliases", "alias"]) {
            found.push(SignalKind::Alias, &alias, None, lead, 0);
        }
        for tag in values(front_matter, &["tags", "tag"]) {
            found.push(SignalKind::Tag, tag.trim_start_matches('#'), None, lead, 0);
        }
    }
    let mut blocks = doc.blocks.iter().peekable();
    while let Some(block) = blocks.next() {
        let BlockKind::Heading(index) = block.kind else { continue };
        let heading = &doc.headings[index as usize];
        // The title heading is the title signal; a heading with nothing under it has no place to quote.
        if heading.level == 1 && heading.text == title {
            continue;
        }
        // Under a heading, an embed alone (Dendron's `## cname` then `![[cname|...]]`) says nothing either.
        if let Some(next) =
            blocks.peek().filter(|next| !matches!(next.kind, BlockKind::Heading(_)) && !only_embeds(text, doc, next))
        {
            found.push(SignalKind::Heading, &heading.text, None, (next.start as usize, next.end as usize), 0);
        }
    }
    let mut places = Places::new(text, doc);
    let mut introduced = std::collections::HashSet::new();
    found.emphasis_and_links(&mut places, &mut introduced);
    found.terms(title, &mut places, &mut introduced);
    found.signals
}

/// The signals found in one source so far, with what a signal's place is read from.
struct Found<'a> {
    text: &'a str,
    doc: &'a ParsedDocument,
    chunks: &'a [Chunk],
    signals: Vec<Signal>,
}

impl Found<'_> {
    /// Adds a signal of `kind` named `label` at the place `range` of the text, when it has one.
    fn push(&mut self, kind: SignalKind, label: &str, other: Option<String>, range: (usize, usize), weight: u32) {
        let (text, doc, chunks) = (self.text, self.doc, self.chunks);
        let label = label.trim();
        if label.is_empty() || label.len() > 120 {
            return;
        }
        // A document's own title, aliases and tags are signals whatever its lead holds; a mention is one
        // only where its place can be quoted.
        let own = matches!(kind, SignalKind::Title | SignalKind::Alias | SignalKind::Tag);
        if let Some(excerpt) =
            excerpt(text, doc, chunks, range).filter(|e| own || quotable(&text[e.start as usize..e.end as usize]))
        {
            // A document's own place that is only embeds, a template placeholder (`{{fm.desc}}` in a
            // template note) or a block's label (a rule id, `!!! tip`) keeps its signal, but a page lists the
            // source rather than quote it; so does a mention whose place only labels (a table's header row) or
            // only links (a list item of a link and a few words, as an index of guides lists them:
            // "- [JFrog Artifactory](jfrog.md)").
            let place = &text[excerpt.start as usize..excerpt.end as usize];
            let quotable = !crate::is_only_embeds(place)
                && quotable(place)
                && !crate::is_block_label(place)
                && !labels_a_table(text, excerpt.end as usize, place)
                && !only_links(place);
            self.signals.push(Signal { kind, label: label.to_string(), other, excerpt, quotable, weight });
        }
    }

    /// Terms the text defines or introduces in italics (each term's key added to `introduced`), and the
    /// wikilinks, embeds and relative links it holds.
    fn emphasis_and_links(&mut self, places: &mut Places<'_>, introduced: &mut std::collections::HashSet<String>) {
        let (text, doc) = (self.text, self.doc);
        let word_counts = std::cell::OnceCell::new();
        let code_words = std::cell::OnceCell::new();
        for term in &doc.emphasis {
            // One plain word set in italics introduces a term only if the text uses it again, and only if
            // it can name something: else it is stressed ("a *lot*", "it *seems*", "*regardless* of"). A
            // word English never uses as a noun names a concept where the text also writes it as code
            // (`unsafe`, `await`, `cargo publish`).
            // The text's words are counted once, and only when such a word is met.
            let stressed = || {
                let one_word = !term.text.contains(' ');
                let plain_word = one_word && !term.text.chars().any(char::is_uppercase);
                let once_or_placeholder = || {
                    placeholder_or_example(text, term.start as usize, term.end as usize)
                        || uses(word_counts.get_or_init(|| count_words(text, doc)), &term.text) < 2
                };
                let names_nothing = || {
                    super::lexicon::is_never_a_noun(&term.text)
                        && !code_words.get_or_init(|| words_in_code(text, doc)).contains(&term.text.to_lowercase())
                };
                (plain_word && once_or_placeholder()) || (one_word && names_nothing())
            };
            // "**Note**: …" labels an aside; the word names nothing the aside is about.
            // Read back over quote and list marks only, and only for a label's word.
            let opens_line = || {
                text[..term.start as usize]
                    .bytes()
                    .rev()
                    .take_while(|&b| b != b'\n')
                    .all(|b| matches!(b, b' ' | b'\t' | b'>' | b'-' | b'+' | b'*' | b'_'))
            };
            if super::lexicon::is_aside_label(&term.text, opens_line, &text[term.end as usize..]) {
                continue;
            }
            let kind = if is_definition(text, term.start as usize, term.end as usize, &term.text) {
                SignalKind::Defined
            } else if is_introduced_term(&term.text)
                && !stressed()
                && introduced.insert(super::terms::term_key(&term.text))
            {
                SignalKind::Introduced
            } else {
                continue;
            };
            self.push(kind, &term.text, None, places.block_around(term.start as usize), 0);
        }
        for link in &doc.wikilinks {
            let place = places.block_around(link.start as usize);
            let kind = if link.embed { SignalKind::Embed } else { SignalKind::Wikilink };
            self.push(kind, &link.first, link.second.clone(), place, 0);
        }
        for link in doc.links.iter().filter(|link| is_relative_document(&link.target)) {
            self.push(SignalKind::Link, &link.target, None, places.block_around(link.start as usize), 0);
        }
    }

    /// The terms the text uses again and again, each weighted by how often. A title or heading that names
    /// such a term names what the source teaches: the Rust book's "Reference Cycles Can Leak Memory" teaches
    /// reference cycles, its "### Shadowing" section shadowing. The term's concept gets the source as an
    /// introducer, so the chapter feeds that concept's page rather than one that echoes its own heading. A
    /// phrase may stand anywhere in the title; a single word must be the whole title or heading (or what
    /// stands before its colon, "Refutability: Whether a Pattern Might Fail to Match"), since a title's
    /// single words are mostly not its subject ("Using Threads to Run Code Simultaneously" does not teach
    /// "run").
    fn terms(&mut self, title: &str, places: &mut Places<'_>, introduced: &mut std::collections::HashSet<String>) {
        let (text, doc) = (self.text, self.doc);
        let repeated = super::terms::repeated_terms(text, doc);
        let title_key = format!("-{}-", super::terms::term_key(title));
        let whole_keys: std::collections::HashSet<String> = std::iter::once(title)
            .chain(doc.headings.iter().map(|heading| heading.text.as_str()))
            .flat_map(|name| [name, name.split_once(':').map_or(name, |(before, _)| before)])
            .map(super::terms::term_key)
            .collect();
        for term in repeated {
            let place = places.block_around(term.densest);
            let key = super::terms::term_key(&term.label);
            let phrase = key.contains('-');
            let named = term.count >= TITLED_TERM_COUNT
                && (whole_keys.contains(&key) || phrase && title_key.contains(&format!("-{key}-")));
            if named && introduced.insert(key) {
                self.push(SignalKind::Introduced, &term.label, None, place, 0);
            }
            self.push(SignalKind::Term, &term.label, None, place, term.count.ilog2());
        }
    }
}

/// How many times each plain one-word emphasized term of the text stands in it, and each one's plural with
/// `s` ([`uses`]), lowercased: counted once per source, not once per emphasized word (an emphasis-dense
/// file would make that quadratic), and only those words: a word of another length or first letter is not
/// looked up, so a long file costs a scan of its bytes rather than a hash of every word.
fn count_words(text: &str, doc: &ParsedDocument) -> rustc_hash::FxHashMap<String, u32> {
    let mut counts = rustc_hash::FxHashMap::default();
    for term in doc.emphasis.iter().filter(|term| !term.text.is_empty() && !term.text.contains(' ')) {
        let word = term.text.to_lowercase();
        counts.insert(format!("{word}s"), 0);
        counts.insert(word, 0);
    }
    let longest = counts.keys().map(String::len).max().unwrap_or(0);
    let mut first_letters = [false; 256];
    for word in counts.keys() {
        first_letters[usize::from(word.as_bytes()[0])] = true;
    }
    crate::text::each_lowercased_word(text, |word| {
        if word.len() <= longest
            && first_letters[usize::from(word.as_bytes()[0])]
            && let Some(count) = counts.get_mut(word)
        {
            *count += 1;
        }
    });
    counts
}

/// The words that stand in the text's code spans (`` `unsafe fn` ``), lowercased. Code blocks are left out:
/// their comments are prose ("// immediately activated").
fn words_in_code(text: &str, doc: &ParsedDocument) -> std::collections::HashSet<String> {
    let code = doc.code_ranges.iter().filter_map(|&(start, end)| text.get(start as usize..end as usize));
    let spans = code.filter(|code| code.starts_with('`') && !code.starts_with("```") && !code.contains('\n'));
    spans
        .flat_map(|code| code.split(|c: char| !c.is_alphanumeric() && c != '_'))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// How many times `word` stands in the counted text, alone or with a plural's `s`.
fn uses(counts: &rustc_hash::FxHashMap<String, u32>, word: &str) -> u32 {
    let word = word.to_lowercase();
    counts.get(&word).copied().unwrap_or_default() + counts.get(&format!("{word}s")).copied().unwrap_or_default()
}

/// How often a source must use a term its title or a heading names for the source to introduce it: more
/// than a passing mention, which a title's every word would otherwise be.
const TITLED_TERM_COUNT: u32 = 4;

/// Whether an emphasized span reads as a term a text introduces: one to three words, letters first, not a
/// sentence or a clause (no closing punctuation), not only common words (`*not*`, `*must*`, `*all*` are
/// stress, not terms).
/// Whether the emphasized word at `start..end` (markers included) is a placeholder of a command synopsis
/// (`` `cargo report` _type_ [_options_] ``: the line opens with code, or the word stands in brackets) or
/// an example a lead-in announces at its line's end ("try a word that will match multiple lines, like
/// _body_:"), rather than a term the text introduces.
fn placeholder_or_example(text: &str, start: usize, end: usize) -> bool {
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let line = text[line_start..start].trim_start_matches([' ', '\t', '>', '-', '*', '+']);
    // A colon that ends the paragraph announces the block that follows ("like _body_:", then a listing);
    // one that goes on, in the line or the next, defines the word ("one such tool is _generics_: abstract
    // stand-ins", "async code needs a _runtime_:" wrapped before "a Rust crate which manages ...").
    let announces = text[end..].strip_prefix(':').is_some_and(|rest| {
        let mut lines = rest.split('\n');
        let same_line = lines.next().unwrap_or_default();
        let next_line = lines.next().unwrap_or_default().trim();
        same_line.trim().is_empty()
            && (next_line.is_empty() || next_line.starts_with(['`', '~', '-', '*', '+', '|', '>', '<']))
    });
    announces || text[..start].ends_with('[') || line.starts_with('`')
}

fn is_introduced_term(span: &str) -> bool {
    let span = span.trim();
    let words = span.split_whitespace().count();
    (1..=3).contains(&words)
        && span.len() <= 40
        && span.chars().next().is_some_and(char::is_alphabetic)
        && !span.ends_with([':', '.', ',', '!', '?', ';'])
        && span.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '\'' | '’'))
        && span.split_whitespace().any(|word| !super::terms::is_common(word))
        // One word in the past tense is a verb stressed (`*moved*`, `*called*`), not a term.
        && (words > 1 || !span.to_lowercase().ends_with("ed"))
}

/// The first block of prose (a few words, not markup: no HTML, embed, template or key-value line), else the
/// first other block that is not only embeds, else the first block that is not a heading.
fn lead_block(text: &str, doc: &ParsedDocument) -> Option<(usize, usize)> {
    let not_heading = |kind: &BlockKind| !matches!(kind, BlockKind::Heading(_));
    let prose = |start: u32, end: u32| {
        let block = text[start as usize..end as usize].trim_start();
        // A key-value line is metadata, listed (`- type: string`) or not.
        let first_line = block.lines().next().unwrap_or_default().trim_start_matches(['-', '*', '+', ' ']);
        block.split_whitespace().count() >= 5
            && quotable(block)
            && !block.starts_with(['<', '!', '{', '|', '['])
            && first_line.split_once(": ").is_none_or(|(key, _)| key.contains(' '))
    };
    doc.blocks
        .iter()
        .find(|b| b.kind == BlockKind::Other && prose(b.start, b.end))
        .or_else(|| doc.blocks.iter().find(|b| b.kind == BlockKind::Other && !only_embeds(text, doc, b)))
        .or_else(|| doc.blocks.iter().find(|b| not_heading(&b.kind)))
        .map(|b| (b.start as usize, b.end as usize))
}

/// Where mentions are quoted from, worked out once per block and reused for every mention in it: a block
/// with thousands of links would otherwise be scanned again for each one, and a build's time would grow
/// with the square of its size (issue 40: 16,000 links in one paragraph took 232 s).
struct Places<'a> {
    text: &'a str,
    doc: &'a ParsedDocument,
    blocks: std::collections::HashMap<usize, BlockPlaces>,
}

/// One block's places: its sentence bounds (a long paragraph), or its lines (a list or a table).
enum BlockPlaces {
    Whole,
    Sentences(Vec<usize>),
    Items(Items),
}

/// A list or table block's lines: where each starts, the item each belongs to, and where an item that
/// runs on from a line ends.
struct Items {
    /// The newlines inside the block, in order.
    newlines: Vec<usize>,
    /// For each line (the first, then one after each newline), where its item starts: the nearest line at
    /// or above it that starts a list item, else the block's start.
    item_start: Vec<usize>,
    /// For each newline, where an item running through it ends: the first newline at or after it whose
    /// next line starts an item or is blank, else the block's end.
    item_end: Vec<usize>,
}

impl<'a> Places<'a> {
    fn new(text: &'a str, doc: &'a ParsedDocument) -> Places<'a> {
        Places { text, doc, blocks: std::collections::HashMap::new() }
    }

    /// The top-level block that holds `at`.
    /// A long block is narrowed to the sentences around `at`, and a list or table to the item that holds it:
    /// one item is the place, not the whole list, and a hard-wrapped line is not a sentence.
    fn block_around(&mut self, at: usize) -> (usize, usize) {
        let (text, doc) = (self.text, self.doc);
        let index = doc.blocks.partition_point(|b| b.start as usize <= at).saturating_sub(1);
        let Some(block) = doc.blocks.get(index) else { return (at, at) };
        let (start, end) = (block.start as usize, block.end as usize);
        let at = at.clamp(start, end);
        match self.blocks.entry(index).or_insert_with(|| BlockPlaces::of(text, start, end)) {
            BlockPlaces::Whole => (start, end),
            BlockPlaces::Sentences(bounds) => sentences_around(bounds, at),
            BlockPlaces::Items(items) => items.around(end, at),
        }
    }
}

impl BlockPlaces {
    fn of(text: &str, start: usize, end: usize) -> BlockPlaces {
        let listed = crate::text::starts_list_item;
        if !listed(text[start..end].trim_start()) {
            if end - start <= EXCERPT_BYTES {
                return BlockPlaces::Whole;
            }
            let mut bounds = vec![start];
            bounds.extend(crate::sentence_ends(&text[start..end]).map(|n| start + n));
            bounds.push(end);
            bounds.dedup();
            return BlockPlaces::Sentences(bounds);
        }
        let newlines: Vec<usize> = text[start..end].match_indices('\n').map(|(n, _)| start + n).collect();
        let mut item_start = Vec::with_capacity(newlines.len() + 1);
        item_start.push(start);
        for &newline in &newlines {
            let line = newline + 1;
            let previous = *item_start.last().expect("the first line");
            item_start.push(if listed(&text[line..]) { line } else { previous });
        }
        let mut item_end = vec![end; newlines.len()];
        for (k, &newline) in newlines.iter().enumerate().rev() {
            let next = &text[newline + 1..];
            item_end[k] = if listed(next) || next.starts_with('\n') {
                newline
            } else {
                item_end.get(k + 1).copied().unwrap_or(end)
            };
        }
        BlockPlaces::Items(Items { newlines, item_start, item_end })
    }
}

impl Items {
    /// The item of the block ending at `end` that holds `at`: from the line its marker starts on to the next
    /// item (or a blank line).
    fn around(&self, end: usize, at: usize) -> (usize, usize) {
        // The newlines before `at`: as many as the lines above the one holding it, and the index of the
        // first newline at or after it.
        let before = self.newlines.partition_point(|&n| n < at);
        (self.item_start[before], self.item_end.get(before).copied().unwrap_or(end))
    }
}

/// The sentence (between two of `bounds`) that holds `at`, with its neighbours while they fit in
/// [`EXCERPT_BYTES`]: the following one first, since a mention is usually explained after it.
fn sentences_around(bounds: &[usize], at: usize) -> (usize, usize) {
    let holding = bounds.partition_point(|&b| b <= at).clamp(1, bounds.len() - 1);
    let (mut from, mut to) = (holding - 1, holding);
    loop {
        if to + 1 < bounds.len() && bounds[to + 1] - bounds[from] <= EXCERPT_BYTES {
            to += 1;
        } else if from > 0 && bounds[to] - bounds[from - 1] <= EXCERPT_BYTES {
            from -= 1;
        } else {
            break;
        }
    }
    (bounds[from], bounds[to])
}

/// The excerpt for a mention inside `range`: the whole block when it is short, else the line holding the
/// mention's start; cut to [`EXCERPT_BYTES`] at a sentence end or a space, and kept inside one chunk.
fn excerpt(text: &str, doc: &ParsedDocument, chunks: &[Chunk], range: (usize, usize)) -> Option<Excerpt> {
    let (mut start, mut end) = range;
    // A place starts where the sentence before it ends, at the white space a chunk boundary may fall in.
    start += text[start..end].len() - text[start..end].trim_start().len();
    // The last chunk that starts at or before `start` and holds it (chunks overlap), found by a binary
    // search: a walk over every chunk for every mention would be quadratic in a link-dense file.
    let before = chunks.partition_point(|c| c.start as usize <= start);
    let chunk = chunks[..before].iter().rev().find(|c| start < c.end as usize)?;
    end = end.min(chunk.end as usize);
    if end - start > EXCERPT_BYTES {
        end = cut(text, start, start + EXCERPT_BYTES).min(end);
    }
    (start, end) = around_code(text, chunk, start, end);
    end = with_introduced_code(text, chunk, start, end);
    // A leading block label (the Rust Reference's rule id `r[type.pointer.intro]`, a line of its own before
    // the rule's text; an admonition's `!!! tip` before the tip) is markup a page would show mangled or bare:
    // the quote starts after it.
    while let Some((first, rest)) = text[start..end].split_once('\n')
        && crate::is_block_label(first)
        && !rest.trim().is_empty()
    {
        start = end - rest.len();
    }
    // A trailing one (a container's closing `:::`) likewise: the quote ends before it.
    while let Some((rest, last)) = text[start..end].rsplit_once('\n')
        && crate::is_block_label(last)
        && !rest.trim().is_empty()
    {
        end = start + rest.len();
    }
    let trimmed = text[start..end].trim();
    if trimmed.is_empty() {
        return None;
    }
    // Past the leading whitespace (a search for the trimmed text itself found the same place, at a cost of
    // its length: about 8 % of a rust-rfcs cold build's instructions).
    start += text[start..end].len() - text[start..end].trim_start().len();
    end = start + trimmed.len();
    Some(Excerpt {
        chunk: chunk.ordinal,
        start: offset(start),
        end: offset(end),
        start_line: doc.lines.line_of(offset(start)),
        end_line: doc.lines.line_of(offset(end.saturating_sub(1).max(start))),
        table_header: table_header_place(text, doc, chunks, start),
    })
}

/// The header of the table whose body row starts at `start`: the first two lines of the table block holding
/// it, when the second is a delimiter row, the row is below it, and one chunk holds both lines. Found from
/// the block, never by reading the rows above: a table of thousands of quoted rows would read them again for
/// each.
fn table_header_place(text: &str, doc: &ParsedDocument, chunks: &[Chunk], start: usize) -> Option<TableHeaderPlace> {
    if !text[start..].starts_with('|') {
        return None;
    }
    let index = doc.blocks.partition_point(|b| b.start as usize <= start).checked_sub(1)?;
    let table = &doc.blocks[index];
    let header = table.start as usize;
    let block = &text[header..table.end as usize];
    let header_row = block.find('\n')?;
    let delimiter = &block[header_row + 1..];
    let delimiter_end = header + header_row + 1 + delimiter.find('\n').unwrap_or(delimiter.len());
    if table.kind != BlockKind::Other
        || !block.starts_with('|')
        || !crate::text::is_table_delimiter(&text[header + header_row + 1..delimiter_end])
        || start <= delimiter_end
    {
        return None;
    }
    // Chunks start and end in order, so the last to start at or before the header reaches furthest: if it
    // does not hold the delimiter row, none does (the rows are not walked back over each chunk for each row).
    let before = chunks.partition_point(|c| c.start as usize <= header);
    let chunk = chunks[..before].last().filter(|c| delimiter_end <= c.end as usize)?;
    Some(TableHeaderPlace {
        chunk: chunk.ordinal,
        start: offset(header),
        end: offset(delimiter_end),
        line: doc.lines.line_of(offset(header)),
    })
}

/// An excerpt's range moved off the middle of a fenced block of its chunk: a quote cut inside code shows
/// the example's first lines without its end (and its sentences were cut at a period inside a comment). An
/// end inside code moves before the fence, or to the fence's close when the excerpt starts with it (within
/// twice [`EXCERPT_BYTES`], else before it); a start inside code moves past the fence.
fn around_code(text: &str, chunk: &Chunk, start: usize, end: usize) -> (usize, usize) {
    // Only a range that holds a fence line can start or end inside one that its chunk holds.
    if !crate::text::holds(&text[start..end], "```") && !crate::text::holds(&text[start..end], "~~~") {
        return (start, end);
    }
    let code = crate::chunking::fenced_ranges(text, chunk.start as usize, chunk.end as usize);
    let inside = |at: usize| code.iter().find(|&&(open, close)| open < at && at < close).copied();
    let start = inside(start).map_or(start, |(_, close)| close.min(end));
    if start == end {
        // All of it was code.
        return (start, end);
    }
    let end = match inside(end) {
        Some((open, close)) if text[start..open].trim().is_empty() => {
            if close - start <= 2 * EXCERPT_BYTES {
                close
            } else {
                start
            }
        }
        // Before the fence, without the blank quote lines (`>`) that led up to it.
        Some((open, _)) => start + text[start..open].trim_end_matches(|c: char| c == '>' || c.is_whitespace()).len(),
        None => end,
    };
    (start, end)
}

/// An excerpt that ends introducing an example ("Cargo generated this code for us:", "To install the latest
/// Python version:") taken with the fenced block right after it, when its chunk holds the block whole, the
/// block holds no template placeholder (the Rust book's `{{#rustdoc_include …}}`) and the quote stays within
/// twice [`EXCERPT_BYTES`]: a quote ending in a colon promises what it does not show.
fn with_introduced_code(text: &str, chunk: &Chunk, start: usize, end: usize) -> usize {
    if !text[start..end].trim_end().ends_with(':') {
        return end;
    }
    let (code, last_closed) = crate::chunking::fenced_ranges_closing(text, end, chunk.end as usize);
    let Some(&(open, close)) = code.first() else { return end };
    let closed = code.len() > 1 || last_closed;
    let between = text[end..open].trim_matches(|c: char| c == '>' || c.is_whitespace());
    if between.is_empty() && closed && quotable(&text[open..close]) && close - start <= 2 * EXCERPT_BYTES {
        close
    } else {
        end
    }
}

/// Whether an excerpt says something a reader can quote: no template placeholder (`{{fm.title}}`, text a
/// template fills in later, in a template note). A mention only a placeholder line holds is no mention.
fn quotable(excerpt: &str) -> bool {
    !crate::text::find(excerpt, "{{").is_some_and(|at| crate::text::holds(&excerpt[at..], "}}"))
}

/// Whether a place is a list item that only links: at most [`LINK_ITEM_WORDS`] words beside its links
/// ([`crate::words_beside_links`]), as an index of guides lists them ("- [JFrog Artifactory](jfrog.md)",
/// "- Using with [JFrog Artifactory](jfrog.md)"). An item that says something beside its link ("- custom
/// domains for [[managed publishing]]") is quoted.
fn only_links(place: &str) -> bool {
    crate::words_beside_links(place).is_some_and(|words| words <= LINK_ITEM_WORDS)
}

/// The words of its own a list item of links may hold and still only link ("Using with", "Devcon 1").
const LINK_ITEM_WORDS: usize = 2;

/// Whether a place is a table row that only labels: the table's header row ("| Pattern | Use |"), or a row
/// with one cell filled that names a group of the rows below it ("| **Engagement** | | |"). Such a row says
/// nothing about what it names: its source is listed with the others, not quoted.
fn labels_a_table(text: &str, end: usize, place: &str) -> bool {
    let row = place.trim();
    if !row.starts_with('|') || row.contains('\n') {
        return false;
    }
    let filled = row.trim_matches('|').split('|').filter(|cell| !cell.trim().is_empty()).count();
    let next_line = text[end..].strip_prefix('\n').map(|rest| rest.split('\n').next().unwrap_or_default());
    filled < 2 || next_line.is_some_and(crate::text::is_table_delimiter)
}

/// Where to end an excerpt that must stop by `limit`: after the last sentence that fits, else after the
/// first sentence if it ends within twice the limit, else at the last space, else at a character boundary.
fn cut(text: &str, start: usize, limit: usize) -> usize {
    let limit = crate::chunking::floor_char_boundary(text, limit);
    let window = &text[start..limit];
    if let Some(at) = crate::sentence_ends(window).last() {
        return start + at;
    }
    let longer = crate::chunking::floor_char_boundary(text, (start + 2 * (limit - start)).min(text.len()));
    if let Some(at) = crate::sentence_ends(&text[start..longer]).next() {
        return start + at;
    }
    window.rfind(char::is_whitespace).filter(|&at| at > 0).map_or(limit, |at| start + at)
}

/// Whether an emphasized span is a term the text defines: a short phrase right before `is`, `are`,
/// `means` or `refers to`, or right after `called`, `known as` or `termed`.
fn is_definition(text: &str, start: usize, end: usize, term: &str) -> bool {
    let words = term.split_whitespace().count();
    if !(1..=4).contains(&words) || term.len() > 48 || !term.chars().any(char::is_alphabetic) {
        return false;
    }
    if term.ends_with([':', '.', ',', '!', '?']) {
        return false;
    }
    let after = text[end..].trim_start_matches(['*', '_']);
    // Only the few words before the term matter: lowercasing all the text before it, for each emphasized
    // term, would be quadratic in an emphasis-dense file.
    let before = text[..start].trim_end_matches(['*', '_']);
    let before = before[crate::chunking::floor_char_boundary(before, before.len().saturating_sub(32))..].to_lowercase();
    [" is ", " are ", " means ", " refers to "].iter().any(|verb| after.starts_with(verb))
        || [" called", " known as", " termed"].iter().any(|lead| before.ends_with(lead))
}

/// A link to another document of the project: relative, not an image, not only an anchor.
fn is_relative_document(target: &str) -> bool {
    let target = target.trim();
    let path = target.split(['#', '?']).next().unwrap_or_default();
    if path.is_empty() || target.starts_with("//") || target.contains("://") || target.starts_with("mailto:") {
        return false;
    }
    let extension = path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
    !matches!(extension.as_deref(), Some("png" | "jpg" | "jpeg" | "gif" | "svg" | "webp" | "ico" | "pdf"))
}

/// The values of the first of `keys` the front matter holds: a list, or a scalar of comma-separated values.
fn values(front_matter: &FrontMatter, keys: &[&str]) -> Vec<String> {
    let Some(value) = keys.iter().find_map(|key| front_matter.fields.get(*key)) else { return Vec::new() };
    let list = match value {
        FrontMatterValue::List(list) => list.clone(),
        FrontMatterValue::Scalar(scalar) => scalar.split(',').map(str::to_string).collect(),
    };
    list.into_iter().map(|v| v.trim().trim_matches(['"', '\'']).to_string()).filter(|v| !v.is_empty()).collect()
}

/// Whether a block holds nothing but embeds: its text with the parser's `![[embeds]]` taken out is blank.
fn only_embeds(text: &str, doc: &ParsedDocument, block: &crate::Block) -> bool {
    let (start, end) = (block.start as usize, block.end as usize);
    let mut at = start;
    // The links are in order: only those from the block's start on are looked at.
    let first = doc.wikilinks.partition_point(|l| (l.start as usize) < start);
    let embeds = doc.wikilinks[first..]
        .iter()
        .take_while(|l| (l.start as usize) < end)
        .filter(|l| l.embed && l.end as usize <= end);
    for embed in embeds {
        if !text[at..embed.start as usize].trim().is_empty() {
            return false;
        }
        at = embed.end as usize;
    }
    at > start && text[at..end].trim().is_empty()
}
