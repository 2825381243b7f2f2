//! `knowledge init`: a commented kc.toml and the output folder's starter pages.

use std::io::Write;
use std::process::ExitCode;

use super::Invocation;

#[derive(clap::Args)]
pub(crate) struct InitArgs {
    /// Overwrite an existing kc.toml.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(args: InitArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let written = knowledge::config::init::init(&at.start, args.force, at.scope)?;
    let mut out = std::io::stdout().lock();
    for path in written {
        writeln!(out, "wrote {}", path.display())?;
    }
    writeln!(out, "next: edit kc.toml, then run `knowledge build`")?;
    Ok(ExitCode::SUCCESS)
}
