//! Rendering pages and index shards through minijinja templates. The models are plain data the driver
//! fills from the plan and the index; rendering is pure.

use serde::Serialize;

/// The version of the page and index schema the templates emit (`schemas/v1.md`).
pub const SCHEMA_VERSION: u32 = 1;

/// The templates, by name: `page.md.j2`, `shard.md.j2`, `root.md.j2`. A singleton input: editing a
/// template re-renders pages and shards, and re-derives nothing else.
#[salsa::input(singleton, debug)]
pub struct Templates {
    #[returns(ref)]
    pub page: String,
    #[returns(ref)]
    pub shard: String,
    #[returns(ref)]
    pub root: String,
}

/// One generated page. The driver sets `model` only when it changed, so `render_page` re-runs only for
/// pages whose citations, links or title moved, or when the template changed.
#[salsa::input(debug)]
pub struct WikiPage {
    #[returns(ref)]
    pub slug: String,
    #[returns(ref)]
    pub model: PageModel,
    /// How many sources mention the concept, which the artifact catalog lists; the page does not show it.
    #[returns(copy)]
    pub source_count: u64,
}

/// Everything a page shows.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct PageModel {
    pub schema: u32,
    pub slug: String,
    pub title: String,
    pub aliases: Vec<String>,
    pub section: String,
    /// The sentences of the quotes most central to what the sources say, each with its quote's footnote
    /// (see `lead_summary`); filled with the quotes' texts.
    pub summary: Vec<super::SummaryLine>,
    /// `PROVIDER/MODEL` when the `[wiki] writer`'s model wrote the summary; `None` when it is extractive.
    pub written_by: Option<String>,
    /// The defining source's own words, when a source defines the concept.
    pub lead: Option<Quote>,
    /// The other quoted places.
    pub places: Vec<Quote>,
    /// Sources that mention the concept beyond the quoted ones.
    pub also: Vec<SourceLink>,
    /// The related pages' links, shared with the page's view.
    pub related: Vec<std::sync::Arc<PageLink>>,
    pub backlinks: Vec<Backlink>,
}

impl PageModel {
    /// The quotes in footnote order.
    pub fn quotes(&self) -> impl Iterator<Item = &Quote> {
        self.lead.iter().chain(&self.places)
    }
}

/// A quoted excerpt and the citation that proves it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Quote {
    /// The footnote number.
    pub note: u32,
    pub source: SourceLink,
    /// How the source mentions the concept: `title`, `defined`, `heading`, `wikilink`, ...
    pub signal: String,
    pub text: String,
    pub revision: String,
    /// The ordinal of the source's chunk that holds the quote, where its text is read from.
    pub chunk: u32,
    /// Content hash of `text`.
    pub hash: String,
    pub start: u32,
    pub end: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// The header of the table a quoted row belongs to (its header row and delimiter row), shown above the
    /// row so that its cells have their columns' names and Markdown renders it as a table.
    pub table_header: Option<TableHeader>,
}

/// A quoted table row's header: its header row and delimiter row (filled from the index like a quote's
/// text), where they are, and the lines they are on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TableHeader {
    pub text: String,
    pub chunk: u32,
    pub start: u32,
    pub end: u32,
    pub start_line: u32,
    pub end_line: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SourceLink {
    /// `file://PATH`.
    pub source_ref: String,
    pub path: String,
    pub title: String,
    /// The source relative to the page's folder.
    pub href: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct PageLink {
    pub slug: String,
    pub title: String,
    pub href: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Backlink {
    pub source: SourceLink,
    pub line: u32,
    /// `wikilink` or `link`.
    pub kind: String,
}

/// Renders a page with the `page.md.j2` template. An error names the template line.
#[salsa::tracked(returns(ref))]
pub fn render_page(db: &dyn crate::Db, page: WikiPage) -> Result<String, String> {
    let templates = Templates::get(db);
    let model = page.model(db);
    // A quote of an MDX source is shown as MDX reads it (`mdx::dedented_quote`); the model keeps the bytes read.
    let shown;
    let model = if model.quotes().any(|quote| crate::mdx::is_mdx(&quote.source.path)) {
        let mut dedented = model.clone();
        for quote in dedented.lead.iter_mut().chain(dedented.places.iter_mut()) {
            if crate::mdx::is_mdx(&quote.source.path) {
                quote.text = crate::mdx::dedented_quote(&quote.text).into_owned();
            }
        }
        shown = dedented;
        &shown
    } else {
        model
    };
    let context = PageContext { page: model, cites: model.quotes().collect() };
    render("page.md.j2", templates.page(db), &context)
}

/// A page model as templates see it: its fields, and `cites`, every quote in footnote order.
#[derive(Serialize)]
struct PageContext<'a> {
    #[serde(flatten)]
    page: &'a PageModel,
    cites: Vec<&'a Quote>,
}

/// Compiles a template without rendering it: a syntax error names the line.
pub fn check_template(name: &str, template: &str) -> Result<(), String> {
    environment(name, template).map(|_| ())
}

thread_local! {
    /// The last template compiled on this thread, by name and text: a build renders hundreds of pages with
    /// one template, and compiling it is most of the cost of a render.
    static COMPILED: std::cell::RefCell<Option<(String, String, minijinja::Environment<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Renders any model with a template's source text.
pub fn render(name: &str, template: &str, model: &impl Serialize) -> Result<String, String> {
    COMPILED.with(|compiled| {
        let mut compiled = compiled.borrow_mut();
        if !compiled.as_ref().is_some_and(|(n, t, _)| n == name && t == template) {
            *compiled = Some((name.to_string(), template.to_string(), environment(name, template)?));
        }
        let (_, _, env) = compiled.as_ref().expect("compiled just now");
        let rendered = env
            .get_template(name)
            .and_then(|template| template.render(minijinja::Value::from(minijinja::value::Serde(model))))
            .map_err(|error| describe(name, &error))?;
        // One trailing newline, whatever the template ends with.
        Ok(format!("{}\n", rendered.trim_end()))
    })
}

fn environment(name: &str, template: &str) -> Result<minijinja::Environment<'static>, String> {
    let mut env = minijinja::Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .map_err(|error| describe(name, &error))?;
    env.set_syntax(syntax);
    env.add_filter("yaml", yaml_string);
    env.add_filter("quote", quote);
    env.add_filter("md", markdown_text);
    env.add_filter("cell", table_cell);
    env.add_template_owned(name.to_string(), template.to_string()).map_err(|error| describe(name, &error))?;
    Ok(env)
}

fn describe(name: &str, error: &minijinja::Error) -> String {
    match error.line() {
        Some(line) => format!("template `{name}` line {line}: {}", error.detail().unwrap_or(&error.to_string())),
        None => format!("template `{name}`: {error}"),
    }
}

/// A YAML double-quoted scalar.
fn yaml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text as a Markdown block quote, its markup that cannot work out of its file rendered away first
/// ([`readable_excerpt`]).
fn quote(value: &str) -> String {
    readable_excerpt(value)
        .lines()
        .map(|line| if line.is_empty() { ">".to_string() } else { format!("> {line}") })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Markdown on one line that cannot end a table cell: its words joined by one space, each `|` escaped.
/// Written word by word into one string: a shard calls it twice a row, on every row, whenever one row
/// changes, and collecting the words, joining them and replacing in the joined text made three strings.
fn table_cell(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for word in value.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        let mut rest = word;
        while let Some(bar) = rest.find('|') {
            out.push_str(&rest[..bar]);
            out.push_str("\\|");
            rest = &rest[bar + 1..];
        }
        out.push_str(rest);
    }
    out
}

/// Text that shows as written inside Markdown link text or a table cell.
pub(super) fn markdown_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | '[' | ']' | '*' | '_' | '`' | '<' | '>' | '|') {
            out.push('\\');
        }
        out.push(if c == '\n' { ' ' } else { c });
    }
    out
}

/// An excerpt as a reader of a page sees it, outside its own file: HTML comments (`<!-- ignore -->`) and
/// empty anchors (`<a id="old-name"></a>`) removed, reference definitions (`[label]: url`) dropped, a
/// reference-style link (`[text][label]`, `[text][]`, `[text]`) or a relative one (`[text](ch04.md)`), neither
/// of which resolves from the page's folder, turned into its text; links to other sites, inline code and code
/// blocks are kept as written. A line that held only removed markup goes with it. The citation still
/// names the source's exact bytes: this is how they are shown, not what is cited.
#[must_use]
pub fn readable_excerpt(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Prose is rendered a run of lines at a time, since a link's text may wrap; code blocks as written.
    let mut prose = String::new();
    let mut fences = crate::Fences::default();
    for line in text.split_inclusive('\n') {
        if fences.is_code(line.trim_start_matches([' ', '>'])) {
            if !prose.is_empty() {
                out.push_str(&readable_prose(&std::mem::take(&mut prose)));
            }
            out.push_str(line);
        } else {
            prose.push_str(line);
        }
    }
    out.push_str(&readable_prose(&prose));
    out.trim_end().to_string()
}

/// Lines of prose with [`readable_excerpt`]'s rules. A line that held only removed markup goes with it.
fn readable_prose(prose: &str) -> String {
    // A reference definition and a block's label (a rule id `r[items.use.intro]`, an admonition's `!!! tip`)
    // are markup on a line of their own.
    let kept: String = prose
        .split_inclusive('\n')
        .filter(|line| {
            let content = line.trim_start_matches([' ', '>']);
            !is_reference_definition(content) && !crate::is_block_label(content)
        })
        .collect();
    let rendered = readable_line(&kept);
    let mut out = String::with_capacity(rendered.len());
    for line in rendered.split_inclusive('\n') {
        if line.contains(REMOVED) && line.trim().trim_matches(REMOVED).is_empty() {
            continue;
        }
        out.extend(line.chars().filter(|&c| c != REMOVED));
    }
    out
}

/// Stands where markup was removed until the lines left blank by it are dropped: a character of Unicode's
/// private use area, which no excerpt holds (the sources' text has its controls and bidi marks shown).
const REMOVED: char = '\u{E000}';

/// How `page.md.j2`'s note on a provider-written summary ends (a test holds the template to it).
const WRITTEN_BY_END: &str = " from the quotes below; every sentence was checked against the quotes it cites.*";

/// Whether a line of a generated page says where its quotes come from rather than what the sources say, as
/// `page.md.j2` writes them: a quote's heading (`**[Soil](../soil.md)**, lines 6–7[^3]`), the lead quote's
/// `From [Compost](../compost.md).[^1]`, a provider's `*Written by …*` note and a footnote's definition
/// (`[^1]: \`file://…\` at revision …`). An answer quoting one would tell the reader nothing.
#[must_use]
pub fn is_attribution_line(line: &str) -> bool {
    let line = line.trim();
    if line.starts_with("[^") && footnote_mark(line).is_some() {
        return true;
    }
    if line.starts_with("*Written by ") && line.ends_with(WRITTEN_BY_END) {
        return true;
    }
    // The heading and the lead's line end in the quote's footnote mark.
    let Some(open) = line.rfind("[^").filter(|&open| line.ends_with(']') && footnote_mark(&line[open..]) == Some(""))
    else {
        return false;
    };
    let attributed = &line[..open];
    let heading = attributed.starts_with("**[")
        && attributed.split_once(")**, lines ").is_some_and(|(_, lines)| {
            lines.split('–').all(|number| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
        });
    let lead = attributed.starts_with("From [") && attributed.ends_with(").");
    heading || lead
}

/// `[label]: destination`, a reference definition (its destination may be on the next line, or cut off with
/// the excerpt).
fn is_reference_definition(line: &str) -> bool {
    line.strip_prefix('[')
        .and_then(|rest| rest.split_once("]:"))
        .is_some_and(|(label, _)| !label.is_empty() && !label.starts_with('^'))
}

/// Prose with [`readable_excerpt`]'s rules applied to its links, comments and anchors.
fn readable_line(prose: &str) -> String {
    let mut out = String::with_capacity(prose.len());
    let mut rest = prose;
    while let Some(at) = rest.find(['`', '<', '[']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with('`') {
            let ticks = tail.bytes().take_while(|&b| b == b'`').count();
            let end = tail[ticks..].find(&tail[..ticks]).map_or(tail.len(), |n| ticks + n + ticks);
            out.push_str(&tail[..end]);
            rest = &tail[end..];
        } else if let Some(comment) = tail.strip_prefix("<!--") {
            out.push(REMOVED);
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
        } else if let Some(after) = empty_anchor(tail) {
            out.push(REMOVED);
            rest = after;
        } else if let Some(after) = footnote_mark(tail) {
            // A footnote of the source would point at the page's own footnote of that number.
            out.push(REMOVED);
            rest = after;
        } else if let Some((text, after)) = link_text(tail) {
            // An image that does not resolve either shows its description.
            if out.ends_with('!') {
                out.pop();
            }
            out.push_str(text);
            rest = after;
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A footnote reference `[^label]` (or a definition's `[^label]:`) at the start of `text`, and what follows.
fn footnote_mark(text: &str) -> Option<&str> {
    let label = text.strip_prefix("[^")?;
    let end = label.find(']').filter(|&end| end > 0 && !label[..end].contains(char::is_whitespace))?;
    let after = &label[end + 1..];
    Some(after.strip_prefix(':').unwrap_or(after))
}

/// `<a id="…"></a>` or `<a name="…"></a>` at the start of `text`, and what follows it.
fn empty_anchor(text: &str) -> Option<&str> {
    let inside = text.strip_prefix("<a ")?;
    let end = inside.find('>')?;
    inside[end + 1..].strip_prefix("</a>")
}

/// At a `[`: a reference-style, relative or in-file (`#anchor`) link's text and what follows the link; `None` for any other
/// bracket (a link to another site, a footnote, a task box, plain text).
fn link_text(text: &str) -> Option<(&str, &str)> {
    let inner_end = text.find(']')?;
    let (inner, after) = (&text[1..inner_end], &text[inner_end + 1..]);
    if inner.starts_with('^') || inner.contains('[') {
        return None;
    }
    if let Some(label) = after.strip_prefix('[') {
        let end = label.find(']')?;
        return Some((inner, &label[end + 1..]));
    }
    // A shortcut reference (`[registries]`, defined elsewhere in its file) shows its text; a checkbox, a
    // bracketed number (`[x]`, `[1]`) and an alert's marker (`[!NOTE]`, which GitHub and mdBook render as a
    // callout) stay as written.
    let Some(target) = after.strip_prefix('(') else {
        let words = inner.chars().filter(|c| c.is_alphabetic()).count() >= 2 && !inner.starts_with('!');
        // Not a wikilink's inside (`[[note]]`) nor a definition.
        return (words && !after.starts_with([':', ']'])).then_some((inner, after));
    };
    let end = target.find(')')?;
    let destination = target[..end].trim();
    let elsewhere = destination.contains("://") || destination.starts_with("mailto:");
    (!elsewhere).then_some((inner, &target[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::{WRITTEN_BY_END, is_attribution_line, readable_excerpt, table_cell};

    /// A table cell holds its text on one line: each run of whitespace (Unicode's, a vertical tab and a
    /// no-break space too) one space, none at either end, and every `|` escaped, so the row keeps its columns.
    #[test]
    fn a_table_cell_is_one_line_that_cannot_end_its_cell() {
        let cases = [
            ("", ""),
            ("   ", ""),
            ("plain words", "plain words"),
            ("  two\n\tlines  \r\n", "two lines"),
            ("a | b||c", "a \\| b\\|\\|c"),
            ("| edge |", "\\| edge \\|"),
            ("tab\u{0B}vertical\u{A0}nbsp\u{2003}em", "tab vertical nbsp em"),
            ("caf\u{e9} na\u{ef}ve \u{4e2d}\u{6587}", "caf\u{e9} na\u{ef}ve \u{4e2d}\u{6587}"),
        ];
        for (text, cell) in cases {
            assert_eq!(table_cell(text), cell, "{text:?}");
        }
    }

    /// Every line of a page the golden build wrote that names a quote's source is told from the quotes and the
    /// prose around them, which are the page's statements.
    #[test]
    fn a_pages_attribution_lines_are_told_from_its_statements() {
        let template = include_str!("../../../templates/page.md.j2");
        assert!(template.contains(&format!("*Written by {{{{ written_by | md }}}}{WRITTEN_BY_END}\n")));
        assert!(is_attribution_line(&format!("*Written by Qwen (local){WRITTEN_BY_END}")));
        let page = include_str!("../../../golden/wiki/expected/wiki/garden/compost.md");
        let attributions: Vec<&str> = page.lines().filter(|line| is_attribution_line(line)).collect();
        assert_eq!(
            attributions,
            [
                "From [Compost](../../../../notes/garden/compost.md).[^1]",
                "**[Kitchen scraps](../../../../notes/kitchen/scraps.md)**, lines 7–7[^2]",
                "**[Soil](../../../../notes/garden/soil.md)**, lines 6–7[^3]",
                "[^1]: `file://notes/garden/compost.md` at revision `3fc4d05d76b04a6b0af7c1d413a486ae`, lines 8–8 \
                 ([source](../../../../notes/garden/compost.md#L8-L8)).",
                "[^2]: `file://notes/kitchen/scraps.md` at revision `487baa3b8379e2118d5348154d1795ce`, lines 7–7 \
                 ([source](../../../../notes/kitchen/scraps.md#L7-L7)).",
                "[^3]: `file://notes/garden/soil.md` at revision `a08c756ba738608c1ecfb13b4e059ec7`, lines 6–7 \
                 ([source](../../../../notes/garden/soil.md#L6-L7)).",
            ]
        );
        for statement in [
            "Compost feeds the soil.[^1] It heats up as it works.[^2]",
            "*Written by a provider*, it says: compost is warm.[^1]",
            "*Written by hand, and checked by the quotes it cites.*",
            "From [the guide](guide.md), we learn that compost is warm.[^1]",
            "**[Soil](soil.md)**, lines six to seven[^2]",
            "**[Soil](soil.md)** holds water, lines 6–7 say.",
        ] {
            assert!(!is_attribution_line(statement), "{statement}");
        }
    }

    #[test]
    fn a_rule_id_on_its_own_line_is_no_text() {
        assert_eq!(
            readable_excerpt(
                "r[type.pointer.raw.intro]\nRaw pointers are pointers.\n> r[a.b]\n> Quoted. See r[x] inline."
            ),
            "Raw pointers are pointers.\n> Quoted. See r[x] inline."
        );
    }

    #[test]
    fn code_is_read_as_commonmark_reads_fences() {
        // Three backticks that close on the same line are inline code: the line is prose, its link readable.
        assert_eq!(readable_excerpt("```x``` and [a link](b.md)\nmore"), "```x``` and a link\nmore");
        // A four-backtick block showing a three-backtick one stays code to its own close.
        let shown = "````md\n```\n[kept](b.md)\n```\n[kept](b.md)\n````\nthen [a link](b.md)";
        assert_eq!(readable_excerpt(shown), "````md\n```\n[kept](b.md)\n```\n[kept](b.md)\n````\nthen a link");
    }

    #[test]
    fn an_alerts_marker_stays_as_written() {
        assert_eq!(readable_excerpt("> [!NOTE]\n> A note, see [registries]."), "> [!NOTE]\n> A note, see registries.");
        assert_eq!(readable_excerpt("> > [!EDITION-2021]\n> > Since 2021."), "> > [!EDITION-2021]\n> > Since 2021.");
    }

    #[test]
    fn markup_that_cannot_work_out_of_its_file_is_rendered_away() {
        let excerpt = "<!-- Old headings. Do not remove. -->\n<a id=\"old\"></a>\nSee [“Declaring Constants”][constants]<!-- ignore -->, \
                       [the slice type](ch04-03-slices.md#strings), [above](#slices), [docs][] and ![a diagram](img/x.svg).\n\
                       Kept: [Rust](https://www.rust-lang.org), `[not][a link]`, [x] and [1], [[a note]]; see [registries]; a footnote[^1] goes.\n\n\
                       [^1]: Its text stays.\n\
                       [constants]: ch03-01-variables-and-mutability.html#constants\n[docs]: https://docs.rs\n[cut]:";
        assert_eq!(
            readable_excerpt(excerpt),
            "See “Declaring Constants”, the slice type, above, docs and a diagram.\n\
             Kept: [Rust](https://www.rust-lang.org), `[not][a link]`, [x] and [1], [[a note]]; see registries; a footnote goes.\n\n Its text stays."
        );
    }

    #[test]
    fn code_blocks_and_comments_across_lines_are_handled() {
        let excerpt = "Before <!-- a comment\nover lines --> after.\n<!-- alone\non two lines -->\nSee [“`if let` and\n`let...else`”][if-let]<!-- ignore --> too.\n\n```rust\nlet a = [x][0]; // <!-- kept -->\n```\n> quoted [t][l]";
        assert_eq!(
            readable_excerpt(excerpt),
            "Before  after.\nSee “`if let` and\n`let...else`” too.\n\n```rust\nlet a = [x][0]; // <!-- kept -->\n```\n> quoted t"
        );
    }
}
