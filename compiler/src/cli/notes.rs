//! `knowledge add` and `knowledge notes list|rm`: the notes store, which the next build indexes.

use std::io::Write;
use std::process::ExitCode;

use knowledge::config::Project;
use knowledge_queries::SourceRef;

use super::Invocation;
use super::output::print;

#[derive(clap::Args)]
pub(crate) struct AddArgs {
    /// The note's text.
    text: String,
}

pub(crate) fn add(args: AddArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let note = knowledge::sources::notes::add(&project.output_dir(), &args.text)?;
    writeln!(std::io::stdout(), "added {} (the next `knowledge build` indexes it)", SourceRef::note(&note.id))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn list(json: bool, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let notes = knowledge::sources::notes::load(&project.output_dir())?;
    print(json, &notes, |out| {
        for note in &notes {
            writeln!(
                out,
                "{}  {}",
                SourceRef::note(&note.id),
                knowledge::escape(note.text.lines().next().unwrap_or_default())
            )?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn remove(id: &str, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let note = knowledge::sources::notes::remove(&project.output_dir(), id)?;
    writeln!(
        std::io::stdout(),
        "removed {} (the next `knowledge build` drops it from the index)",
        SourceRef::note(&note.id)
    )?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn import_legacy(path: Option<std::path::PathBuf>, json: bool, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    let path = match path {
        Some(path) => at.start.join(path),
        None => match std::env::var_os("HOME").filter(|home| !home.is_empty()) {
            Some(home) => std::path::Path::new(&home).join(knowledge::sources::legacy::DEFAULT_PATH),
            None => anyhow::bail!("HOME is not set: name the legacy store (`knowledge import legacy PATH`)"),
        },
    };
    let legacy = knowledge::sources::legacy::read(&path)?;
    let imported = knowledge::sources::notes::import(&project.output_dir(), legacy.notes)?;
    let shown = serde_json::json!({
        "store": path.to_string_lossy(),
        "added": imported.added,
        "updated": imported.updated,
        "unchanged": imported.unchanged,
        "archived_skipped": legacy.archived,
        "empty_skipped": legacy.empty,
        "repeated_skipped": legacy.repeated,
    });
    print(json, &shown, |out| {
        writeln!(
            out,
            "imported `{}`: {} added, {} updated, {} unchanged",
            knowledge::escape(&path.to_string_lossy()),
            imported.added,
            imported.updated,
            imported.unchanged
        )?;
        let skipped = [("archived", legacy.archived), ("empty", legacy.empty), ("with a repeated id", legacy.repeated)];
        for (why, count) in skipped.into_iter().filter(|(_, count)| *count > 0) {
            writeln!(out, "skipped {count} {why}")?;
        }
        if imported.added + imported.updated > 0 {
            writeln!(out, "the next `knowledge build` indexes them as knowledge://item/ID")?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
