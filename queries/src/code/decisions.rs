//! Decisions from architecture decision records: a Markdown file the `[code] decisions` globs select.
//!
//! The status is the front matter's `status`, else the first line of a `Status` section, else a
//! `Status: …` line (the three shapes Nygard-style, MADR and adr-tools records take).

use std::collections::BTreeSet;

use super::{DecisionPayload, Entity, EntityType, Payload, line_of, offset32};
use crate::{FrontMatterValue, ParsedDocument};

pub(super) fn decision(path: &str, text: &str, doc: &ParsedDocument, title: &str) -> Option<Entity> {
    let stem = path.rsplit('/').next()?.rsplit_once('.').map_or(path, |(stem, _)| stem);
    let front = doc.front_matter.as_ref();
    let status = front
        .and_then(|fm| fm.scalar("status"))
        .map(str::to_string)
        .or_else(|| status_section(text, doc))
        .or_else(|| {
            text.lines().find_map(|line| {
                let line = line.trim().trim_start_matches(['*', '_', '-', ' ']);
                let rest = line.strip_prefix("Status:").or_else(|| line.strip_prefix("status:"))?;
                Some(rest.trim().trim_matches(['*', '_']).trim().to_string())
            })
        })
        .map(|s| s.to_lowercase())
        .filter(|s| !s.is_empty());
    let date = front.and_then(|fm| fm.scalar("date")).map(str::to_string);
    let components = match front.and_then(|fm| fm.fields.get("components").or_else(|| fm.fields.get("governs"))) {
        Some(FrontMatterValue::List(list)) => list.clone(),
        Some(FrontMatterValue::Scalar(one)) => vec![one.clone()],
        None => Vec::new(),
    };
    // Words and code spans, lowercased: `governs` looks component names up here.
    let terms: BTreeSet<String> = text
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '.' | ':' | '@')))
        .map(|word| word.trim_matches(['.', ':', '/', '-']).to_lowercase())
        .filter(|word| word.len() > 2)
        .collect();
    Some(Entity {
        slug: format!("decision/{stem}"),
        entity_type: EntityType::Decision,
        name: title.to_string(),
        start_line: 1,
        end_line: line_of(text, text.len().saturating_sub(1)),
        start_offset: 0,
        end_offset: offset32(text.len()),
        hash: String::new(),
        payload: Payload::Decision(DecisionPayload {
            title: title.to_string(),
            status,
            date,
            components,
            terms: terms.into_iter().collect(),
        }),
    })
}

/// The first non-empty line after a heading named `Status`.
fn status_section(text: &str, doc: &ParsedDocument) -> Option<String> {
    let heading = doc.headings.iter().find(|h| h.text.trim().eq_ignore_ascii_case("status"))?;
    text.lines()
        .skip(heading.line as usize)
        .map(str::trim)
        .find(|line| !line.is_empty())
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.trim_matches(['*', '_']).to_string())
}
