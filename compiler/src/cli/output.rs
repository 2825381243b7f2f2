//! How results reach people and machines: JSON or each result's human format, with names escaped.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use knowledge::build::BuildSummary;
use knowledge::config::Project;
use knowledge::escape;
use knowledge::reader::Resolved;
use knowledge::search::{Highlight, ResultKind, SearchMode, SearchRequest, SearchResponse};
use knowledge::store::{self, DB_FILE};

/// Prints `value` as pretty JSON, or in its human format.
pub(crate) fn print<T: serde::Serialize>(
    json: bool,
    value: &T,
    human: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, value)?;
        writeln!(out)?;
    } else {
        human(&mut out)?;
    }
    Ok(())
}

/// The index (`--db`, or the one kc.toml names), a read-only connection to it, and the principal's access.
pub(crate) fn open_as(
    db: Option<PathBuf>,
    start: &Path,
    principal: Option<&str>,
) -> anyhow::Result<(PathBuf, rusqlite::Connection, knowledge::access::Access)> {
    let index = index_path(db, start)?;
    let conn = store::open_read_only(&index)?;
    let access = knowledge::access::Access::load(&conn, principal)?;
    Ok((index, conn, access))
}

/// The index to read: `--db`, or the one the project's kc.toml names.
pub(crate) fn index_path(db: Option<PathBuf>, start: &Path) -> anyhow::Result<PathBuf> {
    Ok(match db {
        Some(path) => path,
        None => Project::discover(start)?.output_dir().join(DB_FILE),
    })
}

pub(crate) fn print_resolved(out: &mut impl Write, resolved: &Resolved) -> std::io::Result<()> {
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
            writeln!(out, "{}", chunk.text)
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
            write!(out, "{}", lines.text)
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

pub(crate) fn print_build(out: &mut impl Write, root: &Path, summary: &BuildSummary) -> std::io::Result<()> {
    let s = &summary.sources;
    let c = &summary.chunks;
    let seconds = summary.wall_ms as f64 / 1000.0;
    if summary.wrote {
        writeln!(
            out,
            "compiled {} sources: {} added, {} changed, {} removed, {} unchanged, {} skipped",
            s.scanned - s.skipped,
            s.added,
            s.changed,
            s.removed,
            s.unchanged,
            s.skipped
        )?;
        writeln!(
            out,
            "chunks: {} computed, {} reused, {} deleted, {} in the index",
            c.computed, c.reused, c.deleted, c.total
        )?;
    } else {
        writeln!(out, "nothing changed: {} sources up to date, {} skipped", s.unchanged, s.skipped)?;
    }
    let (p, i) = (&summary.pages, &summary.shards);
    if p.rendered + p.written + p.deleted + i.rendered + i.written + i.deleted > 0 {
        writeln!(
            out,
            "wiki: {} pages rendered, {} written, {} unchanged, {} deleted; {} index files written",
            p.rendered, p.written, p.unchanged, p.deleted, i.written
        )?;
    }
    if let Some(e) = &summary.embeddings {
        writeln!(
            out,
            "embeddings ({}{}): {} computed, {} reused, {} pending, {} deleted{}",
            e.model,
            if e.fake { ", fake: for tests only" } else { "" },
            e.computed,
            e.reused,
            e.pending,
            e.deleted,
            // The provider's speed, where it did enough work to say.
            if e.computed > 0 && e.ms >= 100 {
                format!(" ({:.1} chunks/s)", e.computed as f64 * 1000.0 / e.ms as f64)
            } else {
                String::new()
            }
        )?;
    }
    let index = summary.index.strip_prefix(root).unwrap_or(&summary.index);
    writeln!(out, "index: {} ({seconds:.2} s)", index.display())
}

/// A search as the CLI runs it: on the index `--db` names or the project's, as the principal, with terminal
/// highlighting unless the answer is JSON. Returns the connection and access for what follows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cli_search(
    db: Option<PathBuf>,
    start: &Path,
    principal: Option<&str>,
    query: &str,
    mode: SearchMode,
    limit: usize,
    kinds: Vec<ResultKind>,
    json: bool,
) -> anyhow::Result<(rusqlite::Connection, knowledge::access::Access, SearchResponse)> {
    let (index, conn, access) = open_as(db, start, principal)?;
    let highlight = if !json && std::io::stdout().is_terminal() { Highlight::Ansi } else { Highlight::Markdown };
    let request = SearchRequest { query: query.to_string(), mode, limit, kinds, highlight };
    let response = knowledge::search::search(&conn, &request, &access)
        .with_context(|| format!("searching `{}`", index.display()))?;
    Ok((conn, access, response))
}

/// Queues an embedding job for the configured model in the project's index.
pub(crate) fn enqueue(project: &Project, full: bool) -> anyhow::Result<String> {
    let embedder = knowledge::embeddings::configured(project).map_err(anyhow::Error::msg)?;
    let embedder = embedder.context("[embeddings] provider is `none`: there is nothing to reindex")?;
    let index = project.output_dir().join(knowledge::store::DB_FILE);
    // Only an index this binary can read gets a job; otherwise a build must come first.
    knowledge::store::open_read_only(&index)?;
    Ok(knowledge::store::Store::open_for_build(&index)?.enqueue_embeddings(embedder.model(), full)?)
}

/// One line per build of `--watch`: what changed, what was derived again, how long from the first change
/// to the committed index; or one JSON object per line with `--json`. Warnings go to stderr.
pub(crate) fn print_rebuild(json: bool, root: &Path, rebuild: &knowledge::watch::Rebuild) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let ms = rebuild.latency.as_secs_f64() * 1000.0;
    let changed: Vec<String> = rebuild.changed.iter().map(|path| escape(path).into_owned()).collect();
    match &rebuild.outcome {
        Err(error) => {
            writeln!(std::io::stderr(), "error: {}", escape(error))?;
            if json {
                let line = serde_json::json!({"changed": rebuild.changed, "error": error, "latency_ms": ms});
                writeln!(out, "{line}")?;
            }
        }
        Ok(summary) if json => {
            let mut line = serde_json::to_value(summary).map_err(std::io::Error::other)?;
            line["changed"] = serde_json::json!(rebuild.changed);
            line["latency_ms"] = serde_json::json!(ms);
            writeln!(out, "{line}")?;
        }
        Ok(summary) if rebuild.changed.is_empty() => print_build(&mut out, root, summary)?,
        Ok(summary) => {
            let (s, c, p) = (&summary.sources, &summary.chunks, &summary.pages);
            let what = if summary.wrote {
                format!(
                    "{} added, {} changed, {} removed; {} chunks computed, {} reused; {} queries; {} pages rendered",
                    s.added, s.changed, s.removed, c.computed, c.reused, summary.queries.executed, p.rendered
                )
            } else {
                "nothing to rebuild".to_string()
            };
            writeln!(out, "{ms:.1} ms  {}: {what}", changed.join(", "))?;
        }
    }
    if let Ok(summary) = &rebuild.outcome {
        let mut stderr = std::io::stderr().lock();
        for skipped in &summary.skipped {
            writeln!(stderr, "warning: skipped `{}`: {}", escape(&skipped.path), escape(&skipped.reason))?;
        }
    }
    out.flush()
}

pub(crate) fn print_search(out: &mut impl Write, response: &SearchResponse) -> std::io::Result<()> {
    if response.results.is_empty() {
        return writeln!(out, "no results for {:?}", response.query);
    }
    for (rank, result) in response.results.iter().enumerate() {
        let c = &result.citation;
        let lines = if c.start_line == c.end_line {
            format!("{}", c.start_line)
        } else {
            format!("{}-{}", c.start_line, c.end_line)
        };
        writeln!(out, "{}. {}", rank + 1, escape(&result.title))?;
        writeln!(
            out,
            "   {}:{}  rev {}  score {:.3}",
            escape(&result.source.path),
            lines,
            &result.source.revision[..12],
            result.score
        )?;
        for line in result.snippet.lines().filter(|l| !l.trim().is_empty()) {
            writeln!(out, "   {}", line.trim_end())?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// A report as a header line and aligned `label value` rows.
fn print_report(out: &mut impl Write, header: &str, rows: &[(&str, String)]) -> std::io::Result<()> {
    writeln!(out, "{header}")?;
    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    for (label, value) in rows {
        writeln!(out, "{label:<width$} {value}")?;
    }
    Ok(())
}

pub(crate) fn print_eval(out: &mut impl Write, report: &knowledge::eval::EvalReport) -> std::io::Result<()> {
    let header = format!("{} queries over {} documents, mode {:?}", report.queries, report.documents, report.mode);
    print_report(
        out,
        &header,
        &[
            ("nDCG@10", format!("{:.4}", report.ndcg_at_10)),
            ("Recall@10", format!("{:.4}", report.recall_at_10)),
            ("Recall@100", format!("{:.4}", report.recall_at_100)),
            ("MRR@10", format!("{:.4}", report.mrr_at_10)),
            ("latency", report.latency_ms.to_string()),
        ],
    )
}

pub(crate) fn print_judged(
    out: &mut impl Write,
    report: &knowledge::eval::judged::JudgedReport,
) -> std::io::Result<()> {
    let header = format!(
        "{} answerable and {} unanswerable questions, mode {:?}",
        report.questions, report.unanswerable, report.mode
    );
    print_report(
        out,
        &header,
        &[
            ("file nDCG@10", format!("{:.4}", report.file_ndcg_at_10)),
            ("file nDCG@10, pages as sources", format!("{:.4}", report.file_ndcg_at_10_pages_as_sources)),
            ("file Recall@10", format!("{:.4}", report.file_recall_at_10)),
            ("file MRR@10", format!("{:.4}", report.file_mrr_at_10)),
            ("chunk nDCG@10", format!("{:.4}", report.chunk_ndcg_at_10)),
            ("pages in the top 10", format!("{:.1} %", report.non_source_share_at_10 * 100.0)),
            (
                "ask answered / declined",
                format!("{:.1} % / {:.1} %", report.ask_answered * 100.0, report.ask_declined * 100.0),
            ),
            ("latency", report.latency_ms.to_string()),
        ],
    )
}
