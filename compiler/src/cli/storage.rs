//! `knowledge storage status`: where the index and its artifacts are, locally and in object storage, and
//! whether the two agree. Reads only.

use std::io::Write;
use std::process::ExitCode;

use clap::Subcommand;
use knowledge::build::remote::{Remote, local_objects};
use knowledge::config::Project;
use knowledge::escape;
use serde::Serialize;

use super::Invocation;
use super::output::print;

#[derive(Subcommand)]
pub(crate) enum StorageCommand {
    /// The local output folder and index, the artifact catalog by kind, and the remote prefix
    /// (`[output] artifacts`) with what it lacks or holds beyond the catalog. Exits 1 when they differ or the
    /// remote cannot be read.
    Status {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct Status {
    output_dir: String,
    index: String,
    index_bytes: u64,
    /// Artifacts by kind: count and bytes.
    artifacts: std::collections::BTreeMap<String, (u64, u64)>,
    remote: Option<RemoteStatus>,
}

#[derive(Serialize, Default)]
struct RemoteStatus {
    target: String,
    /// The build that last wrote the remote catalog.
    run_id: Option<String>,
    in_sync: u64,
    to_upload: Vec<String>,
    to_delete: Vec<String>,
    error: Option<String>,
}

pub(crate) fn run(command: StorageCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    let StorageCommand::Status { json } = command;
    let project = Project::discover(&at.start)?;
    let output_dir = project.output_dir();
    let index = output_dir.join(knowledge::store::DB_FILE);
    let conn = knowledge::store::open_read_only(&index)?;
    let local = local_objects(&conn, &output_dir).map_err(anyhow::Error::msg)?;
    let mut artifacts = std::collections::BTreeMap::new();
    for object in &local {
        let entry: &mut (u64, u64) = artifacts.entry(object.kind.clone()).or_default();
        *entry = (entry.0 + 1, entry.1 + object.size);
    }
    let remote = project.config.output.artifacts.as_ref().map(|target| {
        let mut status = RemoteStatus { target: target.get_ref().clone(), ..RemoteStatus::default() };
        match Remote::new(target.get_ref()).and_then(|remote| remote.catalog()) {
            Ok((catalog, _)) => {
                status.run_id = catalog.run_id;
                for object in &local {
                    match catalog.objects.get(&object.path) {
                        Some(remote) if remote.hash == object.hash => status.in_sync += 1,
                        _ => status.to_upload.push(object.path.clone()),
                    }
                }
                status.to_delete = catalog
                    .objects
                    .keys()
                    .filter(|path| !local.iter().any(|object| &object.path == *path))
                    .cloned()
                    .collect();
            }
            Err(error) => status.error = Some(error.to_string()),
        }
        status
    });
    let differs =
        remote.as_ref().is_some_and(|r| r.error.is_some() || !r.to_upload.is_empty() || !r.to_delete.is_empty());
    let status = Status {
        output_dir: output_dir.display().to_string(),
        index_bytes: std::fs::metadata(&index).map_or(0, |m| m.len()),
        index: index.display().to_string(),
        artifacts,
        remote,
    };
    print(json, &status, |out| {
        writeln!(out, "output folder {}", escape(&status.output_dir))?;
        writeln!(out, "index {} ({} bytes)", escape(&status.index), status.index_bytes)?;
        for (kind, (count, bytes)) in &status.artifacts {
            writeln!(out, "  {kind}: {count} files, {bytes} bytes")?;
        }
        match &status.remote {
            None => writeln!(out, "remote: none (`[output] artifacts` is not set)"),
            Some(remote) => {
                writeln!(out, "remote {}", escape(&remote.target))?;
                if let Some(error) = &remote.error {
                    return writeln!(out, "  cannot read it: {}", escape(error));
                }
                writeln!(
                    out,
                    "  {} in sync, {} to upload, {} to delete (catalog of {})",
                    remote.in_sync,
                    remote.to_upload.len(),
                    remote.to_delete.len(),
                    remote.run_id.as_deref().unwrap_or("no build")
                )
            }
        }
    })?;
    Ok(if differs { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
