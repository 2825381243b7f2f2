//! `knowledge wiki file-answer RUN_ID [--approve-write]`: a recorded answer proposed as a hand-written wiki
//! page (a dry run that prints the page and where it would go), written only with `--approve-write`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use knowledge::config::Project;

use super::Invocation;
use super::output::{open_as, print};

#[derive(Subcommand)]
pub(crate) enum WikiCommand {
    /// Propose the answer an ask run recorded as a wiki page with its citations; write it only with
    /// --approve-write. The next build indexes it like any hand-written page.
    FileAnswer {
        /// The run `knowledge ask` printed (`run_id` in its JSON).
        run_id: String,
        /// Write the page.
        #[arg(long)]
        approve_write: bool,
        /// With --approve-write: replace a page already at that path (a hand-edited one too).
        #[arg(long, requires = "approve_write")]
        replace: bool,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(command: WikiCommand, at: &Invocation) -> anyhow::Result<ExitCode> {
    let WikiCommand::FileAnswer { run_id, approve_write, replace, json } = command;
    let project = Project::discover(&at.start)?;
    let (_, conn, _) = open_as(None, &at.start, at.principal())?;
    let filing = knowledge::retrieval::filing::propose(&conn, &project, &run_id).map_err(anyhow::Error::msg)?;
    drop(conn);
    if approve_write {
        // A link planted on the way (`wiki/answers -> /elsewhere`) would put the page outside the project.
        let target = knowledge::store::paths::inside(&project.root, &filing.path)?;
        if filing.exists && !replace {
            anyhow::bail!(
                "`{}` already exists (a page filed earlier, or edited by hand): it is not replaced unless you add --replace",
                knowledge::escape(&filing.path)
            );
        }
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).with_context(|| format!("creating `{}`", folder.display()))?;
        }
        // The folders just made could not be links, but one made by someone else meanwhile could.
        knowledge::store::paths::inside(&project.root, &filing.path)?;
        // Written whole or not at all: a temporary file beside it, then a rename.
        let temporary = target.with_extension("md.tmp");
        std::fs::write(&temporary, &filing.markdown).with_context(|| format!("writing `{}`", temporary.display()))?;
        std::fs::rename(&temporary, &target).with_context(|| format!("writing `{}`", target.display()))?;
    }
    print(json, &serde_json::json!({"filing": filing, "written": approve_write}), |out| {
        if approve_write {
            writeln!(out, "wrote {}; the next build indexes it", knowledge::escape(&filing.path))
        } else {
            let replace = if filing.exists { " (a file is there: it is replaced only with --replace)" } else { "" };
            writeln!(out, "would write {}{replace}:\n", knowledge::escape(&filing.path))?;
            write!(out, "{}", filing.markdown)?;
            writeln!(out, "\nRun again with --approve-write to write it.")
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
