//! Lint facts: everything in one source that a lint rule looks at, with its line and column.
//!
//! Facts are per file and need no other file, so the build computes them with the other per-file queries
//! and stores them; `knowledge lint` then resolves links across the project from stored facts, re-deriving
//! only the files that changed since the build.

use serde::{Deserialize, Serialize};

use crate::markdown::ParsedDocument;
use crate::text::offset;

/// A value found at a place in the source: 1-based line, and 1-based column in characters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Located {
    pub value: String,
    pub line: u32,
    pub column: u32,
}

/// A `[[wikilink]]`: the sides of its `|`, in source order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WikiLinkFact {
    pub first: String,
    pub second: Option<String>,
    pub line: u32,
    pub column: u32,
}

/// Codes an inline comment suppresses on one line: the next line for a comment alone on its line, its own
/// line for a comment after other text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suppression {
    pub line: u32,
    pub codes: Vec<String>,
}

/// Stored as JSON for every source; empty lists are left out, since most files have few of each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LintFacts {
    /// Link destinations as written (relative paths, anchors and URLs alike).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Located>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wikilinks: Vec<WikiLinkFact>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub footnote_refs: Vec<Located>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub footnote_defs: Vec<Located>,
    /// `[^label]` text outside code that is not a footnote reference: a reference to a missing definition.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub undefined_footnotes: Vec<Located>,
    /// Anchors a link to this file may name: heading anchors and HTML `id`/`name` attributes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<String>,
    /// Contradiction markers found, by the pattern that matched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub markers: Vec<Located>,
    /// Malformed front matter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Located>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suppressed_lines: Vec<Suppression>,
    /// Codes suppressed in the whole file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suppressed_file: Vec<String>,
    /// Sections with prose that hold no link, wikilink, footnote reference or source ref: the section's heading (empty
    /// for text before the first heading), where it starts. Recorded for hand-written wiki pages only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uncited_sections: Vec<Located>,
    /// Source refs with a revision (`file://PATH@REV`, as context packs cite) outside code.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_refs: Vec<Located>,
}

/// A section needs this many words of prose to make claims worth a citation.
const CLAIM_WORDS: usize = 12;

/// The marker `<!-- lint-ignore CODE[, CODE] -->` suppresses codes on the next line when it stands alone,
/// and on its own line when it follows other text; the marker
/// `<!-- lint-ignore-file CODE[, CODE] -->` suppresses them in the whole file. `all` names every code.
const IGNORE_MARK: &str = "<!-- lint-ignore";
const IGNORE_LINE: &str = "<!-- lint-ignore ";
const IGNORE_FILE: &str = "<!-- lint-ignore-file ";

/// `wiki_page`: the source is a hand-written wiki page, whose uncited sections are recorded.
pub(crate) fn lint_facts(
    text: &str,
    doc: &ParsedDocument,
    contradiction_patterns: &[String],
    wiki_page: bool,
) -> LintFacts {
    let columns = crate::text::ColumnCursor::new(&doc.lines, text);
    let at = |start: u32| columns.line_column(start);
    let located = |value: &str, start: u32| {
        let (line, column) = at(start);
        Located { value: value.to_string(), line, column }
    };
    let in_code = |position: usize| {
        let position = offset(position);
        doc.code_ranges.iter().any(|&(start, end)| start <= position && position < end)
    };

    let mut facts = LintFacts {
        // Links with a scheme (`https:`, `mailto:`) or protocol-relative ones are never checked.
        links: doc
            .links
            .iter()
            .filter(|link| !is_external(&link.target))
            .map(|link| located(&link.target, link.start))
            .collect(),
        wikilinks: doc
            .wikilinks
            .iter()
            .map(|w| {
                let (line, column) = at(w.start);
                WikiLinkFact { first: w.first.clone(), second: w.second.clone(), line, column }
            })
            .collect(),
        footnote_refs: doc.footnote_refs.iter().map(|(label, start)| located(label, *start)).collect(),
        footnote_defs: doc.footnote_defs.iter().map(|(label, start)| located(label, *start)).collect(),
        anchors: doc.headings.iter().map(|h| h.anchor.clone()).chain(doc.html_anchors.iter().cloned()).collect(),
        problems: doc.problems.iter().map(|p| Located { value: p.message.clone(), line: p.line, column: 1 }).collect(),
        ..LintFacts::default()
    };
    if unclosed_front_matter(text, doc) {
        facts.problems.push(Located {
            value: "front matter starts with `---` on line 1 but is never closed".to_string(),
            line: 1,
            column: 1,
        });
    }

    facts.undefined_footnotes = undefined_footnotes(text, doc, &in_code, &located);

    // Whole-text searches: most files hold no marker and no suppression, so lines are found only for hits.
    for pattern in contradiction_patterns.iter().filter(|p| !p.is_empty()) {
        for (found, _) in text.match_indices(pattern.as_str()) {
            if !in_code(found) {
                facts.markers.push(located(pattern, offset(found)));
            }
        }
    }
    (facts.suppressed_file, facts.suppressed_lines) = suppressions(text, &at);
    facts.markers.sort_by_key(|m| (m.line, m.column));
    let mut ref_offsets = Vec::new();
    for (found, _) in text.match_indices("file://") {
        let end = text[found..]
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '>' | ']' | '`' | '"' | '\''))
            .map_or(text.len(), |n| found + n);
        let reference = text[found..end].trim_end_matches(['.', ',', ';', ':']);
        if reference.contains('@') && !in_code(found) {
            facts.source_refs.push(located(reference, offset(found)));
            ref_offsets.push(offset(found));
        }
    }
    if wiki_page {
        facts.uncited_sections = uncited_sections(text, doc, &ref_offsets, &located);
    }
    facts
}

/// `[^label]` outside code that the parser did not take as a reference or a definition.
fn undefined_footnotes(
    text: &str,
    doc: &ParsedDocument,
    in_code: &impl Fn(usize) -> bool,
    located: &impl Fn(&str, u32) -> Located,
) -> Vec<Located> {
    let mut found_labels = Vec::new();
    let references: Vec<u32> = doc.footnote_refs.iter().map(|(_, start)| *start).collect();
    let mut search_from = 0;
    while let Some(found) = crate::text::find(&text[search_from..], "[^") {
        let start = search_from + found;
        search_from = start + 2;
        let Some(length) = text[start + 2..].find(']') else { break };
        let label = &text[start + 2..start + 2 + length];
        let is_definition = text[start + 2 + length + 1..].starts_with(':');
        if label.is_empty()
            || label.contains(char::is_whitespace)
            || is_definition
            || in_code(start)
            || references.contains(&offset(start))
        {
            continue;
        }
        found_labels.push(located(label, offset(start)));
    }

    found_labels
}

/// The codes suppressed in the whole file, and those suppressed on a line, by the file's
/// `<!-- lint-ignore… -->` comments.
fn suppressions(text: &str, at: &impl Fn(u32) -> (u32, u32)) -> (Vec<String>, Vec<Suppression>) {
    let (mut whole_file, mut lines) = (Vec::new(), Vec::new());
    for (found, _) in text.match_indices(IGNORE_MARK) {
        let line_start = text[..found].rfind('\n').map_or(0, |at| at + 1);
        let line_end = text[found..].find('\n').map_or(text.len(), |at| found + at);
        let line = &text[line_start..line_end];
        let (line_number, _) = at(offset(found));
        if let Some(codes) = comment_codes(line, IGNORE_FILE) {
            whole_file.extend(codes);
        } else if let Some(codes) = comment_codes(line, IGNORE_LINE) {
            let standalone = line.trim_start().starts_with(IGNORE_LINE);
            let line = if standalone { line_number + 1 } else { line_number };
            lines.push(Suppression { line, codes });
        }
    }
    (whole_file, lines)
}

/// Sections (split at headings) with at least [`CLAIM_WORDS`] words of prose outside code and no link,
/// wikilink, footnote reference or source ref.
fn uncited_sections(
    text: &str,
    doc: &ParsedDocument,
    source_refs: &[u32],
    located: &dyn Fn(&str, u32) -> Located,
) -> Vec<Located> {
    let citations: Vec<u32> = doc
        .links
        .iter()
        .map(|l| l.start)
        .chain(source_refs.iter().copied())
        .chain(doc.wikilinks.iter().map(|w| w.start))
        .chain(doc.footnote_refs.iter().map(|(_, at)| *at))
        .collect();
    // (heading, start of the section, prose words, cites)
    let mut sections: Vec<(String, u32, usize, bool)> = Vec::new();
    for block in &doc.blocks {
        match block.kind {
            crate::markdown::BlockKind::Heading(index) => {
                sections.push((doc.headings[index as usize].text.clone(), block.start, 0, false));
            }
            kind => {
                if sections.is_empty() {
                    sections.push((String::new(), block.start, 0, false));
                }
                let section = sections.last_mut().expect("a section was just opened");
                if kind == crate::markdown::BlockKind::Other {
                    section.2 += text[block.start as usize..block.end as usize].split_whitespace().count();
                }
                section.3 |= citations.iter().any(|&at| block.start <= at && at < block.end);
            }
        }
    }
    sections
        .into_iter()
        .filter(|(_, _, words, cites)| *words >= CLAIM_WORDS && !cites)
        .map(|(heading, start, _, _)| located(&heading, start))
        .collect()
}

/// A destination with a URL scheme, or a protocol-relative one.
fn is_external(target: &str) -> bool {
    let target = target.trim();
    target.starts_with("//")
        || target.split_once(':').is_some_and(|(scheme, _)| {
            scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
}

/// The codes of a suppression comment on this line, if it has one.
fn comment_codes(line: &str, marker: &str) -> Option<Vec<String>> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let list = &rest[..rest.find("-->")?];
    Some(list.split([',', ' ']).map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect())
}

/// A document whose first line is `---` and whose second looks like `key: value`, but which the parser
/// did not read as front matter, forgot its closing `---`.
fn unclosed_front_matter(text: &str, doc: &ParsedDocument) -> bool {
    let mut lines = text.lines();
    doc.front_matter.is_none()
        && lines.next().is_some_and(|l| l.trim_end() == "---")
        && lines.next().is_some_and(|l| {
            l.split_once(':').is_some_and(|(key, _)| !key.is_empty() && !key.contains(char::is_whitespace))
        })
}
