//! `knowledge get` and `knowledge source resolve`: a chunk, a source or a cited line range from the index.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::escape;
use knowledge::retrieval::reader::Resolved;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct GetArgs {
    /// The ref to resolve.
    reference: String,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    #[command(flatten)]
    store: super::output::StoreArgs,
}

#[derive(clap::Args)]
pub(crate) struct ResolveArgs {
    #[command(flatten)]
    get: GetArgs,
    /// Check whether the source may be used for this purpose (`knowledge_answer` or `knowledge_index`)
    /// against its labels and `[permissions.purposes]`, print its provenance, and record the decision in
    /// the run ledger. Exits 1 when the purpose is denied.
    #[arg(long, value_name = "PURPOSE")]
    purpose: Option<String>,
}

/// `knowledge source resolve`: `knowledge get`, or with `--purpose`, a recorded decision.
pub(crate) fn resolve(args: ResolveArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let Some(purpose) = args.purpose else { return run(args.get, at) };
    anyhow::ensure!(
        !args.get.store.named(),
        "--purpose records its decision in the local index; it does not read a Postgres store"
    );
    let project = knowledge::config::Project::discover(&at.start).ok();
    let index = super::output::index_path(args.get.db.clone(), &at.start)?;
    let conn = knowledge::store::open_read_only(&index)?;
    let paths = project.as_ref().map(|p| (p.root.clone(), p.output_dir()));
    let decision = knowledge::retrieval::resolve::decide(
        &conn,
        &args.get.reference,
        at.principal(),
        &purpose,
        paths.as_ref().map(|(root, out)| (root.as_path(), out.as_path())),
    )?;
    drop(conn);
    record_decision(&index, &decision, at.principal())?;
    print(args.get.json, &decision, |out| {
        let p = &decision.provenance;
        let verdict = if decision.allowed { "allowed" } else { "denied" };
        writeln!(out, "{verdict} for {}: {}", decision.purpose, escape(&decision.reason))?;
        writeln!(out, "{}  rev {}  ({})", escape(&p.source_ref), p.revision, p.stale_status)?;
        writeln!(
            out,
            "resolver {}  owner {}  upstream revision {}",
            p.resolver,
            escape(&p.source_owner),
            escape(&p.revision_id)
        )
    })?;
    Ok(if decision.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Records the decision as a run of kind `resolve` with one `source_resolved` event.
fn record_decision(
    index: &std::path::Path,
    decision: &knowledge::retrieval::resolve::SourceDecision,
    principal: Option<&str>,
) -> anyhow::Result<()> {
    let run_id = knowledge::build::run_id(std::time::SystemTime::now());
    let detail = serde_json::json!({
        "purpose": decision.purpose,
        "allowed": decision.allowed,
        "reason": decision.reason,
        "principal": principal,
        "stale_status": decision.provenance.stale_status,
    });
    let event = knowledge::store::LedgerEvent {
        kind: "source_resolved",
        path: decision.provenance.path.clone(),
        revision: Some(decision.provenance.revision.clone()),
        detail: Some(detail.to_string()),
    };
    let status = if decision.allowed { "allowed" } else { "denied" };
    let summary = serde_json::to_string(decision)?;
    knowledge::store::Store::open_for_build(index)?.record_ledger(&run_id, "resolve", status, &summary, &[event])?;
    Ok(())
}

pub(crate) fn run(args: GetArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let resolved: Resolved = match super::output::remote(args.db.as_deref(), at)? {
        Some(mut remote) => serde_json::from_value(
            remote.call("knowledge_get", serde_json::json!({"ref": args.reference})).map_err(anyhow::Error::msg)?,
        )?,
        None => match args.store.open(args.db.as_deref(), at)? {
            Some((mut store, projects)) => {
                knowledge::retrieval::reader::resolve_postgres(&mut store, &projects, &args.reference, at.principal())?
            }
            None => {
                let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
                knowledge::retrieval::reader::resolve(&conn, &args.reference, &access)?
            }
        },
    };
    print(args.json, &resolved, |out| print_resolved(out, &resolved))?;
    Ok(ExitCode::SUCCESS)
}

fn print_resolved(out: &mut impl Write, resolved: &Resolved) -> std::io::Result<()> {
    match (&resolved.chunk, &resolved.source) {
        (Some(chunk), _) => {
            let c = &chunk.citation;
            writeln!(out, "{}", escape(&chunk.title))?;
            writeln!(
                out,
                "{}:{}-{}  rev {}  hash {}",
                escape(&chunk.source.path),
                c.start_line,
                c.end_line,
                chunk.source.revision,
                chunk.source.hash
            )?;
            writeln!(out)?;
            writeln!(out, "{}", knowledge::escape_text(&chunk.text))
        }
        (None, Some(source)) if resolved.lines.is_some() => {
            let lines = resolved.lines.as_ref().expect("checked above");
            writeln!(out, "{}", escape(&source.title))?;
            let stale = if lines.stale { "  (cited at another revision: the lines may have moved)" } else { "" };
            writeln!(
                out,
                "{}#L{}-L{}  rev {}{stale}",
                escape(&source.uri),
                lines.start_line,
                lines.end_line,
                lines.revision
            )?;
            writeln!(out)?;
            write!(out, "{}", knowledge::escape_text(&lines.text))
        }
        (None, Some(source)) => {
            writeln!(out, "{}", escape(&source.title))?;
            writeln!(out, "{}  {}  {} bytes  rev {}", escape(&source.uri), source.mime, source.size, source.revision)?;
            writeln!(out)?;
            for chunk in &source.chunks {
                writeln!(out, "{}  lines {}-{}  {}", chunk.id, chunk.start_line, chunk.end_line, escape(&chunk.title))?;
            }
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

#[derive(clap::Args)]
pub(crate) struct IntroducedArgs {
    /// A cited passage (`REF#L5-L9`, any ref `get` takes) or a text the sources hold (quote it).
    passage: String,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// The index file to read, instead of the one kc.toml names.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

/// `knowledge introduced`: the build (commit, time) that first held a passage.
pub(crate) fn introduced(args: IntroducedArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
    let found = knowledge::retrieval::history::introduced(&conn, &args.passage, &access)?;
    print(args.json, &found, |out| {
        for passage in &found.passages {
            writeln!(out, "{}#L{}-L{}", escape(&passage.uri), passage.start_line, passage.end_line)?;
            for line in passage.text.lines().take(3) {
                writeln!(out, "  > {}", escape(line))?;
            }
            match &passage.introduced {
                Some(run) => {
                    // The recorded commit, shortened by characters: the value is whatever the build was told.
                    let commit_of = |run: &knowledge::retrieval::history::RunOrigin| {
                        run.vcs["commit"].as_str().map(|c| c.chars().take(12).collect::<String>())
                    };
                    let commit = commit_of(run).map_or(String::new(), |c| format!(", commit {c}"));
                    let branch = run.vcs["branch"].as_str().map_or(String::new(), |b| format!(" on {b}"));
                    writeln!(
                        out,
                        "  introduced by build {} ({}{}{})",
                        escape(&run.run_id),
                        escape(&run.finished_at),
                        escape(&commit),
                        escape(&branch)
                    )?;
                    let earlier: Vec<&str> = {
                        let mut runs: Vec<&str> = passage.lines.iter().filter_map(|l| l.run_id.as_deref()).collect();
                        runs.sort_unstable();
                        runs.dedup();
                        runs
                    };
                    if let (Some(before), Some(after)) =
                        (passage.previous_build.as_ref().and_then(commit_of), commit_of(run))
                        && before != after
                    {
                        writeln!(out, "  the change lies in `git log {}..{}`", escape(&before), escape(&after))?;
                    }
                    let mut moved: Vec<&str> = passage.lines.iter().filter_map(|l| l.first_path.as_deref()).collect();
                    moved.dedup();
                    for path in moved {
                        writeln!(out, "  first written in {}", escape(path))?;
                    }
                    if earlier.len() > 1 {
                        writeln!(
                            out,
                            "  its lines came in {} builds, the first {}",
                            earlier.len(),
                            escape(earlier[0])
                        )?;
                    }
                }
                None => writeln!(out, "  no build recorded all of its lines")?,
            }
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
