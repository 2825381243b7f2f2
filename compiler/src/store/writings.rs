//! The wiki writer's cache (`page_writings`): what a provider wrote for a page, keyed by what it was written
//! from, so that a page whose quotes come back is not written again.

use rusqlite::{Connection, OptionalExtension, params};

/// One provider writing of a page, as checked.
#[derive(Debug, Clone, PartialEq)]
pub struct WritingRow {
    pub key: String,
    /// `PROVIDER/MODEL`.
    pub writer: String,
    /// The checked sentences (JSON).
    pub sentences: String,
    /// Whether enough sentences held up for the page to show them.
    pub accepted: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

/// The writing stored under `key`.
pub fn find_writing(conn: &Connection, key: &str) -> rusqlite::Result<Option<WritingRow>> {
    conn.prepare_cached(
        "SELECT writer, sentences, accepted, input_tokens, output_tokens, cost_usd FROM page_writings WHERE key = ?1",
    )?
    .query_row([key], |row| {
        Ok(WritingRow {
            key: key.to_string(),
            writer: row.get(0)?,
            sentences: row.get(1)?,
            accepted: row.get(2)?,
            input_tokens: row.get::<_, i64>(3)? as u64,
            output_tokens: row.get::<_, i64>(4)? as u64,
            cost_usd: row.get(5)?,
        })
    })
    .optional()
}

/// Stores a writing `run` made.
pub fn save_writing(conn: &Connection, writing: &WritingRow, run: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO page_writings
             (key, writer, sentences, accepted, input_tokens, output_tokens, cost_usd, created_run)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        writing.key,
        writing.writer,
        writing.sentences,
        writing.accepted,
        writing.input_tokens as i64,
        writing.output_tokens as i64,
        writing.cost_usd,
        run,
    ])?;
    Ok(())
}

/// Removes the writings no page names any longer.
pub fn prune_writings(conn: &Connection) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "DELETE FROM page_writings WHERE key NOT IN (SELECT writing FROM wiki_pages WHERE writing IS NOT NULL)",
    )?
    .execute([])
}

/// How many pages the writer still owes a writing, and how many pages there are.
pub fn owed_writings(conn: &Connection) -> rusqlite::Result<(u64, u64)> {
    conn.query_row("SELECT coalesce(sum(writing_owed), 0), count(*) FROM wiki_pages", [], |row| {
        Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
    })
}

/// How many pages list (quote, name or are linked from) one of `paths`.
pub fn pages_listing(conn: &Connection, paths: &[String]) -> rusqlite::Result<u64> {
    let mut pages = std::collections::HashSet::new();
    let mut statement = conn.prepare_cached("SELECT page FROM page_sources WHERE path = ?1")?;
    for path in paths {
        for page in statement.query_map([path], |row| row.get::<_, String>(0))? {
            pages.insert(page?);
        }
    }
    Ok(pages.len() as u64)
}

/// The mean input and output tokens of the writings stored by `writer`, when it has any: what `--check`
/// estimates a page's writing costs from.
pub fn mean_writing_tokens(conn: &Connection, writer: &str) -> rusqlite::Result<Option<(f64, f64)>> {
    conn.query_row(
        "SELECT avg(input_tokens), avg(output_tokens) FROM page_writings WHERE writer = ?1",
        [writer],
        |row| Ok(row.get::<_, Option<f64>>(0)?.zip(row.get::<_, Option<f64>>(1)?)),
    )
}
