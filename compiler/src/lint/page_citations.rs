//! `stale_citation` and `unresolved_source_ref` for generated pages, against the citations the index
//! records for them (the rules over hand-written pages and sources are queries: `knowledge_queries::lint`).

use super::*;

/// `stale_citation` and `unresolved_source_ref` for generated pages: the index records what each quote
/// cites; a source edited or deleted since the last build leaves the page behind until the next one.
pub(super) fn check_page_citations<'a>(
    project: &Project,
    revision: impl Fn(&str) -> Option<&'a str>,
    citations: &[store::PageCitation],
) -> Vec<Diagnostic> {
    let output = crate::wiki::output_prefix(project);
    let mut diagnostics = Vec::new();
    for citation in citations {
        let finding = match revision(citation.source_path.as_str()) {
            None => Some((
                "unresolved_source_ref",
                Severity::Error,
                format!(
                    "quotes `{}`, which is no longer a source: run `knowledge build` to update the wiki",
                    citation.source_path
                ),
            )),
            Some(current) if current != citation.revision => Some((
                "stale_citation",
                Severity::Warning,
                format!(
                    "quotes `{}` at revision {}, but the source changed since: run `knowledge build` to update the wiki",
                    citation.source_path,
                    &citation.revision[..12.min(citation.revision.len())]
                ),
            )),
            Some(_) => None,
        };
        if let Some((code, severity, message)) = finding {
            diagnostics.push(Diagnostic {
                path: format!("{output}{}", citation.page_path),
                line: citation.note_line,
                column: 1,
                severity,
                code,
                message,
            });
        }
    }
    diagnostics
}
