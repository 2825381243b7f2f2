//! `knowledge wiki file-answer`: an answer `knowledge ask` recorded, proposed as a hand-written wiki page
//! with its citations, so that a durable answer becomes knowledge the next build indexes and lint checks.
//! The page's footnotes link each source and carry its `file://PATH@REV#L…` ref: once the source changes,
//! lint reports the citation as stale.

use rusqlite::Connection;
use serde::Serialize;

use crate::config::Project;

/// A proposed page: where it would go (project-relative) and its text.
#[derive(Debug, Clone, Serialize)]
pub struct Filing {
    pub run_id: String,
    pub path: String,
    pub markdown: String,
    /// A file is already at `path`; writing would replace it.
    pub exists: bool,
}

/// Why an answer cannot be filed.
#[derive(Debug, thiserror::Error)]
pub enum FilingError {
    #[error("no ask run `{0}` in the index (`knowledge ask` prints its run)")]
    NoRun(String),
    #[error("run `{0}` was recorded without its answer")]
    NoAnswer(String),
    #[error("run `{0}` found no answer: there is nothing to file")]
    NotFound(String),
    #[error("{0}")]
    Index(#[from] rusqlite::Error),
}

/// The page for the answer the ask run `run_id` recorded.
pub fn propose(conn: &Connection, project: &Project, run_id: &str) -> Result<Filing, FilingError> {
    let summary = crate::store::ask_summary(conn, run_id)?;
    let summary = summary.ok_or_else(|| FilingError::NoRun(run_id.to_string()))?;
    let answer: serde_json::Value =
        serde_json::from_str(&summary).map_err(|_| FilingError::NoAnswer(run_id.to_string()))?;
    if answer["found"] != true {
        return Err(FilingError::NotFound(run_id.to_string()));
    }
    let question = answer["question"].as_str().unwrap_or_default().trim();
    let slug = knowledge_queries::wiki::concept_key(question);
    let folder = crate::wiki::wiki_folder(project);
    let path = format!("{folder}/answers/{}.md", if slug.is_empty() { run_id } else { &slug });
    let markdown = page(&answer, question, run_id, &format!("{folder}/answers"));
    let exists = project.root.join(&path).exists();
    Ok(Filing { run_id: run_id.to_string(), path, markdown, exists })
}

/// The page: the question as its title, the answer with its markers as footnotes, and one footnote per
/// citation linking the source and giving its ref.
fn page(answer: &serde_json::Value, question: &str, run_id: &str, folder: &str) -> String {
    let citations = answer["citations"].as_array().cloned().unwrap_or_default();
    let cited: Vec<usize> =
        citations.iter().filter_map(|c| c["n"].as_u64()).filter_map(|n| usize::try_from(n).ok()).collect();
    let text = footnoted(answer["answer"].as_str().unwrap_or_default(), &cited);
    let quoted = serde_json::to_string(question).expect("strings serialize");
    let mut page = format!("---\ntitle: {quoted}\nfiled_from: {run_id}\n---\n\n# {question}\n\n{text}\n\n");
    for citation in &citations {
        let path = citation["path"].as_str().unwrap_or_default();
        let title = citation["title"].as_str().filter(|t| !t.is_empty()).unwrap_or(path);
        page.push_str(&format!(
            "[^{}]: [{title}]({}), {}\n",
            citation["n"],
            knowledge_queries::links::relative_href(folder, path),
            citation["ref"].as_str().unwrap_or_default()
        ));
    }
    page
}

/// The answer with each citation marker (`[1]`, `[1, 4]`) whose numbers are all `cited` written as footnote
/// references (`[^1]`, `[^1][^4]`), against the word before it; any other bracket is left as it is, and so is
/// code (a block an answer shows, a span of a sentence: `v[1]` is no marker).
fn footnoted(text: &str, cited: &[usize]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fences = knowledge_queries::Fences::default();
    for line in text.split_inclusive('\n') {
        if fences.is_code(line) {
            out.push_str(line);
            continue;
        }
        // Outside blocks: the spans between backtick runs alternate prose and code. Not the search's
        // `code_ranges`, where code a snippet's window leaves open runs to its end: here a marker after a
        // stray backtick is still one of the answer's own.
        let mut rest = line;
        while let Some(open) = rest.find('`') {
            footnote_markers(&mut out, &rest[..open], cited);
            let run = rest[open..].len() - rest[open..].trim_start_matches('`').len();
            let fence = &rest[open..open + run];
            let after = &rest[open + run..];
            let span_end = after.find(fence).map_or(0, |close| close + run);
            out.push_str(fence);
            out.push_str(&after[..span_end]);
            rest = &after[span_end..];
        }
        footnote_markers(&mut out, rest, cited);
    }
    out
}

/// [`footnoted`] of a stretch of prose, appended to `out`.
fn footnote_markers(out: &mut String, text: &str, cited: &[usize]) {
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let marker = after.find(']').and_then(|close| {
            let numbers = knowledge_queries::citations::marker_numbers(&after[..close])?;
            numbers.iter().all(|n| cited.contains(n)).then_some((numbers, close))
        });
        match marker {
            Some((numbers, close)) => {
                out.truncate(out.trim_end().len());
                for n in numbers {
                    out.push_str(&format!("[^{n}]"));
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::footnoted;

    #[test]
    fn markers_become_footnotes_and_other_brackets_stay() {
        assert_eq!(
            footnoted("Values are dropped [1]. Moves copy the pointer [1, 3]. Arrays start at [0] [7].", &[1, 3]),
            "Values are dropped[^1]. Moves copy the pointer[^1][^3]. Arrays start at [0] [7]."
        );
    }

    #[test]
    fn brackets_in_code_are_no_markers() {
        let answer =
            "Index it as `v[1]` or ``w[1]`` [1]:\n\n```rust\nlet x = v [1];\n```\n\nAn unclosed ` [1] stays prose [2].";
        assert_eq!(
            footnoted(answer, &[1, 2]),
            "Index it as `v[1]` or ``w[1]``[^1]:\n\n```rust\nlet x = v [1];\n```\n\nAn unclosed `[^1] stays prose[^2]."
        );
    }
}
