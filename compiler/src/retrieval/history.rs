//! Claim history: which build first had a passage. Builds record, for every line of every source they
//! write, the run that first wrote it (`passage_origins`, keyed by the line's words); a passage — the lines
//! a ref's `#Lstart-Lend` names, or the lines a quoted text lies on — was introduced by the latest of its
//! lines' first runs, the build that completed it, with that run's commit, branch and time.

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::access::Access;
use super::reader::{self, ReaderError};
use super::search::{self, Highlight, ResultKind, SearchMode, SearchRequest};
use knowledge_queries::passages::line_key;

/// Where a passage came from.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Introductions {
    /// The ref or the text asked about.
    pub query: String,
    /// One per source that holds the passage (a ref names one; a text may lie in several), best first.
    pub passages: Vec<PassageOrigin>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PassageOrigin {
    pub path: String,
    pub uri: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// The build that first held every line of the passage: the latest of its lines' first builds. Absent
    /// when no build recorded one of its lines (an index built before builds recorded lines).
    pub introduced: Option<RunOrigin>,
    /// The build before that one, which did not hold the passage yet: the change lies between its commit and
    /// the introducing build's (`git log BEFORE..AFTER`). Absent for the index's first build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_build: Option<RunOrigin>,
    /// Each line's first build, for a passage whose lines came at different times.
    pub lines: Vec<LineOrigin>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunOrigin {
    pub run_id: String,
    pub started_at: String,
    pub finished_at: String,
    /// The commit, branch, CI system and pull request the build recorded, when it had them.
    pub vcs: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LineOrigin {
    pub line: u32,
    /// `None` for a blank line, or one no build recorded.
    pub run_id: Option<String>,
    /// Where the line first appeared, when that was another source (it was moved or copied from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_path: Option<String>,
}

/// The passages `query` names, with their history: `REF#Lstart-Lend` (any ref `get` takes), or a text, looked
/// up by keyword and found verbatim (whitespace aside) in at most five sources the principal may read.
pub fn introduced(conn: &Connection, query: &str, access: &Access) -> Result<Introductions, ReaderError> {
    let query = query.trim();
    // A quoted text is a text, whatever it holds; anything else naming lines is a ref.
    let found = if query.contains("#L") && !query.starts_with('"') {
        let resolved = reader::resolve(conn, query, access)?;
        let (Some(source), Some(lines)) = (resolved.source, resolved.lines) else {
            return Err(ReaderError::NotFound(query.to_string()));
        };
        vec![Found { path: source.path, uri: source.uri, start_line: lines.start_line, text: lines.text }]
    } else {
        passages_quoting(conn, query.trim_matches('"'), access)?
    };
    // One read of the history for every passage's lines.
    let keys: Vec<i64> = found.iter().flat_map(|passage| passage.text.lines().filter_map(line_key)).collect();
    let origins = crate::store::passage_origins(conn, &keys)?;
    let passages = found.into_iter().map(|passage| origin_of(conn, passage, &origins)).collect::<Result<_, _>>()?;
    Ok(Introductions { query: query.to_string(), passages })
}

/// A passage found, before its history is read.
struct Found {
    path: String,
    uri: String,
    start_line: u32,
    text: String,
}

/// The sources whose indexed chunks hold `text` verbatim (whitespace collapsed), each with the lines it lies on.
fn passages_quoting(conn: &Connection, text: &str, access: &Access) -> Result<Vec<Found>, ReaderError> {
    let wanted: Vec<&str> = text.split_whitespace().collect();
    if wanted.is_empty() {
        return Err(ReaderError::TextNotFound(text.to_string()));
    }
    let request = SearchRequest {
        query: wanted.join(" "),
        mode: SearchMode::Keyword,
        limit: 50,
        // Generated pages quote sources and record no history of their own: the sources answer.
        kinds: vec![ResultKind::SourceChunk, ResultKind::LegacyItem],
        entity_types: Vec::new(),
        highlight: Highlight::Markdown,
    };
    let response = search::search(conn, &request, access)?;
    let mut passages: Vec<Found> = Vec::new();
    for hit in response.results {
        if passages.len() == 5 || passages.iter().any(|p| p.path == hit.source.path) {
            continue;
        }
        let Some((first, last)) = lines_holding(&hit.text, &wanted) else { continue };
        let lines: Vec<&str> = hit.text.split_inclusive('\n').skip(first).take(last - first + 1).collect();
        let start_line = hit.citation.start_line + first as u32;
        passages.push(Found { path: hit.source.path, uri: hit.source.uri, start_line, text: lines.concat() });
    }
    if passages.is_empty() {
        return Err(ReaderError::TextNotFound(text.to_string()));
    }
    Ok(passages)
}

/// The first and last line (0-based, within `chunk`) of the first place where `words` occur in order, each
/// word whole, whatever whitespace, case or punctuation around a word there is.
fn lines_holding(chunk: &str, words: &[&str]) -> Option<(usize, usize)> {
    let word = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    let wanted: Vec<String> = words.iter().map(|w| word(w)).filter(|w| !w.is_empty()).collect();
    if wanted.is_empty() {
        return None;
    }
    // Every word of the chunk with its line.
    let found: Vec<(usize, String)> = chunk
        .lines()
        .enumerate()
        .flat_map(|(line, text)| text.split_whitespace().map(move |w| (line, word(w))))
        .filter(|(_, w)| !w.is_empty())
        .collect();
    found
        .windows(wanted.len())
        .find(|window| window.iter().zip(&wanted).all(|((_, have), want)| have == want))
        .map(|window| (window[0].0, window[window.len() - 1].0))
}

/// The passage with its lines' first builds (`origins`, by line key: the run and the path that first held it).
fn origin_of(
    conn: &Connection,
    passage: Found,
    origins: &std::collections::HashMap<i64, (String, String)>,
) -> Result<PassageOrigin, ReaderError> {
    let Found { path, uri, start_line, text } = passage;
    let keys: Vec<Option<i64>> = text.lines().map(line_key).collect();
    let lines: Vec<LineOrigin> = keys
        .iter()
        .zip(start_line..)
        .map(|(key, line)| {
            let origin = key.and_then(|key| origins.get(&key));
            LineOrigin {
                line,
                run_id: origin.map(|(run, _)| run.clone()),
                first_path: origin.map(|(_, first)| first).filter(|first| **first != path).cloned(),
            }
        })
        .collect();
    // Run ids sort by time; every non-blank line (and at least one) must be known for the passage to have a
    // first build.
    let complete = keys.iter().flatten().all(|key| origins.contains_key(key)) && keys.iter().any(Option::is_some);
    let latest = lines.iter().filter_map(|l| l.run_id.clone()).max().filter(|_| complete);
    let origin = |row: crate::store::RunTimes| RunOrigin {
        run_id: row.id,
        started_at: row.started_at,
        finished_at: row.finished_at,
        vcs: serde_json::from_str(&row.vcs).unwrap_or_default(),
    };
    let (mut introduced, mut previous_build) = (None, None);
    if let Some(run_id) = latest {
        introduced = crate::store::run_times(conn, crate::store::RunAt::Id(&run_id))?.map(origin);
        previous_build = crate::store::run_times(conn, crate::store::RunAt::BuildBefore(&run_id))?.map(origin);
    }
    let end_line = start_line + (text.lines().count().max(1) as u32) - 1;
    Ok(PassageOrigin { path, uri, start_line, end_line, text, introduced, previous_build, lines })
}

#[cfg(test)]
mod tests {
    use super::lines_holding;

    #[test]
    fn a_quoted_text_is_found_across_lines_and_whitespace() {
        let chunk = "# Title\n\nEach value has\nan owner.  There can be\nonly one.\n";
        assert_eq!(lines_holding(chunk, &["has", "an", "owner."]), Some((2, 3)));
        assert_eq!(lines_holding(chunk, &["Each"]), Some((2, 2)));
        assert_eq!(lines_holding(chunk, &["Owner", "there"]), Some((3, 3)), "case and punctuation aside");
        assert_eq!(lines_holding(chunk, &["owne"]), None, "words are whole");
    }
}
