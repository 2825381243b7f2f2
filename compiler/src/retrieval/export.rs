//! `knowledge export`: the index as JSON lines for other tools, in the output folder's `exports/`:
//! `chunks.jsonl` (each chunk with its source's ref, revision, offsets and lines), `pages.jsonl` (the
//! generated pages) and `citations.jsonl` (each page's footnotes, the passages they cite). Chunks are those
//! the principal may read; pages quote only what every principal may read. Each file is written whole or
//! not at all (a temporary file, then a rename), reached through no symbolic link.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Serialize;

use crate::retrieval::access::Access;
use crate::store::export::{self, ExportError};

/// The folder of the output folder that exports go to.
pub const EXPORTS_DIR: &str = "exports";

/// What an export wrote.
#[derive(Debug, Serialize)]
pub struct ExportReport {
    pub files: Vec<ExportedFile>,
}

#[derive(Debug, Serialize)]
pub struct ExportedFile {
    /// Relative to the output folder.
    pub path: String,
    pub rows: u64,
}

/// Writes the three files into `output_dir/exports/`.
pub fn export(conn: &Connection, access: &Access, output_dir: &Path) -> Result<ExportReport, ExportError> {
    let hidden = access.hidden_sources();
    let files = vec![
        write_lines(output_dir, "chunks.jsonl", |out| export::each_chunk(conn, hidden, |row| out.line(&row)))?,
        write_lines(output_dir, "pages.jsonl", |out| export::each_page(conn, |row| out.line(&row)))?,
        write_lines(output_dir, "citations.jsonl", |out| export::each_citation(conn, |row| out.line(&row)))?,
    ];
    Ok(ExportReport { files })
}

/// A file being written, a JSON line at a time.
struct Lines {
    writer: std::io::BufWriter<std::fs::File>,
    rows: u64,
}

impl Lines {
    fn line(&mut self, row: &impl Serialize) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.writer, row)?;
        self.writer.write_all(b"\n")?;
        self.rows += 1;
        Ok(())
    }
}

fn write_lines(
    output_dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut Lines) -> Result<(), ExportError>,
) -> Result<ExportedFile, ExportError> {
    let relative = format!("{EXPORTS_DIR}/{name}");
    let target = crate::store::paths::inside(output_dir, &relative).map_err(std::io::Error::from)?;
    let folder = target.parent().expect("a file in exports/").to_path_buf();
    std::fs::create_dir_all(&folder)?;
    let temporary: PathBuf = folder.join(format!(".{name}.{}.tmp", std::process::id()));
    let file = std::fs::File::create(&temporary)?;
    let mut lines = Lines { writer: std::io::BufWriter::new(file), rows: 0 };
    let filled = fill(&mut lines).and_then(|()| lines.writer.flush().map_err(ExportError::from));
    if let Err(error) = filled {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    // Checked again: a link could have been planted while the file was written.
    crate::store::paths::inside(output_dir, &relative).map_err(std::io::Error::from)?;
    std::fs::rename(&temporary, &target)?;
    Ok(ExportedFile { path: relative, rows: lines.rows })
}
