//! Markdown-aware chunking.
//!
//! A document splits into sections at every heading. A section's blocks are packed greedily into chunks of
//! at most `target_bytes`; a code block is never split, nor is a fenced block inside a list or a quote,
//! and a prose block larger than the target splits at line ends, then at whitespace. When one section needs
//! several chunks, each chunk after the first starts up to `overlap_bytes` before the previous one ended, at
//! a sentence or block start, so a sentence cut at a boundary is whole in one of them. A heading with no
//! content of its own before its first sub-heading joins the chunk that follows, and a heading is never a
//! chunk alone: it stays with its first block. Every chunk is a byte range of the source: its text is the
//! source slice, so offsets in a citation always resolve.

use crate::hash::content_hash;
use crate::identifiers::identifier_parts;
use crate::markdown::{BlockKind, ParsedDocument};
use crate::text::offset;

/// Chunking parameters, from `[chunking]` in `kc.toml`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkingParams {
    pub target_bytes: u32,
    pub overlap_bytes: u32,
}

/// One chunk of a source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Stable identity: a hash of the source path, the text hash and the occurrence of that text in the
    /// file, so that an edit elsewhere in the file does not change it.
    pub id: String,
    /// Position of the chunk in the file, from 0.
    pub ordinal: u32,
    /// Titles of the enclosing headings, outermost first.
    pub heading_path: Vec<String>,
    pub start: u32,
    pub end: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// Content hash of the chunk's text.
    pub hash: String,
    /// The de-dotted parts of compound identifiers in the text, for the keyword index.
    pub identifiers: String,
}

/// A range of bytes that is packed into chunks as a whole: a block, or a piece of an oversized block.
#[derive(Clone, Copy, Debug)]
struct Unit {
    start: usize,
    end: usize,
    /// A code block: never split, and never the start of an overlap.
    code: bool,
}

struct Section {
    heading_path: Vec<String>,
    /// Where the section's chunks start: its heading, or an earlier empty parent heading.
    start: usize,
    units: Vec<Unit>,
    /// Whether the section holds a block besides its heading.
    has_content: bool,
}

pub(crate) fn chunk_document(path: &str, text: &str, doc: &ParsedDocument, params: ChunkingParams) -> Vec<Chunk> {
    let target = params.target_bytes.max(1) as usize;
    let overlap = (params.overlap_bytes as usize).min(target / 2);
    let mut ranges: Vec<(Vec<String>, usize, usize)> = Vec::new();
    for section in sections(text, doc, target) {
        pack_section(text, &section, target, overlap, &mut ranges);
    }

    let mut seen = std::collections::HashMap::<String, u32>::new();
    ranges
        .into_iter()
        .enumerate()
        .map(|(ordinal, (heading_path, start, end))| {
            let slice = &text[start..end];
            let hash = content_hash(slice.as_bytes());
            let occurrence = seen.entry(hash.clone()).or_insert(0);
            let id = content_hash(format!("{path}\0{hash}\0{occurrence}").as_bytes());
            *occurrence += 1;
            Chunk {
                id,
                ordinal: offset(ordinal),
                heading_path,
                start: offset(start),
                end: offset(end),
                start_line: doc.lines.line_of(offset(start)),
                end_line: doc.lines.line_of(offset(end.saturating_sub(1).max(start))),
                hash,
                identifiers: identifier_parts(slice),
            }
        })
        .collect()
}

/// Groups blocks into sections at headings, splitting oversized prose blocks into units.
fn sections(text: &str, doc: &ParsedDocument, target: usize) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut path: Vec<(u8, String)> = Vec::new();
    let mut current = Section { heading_path: Vec::new(), start: 0, units: Vec::new(), has_content: false };
    // The start of a heading whose section had no content: it joins the next section's first chunk.
    let mut pending_start: Option<usize> = None;
    for block in &doc.blocks {
        let (start, end) = (block.start as usize, block.end as usize);
        if let BlockKind::Heading(index) = block.kind {
            let heading = &doc.headings[index as usize];
            if current.has_content {
                sections.push(std::mem::replace(
                    &mut current,
                    Section { heading_path: Vec::new(), start: 0, units: Vec::new(), has_content: false },
                ));
            } else if !current.units.is_empty() {
                pending_start.get_or_insert(current.start);
            }
            while path.last().is_some_and(|(level, _)| *level >= heading.level) {
                path.pop();
            }
            path.push((heading.level, heading.text.clone()));
            current.heading_path = path.iter().map(|(_, title)| title.clone()).collect();
            current.start = start;
            current.units.clear();
            current.units.push(Unit { start, end, code: false });
            continue;
        }
        // Markup a reader never sees (an anchor kept for old links, a comment) is no text of a chunk: a
        // search must not match an anchor's words, and a chunk of only markup has nothing to read.
        if block.kind == BlockKind::Other && crate::text::is_markup_only(&text[start..end]) {
            continue;
        }
        match block.kind {
            BlockKind::Code => current.units.push(Unit { start, end, code: true }),
            _ => split_oversized(text, start, end, target, &mut current.units),
        }
        current.has_content = true;
        if let Some(pending) = pending_start.take() {
            current.start = pending;
            current.units[0].start = pending;
        }
    }
    if let Some(pending) = pending_start
        && let Some(first) = current.units.first_mut()
    {
        current.start = pending;
        first.start = pending;
    }
    if !current.units.is_empty() {
        sections.push(current);
    }
    sections
}

/// Packs a section's units into chunk ranges of at most `target` bytes (a single larger unit stands alone).
fn pack_section(
    text: &str,
    section: &Section,
    target: usize,
    overlap: usize,
    out: &mut Vec<(Vec<String>, usize, usize)>,
) {
    let mut chunk_start: Option<usize> = None;
    let mut last_unit: Option<Unit> = None;
    // A section after a heading starts with the heading's unit, which never stands alone as a chunk: it
    // stays with the block after it, even when the two exceed the target.
    let starts_with_heading = !section.heading_path.is_empty();
    for (index, unit) in section.units.iter().enumerate() {
        match (chunk_start, last_unit) {
            (Some(start), Some(last)) if unit.end - start > target && !(starts_with_heading && index == 1) => {
                out.push((section.heading_path.clone(), start, last.end));
                // The overlap comes from the previous chunk's last unit only, and never from a code block.
                chunk_start = Some(if last.code {
                    unit.start
                } else {
                    overlap_start(text, last.start.max(start), last.end, unit.start, overlap)
                });
            }
            (None, _) => chunk_start = Some(unit.start),
            _ => {}
        }
        last_unit = Some(*unit);
    }
    if let (Some(start), Some(last)) = (chunk_start, last_unit) {
        out.push((section.heading_path.clone(), start, last.end));
    }
}

/// Where the chunk after `[previous_start, previous_end)` starts: at most `overlap` bytes before the previous
/// end, at the first sentence or block start in that window ([`sentence_or_block_start`]), never before the
/// previous start, and at `next_start` when the window holds no such boundary.
fn overlap_start(text: &str, previous_start: usize, previous_end: usize, next_start: usize, overlap: usize) -> usize {
    if overlap == 0 {
        return next_start;
    }
    let window_start = floor_char_boundary(text, previous_end.saturating_sub(overlap))
        .max(ceil_char_boundary(text, previous_start + 1));
    if window_start >= previous_end {
        return next_start;
    }
    let window = &text[window_start..previous_end];
    let boundary = sentence_or_block_start(window).map(|at| window_start + at);
    match boundary {
        Some(at) => {
            // Skip the whitespace a line or sentence break leaves, so the chunk starts on content.
            let trimmed = text[at..previous_end].len() - text[at..previous_end].trim_start().len();
            if at + trimmed < previous_end { at + trimmed } else { next_start }
        }
        None => next_start,
    }
}

/// The first place in `window` where a sentence or a block starts: after a sentence's end
/// ([`crate::sentence_ends`]), or a line after a blank line or a colon, or a line that opens a block
/// ([`crate::sentences::opens_a_block`]). A line start inside a paragraph wrapped at a fixed width (the Rust
/// book's) is in the middle of a sentence: a chunk starting there begins with a sentence's tail, which
/// `ask` and a page's summary would read as a sentence.
fn sentence_or_block_start(window: &str) -> Option<usize> {
    let sentence = crate::sentence_ends(window).next();
    let block = window.match_indices('\n').map(|(at, _)| at + 1).find(|&start| {
        let line_before = window[..start - 1].rsplit('\n').next().unwrap_or_default().trim_end();
        let line = window[start..].split('\n').next().unwrap_or_default();
        line_before.is_empty() || line_before.ends_with(':') || crate::sentences::opens_a_block(line)
    });
    sentence.into_iter().chain(block).min()
}

/// Splits a prose block larger than `target` into pieces at sentence or block ends, then line ends, then
/// whitespace, then anywhere on a character boundary, so that no piece is larger than `target` unless one
/// character is, or one fenced block is: a fence inside the block (a list item's or a quote's code) is cut
/// around, never through, since an excerpt that starts or ends inside code shows its code as prose and its
/// prose as code. A piece that holds a fence is marked as code, so no overlap starts inside it.
fn split_oversized(text: &str, start: usize, end: usize, target: usize, units: &mut Vec<Unit>) {
    let block = &text[start..end];
    let fenced = if crate::text::holds(block, "```") || crate::text::holds(block, "~~~") {
        fenced_ranges(text, start, end)
    } else {
        Vec::new()
    };
    let holds_fence = |from: usize, to: usize| fenced.iter().any(|&(open, close)| open < to && from < close);
    let mut piece_start = start;
    while end - piece_start > target {
        let limit = floor_char_boundary(text, piece_start + target);
        let window = &text[piece_start..limit];
        // A sentence's or a block's end in the window's second half, so no piece ends inside a sentence wrapped
        // over lines; else a line end, else a space.
        let cut = crate::last_sentence_or_block_end(window)
            .filter(|&at| at >= window.len() / 2)
            .or_else(|| window.rfind('\n').filter(|&at| at > 0))
            .or_else(|| window.rfind(char::is_whitespace).filter(|&at| at > 0))
            .map_or(limit, |at| piece_start + at);
        let cut = if cut <= piece_start { ceil_char_boundary(text, piece_start + 1) } else { cut };
        // A cut inside a fence moves before it, or after it when the piece starts with it.
        let cut = match fenced.iter().find(|&&(open, close)| open < cut && cut < close) {
            Some(&(open, _)) if open > piece_start => open,
            Some(&(_, close)) => close,
            None => cut,
        };
        let piece_end = piece_start + text[piece_start..cut].trim_end().len();
        if piece_end > piece_start {
            units.push(Unit { start: piece_start, end: piece_end, code: holds_fence(piece_start, piece_end) });
        }
        let rest = &text[cut..end];
        piece_start = cut + (rest.len() - rest.trim_start().len());
    }
    if end > piece_start {
        units.push(Unit { start: piece_start, end, code: holds_fence(piece_start, end) });
    }
}

/// The byte ranges of the fenced code inside `text[start..end]`, each from its opening fence line's start to
/// its closing fence line's end (or `end`, when it is not closed there). A line is read without what a list
/// or a quote puts before its code ([`content_of`]).
pub(crate) fn fenced_ranges(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    fenced_ranges_closing(text, start, end).0
}

/// [`fenced_ranges`], and whether the last of them closes inside `text[start..end]` (every other one does).
pub(crate) fn fenced_ranges_closing(text: &str, start: usize, end: usize) -> (Vec<(usize, usize)>, bool) {
    let mut ranges = Vec::new();
    let mut fences = crate::Fences::default();
    let mut open: Option<usize> = None;
    let mut at = start;
    for line in text[start..end].split_inclusive('\n') {
        let code = fences.is_code(content_of(line));
        let line_end = at + line.len();
        match (open, code) {
            (None, true) => open = Some(at),
            // The closing fence is code too; the line after it is not.
            (Some(from), false) => {
                ranges.push((from, at));
                open = None;
            }
            _ => {}
        }
        at = line_end;
    }
    if let Some(from) = open {
        ranges.push((from, end));
    }
    // A range ends after its closing fence's line break; a cut there is a line end, so trim it back to the
    // fence line's own end.
    for range in &mut ranges {
        range.1 = start + text[start..range.1].trim_end().len();
    }
    (ranges, fences.open().is_none())
}

/// A line without the `>` marks, the indentation and the list item's marker (`-`, `*`, `+`, `1.`, `1)`)
/// before its content: a fence may open a list item (`8. ```` ``` ````).
fn content_of(line: &str) -> &str {
    let bare = line.trim_start_matches(|c: char| c == '>' || c.is_whitespace());
    let digits = bare.bytes().take_while(u8::is_ascii_digit).count();
    let marker = match bare.as_bytes().first() {
        Some(b'-' | b'*' | b'+') => 1,
        Some(b'0'..=b'9') if digits <= 9 && matches!(bare.as_bytes().get(digits), Some(b'.' | b')')) => digits + 1,
        _ => return bare,
    };
    match bare[marker..].strip_prefix([' ', '\t']) {
        Some(content) => content.trim_start(),
        None => bare,
    }
}

/// The last char boundary at or before `at` (at most the text's length).
pub fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}
