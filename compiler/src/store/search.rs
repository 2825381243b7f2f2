//! What a search reads from the SQLite index: the keyword pool (FTS5's BM25), chunks by row, and the pages,
//! citations and runs that placement and context packs consult. Ranking is the read side's; these are its
//! rows. The Postgres store's equivalents are in `postgres/search.rs`.

use rustc_hash::FxHashSet;

use knowledge_queries::Origin;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{meta, origin_condition, readable_chunks};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ResultSource {
    pub uri: String,
    pub path: String,
    pub revision: String,
    /// Content hash of the cited text.
    pub hash: String,
    /// The project (repository) the source belongs to, in a Postgres store shared by several; absent for
    /// a local index, which holds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// Where in its source a passage lies: byte offsets and lines.
pub struct Citation {
    pub start_offset: u32,
    pub end_offset: u32,
    pub start_line: u32,
    pub end_line: u32,
}

impl Citation {
    /// Reads `start_offset, end_offset, start_line, end_line` from four columns starting at `first`.
    pub(crate) fn from_row(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Citation> {
        Ok(Citation {
            start_offset: row.get(first)?,
            end_offset: row.get(first + 1)?,
            start_line: row.get(first + 2)?,
            end_line: row.get(first + 3)?,
        })
    }
}

/// A chunk as a search reads it, with its source's ref and path.
#[derive(Debug, Clone)]
pub struct StoredHit {
    /// The chunk's row (`chunks.seq`).
    pub seq: i64,
    pub id: String,
    pub title: String,
    pub text: String,
    pub source: ResultSource,
    pub citation: Citation,
    /// The entity the chunk is the excerpt of.
    pub entity: Option<String>,
}

/// The columns [`StoredHit::from_row`] reads, first in a query over `chunks c JOIN sources s`.
const HIT_COLUMNS: &str = "c.seq, c.id, c.title, c.text, c.hash, c.revision, c.start_offset, c.end_offset,
                           c.start_line, c.end_line, s.uri, s.path, c.entity";

impl StoredHit {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<StoredHit> {
        Ok(StoredHit {
            seq: row.get(0)?,
            id: row.get(1)?,
            title: row.get(2)?,
            text: row.get(3)?,
            source: ResultSource {
                uri: row.get(10)?,
                path: row.get(11)?,
                revision: row.get(5)?,
                hash: row.get(4)?,
                project: None,
            },
            citation: Citation::from_row(row, 6)?,
            entity: row.get(12)?,
        })
    }
}

/// Which kinds of chunk a search wants: each origin's sources, and entity excerpts (of the types whose slugs
/// start with one of `entity_prefixes`, or of every type when it is empty).
#[derive(Debug, Clone, Default)]
pub struct WantedKinds {
    pub sources: bool,
    pub pages: bool,
    pub shards: bool,
    pub notes: bool,
    pub entities: bool,
    pub entity_prefixes: Vec<&'static str>,
}

/// Which chunks a search's kinds keep: every one, all but those a condition holds for, only those, or none.
pub(crate) enum KindFilter {
    All,
    Except(String),
    Only(String),
    Nothing,
}

impl WantedKinds {
    /// The chunks of the wanted kinds as SQL conditions over a source path column `path` and `c.entity`: the
    /// one rule both engines render.
    pub(crate) fn filter(&self, path: &str) -> KindFilter {
        // Pages, index entries, notes and entity excerpts are few; source chunks are the rest.
        let special = [(self.pages, Origin::Page), (self.shards, Origin::Shard), (self.notes, Origin::Note)];
        let origins = |wanted: bool| -> Vec<String> {
            special
                .iter()
                .filter(|(wants, _)| *wants == wanted)
                .map(|(_, origin)| origin_condition(*origin, path))
                .collect()
        };
        // The entity excerpts of the wanted types.
        let entities = if self.entity_prefixes.is_empty() {
            "c.entity IS NOT NULL".to_string()
        } else {
            let types: Vec<String> =
                self.entity_prefixes.iter().map(|prefix| format!("c.entity LIKE '{prefix}%'")).collect();
            format!("({})", types.join(" OR "))
        };
        if self.sources {
            let mut excluded = origins(false);
            if !self.entities {
                excluded.push("c.entity IS NOT NULL".to_string());
            } else if !self.entity_prefixes.is_empty() {
                excluded.push(format!("(c.entity IS NOT NULL AND NOT {entities})"));
            }
            if excluded.is_empty() { KindFilter::All } else { KindFilter::Except(excluded.join(" OR ")) }
        } else {
            let mut included = origins(true);
            included.extend(self.entities.then_some(entities));
            if included.is_empty() { KindFilter::Nothing } else { KindFilter::Only(included.join(" OR ")) }
        }
    }
}

/// The number of chunks: the `N` of a query's idf weights.
pub fn chunk_total(conn: &Connection) -> rusqlite::Result<f64> {
    // FTS5 keeps the count of the rows it indexes (every chunk, written with it in the build's transaction)
    // in its own table; `count(*)` reads a whole index of the chunks: 20 ms of every search at a million
    // chunks, where a search that matches nothing takes 23 ms.
    if let Some((rows, _)) = fts5_totals(conn, "chunks_fts_data")? {
        return Ok(rows as f64);
    }
    conn.prepare_cached("SELECT count(*) FROM chunks")?.query_row([], |row| row.get(0))
}

/// The rows an FTS5 table indexes and its tokens over every column, from its `_data` table: the record with
/// id 1 (its averages) holds that count and then each column's token count, as SQLite varints (fts5_index.c,
/// "averages record"). `None` when the record is missing or holds no count.
fn fts5_totals(conn: &Connection, data_table: &str) -> rusqlite::Result<Option<(u64, u64)>> {
    let block: Option<Vec<u8>> = conn
        .prepare_cached(&format!("SELECT block FROM {data_table} WHERE id = 1"))?
        .query_row([], |row| row.get(0))
        .optional()?;
    let (numbers, _) = varints(block.as_deref().unwrap_or_default());
    Ok(numbers.split_first().map(|(rows, columns)| (*rows, columns.iter().sum())))
}

/// The number of chunks holding each of `words`.
pub fn word_frequencies(conn: &Connection, words: &[String]) -> rusqlite::Result<Vec<Option<f64>>> {
    let mut statement = conn.prepare_cached("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1")?;
    words.iter().map(|word| statement.query_row([quoted_word(word)], |row| row.get(0).map(Some))).collect()
}

/// `word` as an FTS5 query matching it as one word, whatever characters it holds.
fn quoted_word(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// How the keyword ranking weighs an occurrence in each of the FTS5 table's columns (title, text,
/// identifiers): `bm25()`'s arguments for the pool, and `kc_weighted_hits`' for a server's word scores, which
/// must be the same for the two to rank alike.
const COLUMN_WEIGHTS: &str = "2.0, 1.0, 0.5";

/// The [`keyword_scope`] of a search that wants every kind and may read every source: every chunk.
pub const EVERY_CHUNK_SCOPE: &str = "1 AND 1";

/// Which chunks a keyword ranking may score, as one SQL condition on the FTS5 table's `rowid`: those of the
/// `kinds` wanted among the sources not in `hidden`. `None` when the kinds want nothing. Two scopes are the
/// same chunks exactly when their conditions are equal, so a condition also keys what was scored in it.
pub fn keyword_scope(kinds: &WantedKinds, hidden: &[i64]) -> Option<String> {
    // Pages, index entries, notes and entity excerpts are few, so a kind filter names their chunks rather
    // than every source chunk.
    let chunks_where = |condition: String| {
        format!("SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {condition}")
    };
    let kind_filter = match kinds.filter("s.path") {
        KindFilter::All => "1".to_string(),
        KindFilter::Except(condition) => format!("rowid NOT IN ({})", chunks_where(condition)),
        // `+rowid`: offered to FTS5 as a rowid constraint, the set would drive one MATCH per listed chunk
        // (1.4 s for tokio's 8,000 entity excerpts); as a plain filter it is read once and tested per match.
        KindFilter::Only(condition) => format!("+rowid IN ({})", chunks_where(condition)),
        KindFilter::Nothing => return None,
    };
    Some(format!("{} AND {kind_filter}", readable_chunks("rowid", hidden)))
}

/// The keyword candidate pool: FTS5's BM25 over `words` (title weighted over body), the best `pool` chunks in
/// `scope` ([`keyword_scope`]), best first (equal scores by row), each with its BM25 score (higher is better).
/// A chunk whose source no longer holds its revision is left out.
pub fn keyword_pool(
    conn: &Connection,
    scope: &str,
    words: &[String],
    pool: usize,
) -> rusqlite::Result<Vec<(StoredHit, f64)>> {
    let pool_size = i64::try_from(pool).unwrap_or(i64::MAX);
    let any_word = words.iter().map(|word| quoted_word(word)).collect::<Vec<_>>().join(" OR ");
    // Rank on the FTS5 table alone and join only the pool: joining before the sort would join every match.
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {HIT_COLUMNS}, -top.score
         FROM (SELECT rowid, bm25(chunks_fts, {COLUMN_WEIGHTS}) AS score FROM chunks_fts
               WHERE chunks_fts MATCH ?1 AND {scope} ORDER BY score, rowid LIMIT ?2) AS top
         JOIN chunks c ON c.seq = top.rowid JOIN sources s ON s.id = c.source_id
         -- A chunk whose revision is not its source's current one could cite text that is gone.
         WHERE c.revision = s.revision
         ORDER BY top.score, top.rowid"
    ))?;
    statement.query_map(params![any_word, pool_size], |row| Ok((StoredHit::from_row(row)?, row.get(13)?)))?.collect()
}

/// Each chunk in `scope` ([`keyword_scope`]) holding `word`, by row (ascending), with BM25's frequency of the
/// word in it: its occurrences weighted as the keyword pool weighs the columns (title 2, text 1, identifiers
/// 0.5), summed as FTS5's `bm25()` sums them. The connection must have `kc_weighted_hits`
/// ([`register_weighted_hits`]).
///
/// BM25 is a sum over the query's words, and each word's part depends only on the word and the chunk (its
/// idf counts the whole table, not the scope), so a query's score is the sum of its words' scores: bit for
/// bit, when they are added from zero in the query's order, as FTS5 adds them.
pub fn word_hits(conn: &Connection, scope: &str, word: &str) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT rowid, kc_weighted_hits(chunks_fts, {COLUMN_WEIGHTS}) FROM chunks_fts WHERE chunks_fts MATCH ?1 AND {scope}"
    ))?;
    let mut hits: Vec<(i64, f64)> =
        statement.query_map([quoted_word(word)], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<Result<_, _>>()?;
    // FTS5 returns a word's matches in row order; sorted here so the merge never depends on it.
    if !hits.is_sorted_by_key(|(row, _)| *row) {
        hits.sort_unstable_by_key(|(row, _)| *row);
    }
    Ok(hits)
}

/// The keyword table's row count and its token count over every column, as FTS5 keeps them and as `bm25()`
/// reads them for the average row size.
pub fn keyword_totals(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    let (rows, tokens) = fts5_totals(conn, "chunks_fts_data")?.unwrap_or((0, 0));
    Ok((rows.cast_signed(), tokens.cast_signed()))
}

/// A keyword table row's token count over every column, as FTS5 keeps it (its docsize record) and as `bm25()`
/// reads it for each match.
pub fn keyword_row_size(conn: &Connection, row: i64) -> rusqlite::Result<i64> {
    let record: Vec<u8> =
        conn.prepare_cached("SELECT sz FROM chunks_fts_docsize WHERE id = ?1")?.query_row([row], |row| row.get(0))?;
    let (sizes, whole) = varints(&record);
    // A record that is not one size a column is corrupt, as FTS5 itself reads it (`bm25()` fails on it).
    if sizes.len() != KEYWORD_COLUMNS || !whole {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some(format!("the keyword table's size record of row {row} does not decode")),
        ));
    }
    Ok(sizes.iter().sum::<u64>().cast_signed())
}

/// The keyword table's columns: title, text and identifiers.
const KEYWORD_COLUMNS: usize = 3;

/// The numbers of an FTS5 record: SQLite varints, big-endian groups of seven bits, each byte's high bit saying
/// another follows; a ninth byte gives all eight of its bits. A number cut short is left out, and then the
/// second value is false (not every byte was read).
fn varints(mut bytes: &[u8]) -> (Vec<u64>, bool) {
    let mut numbers = Vec::new();
    'numbers: while !bytes.is_empty() {
        let mut value = 0_u64;
        for (at, &byte) in bytes.iter().enumerate().take(9) {
            if at == 8 {
                numbers.push((value << 8) | u64::from(byte));
                bytes = &bytes[9..];
                continue 'numbers;
            }
            value = (value << 7) | u64::from(byte & 0x7f);
            if byte & 0x80 == 0 {
                numbers.push(value);
                bytes = &bytes[at + 1..];
                continue 'numbers;
            }
        }
        return (numbers, false);
    }
    (numbers, true)
}

/// A number that changes whenever another connection commits to the index ("PRAGMA data_version"): what this
/// connection read before may be stale when it differs from the number read then.
pub fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?.query_row([], |row| row.get(0))
}

/// One chunk by its row, when its source still holds its revision.
pub fn chunk_hit(conn: &Connection, seq: i64) -> rusqlite::Result<Option<StoredHit>> {
    conn.prepare_cached(&format!(
        "SELECT {HIT_COLUMNS}
         FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.seq = ?1 AND c.revision = s.revision"
    ))?
    .query_row([seq], StoredHit::from_row)
    .optional()
}

/// The page an index entry (a shard's chunk, by row) lists.
pub fn entry_page(conn: &Connection, seq: i64) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT identifiers FROM chunks WHERE seq = ?1")?.query_row([seq], |row| row.get(0)).optional()
}

/// The sources a page quotes, each with whether the page quotes it for its title.
pub fn page_sources(conn: &Connection, page: &str) -> rusqlite::Result<Vec<(String, bool)>> {
    conn.prepare_cached("SELECT DISTINCT path, signal = 'title' FROM citations WHERE page = ?1")?
        .query_map([page], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// A page's title and aliases (JSON).
pub fn page_names(conn: &Connection, page: &str) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached("SELECT title, aliases FROM wiki_pages WHERE slug = ?1")?
        .query_row([page], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
}

/// Which of `paths` the last build added or changed.
pub fn fresh_paths(conn: &Connection, paths: &[&str]) -> rusqlite::Result<FxHashSet<String>> {
    let listed = serde_json::to_string(paths).unwrap_or_default();
    let mut statement = conn.prepare_cached(
        "SELECT DISTINCT path FROM run_events
         WHERE run_id = (SELECT value FROM meta WHERE key = 'last_run')
               AND kind IN ('source_added', 'source_changed') AND path IN (SELECT value FROM json_each(?1))",
    )?;
    statement.query_map([listed], |row| row.get(0))?.collect()
}

/// Every path the last build added or changed, or `None` when their bytes pass `most_bytes` (a first build of
/// a large corpus, or a tree of long paths): a server keeps them to tell its results' fresh sources without
/// reading the build's events at each search, within its memory budget.
pub fn last_build_fresh_paths(conn: &Connection, most_bytes: usize) -> rusqlite::Result<Option<FxHashSet<String>>> {
    let mut statement = conn.prepare_cached(
        "SELECT DISTINCT path FROM run_events
         WHERE run_id = (SELECT value FROM meta WHERE key = 'last_run') AND kind IN ('source_added', 'source_changed')",
    )?;
    let mut rows = statement.query([])?;
    let (mut paths, mut bytes) = (FxHashSet::default(), 0);
    while let Some(row) = rows.next()? {
        let path: String = row.get(0)?;
        bytes += path.len();
        if bytes > most_bytes {
            return Ok(None);
        }
        paths.insert(path);
    }
    Ok(Some(paths))
}

/// Whether a page quotes bytes `start..end` of the source `uri` at `revision`.
pub fn quoted(conn: &Connection, uri: &str, revision: &str, start: u32, end: u32) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM citations WHERE source_ref = ?1 AND revision = ?2
                        AND start_offset < ?4 AND end_offset > ?3)",
    )?
    .query_row(params![uri, revision, start, end], |row| row.get(0))
}

/// The chunks holding a page's quotes (and their sources' paths), in footnote order.
pub fn cited_chunks(conn: &Connection, page: &str) -> rusqlite::Result<Vec<(Option<i64>, String)>> {
    conn.prepare_cached(
        "SELECT DISTINCT (SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id
                          WHERE s.path = t.path AND c.start_offset <= t.start_offset
                                AND t.start_offset < c.end_offset AND c.entity IS NULL
                          ORDER BY c.ordinal LIMIT 1), t.path
         FROM citations t WHERE t.page = ?1 ORDER BY t.note",
    )?
    .query_map([page], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

/// The first chunk of each page that lists the source at `path` (and the page's path).
pub fn quoting_pages(conn: &Connection, path: &str) -> rusqlite::Result<Vec<(Option<i64>, String)>> {
    let page = Origin::Page.prefix();
    conn.prepare_cached(&format!(
        "SELECT (SELECT c.seq FROM chunks c JOIN sources s ON s.id = c.source_id
                 WHERE s.path = '{page}' || p.page ORDER BY c.ordinal LIMIT 1), '{page}' || p.page
         FROM page_sources p WHERE p.path = ?1 ORDER BY p.page",
    ))?
    .query_map([path], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

/// The build the index holds and when it finished.
pub fn index_run(conn: &Connection) -> rusqlite::Result<(Option<String>, Option<String>)> {
    let run = meta(conn, "last_run")?;
    let finished = match &run {
        Some(run) => conn
            .prepare_cached("SELECT finished_at FROM runs WHERE id = ?1")?
            .query_row([run], |row| row.get(0))
            .optional()?,
        None => None,
    };
    Ok((run, finished))
}

/// A source's current revision and its lint facts (JSON), when it is indexed.
pub fn source_state(conn: &Connection, path: &str) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached("SELECT revision, lint_facts FROM sources WHERE path = ?1")?
        .query_row([path], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chunk_is_the_scope_of_every_kind_and_every_source() {
        let every = WantedKinds {
            sources: true,
            pages: true,
            shards: true,
            notes: true,
            entities: true,
            entity_prefixes: Vec::new(),
        };
        assert_eq!(keyword_scope(&every, &[]).as_deref(), Some(EVERY_CHUNK_SCOPE));
        assert_ne!(keyword_scope(&every, &[7]).as_deref(), Some(EVERY_CHUNK_SCOPE));
        assert_ne!(keyword_scope(&WantedKinds { pages: false, ..every }, &[]).as_deref(), Some(EVERY_CHUNK_SCOPE));
    }

    /// A row's size is its three columns' tokens; a size record cut short or of other columns is corrupt
    /// (an error, as `bm25()` fails on it), never a wrong size.
    #[test]
    fn a_rows_size_is_its_columns_tokens_and_a_corrupt_record_is_an_error() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(title, text, identifiers);
             INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (1, 'a b', 'c d e', 'f');",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (2, 'a', ?1, '')",
            ["word ".repeat(200)],
        )
        .unwrap();
        assert_eq!(keyword_row_size(&conn, 1).unwrap(), 6);
        assert_eq!(keyword_row_size(&conn, 2).unwrap(), 201, "a size of two bytes");
        for corrupt in [&[0x02, 0x81][..], &[0x02, 0x03], &[0x02, 0x03, 0x01, 0x01], &[]] {
            conn.execute("UPDATE chunks_fts_docsize SET sz = ?1 WHERE id = 1", [corrupt]).unwrap();
            assert!(keyword_row_size(&conn, 1).is_err(), "{corrupt:?}");
        }
        assert!(keyword_row_size(&conn, 3).is_err(), "no record");
    }

    #[test]
    fn the_fts5_row_count_is_read_from_its_averages_record() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE VIRTUAL TABLE words USING fts5(text)").unwrap();
        assert_eq!(fts5_totals(&conn, "words_data").unwrap().unwrap_or((0, 0)).0, 0);
        // Past 127 and 16,383 rows the count takes two and then three bytes.
        for rows in [5_i64, 300, 20_000] {
            conn.execute("DELETE FROM words", []).unwrap();
            conn.execute(
                "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < ?1)
                 INSERT INTO words (rowid, text) SELECT v, 'a word' FROM n",
                [rows],
            )
            .unwrap();
            conn.execute("DELETE FROM words WHERE rowid % 7 = 0", []).unwrap();
            let counted: i64 = conn.query_row("SELECT count(*) FROM words", [], |row| row.get(0)).unwrap();
            let totals = fts5_totals(&conn, "words_data").unwrap();
            assert_eq!(totals, Some((counted as u64, 2 * counted as u64)), "{rows} rows of two words");
        }
        assert_eq!(varints(&[0x81, 0x00, 0x05]), (vec![128, 5], true));
        assert_eq!(varints(&[0xff; 9]), (vec![u64::MAX], true), "a ninth byte gives eight bits");
        assert_eq!(varints(&[0x05, 0xff, 0xff]), (vec![5], false), "a varint cut short is left out");
    }
}
