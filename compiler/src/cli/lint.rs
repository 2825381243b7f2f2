//! `knowledge lint`: the pre-commit check. Read-only; exit 1 on errors (or warnings, if asked).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::build::Compiler;
use knowledge::config::Project;
use knowledge::escape;

use super::Invocation;

#[derive(clap::Args)]
pub(crate) struct LintArgs {
    /// Report findings in these files or folders only (links still resolve against the whole project).
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LintFormat::Human)]
    format: LintFormat,
    /// Exit 1 on warnings too.
    #[arg(long)]
    error_on_warning: bool,
    /// Exit 0 whatever is found.
    #[arg(long)]
    exit_zero: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LintFormat {
    Human,
    Json,
    Sarif,
    Github,
}

pub(crate) fn run(args: LintArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let project = Project::discover(&at.start)?;
    // Like `git -C`, `-C DIR` makes paths relative to DIR.
    let only = knowledge::lint::relative_paths(&project, &at.start, &args.paths).map_err(anyhow::Error::msg)?;
    let report = knowledge::build::lint::lint(&mut Compiler::new(), &project, &only);
    let mut stderr = std::io::stderr().lock();
    for skipped in &report.skipped {
        writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
    }
    for path in &report.unlinted {
        writeln!(stderr, "warning: not linted: `{}` holds no source that `[sources]` selects", escape(path))?;
    }
    let rendered = match args.format {
        LintFormat::Human => knowledge::lint::render_human(&report, std::io::stdout().is_terminal()),
        LintFormat::Json => knowledge::lint::render_json(&report),
        LintFormat::Sarif => knowledge::lint::render_sarif(&report),
        LintFormat::Github => knowledge::lint::render_github(&report),
    };
    std::io::stdout().lock().write_all(rendered.as_bytes())?;
    let failed = report.summary.errors > 0 || (args.error_on_warning && report.summary.warnings > 0);
    Ok(if failed && !args.exit_zero { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
