//! Generated pages: a plan becomes a model, a model is rendered, and a rendered page is stored with its
//! source row, catalog row, citations, backlinks and artifact row.

use knowledge_queries::wiki::ShardRow;

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

/// Reads each quote's text, and a quoted table row's header, from their chunks in the index.
pub(super) fn fill_quotes(conn: &Connection, model: &mut PageModel) -> rusqlite::Result<()> {
    for quote in model.lead.iter_mut().chain(model.places.iter_mut()) {
        let text = text_at(conn, &quote.source.path, quote.chunk, quote.start, quote.end)?;
        quote.hash = content_hash(text.as_bytes());
        quote.text = text;
        if let Some(header) = &mut quote.table_header {
            header.text = text_at(conn, &quote.source.path, header.chunk, header.start, header.end)?;
        }
        // A header its chunk does not hold where the plan placed it is not shown: no header beats a wrong one.
        if quote.table_header.as_ref().is_some_and(|header| header.text.is_empty()) {
            quote.table_header = None;
        }
    }
    Ok(())
}

/// The text of `path` from byte `start` to `end`, read from its chunk `ordinal`; empty when the chunk does not
/// hold that range.
fn text_at(conn: &Connection, path: &str, ordinal: u32, start: u32, end: u32) -> rusqlite::Result<String> {
    let chunk = store::chunk_text_at(conn, path, ordinal)?;
    Ok(chunk
        .and_then(|(text, chunk_start)| {
            let from = start.checked_sub(chunk_start)? as usize;
            let to = end.checked_sub(chunk_start)? as usize;
            text.get(from..to).map(str::to_string)
        })
        .unwrap_or_default())
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
    let file = page_file(db, inputs, model, markdown, revision);
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
        // A page records no claim history of its own: its quotes carry the quoted file's revision, so every
        // edit of that file would make all of its lines new, and the quoted source holds the claim's history.
        line_keys: Vec::new(),
    }
}

/// The page's file input, holding `markdown` at `revision` (set only where it changed): its source row is
/// parsed and chunked from it.
pub(super) fn page_file(
    db: &mut KnowledgeDb,
    inputs: &PageInputs,
    model: &PageModel,
    markdown: &str,
    revision: &str,
) -> SourceFile {
    let file = inputs.pages[&model.slug].1;
    if file.text(db) != markdown {
        file.set_text(db).to(markdown.to_string());
        file.set_revision(db).to(revision.to_string());
    }
    file
}

/// How a rendered page's source row is written.
pub(super) enum PageSource {
    /// Derived from the page's Markdown: parsed and chunked like any source.
    Derived(Box<SourceRow>),
    /// The stored row with the page's new revision and its outline's revisions replaced: the Markdown
    /// differs from the stored page's only in the revisions its quotes cite, at places no chunk holds. An
    /// edit below a quote changes every page quoting the file in this way alone, and such a page's chunks,
    /// outline but for those revisions, and keyword entries are its stored ones, so it is not parsed again.
    Restamped { source_id: i64, outline: String },
}

/// The page's source row: the `stored` one restamped where only the cited revisions changed (see
/// [`PageSource::Restamped`]), else derived from the Markdown.
pub(super) fn page_source(
    db: &mut KnowledgeDb,
    inputs: &PageInputs,
    stored: Option<&store::StoredPageText>,
    model: &PageModel,
    markdown: &str,
    revision: &str,
) -> PageSource {
    match restamped(stored, model, markdown) {
        Some((source_id, outline)) => PageSource::Restamped { source_id, outline },
        None => PageSource::Derived(Box::new(page_source_row(db, inputs, model, markdown, revision))),
    }
}

/// The `stored` page's source row id and its outline restamped, when `markdown` differs from the stored
/// Markdown only in the revisions `model`'s quotes cite ([`PageSource::Restamped`]).
pub(super) fn restamped(
    stored: Option<&store::StoredPageText>,
    model: &PageModel,
    markdown: &str,
) -> Option<(i64, String)> {
    let cited: BTreeSet<&str> = model.quotes().map(|q| q.revision.as_str()).filter(|r| !r.is_empty()).collect();
    stored.and_then(|stored| Some((stored.source_id, restamped_outline(stored, &cited, markdown)?)))
}

/// The stored page's outline with the page's new revisions, when `markdown` differs from the stored
/// Markdown only at places where it holds one of the revisions its quotes cite (`cited`), no stored chunk
/// holds such a place, and no revision replaced is left anywhere in `markdown` (so that replacing it in the
/// outline replaces exactly what the Markdown replaced).
fn restamped_outline(stored: &store::StoredPageText, cited: &BTreeSet<&str>, markdown: &str) -> Option<String> {
    let changed = places_changed(&stored.markdown, markdown, cited)?;
    let held =
        |place: &std::ops::Range<usize>| stored.chunk_spans.iter().any(|&(s, e)| s < place.end && place.start < e);
    if changed.iter().any(held) {
        return None;
    }
    let mut outline = stored.outline.clone();
    let mut replaced = BTreeSet::new();
    for place in changed {
        let (old, new) = (stored.markdown.get(place.clone())?, &markdown[place]);
        if markdown.contains(old) {
            return None;
        }
        if replaced.insert(old) {
            outline = outline.replace(old, new);
        }
    }
    Some(outline)
}

/// The places where `new` differs from `old`, each a whole revision (a run of lowercase hexadecimal digits,
/// as a content hash is written) in both, the one in `new` among `revisions`; `None` when the two differ in
/// length or anywhere else.
fn places_changed(old: &str, new: &str, revisions: &BTreeSet<&str>) -> Option<Vec<std::ops::Range<usize>>> {
    if old.len() != new.len() {
        return None;
    }
    let (old_bytes, new_bytes) = (old.as_bytes(), new.as_bytes());
    let hex = |b: &u8| is_hash_digit(*b);
    let mut changed = Vec::new();
    let mut from = 0;
    while let Some(at) = first_difference(&old_bytes[from..], &new_bytes[from..]).map(|at| from + at) {
        if !hex(&new_bytes[at]) {
            return None;
        }
        let start = new_bytes[..at].iter().rposition(|b| !hex(b)).map_or(0, |before| before + 1);
        let end = new_bytes[at..].iter().position(|b| !hex(b)).map_or(new.len(), |after| at + after);
        if !revisions.contains(&new[start..end]) || !old.get(start..end)?.bytes().all(|b| hex(&b)) {
            return None;
        }
        changed.push(start..end);
        from = end;
    }
    Some(changed)
}

/// Whether `byte` is a digit of a revision as [`content_hash`] writes it: lowercase hexadecimal.
fn is_hash_digit(byte: u8) -> bool {
    byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)
}

/// Where `a` and `b` (of one length) first differ, compared a block at a time.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    const BLOCK: usize = 64;
    let mut at = 0;
    while at + BLOCK <= a.len() && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    a[at..].iter().zip(&b[at..]).position(|(x, y)| x != y).map(|offset| at + offset)
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
    store::source_id(conn, path)
}

/// A page rendered by this build, with what its rows record.
pub(super) struct RenderedPage<'a> {
    pub(super) model: &'a PageModel,
    /// The page's view as the planner made it, stored for a later build that leaves the plan as it is.
    pub(super) view: &'a str,
    /// Its hash (`PageView::stored_hash`).
    pub(super) view_hash: &'a str,
    /// How many sources the page quotes or lists.
    pub(super) source_count: usize,
    pub(super) model_hash: &'a str,
    /// The hash of the model's inputs less its cited revisions, its quotes' texts and the template
    /// ([`text_key`]).
    pub(super) text_key: &'a str,
    /// The page's one sentence in its section's index ([`shard_summary`]).
    pub(super) summary: &'a str,
    /// What the `[wiki] writer` left it with.
    pub(super) writing: &'a super::writer::PageWriting,
    pub(super) markdown: &'a str,
    /// Its row in the artifact catalog: the file, relative to the output folder, and the markdown's hash.
    pub(super) artifact: &'a Artifact,
    /// The page as a source row, for search.
    pub(super) row: &'a PageSource,
}

/// Stores every row of one page: its source row and chunks, its catalog row, citations, backlinks and
/// artifact row. A page stored before keeps the rows that are still right; only what differs is written.
pub(super) fn store_page(
    conn: &Connection,
    context: &StageContext<'_>,
    page: &RenderedPage<'_>,
) -> rusqlite::Result<()> {
    let RenderedPage {
        model,
        view,
        view_hash,
        source_count,
        model_hash,
        text_key,
        summary,
        writing,
        markdown,
        artifact,
        row,
    } = *page;
    let (path, hash) = (&artifact.path, &artifact.hash);
    match row {
        PageSource::Derived(row) => {
            store::write_source(conn, generated_source(conn, &row.path)?, row, context.run_id)?;
        }
        PageSource::Restamped { source_id, outline } => {
            let path = SourceRef::page(&model.slug).path();
            store::restamp_source(conn, *source_id, &path, markdown.len() as u64, hash, outline, context.run_id)?;
        }
    }
    let aliases = serde_json::to_string(&model.aliases).expect("strings serialize");
    let shown = ShardRow::new(
        model.slug.clone(),
        model.title.clone(),
        model.aliases.clone(),
        path.clone(),
        source_count as u64,
        summary.to_string(),
    );
    store::upsert_page(
        conn,
        &store::PageRow {
            slug: &model.slug,
            title: &model.title,
            section: &model.section,
            path,
            aliases: &aliases,
            source_count,
            summary: &shown.summary,
            model_hash,
            text_key,
            hash,
            markdown,
            view,
            view_hash,
            run_id: context.run_id,
            writing: writing.key.as_deref(),
            writing_owed: writing.owed,
        },
    )?;
    store::upsert_shard_row(conn, &model.slug, &model.section, &shown.digest(), &shown.json(hash))?;
    let citations = citation_rows(model, markdown);
    let listed: Vec<&str> = model
        .quotes()
        .map(|q| &q.source)
        .chain(&model.also)
        .chain(model.backlinks.iter().map(|b| &b.source))
        .map(|source| source.path.as_str())
        .collect::<std::collections::BTreeSet<&str>>()
        .into_iter()
        .collect();
    let backlinks: Vec<(&str, u32, &str)> =
        model.backlinks.iter().map(|link| (link.source.source_ref.as_str(), link.line, link.kind.as_str())).collect();
    let related: Vec<&str> = model.related.iter().map(|related| related.slug.as_str()).collect();
    store::replace_page_links(conn, &model.slug, &citations, &listed, &backlinks, &related)?;
    store_artifact(conn, artifact, context.run_id)
}

/// A page's one sentence in its section's index: the defining source's own (the one that sets the title in
/// emphasis, else its first of prose, else its first line), else the page's most central one.
pub(super) fn shard_summary(model: &PageModel) -> String {
    match &model.lead {
        Some(lead) => {
            first_sentence(&wiki::row_sentence(&lead.text, &model.title).unwrap_or_else(|| lead.text.clone()))
        }
        None => model
            .summary
            .first()
            .map(|line| line.text.as_str())
            .or_else(|| model.quotes().next().map(|q| q.text.as_str()))
            .map(first_sentence)
            .unwrap_or_default(),
    }
}

/// A page's text key: `text_hash` (what its model is made from but the quoted revisions, and the template)
/// and its quotes' texts, as read for the model. Two pages with one key differ in the revisions they cite
/// alone, and so does their text, which the template makes from the model.
pub(super) fn text_key(text_hash: &str, model: &PageModel) -> String {
    let texts: String = model.quotes().map(|quote| quote.hash.as_str()).collect();
    content_hash(format!("{text_hash}{texts}").as_bytes())
}

/// The `stored` page's text with the revisions `model`'s quotes cite in place of those its footnotes cited,
/// when its text key is `text_key` ([`text_key`]: it was rendered from this model but for those revisions),
/// its summary is extractive, and each revision replaced is one the model's text does not hold elsewhere, so
/// that it stands only where the template printed a revision.
pub(super) fn kept_text(
    conn: &Connection,
    model: &PageModel,
    text_key: &str,
    stored: &store::StoredPageText,
) -> rusqlite::Result<Option<String>> {
    if stored.text_key != text_key || !stored.extractive {
        return Ok(None);
    }
    let cited = store::cited_revisions(conn, &model.slug)?;
    Ok(replaced_revisions(&stored.markdown, &cited, model, &without_revisions(model)))
}

/// The model as JSON with its quotes' revisions left out: every text the template may print but those.
fn without_revisions(model: &PageModel) -> String {
    let mut blanked = model.clone();
    for quote in blanked.lead.iter_mut().chain(&mut blanked.places) {
        quote.revision.clear();
    }
    serde_json::to_string(&blanked).expect("models serialize")
}

/// `markdown` with each footnote's revision in `cited` replaced by the one `model`'s quote of that footnote
/// cites; `None` when a footnote is missing, a revision is not a content hash, one revision would become two,
/// a replaced revision is also a replacement, or `blanked` holds one.
fn replaced_revisions(
    markdown: &str,
    cited: &BTreeMap<u32, String>,
    model: &PageModel,
    blanked: &str,
) -> Option<String> {
    let is_hash = |revision: &str| !revision.is_empty() && revision.bytes().all(is_hash_digit);
    let mut replaced: BTreeMap<&str, &str> = BTreeMap::new();
    for quote in model.quotes() {
        let (old, new) = (cited.get(&quote.note)?.as_str(), quote.revision.as_str());
        if !is_hash(old) || !is_hash(new) || replaced.insert(old, new).is_some_and(|other| other != new) {
            return None;
        }
    }
    if replaced.len() != cited.values().collect::<BTreeSet<_>>().len() {
        return None;
    }
    let changed: Vec<(&str, &str)> = replaced.into_iter().filter(|(old, new)| old != new).collect();
    if changed.iter().any(|(old, new)| {
        blanked.contains(old) || blanked.contains(new) || changed.iter().any(|(other, _)| other == new)
    }) {
        return None;
    }
    let mut text = markdown.to_string();
    for (old, new) in changed {
        text = text.replace(old, new);
    }
    Some(text)
}

/// The page's footnotes as citation rows, each with the line of its definition on the page (where lint
/// points at a stale citation).
fn citation_rows<'a>(model: &'a PageModel, markdown: &str) -> Vec<store::CitationRow<'a>> {
    let mut note_lines: HashMap<&str, usize> = HashMap::new();
    for (line, number) in markdown.lines().zip(1..) {
        if let Some((note, _)) = line.strip_prefix("[^").and_then(|rest| rest.split_once("]:")) {
            note_lines.entry(note).or_insert(number);
        }
    }
    model
        .quotes()
        .map(|quote| store::CitationRow {
            note: quote.note,
            note_line: note_lines.get(quote.note.to_string().as_str()).copied().unwrap_or(1),
            source_ref: &quote.source.source_ref,
            path: &quote.source.path,
            revision: &quote.revision,
            hash: &quote.hash,
            start_offset: quote.start,
            end_offset: quote.end,
            start_line: quote.start_line,
            end_line: quote.end_line,
            signal: &quote.signal,
        })
        .collect()
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
    store::delete_page_rows(conn, slug)
}

/// Stores an artifact's row in the catalog, as the query graph derived it.
pub(super) fn store_artifact(conn: &Connection, artifact: &Artifact, run_id: &str) -> rusqlite::Result<()> {
    store::upsert_artifact(conn, artifact, run_id)
}

/// The first sentence of a quote, on one line, at most about 160 characters.
pub(super) fn first_sentence(text: &str) -> String {
    let text = without_markup(text);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Block markers go (a heading's, a quote's, a list item's), and bold marks: a summary cut at a sentence
    // must not open a `**` it never closes. An emphasized opening word keeps its marks (`*Tuple types* are`).
    let flat = flat.trim_start_matches(['#', '>', ' ']);
    let flat = flat.strip_prefix("- ").or_else(|| flat.strip_prefix("* ")).unwrap_or(flat).replace("**", "");
    // A numbered step's marker ("1. ", "2) ") is no sentence of its own.
    let digits = flat.len() - flat.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let flat = match flat[digits..].strip_prefix(['.', ')']) {
        Some(rest) if digits > 0 && rest.starts_with(' ') => rest.trim_start(),
        _ => flat.as_str(),
    };
    // Cut where the wiki's sentences end (not at the stop of "e.g.").
    let end = knowledge_queries::sentence_ends(flat).next().unwrap_or(flat.len());
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
        // A numbered step's marker and a list item's go; an emphasized opening word and a number that opens a
        // sentence stay.
        assert_eq!(first_sentence("1. Make a tracking issue. Then wait."), "Make a tracking issue.");
        assert_eq!(first_sentence("- **Bold** item here. More."), "Bold item here.");
        assert_eq!(
            first_sentence("*Tuple types* are a family of types. More."),
            "*Tuple types* are a family of types."
        );
        assert_eq!(first_sentence("2026 was a year of releases. More."), "2026 was a year of releases.");
        assert_eq!(
            first_sentence("Closures (e.g. `async` blocks) capture their environment. More."),
            "Closures (e.g. `async` blocks) capture their environment."
        );
    }

    const OLD: &str = "0123456789abcdef0123456789abcdef";
    const NEW: &str = "fedcba9876543210fedcba9876543210";

    fn page(revision: &str, body: &str) -> String {
        format!("---\ncites:\n  - revision: \"{revision}\"\n---\n\n{body}\n\n[^1]: `a.md` at revision `{revision}`.\n")
    }

    fn stored(markdown: String, chunk_spans: Vec<(usize, usize)>) -> store::StoredPageText {
        let outline = format!("{{\"front_matter\":{{\"cites\":[\"revision: \\\"{OLD}\\\"\"]}}}}");
        let (summary, text_key) = (String::new(), String::new());
        store::StoredPageText { markdown, summary, text_key, extractive: true, source_id: 1, outline, chunk_spans }
    }

    #[test]
    fn a_page_changed_only_in_its_cited_revisions_keeps_its_row_with_them_replaced() {
        let cited: BTreeSet<&str> = [NEW].into();
        // A body of many of the blocks the comparison steps by.
        let body = format!("# A\n\n{}", "A quote. ".repeat(40));
        let (before, after) = (page(OLD, &body), page(NEW, &body));
        let body = before.find("# A").unwrap()..before.find("[^1]:").unwrap();
        let changed = places_changed(&before, &after, &cited).unwrap();
        assert_eq!(changed.len(), 2, "the front matter's revision and the footnote's");
        assert!(changed.iter().all(|place| &after[place.clone()] == NEW && &before[place.clone()] == OLD));

        let outline = restamped_outline(&stored(before.clone(), vec![(body.start, body.end)]), &cited, &after);
        assert_eq!(outline.unwrap(), format!("{{\"front_matter\":{{\"cites\":[\"revision: \\\"{NEW}\\\"\"]}}}}"));
        // Nothing to replace: the row is kept as it is.
        assert_eq!(places_changed(&after, &after, &cited), Some(Vec::new()));
    }

    #[test]
    fn a_page_changed_anywhere_else_is_derived_again() {
        let cited: BTreeSet<&str> = [NEW].into();
        let before = page(OLD, "# A\n\nA quote.");
        // Another word of the same length, a longer page, a revision no quote cites.
        assert_eq!(places_changed(&before, &page(NEW, "# A\n\nA quotf."), &cited), None);
        assert_eq!(places_changed(&before, &page(NEW, "# A\n\nA quote!!"), &cited), None);
        assert_eq!(places_changed(&before, &page(NEW, "# A\n\nA quote."), &[OLD].into()), None);
        // A chunk that holds a changed place (the footnote) would keep the old revision in its text.
        let after = page(NEW, "# A\n\nA quote.");
        let whole = stored(before.clone(), vec![(0, before.len())]);
        assert_eq!(restamped_outline(&whole, &cited, &after), None);
        // The old revision still on the page elsewhere: replacing it in the outline could replace too much.
        let kept = before.replace("A quote.", OLD);
        let after = page(NEW, &format!("# A\n\n{OLD}"));
        assert_eq!(restamped_outline(&stored(kept, Vec::new()), &cited, &after), None);
    }

    /// A model quoting `a.md` (footnote 1) and `b.md` (footnote 2) at `revisions`.
    fn quoting(revisions: [&str; 2]) -> PageModel {
        let mut model = model_with(vec![quote("a.md", "Alpha says so."), quote("b.md", "Beta agrees.")]);
        for ((quote, revision), note) in model.places.iter_mut().zip(revisions).zip(1..) {
            (quote.revision, quote.note) = (revision.to_string(), note);
        }
        model
    }

    #[test]
    fn a_kept_page_cites_its_quotes_new_revisions_where_it_cited_the_old() {
        let before = format!("rev {OLD}\n[^1]: at `{OLD}`\n[^2]: at `{NEW}`\n");
        let cited: BTreeMap<u32, String> = [(1, OLD.to_string()), (2, NEW.to_string())].into();
        let third = "00112233445566778899aabbccddeeff";
        let model = quoting([third, NEW]);
        let blanked = without_revisions(&model);
        let after = replaced_revisions(&before, &cited, &model, &blanked).unwrap();
        assert_eq!(after, format!("rev {third}\n[^1]: at `{third}`\n[^2]: at `{NEW}`\n"));

        // Not kept: a footnote the stored page did not have, a revision that would become two, a revision
        // replaced by one that is replaced too, and a revision the page's text holds elsewhere (a quote of it).
        assert_eq!(replaced_revisions(&before, &[(1, OLD.to_string())].into(), &model, &blanked), None);
        let same: BTreeMap<u32, String> = [(1, OLD.to_string()), (2, OLD.to_string())].into();
        assert_eq!(replaced_revisions(&before, &same, &model, &blanked), None);
        assert_eq!(replaced_revisions(&before, &cited, &quoting([NEW, third]), &blanked), None);
        let mut quoted = quoting([third, NEW]);
        quoted.places[1].text = format!("The hash {OLD} is quoted.");
        let blanked = without_revisions(&quoted);
        assert_eq!(replaced_revisions(&before, &cited, &quoted, &blanked), None);
    }

    #[test]
    fn a_page_text_key_holds_its_quotes_texts_not_their_revisions() {
        let key = |revisions, text: &str, text_hash| {
            let mut model = quoting(revisions);
            model.places[0].hash = content_hash(text.as_bytes());
            text_key(text_hash, &model)
        };
        assert_eq!(key([OLD, NEW], "Alpha says so.", "t"), key([NEW, OLD], "Alpha says so.", "t"));
        assert_ne!(key([OLD, NEW], "Alpha says so.", "t"), key([OLD, NEW], "Alpha said so.", "t"));
        assert_ne!(key([OLD, NEW], "Alpha says so.", "t"), key([OLD, NEW], "Alpha says so.", "u"));
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
            table_header: None,
        }
    }

    /// A page on the CLI quoting `places`, with no lead.
    fn model_with(places: Vec<Quote>) -> PageModel {
        PageModel {
            schema: SCHEMA_VERSION,
            slug: "cli".to_string(),
            title: "CLI".to_string(),
            aliases: Vec::new(),
            section: "general".to_string(),
            summary: Vec::new(),
            written_by: None,
            lead: None,
            places,
            also: Vec::new(),
            related: Vec::new(),
            backlinks: Vec::new(),
        }
    }

    #[test]
    fn a_quote_repeated_word_for_word_is_listed_instead() {
        let mut model = model_with(vec![
            quote("a.md", "The CLI builds sites."),
            quote("b.md", "The CLI is a command."),
            quote("c.md", "The CLI builds sites."),
            quote("d.md", "The CLI has a doctor command."),
        ]);
        model.lead = Some(quote("cli.md", "The CLI is a command."));
        drop_repeated_quotes(&mut model);
        assert_eq!(model.lead.as_ref().map(|lead| lead.note), Some(1));
        let quoted: Vec<(&str, u32)> = model.places.iter().map(|q| (q.source.path.as_str(), q.note)).collect();
        assert_eq!(quoted, [("a.md", 2), ("d.md", 3)]);
        let listed: Vec<&str> = model.also.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(listed, ["b.md", "c.md"]);
    }
}
