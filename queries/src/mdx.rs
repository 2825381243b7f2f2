//! MDX read as Markdown: the text the Markdown parser reads for a `.mdx` source, byte for byte as long.
//!
//! MDX (Docusaurus, Astro Starlight, Nextra) is Markdown with JavaScript imports and exports, JSX components
//! and `{expressions}`, and it has no indented code: a component's children are indented for the writer's
//! eye (`<TabItem label="npm">` over an indented paragraph and fenced example). Read as CommonMark, those
//! children become code blocks and the imports paragraphs of text. The parser reads the source's
//! [`parse_view`] instead, where that markup is blank and indentation means nothing. The view keeps every
//! byte's offset and every line's number, so blocks, chunks, headings, links and excerpts are ranges of the
//! source itself, and what the index stores and cites is the source's own bytes. Readers skip the markup
//! lines a chunk still holds as they skip any block's label (`text::is_block_label`).

use std::borrow::Cow;

/// Whether a source is MDX, by its path's extension.
#[must_use]
pub(crate) fn is_mdx(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(_, extension)| extension.eq_ignore_ascii_case("mdx"))
}

/// What the Markdown parser reads for an MDX `text`, byte for byte as long, with the same lines:
/// - markup a reader of the rendered page never sees is blank: imports and exports (a block opening with
///   `import ` or `export ` at the margin, after a blank line); a flow expression (`{/* a note to editors */}`, a
///   line opening with `{` to where its braces close; a line that opens with one and goes on in text,
///   `{props.name} wrote this.`, is a paragraph); a line of JSX components' tags and nothing else (`<Tabs>`,
///   `</TabItem>`, `<Steps>`, `<Card title="x" />`), and a component's opening tag over several lines;
/// - indentation of four spaces or more is no code, as MDX reads it: a heading's or a code fence's moves to the
///   line's end (neither holds an offset a reader cites), any other line's pairs of leading spaces become
///   no-break spaces, so its words keep their offsets.
///
/// An expression or a tag that does not close before its block ends (a blank line) is malformed, and text: MDX
/// would refuse the file, and nothing of it is lost here. Fenced code (at any indent, as MDX reads it) is kept
/// as written, and so are the front matter and HTML (lower-case tags), which the Markdown reader reads as it
/// does in any Markdown source.
#[must_use]
pub(crate) fn parse_view(text: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = text.split_inclusive('\n').map(|line| line.trim_end_matches(['\n', '\r'])).collect();
    let mut written = vec![Written::AsIs; lines.len()];
    let mut at = 0;
    if lines.first() == Some(&"---") {
        at = 1 + lines[1..].iter().position(|&line| line == "---" || line == "...").map_or(lines.len(), |end| end + 1);
    }
    let mut runs = Runs { lines: &lines, unclosed_until: 0 };
    let mut fences = crate::Fences::default();
    let mut previous_blank = true;
    while at < lines.len() {
        let (line, trimmed) = (lines[at], lines[at].trim());
        let inside_a_fence = fences.open().is_some();
        if fences.is_code(trimmed) {
            // A fence line (it opens a block, or closes the one open) at the margin; the code as written.
            if (!inside_a_fence || fences.open().is_none()) && indent_of(line) > 0 {
                written[at] = Written::Outdented;
            }
            previous_blank = false;
            at += 1;
            continue;
        }
        let run = if previous_blank && is_esm_start(line) {
            Some(runs.block_end(at))
        } else if trimmed.starts_with('{') {
            runs.expression_end(at)
        } else if opens_component_tag(trimmed) {
            runs.tag_end(at)
        } else {
            is_component_tags(trimmed).then_some(at + 1)
        };
        if let Some(end) = run {
            written[at..end].fill(Written::Blank);
            previous_blank = false;
            at = end;
            continue;
        }
        if indent_of(line) >= CODE_INDENT && !trimmed.is_empty() {
            let heading = crate::text::is_heading_line(trimmed);
            written[at] = if heading { Written::Outdented } else { Written::Unindented };
        }
        previous_blank = trimmed.is_empty();
        at += 1;
    }
    if written.iter().all(|&how| how == Written::AsIs) {
        return Cow::Borrowed(text);
    }
    let mut view = String::with_capacity(text.len());
    for (line, how) in text.split_inclusive('\n').zip(written) {
        let content = line.trim_end_matches(['\n', '\r']);
        let indent = indent_of(content);
        match how {
            Written::AsIs => view.push_str(content),
            Written::Blank => view.extend(std::iter::repeat_n(' ', content.len())),
            // The indentation after the text, where CommonMark ignores it.
            Written::Outdented => {
                view.push_str(&content[indent..]);
                view.extend(std::iter::repeat_n(' ', indent));
            }
            // Each pair of leading spaces a no-break space (an odd space first), the text in place.
            Written::Unindented => {
                view.push_str(if indent % 2 == 1 { " " } else { "" });
                view.extend(std::iter::repeat_n(NO_BREAK_SPACE, indent / 2));
                view.push_str(&content[indent..]);
            }
        }
        view.push_str(&line[content.len()..]);
    }
    debug_assert_eq!(view.len(), text.len(), "the view keeps every offset");
    Cow::Owned(view)
}

/// How [`parse_view`] writes a line of the source.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    AsIs,
    /// Markup: spaces.
    Blank,
    /// A heading or a fence: its indentation after its text.
    Outdented,
    /// Any other indented line: its indentation as no-break spaces.
    Unindented,
}

/// Where markup that runs over lines ends, within its block: the lines, and the first line of a block in which
/// a run was found unclosed. Past one unclosed run, no run starts before that block's end is looked for again,
/// so each line is read a bounded number of times (a block of a thousand lines of `{` is read once, not a
/// thousand times).
struct Runs<'t> {
    lines: &'t [&'t str],
    unclosed_until: usize,
}

impl Runs<'_> {
    /// The line after the block `at` is in: the next blank line, or the end.
    fn block_end(&self, at: usize) -> usize {
        self.lines[at..].iter().position(|line| line.trim().is_empty()).map_or(self.lines.len(), |end| at + end)
    }

    /// The line after a flow expression opening at `at` closes its braces, within its block.
    fn expression_end(&mut self, at: usize) -> Option<usize> {
        let mut depth = brace_depth(self.lines[at]);
        if depth <= 0 {
            return is_one_expression(self.lines[at].trim()).then_some(at + 1);
        }
        self.run_end(at, |line| {
            depth += brace_depth(line);
            depth <= 0
        })
    }

    /// The line after a component's opening tag begun at `at` closes, within its block.
    fn tag_end(&mut self, at: usize) -> Option<usize> {
        self.run_end(at, |line| line.contains('>'))
    }

    /// The line after the first line past `at` that `closes`, within `at`'s block; `None`, and no run looked for
    /// again in this block, when none does.
    fn run_end(&mut self, at: usize, mut closes: impl FnMut(&str) -> bool) -> Option<usize> {
        if at < self.unclosed_until {
            return None;
        }
        let end = self.block_end(at);
        match (at + 1..end).find(|&line| closes(self.lines[line])) {
            Some(line) => Some(line + 1),
            None => {
                self.unclosed_until = end;
                None
            }
        }
    }
}

/// A quote of an MDX source as it reads: the indentation its lines after the first share removed, since MDX
/// reads none of it as code and a quote that kept it would show a tab's paragraph as a code block. A quote that
/// opens with a list item keeps its lines' indent, which nests them in the item. Lines inside a fence lose
/// as much as the others, so a fenced block keeps its own indentation.
#[must_use]
pub(crate) fn dedented_quote(text: &str) -> Cow<'_, str> {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else { return Cow::Borrowed(text) };
    if crate::text::starts_list_item(first.trim_start()) {
        return Cow::Borrowed(text);
    }
    let shared = lines.clone().filter(|line| !line.trim().is_empty()).map(indent_of).min().unwrap_or(0);
    if shared == 0 {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(first);
    for line in lines {
        out.push_str(line.get(shared.min(indent_of(line))..).unwrap_or(line));
    }
    Cow::Owned(out)
}

/// A no-break space: two bytes in UTF-8 that stand for two bytes of indentation. CommonMark counts only spaces
/// and tabs as indentation, so a line that starts with one is no indented code, and every character after it
/// stays where it was.
const NO_BREAK_SPACE: &str = "\u{a0}";

/// Indentation from which CommonMark reads a line as indented code.
const CODE_INDENT: usize = 4;

/// Leading spaces of a line (a tab is left alone: it would take a character of a width the view cannot keep).
fn indent_of(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// Whether a line opens an import or export block: the keyword at the margin, then a space, `{` or `*`.
fn is_esm_start(line: &str) -> bool {
    ["import", "export"].iter().any(|keyword| {
        line.strip_prefix(keyword).is_some_and(|rest| rest.starts_with([' ', '{', '*']) || rest.is_empty())
    })
}

/// How many more braces a line opens than it closes (quoted braces are counted too: a flow expression of
/// strings holding braces is rare, and one that runs on is blank only to its block's end).
fn brace_depth(line: &str) -> i64 {
    line.bytes().fold(0, |depth, b| match b {
        b'{' => depth + 1,
        b'}' => depth - 1,
        _ => depth,
    })
}

/// Whether a line is one expression and nothing else: its first brace closes at its end (`{/* note */}`,
/// `{frontmatter.title}`), not `{a} and {b}`, which is a paragraph with two.
fn is_one_expression(trimmed: &str) -> bool {
    let mut depth = 0i64;
    for (at, b) in trimmed.bytes().enumerate() {
        depth += match b {
            b'{' => 1,
            b'}' => -1,
            _ => 0,
        };
        if depth <= 0 {
            return at + 1 == trimmed.len() && at > 0;
        }
    }
    false
}

/// Whether a component's name starts at `rest` (after `<` or `</`): a capital letter (`Tabs`,
/// `Starlight.Card`), or `>` for a fragment. Lower-case names are HTML, which the Markdown reader reads as such.
fn names_component(rest: &str) -> bool {
    rest.starts_with(|c: char| c.is_ascii_uppercase() || c == '>')
}

/// Whether a line, trimmed, is MDX markup a chunk may hold between its blocks (the parser reads none of it as
/// text, [`parse_view`]): JSX components' tags and nothing else, a comment to editors on a line of its own
/// (`{/* prettier-ignore */}`), or an import or export statement on one line (`import Tabs from '@theme/Tabs';`,
/// `export const meta = {};`). Strict enough that a Markdown source's prose never reads as one.
#[must_use]
pub(crate) fn is_markup_line(trimmed: &str) -> bool {
    is_component_tags(trimmed) || (trimmed.starts_with("{/*") && trimmed.ends_with("*/}")) || is_esm_statement(trimmed)
}

/// An import or export statement on one line, as MDX writes them at a block's start.
fn is_esm_statement(trimmed: &str) -> bool {
    let quoted_module = |rest: &str| {
        let rest = rest.trim_end_matches(';');
        (rest.ends_with('\'') || rest.ends_with('"'))
            && (rest.contains(" from '") || rest.contains(" from \"") || rest.starts_with(['\'', '"']))
    };
    if let Some(rest) = trimmed.strip_prefix("import ") {
        return quoted_module(rest);
    }
    trimmed.strip_prefix("export ").is_some_and(|rest| {
        ["const ", "let ", "default ", "function ", "{ ", "* from "].iter().any(|start| rest.starts_with(start))
            && (trimmed.ends_with(';') || trimmed.ends_with('}') || quoted_module(rest))
    })
}

/// Whether a line is JSX components' tags and nothing else (`<Tabs>`, `</TabItem>`, `<Card title="x" />`,
/// `<TabItem label="npm"></TabItem>`).
#[must_use]
pub(crate) fn is_component_tags(trimmed: &str) -> bool {
    let mut rest = trimmed;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let Some(name) = rest.strip_prefix("</").or_else(|| rest.strip_prefix('<')) else { return false };
        if !names_component(name) {
            return false;
        }
        let Some(end) = rest.find('>') else { return false };
        rest = rest[end + 1..].trim_start();
    }
    true
}

/// The text a line of components' tags gives its reader: its attributes' quoted values, in order, one space
/// apart (`<Listing number="4-1" caption="A variable and its scope">` reads "4-1 A variable and its scope",
/// `<TabItem label="npm">` "npm"); none for `<Tabs>` or `<PluginLinks plugin={frontmatter.plugin} />`.
#[must_use]
pub(crate) fn tags_text(trimmed: &str) -> String {
    let mut values: Vec<&str> = Vec::new();
    let mut rest = trimmed;
    while let Some(at) = rest.find("=\"").into_iter().chain(rest.find("='")).min() {
        let quote = &rest[at + 1..at + 2];
        let value = &rest[at + 2..];
        let Some(end) = value.find(quote) else { break };
        if !value[..end].trim().is_empty() {
            values.push(value[..end].trim());
        }
        rest = &value[end + 1..];
    }
    values.join(" ")
}

/// Whether a line opens a component's tag that its line does not close (its attributes on the lines below).
pub(crate) fn opens_component_tag(trimmed: &str) -> bool {
    trimmed.strip_prefix('<').is_some_and(|name| names_component(name) && !name.starts_with('>'))
        && !trimmed.contains('>')
}

#[cfg(test)]
mod tests {
    use super::{dedented_quote, is_markup_line, is_mdx, parse_view};

    /// Each line of a view of `text`, no-break spaces shown as `~` and trailing spaces trimmed, after checking
    /// that the view keeps every offset and line.
    fn lines_of(text: &str, view: &str) -> Vec<String> {
        assert_eq!(view.len(), text.len());
        let breaks = |s: &str| s.match_indices('\n').map(|(at, _)| at).collect::<Vec<_>>();
        assert_eq!(breaks(view), breaks(text));
        view.lines().map(|line| line.replace('\u{a0}', "~").trim_end().to_string()).collect()
    }

    fn parsed(text: &str) -> Vec<String> {
        lines_of(text, &parse_view(text))
    }

    #[test]
    fn a_tags_line_reads_as_its_attributes_quoted_values() {
        use super::tags_text;
        assert_eq!(
            tags_text(r#"<Listing number="4-1" file-name="src/main.rs" caption="A variable's scope">"#),
            "4-1 src/main.rs A variable's scope"
        );
        assert_eq!(tags_text("<TabItem label='npm'>"), "npm");
        assert_eq!(tags_text("<Tabs>"), "");
        assert_eq!(tags_text("<PluginLinks plugin={frontmatter.plugin} />"), "");
        assert_eq!(tags_text(r#"<Card title="Unclosed>"#), "");
    }

    #[test]
    fn mdx_is_told_by_its_extension() {
        assert!(is_mdx("docs/plugin/notification.mdx"));
        assert!(is_mdx("docs/A.MDX"));
        assert!(!is_mdx("docs/notes.md"));
        assert!(!is_mdx("mdx"));
    }

    #[test]
    fn imports_exports_and_expressions_are_blank() {
        let text = "---\ntitle: T\nimport: kept\n---\n\nimport A from './a';\nimport {\n  B,\n} from 'b';\n\nexport const x = 1;\n\n{/* a note\n   to editors */}\n\nText.\n{props.name} wrote this.\n\nimport at a block's start is ESM, as MDX reads it.\n";
        let mut expected = vec!["---", "title: T", "import: kept", "---"];
        expected.extend([""; 11]);
        expected.extend(["Text.", "{props.name} wrote this.", "", ""]);
        assert_eq!(parsed("{a} and {b}\n{x}\n"), ["{a} and {b}", ""]);
        assert_eq!(parsed(text), expected);
    }

    #[test]
    fn a_prose_line_opening_with_import_is_esm_only_at_a_blocks_start() {
        assert_eq!(
            parsed("Text that goes on\nimport the data first.\n"),
            ["Text that goes on", "import the data first."]
        );
    }

    #[test]
    fn component_tags_are_blank_and_their_children_no_code() {
        let text = "<Tabs>\n  <TabItem label=\"npm\">\n\n    Use your package manager:\n\n    ```sh\n    npm add x\n    ```\n\n  </TabItem>\n  <CommandTabs\n    npm=\"npm run x\"\n  />\n</Tabs>\n\n    ## Setup\n";
        let mut parsed_lines = vec!["", "", "", "~~Use your package manager:", "", "```sh", "    npm add x", "```"];
        parsed_lines.extend([""; 7]);
        parsed_lines.push("## Setup");
        assert_eq!(parsed(text), parsed_lines);
        // A line that opens with `#` but is no heading keeps its words in place.
        assert_eq!(parsed("    #tag and *more*\n"), ["~~#tag and *more*"]);
    }

    #[test]
    fn html_and_fenced_code_are_read_as_markdown_reads_them() {
        let text = "<div>\n\n```jsx\n<Tabs>\nimport A from 'a';\n    {x}\n```\n\nA <Badge text=\"new\" /> inline.\n";
        let expected = [
            "<div>",
            "",
            "```jsx",
            "<Tabs>",
            "import A from 'a';",
            "    {x}",
            "```",
            "",
            "A <Badge text=\"new\" /> inline.",
        ];
        assert_eq!(parsed(text), expected);
    }

    #[test]
    fn a_source_with_nothing_of_mdx_is_its_own_view() {
        let text = "# Title\n\nText with `code`.\n\n```\n    indented in a fence\n```\n";
        assert!(matches!(parse_view(text), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn markup_lines_are_mdxs_own_and_no_prose() {
        for line in [
            "<Tabs>",
            "</TabItem>",
            "<TabItem label=\"npm\">",
            "<Card title=\"Setup\" icon=\"rocket\" />",
            "<>",
            "{/* prettier-ignore */}",
            "import Tabs from '@theme/Tabs';",
            "import { Tabs, TabItem } from \"@astrojs/starlight/components\"",
            "import './styles.css';",
            "export const meta = { title: 'x' };",
            "export { default } from './other.mdx';",
        ] {
            assert!(is_markup_line(line), "{line}");
        }
        for line in [
            "<div>",
            "<a id=\"old\"></a>",
            "Import the data from the file.",
            "import the data from 'a file' first",
            "export the table to CSV;",
            "{{#include ../listings/main.rs}}",
            "{props.name} wrote this.",
            "A <Badge text=\"new\" /> inline.",
        ] {
            assert!(!is_markup_line(line), "{line}");
        }
    }

    #[test]
    fn an_unclosed_expression_or_tag_is_text_and_loses_nothing() {
        let text =
            "{ an unclosed brace\nand its paragraph.\n\n<Card\n  title=\"no end\"\n\nText after.\n{\n{\n{\n\nLast.\n";
        assert_eq!(parsed(text), text.lines().collect::<Vec<_>>());
        // A block of a hundred thousand unclosed openings is read in one pass over it, not one per opening.
        let flood = "{\n".repeat(100_000) + "<Card\n".repeat(100_000).as_str();
        assert!(matches!(parse_view(&flood), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn a_quote_of_a_tabs_paragraph_loses_its_indent_a_list_keeps_its_nesting() {
        let quote =
            "Make sure you have installed\n    all prerequisites:\n\n    ```sh\n      cargo tauri info\n    ```";
        assert_eq!(
            dedented_quote(quote),
            "Make sure you have installed\nall prerequisites:\n\n```sh\n  cargo tauri info\n```"
        );
        let list = "- Install it\n    - with npm";
        assert_eq!(dedented_quote(list), list);
        assert_eq!(dedented_quote("One line"), "One line");
    }

    #[test]
    fn hostile_lines_keep_every_offset() {
        let pieces = [
            "{", "}", "<Tabs", ">", "    ", "\u{a0}", "```", "~~~", "import ", "é", "\r\n", "\n", " ", "<", "---\n",
            "x", "#",
        ];
        let mut state = 7u64;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..(state % 40) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            lines_of(&text, &parse_view(&text));
        }
    }
}
