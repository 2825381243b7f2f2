//! `knowledge ask`: an answer made of cited sentences, or "not found"; the run is recorded in the index.
//! With `--generate`, a provider writes the answer from the context pack, streamed as it is written, and
//! each sentence's citations are checked.

use std::io::Write;
use std::process::ExitCode;

use knowledge::config::Project;
use knowledge::escape;
use knowledge::retrieval::ask::Answer;

use super::Invocation;
use super::output::{open_as, print};

#[derive(clap::Args)]
pub(crate) struct AskArgs {
    question: String,
    /// The budget of the context pack the answer draws on (tokens: ⌈UTF-8 bytes / 4⌉).
    #[arg(long, default_value_t = 1200)]
    max_tokens: usize,
    /// Have a provider write the answer from the context pack (kc.toml's `[providers.NAME]`); every
    /// sentence must cite the pack, and one whose citations do not hold up is marked unsupported.
    #[arg(long)]
    generate: bool,
    /// The provider to ask, by its name in kc.toml (default: the default provider).
    #[arg(long, requires = "generate", value_name = "NAME")]
    provider: Option<String>,
    /// The model to ask, or one of the provider's aliases (default: the provider's model).
    #[arg(long, requires = "generate", value_name = "MODEL")]
    model: Option<String>,
    /// Print the answer as JSON (schema knowledge-answer v1).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: super::output::StoreArgs,
}

pub(crate) fn run(args: AskArgs, at: &Invocation) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = super::output::remote(None, at)? {
        // The server generates when its operator allows it, and records nothing.
        anyhow::ensure!(
            !args.generate,
            "--generate: a remote server generates answers when its operator starts it with --ask-provider"
        );
        let arguments = serde_json::json!({"question": args.question, "max_tokens": args.max_tokens});
        let answer: Answer =
            serde_json::from_value(remote.call("knowledge_ask", arguments).map_err(anyhow::Error::msg)?)?;
        print(args.json, &answer, |out| print_human(out, &answer, None))?;
        return Ok(ExitCode::SUCCESS);
    }
    let provider = if args.generate {
        let project = Project::discover(&at.start)?;
        Some(knowledge::providers::find(&project, args.provider.as_deref()).map_err(anyhow::Error::msg)?)
    } else {
        None
    };
    // On the terminal (not with --json) a generated answer is printed as the model writes it.
    let mut streamed = String::new();
    let mut out = std::io::stdout();
    let mut delta = |text: &str| {
        if !args.json {
            streamed.push_str(text);
            // Escaped as every human output is: a source can ask the model for escape sequences.
            let _ = write!(out, "{}", knowledge::escape_text(text));
            let _ = out.flush();
        }
    };
    let (question, max_tokens, model) = (&args.question, args.max_tokens, args.model.as_deref());
    if let Some((mut store, projects)) = args.store.open(None, at)? {
        // Like a remote server's answer: the store is read, and no run is recorded anywhere.
        let answer = match &provider {
            Some(provider) => knowledge::retrieval::generated::answer_postgres(
                &mut store,
                &projects,
                question,
                max_tokens,
                at.principal(),
                provider,
                model,
                &mut delta,
            )
            .map_err(anyhow::Error::msg)?,
            None => {
                knowledge::retrieval::ask::answer_postgres(&mut store, &projects, question, max_tokens, at.principal())?
            }
        };
        let streamed = (!streamed.is_empty()).then_some(streamed.as_str());
        print(args.json, &answer, |out| print_human(out, &answer, streamed))?;
        return Ok(ExitCode::SUCCESS);
    }
    let (index, conn, access) = open_as(None, &at.start, at.principal())?;
    let mut answer = if let Some(provider) = &provider {
        knowledge::retrieval::generated::answer(&conn, question, max_tokens, &access, provider, model, &mut delta)
            .map_err(anyhow::Error::msg)?
    } else {
        knowledge::retrieval::ask::answer(&conn, &args.question, args.max_tokens, &access)?
    };
    drop(conn);
    if let Err(error) = knowledge::retrieval::ask::record(&index, &mut answer) {
        writeln!(std::io::stderr(), "warning: the answer was not recorded: {}", knowledge::error_chain(&error))?;
    }
    let streamed = (!streamed.is_empty()).then_some(streamed.as_str());
    print(args.json, &answer, |out| print_human(out, &answer, streamed))?;
    Ok(ExitCode::SUCCESS)
}

/// The answer (unless it was `streamed` already, as the model wrote it), its sources, and the sentences
/// whose citations failed.
fn print_human(out: &mut impl Write, answer: &Answer, streamed: Option<&str>) -> std::io::Result<()> {
    if let Some(written) = streamed {
        writeln!(out)?;
        // A reply with no supported sentence does not ship: the answer is "not found", which the reader is
        // told, with why (each unsupported sentence is listed below).
        if !answer.found && !knowledge::retrieval::generated::replied_not_found(written) {
            let why = match answer.sentences.as_deref() {
                Some([]) | None => "the reply holds no sentence",
                Some(_) => "no sentence of the reply is supported by the excerpts",
            };
            writeln!(out, "{} ({why})", answer.answer)?;
        }
    } else {
        writeln!(out, "{}", knowledge::escape_text(&answer.answer))?;
    }
    for citation in &answer.citations {
        writeln!(out, "[{}] {} ({})", citation.n, escape(&citation.reference), escape(&citation.title))?;
    }
    for sentence in answer.sentences.iter().flatten().filter(|s| !s.supported) {
        let problem = sentence.problem.as_deref().unwrap_or_default();
        writeln!(out, "unsupported: \"{}\" ({problem})", escape(&sentence.text))?;
    }
    if let Some(info) = &answer.generated {
        let cost = info.cost_usd.map(|c| format!(", ${c:.6}")).unwrap_or_default();
        writeln!(
            out,
            "written by {} ({}), {} tokens in, {} out{cost}",
            info.model, info.provider, info.input_tokens, info.output_tokens
        )?;
    }
    // The run id is what `knowledge wiki file-answer` takes to file a found answer as a page.
    if let Some(run_id) = &answer.run_id {
        let filing =
            if answer.found { format!(" (file it with `knowledge wiki file-answer {run_id}`)") } else { String::new() };
        writeln!(out, "run {run_id}{filing}")?;
    }
    Ok(())
}
