//! The concept catalog the planner reads: every source a generated page may quote, with its signals, and
//! the layout that places pages and links them to sources.

use super::*;

/// The sources the planner reads, with what the driver needs to turn a plan into a page.
pub(super) struct Catalog {
    pub(super) sources: Vec<CatalogSource>,
    pub(super) ids: Vec<i64>,
    pub(super) revisions: Vec<String>,
    /// Source index by path.
    pub(super) index_of: HashMap<String, usize>,
}

/// Reads every source a generated page may quote: files (not notes), readable by every principal (no
/// labels, or only `public`), so a page never carries text some reader may not see.
pub(super) fn read_catalog(conn: &Connection, project: &Project) -> rusqlite::Result<Catalog> {
    let wiki_folder = format!("{}/", Layout::new(project).wiki_folder_in_project);
    let field = project.config.wiki.section_field.clone();
    let mut statement = conn.prepare(
        "SELECT id, path, title, revision,
                CASE WHEN ?1 IS NULL THEN NULL ELSE json_extract(outline, '$.front_matter.\"' || ?1 || '\"') END
         FROM sources WHERE path NOT LIKE 'knowledge://%' AND labels IN ('', 'public') ORDER BY path",
    )?;
    let rows = statement.query_map([&field], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, Option<String>>(4)?,
        ))
    })?;
    let rows: Vec<(i64, String, String, String, Option<String>)> = rows.collect::<rusqlite::Result<_>>()?;
    // Sections are the first folder below the folders every source shares (`docs/user/...` and
    // `docs/dev/...` give `user` and `dev`, not one `docs`).
    let shared = shared_folders(
        rows.iter().map(|row| row.1.as_str()).filter(|path| path.contains('/') && !path.starts_with(&wiki_folder)),
    );
    let mut catalog = Catalog { sources: Vec::new(), ids: Vec::new(), revisions: Vec::new(), index_of: HashMap::new() };
    let mut index_of: HashMap<i64, usize> = HashMap::new();
    for (id, path, title, revision, field_value) in rows {
        let handwritten = path.starts_with(&wiki_folder);
        let folder_path = match path.strip_prefix(&wiki_folder) {
            Some(inside) => inside,
            None => path.strip_prefix(&shared).unwrap_or(&path),
        };
        let folder = folder_path.split_once('/').map(|(folder, _)| folder);
        let section = [field_value.as_deref(), folder]
            .into_iter()
            .flatten()
            .map(concept_key)
            .find(|key| !key.is_empty())
            .map_or_else(|| "general".to_string(), |key| if key == "root" { "root-section".to_string() } else { key });
        index_of.insert(id, catalog.sources.len());
        catalog.index_of.insert(path.clone(), catalog.sources.len());
        catalog.sources.push(CatalogSource { path, title, section, handwritten, signals: Vec::new() });
        catalog.ids.push(id);
        catalog.revisions.push(revision);
    }
    let mut statement = conn.prepare(
        "SELECT source_id, kind, label, other, chunk, start_offset, end_offset, start_line, end_line
         FROM concept_signals ORDER BY source_id, rowid",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let Some(&index) = index_of.get(&row.get::<_, i64>(0)?) else { continue };
        let Some(kind) = SignalKind::parse(&row.get::<_, String>(1)?) else { continue };
        catalog.sources[index].signals.push(Signal {
            kind,
            label: row.get(2)?,
            other: row.get(3)?,
            excerpt: Excerpt {
                chunk: row.get(4)?,
                start: row.get(5)?,
                end: row.get(6)?,
                start_line: row.get(7)?,
                end_line: row.get(8)?,
            },
        });
    }
    Ok(catalog)
}

/// The longest folder prefix (with its trailing `/`) that every path shares.
pub(super) fn shared_folders<'a>(mut paths: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = paths.next() else { return String::new() };
    let mut shared = first.rsplit_once('/').map_or("", |(folder, _)| folder).to_string();
    for path in paths {
        while !shared.is_empty() && !path.starts_with(&format!("{shared}/")) {
            shared = shared.rsplit_once('/').map_or(String::new(), |(parent, _)| parent.to_string());
        }
    }
    if shared.is_empty() { shared } else { format!("{shared}/") }
}

/// Where generated files go, and how they link to sources.
pub(super) struct Layout {
    pub(super) root: PathBuf,
    pub(super) output: PathBuf,
    /// The output folder's `wiki/`, relative to the project root (`/`-separated).
    pub(super) wiki_folder_in_project: String,
}

impl Layout {
    pub(super) fn new(project: &Project) -> Layout {
        let output = project.output_dir();
        let wiki = output.join("wiki");
        let wiki_folder_in_project = wiki.strip_prefix(&project.root).map_or_else(
            |_| wiki.to_string_lossy().into_owned(),
            |relative| relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
        );
        Layout { root: project.root.clone(), output, wiki_folder_in_project }
    }

    /// A page's file, relative to the output folder.
    pub(super) fn page_path(&self, section: &str, slug: &str) -> String {
        format!("wiki/{section}/{slug}.md")
    }

    /// A link from a page in `section` to a source.
    pub(super) fn source_href(&self, section: &str, source_path: &str) -> String {
        relative_href(&self.output.join("wiki").join(section), &self.root.join(source_path))
    }
}

/// The relative link from files in `from_dir` to `to`, `/`-separated.
pub(super) fn relative_href(from_dir: &Path, to: &Path) -> String {
    let from: Vec<Component<'_>> = from_dir.components().collect();
    let target: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_string(), from.len() - common).collect();
    parts.extend(target[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}
