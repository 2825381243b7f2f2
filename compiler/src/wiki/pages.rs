//! Generated pages: a plan becomes a model, a model is rendered, and a rendered page is stored with its
//! source row, catalog row, citations, backlinks and artifact row.

use knowledge_queries::wiki::ShardRow;
use rusqlite::types::Value;

use super::*;

/// A text several sources hold word for word (a section copied between proposals) is quoted once, its later
/// sources listed with the others, and the footnotes are numbered again. (An excerpt made only of note embeds
/// never reaches a model: the query graph lists its source instead.)
pub(super) fn drop_repeated_quotes(model: &mut PageModel) {
    let mut repeated = Vec::new();
    let mut seen: HashSet<String> = model.lead.iter().map(|q| q.hash.clone()).collect();
    model.places.retain(|quote| {
        let first = seen.insert(quote.hash.clone());
        if !first {
            repeated.push(quote.source.clone());
        }
        first
    });
    for source in repeated {
        if !model.also.iter().any(|other| other.path == source.path) {
            model.also.push(source);
        }
    }
    for (quote, note) in model.lead.iter_mut().chain(model.places.iter_mut()).zip(1..) {
        quote.note = note;
    }
}

/// The page's lead summary, from its quotes' texts (read first).
pub(super) fn summarize(model: &mut PageModel) {
    let quotes: Vec<(u32, &str, &str)> =
        model.quotes().map(|q| (q.note, q.source.path.as_str(), q.text.as_str())).collect();
    model.summary = wiki::lead_summary(&model.title, &quotes, model.lead.is_some());
}

/// Reads each quote's text from its chunk in the index.
pub(super) fn fill_quotes(conn: &Connection, model: &mut PageModel) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached(
        "SELECT c.text, c.start_offset FROM chunks c JOIN sources s ON s.id = c.source_id
         WHERE s.path = ?1 AND c.ordinal = ?2",
    )?;
    for quote in model.lead.iter_mut().chain(model.places.iter_mut()) {
        let chunk: Option<(String, u32)> = statement
            .query_row(params![quote.source.path, quote.chunk], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        let text = chunk
            .and_then(|(text, chunk_start)| {
                let from = quote.start.checked_sub(chunk_start)? as usize;
                let to = quote.end.checked_sub(chunk_start)? as usize;
                text.get(from..to).map(str::to_string)
            })
            .unwrap_or_default();
        quote.hash = content_hash(text.as_bytes());
        quote.text = text;
    }
    Ok(())
}

/// The page as a source row, chunked like any Markdown source, so search finds it. Chunks that are only
/// navigation (the Related and Backlinks lists) are left out: they repeat other pages' and sources'
/// titles, which search should find where they are the subject.
/// `revision` is the markdown's hash.
pub(super) fn page_source_row(
    db: &mut KnowledgeDb,
    inputs: &PageInputs,
    model: &PageModel,
    markdown: &str,
    revision: &str,
) -> SourceRow {
    let file = inputs.pages[&model.slug].1;
    if file.text(db) != markdown {
        file.set_text(db).to(markdown.to_string());
        file.set_revision(db).to(revision.to_string());
    }
    let outline = outline(db, file).clone();
    let page_chunks = chunks(db, file);
    SourceRow {
        path: SourceRef::page(&model.slug).path(),
        uri: SourceRef::page(&model.slug).path(),
        kind: "markdown",
        mime: "text/markdown",
        size: markdown.len() as u64,
        mtime_ns: 0,
        revision: revision.to_string(),
        title: model.title.clone(),
        outline: serde_json::to_string(&outline).expect("outline serializes"),
        lint_facts: "{}".to_string(),
        labels: String::new(),
        chunks: crate::sources::chunk_rows(markdown, &model.title, &page_chunks, false)
            .into_iter()
            .filter(|chunk| !is_navigation(&chunk.text))
            .collect(),
        signals: Vec::new(),
        entities: std::sync::Arc::new([]),
    }
}

/// Whether a chunk holds nothing but headings, list items that link elsewhere, and footnote definitions
/// (the citations, which the `citations` table holds).
pub(super) fn is_navigation(text: &str) -> bool {
    let mut items = 0;
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let link_item = knowledge_queries::is_link_item(line);
        let footnote = line.starts_with("[^") && line.contains("]:");
        if !(link_item || footnote) {
            return false;
        }
        items += 1;
    }
    items > 0
}

/// The id of a generated page's or shard's source row, if it has one.
pub(super) fn generated_source(conn: &Connection, path: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM sources WHERE path = ?1")?.query_row([path], |row| row.get(0)).optional()
}

/// What the index holds about a page before this build.
pub(super) struct StoredPage {
    pub(super) model_hash: String,
    pub(super) hash: String,
    pub(super) path: String,
    /// The page's view as the last plan made it, when the build asked for it.
    pub(super) view: Option<String>,
    /// The writer owes it a writing (`wiki_pages.writing_owed`).
    pub(super) writing_owed: bool,
}

/// The stored rows of every page, or of the pages `only` names; with `views`, each with its stored view
/// (read in the same pass: a fresh process that plans again compares them).
pub(super) fn stored_pages(
    conn: &Connection,
    only: Option<&[&str]>,
    views: bool,
) -> rusqlite::Result<BTreeMap<String, StoredPage>> {
    const COLUMNS: &str = "slug, model_hash, hash, path, CASE WHEN ?1 THEN view END, writing_owed";
    let row = |row: &rusqlite::Row<'_>| {
        let page = StoredPage {
            model_hash: row.get(1)?,
            hash: row.get(2)?,
            path: row.get(3)?,
            view: row.get(4)?,
            writing_owed: row.get(5)?,
        };
        Ok((row.get(0)?, page))
    };
    let Some(only) = only else {
        return conn.prepare(&format!("SELECT {COLUMNS} FROM wiki_pages"))?.query_map([views], row)?.collect();
    };
    let mut statement = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM wiki_pages WHERE slug = ?2"))?;
    let mut pages = BTreeMap::new();
    for slug in only {
        if let Some((slug, page)) = statement.query_row(params![views, slug], row).optional()? {
            pages.insert(slug, page);
        }
    }
    Ok(pages)
}

/// A page rendered by this build, with what its rows record.
pub(super) struct RenderedPage<'a> {
    pub(super) model: &'a PageModel,
    /// The page's view as the planner made it, stored for a later build that leaves the plan as it is.
    pub(super) view: &'a str,
    /// How many sources the page quotes or lists.
    pub(super) source_count: usize,
    pub(super) model_hash: &'a str,
    /// What the `[wiki] writer` left it with.
    pub(super) writing: &'a super::writer::PageWriting,
    pub(super) markdown: &'a str,
    /// Its row in the artifact catalog: the file, relative to the output folder, and the markdown's hash.
    pub(super) artifact: &'a Artifact,
    /// The page as a source row, for search.
    pub(super) row: &'a SourceRow,
}

/// Stores every row of one page: its source row and chunks, its catalog row, citations, backlinks and
/// artifact row. A page stored before keeps the rows that are still right; only what differs is written.
pub(super) fn store_page(
    conn: &Connection,
    context: &StageContext<'_>,
    page: &RenderedPage<'_>,
) -> rusqlite::Result<()> {
    let RenderedPage { model, view, source_count, model_hash, writing, markdown, artifact, row } = *page;
    let (path, hash) = (&artifact.path, &artifact.hash);
    store::write_source(conn, generated_source(conn, &row.path)?, row, context.run_id)?;
    // An index row's one sentence: the defining source's own, else the page's most central one.
    let summary = model
        .lead
        .as_ref()
        .map(|lead| lead.text.as_str())
        .or_else(|| model.summary.first().map(|line| line.text.as_str()))
        .or_else(|| model.quotes().next().map(|q| q.text.as_str()))
        .map(first_sentence)
        .unwrap_or_default();
    let aliases = serde_json::to_string(&model.aliases).expect("strings serialize");
    let shown = ShardRow::new(
        model.slug.clone(),
        model.title.clone(),
        model.aliases.clone(),
        path.clone(),
        source_count as u64,
        summary,
    );
    conn.prepare_cached(
        "INSERT INTO wiki_pages (slug, title, section, path, aliases, source_count, summary, model_hash, hash, markdown, view, run_id, writing, writing_owed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (slug) DO UPDATE SET title = excluded.title, section = excluded.section, path = excluded.path,
             aliases = excluded.aliases, source_count = excluded.source_count, summary = excluded.summary,
             model_hash = excluded.model_hash, hash = excluded.hash, markdown = excluded.markdown,
             view = excluded.view, run_id = excluded.run_id, writing = excluded.writing,
             writing_owed = excluded.writing_owed",
    )?
    .execute(params![
        model.slug,
        model.title,
        model.section,
        path,
        aliases,
        source_count as i64,
        shown.summary,
        model_hash,
        hash,
        markdown,
        view,
        context.run_id,
        writing.key,
        writing.owed,
    ])?;
    conn.prepare_cached("INSERT OR REPLACE INTO shard_rows (slug, section, digest, json) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![model.slug, model.section, shown.digest(), shown.json(hash)])?;
    let text = |text: &str| Value::Text(text.to_string());
    // The line of each footnote's definition on the page, where lint points at a stale citation.
    let mut note_lines: HashMap<&str, usize> = HashMap::new();
    for (line, number) in markdown.lines().zip(1..) {
        if let Some((note, _)) = line.strip_prefix("[^").and_then(|rest| rest.split_once("]:")) {
            note_lines.entry(note).or_insert(number);
        }
    }
    let citations: Vec<Vec<Value>> = model
        .quotes()
        .map(|quote| {
            let note_line = note_lines.get(quote.note.to_string().as_str()).copied().unwrap_or(1);
            vec![
                text(&model.slug),
                Value::Integer(quote.note.into()),
                Value::Integer(note_line as i64),
                text(&quote.source.source_ref),
                text(&quote.source.path),
                text(&quote.revision),
                text(&quote.hash),
                Value::Integer(quote.start.into()),
                Value::Integer(quote.end.into()),
                Value::Integer(quote.start_line.into()),
                Value::Integer(quote.end_line.into()),
                text(&quote.signal),
            ]
        })
        .collect();
    let citation_columns = [
        "page",
        "note",
        "note_line",
        "source_ref",
        "path",
        "revision",
        "hash",
        "start_offset",
        "end_offset",
        "start_line",
        "end_line",
        "signal",
    ];
    store::replace_rows(conn, "citations", "page = ?1", &model.slug, &citation_columns, &citations)?;
    let paths: std::collections::BTreeSet<&str> = model
        .quotes()
        .map(|q| &q.source)
        .chain(&model.also)
        .chain(model.backlinks.iter().map(|b| &b.source))
        .map(|source| source.path.as_str())
        .collect();
    let listed: Vec<Vec<Value>> = paths.into_iter().map(|path| vec![text(&model.slug), text(path)]).collect();
    store::replace_rows(conn, "page_sources", "page = ?1", &model.slug, &["page", "path"], &listed)?;
    let backlink_columns = ["page", "from_ref", "line", "kind"];
    let backlinks: Vec<Vec<Value>> = model
        .backlinks
        .iter()
        .map(|link| {
            vec![text(&model.slug), text(&link.source.source_ref), Value::Integer(link.line.into()), text(&link.kind)]
        })
        .collect();
    let linking = "page = ?1 AND kind != 'related'";
    store::replace_rows(conn, "wiki_backlinks", linking, &model.slug, &backlink_columns, &backlinks)?;
    let page_ref = SourceRef::page(&model.slug).path();
    let related: Vec<Vec<Value>> = model
        .related
        .iter()
        .map(|related| vec![text(&related.slug), text(&page_ref), Value::Integer(0), text("related")])
        .collect();
    let relating = "from_ref = ?1 AND kind = 'related'";
    store::replace_rows(conn, "wiki_backlinks", relating, &page_ref, &backlink_columns, &related)?;
    store_artifact(conn, artifact, context.run_id)
}

/// Deletes every row of one page.
pub(super) fn remove_page(conn: &Connection, slug: &str) -> rusqlite::Result<()> {
    if let Some(id) = generated_source(conn, &SourceRef::page(slug).path())? {
        store::delete_source(conn, id, true)?;
    }
    remove_page_rows(conn, slug)
}

/// Removes a page's rows other than its source row, which a re-rendered page updates in place.
pub(super) fn remove_page_rows(conn: &Connection, slug: &str) -> rusqlite::Result<()> {
    let page_ref = SourceRef::page(slug).path();
    conn.prepare_cached("DELETE FROM wiki_pages WHERE slug = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM shard_rows WHERE slug = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM citations WHERE page = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM page_sources WHERE page = ?1")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM wiki_backlinks WHERE page = ?1 AND kind != 'related'")?.execute([slug])?;
    conn.prepare_cached("DELETE FROM wiki_backlinks WHERE from_ref = ?1 AND kind = 'related'")?.execute([&page_ref])?;
    conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([&page_ref])?;
    Ok(())
}

/// Stores an artifact's row in the catalog, as the query graph derived it.
pub(super) fn store_artifact(conn: &Connection, artifact: &Artifact, run_id: &str) -> rusqlite::Result<()> {
    let Artifact { uri, kind, path, hash, size, metadata } = artifact;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO storage_objects (uri, kind, path, hash, size, metadata, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![uri, kind, path, hash, size.cast_signed(), metadata, run_id])?;
    Ok(())
}

/// The first sentence of a quote, on one line, at most about 160 characters.
pub(super) fn first_sentence(text: &str) -> String {
    let text = without_markup(text);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Block markers go, and emphasis marks with them: a summary cut at a sentence must not open a `**`
    // it never closes.
    let flat = flat.trim_start_matches(['#', '>', '-', '*', ' ']).replace("**", "");
    let flat = flat.as_str();
    let end = flat.find(". ").map_or(flat.len(), |at| at + 1);
    let mut sentence: String = flat[..end].chars().take(160).collect();
    if sentence.len() < flat[..end].len() {
        sentence.push('…');
    }
    sentence
}

/// A Markdown excerpt as a line of prose for a summary: HTML comments and tags go (`<!-- ignore -->`,
/// `<a id="x"></a>`), and links keep their text (`[traits][]`, `[traits](ch10.md)`, `[traits]` and
/// `[[traits]]` read `traits`).
fn without_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['<', '[', ']']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        rest = if let Some((inner, after)) = tail.strip_prefix("[[").and_then(|t| t.split_once("]]")) {
            // A wikilink reads as its link text: the side that is prose (`[[humus heap|compost]]`, Dendron's
            // order), else the one after the bar (Obsidian's `[[target|text]]`), else its target.
            let shown = match inner.split_once('|') {
                Some((first, _)) if first.trim().contains(' ') => first,
                Some((_, second)) => second,
                None => inner,
            };
            out.push_str(shown.split(['#', '^']).next().unwrap_or(shown).trim());
            after
        } else if let Some(comment) = tail.strip_prefix("<!--") {
            comment.find("-->").map_or("", |end| &comment[end + 3..])
        } else if let Some(inside) = tail.strip_prefix('<') {
            // A tag if it closes on this line and starts like one; otherwise a plain `<`.
            match inside.find('>').filter(|&end| !inside[..end].contains('\n')) {
                Some(end) if inside.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/') => &inside[end + 1..],
                _ => {
                    out.push('<');
                    inside
                }
            }
        } else if let Some(after) = tail.strip_prefix(']') {
            // A link's destination or reference label after its text is dropped.
            match after.chars().next() {
                Some('(') => after.find(')').map_or(after, |end| &after[end + 1..]),
                Some('[') => after.find(']').map_or(after, |end| &after[end + 1..]),
                _ => after,
            }
        } else {
            &tail[1..]
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowledge_queries::wiki::{Quote, SCHEMA_VERSION, SourceLink};

    #[test]
    fn a_summary_is_prose_without_markup() {
        assert_eq!(
            first_sentence("We use [traits]<!-- ignore --> and [generics][gen] with [closures](ch13.md). Then more."),
            "We use traits and generics with closures."
        );
        assert_eq!(
            first_sentence("Peelings go to the [[humus heap|compost]], not [[bin#top]]."),
            "Peelings go to the humus heap, not bin."
        );
        assert_eq!(first_sentence("<a id=\"old\"></a>\n\nA value is < 3 here."), "A value is < 3 here.");
    }

    fn quote(path: &str, text: &str) -> Quote {
        let source = SourceLink {
            source_ref: format!("file://{path}"),
            path: path.to_string(),
            title: path.to_string(),
            href: path.to_string(),
        };
        Quote {
            note: 0,
            source,
            signal: "title".to_string(),
            text: text.to_string(),
            revision: String::new(),
            chunk: 0,
            hash: content_hash(text.as_bytes()),
            start: 0,
            end: 0,
            start_line: 1,
            end_line: 1,
        }
    }

    #[test]
    fn a_quote_repeated_word_for_word_is_listed_instead() {
        let mut model = PageModel {
            schema: SCHEMA_VERSION,
            slug: "cli".to_string(),
            title: "CLI".to_string(),
            aliases: Vec::new(),
            section: "general".to_string(),
            summary: Vec::new(),
            written_by: None,
            lead: Some(quote("cli.md", "The CLI is a command.")),
            places: vec![
                quote("a.md", "The CLI builds sites."),
                quote("b.md", "The CLI is a command."),
                quote("c.md", "The CLI builds sites."),
                quote("d.md", "The CLI has a doctor command."),
            ],
            also: Vec::new(),
            related: Vec::new(),
            backlinks: Vec::new(),
        };
        drop_repeated_quotes(&mut model);
        assert_eq!(model.lead.as_ref().map(|lead| lead.note), Some(1));
        let quoted: Vec<(&str, u32)> = model.places.iter().map(|q| (q.source.path.as_str(), q.note)).collect();
        assert_eq!(quoted, [("a.md", 2), ("d.md", 3)]);
        let listed: Vec<&str> = model.also.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(listed, ["b.md", "c.md"]);
    }
}
