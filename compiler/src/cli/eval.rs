//! `knowledge eval`: retrieval scored on a BEIR-layout collection compiled into a temporary index, or
//! (`--judged`) on the project's own index against questions judged by file and section.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use knowledge::config::Project;
use knowledge::retrieval::eval::Mode;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// `{"_id", "title", "text"}` per line.
    #[arg(long, requires_all = ["queries", "qrels"])]
    corpus: Option<PathBuf>,
    /// `{"_id", "text"}` per line.
    #[arg(long, requires = "corpus")]
    queries: Option<PathBuf>,
    /// `query-id<TAB>corpus-id<TAB>score`, with a header line.
    #[arg(long, requires = "corpus")]
    qrels: Option<PathBuf>,
    /// A judged question set: `id<TAB>question<TAB>PATH[#Section]=GRADE...` (or `none`) per line.
    #[arg(long, conflicts_with = "corpus", value_name = "FILE")]
    judged: Option<PathBuf>,
    /// The index to read with `--judged` (default: the project's).
    #[arg(long, requires = "judged")]
    db: Option<PathBuf>,
    /// With `--judged`: score a project of a Postgres store instead of the local index (one `--project`).
    /// A BEIR collection (`--corpus`) is published to the store under the project `eval` when one is named.
    #[command(flatten)]
    store: super::output::StoreArgs,
    #[arg(long, value_enum, default_value_t = Mode::Keyword)]
    mode: Mode,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Exit 1 when nDCG@10 is below this.
    #[arg(long, value_name = "SCORE")]
    min_ndcg: Option<f64>,
}

pub(crate) fn run(args: EvalArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    let ndcg = if let Some(set) = &args.judged {
        use knowledge::retrieval::eval::judged;
        // Like git's `-C`, a relative path is read from the folder the command runs as if started in.
        let questions = judged::read_questions(&at.start.join(set))?;
        let report = match args.store.open(args.db.as_deref(), at)? {
            Some((mut store, projects)) => {
                let [project] = projects.as_slice() else {
                    anyhow::bail!("--judged scores one project: its judgments name that project's files")
                };
                judged::evaluate_postgres(&mut store, project, &questions, args.mode, at.principal())?
            }
            None => {
                let (_, conn, access) = open_as(args.db, &at.start, at.principal())?;
                judged::evaluate(&conn, &questions, args.mode, &access)?
            }
        };
        print(args.json, &report, |out| print_judged(out, &report))?;
        report.file_ndcg_at_10
    } else {
        // Neither form named: say what each scores, rather than ask for one flag of one form.
        let (Some(corpus), Some(queries), Some(qrels)) = (&args.corpus, &args.queries, &args.qrels) else {
            anyhow::bail!(
                "knowledge eval scores retrieval on either this project's index against a judged question set \
                 (`--judged FILE`, one question and its relevant files per line; docs/eval has examples), or a \
                 test collection in the BEIR layout compiled on its own (`--corpus FILE --queries FILE --qrels FILE`)"
            )
        };
        let mut settings = match Project::discover(&at.start) {
            Ok(project) => project,
            Err(knowledge::config::ConfigError::NotFound(_)) => Project::with_defaults(&at.start),
            Err(error) => return Err(error.into()),
        };
        if let Some(url) = args.store.corpus_url()? {
            settings.config.store.from_command_line = Some(url);
        }
        let report = knowledge::retrieval::eval::evaluate(&settings, corpus, queries, qrels, args.mode)?;
        print(args.json, &report, |out| print_eval(out, &report))?;
        report.ndcg_at_10
    };
    Ok(if args.min_ndcg.is_some_and(|min| ndcg < min) { ExitCode::from(1) } else { ExitCode::SUCCESS })
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

fn print_eval(out: &mut impl Write, report: &knowledge::retrieval::eval::EvalReport) -> std::io::Result<()> {
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

fn print_judged(
    out: &mut impl Write,
    report: &knowledge::retrieval::eval::judged::JudgedReport,
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
            ("ask answered citing a judged file", format!("{:.1} %", report.ask_answered_from_judged * 100.0)),
            ("ask's first sentence citing one", format!("{:.1} %", report.ask_opened_from_judged * 100.0)),
            ("latency", report.latency_ms.to_string()),
        ],
    )
}
