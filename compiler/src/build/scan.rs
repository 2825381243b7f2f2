//! The scan: the walk, the notes, and the stat and content checks that sort every file by what a build
//! must do with it, before any query runs. Shared by `knowledge build`, `--check` and `knowledge lint`.

use std::collections::HashSet;
use std::time::{Instant, SystemTime};

use knowledge_queries::{SourceRef, content_hash};
use rayon::prelude::*;

use super::rows::LabelRules;
use super::{Reporter, SourceCounters};
use crate::config::Project;
use crate::sources::{self, FoundFile, Skipped};
use crate::store::{Prior, PriorSource, StatRow};
use crate::wiki;

/// Below this many files to read the scan reads them on its own thread (an edit reads one or a few): rayon's
/// pool costs more to start than a second core saves on one file (measured); 32 is a guess, not tuned.
const PARALLEL_READ_FROM: usize = 32;

/// A source to (re-)derive this build.
pub(crate) struct Pending {
    pub(crate) found: FoundFile,
    pub(crate) text: String,
    pub(crate) revision: String,
    pub(crate) prior: Option<PriorSource>,
}

/// What the walk and the change checks found, before any query runs.
pub(crate) struct Scan {
    pub(crate) counters: SourceCounters,
    pub(crate) skipped: Vec<Skipped>,
    /// Sources whose size and mtime match their row: not read.
    pub(crate) unchanged: Vec<String>,
    /// Sources to derive: new, changed, or all of them when the index cannot be trusted.
    pub(crate) pending: Vec<Pending>,
    /// Sources read because their stat moved, whose content is unchanged.
    pub(crate) stats: Vec<StatRow>,
    /// Sources in the index that are gone, unreadable or no longer selected.
    pub(crate) removed: Vec<String>,
    pub(crate) scan_ms: u64,
    pub(crate) read_ms: u64,
    /// When the walk began, in nanoseconds since the epoch: stored with the index for the racy-stat check.
    pub(crate) started_ns: i64,
    /// After [`Walking::WalkAndKeep`], the walk (generated pages left out, before notes and ingested sources
    /// join it), to be kept.
    pub(crate) to_keep: Option<sources::Walk>,
}

/// How a build finds its files.
pub(crate) enum Walking<'a> {
    /// Walk the project.
    Walk,
    /// Walk it, leaving out these generated files (project-relative, as the caller keeps them), and hand
    /// the walk back (`Scan::to_keep`), to be kept.
    WalkAndKeep(&'a HashSet<String>),
    /// The walk a kept one brought up to date (which stays kept), generated pages already left out.
    Kept(sources::Walk),
}

/// Walks the project and sorts every file by what a build must do with it. Reads only files whose size or
/// mtime moved (or every file, when `full_rebuild`).
pub(crate) fn scan(
    project: &Project,
    prior: &Prior,
    full_rebuild: bool,
    reporter: &dyn Reporter,
    walking: Walking<'_>,
) -> Scan {
    let clock = Instant::now();
    let started_ns = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    reporter.stage("scanning", 0);
    let keep = matches!(walking, Walking::WalkAndKeep(_));
    let walk_leaving_out = |generated: &HashSet<String>| {
        let mut walk = sources::walk(project, prior.sources.len());
        walk.files.retain(|found| !generated.contains(&found.path));
        walk
    };
    let mut walk = match walking {
        Walking::Kept(walk) => walk,
        Walking::WalkAndKeep(generated) => walk_leaving_out(generated),
        Walking::Walk => walk_leaving_out(&wiki::generated_in_project(project, &prior.generated)),
    };
    let to_keep = keep.then(|| walk.clone());
    add_notes(project, &mut walk);
    add_ingested(project, &mut walk);
    reporter.finish_stage();
    let mut counters = SourceCounters {
        scanned: (walk.files.len() + walk.skipped.len()) as u64,
        skipped: walk.skipped.len() as u64,
        ..SourceCounters::default()
    };
    let mut skipped = walk.skipped;
    let (to_read, mut unchanged) = split_by_stat(walk.files, prior, full_rebuild);
    counters.unchanged = unchanged.len() as u64;
    counters.hashed = to_read.len() as u64;
    let scan_ms = crate::elapsed_ms(clock);

    let clock = Instant::now();
    reporter.stage("reading", to_read.len() as u64);
    let read_one = |found: FoundFile| {
        let text = sources::read_text(&found);
        reporter.advance(1);
        (found, text)
    };
    // A few files (an edit's) are read on this thread: starting rayon's pool costs more than they take.
    let read: Vec<(FoundFile, Result<String, sources::NotText>)> = if to_read.len() < PARALLEL_READ_FROM {
        to_read.into_iter().map(read_one).collect()
    } else {
        to_read.into_par_iter().map(read_one).collect()
    };
    reporter.finish_stage();

    let (pending, stats, present) =
        sort_read(project, prior, full_rebuild, read, &mut counters, &mut skipped, &mut unchanged);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let mut removed: Vec<String> = prior.sources.keys().filter(|path| !present.contains(*path)).cloned().collect();
    removed.sort();
    counters.removed = removed.len() as u64;
    Scan {
        counters,
        skipped,
        unchanged,
        pending,
        stats,
        removed,
        scan_ms,
        read_ms: crate::elapsed_ms(clock),
        started_ns,
        to_keep,
    }
}

/// Sorts the files read by what the build must do with each: derive it again (`pending`: added or changed),
/// refresh its stat row (`stats`: same content, moved stat), or nothing (`unchanged`); files that are no
/// source (unreadable, generated, kept out of the index) are `skipped`. Also every path still present.
#[allow(clippy::type_complexity)]
fn sort_read(
    project: &Project,
    prior: &Prior,
    full_rebuild: bool,
    read: Vec<(FoundFile, Result<String, sources::NotText>)>,
    counters: &mut SourceCounters,
    skipped: &mut Vec<Skipped>,
    unchanged: &mut Vec<String>,
) -> (Vec<Pending>, Vec<StatRow>, HashSet<String>) {
    let index_gate = IndexGate::new(project);
    let mut pending = Vec::new();
    let mut stats = Vec::new();
    let mut present: HashSet<String> = unchanged.iter().cloned().collect();
    for (found, text) in read {
        let text = match text {
            Ok(text) => text,
            Err(reason) => {
                counters.skipped += 1;
                skipped.push(Skipped::new(found.path, reason.to_string()));
                continue;
            }
        };
        // A page an earlier build generated, which this index does not list (its index was deleted):
        // compiler output, not a source.
        if wiki::in_wiki_folder(project, &found.path) && wiki::looks_generated(&text) {
            counters.scanned -= 1;
            continue;
        }
        if let Some((label, labels)) = index_gate.denied(&found.path, &text) {
            counters.skipped += 1;
            let reason =
                format!("labelled `{label}`, which `[permissions.purposes.knowledge_index]` keeps out of the index");
            skipped.push(Skipped { labels: Some(labels), ..Skipped::new(found.path, reason) });
            continue;
        }
        present.insert(found.path.clone());
        let revision = content_hash(text.as_bytes());
        let prior_source = prior.sources.get(&found.path).cloned();
        match &prior_source {
            Some(p) if !full_rebuild && p.revision == revision => {
                counters.unchanged += 1;
                // A racy file read again with its stat unchanged has nothing to refresh.
                if (p.size, p.mtime_ns) == (found.size, found.mtime_ns) {
                    unchanged.push(found.path);
                } else {
                    stats.push(StatRow { path: found.path, size: found.size, mtime_ns: found.mtime_ns });
                }
            }
            Some(_) => {
                counters.changed += 1;
                pending.push(Pending { found, text, revision, prior: prior_source });
            }
            None => {
                counters.added += 1;
                pending.push(Pending { found, text, revision, prior: None });
            }
        }
    }
    (pending, stats, present)
}

/// Notes are sources too: `knowledge://item/ID`, with the note's text inline. Each takes the notes file's
/// mtime, so any change to the file (a hand edit included) re-reads its notes, and the content hash decides
/// which changed. A notes file that cannot be read is reported as skipped, and its notes lose their rows.
fn add_notes(project: &Project, walk: &mut sources::Walk) {
    let output_dir = project.output_dir();
    let file = output_dir.join(crate::sources::notes::NOTES_FILE);
    let mtime_ns = std::fs::metadata(&file).map_or(0, |metadata| sources::mtime_ns(&metadata));
    match crate::sources::notes::load(&output_dir) {
        Ok(notes) => walk.files.extend(notes.into_iter().map(|note| FoundFile {
            path: SourceRef::note(&note.id).path(),
            absolute: file.clone(),
            size: note.text.len() as u64,
            mtime_ns,
            inline: Some(note.text),
        })),
        Err(error) => {
            walk.skipped.push(Skipped::new(crate::sources::notes::NOTES_FILE.to_string(), crate::error_chain(&error)))
        }
    }
}

/// The labels `[permissions.purposes.knowledge_index]` denies: a source carrying one is not indexed. A
/// change to them or to the label rules changes the fingerprint, so every source is read and judged again.
struct IndexGate {
    rules: LabelRules,
    deny: Vec<String>,
}

impl IndexGate {
    fn new(project: &Project) -> IndexGate {
        let deny = project.config.permissions.denied_for("knowledge_index");
        IndexGate { rules: LabelRules::new(project), deny }
    }

    /// The first denied label of the source at `path` with `text`, read as the build will label it, and all
    /// its labels.
    fn denied(&self, path: &str, text: &str) -> Option<(String, String)> {
        if self.deny.is_empty() {
            return None;
        }
        let front_matter = (knowledge_queries::SourceKind::from_path(path) == knowledge_queries::SourceKind::Markdown)
            .then(|| knowledge_queries::front_matter(text))
            .flatten();
        let labels = self.rules.labels(path, front_matter.as_ref());
        let denied = labels.split(',').find(|label| self.deny.iter().any(|d| d == label))?.to_string();
        Some((denied, labels))
    }
}

/// Ingested sources are sources too, each under its ref with its own text file in the output folder, so
/// the stat check applies to each. A list that cannot be read is reported as skipped, and its sources
/// lose their rows; so does a source whose file is gone.
fn add_ingested(project: &Project, walk: &mut sources::Walk) {
    use crate::sources::ingested::{self, INGESTED_FILE};
    let output_dir = project.output_dir();
    match ingested::load(&output_dir) {
        Ok(list) => {
            for source in list {
                let absolute = match source.text_path(&output_dir) {
                    Ok(absolute) => absolute,
                    Err(error) => {
                        let reason = crate::error_chain(&error);
                        walk.skipped.push(Skipped::new(source.reference, reason));
                        continue;
                    }
                };
                match std::fs::metadata(&absolute) {
                    Ok(metadata) => walk.files.push(FoundFile {
                        path: source.reference,
                        absolute,
                        size: metadata.len(),
                        mtime_ns: sources::mtime_ns(&metadata),
                        inline: None,
                    }),
                    Err(error) => walk.skipped.push(Skipped::new(
                        source.reference,
                        format!("its ingested text `{}` is unreadable: {error}", source.file),
                    )),
                }
            }
        }
        Err(error) => walk.skipped.push(Skipped::new(INGESTED_FILE.to_string(), crate::error_chain(&error))),
    }
}

/// Files whose size and mtime match their row are unchanged without being read, unless the row's mtime is
/// racy: a file modified within [`RACY_NS`] of the moment the last writing build began its scan may be
/// modified again within the same clock tick, at the same size, and its stat would not show it (Git's
/// "racily clean" entries). Those are read and hashed; only their content decides.
fn split_by_stat(files: Vec<FoundFile>, prior: &Prior, full_rebuild: bool) -> (Vec<FoundFile>, Vec<String>) {
    let mut to_read = Vec::new();
    let mut unchanged = Vec::new();
    let racy = |mtime_ns: i64| prior.scan_started_ns.is_some_and(|started| mtime_ns >= started - RACY_NS);
    for found in files {
        match prior.sources.get(&found.path) {
            Some(p) if !full_rebuild && p.size == found.size && p.mtime_ns == found.mtime_ns && !racy(p.mtime_ns) => {
                unchanged.push(found.path);
            }
            _ => to_read.push(found),
        }
    }
    (to_read, unchanged)
}

/// How close to a scan a file's mtime makes its stat untrustworthy: above the coarsest clock tick of the
/// file systems this runs on (Linux updates file times once per scheduler tick, at most 10 ms).
const RACY_NS: i64 = 20_000_000;
