//! The files under the output folder follow the index: drift for `--check`, leftovers of a killed build,
//! the stat cache that vouches for unchanged files and records which the tool wrote, atomic writes.

use knowledge_queries::wiki::{declared_kind, declared_kind_at};

use super::*;

/// An artifact on disk that differs from what the index says it should be.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Drift {
    /// Relative to the output folder.
    pub path: String,
    /// `missing`, `modified` (edited by hand), `blocked` (a file the tool did not write is in the way) or
    /// `stale` (a generated or temporary file the index no longer lists).
    pub state: &'static str,
}

/// The counters of a build's file sync, by the kind of artifact: pages, shards (each section's
/// Markdown and JSON), and each declared kind under its name.
pub struct FileCounters<'a> {
    pub pages: &'a mut ArtifactCounters,
    pub shards: &'a mut ArtifactCounters,
    pub declared: &'a mut BTreeMap<String, ArtifactCounters>,
}

impl FileCounters<'_> {
    fn of(&mut self, kind: &str) -> &mut ArtifactCounters {
        match declared_kind(kind) {
            Some(kind) => super::declared::counters(kind, self.shards, self.declared),
            None => self.pages,
        }
    }
}

impl crate::store::CatalogObject {
    /// The text the file should hold, from the index.
    fn text(&self, conn: &Connection) -> rusqlite::Result<Option<String>> {
        if self.kind == "page" {
            return SourceRef::from_path(&self.uri)
                .page_slug()
                .map_or(Ok(None), |slug| store::page_markdown(conn, slug));
        }
        match declared_kind(&self.kind) {
            Some(kind) => super::declared::kept_text(conn, kind, &self.uri),
            None => Ok(None),
        }
    }
}

/// Generated artifacts whose file is missing or differs from the index, and generated files the index no
/// longer lists (a build killed between its commit and its file sync leaves them): what `knowledge build
/// --check` reports and what the next build puts right. Every file is read: a check trusts no cache.
/// `output_in_project` is the output folder relative to the project root, with its trailing `/`.
pub fn drift(conn: &Connection, output_dir: &Path, output_in_project: &str) -> rusqlite::Result<Vec<Drift>> {
    let mut drift = Vec::new();
    let artifacts = crate::store::catalog_objects(conn)?;
    let owned = read_stat_cache(output_dir);
    let sources = store::sources_under(conn, output_in_project)?;
    for artifact in &artifacts {
        let Some(text) = artifact.text(conn)? else { continue };
        match read_plain(&output_dir.join(&artifact.path)) {
            Ok(Some(bytes)) if bytes == text.as_bytes() => {}
            Ok(found) if found.as_ref().is_none_or(|bytes| !may_replace(&artifact.path, bytes, &owned)) => {
                drift.push(Drift { path: artifact.path.clone(), state: "blocked" });
            }
            Ok(_) => drift.push(Drift { path: artifact.path.clone(), state: "modified" }),
            Err(_) => drift.push(Drift { path: artifact.path.clone(), state: "missing" }),
        }
    }
    let mut listed: HashSet<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
    listed.extend(sources.iter().map(String::as_str));
    let on_disk = files_on_disk(output_dir);
    drift.extend(
        leftovers(output_dir, &on_disk, &listed, &owned).into_iter().map(|path| Drift { path, state: "stale" }),
    );
    drift.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(drift)
}

/// The file under the output folder where builds remember each generated file's size, mtime and hash
/// as they left it. It is also the record of which files the tool wrote: a file it lists is never taken
/// for the user's. A cache: missing, stale or unreadable, it only makes the next build read more files.
pub const STAT_CACHE: &str = "artifacts.stat";

/// The folders of the output layout that hold generated files (and, in `wiki/`, hand-written pages).
pub(super) const GENERATED_FOLDERS: [&str; 3] = ["wiki", "indexes", "schemas"];

/// Size, mtime and content hash of a generated file as the last build left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileStat {
    pub(super) size: u64,
    pub(super) mtime_ns: u128,
    pub(super) hash: String,
}

/// The stat of the file the sync just wrote or read at `file`, with the hash the index expects of it.
pub(super) fn file_stat(file: &Path, hash: &str) -> Option<FileStat> {
    let stat = rustix::fs::statat(rustix::fs::CWD, file, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
    DiskStat::of(&stat).map(|stat| stat.with_hash(hash))
}

/// A plain file's size and mtime (nanoseconds since the epoch), as the stat cache records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DiskStat {
    size: u64,
    mtime_ns: u128,
}

impl DiskStat {
    /// `None` for an mtime before the epoch, which the cache cannot record: such a file is read.
    fn of(stat: &rustix::fs::Stat) -> Option<DiskStat> {
        let seconds = u128::try_from(stat.st_mtime).ok()?;
        let mtime_ns = seconds * 1_000_000_000 + stat.st_mtime_nsec as u128;
        Some(DiskStat { size: stat.st_size as u64, mtime_ns })
    }

    fn with_hash(self, hash: &str) -> FileStat {
        FileStat { size: self.size, mtime_ns: self.mtime_ns, hash: hash.to_string() }
    }
}

/// The plain files of the output folder itself and of its [`GENERATED_FOLDERS`], by path relative to the
/// output folder (`/`-separated), each with its size and mtime (none before the epoch): one walk, each
/// file's stat taken relative to its folder's descriptor. A sync used to walk the folders for leftovers and
/// then stat each artifact by its whole path, which walked the output folder's path again for every file
/// (docs/performance.md). Links, and what lies behind them, are not listed: the tool writes and removes
/// only plain files reached through no link. Names that are not UTF-8 are no artifact's and no temporary's,
/// and are not listed either.
pub(super) fn files_on_disk(output_dir: &Path) -> HashMap<String, Option<DiskStat>> {
    use rustix::fs::{CWD, Dir, Mode, OFlags, openat};
    let mut found = HashMap::new();
    let folder = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if let Ok(top) = openat(CWD, output_dir, folder, Mode::empty()).and_then(Dir::new) {
        walk_folder(top, "", &mut found);
    }
    found
}

/// What is on the disk before a sync: the stat cache as the last sync left it and the files
/// [`files_on_disk`] finds.
type OnDisk = (HashMap<String, FileStat>, HashMap<String, Option<DiskStat>>);

/// The stat cache read and [`files_on_disk`] walked on their own thread while the build derives what the
/// files should hold, so they cost a build no time where a second core is free. Nothing but the sync writes
/// the generated folders and the stat cache (the build holds the writer lock), so the walk finds what the
/// sync would.
pub struct DiskWalk(Option<std::thread::JoinHandle<OnDisk>>);

impl DiskWalk {
    /// Starts reading `output_dir`; where no thread can be started, the sync reads it itself.
    #[must_use]
    pub fn start(output_dir: &Path) -> DiskWalk {
        let output_dir = output_dir.to_path_buf();
        let read = move || (read_stat_cache(&output_dir), files_on_disk(&output_dir));
        DiskWalk(std::thread::Builder::new().name("disk-walk".into()).spawn(read).ok())
    }

    /// What the walk found (a panic in it is the caller's).
    fn finish(self, output_dir: &Path) -> OnDisk {
        match self.0 {
            Some(walk) => walk.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => (read_stat_cache(output_dir), files_on_disk(output_dir)),
        }
    }
}

/// Lists `folder`'s plain files into `found`, under `prefix`, and walks its subfolders: at the output folder
/// (`prefix` empty) only the [`GENERATED_FOLDERS`].
fn walk_folder(mut entries: rustix::fs::Dir, prefix: &str, found: &mut HashMap<String, Option<DiskStat>>) {
    use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, openat, statat};
    // The listing first, then each entry's stat through the folder's own descriptor (no second open).
    let mut listed: Vec<(String, FileType)> = Vec::new();
    while let Some(Ok(entry)) = entries.read() {
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name != "." && name != ".." {
            listed.push((name.to_string(), entry.file_type()));
        }
    }
    let Ok(folder) = entries.fd() else { return };
    for (name, mut kind) in listed {
        // Joined by hand: a `format!` a file was a third of the walk's instructions.
        let path = if prefix.is_empty() { name.clone() } else { [prefix, "/", name.as_str()].concat() };
        let mut stat = None;
        // A file system that does not say an entry's type in the folder's listing is asked per entry.
        if kind == FileType::Unknown || kind == FileType::RegularFile {
            let Ok(read) = statat(folder, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) else { continue };
            kind = FileType::from_raw_mode(read.st_mode);
            stat = Some(read);
        }
        match (kind, stat) {
            (FileType::RegularFile, Some(stat)) => {
                found.insert(path, DiskStat::of(&stat));
            }
            (FileType::Directory, _) if !prefix.is_empty() || GENERATED_FOLDERS.contains(&name.as_str()) => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                if let Ok(subfolder) = openat(folder, name.as_str(), flags, Mode::empty()).and_then(Dir::new) {
                    walk_folder(subfolder, &path, found);
                }
            }
            _ => {}
        }
    }
}

/// The bytes of the plain file at `file`; `Ok(None)` when something else is in its place (a link, a named
/// pipe, a folder), which the tool never reads nor replaces: a pipe planted where a page goes would block a
/// read forever. Opened without following a link at its name and without waiting on a pipe, and told
/// apart by the opened file's own type, so nothing can be swapped in between.
fn read_plain(file: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use rustix::fs::{CWD, FileType, Mode, OFlags, fstat, openat};
    use std::io::Read;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let opened = match openat(CWD, file, flags, Mode::empty()) {
        Ok(opened) => opened,
        // A link at the name (`ELOOP`; FreeBSD says `EMLINK`) is something else in its place.
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::MLINK) => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    if FileType::from_raw_mode(fstat(&opened)?.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    std::fs::File::from(opened).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

pub(super) fn read_stat_cache(output_dir: &Path) -> HashMap<String, FileStat> {
    // Read as any generated file is: a pipe or a link in its place is no cache.
    let bytes = read_plain(&output_dir.join(STAT_CACHE)).ok().flatten().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let (path, size, mtime, hash) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
            Some((
                path.to_string(),
                FileStat { size: size.parse().ok()?, mtime_ns: mtime.parse().ok()?, hash: hash.to_string() },
            ))
        })
        .collect()
}

/// Whether a build may replace the file at `path` (relative to the output folder) holding `bytes`: the
/// stat cache records that the tool wrote a file there (a hand edit of a generated file is undone), or its
/// text says it was generated (front matter `generated: true`, a machine shard's JSON, the built-in schema
/// document). Anything else is the user's and is never overwritten.
pub(super) fn may_replace(path: &str, bytes: &[u8], owned: &HashMap<String, FileStat>) -> bool {
    owned.contains_key(path) || looks_written_by_us(path, bytes)
}

/// Whether a build may delete the file at `path` that the index no longer lists: only the bytes the tool
/// wrote (the hash the stat cache recorded) or a text that says it was generated. A hand-written page that
/// took the place of a generated one stays.
pub(super) fn may_delete(path: &str, bytes: &[u8], owned: &HashMap<String, FileStat>) -> bool {
    owned.get(path).is_some_and(|stat| stat.hash == content_hash(bytes)) || looks_written_by_us(path, bytes)
}

pub(super) fn looks_written_by_us(path: &str, bytes: &[u8]) -> bool {
    match declared_kind_at(path) {
        Some(kind) => (kind.ours)(bytes),
        None => looks_generated(&String::from_utf8_lossy(bytes)),
    }
}

/// Files in the generated folders that the index does not list and that a build may remove: generated
/// files of artifacts the index dropped, and temporary files a killed build left. `on_disk` is what
/// [`files_on_disk`] found; `listed` holds the artifacts and the hand-written pages the index has as sources,
/// which are not read at all; any other file of the user's is read and stays. Sorted, relative to the output
/// folder.
pub(super) fn leftovers(
    output_dir: &Path,
    on_disk: &HashMap<String, Option<DiskStat>>,
    listed: &HashSet<&str>,
    owned: &HashMap<String, FileStat>,
) -> Vec<String> {
    let mut leftovers: Vec<String> = on_disk
        .keys()
        .filter(|path| !listed.contains(path.as_str()))
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            // The output folder itself holds the user's files too: only the stat cache's temporary and a
            // declared kind's file (`llms.txt`) there are ever ours.
            let may_be_ours = path.contains('/') || is_temporary(name) || declared_kind_at(name).is_some();
            // Read as every file of the sync is: one swapped for a pipe since the walk is not waited on.
            let deletable = || {
                read_plain(&output_dir.join(path.as_str())).ok().flatten().is_some_and(|b| may_delete(path, &b, owned))
            };
            may_be_ours && (is_temporary(name) || deletable())
        })
        .cloned()
        .collect();
    leftovers.sort();
    leftovers
}

/// Whether a file name is a temporary file of a write in progress (`.NAME.PID.tmp`: a folder's own temporary
/// where the [`SPARE`] cannot serve, one of an earlier version's syncs, a killed build's).
pub(super) fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Makes the generated files match the index: removes generated files the index no longer lists (and the
/// temporary files of a killed build), and writes each artifact whose file is missing or differs. A file
/// whose size and mtime are those the stat cache recorded with the hash the index now expects is taken as
/// unchanged without being read (as sources are); any other file is read and compared, so a page edited
/// or deleted by hand is restored. A file in the way that the tool did not write is left alone and
/// returned. Runs after every build, a no-op one too, so a build killed after its commit is completed by
/// the next: the index is the record, the files follow it.
/// `output_in_project` is the output folder relative to the project root, with its trailing `/`.
pub fn sync_files(
    conn: &Connection,
    output_dir: &Path,
    output_in_project: &str,
    fresh: &HashMap<String, std::sync::Arc<str>>,
    on_disk: DiskWalk,
    mut counters: FileCounters<'_>,
) -> Result<Vec<String>, std::io::Error> {
    let artifacts = crate::store::catalog_objects(conn).map_err(std::io::Error::other)?;
    let (cached, on_disk) = on_disk.finish(output_dir);
    let sources = store::sources_under(conn, output_in_project).map_err(std::io::Error::other)?;
    let mut listed: HashSet<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
    listed.extend(sources.iter().map(String::as_str));
    for path in leftovers(output_dir, &on_disk, &listed, &cached) {
        crate::failpoint("unlink");
        // The index may come from a pull or a commit, and a link planted in `wiki/` may lead out: a file is
        // written or removed only at a plain path reached through no link.
        std::fs::remove_file(store::paths::inside(output_dir, &path)?)?;
        remove_emptied_folders(output_dir, &path);
    }
    let mut blocked = Vec::new();
    let spare = Spare::new(output_dir);
    let mut stats: Vec<(String, FileStat)> = Vec::with_capacity(artifacts.len());
    for artifact in &artifacts {
        let counters = counters.of(&artifact.kind);
        let file = output_dir.join(&artifact.path);
        let now = on_disk.get(&artifact.path).copied().flatten().map(|stat| stat.with_hash(&artifact.hash));
        let cached_stat = cached.get(&artifact.path);
        if let Some(now) = now.as_ref().filter(|now| cached_stat == Some(*now)) {
            counters.unchanged += 1;
            stats.push((artifact.path.clone(), now.clone()));
            continue;
        }
        let text = match fresh.get(&artifact.path) {
            Some(text) => std::borrow::Cow::Borrowed(&**text),
            None => match artifact.text(conn).map_err(std::io::Error::other)? {
                Some(text) => std::borrow::Cow::Owned(text),
                None => continue,
            },
        };
        counters.compared += 1;
        // A file whose size and mtime are as this tool left it holds what the cache says it wrote: it is
        // replaced without being read. Any other is read, so a hand edit is never overwritten unawares.
        let untouched = now
            .zip(cached_stat)
            .is_some_and(|(now, cached)| (now.size, now.mtime_ns) == (cached.size, cached.mtime_ns));
        if untouched {
            spare.write(&store::paths::inside(output_dir, &artifact.path)?, &text)?;
            counters.written += 1;
            if let Some(stat) = file_stat(&file, &artifact.hash) {
                stats.push((artifact.path.clone(), stat));
            }
            continue;
        }
        match read_plain(&file) {
            Ok(Some(bytes)) if bytes == text.as_bytes() => counters.unchanged += 1,
            // Something not a plain file in its place, or a file the user wrote there.
            Ok(found) if found.as_ref().is_none_or(|bytes| !may_replace(&artifact.path, bytes, &cached)) => {
                blocked.push(artifact.path.clone());
                continue;
            }
            _ => {
                spare.write(&store::paths::inside(output_dir, &artifact.path)?, &text)?;
                counters.written += 1;
            }
        }
        if let Some(stat) = file_stat(&file, &artifact.hash) {
            stats.push((artifact.path.clone(), stat));
        }
    }
    write_stat_cache(&spare, output_dir, &stats, &cached)?;
    Ok(blocked)
}

/// Writes the stat cache when the files' `stats` differ from the `cached` ones.
fn write_stat_cache(
    spare: &Spare,
    output_dir: &Path,
    stats: &[(String, FileStat)],
    cached: &HashMap<String, FileStat>,
) -> Result<(), std::io::Error> {
    let changed = stats.len() != cached.len() || stats.iter().any(|(path, stat)| cached.get(path) != Some(stat));
    if changed {
        use std::fmt::Write as _;
        let mut text = String::new();
        for (path, stat) in stats {
            // Written into the text, not through a `format!`'s string of its own (a line a file, every edit).
            let _ = writeln!(text, "{path}\t{}\t{}\t{}", stat.size, stat.mtime_ns, stat.hash);
        }
        crate::failpoint("stat-cache");
        spare.write(&output_dir.join(STAT_CACHE), &text)?;
    }
    Ok(())
}

/// Removes the folders above a removed file that it left empty (a section no page is in any more), up to
/// the layout's own folder (`wiki/`, `indexes/`), which stays: a clean build has no empty folder. A folder
/// that still holds anything, a hand-written page say, stays too.
fn remove_emptied_folders(output_dir: &Path, removed: &str) {
    let mut folder = removed;
    while let Some((parent, _)) = folder.rsplit_once('/') {
        if !parent.contains('/') || std::fs::remove_dir(output_dir.join(parent)).is_err() {
            break;
        }
        folder = parent;
    }
}

/// The file in the output folder every generated file is written through before it takes the file's place,
/// kept from one build to the next. After an exchange it holds the replaced file's old text, and the next
/// file is written over it: a sync that replaces files makes no new inode. A new temporary a file (then one
/// a folder, removed after each sync) made ext4 scan past the inodes just freed for each one (0.5 ms a create
/// in a folder whose block group a removed project had freed). Only the build holding the writer's lock syncs files, so one name serves
/// every process; `.gitignore` (`.*.tmp`) keeps it out of commits. The price: a reader that opened a page
/// before an exchange and still reads it when the spare is next written (the same sync, or the next build)
/// reads the next file's text, or its start over the old page's rest (the spare is written over, then cut),
/// where a removed temporary left it the old page to the end.
pub const SPARE: &str = ".kc-spare.tmp";

/// Writes files through the output folder's [`SPARE`].
pub(super) struct Spare {
    path: PathBuf,
}

impl Spare {
    pub(super) fn new(output_dir: &Path) -> Spare {
        Spare { path: output_dir.join(SPARE) }
    }

    /// Writes `file` through the spare and an exchange or rename, so a reader sees the old file or the new
    /// one. A folder on another file system than the output folder's gets a temporary of its own.
    fn write(&self, file: &Path, text: &str) -> Result<(), std::io::Error> {
        crate::failpoint("write");
        fill(&self.path, text)?;
        crate::failpoint("rename");
        match replace(&self.path, file) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))?;
                replace(&self.path, file).map(drop)
            }
            Err(error) if error.kind() == std::io::ErrorKind::CrossesDevices => write_through_sibling(file, text),
            other => other.map(drop),
        }
    }
}

/// Writes `file` through a temporary in its own folder, removed once it holds the replaced file.
fn write_through_sibling(file: &Path, text: &str) -> Result<(), std::io::Error> {
    let temporary = file.with_file_name(format!(".kc-spare.{}.tmp", std::process::id()));
    fill(&temporary, text)?;
    if replace(&temporary, file)? {
        std::fs::remove_file(&temporary)?;
    }
    Ok(())
}

/// Makes `path` hold `text` alone, never through a symbolic link planted at `path`, nor waiting on a named
/// pipe there (opening one fails), nor into a file linked elsewhere too: an exchanged page the user had
/// hard-linked would take the next file's text in both places. Anything but a plain file of one link there
/// is removed first (removing a link removes the link, not what it names).
fn fill(path: &Path, text: &str) -> Result<(), std::io::Error> {
    use std::io::Write;
    let opened = open_not_following(path, false).and_then(|file| {
        if sole_plain_file(&file.metadata()?) { Ok(file) } else { Err(std::io::ErrorKind::AlreadyExists.into()) }
    });
    let mut file = match opened {
        Ok(file) => file,
        Err(_) => {
            match std::fs::remove_file(path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
            open_not_following(path, true)?
        }
    };
    // Written over from its start, then cut to the text's length: never cut to nothing first, since ext4
    // writes out a file truncated to zero when it is closed (`auto_da_alloc`), a disk write a page for
    // nothing (measured on this machine's ext4: 80–170 µs a file written and exchanged, against 45–50).
    file.write_all(text.as_bytes())?;
    file.set_len(text.len() as u64)
}

/// Opens `path` for writing without following a link or waiting on a pipe there; `new`: creates it, failing
/// if anything is there.
fn open_not_following(path: &Path, new: bool) -> Result<std::fs::File, std::io::Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    options.custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits().cast_signed()).open(path)
}

/// Whether an opened file is a plain file no other name links to.
fn sole_plain_file(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    metadata.is_file() && metadata.nlink() == 1
}

/// Puts `temporary` in `file`'s place. On Linux an existing regular file is exchanged with the temporary one
/// (`renameat2(RENAME_EXCHANGE)`), which then holds the old text (and is written over for the next file,
/// [`Spare`]): renaming over an existing file makes ext4 allocate and start writing the new file's blocks
/// first (`auto_da_alloc`), 0.2–0.5 ms a file on this machine against 0.04–0.15 for the exchange
/// (docs/performance.md). Either way a reader sees the old file or the new one; the stat cache, not the file
/// system, is what lets the next build repair a file a crash left short. A file system that cannot exchange
/// gets the plain rename. Returns whether `temporary` now holds the old file (exchanged).
fn replace(temporary: &Path, file: &Path) -> Result<bool, std::io::Error> {
    #[cfg(target_os = "linux")]
    if std::fs::symlink_metadata(file).is_ok_and(|metadata| metadata.is_file()) {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        if renameat_with(CWD, temporary, CWD, file, RenameFlags::EXCHANGE).is_ok() {
            crate::failpoint("exchanged");
            return Ok(true);
        }
    }
    std::fs::rename(temporary, file).map(|()| false)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::Spare;

    /// The spare is written over from its start, then cut to the text's length: a shorter text after a
    /// longer one leaves nothing of the longer, and an empty text leaves an empty file.
    #[test]
    fn a_filled_file_holds_the_new_text_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".kc-spare.tmp");
        for text in ["a longer text, written first", "short", "", "again"] {
            super::fill(&path, text).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }

    /// A spare in a fresh output folder, and the files `a` and `b` under it written through it twice (`a1`,
    /// `b1`, then `a2`, `b2`); with the inode `a` had after the first round.
    fn written_twice(a: &str, b: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, u64) {
        let output = tempfile::tempdir().unwrap();
        let (a, b) = (output.path().join(a), output.path().join(b));
        let spare = Spare::new(output.path());
        spare.write(&a, "a1").unwrap();
        spare.write(&b, "b1").unwrap();
        let replaced = std::fs::metadata(&a).unwrap().ino();
        spare.write(&a, "a2").unwrap();
        spare.write(&b, "b2").unwrap();
        let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
        assert_eq!((read(&a), read(&b)), ("a2".into(), "b2".into()));
        (output, a, b, replaced)
    }

    fn names(folder: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(folder).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        names
    }

    /// Every file is written through the output folder's one spare: after an exchange it holds the replaced
    /// file, and the next file is written into it, so the rewritten file is the replaced one's inode (no new
    /// inode), whatever folder it is in; a file that did not exist is renamed into place (a missing folder
    /// made); the spare stays for the next build, and nothing else is left.
    #[test]
    fn files_are_written_through_the_output_folders_one_spare() {
        let (output, _, b, replaced) = written_twice("wiki/a.md", "indexes/machine/b.json");
        assert_eq!(std::fs::metadata(&b).unwrap().ino(), replaced, "b's text went into a's replaced file");
        assert_eq!(names(output.path()), [super::SPARE, "indexes", "wiki"]);
        assert_eq!(
            (names(&output.path().join("wiki")), names(&output.path().join("indexes/machine"))),
            (vec!["a.md".to_string()], vec!["b.json".to_string()])
        );
    }

    /// A page the user hard-linked elsewhere, once exchanged into the spare, is not written over with the
    /// next file's text: their copy keeps the page's old text.
    #[test]
    fn a_replaced_file_linked_elsewhere_is_not_written_over() {
        let output = tempfile::tempdir().unwrap();
        let (a, b) = (output.path().join("wiki/a.md"), output.path().join("wiki/b.md"));
        let spare = Spare::new(output.path());
        spare.write(&a, "a1").unwrap();
        let theirs = output.path().join("theirs.md");
        std::fs::hard_link(&a, &theirs).unwrap();
        spare.write(&a, "a2").unwrap();
        spare.write(&b, "b1").unwrap();
        let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
        assert_eq!((read(&theirs), read(&a), read(&b)), ("a1".into(), "a2".into(), "b1".into()));
    }

    /// A folder on another file system than the output folder's (here a link to a folder in `/dev/shm`, a
    /// tmpfs) cannot take the spare: its files are written through a temporary of its own, removed once it is
    /// done, new files and replaced ones alike.
    #[test]
    fn a_folder_on_another_file_system_is_written_through_its_own_temporary() {
        let elsewhere = tempfile::tempdir_in("/dev/shm").unwrap();
        let output = tempfile::tempdir().unwrap();
        let device = |path: &std::path::Path| std::fs::metadata(path).unwrap().dev();
        assert_ne!(device(elsewhere.path()), device(output.path()), "/dev/shm is another file system here");
        std::os::unix::fs::symlink(elsewhere.path(), output.path().join("wiki")).unwrap();
        let spare = Spare::new(output.path());
        let page = output.path().join("wiki/a.md");
        spare.write(&page, "a1").unwrap();
        spare.write(&page, "a2").unwrap();
        assert_eq!(std::fs::read_to_string(&page).unwrap(), "a2");
        assert_eq!(names(elsewhere.path()), ["a.md"]);
    }

    /// A named pipe where the spare goes is removed, not waited on: the write goes through a new spare.
    #[test]
    fn a_pipe_at_the_spares_place_is_replaced_at_once() {
        let output = tempfile::tempdir().unwrap();
        let spare_path = output.path().join(super::SPARE);
        rustix::fs::mknodat(rustix::fs::CWD, &spare_path, rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR, 0)
            .unwrap();
        let (done, wrote) = std::sync::mpsc::channel();
        let page = output.path().join("wiki/a.md");
        let root = output.path().to_path_buf();
        std::thread::spawn(move || done.send(Spare::new(&root).write(&page, "ours").is_ok()));
        let written = wrote.recv_timeout(std::time::Duration::from_secs(60)).expect("the write returns");
        assert!(written);
        assert_eq!(std::fs::read_to_string(output.path().join("wiki/a.md")).unwrap(), "ours");
    }

    /// The walk lists the generated folders' plain files and the output folder's own, each with the size and
    /// mtime std's metadata reads through the whole path (as the stat cache recorded them before the walk),
    /// and `file_stat` the same; nothing behind a link or outside the generated folders.
    #[test]
    fn the_walk_lists_plain_files_with_the_stat_a_path_gives() {
        let output = tempfile::tempdir().unwrap();
        let root = output.path();
        for (path, text) in
            [("wiki/a.md", "a"), ("wiki/section/b.md", "bb"), ("indexes/c.json", "{}"), ("llms.txt", "l")]
        {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::fs::write(root.join("elsewhere/d.md"), "d").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("e.md"), "e").unwrap();
        std::os::unix::fs::symlink(outside.path().join("e.md"), root.join("wiki/linked.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("wiki/linked-folder")).unwrap();

        let found = super::files_on_disk(root);
        let mut paths: Vec<&str> = found.keys().map(String::as_str).collect();
        paths.sort_unstable();
        assert_eq!(paths, ["indexes/c.json", "llms.txt", "wiki/a.md", "wiki/section/b.md"]);
        for (path, stat) in &found {
            let metadata = std::fs::metadata(root.join(path)).unwrap();
            let mtime = metadata.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap();
            let by_std = super::FileStat { size: metadata.len(), mtime_ns: mtime.as_nanos(), hash: "h".into() };
            assert_eq!(stat.map(|stat| stat.with_hash("h")), Some(by_std.clone()), "{path}");
            assert_eq!(super::file_stat(&root.join(path), "h"), Some(by_std), "{path}");
        }
    }

    /// A link planted where the spare goes is not written through: it is removed, and what it named keeps
    /// its text.
    #[test]
    fn a_link_at_the_spares_place_is_not_followed() {
        let output = tempfile::tempdir().unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(outside.path(), "theirs").unwrap();
        std::os::unix::fs::symlink(outside.path(), output.path().join(super::SPARE)).unwrap();
        Spare::new(output.path()).write(&output.path().join("a.md"), "ours").unwrap();
        assert_eq!(std::fs::read_to_string(outside.path()).unwrap(), "theirs");
        assert_eq!(std::fs::read_to_string(output.path().join("a.md")).unwrap(), "ours");
    }
}
