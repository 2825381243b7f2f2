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
    /// The defining source's own words, when a source defines the concept.
    pub lead: Option<Quote>,
    /// The other quoted places.
    pub places: Vec<Quote>,
    /// Sources that mention the concept beyond the quoted ones.
    pub also: Vec<SourceLink>,
    pub related: Vec<PageLink>,
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

/// Text as a Markdown block quote.
fn quote(value: &str) -> String {
    value
        .lines()
        .map(|line| if line.is_empty() { ">".to_string() } else { format!("> {line}") })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Markdown on one line that cannot end a table cell.
fn table_cell(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// Text that shows as written inside Markdown link text or a table cell.
fn markdown_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | '[' | ']' | '*' | '_' | '`' | '<' | '>' | '|') {
            out.push('\\');
        }
        out.push(if c == '\n' { ' ' } else { c });
    }
    out
}
