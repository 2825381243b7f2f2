//! Reading a source into its structure: top-level blocks, headings, links and front matter.
//!
//! Parsing never fails: whatever a document holds, it yields a [`ParsedDocument`], and content the reader
//! cannot make sense of (an unreadable front matter line) becomes a [`ParseProblem`] in it.

use pulldown_cmark::{Event, HeadingLevel, LinkType, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use crate::front_matter::{self, FrontMatter};
use crate::inputs::SourceKind;
use crate::text::{LineIndex, offset};

/// Everything the chunker and the outline need from one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedDocument {
    pub kind: SourceKind,
    pub front_matter: Option<FrontMatter>,
    /// Top-level blocks in source order; front matter is not a block.
    pub blocks: Vec<Block>,
    pub headings: Vec<Heading>,
    /// Inline, reference and autolinks, and image sources (not wikilinks).
    pub links: Vec<Link>,
    pub wikilinks: Vec<WikiLink>,
    /// Footnote references and definitions, by label and offset.
    pub footnote_refs: Vec<(String, u32)>,
    pub footnote_defs: Vec<(String, u32)>,
    /// Byte ranges of code spans and code blocks, where nothing is a link, a footnote or a marker.
    pub code_ranges: Vec<(u32, u32)>,
    /// `id` and `name` attributes of raw HTML, which links may target like heading anchors.
    pub html_anchors: Vec<String>,
    /// Emphasized and strong spans outside headings, with their text: where defined terms are looked for.
    pub emphasis: Vec<Emphasis>,
    pub problems: Vec<ParseProblem>,
    pub lines: LineIndex,
}

/// A `[[wikilink]]`: the part before `|` and the part after it, if any. Obsidian writes `[[target|alias]]`
/// and Dendron `[[alias|target]]`; which side is the target is decided when links are resolved.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WikiLink {
    pub first: String,
    pub second: Option<String>,
    /// Written `![[...]]`: an embed of the other note.
    pub embed: bool,
    pub start: u32,
    pub end: u32,
}

/// An emphasized (`*term*`) or strong (`**term**`) span and its plain text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emphasis {
    pub text: String,
    pub start: u32,
    pub end: u32,
}

/// A top-level block: a heading, a fenced or indented code block, or any other block (paragraph, list,
/// table, quote, HTML), as a byte range into the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub kind: BlockKind,
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// A heading; the value indexes [`ParsedDocument::headings`].
    Heading(u32),
    Code,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Heading {
    pub level: u8,
    pub text: String,
    /// The GitHub-style anchor slug, unique within the document (`-1`, `-2` suffixes on repeats).
    pub anchor: String,
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    pub target: String,
    pub line: u32,
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ParseProblem {
    pub line: u32,
    pub message: String,
}

impl ParsedDocument {
    /// A document with nothing found in it yet.
    fn empty(kind: SourceKind, lines: LineIndex) -> ParsedDocument {
        ParsedDocument {
            kind,
            front_matter: None,
            blocks: Vec::new(),
            headings: Vec::new(),
            links: Vec::new(),
            wikilinks: Vec::new(),
            footnote_refs: Vec::new(),
            footnote_defs: Vec::new(),
            code_ranges: Vec::new(),
            html_anchors: Vec::new(),
            emphasis: Vec::new(),
            problems: Vec::new(),
            lines,
        }
    }
}

pub(crate) fn parse_document(kind: SourceKind, text: &str) -> ParsedDocument {
    match kind {
        SourceKind::Markdown => parse_markdown(text),
        SourceKind::Text | SourceKind::Code => parse_text(kind, text),
    }
}

/// Plain text: blocks are paragraphs separated by blank lines.
fn parse_text(kind: SourceKind, text: &str) -> ParsedDocument {
    let mut blocks = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            if let Some(block_start) = start.take() {
                blocks.push(Block { kind: BlockKind::Other, start: offset(block_start), end: offset(end) });
            }
        } else {
            start.get_or_insert(at);
            end = at + line.trim_end().len();
        }
        at += line.len();
    }
    if let Some(block_start) = start {
        blocks.push(Block { kind: BlockKind::Other, start: offset(block_start), end: offset(end) });
    }
    ParsedDocument { blocks, ..ParsedDocument::empty(kind, LineIndex::new(text)) }
}

/// The Markdown dialect every document is read in.
const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_FOOTNOTES)
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_TASKLISTS)
    .union(Options::ENABLE_YAML_STYLE_METADATA_BLOCKS)
    .union(Options::ENABLE_HEADING_ATTRIBUTES)
    .union(Options::ENABLE_WIKILINKS);

/// The front matter of a Markdown document, read exactly as `parse_document` reads it but without parsing the
/// rest: for the driver, which must know a file's labels before it decides to index it.
#[must_use]
pub fn front_matter(text: &str) -> Option<FrontMatter> {
    let mut events = Parser::new_ext(text, OPTIONS);
    if !matches!(events.next(), Some(Event::Start(Tag::MetadataBlock(MetadataBlockKind::YamlStyle)))) {
        return None;
    }
    let mut body = String::new();
    for event in events {
        match event {
            Event::Text(text) => body.push_str(&text),
            _ => break,
        }
    }
    Some(front_matter::read(&body).0)
}

fn parse_markdown(text: &str) -> ParsedDocument {
    parse_markdown_view(text, text)
}

/// An MDX source: its structure read from its parse view, which keeps every offset, its blocks trimmed and its
/// links checked in its own text.
pub(crate) fn parse_mdx(text: &str) -> ParsedDocument {
    parse_markdown_view(text, &crate::mdx::parse_view(text))
}

/// `text`'s structure as the Markdown parser reads `view`, a text of the same length and lines.
fn parse_markdown_view(text: &str, view: &str) -> ParsedDocument {
    debug_assert_eq!(text.len(), view.len(), "a view keeps every offset");
    let mut reader = MarkdownReader {
        text,
        document: ParsedDocument::empty(SourceKind::Markdown, LineIndex::new(text)),
        depth: 0,
        block_start: 0,
        block_kind: BlockKind::Other,
        heading: None,
        front_matter: None,
        anchors: AnchorSet::default(),
        emphasis: None,
    };
    for (event, range) in Parser::new_ext(view, OPTIONS).into_offset_iter() {
        match event {
            Event::Start(tag) => reader.start(tag, range),
            Event::End(tag_end) => reader.end(tag_end, range),
            Event::Code(content) => {
                reader.document.code_ranges.push((offset(range.start), offset(range.end)));
                if let Some((_, _, heading_text)) = &mut reader.heading {
                    heading_text.push_str(&content);
                }
            }
            Event::Text(content) => reader.text(&content),
            Event::Html(html) | Event::InlineHtml(html) => {
                reader.document.html_anchors.extend(html_ids(&html));
                if reader.depth == 0 {
                    push_block(&mut reader.document.blocks, text, BlockKind::Other, range.start, range.end);
                }
            }
            Event::Rule if reader.depth == 0 => {
                push_block(&mut reader.document.blocks, text, BlockKind::Other, range.start, range.end);
            }
            Event::FootnoteReference(label) => {
                reader.document.footnote_refs.push((label.to_string(), offset(range.start)));
            }
            _ => {}
        }
    }
    reader.document
}

/// A Markdown document read from pulldown-cmark's events, with what is open while they arrive.
struct MarkdownReader<'t> {
    text: &'t str,
    document: ParsedDocument,
    /// How many tags are open; a top-level block starts and ends at 0.
    depth: usize,
    block_start: usize,
    block_kind: BlockKind,
    /// The heading being read: its level, its explicit id, its text so far.
    heading: Option<(u8, Option<String>, String)>,
    /// The front matter block being read: its start and its text so far.
    front_matter: Option<(usize, String)>,
    anchors: AnchorSet,
    /// The emphasized span being read: its start and its text so far.
    emphasis: Option<(usize, String)>,
}

impl MarkdownReader<'_> {
    fn start(&mut self, tag: Tag<'_>, range: std::ops::Range<usize>) {
        let text = self.text;
        if self.depth == 0 {
            self.block_start = range.start;
            self.block_kind = match &tag {
                Tag::CodeBlock(_) => BlockKind::Code,
                _ => BlockKind::Other,
            };
        }
        self.depth += 1;
        let document = &mut self.document;
        match tag {
            Tag::Heading { level, id, .. } => {
                self.heading = Some((heading_level(level), id.map(|id| id.to_string()), String::new()));
            }
            Tag::MetadataBlock(MetadataBlockKind::YamlStyle) => {
                self.front_matter = Some((range.start, String::new()));
            }
            // `[[1]](url)`, `[[text]] (url)` and `[[text]]（url）` put link text in brackets before a URL:
            // they are not wikilinks.
            Tag::Link { link_type: LinkType::WikiLink { .. }, .. }
                if text[range.end..].trim_start_matches([' ', '\t']).starts_with(['(', '（']) => {}
            // `[[`x`]]: url` at the start of a line is a link reference definition (rustdoc's
            // intra-doc style), not a wikilink.
            Tag::Link { link_type: LinkType::WikiLink { .. }, .. }
                if text[range.end..].starts_with(':')
                    && text[..range.start].rsplit('\n').next().is_some_and(|before| before.trim().is_empty()) => {}
            // `<help@crates.io>` is an address, not a file: nothing to resolve.
            Tag::Link { link_type: LinkType::Email, .. } => {}
            // `![[note]]` embeds a note (Obsidian, Dendron note references): a wikilink too.
            Tag::Link { link_type: LinkType::WikiLink { .. }, .. }
            | Tag::Image { link_type: LinkType::WikiLink { .. }, .. } => {
                let inner = text[range.start..range.end].trim_start_matches(['!', '[']).trim_end_matches(']');
                let (first, second) = match inner.split_once('|') {
                    Some((first, second)) => (first.trim().to_string(), Some(second.trim().to_string())),
                    None => (inner.trim().to_string(), None),
                };
                document.wikilinks.push(WikiLink {
                    first,
                    second,
                    embed: text[range.start..range.end].starts_with('!'),
                    start: offset(range.start),
                    end: offset(range.end),
                });
            }
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => document.links.push(Link {
                target: dest_url.to_string(),
                line: document.lines.line_of(offset(range.start)),
                start: offset(range.start),
                end: offset(range.end),
            }),
            Tag::CodeBlock(_) => document.code_ranges.push((offset(range.start), offset(range.end))),
            Tag::Emphasis | Tag::Strong if self.heading.is_none() && self.emphasis.is_none() => {
                self.emphasis = Some((range.start, String::new()));
            }
            Tag::FootnoteDefinition(label) => document.footnote_defs.push((label.to_string(), offset(range.start))),
            _ => {}
        }
    }

    fn end(&mut self, tag_end: TagEnd, range: std::ops::Range<usize>) {
        self.depth = self.depth.saturating_sub(1);
        let document = &mut self.document;
        match tag_end {
            TagEnd::Heading(_) => {
                if let Some((level, id, heading_text)) = self.heading.take() {
                    let heading_text = heading_text.trim().to_string();
                    let anchor = id.unwrap_or_else(|| self.anchors.unique(&heading_text));
                    self.block_kind = BlockKind::Heading(offset(document.headings.len()));
                    document.headings.push(Heading {
                        level,
                        text: heading_text,
                        anchor,
                        line: document.lines.line_of(offset(range.start)),
                    });
                }
            }
            TagEnd::Emphasis | TagEnd::Strong => {
                if let Some((start, span_text)) = self.emphasis.take_if(|(start, _)| *start == range.start) {
                    document.emphasis.push(Emphasis { text: span_text, start: offset(start), end: offset(range.end) });
                }
            }
            TagEnd::MetadataBlock(_) => {
                if let Some((start, body)) = self.front_matter.take() {
                    let (fields, problems) = front_matter::read(&body);
                    // The body starts on the line after the opening `---`.
                    let first_line = document.lines.line_of(offset(start)) + 1;
                    document.problems.extend(problems.into_iter().map(|(index, message)| ParseProblem {
                        line: first_line + offset(index),
                        message: format!("front matter: {message}"),
                    }));
                    document.front_matter = Some(fields);
                }
                // Front matter is not a block.
                return;
            }
            _ => {}
        }
        if self.depth == 0 {
            push_block(&mut document.blocks, self.text, self.block_kind, self.block_start, range.end);
        }
    }

    fn text(&mut self, content: &str) {
        if let Some((_, span_text)) = &mut self.emphasis {
            span_text.push_str(content);
        }
        if let Some((_, _, heading_text)) = &mut self.heading {
            heading_text.push_str(content);
        } else if let Some((_, body)) = &mut self.front_matter {
            body.push_str(content);
        }
    }
}

/// The values of `id` and `name` attributes in a piece of raw HTML.
fn html_ids(html: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for attribute in ["id=", "name="] {
        let mut rest = html;
        while let Some(at) = rest.find(attribute) {
            let preceded_by_space = at == 0 || rest[..at].ends_with(char::is_whitespace);
            rest = &rest[at + attribute.len()..];
            let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
            if let Some(end) = rest[1..].find(quote)
                && preceded_by_space
            {
                ids.push(rest[1..=end].to_string());
            }
        }
    }
    ids
}

/// Records a block with trailing whitespace trimmed, so chunk ranges end on content.
fn push_block(blocks: &mut Vec<Block>, text: &str, kind: BlockKind, start: usize, end: usize) {
    let end = start + text[start..end].trim_end().len();
    if end > start {
        blocks.push(Block { kind, start: offset(start), end: offset(end) });
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// GitHub-style anchors: lowercase, spaces to `-`, punctuation other than `-` and `_` dropped, and a
/// numeric suffix on repeats.
#[derive(Default)]
struct AnchorSet {
    seen: std::collections::HashMap<String, u32>,
}

impl AnchorSet {
    fn unique(&mut self, heading: &str) -> String {
        let base: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let count = self.seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 { base } else { format!("{base}-{count}") };
        *count += 1;
        anchor
    }
}
