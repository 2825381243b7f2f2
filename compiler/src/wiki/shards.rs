//! Index shards: a catalog per section and the root, re-rendered when their rows change, each also a
//! source whose chunks are its page rows (search's `index_entry` results).

use super::*;

/// A shard as a source row: one chunk per page row, the row's line in the shard's Markdown, so an
/// `index_entry` result cites the bytes the shard holds. The chunk's identifiers hold the page's slug,
/// which search uses to tell an entry from its page. A row a custom template leaves without the page's
/// link gets no chunk.
pub(super) fn shard_source_row(section: &str, markdown: &str, rows: &[ShardRow]) -> SourceRow {
    let path = SourceRef::shard(section).path();
    let mut chunks = Vec::with_capacity(rows.len());
    // Rows are found in order, and lines counted from the previous row on: one pass over the shard.
    let (mut from, mut line) = (0, 1);
    for row in rows {
        let Some(at) = markdown[from..].find(&format!("]({})", row.href)).map(|at| at + from) else { continue };
        let start = markdown[..at].rfind('\n').map_or(0, |newline| newline + 1);
        let end = markdown[at..].find('\n').map_or(markdown.len(), |newline| at + newline);
        line += markdown[from..start].matches('\n').count();
        from = end;
        let text = &markdown[start..end];
        let hash = content_hash(text.as_bytes());
        let line = u32::try_from(line).unwrap_or(u32::MAX);
        chunks.push(ChunkRow {
            id: content_hash(format!("{path}\0{}", row.slug).as_bytes()),
            ordinal: u32::try_from(chunks.len()).unwrap_or(u32::MAX),
            hash,
            heading_path: serde_json::to_string(&[section]).expect("strings serialize"),
            title: row.title.clone(),
            text: text.to_string(),
            identifiers: row.slug.clone(),
            start_offset: u32::try_from(start).unwrap_or(u32::MAX),
            end_offset: u32::try_from(end).unwrap_or(u32::MAX),
            start_line: line,
            end_line: line,
            minhash: None,
            entity: None,
        });
    }
    SourceRow {
        uri: path.clone(),
        path,
        kind: "markdown",
        mime: "text/markdown",
        size: markdown.len() as u64,
        mtime_ns: 0,
        revision: content_hash(markdown.as_bytes()),
        title: format!("Index: {section}"),
        outline: "{}".to_string(),
        lint_facts: "{}".to_string(),
        labels: String::new(),
        chunks,
        signals: Vec::new(),
        entities: std::sync::Arc::new([]),
    }
}

/// One row of an index shard, as its Markdown shows it. The page's hash is only in the JSON rows
/// ([`JsonRow`]), so a page whose text changed but whose row did not leaves the Markdown shard as it was.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(super) struct ShardRow {
    pub(super) slug: String,
    pub(super) title: String,
    pub(super) aliases: Vec<String>,
    /// The page file, relative to the output folder.
    pub(super) path: String,
    /// The page relative to `indexes/`.
    pub(super) href: String,
    pub(super) sources: u64,
    pub(super) summary: String,
}

/// A shard's JSON file, serialized as it stands (its fields in the alphabetical order the file has always
/// had), with no `serde_json::Value` tree built on the way.
#[derive(Serialize)]
struct ShardJson<'a> {
    pages: Vec<JsonRow<'a>>,
    schema: u32,
    section: &'a str,
}

/// A row of a shard's JSON: the row and the page file's hash.
#[derive(Serialize)]
struct JsonRow<'a> {
    aliases: &'a [String],
    hash: &'a str,
    href: &'a str,
    path: &'a str,
    slug: &'a str,
    sources: u64,
    summary: &'a str,
    title: &'a str,
}

impl<'a> JsonRow<'a> {
    fn new(row: &'a ShardRow, hash: &'a str) -> JsonRow<'a> {
        JsonRow {
            aliases: &row.aliases,
            hash,
            href: &row.href,
            path: &row.path,
            slug: &row.slug,
            sources: row.sources,
            summary: &row.summary,
            title: &row.title,
        }
    }
}

#[derive(Serialize)]
pub(super) struct ShardModel<'a> {
    pub(super) schema: u32,
    pub(super) section: &'a str,
    pub(super) json_href: String,
    pub(super) pages: &'a [ShardRow],
}

#[derive(Serialize)]
pub(super) struct RootSection {
    pub(super) section: String,
    pub(super) pages: usize,
    pub(super) href: String,
    pub(super) json_href: String,
}

/// Re-renders the shards whose rows changed, and the root when the sections did; removes empty sections.
/// Why shards could not be compiled: a template that fails while rendering is the user's error, not the
/// index's.
pub(super) enum ShardError {
    Sqlite(rusqlite::Error),
    Template(String),
}

impl From<rusqlite::Error> for ShardError {
    fn from(error: rusqlite::Error) -> ShardError {
        ShardError::Sqlite(error)
    }
}

/// Each section's shard rows, and beside each row its page's hash.
pub(super) type SectionRows = BTreeMap<String, (Vec<ShardRow>, Vec<String>)>;

/// Each section's rows from the page rows the index holds; with `only`, that section's alone.
pub(super) fn section_rows(conn: &Connection, only: Option<&str>) -> rusqlite::Result<SectionRows> {
    let mut sections = SectionRows::new();
    let mut statement = conn.prepare_cached(
        "SELECT slug, title, section, path, aliases, source_count, summary, hash FROM wiki_pages
         WHERE ?1 IS NULL OR section = ?1 ORDER BY section, slug",
    )?;
    let rows = statement.query_map([only], |row| {
        let section: String = row.get(2)?;
        let path: String = row.get(3)?;
        Ok((
            section,
            ShardRow {
                slug: row.get(0)?,
                title: row.get(1)?,
                aliases: serde_json::from_str(&row.get::<_, String>(4)?).unwrap_or_default(),
                href: format!("../{path}"),
                path,
                sources: row.get::<_, i64>(5)?.cast_unsigned(),
                summary: row.get(6)?,
            },
            row.get::<_, String>(7)?,
        ))
    })?;
    for row in rows {
        let (section, row, hash) = row?;
        let (rows, hashes) = sections.entry(section).or_default();
        rows.push(row);
        hashes.push(hash);
    }
    Ok(sections)
}

/// A section's JSON file: its rows, each with its page file's hash.
pub(super) fn shard_json(section: &str, rows: &[ShardRow], hashes: &[String]) -> String {
    let pages = rows.iter().zip(hashes).map(|(row, hash)| JsonRow::new(row, hash)).collect();
    let shard_json = ShardJson { pages, schema: SCHEMA_VERSION, section };
    format!("{}\n", serde_json::to_string_pretty(&shard_json).expect("rows serialize"))
}

/// A section's JSON file as the index's page rows make it: what the file must hold. The index keeps only
/// its hash (in `storage_objects`), since every edit of a page changes a row of it and the rows are there.
pub(super) fn stored_shard_json(conn: &Connection, section: &str) -> rusqlite::Result<Option<String>> {
    let sections = section_rows(conn, Some(section))?;
    Ok(sections.get(section).map(|(rows, hashes)| shard_json(section, rows, hashes)))
}

pub(super) fn compile_shards(
    conn: &Connection,
    context: &StageContext<'_>,
    stage: &mut Stage,
) -> Result<(), ShardError> {
    let templates = context.templates;
    let template_hash =
        content_hash(format!("{}{}{}", templates.shard, templates.root, env!("KNOWLEDGE_SOURCE_HASH")).as_bytes());
    let sections = section_rows(conn, None)?;
    // What the index holds of each shard: the hash of the rows its Markdown shows, and the hashes of its
    // files (not their texts, which are large and mostly unchanged).
    let stored: HashMap<String, StoredShard> = conn
        .prepare(
            // By URI, the catalog's key: `knowledge://index/SECTION` and its `.json` (the root's is
            // `knowledge://index/root`, and it has no JSON).
            "SELECT k.section, k.rows_hash, m.hash, j.hash FROM knowledge_indexes k
             LEFT JOIN storage_objects m
                    ON m.uri = 'knowledge://index/' || CASE WHEN k.section = '' THEN 'root' ELSE k.section END
             LEFT JOIN storage_objects j ON j.uri = 'knowledge://index/' || k.section || '.json' AND k.section != ''",
        )?
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                StoredShard { rows_hash: row.get(1)?, markdown_hash: row.get(2)?, json_hash: row.get(3)? },
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let enabled = context.project.config.wiki.enabled;

    for (section, (rows, hashes)) in &sections {
        let mut shown = serde_json::to_vec(rows).expect("rows serialize");
        shown.extend_from_slice(template_hash.as_bytes());
        let rows_hash = content_hash(&shown);
        let json = shard_json(section, rows, hashes);
        let json_hash = content_hash(json.as_bytes());
        let before = stored.get(section);
        let shown_before = before.is_some_and(|before| !context.full && before.rows_hash == rows_hash);
        let json_before = before.is_some_and(|before| !context.full && before.json_hash.as_deref() == Some(&json_hash));
        if shown_before && json_before {
            continue;
        }
        let path = format!("indexes/{section}.md");
        let json_path = format!("indexes/machine/{section}.json");
        let metadata = serde_json::json!({"section": section, "pages": rows.len()});
        // The Markdown (and the shard's source row, cut from it) only when the rows it shows changed.
        if !shown_before {
            let json_href = format!("machine/{section}.json");
            let model = ShardModel { schema: SCHEMA_VERSION, section, json_href, pages: rows };
            let markdown = wiki::render("shard.md.j2", &templates.shard, &model).map_err(ShardError::Template)?;
            stage.shards.rendered += 1;
            let shard = shard_source_row(section, &markdown, rows);
            store::write_source(conn, generated_source(conn, &shard.path)?, &shard, context.run_id)?;
            let shard = RenderedShard {
                section,
                path: &path,
                json_path: Some(&json_path),
                page_count: rows.len(),
                rows_hash: &rows_hash,
                markdown: &markdown,
            };
            record_shard(conn, context, stage, &shard, before)?;
        }
        // A page's new text changes only its row's hash here: the JSON's object, not the Markdown's.
        let uri = format!("{}.json", SourceRef::shard(section).path());
        upsert_object(conn, &uri, "shard_json", &json_path, &json, context.run_id, &metadata)?;
        stage.fresh.insert(json_path, json);
    }
    for (section, before) in stored.iter().filter(|(s, _)| !s.is_empty() && !sections.contains_key(*s)) {
        conn.prepare_cached("DELETE FROM knowledge_indexes WHERE section = ?1")?.execute([section])?;
        if let Some(id) = generated_source(conn, &SourceRef::shard(section).path())? {
            store::delete_source(conn, id, true)?;
        }
        let shard = SourceRef::shard(section).path();
        for uri in [shard.clone(), format!("{shard}.json")] {
            conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([&uri])?;
        }
        stage.shards.deleted += 1;
        stage.changes.push(ArtifactChange {
            artifact: format!("indexes/{section}.md"),
            kind: "shard",
            old_hash: before.markdown_hash.clone(),
            new_hash: None,
            sources: Vec::new(),
        });
    }

    if !enabled {
        for uri in [root_uri().as_str(), SCHEMA_URI] {
            conn.prepare_cached("DELETE FROM storage_objects WHERE uri = ?1")?.execute([uri])?;
        }
        conn.prepare_cached("DELETE FROM knowledge_indexes WHERE section = ''")?.execute([])?;
        return Ok(());
    }
    let root_sections: Vec<RootSection> = sections
        .iter()
        .map(|(section, (rows, _))| RootSection {
            section: section.clone(),
            pages: rows.len(),
            href: format!("{section}.md"),
            json_href: format!("machine/{section}.json"),
        })
        .collect();
    let total: usize = sections.values().map(|(rows, _)| rows.len()).sum();
    let root_model = serde_json::json!({"schema": SCHEMA_VERSION, "pages": total, "sections": root_sections});
    let rows_hash = content_hash(format!("{root_model}{template_hash}").as_bytes());
    let before = stored.get("");
    if context.full || before.is_none_or(|before| before.rows_hash != rows_hash) {
        let markdown = wiki::render("root.md.j2", &templates.root, &root_model).map_err(ShardError::Template)?;
        stage.shards.rendered += 1;
        let root = RenderedShard {
            section: "",
            path: "indexes/root.md",
            json_path: None,
            page_count: total,
            rows_hash: &rows_hash,
            markdown: &markdown,
        };
        record_shard(conn, context, stage, &root, before)?;
    }
    let schema_hash = content_hash(SCHEMA_DOC.as_bytes());
    let schema_before: Option<String> = conn
        .prepare_cached("SELECT hash FROM storage_objects WHERE uri = ?1")?
        .query_row([SCHEMA_URI], |row| row.get(0))
        .optional()?;
    if schema_before.as_deref() != Some(schema_hash.as_str()) {
        upsert_object(
            conn,
            SCHEMA_URI,
            "schema",
            "schemas/v1.md",
            SCHEMA_DOC,
            context.run_id,
            &serde_json::json!({"version": SCHEMA_VERSION}),
        )?;
        stage.changes.push(ArtifactChange {
            artifact: "schemas/v1.md".to_string(),
            kind: "schema",
            old_hash: schema_before,
            new_hash: Some(schema_hash),
            sources: Vec::new(),
        });
    }
    Ok(())
}

/// What the index holds of a shard before this build.
pub(super) struct StoredShard {
    rows_hash: String,
    markdown_hash: Option<String>,
    json_hash: Option<String>,
}

/// A shard (or, with the empty section, the root) rendered by this build.
pub(super) struct RenderedShard<'a> {
    pub(super) section: &'a str,
    /// The Markdown file, relative to the output folder.
    pub(super) path: &'a str,
    /// The JSON file's path; the root has none.
    pub(super) json_path: Option<&'a str>,
    pub(super) page_count: usize,
    pub(super) rows_hash: &'a str,
    pub(super) markdown: &'a str,
}

/// Stores a rendered shard's catalog and artifact rows, and records the change for the log.
pub(super) fn record_shard(
    conn: &Connection,
    context: &StageContext<'_>,
    stage: &mut Stage,
    shard: &RenderedShard<'_>,
    before: Option<&StoredShard>,
) -> rusqlite::Result<()> {
    let RenderedShard { section, path, json_path, page_count, rows_hash, markdown } = *shard;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO knowledge_indexes (section, path, json_path, page_count, rows_hash, markdown, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![section, path, json_path, page_count as i64, rows_hash, markdown, context.run_id])?;
    let (uri, kind) =
        if section.is_empty() { (root_uri(), "root") } else { (SourceRef::shard(section).path(), "shard") };
    let metadata = serde_json::json!({"section": section, "pages": page_count});
    upsert_object(conn, &uri, kind, path, markdown, context.run_id, &metadata)?;
    let old_hash = before.and_then(|before| before.markdown_hash.clone());
    let new_hash = content_hash(markdown.as_bytes());
    if old_hash.as_deref() != Some(new_hash.as_str()) {
        stage.changes.push(ArtifactChange {
            artifact: path.to_string(),
            kind,
            old_hash,
            new_hash: Some(new_hash),
            sources: Vec::new(),
        });
    }
    Ok(())
}
