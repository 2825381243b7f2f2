//! What a server keeps between searches ([`SearchCache`]): each query word's BM25 scores over the chunks in
//! scope (one FTS5 query a word), so that a search whose words were searched before merges their lists
//! instead of asking FTS5 to score every match of the query again; and the rows it read of each chunk and
//! page a result held, which the next search meeting them reuses instead of reading them again. The kept
//! pool is FTS5's ranking of the query, score for score and in the same order (tested below): a search in a
//! process that runs one search asks FTS5 for the pool in one query instead, which at a million chunks costs
//! 10–20 ms less than scoring each word on its own.

use std::sync::Arc;

use rusqlite::Connection;
use rustc_hash::FxHashMap;

use crate::store;

/// Scores a connection's cache holds at most, over all words (16 bytes each: 16 MB; the server keeps a few
/// connections). Past it the cache starts again empty: a server's searches reuse a small vocabulary, and a
/// flood of new words costs what an uncached search costs.
const HELD_SCORES: usize = 1 << 20;

/// Words whose chunk counts a cache holds at most, past which it starts again empty (a flood of new words).
const HELD_FREQUENCIES: usize = 1 << 16;

/// Chunk sizes (BM25's row lengths) a cache holds at most (about 6 MB), past which it starts again empty: a
/// size not held is read again, one b-tree lookup, as FTS5's `bm25()` reads it for every match.
const HELD_SIZES: usize = 1 << 18;

/// Bytes of the chunk and page rows a cache holds at most (texts, titles, paths), past which it starts again
/// empty: about 4,000 chunks of a typical 2 KB.
const HELD_ROW_BYTES: usize = 8 << 20;

/// Bytes of the paths of sources the last build added or changed that a cache holds at most (about 50,000
/// paths of 40 bytes); past it each search asks for its own results' paths.
const HELD_FRESH_BYTES: usize = 2 << 20;

/// Chunks by row (ascending), each with its score.
type Scores = Arc<[(i64, f64)]>;

/// What one connection's searches read before and may read again: each word's scores in each scope, and
/// each word's chunk count. It belongs to one connection (it follows that connection's `data_version`) and
/// forgets everything when another connection (a build) commits. The default keeps nothing between
/// searches: [`SearchCache::kept`] is a server's.
#[derive(Default)]
pub struct SearchCache {
    /// The most scores held: [`HELD_SCORES`] for a kept cache, none for the default, which keeps nothing.
    limit: usize,
    version: Option<i64>,
    /// By scope, then by word: a search looks its words up without making a key.
    scores: FxHashMap<String, FxHashMap<String, Scores>>,
    frequencies: FxHashMap<String, Option<f64>>,
    /// BM25's collection figures for this index: its rows and their tokens over every column.
    totals: Option<(i64, i64)>,
    /// Each chunk's tokens over every column, by row, as read for a word that matched it.
    sizes: FxHashMap<i64, i64>,
    /// Whether the connection has the function that word scores are read through (registered once).
    registered: bool,
    held: usize,
    rows: Rows,
    /// The paths the last build added or changed, once read: `Some(None)` when there were too many to keep.
    fresh: Option<Option<rustc_hash::FxHashSet<String>>>,
}

/// The rows a connection's searches read of chunks and pages, as the store returned them.
#[derive(Default)]
struct Rows {
    hits: FxHashMap<i64, Option<store::StoredHit>>,
    entry_pages: FxHashMap<i64, Option<String>>,
    page_sources: FxHashMap<String, Vec<(String, bool)>>,
    page_names: FxHashMap<String, Option<(String, String)>>,
    quoted: FxHashMap<i64, bool>,
    /// The bytes of text held, against [`HELD_ROW_BYTES`].
    bytes: usize,
}

impl Rows {
    /// Makes room for `bytes` more: when they would pass the limit, everything goes.
    fn room_for(&mut self, bytes: usize) {
        if self.bytes + bytes > HELD_ROW_BYTES {
            *self = Rows::default();
        }
        self.bytes += bytes;
    }
}

impl SearchCache {
    /// A cache for a connection that serves many searches.
    #[must_use]
    pub fn kept() -> SearchCache {
        SearchCache { limit: HELD_SCORES, ..SearchCache::default() }
    }

    /// Whether the keyword pool is ranked from kept word scores ([`SearchCache::best_chunks`]) rather than by
    /// one FTS5 query.
    pub(super) fn keeps(&self) -> bool {
        self.limit > 0
    }

    /// Empties the cache when the index changed since it was filled. Called once per search, before its first
    /// read, when the search's index is made (`SqliteIndex::new`): a server's search reads in one transaction,
    /// so what the cache holds then stays true for the whole search.
    pub(super) fn follow(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let version = store::data_version(conn)?;
        if self.version != Some(version) {
            let (limit, registered) = (self.limit, self.registered);
            *self = SearchCache { limit, registered, version: Some(version), ..SearchCache::default() };
        }
        Ok(())
    }

    /// The number of chunks holding each of `words`, as [`store::word_frequencies`] reads it.
    pub(super) fn word_frequencies(
        &mut self,
        conn: &Connection,
        words: &[String],
    ) -> rusqlite::Result<Vec<Option<f64>>> {
        if !self.keeps() {
            return store::word_frequencies(conn, words);
        }
        let missing: Vec<String> = words.iter().filter(|word| !self.frequencies.contains_key(*word)).cloned().collect();
        if self.frequencies.len() + missing.len() > HELD_FREQUENCIES {
            self.frequencies.clear();
        }
        for word in missing {
            // A word's scores over every chunk are its matches, so they count them, and a search that filters
            // nothing (most of a server's) ranks with them: one pass over the word's matches, not two.
            let holding = self.word_scores(conn, store::EVERY_CHUNK_SCOPE, &word)?.len();
            self.frequencies.insert(word, Some(holding as f64));
        }
        Ok(words.iter().map(|word| self.frequencies[word]).collect())
    }

    /// The best `pool` chunks in `scope` for `words` by BM25 (higher first, then by row), each with its score:
    /// the sum of its words' scores, added from zero in the words' order as FTS5 adds them for the query
    /// `"w1" OR "w2" …`, so the scores are FTS5's own.
    pub(super) fn best_chunks(
        &mut self,
        conn: &Connection,
        scope: &str,
        words: &[String],
        pool: usize,
    ) -> rusqlite::Result<Vec<(i64, f64)>> {
        let mut summed: Vec<(i64, f64)> = Vec::new();
        for (at, word) in words.iter().enumerate() {
            let scores = self.word_scores(conn, scope, word)?;
            summed = if at == 0 { scores.to_vec() } else { merge(&summed, &scores) };
        }
        knowledge_queries::keep_best(&mut summed, pool, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(summed)
    }

    /// Which of `paths` the last build added or changed ([`store::fresh_paths`]): a kept cache reads every
    /// such path once, since after a first build each search would otherwise read all of that build's events.
    pub(super) fn fresh_paths(
        &mut self,
        conn: &Connection,
        paths: &[&str],
    ) -> rusqlite::Result<rustc_hash::FxHashSet<String>> {
        if !self.keeps() {
            return store::fresh_paths(conn, paths);
        }
        if self.fresh.is_none() {
            self.fresh = Some(store::last_build_fresh_paths(conn, HELD_FRESH_BYTES)?);
        }
        match self.fresh.as_ref().and_then(Option::as_ref) {
            Some(fresh) => {
                Ok(paths.iter().filter(|path| fresh.contains(**path)).map(|path| (*path).to_string()).collect())
            }
            None => store::fresh_paths(conn, paths),
        }
    }

    /// A chunk's row, when its source still holds its revision ([`store::chunk_hit`]).
    pub(super) fn chunk_hit(&mut self, conn: &Connection, seq: i64) -> rusqlite::Result<Option<store::StoredHit>> {
        let size = |hit: &Option<store::StoredHit>| {
            hit.as_ref().map_or(0, |hit| hit.text.len() + hit.title.len() + hit.source.uri.len() * 2 + 160)
        };
        self.row(|rows| &mut rows.hits, seq, size, || store::chunk_hit(conn, seq))
    }

    /// The page an index entry lists ([`store::entry_page`]).
    pub(super) fn entry_page(&mut self, conn: &Connection, seq: i64) -> rusqlite::Result<Option<String>> {
        let size = |page: &Option<String>| page.as_ref().map_or(0, String::len);
        self.row(|rows| &mut rows.entry_pages, seq, size, || store::entry_page(conn, seq))
    }

    /// The sources a page quotes ([`store::page_sources`]).
    pub(super) fn page_sources(&mut self, conn: &Connection, page: &str) -> rusqlite::Result<Vec<(String, bool)>> {
        let size = |sources: &Vec<(String, bool)>| sources.iter().map(|(path, _)| path.len() + 32).sum::<usize>();
        self.row(|rows| &mut rows.page_sources, page.to_string(), size, || store::page_sources(conn, page))
    }

    /// A page's title and aliases ([`store::page_names`]).
    pub(super) fn page_names(&mut self, conn: &Connection, page: &str) -> rusqlite::Result<Option<(String, String)>> {
        let size = |names: &Option<(String, String)>| names.as_ref().map_or(0, |(t, a)| t.len() + a.len());
        self.row(|rows| &mut rows.page_names, page.to_string(), size, || store::page_names(conn, page))
    }

    /// Whether a page quotes bytes of the chunk at row `seq`, as `read` (by the chunk's source, revision and
    /// offsets: [`store::quoted`]) says.
    pub(super) fn quoted(
        &mut self,
        conn: &Connection,
        seq: i64,
        read: impl FnOnce(&Connection) -> rusqlite::Result<bool>,
    ) -> rusqlite::Result<bool> {
        self.row(|rows| &mut rows.quoted, seq, |_| 0, || read(conn))
    }

    /// A row of `map` by `key`, read by `read` once and kept (costing `size` of its value's bytes) when this
    /// cache keeps rows; else read each time.
    fn row<K, V>(
        &mut self,
        map: impl Fn(&mut Rows) -> &mut FxHashMap<K, V>,
        key: K,
        size: impl FnOnce(&V) -> usize,
        read: impl FnOnce() -> rusqlite::Result<V>,
    ) -> rusqlite::Result<V>
    where
        K: std::hash::Hash + Eq,
        V: Clone,
    {
        if !self.keeps() {
            return read();
        }
        if let Some(value) = map(&mut self.rows).get(&key) {
            return Ok(value.clone());
        }
        let value = read()?;
        // Each entry's key and map slot cost about this much besides the value's own bytes.
        self.rows.room_for(64 + size(&value));
        map(&mut self.rows).insert(key, value.clone());
        Ok(value)
    }

    fn word_scores(&mut self, conn: &Connection, scope: &str, word: &str) -> rusqlite::Result<Scores> {
        if let Some(scores) = self.scores.get(scope).and_then(|words| words.get(word)) {
            return Ok(scores.clone());
        }
        let scores: Scores = self.bm25(conn, scope, word)?.into();
        // A word no chunk holds counts as one score: a flood of such words (each query word is scored over
        // every chunk to count it) fills the cache as other words do.
        let cost = scores.len().max(1);
        if self.held + cost > self.limit {
            (self.scores, self.held) = (FxHashMap::default(), 0);
        }
        self.held += cost;
        self.scores.entry(scope.to_string()).or_default().insert(word.to_string(), scores.clone());
        Ok(scores)
    }

    /// FTS5's `bm25(chunks_fts, 2.0, 1.0, 0.5)` of the query `"word"` for each chunk in `scope` holding it, by
    /// row: `bm25()`'s own arithmetic, in its order, from the word's weighted count in each chunk
    /// ([`store::word_hits`]), its chunk count and the collection's totals, and each chunk's size as this cache
    /// keeps it, where `bm25()` reads the size from a b-tree for every match.
    fn bm25(&mut self, conn: &Connection, scope: &str, word: &str) -> rusqlite::Result<Vec<(i64, f64)>> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        if !self.registered {
            store::register_weighted_hits(conn)?;
            self.registered = true;
        }
        let (rows, tokens) = match self.totals {
            Some(totals) => totals,
            None => *self.totals.insert(store::keyword_totals(conn)?),
        };
        let average_size = tokens as f64 / rows as f64;
        let mut scores = store::word_hits(conn, scope, word)?;
        let holding = if scope == store::EVERY_CHUNK_SCOPE {
            scores.len() as i64
        } else {
            self.word_frequencies(conn, std::slice::from_ref(&word.to_string()))?[0].unwrap_or(0.0) as i64
        };
        // FTS5's floor: a word in more than half the chunks would weigh less than nothing.
        let idf = (((rows - holding) as f64 + 0.5) / (holding as f64 + 0.5)).ln();
        let idf = if idf <= 0.0 { 1e-6 } else { idf };
        for (row, score) in &mut scores {
            let frequency = *score;
            let size = self.size(conn, *row)? as f64;
            *score = idf * ((frequency * (K1 + 1.0)) / (frequency + K1 * (1.0 - B + B * size / average_size)));
        }
        Ok(scores)
    }

    /// A chunk's tokens over every column ([`store::keyword_row_size`]), read once.
    fn size(&mut self, conn: &Connection, row: i64) -> rusqlite::Result<i64> {
        if let Some(size) = self.sizes.get(&row) {
            return Ok(*size);
        }
        let size = store::keyword_row_size(conn, row)?;
        if self.sizes.len() >= HELD_SIZES {
            self.sizes.clear();
        }
        self.sizes.insert(row, size);
        Ok(size)
    }
}

/// Two row-ordered score lists as one, a row in both scoring `a`'s score plus `b`'s.
fn merge(a: &[(i64, f64)], b: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let mut merged = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                merged.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                merged.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                merged.push((a[i].0, a[i].1 + b[j].1));
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    merged.extend_from_slice(&a[i..]);
    merged.extend_from_slice(&b[j..]);
    merged
}

#[cfg(test)]
mod tests {
    use rustc_hash::FxHashMap;

    use super::{SearchCache, merge};

    /// The pool is FTS5's own ranking of the query `"w1" OR "w2" …`: the same chunks, the same scores to the
    /// bit, for queries of one to four words over chunks whose three columns hold them in varied numbers.
    #[test]
    fn the_pool_is_fts5s_ranking_of_the_words_query() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("index.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(title, text, identifiers,
                 tokenize = 'porter unicode61 remove_diacritics 2')",
        )
        .unwrap();
        let vocabulary = ["borrow", "checker", "lifetimes", "trait", "object", "closure", "async", "ownership"];
        let mut state = 0x9e37_79b9_u64;
        let mut next = |below: usize| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % below
        };
        for row in 1..=300_usize {
            let mut column = |words: usize| (0..words).map(|_| vocabulary[next(vocabulary.len())]).collect::<Vec<_>>();
            let (title, text, identifiers) = (column(2), column(5 + row % 40), column(row % 3));
            conn.execute(
                "INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![row as i64, title.join(" "), text.join(" filler "), identifiers.join(" ")],
            )
            .unwrap();
        }
        // Rows past 127 and 16,383 tokens, whose sizes take two and three bytes in FTS5's records.
        for (row, words) in [(301_usize, 200_usize), (302, 20_000)] {
            let text: Vec<&str> = (0..words).map(|at| vocabulary[(at * 7 + row) % vocabulary.len()]).collect();
            conn.execute(
                "INSERT INTO chunks_fts (rowid, title, text, identifiers) VALUES (?1, 'borrow', ?2, '')",
                rusqlite::params![row as i64, text.join(" ")],
            )
            .unwrap();
        }
        let mut cache = SearchCache::kept();
        // A search as `SqliteIndex::new` starts one: the cache follows the index, then ranks.
        let mut search = |words: &[String], pool: usize| {
            cache.follow(&conn).unwrap();
            cache.best_chunks(&conn, "1", words, pool).unwrap()
        };
        let queries: [&[&str]; 5] = [
            &["borrow"],
            &["borrow", "checker"],
            &["async", "closure", "absent"],
            &["trait", "object", "ownership", "borrowing"],
            &["absent"],
        ];
        for query in queries {
            let words: Vec<String> = query.iter().map(|word| (*word).to_string()).collect();
            let expression = words.iter().map(|word| format!("\"{word}\"")).collect::<Vec<_>>().join(" OR ");
            let expected: Vec<(i64, f64)> = conn
                .prepare(
                    "SELECT rowid, -bm25(chunks_fts, 2.0, 1.0, 0.5) AS score FROM chunks_fts
                     WHERE chunks_fts MATCH ?1 ORDER BY score DESC, rowid LIMIT 20",
                )
                .unwrap()
                .query_map([expression], |row| Ok((row.get(0)?, row.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            // Twice: the second time from the cache.
            for _ in 0..2 {
                assert_eq!(search(&words, 20), expected, "{query:?}");
            }
        }
        // Every match's score, not only the best: the long rows' sizes are read as FTS5 reads them.
        let mut each_word = SearchCache::kept();
        for word in vocabulary.into_iter().chain(["absent"]) {
            let every: Vec<(i64, f64)> = conn
                .prepare("SELECT rowid, -bm25(chunks_fts, 2.0, 1.0, 0.5) FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY rowid")
                .unwrap()
                .query_map([format!("\"{word}\"")], |row| Ok((row.get(0)?, row.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(each_word.bm25(&conn, "1", word).unwrap(), every, "{word}");
            // Scored over every chunk, the matches count themselves for the idf.
            assert_eq!(each_word.bm25(&conn, crate::store::EVERY_CHUNK_SCOPE, word).unwrap(), every, "{word}");
            assert_eq!(every.iter().any(|(row, _)| *row == 302), vocabulary.contains(&word), "{word}");
        }
        // Another connection (a build) commits: the next search reads the index again.
        let new_word = ["zyzzyva".to_string()];
        assert_eq!(search(&new_word, 5), [], "not indexed yet");
        let build = rusqlite::Connection::open(&path).unwrap();
        build.execute("UPDATE chunks_fts SET text = 'a zyzzyva' WHERE rowid = 7", []).unwrap();
        let best = search(&new_word, 5);
        assert_eq!(best.iter().map(|(row, _)| *row).collect::<Vec<_>>(), [7], "the committed change is read");
    }

    /// A flood of words never grows the cache past its limit (plus the one list just read).
    #[test]
    fn a_flood_of_words_keeps_the_cache_within_its_limit() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(title, text, identifiers);
             WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < 200)
             INSERT INTO chunks_fts (rowid, title, text, identifiers)
                 SELECT v, 'common', 'word' || (v % 50) || ' common', '' FROM n;",
        )
        .unwrap();
        let mut cache = SearchCache { limit: 100, ..SearchCache::kept() };
        for n in 0..50 {
            let words = [format!("word{n}"), "common".to_string()];
            assert_eq!(cache.best_chunks(&conn, "1", &words, 5).unwrap().len(), 5);
            assert!(cache.held <= 100 + 200, "{} scores held after {n} queries", cache.held);
            let held: usize =
                cache.scores.values().flat_map(|words| words.values()).map(|scores| scores.len().max(1)).sum();
            assert_eq!(cache.held, held);
        }
        let flood: Vec<String> = (0..super::HELD_FREQUENCIES + 10).map(|n| format!("flood{n}")).collect();
        cache.word_frequencies(&conn, &flood[..super::HELD_FREQUENCIES]).unwrap();
        assert_eq!(cache.word_frequencies(&conn, &flood[super::HELD_FREQUENCIES..]).unwrap(), [Some(0.0); 10]);
        assert!(cache.frequencies.len() <= super::HELD_FREQUENCIES, "{} counts held", cache.frequencies.len());
        let lists: usize = cache.scores.values().map(FxHashMap::len).sum();
        assert!(lists <= 100, "{lists} words' lists held after a flood of words no chunk holds");
    }

    /// A row read before is not read again, and a flood of rows never holds more than the limit's bytes.
    #[test]
    fn kept_rows_are_read_once_and_stay_within_their_limit() {
        let mut cache = SearchCache::kept();
        let size = |page: &Option<String>| page.as_ref().map_or(0, String::len);
        let page = |n: i64| Some(format!("{n:04}").repeat(1024));
        for n in 0..10_000_i64 {
            let read = cache.row(|rows| &mut rows.entry_pages, n, size, || Ok(page(n))).unwrap();
            assert_eq!(read, page(n));
            assert!(cache.rows.bytes <= super::HELD_ROW_BYTES, "{} bytes held after {n} rows", cache.rows.bytes);
        }
        let kept = cache.row(|rows| &mut rows.entry_pages, 9_999, size, || panic!("read again"));
        assert_eq!(kept.unwrap(), page(9_999), "the last row read is kept");
        assert!(cache.rows.entry_pages.len() < 10_000, "older rows were let go");
        let mut passing = SearchCache::default();
        for _ in 0..2 {
            passing.row(|rows| &mut rows.entry_pages, 1, size, || Ok(page(1))).unwrap();
        }
        assert!(passing.rows.entry_pages.is_empty(), "a one-search cache keeps no row");
    }

    /// A kept cache tells the last build's added and changed sources as the per-search query does, reads
    /// them once, reads them again after another build commits, and past its limit asks per search.
    #[test]
    fn fresh_paths_are_the_last_builds_added_and_changed_sources_read_once() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("index.db");
        let build = rusqlite::Connection::open(&path).unwrap();
        build.execute_batch(crate::store::SCHEMA).unwrap();
        let events = |conn: &rusqlite::Connection, run: &str, rows: &[(&str, &str)]| {
            let tx = conn.unchecked_transaction().unwrap();
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_run', ?1)", [run]).unwrap();
            tx.execute(
                "INSERT INTO runs (id, started_at, finished_at, status, tool_version, fingerprint, vcs, summary)
                 VALUES (?1, '', '', 'ok', '', '', '{}', '{}')",
                [run],
            )
            .unwrap();
            for (seq, (kind, path)) in rows.iter().enumerate() {
                tx.execute(
                    "INSERT INTO run_events (run_id, seq, kind, path, labels) VALUES (?1, ?2, ?3, ?4, '')",
                    rusqlite::params![run, seq as i64, kind, path],
                )
                .unwrap();
            }
            tx.commit().unwrap();
        };
        let first =
            [("source_added", "a.md"), ("source_changed", "b.md"), ("source_removed", "c.md"), ("page_added", "p")];
        events(&build, "r1", &first);
        let reader = rusqlite::Connection::open(&path).unwrap();
        let asked = ["a.md", "b.md", "c.md", "d.md"];
        let mut cache = SearchCache::kept();
        cache.follow(&reader).unwrap();
        let kept = cache.fresh_paths(&reader, &asked).unwrap();
        assert_eq!(kept, crate::store::fresh_paths(&reader, &asked).unwrap());
        assert_eq!(kept, ["a.md", "b.md"].map(String::from).into_iter().collect());
        // Held: the events are not read again while the index is the same.
        reader.execute("DELETE FROM run_events", []).unwrap();
        assert_eq!(cache.fresh_paths(&reader, &asked).unwrap().len(), 2);
        // Another build commits: the next search's cache follows it.
        events(&build, "r2", &[("source_changed", "d.md")]);
        cache.follow(&reader).unwrap();
        assert_eq!(cache.fresh_paths(&reader, &asked).unwrap(), ["d.md".to_string()].into_iter().collect());
        // A build that added more (here, longer) paths than a cache keeps: each search asks for its own
        // results' paths.
        let long = "d/".repeat(500);
        let many: Vec<String> = (0..=super::HELD_FRESH_BYTES / 1000).map(|n| format!("{long}f{n}.md")).collect();
        let rows: Vec<(&str, &str)> = many.iter().map(|path| ("source_added", path.as_str())).collect();
        events(&build, "r3", &rows);
        cache.follow(&reader).unwrap();
        let (first, last) = (many[0].as_str(), many[many.len() - 1].as_str());
        let asked = [first, "d.md", last];
        assert_eq!(cache.fresh_paths(&reader, &asked).unwrap(), [first, last].map(String::from).into_iter().collect());
        assert!(matches!(cache.fresh, Some(None)), "too many to keep");
    }

    #[test]
    fn merge_adds_the_scores_of_rows_both_lists_hold_and_keeps_the_rest() {
        let a = [(1, 1.0), (3, 2.0), (7, 0.5)];
        let b = [(2, 4.0), (3, 0.25), (9, 1.0)];
        assert_eq!(merge(&a, &b), [(1, 1.0), (2, 4.0), (3, 2.25), (7, 0.5), (9, 1.0)]);
        assert_eq!(merge(&a, &[]), a);
    }
}
