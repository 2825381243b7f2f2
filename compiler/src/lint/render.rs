//! The findings rendered for people (`path:line:col` lines), machines (JSON), GitHub annotations and SARIF
//! consumers.

use super::*;

/// `path:line:col: severity[code] message` lines, then a summary line.
#[must_use]
pub fn render_human(report: &LintReport, color: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for d in &report.diagnostics {
        let severity = if color {
            let code = match d.severity {
                Severity::Error => "31",
                Severity::Warning => "33",
                Severity::Info => "36",
            };
            format!("\u{1b}[1;{code}m{}\u{1b}[0m", d.severity.as_str())
        } else {
            d.severity.as_str().to_string()
        };
        let (path, message) = (crate::escape(&d.path), crate::escape(&d.message));
        let _ = writeln!(out, "{path}:{}:{}: {severity}[{}] {message}", d.line, d.column, d.code);
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "{} {}, {} {}, {} info in {} {}",
        s.errors,
        plural(s.errors, "error"),
        s.warnings,
        plural(s.warnings, "warning"),
        s.info,
        s.files,
        plural(s.files, "file"),
    );
    out
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 { word.to_string() } else { format!("{word}s") }
}

/// The stable JSON document of `--format json`.
#[must_use]
pub fn render_json(report: &LintReport) -> String {
    let value = serde_json::json!({
        "version": 1,
        "diagnostics": report.diagnostics,
        "summary": report.summary,
        "skipped": report.skipped,
        "unlinted": report.unlinted,
    });
    serde_json::to_string_pretty(&value).expect("the report serializes") + "\n"
}

/// GitHub Actions workflow commands: one annotation per finding.
#[must_use]
pub fn render_github(report: &LintReport) -> String {
    // The one escaping rule first (no control or bidirectional character reaches the log; line breaks are
    // left to the workflow command's own encoding, which keeps a path's bytes), then that encoding.
    let escape_data = |s: &str| crate::escape_text(s).replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
    let escape_property = |s: &str| escape_data(s).replace(':', "%3A").replace(',', "%2C");
    report
        .diagnostics
        .iter()
        .map(|d| {
            let command = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            format!(
                "::{command} file={},line={},col={},title={}::{}\n",
                escape_property(&d.path),
                d.line,
                d.column,
                escape_property(&format!("knowledge {}", d.code)),
                escape_data(&d.message)
            )
        })
        .collect()
}

/// A SARIF 2.1.0 log, as GitHub code scanning accepts it.
#[must_use]
pub fn render_sarif(report: &LintReport) -> String {
    let level = |severity: Severity| match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    };
    let rules: Vec<serde_json::Value> = RULES
        .iter()
        .map(|rule| {
            serde_json::json!({
                "id": rule.code,
                "name": rule.code,
                "shortDescription": { "text": rule.summary },
                "defaultConfiguration": { "level": level(rule.severity) },
            })
        })
        .collect();
    let results: Vec<serde_json::Value> = report
        .diagnostics
        .iter()
        .map(|d| {
            serde_json::json!({
                "ruleId": d.code,
                "ruleIndex": RULES.iter().position(|r| r.code == d.code).unwrap_or(0),
                "level": level(d.severity),
                "message": { "text": d.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri_reference(&d.path), "uriBaseId": "%SRCROOT%" },
                        "region": { "startLine": d.line, "startColumn": d.column },
                    }
                }],
            })
        })
        .collect();
    let log = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "knowledge",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&log).expect("the log serializes") + "\n"
}

/// A project-relative path as a relative URI reference (RFC 3986): every byte but the unreserved
/// characters and `/` percent-encoded, so a name with spaces, `#`, `%` or control characters stays one
/// path that a SARIF consumer resolves against `%SRCROOT%`.
fn uri_reference(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}
