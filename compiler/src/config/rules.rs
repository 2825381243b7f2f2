//! The lint rules' catalog: each rule's stable code, default severity and summary. A leaf module, so the
//! configuration can check rule names without depending on lint itself.

use serde::{Deserialize, Serialize};

/// How serious a finding is. Errors fail the check; warnings fail it only with `--error-on-warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    /// The severity `as_str` names; `None` for anything else.
    #[must_use]
    pub fn parse(name: &str) -> Option<Severity> {
        [Severity::Error, Severity::Warning, Severity::Info].into_iter().find(|s| s.as_str() == name)
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A lint rule: its stable code, default severity and what it checks.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub code: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

/// Every rule, in documentation order.
pub const RULES: &[Rule] = &[
    Rule {
        code: "broken_link",
        severity: Severity::Error,
        summary: "A relative link points to a file that does not exist.",
    },
    Rule {
        code: "broken_anchor",
        severity: Severity::Warning,
        summary: "A link names a heading anchor the target Markdown file does not have.",
    },
    Rule {
        code: "unresolved_wikilink",
        severity: Severity::Warning,
        summary: "A [[wikilink]] matches no page by path, file name, title or alias.",
    },
    Rule { code: "undefined_footnote", severity: Severity::Error, summary: "A footnote reference has no definition." },
    Rule {
        code: "unused_footnote",
        severity: Severity::Warning,
        summary: "A footnote definition is never referenced.",
    },
    Rule {
        code: "malformed_front_matter",
        severity: Severity::Error,
        summary: "Front matter that cannot be read, or that is never closed.",
    },
    Rule {
        code: "contradiction_marker",
        severity: Severity::Warning,
        summary: "A contradiction marker (a configured pattern) is left in the text.",
    },
    Rule { code: "duplicate_page", severity: Severity::Warning, summary: "Two sources have exactly the same content." },
    Rule {
        code: "new_article_candidate",
        severity: Severity::Info,
        summary: "A wikilink target that many sources link to has no page.",
    },
    Rule {
        code: "missing_citation",
        severity: Severity::Warning,
        summary: "A section of a hand-written wiki page makes claims (a paragraph of prose) but cites nothing.",
    },
    Rule {
        code: "stale_citation",
        severity: Severity::Warning,
        summary: "A citation's recorded revision no longer matches its source: a generated page that needs a build, or a `file://PATH@REV` ref.",
    },
    Rule {
        code: "unresolved_source_ref",
        severity: Severity::Error,
        summary: "A citation names a source that is not in the project.",
    },
    Rule { code: "orphan_page", severity: Severity::Info, summary: "A hand-written wiki page nothing links to." },
];

#[must_use]
pub fn rule(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.code == code)
}

#[must_use]
pub fn rule_codes() -> Vec<&'static str> {
    RULES.iter().map(|rule| rule.code).collect()
}
