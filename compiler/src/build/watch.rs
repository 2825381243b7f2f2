//! `knowledge build --watch`: one `Compiler` (and with it the salsa database) kept for the life of the
//! process, the project watched with `notify`, and a build after each burst of changes. A kept database
//! re-runs only the queries an edit invalidates; each build is the ordinary build, so the index, the files
//! and their guarantees are exactly those of `knowledge build`, and a running `knowledge serve` answers
//! from each new index without a restart.
//!
//! The build's own writes (the index, generated files, the stat cache, the lock, the log) are not changes:
//! events under the output folder count only for hand-written pages in its `wiki/` and for the notes file.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use crate::build::{BuildSummary, Compiler, Reporter};
use crate::config::{ConfigError, Project};

/// How long the tree must stay quiet before a build starts: an editor's save is often several events (a
/// temporary file, a rename), which come within a millisecond of each other.
const QUIET: Duration = Duration::from_millis(2);
/// How long it must stay quiet once every file the burst wrote is closed (or renamed into place, or
/// removed): the writers are done, and waiting out [`QUIET`] would only add to each edit's latency. Where
/// the watcher reports no closes (not inotify), a burst never settles and waits [`QUIET`].
const SETTLED: Duration = Duration::from_micros(500);
/// The longest a burst of events may delay a build.
const MOST_DELAY: Duration = Duration::from_millis(250);

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot watch `{}`", path.display())]
    Watch {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
}

/// One build of the watch loop: what set it off, and how it went.
pub struct Rebuild {
    /// Project-relative paths whose events started this build (empty for the first build).
    pub changed: Vec<String>,
    /// From the first event to the committed index and files.
    pub latency: Duration,
    /// Whether the build walked the project; one that did not brought the last walk up to date from the
    /// changed paths.
    pub walked: bool,
    pub outcome: Result<BuildSummary, WatchFailure>,
}

/// Why a build of the watch did not happen or failed; the watch reports it and goes on.
#[derive(Debug, thiserror::Error)]
pub enum WatchFailure {
    /// `kc.toml` does not load.
    #[error("{0}")]
    Config(crate::config::ConfigError),
    /// The build failed: the error and its causes.
    #[error("{}", crate::error_chain(.0))]
    Build(super::BuildError),
}

/// Builds `config_path`'s project, then again after each change, calling `report` after every build.
/// Runs until the process is stopped (or `report` returns false, for tests and benchmarks). A broken
/// `kc.toml` or a failing build is reported and the watch goes on.
pub fn watch(
    config_path: &Path,
    reporter: &dyn Reporter,
    mut report: impl FnMut(&Rebuild) -> bool,
) -> Result<(), WatchError> {
    let project = Project::load(config_path)?;
    let root = project.root.clone();
    let (sender, events) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        // The receiver is gone only when the watch has ended.
        let _ = sender.send(event);
    })
    .map_err(|source| WatchError::Watch { path: root.clone(), source })?;
    watcher
        .watch(&root, RecursiveMode::Recursive)
        .map_err(|source| WatchError::Watch { path: root.clone(), source })?;

    let mut compiler = Compiler::watching();
    let mut output_dir = project.output_dir();
    let mut changed = Vec::new();
    let mut first_event = Instant::now();
    // The files the last build's index listed: this build may delete them, as it may write those its own
    // index lists. Only builds write the index, so one read after each build serves both.
    let mut listed_before = generated_files(&project);
    loop {
        // The configuration is read again for every build: an edit to `kc.toml` is a change like any other,
        // and one that breaks it is reported until it is fixed.
        let mut generated = std::mem::take(&mut listed_before);
        let (outcome, loaded) = match Project::load(config_path) {
            Ok(project) => {
                output_dir = project.output_dir();
                (compiler.build(&project, reporter).map_err(WatchFailure::Build), Some(project))
            }
            Err(error) => (Err(WatchFailure::Config(error)), None),
        };
        let built = outcome.is_ok();
        let rebuild = Rebuild {
            changed: std::mem::take(&mut changed),
            latency: first_event.elapsed(),
            walked: compiler.walked(),
            outcome,
        };
        let go_on = report(&rebuild);
        // The build's checkpoint, after its line: off the edit's latency. Failing here leaves the committed
        // log to the next checkpoint.
        if let Some(project) = &loaded {
            let _ = compiler.checkpoint(project);
        }
        if !go_on {
            return Ok(());
        }
        // After the report, which is the build's end for whoever waits on it: the events of this build's
        // writes wait in the channel meanwhile.
        match &loaded {
            Some(project) => {
                listed_before = generated_files(project);
                generated.extend(listed_before.iter().cloned());
            }
            None => listed_before.clone_from(&generated),
        }
        // A build that left the wiki's catalog cold (the first one, a no-op, say) would make the next edit
        // read it whole; reading it while the tree is quiet keeps that off the edit's latency. Failing here
        // only costs the next build that read.
        if let Some(project) = loaded.filter(|_| built) {
            let _ = compiler.warm_up(&project);
        }
        let Some(burst) = next_changes(&events, &root, &output_dir, &generated) else { return Ok(()) };
        // The paths are every change since this build began only when the watcher missed none.
        if burst.complete {
            compiler.changed(burst.paths.iter().cloned());
        }
        (changed, first_event) = (burst.paths, burst.started);
    }
}

/// The generated files the index lists (relative to the output folder), whose events are the build's own.
fn generated_files(project: &Project) -> HashSet<String> {
    let index = project.output_dir().join(crate::store::DB_FILE);
    crate::store::open_read_only(&index)
        .ok()
        .and_then(|conn| crate::store::generated_files(&conn).ok())
        .unwrap_or_default()
}

/// A burst of changes.
struct Burst {
    /// The project-relative paths that changed.
    paths: Vec<String>,
    /// Whether `paths` are all that changed: not when the watcher lost events (an overflowed queue, an
    /// error) or a change came where it reports none (`.git/info/exclude`, which the walk reads).
    complete: bool,
    /// When the first change was seen.
    started: Instant,
}

/// Blocks until a change that matters arrives, then gathers the burst it belongs to. `None` when the
/// watcher is gone.
fn next_changes(
    events: &Receiver<notify::Result<notify::Event>>,
    root: &Path,
    output_dir: &Path,
    generated: &HashSet<String>,
) -> Option<Burst> {
    let mut changed = BTreeSet::new();
    let mut complete = true;
    let mut started = None;
    let mut writers = Writers::default();
    // A change to the git excludes may change which files are sources: the build walks the project again.
    let exclude = root.join(".git/info/exclude");
    loop {
        let event = match started {
            None => events.recv().ok()?,
            Some(at) => {
                let left = MOST_DELAY.saturating_sub(Instant::elapsed(&at));
                match events.recv_timeout(writers.quiet(complete).min(left)) {
                    Ok(event) => event,
                    Err(RecvTimeoutError::Timeout) => {
                        return Some(Burst { paths: changed.into_iter().collect(), complete, started: at });
                    }
                    Err(RecvTimeoutError::Disconnected) => return None,
                }
            }
        };
        // An error from the watcher, or its word that it lost events (an overflowed queue), may hide changes:
        // rebuild, walking the project.
        let (paths, kind) = match event {
            Ok(event) if event.need_rescan() => (Vec::new(), None),
            Ok(event) if matters(&event.kind) => (event.paths, Some(event.kind)),
            Ok(event) if closed_after_writing(&event.kind) => {
                for path in &event.paths {
                    if let Some(relative) = relevant(path, root, output_dir, generated) {
                        writers.closed(&relative);
                    }
                }
                continue;
            }
            Ok(_) => continue,
            Err(_) => (Vec::new(), None),
        };
        if paths.is_empty() {
            complete = false;
            started.get_or_insert_with(Instant::now);
        }
        for path in paths {
            if path == exclude {
                complete = false;
                started.get_or_insert_with(Instant::now);
            }
            if let Some(relative) = relevant(&path, root, output_dir, generated) {
                started.get_or_insert_with(Instant::now);
                writers.changed(kind.as_ref(), &relative);
                changed.insert(relative);
            }
        }
    }
}

/// The changed paths of a burst still open for writing: created or written, not yet closed.
#[derive(Default)]
struct Writers(HashSet<String>);

impl Writers {
    /// A change to `path`: a file renamed into place or removed is held by no writer, nor is a folder made;
    /// any other change (a file created or written) is open until its writer closes it, so a watcher that
    /// reports no closes never settles a burst.
    fn changed(&mut self, kind: Option<&notify::EventKind>, path: &str) {
        use notify::EventKind::{Create, Modify, Remove};
        use notify::event::{CreateKind, ModifyKind};
        match kind {
            Some(Remove(_) | Modify(ModifyKind::Name(_))) => {
                self.0.remove(path);
            }
            Some(Create(CreateKind::Folder)) => {}
            _ => {
                self.0.insert(path.to_string());
            }
        }
    }

    fn closed(&mut self, path: &str) {
        self.0.remove(path);
    }

    /// How long the tree must stay quiet before the build: [`SETTLED`] once every writer is done and the
    /// watcher lost nothing, else [`QUIET`].
    fn quiet(&self, complete: bool) -> Duration {
        if self.0.is_empty() && complete { SETTLED } else { QUIET }
    }
}

/// Whether an event says a writer closed a file it wrote.
fn closed_after_writing(kind: &notify::EventKind) -> bool {
    matches!(kind, notify::EventKind::Access(notify::event::AccessKind::Close(notify::event::AccessMode::Write)))
}

/// Whether an event can change what a build reads: creating, writing, renaming or removing, not reading.
fn matters(kind: &notify::EventKind) -> bool {
    matches!(kind, notify::EventKind::Create(_) | notify::EventKind::Modify(_) | notify::EventKind::Remove(_))
        && !matches!(kind, notify::EventKind::Modify(notify::event::ModifyKind::Metadata(_)))
}

/// The project-relative path of an event that may change a build's inputs, or `None` for the build's
/// own writes and for `.git`. Most events are the build's own: every file it writes under the output
/// folder gives several, each told apart here on the watcher's thread while the build uses the other core.
/// They are told apart by the path's text, with no allocation, and with no stat but for a path that would
/// otherwise be an input (a folder made inside `wiki/` is none).
fn relevant(path: &Path, root: &Path, output_dir: &Path, generated: &HashSet<String>) -> Option<String> {
    if let Some(inside) = inside_folder(path, output_dir) {
        let name = inside.rsplit('/').next().unwrap_or_default();
        let hand_written =
            inside.starts_with("wiki/") && !generated.contains(inside.as_ref()) && !name.starts_with('.');
        let ingested = inside == crate::sources::ingested::INGESTED_FILE
            || (inside.strip_prefix(crate::sources::ingested::INGESTED_DIR).is_some_and(|rest| rest.starts_with('/'))
                && !name.starts_with('.'));
        // The build creates the output folder's folders; a folder is no source.
        if !(hand_written || ingested || inside == crate::sources::notes::NOTES_FILE) || path.is_dir() {
            return None;
        }
    } else if output_dir.starts_with(path) {
        // The output folder itself, or a folder above it, which the build creates.
        return None;
    }
    let relative = path.strip_prefix(root).ok()?;
    if relative.components().any(|c| c.as_os_str() == ".git") {
        return None;
    }
    Some(as_text(relative).into_owned())
}

/// `path` below `folder` (not `folder` itself), `/`-separated: compared as text where both are, else by
/// their components.
fn inside_folder<'p>(path: &'p Path, folder: &Path) -> Option<std::borrow::Cow<'p, str>> {
    if let (Some(path_text), Some(folder_text)) = (path.to_str(), folder.to_str())
        && let Some(inside) =
            path_text.strip_prefix(folder_text.trim_end_matches('/')).and_then(|rest| rest.strip_prefix('/'))
        && !inside.is_empty()
    {
        return Some(std::borrow::Cow::Borrowed(inside));
    }
    path.strip_prefix(folder).ok().filter(|inside| !inside.as_os_str().is_empty()).map(as_text)
}

/// A relative path's components joined by `/`.
fn as_text(path: &Path) -> std::borrow::Cow<'_, str> {
    match path.to_str() {
        Some(text) if !text.contains("//") && !text.split('/').any(|part| part == ".") => {
            std::borrow::Cow::Borrowed(text)
        }
        _ => std::borrow::Cow::Owned(crate::sources::slash_joined(path)),
    }
}

#[cfg(test)]
mod tests {
    use notify::EventKind;
    use notify::event::{CreateKind, DataChange, ModifyKind, RemoveKind, RenameMode};

    use super::{QUIET, SETTLED, Writers, relevant};

    /// Which events are inputs: a source, and under the output folder only hand-written wiki files, what
    /// `ingest` stores and the notes file; never the build's own files and folders, `.git`, or a path outside
    /// the project.
    #[test]
    fn only_a_path_a_build_reads_is_relevant() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let output = root.join(".hasna/knowledge");
        std::fs::create_dir_all(output.join("wiki/made")).unwrap();
        let generated: std::collections::HashSet<String> = ["wiki/general/a.md".to_string()].into();
        let ingested = crate::sources::ingested::INGESTED_DIR;
        let cases: Vec<(std::path::PathBuf, Option<String>)> = vec![
            (root.join("docs/a.md"), Some("docs/a.md".into())),
            (root.join(".git/HEAD"), None),
            (dir.path().join("elsewhere/a.md"), None),
            (output.clone(), None),
            (root.join(".hasna"), None),
            (output.join("knowledge.db"), None),
            (output.join(".kc-spare.tmp"), None),
            (output.join("wiki/general/a.md"), None),
            (output.join("wiki/mine.md"), Some(".hasna/knowledge/wiki/mine.md".into())),
            (output.join("wiki/.mine.md.tmp"), None),
            (output.join("wiki/made"), None),
            (
                output.join(crate::sources::ingested::INGESTED_FILE),
                Some(format!(".hasna/knowledge/{}", crate::sources::ingested::INGESTED_FILE)),
            ),
            (output.join(format!("{ingested}/page.txt")), Some(format!(".hasna/knowledge/{ingested}/page.txt"))),
            (output.join(format!("{ingested}/.page.txt.tmp")), None),
            (
                output.join(crate::sources::notes::NOTES_FILE),
                Some(format!(".hasna/knowledge/{}", crate::sources::notes::NOTES_FILE)),
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(relevant(&path, &root, &output, &generated), expected, "{}", path.display());
        }
    }

    /// A burst waits out [`QUIET`] while a file it wrote is open, and only [`SETTLED`] once every writer
    /// closed its file (or the file was renamed into place or removed); a burst whose watcher lost events
    /// always waits [`QUIET`].
    #[test]
    fn a_burst_settles_once_every_file_it_wrote_is_closed() {
        let mut writers = Writers::default();
        writers.changed(Some(&EventKind::Create(CreateKind::File)), "a.md");
        writers.changed(Some(&EventKind::Modify(ModifyKind::Data(DataChange::Any))), "a.md");
        writers.changed(Some(&EventKind::Modify(ModifyKind::Data(DataChange::Any))), "b.md");
        assert_eq!(writers.quiet(true), QUIET, "both open");
        writers.closed("a.md");
        assert_eq!(writers.quiet(true), QUIET, "b.md still open");
        writers.closed("b.md");
        assert_eq!(writers.quiet(true), SETTLED);
        assert_eq!(writers.quiet(false), QUIET, "events were lost");

        writers.changed(Some(&EventKind::Modify(ModifyKind::Data(DataChange::Any))), "c.md");
        writers.changed(Some(&EventKind::Modify(ModifyKind::Name(RenameMode::To))), "c.md");
        assert_eq!(writers.quiet(true), SETTLED, "renamed into place");
        writers.changed(Some(&EventKind::Create(CreateKind::File)), "d.md");
        writers.changed(Some(&EventKind::Remove(RemoveKind::File)), "d.md");
        assert_eq!(writers.quiet(true), SETTLED, "removed");
        writers.changed(Some(&EventKind::Create(CreateKind::Folder)), "folder");
        assert_eq!(writers.quiet(true), SETTLED, "a folder is written by no one");
        writers.changed(Some(&EventKind::Modify(ModifyKind::Any)), "e.md");
        assert_eq!(writers.quiet(true), QUIET, "a change of no known kind waits for its close");
    }
}
