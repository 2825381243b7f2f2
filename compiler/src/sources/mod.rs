//! Finding and reading sources.
//!
//! The walk honours `.gitignore` (through the `ignore` crate, which ripgrep uses; walkdir alone would need a
//! hand-written gitignore stack), the include and exclude globs, and never enters `.git`, a folder no
//! include glob can reach, or the output folder, except the output folder's `wiki/`, where hand-written
//! pages are sources like any other, even when the project's `.gitignore` ignores the output folder. Files
//! that cannot be sources (binary, invalid UTF-8, too large, unreadable, symlink loops, symlinks that lead
//! outside the project) are skipped with a reason that names the file, and the build goes on.

pub mod db;
pub mod ingested;
mod kept;
pub mod legacy;
pub mod minhash;
pub mod mirror;
pub mod notes;
pub mod vcs;

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use globset::{Glob, GlobSet, GlobSetBuilder};

use knowledge_queries::Chunk;
use knowledge_queries::code::Entity;

use crate::config::Project;
use crate::store::ChunkRow;

pub use kept::KeptWalk;

/// A file the walk selected, before it is read.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    pub absolute: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch: with `size`, the cheap change check.
    pub mtime_ns: i64,
    /// The text of a source that is not a file of its own (a note), read with the notes file.
    pub inline: Option<String>,
}

/// Why a file is not a source.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
    /// The labels the source carries, when it was read far enough to know them (its front matter's
    /// included): the run's event for it is shown only to principals who may read those.
    #[serde(skip)]
    pub labels: Option<String>,
}

impl Skipped {
    #[must_use]
    pub fn new(path: String, reason: String) -> Skipped {
        Skipped { path, reason, labels: None }
    }
}

/// What the walk found.
#[derive(Debug, Default, Clone)]
pub struct Walk {
    pub files: Vec<FoundFile>,
    pub skipped: Vec<Skipped>,
    /// The walk met a symbolic link below the root (followed or not): a change behind a link is reported
    /// by a watcher under another path, so such a walk is not kept (see [`KeptWalk`]).
    pub met_links: bool,
}

/// A tree with at least this many sources (as the index last knew them) is walked on every core. Below it
/// one thread walks: the parallel walker's idle threads poll for work every millisecond, so its end waits
/// out their sleep, and a small tree gains nothing from a second core. No-op builds (docs/performance.md):
/// dendron-vault (1,012 files, one folder) 21.7 ms on every core, 17.6 on one; rust-rfcs (648) 16.9 and
/// 14.3; tldr (38,404 files in 396 folders) 186.7 on every core and 218.8 on one.
const PARALLEL_WALK_FROM: usize = 4096;

/// Walks the project and returns the files the configuration selects, sorted by path. `known_sources`:
/// how many sources the index holds (0 when there is no index), which decides whether the walk runs on
/// every core.
pub fn walk(project: &Project, known_sources: usize) -> Walk {
    let threads = if known_sources == 0 || known_sources >= PARALLEL_WALK_FROM { 0 } else { 1 };
    walk_within(project, None, threads)
}

/// [`walk`], entering only the folders on the way to the `only` paths (project-relative) and what lies
/// below them: what a whole walk would find there, by the same rules (`.gitignore` files on the way
/// included), without a stat of anything else. `threads`: 1 walks on this thread, 0 on every core.
fn walk_within(project: &Project, only: Option<&[String]>, threads: usize) -> Walk {
    let sources = &project.config.sources;
    let include_globs: Vec<&str> = included(project).collect();
    let include = glob_set(include_globs.iter().copied());
    // Folders no include glob can reach are not entered at all (a `docs/**` project skips `target/`,
    // `node_modules/` and the generated wiki without a stat of what they hold).
    let reachable: Vec<String> = include_globs.iter().map(|glob| literal_folder(glob).to_string()).collect();
    let exclude = glob_set(sources.exclude.iter().map(|g| g.get_ref().as_str()));
    let output_dir = project.output_dir();
    let root = project.root.clone();

    // A symlink may lead anywhere; a build reads nothing outside the project, whatever `follow_symlinks`
    // says. Links are resolved against the real root, and one that leads out is skipped with a warning.
    let real_root = root.canonicalize().unwrap_or_else(|_| root.clone());
    let skipped_links = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Skipped>::new()));
    let skipped_in_filter = skipped_links.clone();
    let met_links = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let met_links_in_filter = met_links.clone();
    let (include_in_filter, exclude_in_filter, root_in_filter) = (include.clone(), exclude.clone(), root.clone());
    let only: Option<Vec<String>> = only.map(<[String]>::to_vec);
    let mut builder = ignore::WalkBuilder::new(&root);
    // The output folder's `wiki/` holds hand-written pages and filed answers, sources whatever the project's
    // `.gitignore` says of the output folder (many ignore `/.hasna` whole): when it does, `wiki/` is walked
    // as a root of its own, which no ignore file above it reaches. A file both walks find is kept once.
    let wiki_root = output_dir.join("wiki");
    let second_root = sources.respect_gitignore && wiki_root.is_dir() && ignored_by_git(&root, &wiki_root);
    if second_root {
        builder.add(&wiki_root);
    }
    builder
        .hidden(false)
        .ignore(false)
        .parents(false)
        .git_global(false)
        .git_ignore(sources.respect_gitignore)
        .git_exclude(sources.respect_gitignore)
        .require_git(false)
        .follow_links(sources.follow_symlinks)
        .filter_entry(move |entry| {
            let path = entry.path();
            if let Some(only) = &only
                && entry.depth() > 0
                && !on_the_way(&relative(path, &root_in_filter), only)
            {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir && entry.file_name() == ".git" {
                return false;
            }
            if is_dir && entry.depth() > 0 && !may_hold_sources(&relative(path, &root_in_filter), &reachable) {
                return false;
            }
            if entry.path_is_symlink() && entry.depth() > 0 {
                met_links_in_filter.store(true, std::sync::atomic::Ordering::Relaxed);
                let relative = relative(path, &root_in_filter);
                if let Some(report) = outside_link(path, relative, &real_root, &include_in_filter, &exclude_in_filter) {
                    let mut skipped = skipped_in_filter.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    skipped.extend(report);
                    return false;
                }
            }
            // In the output folder only `wiki/` holds sources: hand-written pages live there.
            match path.strip_prefix(&output_dir) {
                Ok(inside) => inside.as_os_str().is_empty() || inside.starts_with("wiki"),
                Err(_) => true,
            }
        });

    let max_file_bytes = sources.max_file_bytes;
    let classify = |entry| classify(entry, &root, &include, &exclude, max_file_bytes);
    let mut walk = run_walk(builder, threads, &classify);
    walk.skipped.extend(std::mem::take(&mut *skipped_links.lock().unwrap_or_else(std::sync::PoisonError::into_inner)));
    walk.met_links = met_links.load(std::sync::atomic::Ordering::Relaxed);
    walk.sorted(second_root)
}

/// Runs the walk `builder` describes, on this thread (`threads` 1) or on every core (0), `classify`ing each
/// entry.
fn run_walk(
    mut builder: ignore::WalkBuilder,
    threads: usize,
    classify: &(dyn Fn(Result<ignore::DirEntry, ignore::Error>) -> Option<Result<FoundFile, Skipped>> + Sync),
) -> Walk {
    let add = |walk: &mut Walk, outcome| match outcome {
        Some(Ok(file)) => walk.files.push(file),
        Some(Err(skipped)) => walk.skipped.push(skipped),
        None => {}
    };
    if threads == 1 {
        let mut walk = Walk::default();
        for entry in builder.build() {
            add(&mut walk, classify(entry));
        }
        return walk;
    }
    // The parallel walker: stat calls dominate a large walk, and they run on every core (outside the lock,
    // which guards only the push).
    let found = std::sync::Mutex::new(Walk::default());
    builder.threads(threads).build_parallel().run(|| {
        Box::new(|entry| {
            let outcome = classify(entry);
            add(&mut found.lock().unwrap_or_else(std::sync::PoisonError::into_inner), outcome);
            ignore::WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Walk {
    /// The walk in path order; with `twice` (the wiki walked as a second root), each file kept once.
    fn sorted(mut self, twice: bool) -> Walk {
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        if twice {
            self.files.dedup_by(|a, b| a.path == b.path);
            self.skipped.dedup_by(|a, b| a.path == b.path);
        }
        self
    }
}

/// What the walk does with a symlink below the root: `None` walks it (it stays in the project); otherwise it
/// is left out, with what to report: nothing for a dangling link (the walk reports it itself when it follows
/// links, and it is no source), the link for one that leads out of the project (a link to a folder whatever
/// its name, a link to a file only when the globs would have selected it).
fn outside_link(
    path: &Path,
    relative: String,
    real_root: &Path,
    include: &GlobSet,
    exclude: &GlobSet,
) -> Option<Option<Skipped>> {
    let target = match path.canonicalize() {
        Ok(target) if target.starts_with(real_root) => return None,
        Ok(target) => target,
        Err(_) => return Some(None),
    };
    let selected = path.is_dir() || (include.is_match(&relative) && !exclude.is_match(&relative));
    let reason = format!("symlink to `{}`, outside the project: a build reads nothing outside it", target.display());
    Some(selected.then(|| Skipped::new(relative, reason)))
}

/// What the walk makes of one entry: a source candidate, a skipped file, or nothing (a folder, or a file
/// the globs do not select).
fn classify(
    entry: Result<ignore::DirEntry, ignore::Error>,
    root: &Path,
    include: &GlobSet,
    exclude: &GlobSet,
    max_file_bytes: u64,
) -> Option<Result<FoundFile, Skipped>> {
    let entry = match entry {
        Ok(entry) => entry,
        Err(error) => {
            return Some(Err(Skipped::new(error_path(&error, root), walk_error_reason(&error, root))));
        }
    };
    if !entry.file_type().is_some_and(|t| t.is_file()) {
        return None;
    }
    let path = relative(entry.path(), root);
    if !include.is_match(&path) || exclude.is_match(&path) {
        return None;
    }
    let metadata = match entry.metadata() {
        Ok(metadata) => metadata,
        Err(error) => {
            return Some(Err(Skipped::new(path, format!("unreadable: {error}"))));
        }
    };
    if metadata.len() > max_file_bytes {
        let reason = format!("too large: {} bytes, over `max_file_bytes` = {max_file_bytes}", metadata.len());
        return Some(Err(Skipped::new(path, reason)));
    }
    let mtime_ns = mtime_ns(&metadata);
    Some(Ok(FoundFile { path, absolute: entry.into_path(), size: metadata.len(), mtime_ns, inline: None }))
}

/// A file's modification time in nanoseconds since the epoch, 0 when unknown.
pub(crate) fn mtime_ns(metadata: &std::fs::Metadata) -> i64 {
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Why a file found by the walk is not a source: the reason a build reports for skipping it.
#[derive(Debug, thiserror::Error)]
pub enum NotText {
    #[error("unreadable: {0}")]
    Unreadable(std::io::Error),
    #[error("binary file")]
    Binary,
    #[error("invalid UTF-8 at line {line} (byte {byte})")]
    InvalidUtf8 { line: usize, byte: usize },
}

/// The text of a source, or why it is not one.
pub fn read_text(file: &FoundFile) -> Result<String, NotText> {
    if let Some(text) = &file.inline {
        return Ok(text.clone());
    }
    let bytes = std::fs::read(&file.absolute).map_err(NotText::Unreadable)?;
    // Git's heuristic: a NUL byte in the first 8 KiB means binary.
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(NotText::Binary);
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        NotText::InvalidUtf8 { line: valid.iter().filter(|&&b| b == b'\n').count() + 1, byte: valid.len() }
    })
}

/// The set of `patterns`, which the configuration validated when it was loaded.
pub(crate) fn glob_set<'a>(patterns: impl Iterator<Item = &'a str>) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        // Patterns were validated when the configuration was loaded.
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// The folder a glob's literal start names, with its trailing `/` (`docs/` for `docs/**/*.md`): the glob
/// selects nothing outside it. Empty when the glob begins with a pattern (`**/*.md`) or names a file at the
/// root: it may select anywhere, as far as this rule knows.
fn literal_folder(glob: &str) -> &str {
    let literal = glob.find(['*', '?', '[', '{', '\\']).map_or(glob, |end| &glob[..end]);
    literal.rfind('/').map_or("", |slash| &literal[..=slash])
}

/// The globs that select the walk's files: `[sources] include` and what `[code]` adds.
fn included(project: &Project) -> impl Iterator<Item = &str> {
    project.config.sources.include.iter().chain(project.config.code.walked()).map(|glob| glob.get_ref().as_str())
}

/// Whether `relative` is one of the `targets`, lies below one, or is a folder on the way to one.
fn on_the_way(relative: &str, targets: &[String]) -> bool {
    targets.iter().any(|target| at_or_below(relative, target) || at_or_below(target, relative))
}

/// Whether the project-relative `path` is `target` or lies below it.
fn at_or_below(path: &str, target: &str) -> bool {
    path.strip_prefix(target).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether the folder at `relative` (project-relative, no trailing `/`) may hold a file below one of the
/// `reachable` folders ([`literal_folder`]s): it lies inside one, or one lies inside it.
fn may_hold_sources(relative: &str, reachable: &[String]) -> bool {
    let folder = format!("{relative}/");
    reachable.iter().any(|reach| folder.starts_with(reach.as_str()) || reach.starts_with(&folder))
}

/// Whether the project's own ignore files (`.gitignore` at its root, `.git/info/exclude`) ignore `folder`
/// or a folder above it.
fn ignored_by_git(root: &Path, folder: &Path) -> bool {
    let mut rules = ignore::gitignore::GitignoreBuilder::new(root);
    for file in [root.join(".gitignore"), root.join(".git/info/exclude")] {
        if file.is_file() {
            let _ = rules.add(file);
        }
    }
    rules.build().is_ok_and(|rules| rules.matched_path_or_any_parents(folder, true).is_ignore())
}

fn relative(path: &Path, root: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    // On Unix the separator is already `/` and the walk joins plain names: one copy, not a list of parts
    // (5 % of tldr's no-op build, 38,000 files).
    #[cfg(unix)]
    if let Some(text) = relative.to_str() {
        return text.to_string();
    }
    slash_joined(relative)
}

/// A path's components joined by `/`, as the index names files on every platform.
pub(crate) fn slash_joined(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn error_path(error: &ignore::Error, root: &Path) -> String {
    match error {
        ignore::Error::Loop { child, .. } => relative(child, root),
        ignore::Error::WithPath { path, .. } => relative(path, root),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => error_path(err, root),
        _ => "(unknown path)".to_string(),
    }
}

fn walk_error_reason(error: &ignore::Error, root: &Path) -> String {
    match error {
        ignore::Error::Loop { ancestor, .. } => format!("symlink loop back to `{}`", relative(ancestor, root)),
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => walk_error_reason(err, root),
        other => format!("unreadable: {other}"),
    }
}

/// A source's chunks as rows. `signatures`: with the MinHash signatures near-duplicate lint reads (files
/// only: lint compares neither generated pages nor notes).
pub(crate) fn chunk_rows(text: &str, title: &str, chunks: &[Chunk], signatures: bool) -> Vec<ChunkRow> {
    chunks
        .iter()
        .map(|chunk| {
            let slice = &text[chunk.start as usize..chunk.end as usize];
            ChunkRow {
                id: chunk.id.clone(),
                ordinal: chunk.ordinal,
                hash: chunk.hash.clone(),
                heading_path: serde_json::to_string(&chunk.heading_path).expect("strings serialize"),
                title: chunk_title(title, &chunk.heading_path),
                text: slice.to_string(),
                identifiers: chunk.identifiers.clone(),
                start_offset: chunk.start,
                end_offset: chunk.end,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                minhash: if signatures { crate::sources::minhash::signature(slice) } else { None }
                    .map(|signature| crate::sources::minhash::signature_bytes(&signature)),
                entity: None,
            }
        })
        .collect()
}

/// The search excerpts of a source's code entities as rows, numbered after its `chunks` text chunks.
pub(crate) fn entity_rows(path: &str, text: &str, entities: &[Entity], chunks: usize) -> Vec<ChunkRow> {
    entities
        .iter()
        .zip(chunks..)
        .map(|(entity, ordinal)| {
            let excerpt = entity.excerpt(path, text);
            ChunkRow {
                id: excerpt.id,
                ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
                hash: excerpt.hash,
                heading_path: "[]".to_string(),
                title: excerpt.title,
                text: text[excerpt.start as usize..excerpt.end as usize].to_string(),
                identifiers: excerpt.identifiers,
                start_offset: excerpt.start,
                end_offset: excerpt.end,
                start_line: excerpt.start_line,
                end_line: excerpt.end_line,
                minhash: None,
                entity: Some(entity.slug.clone()),
            }
        })
        .collect()
}

/// The document title followed by the heading path, without repeating a title that is also the first heading.
fn chunk_title(document_title: &str, heading_path: &[String]) -> String {
    let mut parts: Vec<&str> = vec![document_title];
    parts.extend(heading_path.iter().map(String::as_str).skip_while(|h| *h == document_title));
    parts.join(" > ")
}

#[cfg(test)]
mod tests {
    use super::{literal_folder, may_hold_sources};

    #[test]
    fn the_walk_enters_only_folders_an_include_glob_can_reach() {
        assert_eq!(literal_folder("docs/**/*.md"), "docs/");
        assert_eq!(literal_folder("docs/api/v*/[a-z].md"), "docs/api/");
        assert_eq!(literal_folder("**/*.md"), "");
        assert_eq!(literal_folder("doc*/x.md"), "");
        assert_eq!(literal_folder("README.md"), "");
        assert_eq!(literal_folder("notes/today.md"), "notes/");
        let reachable = ["docs/api/".to_string(), "src/".to_string()];
        // On the way to a reachable folder, inside one, and beside them.
        assert!(may_hold_sources("docs", &reachable));
        assert!(may_hold_sources("docs/api/v1", &reachable));
        assert!(may_hold_sources("src/deep/er", &reachable));
        assert!(!may_hold_sources("docs/guide", &reachable));
        assert!(!may_hold_sources("target", &reachable));
        assert!(!may_hold_sources("srcs", &reachable), "a folder whose name only starts like one");
        assert!(!may_hold_sources(".hasna/knowledge/wiki", &reachable));
        // A glob that may select anywhere keeps every folder.
        assert!(may_hold_sources("target/debug", &[String::new()]));
    }
}
