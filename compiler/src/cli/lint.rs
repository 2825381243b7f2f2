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
    /// Report the findings the last build stored (in the local index, or in a Postgres store with
    /// `--store`/`--project`, which imply it) instead of linting the working tree; PATHS are then taken as
    /// project-relative paths.
    #[arg(long)]
    stored: bool,
    /// The index file whose stored findings to report (with --stored).
    #[arg(long, value_name = "PATH", requires = "stored")]
    db: Option<PathBuf>,
    #[command(flatten)]
    store: super::output::StoreArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LintFormat {
    Human,
    Json,
    Sarif,
    Github,
}

pub(crate) fn run(args: LintArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let LintArgs { paths, format, error_on_warning, exit_zero, stored: read_stored, db, store } = args;
    let report = if read_stored || store.named() {
        stored(db, store, &paths, at)?
    } else {
        let project = Project::discover(&at.start)?;
        // Like `git -C`, `-C DIR` makes paths relative to DIR.
        let only = knowledge::lint::relative_paths(&project, &at.start, &paths).map_err(anyhow::Error::msg)?;
        knowledge::build::lint::lint(&mut Compiler::new(), &project, &only)
    };
    let mut stderr = std::io::stderr().lock();
    for skipped in &report.skipped {
        writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
    }
    for path in &report.unlinted {
        writeln!(stderr, "warning: not linted: `{}` holds no source that `[sources]` selects", escape(path))?;
    }
    let rendered = match format {
        LintFormat::Human => knowledge::lint::render_human(&report, std::io::stdout().is_terminal()),
        LintFormat::Json => knowledge::lint::render_json(&report),
        LintFormat::Sarif => knowledge::lint::render_sarif(&report),
        LintFormat::Github => knowledge::lint::render_github(&report),
    };
    std::io::stdout().lock().write_all(rendered.as_bytes())?;
    let failed = report.summary.errors > 0 || (error_on_warning && report.summary.warnings > 0);
    Ok(if failed && !exit_zero { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The findings the last build stored, from the index or a Postgres store, as a report the working tree's
/// renderers print. Across several projects each path is prefixed with its project (`PROJECT:PATH`).
fn stored(
    db: Option<PathBuf>,
    store: super::output::StoreArgs,
    paths: &[PathBuf],
    at: &Invocation,
) -> anyhow::Result<knowledge::lint::LintReport> {
    use knowledge::lint::{Diagnostic, LintReport, LintSummary, Severity};
    let paths: Vec<String> = paths
        .iter()
        .map(|path| path.to_string_lossy().trim_start_matches("./").trim_end_matches('/').to_string())
        .collect();
    let (results, projects) = match store.open(db.as_deref(), at)? {
        Some((mut store, projects)) => {
            let results = knowledge::retrieval::reader::lint_results_postgres(
                &mut store,
                &projects,
                &paths,
                Severity::Info,
                at.principal(),
            )?;
            (results, projects.len())
        }
        None => {
            let (_, conn, access) = super::output::open_as(db, &at.start, at.principal())?;
            (knowledge::retrieval::reader::lint_results(&conn, &paths, Severity::Info, &access)?, 1)
        }
    };
    let mut summary = LintSummary::default();
    let mut files = std::collections::HashSet::new();
    let diagnostics: Vec<Diagnostic> = results
        .findings
        .into_iter()
        .filter_map(|finding| {
            let severity = Severity::parse(&finding.severity)?;
            match severity {
                Severity::Error => summary.errors += 1,
                Severity::Warning => summary.warnings += 1,
                Severity::Info => summary.info += 1,
            }
            let path = match (&finding.project, projects) {
                (Some(project), 2..) => format!("{project}:{}", finding.path),
                _ => finding.path,
            };
            files.insert(path.clone());
            // A rule this binary does not know (a store written by a newer one) keeps its code in the message.
            let (code, message) = match knowledge::lint::rule(&finding.code) {
                Some(rule) => (rule.code, finding.message),
                None => ("unknown", format!("[{}] {}", finding.code, finding.message)),
            };
            Some(Diagnostic { path, line: finding.line, column: finding.column, severity, code, message })
        })
        .collect();
    summary.files = files.len();
    if results.run_id.is_none() && projects == 1 {
        writeln!(std::io::stderr(), "warning: no build stored lint findings (`[lint] on_build = false`?)")?;
    }
    Ok(LintReport { diagnostics, summary, skipped: Vec::new(), unlinted: Vec::new() })
}
