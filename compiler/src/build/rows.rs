//! A source's rows as the build writes them: the row from its queries' results, its permission labels,
//! the run's events, and the lint findings' rows.

use knowledge_queries::{Chunk, LintFacts, Origin, Outline, SourceKind, SourceRef, wiki::Signal};

use super::Pending;
use crate::config::Project;
use crate::sources::{self, Skipped};
use crate::store::{Prior, RunEvent, SourceRow};

pub(super) fn lint_row(d: crate::lint::Diagnostic) -> crate::store::LintRow {
    crate::store::LintRow {
        path: d.path,
        line: d.line,
        column: d.column,
        severity: d.severity.as_str(),
        code: d.code,
        message: d.message,
    }
}

/// The permission labels of sources: front matter `visibility` and `labels`, and `[permissions] rules`.
pub(super) struct LabelRules {
    globs: globset::GlobSet,
    labels: Vec<Vec<String>>,
}

impl LabelRules {
    pub(super) fn new(project: &Project) -> LabelRules {
        let rules = &project.config.permissions.rules;
        LabelRules {
            globs: sources::glob_set(rules.iter().map(|rule| rule.path.get_ref().as_str())),
            labels: rules.iter().map(|rule| rule.labels.clone()).collect(),
        }
    }

    /// Sorted, lowercased and comma-separated; empty when the source has none. A file that is not a source
    /// (skipped) has no front matter, but its path rules still label it.
    pub(super) fn labels(&self, path: &str, front_matter: Option<&knowledge_queries::FrontMatter>) -> String {
        let mut labels: Vec<String> =
            self.globs.matches(path).into_iter().flat_map(|i| self.labels[i].clone()).collect();
        if let Some(front_matter) = front_matter {
            for key in ["visibility", "labels"] {
                match front_matter.fields.get(key) {
                    Some(knowledge_queries::FrontMatterValue::Scalar(value)) => labels.push(value.clone()),
                    Some(knowledge_queries::FrontMatterValue::List(values)) => labels.extend(values.iter().cloned()),
                    None => {}
                }
            }
        }
        let mut labels: Vec<String> =
            labels.iter().map(|l| l.trim().to_lowercase()).filter(|l| !l.is_empty() && !l.contains(',')).collect();
        labels.sort();
        labels.dedup();
        labels.join(",")
    }
}

pub(super) fn source_row(
    item: &Pending,
    outline: &Outline,
    chunks: &[Chunk],
    facts: &LintFacts,
    signals: &[Signal],
    entities: std::sync::Arc<[knowledge_queries::code::Entity]>,
    labels: String,
) -> SourceRow {
    let path = &item.found.path;
    let source = SourceRef::from_path(path);
    let kind = SourceKind::from_path(path);
    // Notes and ingested sources are not concepts' sources: they have no path a page could link to, and
    // lint compares neither. Code is searchable, but its identifiers are no concepts and its lines no quotes.
    let is_note = matches!(source.origin(), Origin::Note | Origin::External) || kind == SourceKind::Code;
    SourceRow {
        path: path.clone(),
        uri: source.uri(),
        kind: kind.as_str(),
        mime: kind.mime(),
        size: item.found.size,
        mtime_ns: item.found.mtime_ns,
        revision: item.revision.clone(),
        title: outline.title.clone(),
        outline: serde_json::to_string(outline).expect("outline serializes"),
        lint_facts: serde_json::to_string(facts).expect("facts serialize"),
        labels,
        line_keys: knowledge_queries::passages::line_keys(&item.text),
        chunks: {
            let mut rows = crate::sources::chunk_rows(&item.text, &outline.title, chunks, !is_note);
            rows.extend(crate::sources::entity_rows(path, &item.text, &entities, chunks.len()));
            if source.origin() == Origin::External {
                let shift = crate::sources::ingested::line_shift(&item.text);
                for row in &mut rows {
                    row.start_line = row.start_line.saturating_sub(shift).max(1);
                    row.end_line = row.end_line.saturating_sub(shift).max(row.start_line);
                }
            }
            rows
        },
        signals: if is_note { Vec::new() } else { signals.to_vec() },
        entities,
    }
}

/// One event per source the build added, changed, removed or skipped. A full rebuild derives every source
/// again and records one `index_rebuilt` event instead of one per source: `source_revisions.first_run`
/// already says when each revision first appeared.
pub(super) fn run_events(
    pending: &[Pending],
    removed: &[String],
    prior: &Prior,
    skipped: &[Skipped],
    full_rebuild: bool,
    rules: &LabelRules,
) -> Vec<RunEvent> {
    let mut events: Vec<RunEvent> = if full_rebuild {
        vec![RunEvent {
            kind: "index_rebuilt",
            path: String::new(),
            old_revision: None,
            new_revision: None,
            // No count: it would include sources some readers may not know exist.
            detail: Some("every source was derived again".to_string()),
            labels: None,
        }]
    } else {
        pending
            .iter()
            .map(|item| RunEvent {
                kind: if item.prior.is_some() { "source_changed" } else { "source_added" },
                path: item.found.path.clone(),
                old_revision: item.prior.as_ref().map(|p| p.revision.clone()),
                new_revision: Some(item.revision.clone()),
                detail: None,
                labels: None,
            })
            .collect()
    };
    events.extend(removed.iter().map(|path| RunEvent {
        kind: "source_removed",
        path: path.clone(),
        old_revision: Some(prior.sources[path].revision.clone()),
        new_revision: None,
        detail: None,
        labels: None,
    }));
    events.extend(skipped.iter().map(|s| RunEvent {
        kind: "source_skipped",
        path: s.path.clone(),
        old_revision: None,
        new_revision: None,
        detail: Some(s.reason.clone()),
        // The labels the build read (a front matter's too), else those the rules give the path alone.
        labels: Some(s.labels.clone().unwrap_or_else(|| rules.labels(&s.path, None))),
    }));
    events
}
