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
