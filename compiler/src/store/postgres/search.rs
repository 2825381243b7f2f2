//! What a search reads from the Postgres store, over one or more projects: the keyword pool from Postgres
//! full-text search (`ts_rank` over the chunks' weighted `tsvector`, GIN indexed), the nearest vectors from
//! pgvector (exact below [`EXACT_BELOW`] vectors, HNSW above), and the same chunk, page and run rows as the
//! SQLite index's `search.rs`. Permission and kind filters are conditions of the ranking query.

use std::collections::{HashMap, HashSet};

use knowledge_queries::Origin;
use postgres::Row;

use super::{PgStore, number};
use crate::store::{Citation, KindFilter, ResultSource, StoredHit, WantedKinds};

/// Below this many vectors in the store, a semantic search scans them exactly (it costs a few
/// milliseconds, and HNSW is approximate); above, it asks the HNSW index.
pub const EXACT_BELOW: f64 = 20_000.0;

/// Above this many matching chunks, the keyword pool is ranked among the chunks whose title holds a term
/// ([`PgSearch::keyword_pool`]): `ts_rank` costs about 7 µs a match, so every match of two common words in a
/// million chunks (80,000) took half a second.
const TITLE_TIER_ABOVE: f64 = 10_000.0;

/// The columns [`hit`] reads, first in a query over `knowledge_chunks c JOIN knowledge_sources s`.
const HIT_COLUMNS: &str = "c.seq, c.id, c.title, c.text, c.hash, c.revision, c.start_offset, c.end_offset,
                           c.start_line, c.end_line, s.uri, s.path, c.entity, s.project";

/// `ts_rank`'s weights for {D, C, B, A}: identifiers (C) half of text (B), title (A) twice it, as the
/// SQLite index's BM25 column weights.
const RANK_WEIGHTS: &str = "'{0.1, 0.25, 0.5, 1.0}'";

/// `ts_rank`'s length normalization: 1 divides by 1 + log(length), BM25's length penalty in spirit. On
/// Cranfield it scored best of `ts_rank_cd` with 0, 1, 2, 4, 8 and 16 and `ts_rank` with 0, 1 and 16, and
/// cost half `ts_rank_cd`'s time (docs/performance.md).
const RANK_NORMALIZATION: u32 = 1;

fn hit(row: &Row) -> StoredHit {
    StoredHit {
        seq: row.get(0),
        id: row.get(1),
        title: row.get(2),
        text: row.get(3),
        source: ResultSource {
            uri: row.get(10),
            path: row.get(11),
            revision: row.get(5),
            hash: row.get(4),
            project: Some(row.get(13)),
        },
        citation: Citation {
            start_offset: number(row, 6),
            end_offset: number(row, 7),
            start_line: number(row, 8),
            end_line: number(row, 9),
        },
        entity: row.get(12),
    }
}

/// The SQL condition on `knowledge_chunks c` alone that keeps chunks of the `kinds` wanted among the
/// sources not in `hidden`; `None` when no kind is wanted.
fn chunk_filter(kinds: &WantedKinds, hidden: &[i64]) -> Option<String> {
    let kinds = match kinds.filter("c.path") {
        KindFilter::All => "TRUE".to_string(),
        KindFilter::Except(condition) => format!("NOT ({condition})"),
        KindFilter::Only(condition) => format!("({condition})"),
        KindFilter::Nothing => return None,
    };
    let readable = if hidden.is_empty() {
        "TRUE".to_string()
    } else {
        // The ids come from the store itself, so inlining them is safe.
        let ids: Vec<String> = hidden.iter().map(i64::to_string).collect();
        format!("c.source_id NOT IN ({})", ids.join(","))
    };
    Some(format!("{readable} AND {kinds}"))
}

/// The labelled sources of `project` as (id, path, labels), by id: what a principal's access is decided over.
pub fn labelled_sources(store: &mut PgStore, project: &str) -> Result<Vec<(i64, String, String)>, postgres::Error> {
    let rows = store.rows(
        "SELECT id, path, labels FROM knowledge_sources WHERE project = $1 AND labels <> '' ORDER BY id",
        &[&project],
    )?;
    Ok(rows.into_iter().map(|row| (row.get(0), row.get(1), row.get(2))).collect())
}

/// Every (page slug, source path) a generated page of `project` quotes, by page and path.
pub fn page_quotes(store: &mut PgStore, project: &str) -> Result<Vec<(String, String)>, postgres::Error> {
    let rows = store.rows(
        "SELECT DISTINCT page, path FROM knowledge_citations WHERE project = $1 ORDER BY page, path",
        &[&project],
    )?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// Every index entry of `project`: its chunk id with the slug of the page it lists.
pub fn index_entry_pages(store: &mut PgStore, project: &str) -> Result<Vec<(String, String)>, postgres::Error> {
    let rows = store.rows(
        &format!(
            "SELECT id, identifiers FROM knowledge_chunks WHERE project = $1 AND {}",
            crate::store::origin_condition(Origin::Shard, "path")
        ),
        &[&project],
    )?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// Every text chunk of `project` as (source path, chunk id, heading path as JSON).
pub fn chunk_headings(store: &mut PgStore, project: &str) -> Result<Vec<(String, String, String)>, postgres::Error> {
    let rows = store.rows(
        "SELECT path, id, heading_path FROM knowledge_chunks WHERE project = $1 AND entity IS NULL",
        &[&project],
    )?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1), row.get(2))).collect())
}

/// The reads of one search over `projects` of a store.
pub struct PgSearch<'a> {
    pub store: &'a mut PgStore,
    pub projects: Vec<String>,
    /// Each word's chunk count as this search read it: the idf weights and the keyword pool's choice of
    /// ranking both ask.
    frequencies: HashMap<String, Option<f64>>,
}

impl<'a> PgSearch<'a> {
    /// The reads of one search over `projects`.
    pub fn new(store: &'a mut PgStore, projects: Vec<String>) -> PgSearch<'a> {
        PgSearch { store, projects, frequencies: HashMap::new() }
    }

    /// The number of chunks in the projects.
    pub fn chunk_total(&mut self) -> Result<f64, postgres::Error> {
        let rows = self.store.rows(
            "SELECT coalesce(sum(chunks), 0)::int8 FROM knowledge_projects WHERE project = ANY($1)",
            &[&self.projects],
        )?;
        Ok(rows[0].get::<_, i64>(0) as f64)
    }

    /// The number of chunks holding each of `words`: each word's lexeme, counted by the publish
    /// (`knowledge_terms`); a stop word has none.
    pub fn word_frequencies(&mut self, words: &[String]) -> Result<Vec<Option<f64>>, postgres::Error> {
        let unread: Vec<String> = words.iter().filter(|word| !self.frequencies.contains_key(*word)).cloned().collect();
        if !unread.is_empty() {
            let counts = self.read_frequencies(&unread)?;
            self.frequencies.extend(unread.into_iter().zip(counts));
        }
        Ok(words.iter().map(|word| self.frequencies[word]).collect())
    }

    fn read_frequencies(&mut self, words: &[String]) -> Result<Vec<Option<f64>>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT (SELECT min(coalesce((SELECT sum(t.chunks) FROM knowledge_terms t
                                         WHERE t.project = ANY($1) AND t.lexeme = l), 0))::int8
                     FROM unnest(tsvector_to_array(to_tsvector('english', w.word))) AS l)
             FROM unnest($2::text[]) WITH ORDINALITY AS w(word, at) ORDER BY w.at",
            &[&self.projects, &words],
        )?;
        Ok(rows.iter().map(|row| row.get::<_, Option<i64>>(0).map(|n| n as f64)).collect())
    }

    /// The keyword candidate pool for the query's terms, each given as its words (letters and digits only,
    /// so no query text is ever read as tsquery syntax), best first, each with its `ts_rank`: a term is a
    /// phrase, and a chunk matches any of them (a sentence-length question never requires all its words).
    pub fn keyword_pool(
        &mut self,
        kinds: &WantedKinds,
        hidden: &[i64],
        phrases: &[Vec<String>],
        pool: usize,
    ) -> Result<Vec<(StoredHit, f64)>, postgres::Error> {
        let Some(filter) = chunk_filter(kinds, hidden) else { return Ok(Vec::new()) };
        let Some(any) = tsquery(phrases, " | ") else { return Ok(Vec::new()) };
        // Rank on the chunks alone and join only the pool, as the SQLite index does. Ranking costs a
        // `ts_rank` per match (about 7 µs), and an OR of common words matches much of a large store (80,000
        // of a million chunks for "proposal error"), so the chunks holding every term are ranked first, and
        // the OR of the terms fills the pool only when they are fewer. They stay in it: `ts_rank` knows no
        // rarity, so a chunk with a common term in its title would outrank them, and the re-rank that
        // follows (which weighs each term by its rarity) would never see them.
        let every = tsquery(phrases, " & ").filter(|every| *every != any);
        let mut ranked = match &every {
            Some(every) => self.ranked(&any, Matching::Every(every), &filter, pool)?,
            None => Vec::new(),
        };
        if ranked.len() >= pool {
            return Ok(ranked);
        }
        // Where the terms match more chunks than ranking each costs little, the rest of the pool comes from
        // the chunks whose title holds a term (a narrow index of its own): a title weighs most, so these are
        // the OR's best (at a million chunks they held the whole exact pool of every benchmark query;
        // docs/performance.md). Too few of them: every match.
        let kept: HashSet<i64> = ranked.iter().map(|(hit, _)| hit.seq).collect();
        let new = |rest: Vec<(StoredHit, f64)>| -> Vec<(StoredHit, f64)> {
            rest.into_iter().filter(|(hit, _)| !kept.contains(&hit.seq)).collect()
        };
        // Asked for as many more as are kept, which they may hold again.
        let (wanted, asked) = (pool - kept.len(), pool + kept.len());
        let mut rest = Vec::new();
        if self.matches_at_most(phrases)? > TITLE_TIER_ABOVE {
            rest = new(self.ranked(&any, Matching::Title, &filter, asked)?);
        }
        if rest.len() < wanted {
            rest = new(self.ranked(&any, Matching::Any, &filter, asked)?);
        }
        ranked.extend(rest.into_iter().take(wanted));
        Ok(ranked)
    }

    /// At most how many chunks of the projects match any of `phrases`: each phrase at most as many as its
    /// rarest word, from the publish's counts (no scan; the search read them for its idf weights).
    fn matches_at_most(&mut self, phrases: &[Vec<String>]) -> Result<f64, postgres::Error> {
        let words: Vec<String> = phrases.iter().flatten().cloned().collect();
        let mut counts = self.word_frequencies(&words)?.into_iter();
        let mut total = 0.0;
        for phrase in phrases {
            let rarest = phrase.iter().filter_map(|_| counts.next().flatten()).fold(f64::INFINITY, f64::min);
            if rarest.is_finite() {
                total += rarest;
            }
        }
        Ok(total)
    }

    /// The `pool` best chunks by `ts_rank` for the tsquery `any`, among the chunks `filter` keeps that
    /// `matching` selects.
    fn ranked(
        &mut self,
        any: &str,
        matching: Matching<'_>,
        filter: &str,
        pool: usize,
    ) -> Result<Vec<(StoredHit, f64)>, postgres::Error> {
        let (matched, every) = match matching {
            Matching::Any => ("c.document @@ q", None),
            Matching::Every(every) => ("c.document @@ to_tsquery('english', $4)", Some(every)),
            // The title's own `tsvector`, as the index `knowledge_chunks_title` is made (migrations 3 and 4).
            Matching::Title => ("to_tsvector('english', c.title) @@ q", None),
        };
        let sql = format!(
            "SELECT {HIT_COLUMNS}, top.score FROM (
                 SELECT c.seq, ts_rank({RANK_WEIGHTS}, c.document, q, {RANK_NORMALIZATION})::float8 AS score
                 FROM knowledge_chunks c, to_tsquery('english', $2) AS q
                 WHERE c.project = ANY($1) AND {matched} AND {filter}
                 ORDER BY score DESC, c.seq LIMIT $3
             ) AS top JOIN knowledge_chunks c ON c.seq = top.seq JOIN knowledge_sources s ON s.id = c.source_id
             ORDER BY top.score DESC, c.seq"
        );
        let limit = i64::try_from(pool).unwrap_or(i64::MAX);
        let rows = match every {
            Some(every) => self.store.rows(&sql, &[&self.projects, &any, &limit, &every])?,
            None => self.store.rows(&sql, &[&self.projects, &any, &limit])?,
        };
        Ok(rows.iter().map(|row| (hit(row), row.get::<_, f64>(14))).collect())
    }

    /// The `k` chunks nearest `vector` in the generation `model`, of the `kinds` wanted among the sources not
    /// in `hidden`, nearest first, each with its cosine similarity.
    pub fn nearest(
        &mut self,
        model: &str,
        vector: &[f32],
        k: usize,
        kinds: &WantedKinds,
        hidden: &[i64],
    ) -> Result<Vec<(StoredHit, f64)>, postgres::Error> {
        let Some(filter) = chunk_filter(kinds, hidden) else { return Ok(Vec::new()) };
        let literal = format!("[{}]", vector.iter().map(f32::to_string).collect::<Vec<_>>().join(","));
        let dimensions = vector.len();
        // The planner's estimate of the table's size decides: a count would itself scan.
        let estimate =
            self.store.rows("SELECT reltuples::float8 FROM pg_class WHERE relname = 'knowledge_vectors'", &[])?;
        let estimate: f64 = estimate.first().map_or(0.0, |row| row.get(0));
        let distance = if estimate < EXACT_BELOW {
            "v.embedding <=> $2::text::vector".to_string()
        } else {
            format!("v.embedding::vector({dimensions}) <=> $2::text::vector({dimensions})")
        };
        let sql = format!(
            "SELECT {HIT_COLUMNS}, nearest.distance FROM (
                 SELECT v.chunk_seq, ({distance})::float8 AS distance
                 FROM knowledge_vectors v JOIN knowledge_chunks c ON c.seq = v.chunk_seq
                 WHERE v.project = ANY($1) AND v.model = $3 AND v.dimensions = $5 AND {filter}
                 ORDER BY {distance} LIMIT $4
             ) AS nearest JOIN knowledge_chunks c ON c.seq = nearest.chunk_seq
               JOIN knowledge_sources s ON s.id = c.source_id
             ORDER BY nearest.distance, c.seq"
        );
        let statement = self.store.prepared(&sql)?;
        let mut tx = self.store.client.transaction()?;
        // HNSW filtered by project, kind and permission: keep scanning until k rows pass the filter.
        tx.batch_execute("SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = 100")?;
        let rows = tx.query(
            &statement,
            &[
                &self.projects,
                &literal,
                &model,
                &i64::try_from(k).unwrap_or(i64::MAX),
                &i32::try_from(dimensions).unwrap_or(i32::MAX),
            ],
        )?;
        tx.commit()?;
        Ok(rows.iter().map(|row| (hit(row), 1.0 - row.get::<_, f64>(14))).collect())
    }

    /// One chunk by its row.
    pub fn chunk(&mut self, seq: i64) -> Result<Option<StoredHit>, postgres::Error> {
        let rows = self.store.rows(
            &format!(
                "SELECT {HIT_COLUMNS} FROM knowledge_chunks c JOIN knowledge_sources s ON s.id = c.source_id
                 WHERE c.seq = $1 AND c.project = ANY($2)"
            ),
            &[&seq, &self.projects],
        )?;
        Ok(rows.first().map(hit))
    }

    /// The page an index entry (a shard's chunk, by row) lists.
    pub fn entry_page(&mut self, seq: i64) -> Result<Option<String>, postgres::Error> {
        let rows = self.store.rows("SELECT identifiers FROM knowledge_chunks WHERE seq = $1", &[&seq])?;
        Ok(rows.first().map(|row| row.get(0)))
    }

    /// The sources a page quotes, each with whether the page quotes it for its title.
    pub fn page_sources(&mut self, page: &str) -> Result<Vec<(String, bool)>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT DISTINCT path, signal = 'title' FROM knowledge_citations WHERE project = ANY($1) AND page = $2",
            &[&self.projects, &page],
        )?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    /// A page's title and aliases (JSON).
    pub fn page_names(&mut self, page: &str) -> Result<Option<(String, String)>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT title, aliases FROM knowledge_pages WHERE project = ANY($1) AND slug = $2 ORDER BY project LIMIT 1",
            &[&self.projects, &page],
        )?;
        Ok(rows.first().map(|row| (row.get(0), row.get(1))))
    }

    /// Which of `paths` the projects' last builds added or changed.
    pub fn fresh_paths(&mut self, paths: &[&str]) -> Result<HashSet<String>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT DISTINCT e.path FROM knowledge_run_events e
             JOIN knowledge_projects p ON p.project = e.project AND p.last_run = e.run_id
             WHERE e.project = ANY($1) AND e.kind IN ('source_added', 'source_changed') AND e.path = ANY($2)",
            &[&self.projects, &paths],
        )?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// Whether a page quotes bytes `start..end` of the source `uri` at `revision`.
    pub fn quoted(&mut self, uri: &str, revision: &str, start: u32, end: u32) -> Result<bool, postgres::Error> {
        let offset = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
        let (start, end) = (offset(start), offset(end));
        let rows = self.store.rows(
            "SELECT EXISTS (SELECT 1 FROM knowledge_citations WHERE project = ANY($1) AND source_ref = $2
                            AND revision = $3 AND start_offset < $5 AND end_offset > $4)",
            &[&self.projects, &uri, &revision, &start, &end],
        )?;
        Ok(rows[0].get(0))
    }

    /// The chunks holding a page's quotes (and their sources' paths), in footnote order, each once.
    pub fn cited_chunks(&mut self, page: &str) -> Result<Vec<(Option<i64>, String)>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT (SELECT c.seq FROM knowledge_chunks c
                     WHERE c.project = t.project AND c.path = t.path AND c.start_offset <= t.start_offset
                           AND t.start_offset < c.end_offset AND c.entity IS NULL
                     ORDER BY c.ordinal LIMIT 1), t.path
             FROM knowledge_citations t WHERE t.project = ANY($1) AND t.page = $2 ORDER BY t.note",
            &[&self.projects, &page],
        )?;
        let mut seen = HashSet::new();
        Ok(rows
            .iter()
            .map(|row| (row.get::<_, Option<i64>>(0), row.get::<_, String>(1)))
            .filter(|neighbour| seen.insert(neighbour.clone()))
            .collect())
    }

    /// The first chunk of each page that lists the source at `path` (and the page's path).
    pub fn quoting_pages(&mut self, path: &str) -> Result<Vec<(Option<i64>, String)>, postgres::Error> {
        let page = Origin::Page.prefix();
        let rows = self.store.rows(
            "SELECT (SELECT c.seq FROM knowledge_chunks c
                     WHERE c.project = p.project AND c.path = $3::text || p.page ORDER BY c.ordinal LIMIT 1),
                    $3::text || p.page
             FROM knowledge_page_sources p WHERE p.project = ANY($1) AND p.path = $2 ORDER BY p.page",
            &[&self.projects, &path, &page],
        )?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    /// The build the first project holds and when it finished: across several projects, the first one's
    /// build names a pack's freshness.
    pub fn index_run(&mut self) -> Result<(Option<String>, Option<String>), postgres::Error> {
        let rows = self.store.rows(
            "SELECT p.last_run, r.finished_at FROM knowledge_projects p
             LEFT JOIN knowledge_runs r ON r.project = p.project AND r.id = p.last_run
             WHERE p.project = ANY($1) ORDER BY array_position($1, p.project) LIMIT 1",
            &[&self.projects],
        )?;
        Ok(rows.first().map_or((None, None), |row| (row.get(0), row.get(1))))
    }

    /// A source's current revision and its lint facts (JSON) in `project`, when it is published.
    pub fn source_state(&mut self, project: &str, path: &str) -> Result<Option<(String, String)>, postgres::Error> {
        let rows = self.store.rows(
            "SELECT revision, lint_facts FROM knowledge_sources WHERE project = $1 AND path = $2",
            &[&project, &path],
        )?;
        Ok(rows.first().map(|row| (row.get(0), row.get(1))))
    }
}

/// A `to_tsquery` text: each term's words as a phrase, the phrases joined by `operator`; `None` when no term
/// has a word.
fn tsquery(phrases: &[Vec<String>], operator: &str) -> Option<String> {
    let phrases: Vec<String> =
        phrases.iter().filter(|words| !words.is_empty()).map(|words| format!("({})", words.join(" <-> "))).collect();
    (!phrases.is_empty()).then(|| phrases.join(operator))
}

/// Which chunks a keyword ranking reads.
#[derive(Clone, Copy)]
enum Matching<'a> {
    /// Those holding any term.
    Any,
    /// Those holding every term: the tsquery of their AND.
    Every(&'a str),
    /// Those whose title holds a term.
    Title,
}

#[cfg(test)]
mod tests {
    #[test]
    fn terms_become_tsquery_phrases() {
        let phrases =
            vec![vec!["std".to_string(), "fs".to_string(), "read".to_string()], vec![], vec!["it".to_string()]];
        assert_eq!(super::tsquery(&phrases, " | ").as_deref(), Some("(std <-> fs <-> read) | (it)"));
        assert_eq!(super::tsquery(&phrases[1..2], " | "), None);
    }
}
