//! The vector file: one generation's ready vectors as the last build committed them, in a file a search
//! process memory-maps instead of loading every vector from SQLite (1.7 s and 465 MB per process at 69,000
//! chunks). It lives at `cache/vectors/<model hash>.vec` under the output folder, beside the index.
//!
//! It is a cache of the index, never a source of truth: the build writes it after its embedding stage
//! (`follow`), stamped with the model and the run (`last_run`) whose vectors it holds, and a reader uses it
//! only when that stamp matches the index it opened and its sections fit the file; otherwise it loads from
//! SQLite as before. A missing, stale or foreign file makes a search slower, never different; no file,
//! however damaged, makes a search panic or return a row its chunk's row in the index does not confirm.
//!
//! Layout, little-endian: `MAGIC`, then sections each starting at a multiple of 64 bytes (the vectors as
//! f32 rows, the rows' `chunks.seq` as i64, their path and entity as u32 indexes into a string table, the
//! table's u64 end offsets and its UTF-8 bytes), then the header as JSON, its length (u64) and `MAGIC` again.
//! The header comes last so the vectors can be streamed out before their count is known.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::nibbles;
use super::vectors::{Allow, VectorHit, VectorIndex, dot, scan, scan_rows};

const MAGIC: &[u8; 8] = b"KCVECT02";
/// Sections start at multiples of this, so the mapped bytes can be read as f32, i64 and u64 slices.
const ALIGN: u64 = 64;
/// A base of this many rows or more is searched through its 4-bit rows first: below it, scanning the `f32`
/// rows is as fast (docs/embeddings.md).
const QUANTIZED_FROM: usize = 100_000;
/// Rows the 4-bit ranking hands to the exact one.
const CANDIDATES: usize = 200;
/// A row with no entity (a chunk of the text, not an excerpt of a code entity).
const NO_ENTITY: u32 = u32::MAX;

/// Where one section's bytes lie in the file.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Section {
    start: u64,
    len: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    model: String,
    /// The run whose committed index these are the ready vectors of.
    run: String,
    /// A delta's base: the run of the base file it completes (`None` in a base).
    #[serde(default)]
    base_run: Option<String>,
    /// A delta's sources: the paths whose rows it holds in place of the base's (changed or deleted since
    /// the base was written).
    #[serde(default)]
    overridden: Vec<String>,
    dimensions: usize,
    rows: usize,
    strings: usize,
    matrix: Section,
    seqs: Section,
    paths: Section,
    entities: Section,
    ends: Section,
    text: Section,
    /// A base's vectors as 4-bit rows (one scale per row, `nibbles`), which a large base's search scans first.
    #[serde(default)]
    quantized: Option<Quantized>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Quantized {
    /// Rows of `nibbles::row_bytes(dimensions)` bytes.
    rows: Section,
    /// Each row's scale (`f32`): its vector is about `scale × row`.
    scales: Section,
}

/// The file holding `model`'s vectors for the index at `index` (`<output>/knowledge.db`): the base, or the
/// delta that completes it.
fn file_path(index: &Path, model: &str, kind: &str) -> PathBuf {
    let name = &knowledge_queries::content_hash(model.as_bytes())[..16];
    index.with_file_name("cache").join("vectors").join(format!("{name}.{kind}"))
}

/// A delta holding more than this share of the base's rows (1 / N), or this many sources, is folded into a
/// new base: a search scans the base's masked rows for nothing, and the delta is rewritten by every build.
const DELTA_SHARE: usize = 8;
const DELTA_SOURCES: usize = 4096;

/// Brings the vector files in line with the committed index at `index`. When the generation is complete
/// for the last run and no file holds it yet: the sources changed since the base (the last delta's, for a
/// build that follows it, and those this one derived, deleted or wrote entries of: `store::paths_changed_by`)
/// are written as a delta of their rows, so an
/// edit writes its own vectors, not the generation's; a base is written when there is none to follow, or
/// when the delta has grown past `DELTA_SHARE` or `DELTA_SOURCES` (folded from the base's own rows and the index's
/// rows of the changed sources, when the base is the one the delta follows). Files of other models and of an
/// unfinished stage are removed. `prior_run` is the index's last run before this build. On a no-op build
/// this reads two trailers.
///
/// # Errors
///
/// Reading the index, or writing under `cache/vectors/`.
pub fn follow(conn: &Connection, index: &Path, prior_run: Option<&str>) -> Result<(), VectorFileError> {
    let model = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let last_run = crate::store::meta(conn, "last_run")?;
    let embedded_run = crate::store::meta(conn, "embedded_run")?;
    let current = model.as_deref().map(|model| [file_path(index, model, "vec"), file_path(index, model, "delta")]);
    let folder = index.with_file_name("cache").join("vectors");
    // The build removes files in this folder: it must be its own, not a link to somewhere else.
    for own in [folder.parent().expect("cache/ holds it"), &folder] {
        if std::fs::symlink_metadata(own).is_ok_and(|metadata| !metadata.is_dir()) {
            return Err(VectorFileError::NotAFolder(own.to_path_buf()));
        }
    }
    // Files of other generations (a model switch, a provider turned off) and of writes a stopped build left.
    if let Ok(entries) = std::fs::read_dir(&folder) {
        for entry in entries.flatten() {
            if !current.as_ref().is_some_and(|current| current.contains(&entry.path())) {
                remove(&entry.path())?;
            }
        }
    }
    let (Some(model), Some([base_path, delta_path]), Some(run)) = (model, current, last_run) else { return Ok(()) };
    if embedded_run.as_deref() != Some(run.as_str()) {
        // The stage did not finish for the last run: the index lacks vectors the files cannot name either.
        remove(&delta_path)?;
        return remove(&base_path);
    }
    let base = read_header(&base_path).filter(|base| base.model == model && base.base_run.is_none());
    let delta = read_header(&delta_path).filter(|delta| {
        delta.model == model && base.as_ref().is_some_and(|base| delta.base_run.as_ref() == Some(&base.run))
    });
    let held = delta.as_ref().or(base.as_ref()).map(|header| header.run.clone());
    if held.as_deref() == Some(run.as_str()) {
        return Ok(());
    }
    // A delta can follow only the files of the build before this one: what changed in between is not known.
    if let Some(base) = base.filter(|_| held.is_some() && held.as_deref() == prior_run) {
        let mut overridden: std::collections::BTreeSet<String> =
            delta.map(|delta| delta.overridden).unwrap_or_default().into_iter().collect();
        overridden.extend(crate::store::paths_changed_by(conn, &model, &run)?);
        let overridden: Vec<String> = overridden.into_iter().collect();
        if overridden.len() <= DELTA_SOURCES {
            let rows = |each: &mut EachRow<'_>| crate::store::each_ready_vector_of(conn, &model, &overridden, each);
            let stamp = Stamp { model: &model, run: &run, base_run: Some(&base.run), overridden: &overridden };
            let written = write(&delta_path, &stamp, &rows, false)?;
            if written * DELTA_SHARE <= base.rows {
                return Ok(());
            }
        }
        // Folded: the base's own rows of the sources nothing overrides, then the overridden sources' rows from
        // the index, rather than every vector read back from the index (at a million chunks most of a
        // build's time).
        if let Some(file) = MappedFile::open(&base_path).filter(|file| file.header.run == base.run) {
            let masked: HashSet<&str> = overridden.iter().map(String::as_str).collect();
            let rows = |each: &mut EachRow<'_>| {
                file.each_row(|seq, path, entity, vector| {
                    if !masked.contains(path) {
                        each(
                            seq,
                            path.to_string(),
                            entity.map(str::to_string),
                            vector.len() as i64,
                            bytemuck::cast_slice(vector),
                        );
                    }
                });
                crate::store::each_ready_vector_of(conn, &model, &overridden, each)
            };
            write(&base_path, &Stamp { model: &model, run: &run, base_run: None, overridden: &[] }, &rows, true)?;
            return remove(&delta_path);
        }
    }
    let rows = |each: &mut EachRow<'_>| crate::store::each_ready_vector(conn, &model, each);
    write(&base_path, &Stamp { model: &model, run: &run, base_run: None, overridden: &[] }, &rows, true)?;
    remove(&delta_path)
}

/// What [`follow`] would write for the committed index at `index`, as a reason, or `None` when the files
/// already hold its last run (or the index has no complete generation to hold): `knowledge build --check`.
///
/// # Errors
///
/// Reading the index.
pub fn vector_drift(conn: &Connection, index: &Path) -> Result<Option<String>, VectorFileError> {
    let model = crate::store::meta(conn, "embeddings_model")?.filter(|m| !m.is_empty());
    let last_run = crate::store::meta(conn, "last_run")?;
    let embedded_run = crate::store::meta(conn, "embedded_run")?;
    let (Some(model), Some(run)) = (model, last_run) else { return Ok(None) };
    if embedded_run.as_deref() != Some(run.as_str()) {
        return Ok(None);
    }
    let (base_path, delta_path) = (file_path(index, &model, "vec"), file_path(index, &model, "delta"));
    let base = read_header(&base_path).filter(|base| base.model == model && base.base_run.is_none());
    let delta = read_header(&delta_path).filter(|delta| {
        delta.model == model && base.as_ref().is_some_and(|base| delta.base_run.as_ref() == Some(&base.run))
    });
    Ok(match delta.as_ref().or(base.as_ref()) {
        None => Some(format!("`{}` is missing or unreadable: a build would write it", base_path.display())),
        Some(held) if held.run != run => Some(format!(
            "the vector files hold run {}, not the index's {run}: a build would bring them in line",
            held.run
        )),
        Some(_) => None,
    })
}

/// What a file is stamped with.
struct Stamp<'a> {
    model: &'a str,
    run: &'a str,
    base_run: Option<&'a str>,
    overridden: &'a [String],
}

/// Writes a base of `rows` (each `chunks.seq`, path, vector) for `model` and `run` beside `index`, with its
/// 4-bit rows or without: for benchmarks, which measure the search of a file of any size without building
/// an index of that size.
///
/// # Errors
///
/// Writing under `cache/vectors/`.
pub fn write_base(
    index: &Path,
    model: &str,
    run: &str,
    rows: &[(i64, String, Vec<f32>)],
    quantized: bool,
) -> Result<(), VectorFileError> {
    let each = |each: &mut EachRow<'_>| {
        for (seq, path, vector) in rows {
            each(*seq, path.clone(), None, vector.len() as i64, bytemuck::cast_slice(vector));
        }
        Ok(())
    };
    let stamp = Stamp { model, run, base_run: None, overridden: &[] };
    write(&file_path(index, model, "vec"), &stamp, &each, quantized).map(|_| ())
}

fn remove(path: &Path) -> Result<(), VectorFileError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(VectorFileError::Io { path: path.to_path_buf(), error })
        }
        _ => Ok(()),
    }
}

/// Why the vector file could not be brought in line with the index.
#[derive(Debug, thiserror::Error)]
pub enum VectorFileError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("`{}`: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    #[error("`{}` is not a folder (a link?): the build keeps its vector files in a folder of its own; remove it", .0.display())]
    NotAFolder(PathBuf),
}

/// A file's header, read from its trailer alone.
fn read_header(path: &Path) -> Option<Header> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut trailer = [0u8; 16];
    file.read_exact_at(&mut trailer, len.checked_sub(16)?).ok()?;
    let header_len = u64::from_le_bytes(trailer[..8].try_into().ok()?);
    if &trailer[8..] != MAGIC || header_len > len.saturating_sub(16) {
        return None;
    }
    let mut header = vec![0u8; usize::try_from(header_len).ok()?];
    file.read_exact_at(&mut header, len - 16 - header_len).ok()?;
    serde_json::from_slice(&header).ok()
}

/// What is called with each ready vector, as `store::each_ready_vector` calls it: its chunk's `seq`, its
/// source's path, its entity, its dimensions and its bytes.
type EachRow<'a> = dyn FnMut(i64, String, Option<String>, i64, &[u8]) + 'a;
/// The rows a file is written from: calls its argument with each ready vector.
type Rows<'a> = dyn Fn(&mut EachRow<'_>) -> rusqlite::Result<()> + 'a;
/// One row as a search sees it: (`chunks.seq`, path, entity, vector).
pub type MappedRow = (i64, String, Option<String>, Vec<f32>);

/// Writes `rows` to `path` with `stamp`, through a temporary file made durable before it is renamed into
/// place: a reader maps either the old file or the whole new one, and a crash never leaves a file whose
/// stamp is right and whose vectors are not. Returns how many rows it wrote.
fn write(path: &Path, stamp: &Stamp<'_>, rows: &Rows<'_>, with_quantized: bool) -> Result<usize, VectorFileError> {
    let folder = path.parent().expect("the file is inside cache/vectors");
    let io = |error| VectorFileError::Io { path: path.to_path_buf(), error };
    std::fs::create_dir_all(folder).map_err(io)?;
    // Readable as the index beside it is; a temporary file is made owner-only.
    let temporary = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(folder)
        .map_err(io)?;
    let mut out = Counted { inner: BufWriter::with_capacity(1 << 20, temporary.as_file()), at: 0 };
    out.write_all(MAGIC).map_err(io)?;
    out.pad().map_err(io)?;
    let mut header = Header {
        model: stamp.model.to_string(),
        run: stamp.run.to_string(),
        base_run: stamp.base_run.map(str::to_string),
        overridden: stamp.overridden.to_vec(),
        dimensions: 0,
        rows: 0,
        strings: 0,
        matrix: Section { start: out.at, len: 0 },
        seqs: Section::default(),
        paths: Section::default(),
        entities: Section::default(),
        ends: Section::default(),
        text: Section::default(),
        quantized: None,
    };
    let tables = stream_vectors(rows, &mut out, &mut header, with_quantized).map_err(|error| match error {
        Streamed::Rows(error) => VectorFileError::Sqlite(error),
        Streamed::Write(error) => io(error),
    })?;
    header.matrix.len = out.at - header.matrix.start;
    tables.write(&mut out, &mut header, with_quantized).map_err(io)?;
    let json = serde_json::to_vec(&header).expect("the header serializes");
    out.write_all(&json).map_err(io)?;
    out.write_all(&(json.len() as u64).to_le_bytes()).map_err(io)?;
    out.write_all(MAGIC).map_err(io)?;
    out.inner.flush().map_err(io)?;
    drop(out);
    temporary.as_file().sync_data().map_err(io)?;
    temporary.persist(path).map_err(|e| io(e.error))?;
    Ok(header.rows)
}

/// Why streaming the vectors out stopped: reading the rows or writing the file.
enum Streamed {
    Rows(rusqlite::Error),
    Write(std::io::Error),
}

/// Writes each usable row's vector to `out` as `rows` hands them over, and collects what the file holds
/// beside them (with the 4-bit rows when `with_quantized`). The dimensions are the first usable row's; a row of
/// others is skipped, as `MatrixIndex::load` would skip it.
fn stream_vectors<W: Write>(
    rows: &Rows<'_>,
    out: &mut Counted<W>,
    header: &mut Header,
    with_quantized: bool,
) -> Result<Tables, Streamed> {
    let mut tables = Tables::default();
    let mut failed = None;
    // A base's 4-bit rows are made on a thread of their own from batches of the vectors as they stream out:
    // quantizing a million rows takes about as long as writing their bytes.
    std::thread::scope(|scope| {
        let (batches, received) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(2);
        let quantizer = with_quantized.then(|| scope.spawn(move || quantize_batches(&received)));
        let mut batch = Vec::new();
        rows(&mut |seq, path, entity, dimensions, bytes| {
            let dimensions = usize::try_from(dimensions).unwrap_or(0);
            if failed.is_some()
                || dimensions == 0
                || bytes.len() != dimensions * 4
                || (header.dimensions != 0 && dimensions != header.dimensions)
            {
                return;
            }
            header.dimensions = dimensions;
            if let Err(error) = out.write_all(bytes) {
                failed = Some(error);
            }
            tables.push(seq, path, entity);
            if quantizer.is_some() {
                batch.extend_from_slice(bytes);
                if batch.len() >= QUANTIZED_BATCH_BYTES {
                    // A quantizer that stopped panicked; joining it below says so.
                    let _ = batches.send((std::mem::take(&mut batch), dimensions));
                }
            }
        })
        .map_err(Streamed::Rows)?;
        if !batch.is_empty() {
            let _ = batches.send((batch, header.dimensions));
        }
        drop(batches);
        if let Some(quantizer) = quantizer {
            (tables.quantized, tables.scales) = quantizer.join().expect("the quantizer does not panic");
        }
        Ok(())
    })?;
    match failed {
        Some(error) => Err(Streamed::Write(error)),
        None => Ok(tables),
    }
}

/// What a file holds beside its vectors, collected as they stream out and written after them.
#[derive(Default)]
struct Tables {
    seqs: Vec<i64>,
    paths: Vec<u32>,
    entities: Vec<u32>,
    strings: Strings,
    /// A base's 4-bit rows, kept in memory until the vectors are out (an eighth of their size), made by
    /// [`quantize_batches`].
    quantized: Vec<u8>,
    scales: Vec<f32>,
    /// The last row's path and its index: rows come by source, so a path is most often the one before it,
    /// and is then not hashed again.
    last_path: Option<(String, u32)>,
}

/// The bytes of vectors handed to the quantizer at a time (about 2,700 rows of 384 dimensions).
const QUANTIZED_BATCH_BYTES: usize = 4 << 20;

/// The 4-bit rows and scales of the vectors in `batches` (each a run of rows of the given dimensions), in
/// order.
fn quantize_batches(batches: &std::sync::mpsc::Receiver<(Vec<u8>, usize)>) -> (Vec<u8>, Vec<f32>) {
    let (mut rows, mut scales, mut vector) = (Vec::new(), Vec::new(), Vec::new());
    for (bytes, dimensions) in batches {
        for row in bytes.chunks_exact(dimensions * 4) {
            vector.clear();
            vector.extend(row.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            scales.push(nibbles::quantize(&vector, &mut rows));
        }
    }
    (rows, scales)
}

impl Tables {
    /// One row's place beside its vector.
    fn push(&mut self, seq: i64, path: String, entity: Option<String>) {
        self.seqs.push(seq);
        let path = match &self.last_path {
            Some((last, at)) if *last == path => *at,
            _ => {
                let at = self.strings.index(path.clone());
                self.last_path = Some((path, at));
                at
            }
        };
        self.paths.push(path);
        let entity = entity.map_or(NO_ENTITY, |entity| self.strings.index(entity));
        self.entities.push(entity);
    }

    /// The sections after the vectors, and their places in `header`.
    fn write<W: Write>(&self, out: &mut Counted<W>, header: &mut Header, with_quantized: bool) -> std::io::Result<()> {
        fn bytes<T: Copy, const N: usize>(values: &[T], to_le: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            values.iter().flat_map(|&value| to_le(value)).collect()
        }
        header.rows = self.seqs.len();
        header.strings = self.strings.ends.len();
        header.seqs = out.section(&bytes(&self.seqs, i64::to_le_bytes))?;
        header.paths = out.section(&bytes(&self.paths, u32::to_le_bytes))?;
        header.entities = out.section(&bytes(&self.entities, u32::to_le_bytes))?;
        header.ends = out.section(&bytes(&self.strings.ends, u64::to_le_bytes))?;
        header.text = out.section(&self.strings.text)?;
        if with_quantized {
            let rows = out.section(&self.quantized)?;
            let scales = out.section(&bytes(&self.scales, f32::to_le_bytes))?;
            header.quantized = Some(Quantized { rows, scales });
        }
        Ok(())
    }
}

/// A writer that knows its offset, for sections' places.
struct Counted<W: Write> {
    inner: W,
    at: u64,
}

impl<W: Write> Counted<W> {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(bytes)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// Zeroes up to the next multiple of `ALIGN`.
    fn pad(&mut self) -> std::io::Result<()> {
        let padding = (ALIGN - self.at % ALIGN) % ALIGN;
        self.write_all(&vec![0u8; padding as usize])
    }

    fn section(&mut self, bytes: &[u8]) -> std::io::Result<Section> {
        self.pad()?;
        let start = self.at;
        self.write_all(bytes)?;
        Ok(Section { start, len: bytes.len() as u64 })
    }
}

/// Paths and entity slugs, each stored once.
#[derive(Default)]
struct Strings {
    by_text: HashMap<String, u32>,
    /// Where each string ends in `text`.
    ends: Vec<u64>,
    text: Vec<u8>,
}

impl Strings {
    fn index(&mut self, string: String) -> u32 {
        let next = u32::try_from(self.ends.len()).expect("fewer than 2^32 paths");
        *self.by_text.entry(string).or_insert_with_key(|string| {
            self.text.extend_from_slice(string.as_bytes());
            self.ends.push(self.text.len() as u64);
            next
        })
    }
}

/// The vector files of a generation mapped into memory and checked, searched in place: the base, and the
/// delta that completes it, whose sources' rows replace the base's.
pub struct MappedIndex {
    base: MappedFile,
    delta: Option<MappedFile>,
    /// The delta's sources: the base's rows of these paths are stale.
    overridden: HashSet<String>,
}

impl MappedIndex {
    /// The vector files of `model` for the index at `index`, when they hold exactly the ready vectors of
    /// `run` and their sections check out; `None` sends the reader to SQLite.
    #[must_use]
    pub fn open(index: &Path, model: &str, run: &str) -> Option<MappedIndex> {
        let base = MappedFile::open(&file_path(index, model, "vec"))
            .filter(|base| base.header.model == model && base.header.base_run.is_none())?;
        let delta = MappedFile::open(&file_path(index, model, "delta"))
            .filter(|delta| delta.header.model == model && delta.header.base_run.as_ref() == Some(&base.header.run));
        match delta {
            Some(delta) if delta.header.run == run => {
                let overridden = delta.header.overridden.iter().cloned().collect();
                Some(MappedIndex { base, delta: Some(delta), overridden })
            }
            _ if base.header.run == run => Some(MappedIndex { base, delta: None, overridden: HashSet::new() }),
            _ => None,
        }
    }
}

/// The rows the vector files of `model` hold for `run`, as a search sees them (the base's rows of the
/// delta's sources replaced by the delta's), each (`chunks.seq`, path, entity, vector); `None` when no
/// file holds that run. The differential test holds them equal to the index's ready vectors.
#[must_use]
pub fn mapped_rows(index: &Path, model: &str, run: &str) -> Option<Vec<MappedRow>> {
    let mapped = MappedIndex::open(index, model, run)?;
    let mut rows = Vec::new();
    let none = HashSet::new();
    let files = std::iter::once((&mapped.base, &mapped.overridden)).chain(mapped.delta.iter().map(|d| (d, &none)));
    for (file, masked) in files {
        file.each_row(|seq, path, entity, vector| {
            if !masked.contains(path) {
                rows.push((seq, path.to_string(), entity.map(str::to_string), vector.to_vec()));
            }
        });
    }
    Some(rows)
}

impl VectorIndex for MappedIndex {
    fn len(&self) -> usize {
        self.base.header.rows + self.delta.as_ref().map_or(0, |delta| delta.header.rows)
    }

    fn search(&self, query: &[f32], k: usize, allow: &Allow<'_>) -> Vec<VectorHit> {
        let current = |path: &str, entity: Option<&str>| !self.overridden.contains(path) && allow(path, entity);
        let mut hits = if self.overridden.is_empty() {
            self.base.search(query, k, allow)
        } else {
            self.base.search(query, k, &current)
        };
        if let Some(delta) = &self.delta {
            hits.extend(delta.search(query, k, allow));
            hits.sort_by(|a, b| b.similarity.total_cmp(&a.similarity).then(a.seq.cmp(&b.seq)));
            hits.truncate(k);
        }
        hits
    }
}

/// One vector file mapped into memory, its sections checked.
struct MappedFile {
    map: memmap2::Mmap,
    header: Header,
}

impl MappedFile {
    fn open(path: &Path) -> Option<MappedFile> {
        let file = File::open(path).ok()?;
        // SAFETY: the mapping is read-only, and the build never writes into a vector file: it writes a new
        // one and renames it into place, so a mapped file's bytes never change while mapped (the old inode
        // lives on until unmapped). Only another program truncating the file could fault a reader, as with
        // SQLite's own memory map of the index.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        let header = Self::header(&map)?;
        let mapped = MappedFile { map, header };
        mapped.check().then_some(mapped)
    }

    fn header(map: &[u8]) -> Option<Header> {
        let len = map.len();
        let trailer = map.get(len.checked_sub(16)?..)?;
        let header_len = usize::try_from(u64::from_le_bytes(trailer[..8].try_into().ok()?)).ok()?;
        if &trailer[8..] != MAGIC || map.get(..8)? != MAGIC {
            return None;
        }
        let start = len.checked_sub(16)?.checked_sub(header_len)?;
        serde_json::from_slice(&map[start..len - 16]).ok()
    }

    fn bytes(&self, section: Section) -> &[u8] {
        &self.map[section.start as usize..(section.start + section.len) as usize]
    }

    /// Every section inside the file, aligned, of the length the header's counts give: after this no slice
    /// of a section can fail. What the sections hold is checked as it is read (a string index past the
    /// table, or bytes that are not UTF-8, read as an empty path), so opening costs no pass over the rows.
    fn check(&self) -> bool {
        let header = &self.header;
        let bytes = |count: usize, size: usize| count.checked_mul(size).map(|n| n as u64);
        let cells = header.rows.checked_mul(header.dimensions);
        let mut sections = vec![
            (header.matrix, cells.and_then(|n| bytes(n, 4))),
            (header.seqs, bytes(header.rows, 8)),
            (header.paths, bytes(header.rows, 4)),
            (header.entities, bytes(header.rows, 4)),
            (header.ends, bytes(header.strings, 8)),
            (header.text, Some(header.text.len)),
        ];
        if let Some(quantized) = header.quantized {
            let row_bytes = nibbles::row_bytes(header.dimensions);
            sections
                .extend([(quantized.rows, bytes(header.rows, row_bytes)), (quantized.scales, bytes(header.rows, 4))]);
        }
        let fits = sections.iter().all(|(section, expected)| {
            section.start % ALIGN == 0
                && Some(section.len) == *expected
                && section.start.checked_add(section.len).is_some_and(|end| end <= self.map.len() as u64)
        });
        fits && (header.dimensions != 0 || header.rows == 0)
    }

    fn matrix(&self) -> &[f32] {
        bytemuck::cast_slice(self.bytes(self.header.matrix))
    }

    fn seqs(&self) -> &[i64] {
        bytemuck::cast_slice(self.bytes(self.header.seqs))
    }

    fn paths(&self) -> &[u32] {
        bytemuck::cast_slice(self.bytes(self.header.paths))
    }

    fn entities(&self) -> &[u32] {
        bytemuck::cast_slice(self.bytes(self.header.entities))
    }

    fn ends(&self) -> &[u64] {
        bytemuck::cast_slice(self.bytes(self.header.ends))
    }

    /// String `at` of the table; an index past it, ends out of order or bytes that are not UTF-8 give "".
    fn string(&self, at: u32) -> &str {
        let ends = self.ends();
        let end = ends.get(at as usize).copied();
        let start = if at == 0 { Some(0) } else { ends.get(at as usize - 1).copied() };
        let text = self.bytes(self.header.text);
        match (start, end) {
            (Some(start), Some(end)) if start <= end && end <= text.len() as u64 => {
                std::str::from_utf8(&text[start as usize..end as usize]).unwrap_or_default()
            }
            _ => "",
        }
    }

    /// Calls `each` with every row: its `chunks.seq`, path, entity and vector.
    fn each_row<'a>(&'a self, mut each: impl FnMut(i64, &'a str, Option<&'a str>, &'a [f32])) {
        let dimensions = self.header.dimensions.max(1);
        for (at, vector) in self.matrix().chunks_exact(dimensions).enumerate() {
            let (path, entity) = self.row(at);
            each(self.seqs()[at], path, entity, vector);
        }
    }

    /// Row `at`'s source path and entity.
    fn row(&self, at: usize) -> (&str, Option<&str>) {
        let entity = self.entities()[at];
        (self.string(self.paths()[at]), (entity != NO_ENTITY).then(|| self.string(entity)))
    }

    fn search(&self, query: &[f32], k: usize, allow: &Allow<'_>) -> Vec<VectorHit> {
        let dimensions = self.header.dimensions;
        if query.len() != dimensions {
            return Vec::new();
        }
        let row = |at: usize| self.row(at);
        let matrix = self.matrix();
        let found = match self.header.quantized.filter(|_| self.header.rows >= QUANTIZED_FROM) {
            // The 4-bit rows (an eighth of the bytes) rank every row; the best `CANDIDATES` the filter admits
            // are scored again exactly, and the best `k` of those returned.
            Some(quantized) => {
                let rows = self.bytes(quantized.rows);
                let scales: &[f32] = bytemuck::cast_slice(self.bytes(quantized.scales));
                let row_bytes = nibbles::row_bytes(dimensions);
                let query_form = nibbles::Query::new(query);
                let approximate = |range: std::ops::Range<usize>, out: &mut Vec<f32>| {
                    query_form.dots(&rows[range.start * row_bytes..range.end * row_bytes], &scales[range], out);
                };
                let mut candidates: Vec<(usize, f32)> =
                    scan_rows(self.header.rows, k.max(CANDIDATES), allow, &row, &approximate)
                        .into_iter()
                        .map(|(at, _)| (at, dot(&matrix[at * dimensions..(at + 1) * dimensions], query)))
                        .collect();
                candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                candidates.truncate(k);
                candidates
            }
            None => scan(matrix, dimensions, query, k, allow, &row),
        };
        let seqs = self.seqs();
        found
            .into_iter()
            .map(|(at, similarity)| VectorHit { seq: seqs[at], similarity, path: self.row(at).0.to_string() })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = (i64, &'static str, Option<&'static str>, [f32; 2]);

    fn write_rows(path: &Path, stamp: &Stamp<'_>, rows: &[Row]) {
        let each = |each: &mut EachRow<'_>| {
            for (seq, path, entity, vector) in rows {
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                each(*seq, (*path).to_string(), entity.map(str::to_string), 2, &bytes);
            }
            Ok(())
        };
        write(path, stamp, &each, stamp.base_run.is_none()).unwrap();
    }

    fn seqs(index: &MappedIndex, query: [f32; 2], allow: &Allow<'_>) -> Vec<i64> {
        index.search(&query, 10, allow).into_iter().map(|hit| hit.seq).collect()
    }

    #[test]
    fn a_delta_replaces_its_sources_rows_of_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("knowledge.db");
        let base = Stamp { model: "fake:2", run: "r1", base_run: None, overridden: &[] };
        write_rows(
            &file_path(&index, "fake:2", "vec"),
            &base,
            &[(1, "a.md", None, [1.0, 0.0]), (2, "b.md", None, [0.8, 0.6]), (3, "gone.md", Some("fn/x"), [0.6, 0.8])],
        );
        let opened = MappedIndex::open(&index, "fake:2", "r1").unwrap();
        assert_eq!(seqs(&opened, [1.0, 0.0], &|_, _| true), [1, 2, 3]);
        assert_eq!(seqs(&opened, [1.0, 0.0], &|_, entity| entity == Some("fn/x")), [3]);
        assert!(MappedIndex::open(&index, "fake:2", "r2").is_none(), "the base is not the index's run");
        assert!(MappedIndex::open(&index, "fake:3", "r1").is_none(), "another model's");

        let overridden = ["b.md".to_string(), "gone.md".to_string()];
        let delta = Stamp { model: "fake:2", run: "r2", base_run: Some("r1"), overridden: &overridden };
        write_rows(&file_path(&index, "fake:2", "delta"), &delta, &[(7, "b.md", None, [0.0, 1.0])]);
        let opened = MappedIndex::open(&index, "fake:2", "r2").unwrap();
        assert_eq!(seqs(&opened, [1.0, 0.0], &|_, _| true), [1, 7], "b.md's old row and gone.md's are masked");
        assert_eq!(seqs(&opened, [1.0, 0.0], &|path, _| path != "a.md"), [7]);
        let rows = mapped_rows(&index, "fake:2", "r2").unwrap();
        assert_eq!(rows.iter().map(|row| (row.0, row.1.as_str())).collect::<Vec<_>>(), [(1, "a.md"), (7, "b.md")]);
        // A delta for another base is not used: the base alone is behind the index.
        let stray = Stamp { model: "fake:2", run: "r3", base_run: Some("r0"), overridden: &[] };
        write_rows(&file_path(&index, "fake:2", "delta"), &stray, &[]);
        assert!(MappedIndex::open(&index, "fake:2", "r3").is_none());
    }

    #[test]
    fn a_damaged_file_never_panics_and_one_that_does_not_fit_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("knowledge.db");
        let path = file_path(&index, "fake:2", "vec");
        let stamp = Stamp { model: "fake:2", run: "r1", base_run: None, overridden: &[] };
        write_rows(&path, &stamp, &[(1, "a.md", None, [1.0, 0.0]), (2, "b.md", Some("fn/b"), [0.0, 1.0])]);
        let good = std::fs::read(&path).unwrap();
        assert!(MappedIndex::open(&index, "fake:2", "r1").is_some());
        // Every cut, and every byte of the file set to each of a few values: opened or refused, never a
        // panic; what opens answers a search without one.
        let mut opened = 0;
        let mut damaged: Vec<Vec<u8>> = (0..good.len()).map(|cut| good[..cut].to_vec()).collect();
        for at in 0..good.len() {
            for value in [0u8, 0xff, b'9', b'"'] {
                let mut bytes = good.clone();
                bytes[at] = value;
                damaged.push(bytes);
            }
        }
        for bytes in damaged {
            std::fs::write(&path, &bytes).unwrap();
            if let Some(index) = MappedIndex::open(&index, "fake:2", "r1") {
                opened += 1;
                index.search(&[1.0, 0.0], 5, &|_, _| true);
            }
        }
        assert!(opened > 0, "a changed vector component still opens (the file holds no checksum of the vectors)");
        // A header that claims more rows than the file holds.
        let at = good.windows(8).position(|w| w == b"\"rows\":2").unwrap();
        let mut bytes = good.clone();
        bytes[at + 7] = b'9';
        std::fs::write(&path, &bytes).unwrap();
        assert!(MappedIndex::open(&index, "fake:2", "r1").is_none());
    }

    /// A base past `QUANTIZED_FROM` rows is ranked by its 4-bit rows first: it finds what the exact scan of
    /// the same vectors finds, with their exact similarities, the filter applied inside.
    #[test]
    fn the_4_bit_ranking_finds_what_the_exact_scan_finds() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("knowledge.db");
        // 16-dimension vectors whose components are splitmix64 of (seed, dimension): scattered enough that
        // the exact best 10 are not tied (rows tied within the 4-bit rows' rounding, more than `CANDIDATES`
        // of them, would be cut by row order, not by their exact scores).
        let vector = |seed: i64| {
            let component = |d: i64| {
                let mut z = ((seed * 16 + d) as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            };
            let v: Vec<f32> = (0..16).map(component).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
        };
        let rows: Vec<(i64, String, Vec<f32>)> = (0..QUANTIZED_FROM as i64)
            .map(|i| (i, if i % 3 == 0 { "hidden.md".to_string() } else { format!("{}.md", i % 7) }, vector(i)))
            .collect();
        write_base(&index, "fake:16", "r1", &rows, true).unwrap();
        let mapped = MappedIndex::open(&index, "fake:16", "r1").unwrap();
        assert!(mapped.base.header.quantized.is_some());
        let matrix: Vec<f32> = rows.iter().flat_map(|row| row.2.clone()).collect();
        let exact =
            super::super::MatrixIndex::from_matrix(16, matrix, rows.iter().map(|r| (r.0, r.1.clone(), None)).collect());
        for query in [vector(-1), vector(-7), vector(-100), vector(-12_345)] {
            let allow = |path: &str, _: Option<&str>| path != "hidden.md";
            let found = mapped.search(&query, 10, &allow);
            assert_eq!(found, exact.search(&query, 10, &allow), "{query:?}");
            assert_eq!(found.len(), 10);
            assert!(found.iter().all(|hit| hit.path != "hidden.md"));
        }
    }
}
