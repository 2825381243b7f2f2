//! Search over the index (keyword, semantic, hybrid): one function that the CLI and the MCP server call.
//!
//! Any query text is safe: it is split into words, each word is quoted for FTS5, and the words are joined
//! with OR, so FTS5 syntax in a query is only ever matched as text and a sentence-length query never
//! requires all its words. BM25 (title weighted over body) picks a candidate pool; the pool is re-ranked by
//! how many distinct query terms a chunk covers and whether it holds the query as a phrase, so results that
//! match more of the query, and match it exactly, rank higher.

use rustc_hash::{FxHashMap, FxHashSet};

use rusqlite::Connection;

use crate::retrieval::access::Access;
use crate::retrieval::terms::{Held, QueryStems, StemCache, query_terms, stem_word, stems, words};
use knowledge_queries::{SourceRef, each_lowercased_word};
use rust_stemmers::{Algorithm, Stemmer};

mod fusion;
mod index;
mod keyword;
mod pool;
mod postgres;
mod results;

use fusion::{EXPAND_FROM, append_related, expand, fresh_paths, fuse};
use index::Semantic;
pub(crate) use index::{SearchIndex, SqliteIndex};
use keyword::{keyword, snippet};
pub use pool::SearchCache;
pub(crate) use postgres::{PgIndex, ProjectScope, StoreScope};
pub use postgres::{StoreReadError, search_postgres};
pub use results::*;

/// Runs a search over what `access` may read in the SQLite index. Unreadable chunks are filtered inside
/// each retriever (the keyword ranking query, the vector scan), so they reach neither fusion, ranking,
/// snippets nor counts. Semantic and hybrid modes need an embeddings generation; without one the answer is
/// keyword results, marked degraded with the reason.
pub fn search(conn: &Connection, request: &SearchRequest, access: &Access) -> rusqlite::Result<SearchResponse> {
    search_cached(conn, &mut SearchCache::default(), request, access)
}

/// [`search`] through `cache`, which keeps what this connection's searches read (a server's connection
/// keeps one across requests; it must not be shared with another connection).
pub fn search_cached(
    conn: &Connection,
    cache: &mut SearchCache,
    request: &SearchRequest,
    access: &Access,
) -> rusqlite::Result<SearchResponse> {
    search_in(&mut SqliteIndex::new(conn, cache)?, request, access)
}

/// [`search`] over any index: the SQLite one or the Postgres store.
pub(crate) fn search_in<I: SearchIndex>(
    index: &mut I,
    request: &SearchRequest,
    access: &Access,
) -> Result<SearchResponse, I::Error> {
    // The query's weighted stems, read once: the keyword rerank, hybrid's reported coverage and the
    // snippets all compare against them.
    let stemmer = Stemmer::create(Algorithm::English);
    let total = index.chunk_total()?;
    let query =
        QueryStems::read_from(&stemmer, &query_terms(&request.query), total, |words| index.word_frequencies(words))?;
    let mut cache = StemCache::new(&query);
    let mut response = retrieve(index, request, access, &query, &mut cache)?;
    let hybrid = response.mode == SearchMode::Hybrid.as_str();
    let results = std::mem::take(&mut response.results);
    response.results = finish(index, &response.terms, results, hybrid.then_some(&query), &mut cache, request.limit)?;
    let stems: FxHashSet<String> = query.weights.iter().map(|(stem, _)| stem.clone()).collect();
    for result in &mut response.results {
        result.snippet =
            snippet(&result.text, &stems, &mut cache, request.highlight).unwrap_or_else(|| leading_text(&result.text));
    }
    Ok(response)
}

/// Every candidate of the requested mode, ranked by its retrievers (and fused), before the final rerank.
fn retrieve<I: SearchIndex>(
    index: &mut I,
    request: &SearchRequest,
    access: &Access,
    query: &QueryStems,
    cache: &mut StemCache,
) -> Result<SearchResponse, I::Error> {
    if request.mode == SearchMode::Keyword {
        return keyword(index, request, access, query, cache);
    }
    let (model, provider, mut semantic) = match index.semantic(request, access, (request.limit * 4).max(50))? {
        Semantic::Ranked { model, provider, results } => (model, provider, results),
        Semantic::Unavailable(reason) => {
            let mut response = keyword(index, request, access, query, cache)?;
            response.degraded = true;
            response.degraded_reason = Some(reason);
            return Ok(response);
        }
    };
    for result in &mut semantic {
        result.reason.push("semantic_match".into());
    }
    let semantic_floor = semantic_floor(&semantic);
    let mut response = if request.mode == SearchMode::Semantic {
        SearchResponse { results: semantic, ..empty_response(request) }
    } else {
        let mut response = keyword(index, request, access, query, cache)?;
        let fused = fuse(std::mem::take(&mut response.results), semantic);
        // Graph expansion: the best candidates bring in what they cite or what cites them. Fused as a
        // third ranking it lowered nDCG@10 on the judged Rust book questions (docs/performance.md), so the
        // neighbours follow the retrieved candidates: a candidate that is also a neighbour gains the
        // reason, and the others fill an answer the retrievers could not. Kinds and permissions are checked
        // before a neighbour is read.
        let allowed =
            |path: &str, entity: Option<&str>| access.can_read_path(path) && request.wants_chunk(path, entity);
        let related = expand(index, &fused[..fused.len().min(EXPAND_FROM)], &allowed)?;
        response.results = append_related(fused, related);
        response
    };
    response.mode = request.mode.as_str().into();
    response.semantic_floor = semantic_floor;
    response.fake_embeddings = provider == "fake";
    response.embeddings_model = Some(model);
    Ok(response)
}

/// The rank of [`SearchResponse::semantic_floor`] in the semantic list.
pub const SEMANTIC_FLOOR_RANK: usize = 20;

/// The cosine of the semantic list's [`SEMANTIC_FLOOR_RANK`]th nearest chunk, or of its farthest.
fn semantic_floor(semantic: &[SearchResult]) -> Option<f64> {
    semantic.iter().filter_map(|result| result.scores.semantic).take(SEMANTIC_FLOOR_RANK).last()
}

/// Words that ask for an overview rather than name a topic: a query of a page's concept name and these
/// names the concept ("what is ownership", "everything about lifetimes").
pub(crate) const OVERVIEW_WORDS: &[&str] = &[
    "all",
    "concept",
    "define",
    "definition",
    "everything",
    "explain",
    "explained",
    "guide",
    "introduction",
    "mean",
    "meaning",
    "means",
    "overview",
    "summary",
    "summarize",
    "tell",
];

/// The last stage of every mode, over all ranked candidates: pages placed after the sources they quote,
/// dedupe, and cut to `limit`.
///
/// A generated page or index entry only restates its sources, so it ranks below every candidate of every
/// source it quotes (reason `below_sources`): the sources answer the question, the page repeats them.
/// It keeps its rank when the query names its concept and the page gathers it from two or more sources,
/// none of which is the concept's own document: every query word is in the page's title or aliases,
/// apart from overview words (reason `names_concept`). A page whose concept is a document's title (a
/// chapter) follows that document, which is the answer; the page adds what links to it.
///
/// Score factors for freshness, citation by a page and wiki authority were measured on the judged Rust
/// book questions and taken out: each lowered
/// every mode's nDCG@10 (hybrid most, where the then reciprocal-rank scores were close together and a 10 %
/// factor jumped many ranks; docs/performance.md). What they marked stays as reasons: `fresh_source` (the last
/// build added or changed the source) and `cited_by_page` (a generated page quotes the chunk).
fn finish<I: SearchIndex>(
    index: &mut I,
    terms: &[String],
    mut results: Vec<SearchResult>,
    hybrid_query: Option<&QueryStems>,
    cache: &mut StemCache,
    limit: usize,
) -> Result<Vec<SearchResult>, I::Error> {
    let stemmer = Stemmer::create(Algorithm::English);
    for result in &mut results {
        result.page = match result.kind {
            ResultKind::WikiPage => SourceRef::from_path(&result.source.path).page_slug().map(str::to_string),
            ResultKind::IndexEntry => index.entry_page(result.rowid)?,
            ResultKind::SourceChunk | ResultKind::LegacyItem | ResultKind::Entity => None,
        };
    }
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    // Navigation (a table of contents, a list of links, a text of only headings and markup) points at
    // answers and holds none: it is never a result. Links still resolve through it, from the sources.
    results.retain(|result| !knowledge_queries::is_navigation(&result.text));
    let results = pages_after_sources(index, &stemmer, terms, results)?;
    let mut results = dedupe(results);
    results.truncate(limit);

    // What is only reported, never ranked by, is worked out for the returned results alone.
    let fresh = fresh_paths(index, &results)?;
    for result in &mut results {
        if let (Some(query), true) = (hybrid_query, result.scores.keyword == 0.0) {
            let mut held = Held::new(query);
            each_lowercased_word(&result.title, |word| held.read(query, cache, word));
            each_lowercased_word(&result.text, |word| held.read(query, cache, word));
            result.scores.coverage = query.coverage(|stem| held.has_stem(query, stem));
        }
        if fresh.contains(&result.source.path) {
            result.reason.push("fresh_source".into());
        }
        if result.kind == ResultKind::SourceChunk
            && index.quoted(result.rowid, &result.source.uri, &result.source.revision, &result.citation)?
        {
            result.reason.push("cited_by_page".into());
        }
    }
    Ok(results)
}

/// Moves each page result (a wiki page's chunk or an index entry) to just below the last candidate of
/// every source its page quotes, unless the query names the page's concept. Order is otherwise kept.
fn pages_after_sources<I: SearchIndex>(
    index: &mut I,
    stemmer: &Stemmer,
    terms: &[String],
    results: Vec<SearchResult>,
) -> Result<Vec<SearchResult>, I::Error> {
    // Each source's last candidate: a page follows everything its sources hold.
    let mut last_of: FxHashMap<&str, usize> = FxHashMap::default();
    for (at, result) in results.iter().enumerate() {
        if result.kind == ResultKind::SourceChunk {
            last_of.insert(result.source.path.as_str(), at);
        }
    }
    let query: FxHashSet<String> = terms
        .iter()
        .flat_map(|t| words(t))
        .filter(|w| !OVERVIEW_WORDS.contains(&w.as_str()))
        .map(|w| stem_word(stemmer, &w))
        .collect();
    // (position to sort by, rank within it); a moved page follows the source it waits for.
    let mut keyed: Vec<((usize, usize), SearchResult)> = Vec::with_capacity(results.len());
    let mut placed: Vec<(usize, &'static str)> = Vec::with_capacity(results.len());
    for (at, result) in results.iter().enumerate() {
        let Some(page) = result.page.as_deref() else {
            placed.push((at, ""));
            continue;
        };
        let quoted = index.page_sources(page)?;
        let gathered = quoted.iter().map(|(path, _)| path).collect::<FxHashSet<_>>().len() >= 2;
        if gathered && !quoted.iter().any(|(_, titled)| *titled) {
            let (title, aliases) = index.page_names(page)?.unwrap_or_default();
            let named: FxHashSet<String> = stems(stemmer, &title).into_iter().chain(stems(stemmer, &aliases)).collect();
            if !query.is_empty() && query.iter().all(|stem| named.contains(stem)) {
                placed.push((at, "names_concept"));
                continue;
            }
        }
        let floor = quoted.iter().filter_map(|(path, _)| last_of.get(path.as_str())).max().copied();
        match floor {
            Some(floor) if floor > at => placed.push((floor, "below_sources")),
            _ => placed.push((at, "")),
        }
    }
    for ((position, reason), (at, mut result)) in placed.into_iter().zip(results.into_iter().enumerate()) {
        if !reason.is_empty() {
            result.reason.push(reason.into());
        }
        // A page moved below a source sorts after it (second key 1) and after pages moved there before it.
        keyed.push(((position, usize::from(position != at)), result));
    }
    keyed.sort_by_key(|(key, _)| *key);
    Ok(keyed.into_iter().map(|(_, result)| result).collect())
}

/// One result per text and per page. A chunk whose text (by hash) a better result already holds, a
/// section copied between files, is dropped and its source named in the better one's `also_in`. An index
/// entry is dropped when a chunk of its page ranks above it: the page says more than its catalog row.
fn dedupe(results: Vec<SearchResult>) -> Vec<SearchResult> {
    let mut kept: Vec<SearchResult> = Vec::with_capacity(results.len());
    let mut by_text: FxHashMap<String, usize> = FxHashMap::default();
    let mut pages: FxHashSet<String> = FxHashSet::default();
    for result in results {
        if let Some(&at) = by_text.get(&result.source.hash) {
            let original = &mut kept[at];
            if original.source.uri != result.source.uri && !original.also_in.contains(&result.source.uri) {
                original.also_in.push(result.source.uri);
            }
            continue;
        }
        if result.kind == ResultKind::IndexEntry && result.page.as_ref().is_some_and(|page| pages.contains(page)) {
            continue;
        }
        if let (ResultKind::WikiPage, Some(page)) = (result.kind, &result.page) {
            pages.insert(page.clone());
        }
        by_text.insert(result.source.hash.clone(), kept.len());
        kept.push(result);
    }
    kept
}

/// A stored chunk as an unscored result.
fn unscored(hit: crate::store::StoredHit) -> SearchResult {
    SearchResult {
        rowid: hit.seq,
        kind: if hit.entity.is_some() { ResultKind::Entity } else { result_kind(&hit.source.path) },
        id: hit.id,
        title: hit.title,
        text: hit.text,
        snippet: String::new(),
        score: 0.0,
        scores: Scores { keyword: 0.0, bm25: 0.0, coverage: 0.0, semantic: None, fused: None },
        source: hit.source,
        citation: hit.citation,
        reason: Vec::new(),
        also_in: Vec::new(),
        entity: hit.entity.map(EntityMatch::from_slug),
        page: None,
    }
}

/// The start of a text, on one line, for results no keyword matched.
fn leading_text(text: &str) -> String {
    // Shown readable as a snippet is; of a long chunk only its first kilobyte is read.
    let head = knowledge_queries::floor_char_boundary(text, 1024);
    let shown = knowledge_queries::wiki::readable_excerpt(&text[..head]);
    let flat = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut snippet: String = flat.chars().take(160).collect();
    if snippet.len() < flat.len() || head < text.len() {
        snippet.push('…');
    }
    crate::escape_text(&snippet).into_owned()
}

/// An answer to `request` with no results yet: its query terms, keyword mode, not degraded.
fn empty_response(request: &SearchRequest) -> SearchResponse {
    SearchResponse {
        query: request.query.clone(),
        terms: query_terms(&request.query),
        terms_dropped: crate::retrieval::terms::terms_dropped(&request.query),
        mode: "keyword".into(),
        degraded: false,
        degraded_reason: None,
        embeddings_model: None,
        fake_embeddings: false,
        results: Vec::new(),
        semantic_floor: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{Citation, ResultKind, ResultSource, Scores, SearchResult, dedupe};

    fn result(id: &str, kind: ResultKind, uri: &str, hash: &str, page: Option<&str>) -> SearchResult {
        SearchResult {
            rowid: 0,
            kind,
            id: id.to_string(),
            title: String::new(),
            text: String::new(),
            snippet: String::new(),
            score: 0.0,
            scores: Scores { keyword: 0.0, bm25: 0.0, coverage: 0.0, semantic: None, fused: None },
            source: ResultSource {
                uri: uri.to_string(),
                path: uri.to_string(),
                revision: String::new(),
                hash: hash.to_string(),
                project: None,
            },
            citation: Citation { start_offset: 0, end_offset: 0, start_line: 1, end_line: 1 },
            reason: Vec::new(),
            also_in: Vec::new(),
            entity: None,
            page: page.map(str::to_string),
        }
    }

    #[test]
    fn dedupe_keeps_the_best_of_a_text_and_drops_an_entry_below_its_page() {
        let ranked = vec![
            result("entry-a", ResultKind::IndexEntry, "knowledge://index/s", "h1", Some("a")),
            result("page-a", ResultKind::WikiPage, "knowledge://wiki/a", "h2", Some("a")),
            result("x", ResultKind::SourceChunk, "file://x.md", "h3", None),
            result("copy", ResultKind::SourceChunk, "file://copy/x.md", "h3", None),
            result("again", ResultKind::SourceChunk, "file://copy/x.md", "h3", None),
            result("page-b", ResultKind::WikiPage, "knowledge://wiki/b", "h4", Some("b")),
            result("entry-b", ResultKind::IndexEntry, "knowledge://index/s", "h5", Some("b")),
        ];
        let kept = dedupe(ranked);
        let ids: Vec<&str> = kept.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["entry-a", "page-a", "x", "page-b"], "an entry above its page stays; one below goes");
        assert_eq!(kept[2].also_in, ["file://copy/x.md"], "each copy's source is named once");
    }

    /// A source chunk as a retriever returns it: its keyword score and its cosine.
    fn chunk(rowid: i64, path: &str, keyword: f64, semantic: Option<f64>) -> SearchResult {
        let mut result = result(&format!("{path}-{rowid}"), ResultKind::SourceChunk, path, &rowid.to_string(), None);
        result.rowid = rowid;
        result.scores.keyword = keyword;
        result.scores.semantic = semantic;
        result
    }

    /// A list that found nothing, a keyword list whose best is 0, and scores that are no number or below 0
    /// (a corrupt vector, a provider's odd cosine): what is left ranks, and no score is made that is not one.
    #[test]
    fn fusion_of_an_empty_list_or_unusable_scores_ranks_by_what_is_left() {
        let paths = |fused: &[SearchResult]| fused.iter().map(|r| r.source.path.clone()).collect::<Vec<_>>();
        let fused =
            super::fusion::fuse(vec![], vec![chunk(1, "a.md", 0.0, Some(0.5)), chunk(2, "b.md", 0.0, Some(0.7))]);
        assert_eq!(paths(&fused), ["b.md", "a.md"], "the semantic list alone");
        let fused = super::fusion::fuse(vec![chunk(1, "a.md", 3.0, None), chunk(2, "b.md", 6.0, None)], vec![]);
        assert_eq!(paths(&fused), ["b.md", "a.md"], "the keyword list alone");
        let fused = super::fusion::fuse(vec![chunk(1, "a.md", 0.0, None), chunk(2, "b.md", 0.0, None)], vec![]);
        assert!(fused.iter().all(|r| r.score == 0.0), "a best keyword score of 0 divides nothing");
        let keyword = vec![chunk(1, "nan.md", f64::NAN, None), chunk(2, "b.md", 2.0, None)];
        let semantic = vec![chunk(3, "negative.md", 0.0, Some(-0.4)), chunk(4, "c.md", 0.0, Some(f64::NAN))];
        let fused = super::fusion::fuse(keyword, semantic);
        assert_eq!(fused[0].source.path, "b.md", "{:?}", paths(&fused));
        assert!(fused.iter().all(|r| r.score.is_finite() && r.score >= 0.0), "{:?}", paths(&fused));
        assert!(fused.iter().all(|r| r.scores.fused.is_some_and(|f| f.is_finite() && f >= 0.0)));
    }

    #[test]
    fn fusion_ranks_documents_so_one_cannot_fill_the_top_with_its_chunks() {
        // Both retrievers place three chunks of `middle.md` in the middle; the keyword list is sure of
        // `sure.md` (its score twice any other), which the semantic list ranks last, and the semantic list
        // ranks `semantic.md` first, which the keyword list did not find.
        let keyword = vec![
            chunk(1, "sure.md", 20.0, None),
            chunk(2, "middle.md", 6.0, None),
            chunk(3, "middle.md", 5.9, None),
            chunk(4, "middle.md", 5.8, None),
        ];
        let semantic = vec![
            chunk(5, "semantic.md", 0.0, Some(0.72)),
            chunk(2, "middle.md", 0.0, Some(0.60)),
            chunk(3, "middle.md", 0.0, Some(0.59)),
            chunk(4, "middle.md", 0.0, Some(0.58)),
            chunk(1, "sure.md", 0.0, Some(0.45)),
        ];
        let fused = super::fusion::fuse(keyword, semantic);
        let paths: Vec<&str> = fused.iter().map(|r| r.source.path.as_str()).collect();
        assert_eq!(paths, ["semantic.md", "sure.md", "middle.md", "middle.md", "middle.md"], "each chunk once");
        assert_eq!(fused[2].rowid, 2, "a document's best chunk is its own best fused chunk");
        // A chunk's fused score: 0.8 × its cosine + 0.2 × its keyword score over the list's best.
        let fused_of = |at: usize| fused[at].scores.fused.unwrap();
        assert!((fused_of(1) - (0.8 * 0.45 + 0.2 * 1.0)).abs() < 1e-12, "{}", fused_of(1));
        assert!((fused_of(0) - 0.8 * 0.72).abs() < 1e-12, "a list that did not find a chunk gives it 0");
        // The n-th chunk of a document scores its document's score times 0.7ⁿ.
        let scores: Vec<f64> = fused.iter().map(|r| r.score).collect();
        assert!((scores[3] - scores[2] * 0.7).abs() < 1e-12, "{scores:?}");
        assert!((scores[4] - scores[2] * 0.49).abs() < 1e-12, "{scores:?}");
    }

    /// Snippets of hostile markup (unbalanced and nested backticks, fences of both kinds, cut links,
    /// comments, anchors, terminal escapes, multibyte text) never panic and never pass a control character
    /// through in either highlight.
    #[test]
    fn snippets_of_hostile_markup_never_panic_nor_pass_controls() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let query: rustc_hash::FxHashSet<String> =
            ["raw", "pointers"].iter().map(|w| super::stem_word(&stemmer, w)).collect();
        let pieces = [
            "raw",
            "pointers",
            "x",
            "é",
            "`",
            "``",
            "```",
            "```rust\n",
            "~~~\n",
            "\n",
            " ",
            "> ",
            "# ",
            "- ",
            "[",
            "]",
            "(",
            ")",
            "[a][b]",
            "[x]: y",
            "<!--",
            "-->",
            "<a id=\"q\"></a>",
            "[^1]",
            "\u{1b}[1m",
            "**",
            "日本",
        ];
        let mut state = 0x1234_5678_u64;
        let mut next = |below: usize| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % below
        };
        let mut cache = super::StemCache::for_stems(&query);
        for _ in 0..20_000 {
            let text: String = (0..1 + next(120)).map(|_| pieces[next(pieces.len())]).collect();
            for highlight in [super::Highlight::Markdown, super::Highlight::Ansi] {
                let (open, close) = highlight.marks();
                if let Some(snippet) = super::snippet(&text, &query, &mut cache, highlight) {
                    let unmarked = snippet.replace(open, "").replace(close, "");
                    assert!(!unmarked.contains('\u{1b}'), "{text:?} gave {snippet:?}");
                }
            }
            assert!(!super::leading_text(&text).contains('\u{1b}'), "{text:?}");
        }
    }

    /// The re-rank's reasons and boosts: a phrase counts only as a run of its words in order (a repeated word
    /// included), words match in any case, and a title matches only by its own words.
    #[test]
    fn the_rerank_finds_the_phrase_in_order_and_the_query_words_in_any_case() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let terms: Vec<String> = ["borrow", "checker", "checker"].iter().map(|w| (*w).to_string()).collect();
        let query = super::QueryStems::read_from(&stemmer, &terms[..2], 100.0, |words| {
            Ok::<_, ()>(words.iter().map(|_| Some(10.0)).collect())
        })
        .unwrap();
        let ranked = |title: &str, text: &str, phrase: &[String]| {
            let mut ranked = result("r", ResultKind::SourceChunk, "file://r.md", "h", None);
            (ranked.title, ranked.text, ranked.scores.bm25) = (title.to_string(), text.to_string(), 2.0);
            let (mut cache, phrase) = (super::StemCache::new(&query), super::keyword::Phrase::of(phrase));
            super::keyword::rerank(&mut ranked, &mut cache, &terms[..2], &query, &phrase);
            ranked
        };
        let reasons = |ranked: &SearchResult| ranked.reason.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        let in_order = ranked("Rules", "The BORROW Checker runs.", &terms[..2]);
        assert_eq!(reasons(&in_order), ["exact_term", "phrase_match", "all_terms"]);
        assert_eq!(in_order.scores.coverage, 1.0);
        assert_eq!(in_order.score, 2.0 * 2.0 * 1.5, "coverage doubles bm25, the phrase adds half");
        let apart = ranked("Rules", "The checker of a borrow.", &terms[..2]);
        assert_eq!(reasons(&apart), ["exact_term", "all_terms"], "both words, not as the phrase");
        let repeated = ranked("Rules", "borrow checker borrow checker", &terms);
        assert!(!reasons(&repeated).contains(&"phrase_match".to_string()), "no `borrow checker checker` run");
        let twice = ranked("Rules", "a borrow checker checker", &terms);
        assert!(reasons(&twice).contains(&"phrase_match".to_string()), "{:?}", reasons(&twice));
        let stemmed = ranked("The Checkers", "Borrowing rules.", &[]);
        assert_eq!(reasons(&stemmed), ["stemmed_term", "title_match", "all_terms"]);
        assert!(stemmed.scores.coverage < 1.0, "words of the stems, not the query's own, count less");
    }

    /// A query pasted whole is read once a search, not once a chunk: with each chunk's words compared against
    /// every word of the query, 150,000 words (1 MB, a quarter of a message's limit) would take hours a search.
    /// A bound of 2 s for 50 chunks holds with a wide margin on a loaded machine.
    #[test]
    fn a_pasted_query_costs_each_chunk_its_own_words() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let pasted: Vec<String> = (0..150_000).map(|n| format!("w{n}")).collect();
        let terms = &pasted[..super::super::terms::MAX_TERMS];
        let query = super::QueryStems::read_from(&stemmer, terms, 100.0, |words| {
            Ok::<_, ()>(words.iter().map(|_| Some(10.0)).collect())
        })
        .unwrap();
        let body: String = pasted[..300].join(" ");
        let started = std::time::Instant::now();
        let phrase = super::keyword::Phrase::of(&pasted);
        let mut cache = super::StemCache::new(&query);
        for _ in 0..50 {
            let mut ranked = result("r", ResultKind::SourceChunk, "file://r.md", "h", None);
            (ranked.text, ranked.scores.bm25) = (body.clone(), 1.0);
            super::keyword::rerank(&mut ranked, &mut cache, terms, &query, &phrase);
            assert!(!ranked.reason.iter().any(|r| r == "phrase_match"), "the whole query is no run of 300 words");
            assert_eq!(ranked.scores.coverage, 1.0, "every searched word is there");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[test]
    fn a_snippet_is_the_window_with_the_most_query_words() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let query: rustc_hash::FxHashSet<String> =
            ["raw", "pointers"].iter().map(|w| super::stem_word(&stemmer, w)).collect();
        let mut cache = super::StemCache::for_stems(&query);
        let filler = "word ".repeat(40);
        let text = format!("A raw start.\n{filler}Here raw\npointers meet. {filler}");
        let snippet = super::snippet(&text, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert!(snippet.starts_with('…') && snippet.ends_with('…'), "{snippet}");
        assert!(snippet.contains("Here **raw** **pointers** meet."), "both words beat one, on one line: {snippet}");
        assert_eq!(snippet.split_whitespace().count(), super::keyword::SNIPPET_WORDS, "{snippet}");
        let short = super::snippet("Raw pointers.", &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert_eq!(short, "**Raw** **pointers**.", "a short text is whole, its case kept");
        let code = "Use `raw_pointers` and ``a `raw` one``; raw pointers here.";
        let marked = super::snippet(code, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert_eq!(
            marked, "Use `raw_pointers` and ``a `raw` one``; **raw** **pointers** here.",
            "code is left unmarked"
        );
        let linked =
            "See [raw pointers][raw]<!-- ignore --> and [the chapter](ch19.md) on pointers.\n\n[raw]: ch19.md#raw";
        let readable = super::snippet(linked, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert_eq!(
            readable, "See **raw** **pointers** and the chapter on **pointers**.",
            "shown as a page shows a quote"
        );
        let code = format!(
            "Intro.\n```rust\n{}#[raw] fn pointers() {{}}\n```\nraw pointers after.",
            "let x = 1;\n".repeat(20)
        );
        let inside = super::snippet(&code, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert!(inside.starts_with('…') && !inside.contains("```rust"), "the window starts inside the block: {inside}");
        assert!(inside.ends_with("#[raw] fn pointers() {} ``` **raw** **pointers** after."), "{inside}");
        let spanned = format!("Intro words `{}raw` pointers here.", "x ".repeat(40));
        let opened = super::snippet(&spanned, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert!(opened.starts_with("…`x x"), "the window opens inside inline code: {opened}");
        assert!(opened.ends_with("x raw` **pointers** here."), "{opened}");
        // A window that holds a fence's opening line and ends before its close: what follows the fence is code.
        let opening =
            format!("The raw pointers:\n```rust\nlet raw = `x` as *const pointers;\n{}```", "x;\n".repeat(40));
        let fenced = super::snippet(&opening, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert!(fenced.starts_with("The **raw** **pointers**: ```rust let raw = `x` as *const pointers;"), "{fenced}");
        // A rule id's line is no text, even when the window starts inside it.
        let ruled = format!("r[expr.borrow.raw.place]\n{}raw pointers here.", "word ".repeat(28));
        let shown = super::snippet(&ruled, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert!(shown.starts_with("…word") || shown.starts_with("word"), "{shown}");
        assert!(!shown.contains("place]") && !shown.contains("expr."), "{shown}");
        // So is an admonition's opening line (`!!! tip`), the tip's text below it kept.
        let tipped = format!("!!! tip \"Pointers\"\n    {}raw pointers here.", "word ".repeat(6));
        let shown = super::snippet(&tipped, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert!(!shown.contains("!!!") && !shown.contains("tip") && shown.contains("**pointers** here"), "{shown}");
        // A window that ends inside a component's tag line ends before it, not on the tag's head (`<TabItem…`).
        let tabbed = "Install raw pointers with:\n<TabItem label=\"npm\">\nnpm i raw";
        let head = tabbed.find("TabItem").unwrap() + "TabItem".len();
        assert_eq!(&tabbed[..super::keyword::window_end(tabbed, 0, head)], "Install raw pointers with:");
        assert_eq!(super::keyword::window_end(tabbed, 28, head), head, "a window on the tag's own line keeps it");
        let opened = "Add raw pointers:\n<CommandTabs npm=\"npm run tauri add raw\"\n  yarn=\"yarn tauri add raw\" />";
        let head = opened.find("npm run").unwrap();
        assert_eq!(&opened[..super::keyword::window_end(opened, 0, head)], "Add raw pointers:", "an open tag too");
        let prose = "Install raw pointers with:\nnpm and yarn";
        assert_eq!(super::keyword::window_end(prose, 0, 31), 31, "a line of prose is cut where the window ends");
        // A link's target keeps its words as written: bold there would break the link a reader copies.
        let target = "See [raw pointers](https://doc.rust-lang.org/raw-pointers.html), <https://x.org/raw> and https://raw.example/pointers here.";
        let linked = super::snippet(target, &query, &mut cache, super::Highlight::Markdown).unwrap();
        assert_eq!(
            linked,
            "See [**raw** **pointers**](https://doc.rust-lang.org/raw-pointers.html), <https://x.org/raw> and https://raw.example/pointers here.",
            "{linked}"
        );
        let ansi = super::snippet("`raw`", &query, &mut cache, super::Highlight::Ansi).unwrap();
        assert_eq!(ansi, "`\u{1b}[1mraw\u{1b}[0m`", "a terminal's bold shows inside code");
        assert!(super::snippet("nothing here", &query, &mut cache, super::Highlight::Markdown).is_none());
    }
}
