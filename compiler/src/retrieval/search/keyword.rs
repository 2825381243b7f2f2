//! Keyword retrieval: FTS5 and BM25 over the quoted query words, the coverage and phrase re-rank, and the
//! snippet of each result.

use rustc_hash::{FxHashMap, FxHashSet};

use super::*;

/// The keyword retrieval: the whole ranked candidate pool, re-ranked, without snippets.
pub(super) fn keyword<I: SearchIndex>(
    index: &mut I,
    request: &SearchRequest,
    access: &Access,
    query_stems: &QueryStems,
    cache: &mut StemCache,
) -> Result<SearchResponse, I::Error> {
    let mut response = empty_response(request);
    let terms = response.terms.clone();
    if terms.is_empty() || request.limit == 0 {
        return Ok(response);
    }
    let mut results = index.keyword_pool(request, access, &terms, (request.limit * 4).max(50))?;
    let query_words = words(&request.query);
    let phrase = Phrase::of(&query_words);
    for result in &mut results {
        rerank(result, cache, &terms, query_stems, &phrase);
    }
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    response.results = results;
    Ok(response)
}

/// Words in a snippet, at most.
pub(super) const SNIPPET_WORDS: usize = 32;

/// The passage of `text` of at most [`SNIPPET_WORDS`] words that holds the most distinct query stems (the
/// earliest such, its matches centred), on one line, shown as a wiki page shows a quote (without comments,
/// reference labels and relative links' targets, which mean nothing outside the chunk's file), matched
/// words between the highlight marks and `…` where text was cut. None when no word matches. Computed from
/// the chunk in hand: a second FTS5 query for its `snippet()` cost about 0.8 ms of a 3 ms search.
pub(super) fn snippet(
    text: &str,
    query: &FxHashSet<String>,
    cache: &mut StemCache,
    highlight: Highlight,
) -> Option<String> {
    // Each word's span, and which query stem it matches (an index into `stems`).
    let mut spans: Vec<(usize, usize, Option<usize>)> = Vec::new();
    let mut stems: Vec<String> = Vec::new();
    for (from, to) in word_spans(text) {
        let matched = cache.stem_as_written(&text[from..to]).filter(|stem| query.contains(*stem)).map(|stem| {
            stems.iter().position(|known| known == stem).unwrap_or_else(|| {
                stems.push(stem.clone());
                stems.len() - 1
            })
        });
        spans.push((from, to, matched));
    }
    if stems.is_empty() {
        return None;
    }
    let width = SNIPPET_WORDS.min(spans.len());
    let best = best_window(&spans, stems.len(), width);
    let window = &spans[best..best + width];
    let from = window_start(text, window[0].0, best == 0);
    // A window at the text's end keeps what closes its last word.
    let cut_after = best + width < spans.len();
    let to = if cut_after { window_end(text, from, window[width - 1].1) } else { text.len() };
    // Only the window is made readable (a chunk is 2 KB, a window a tenth of it), then its words marked
    // again (the readable text's words are not the chunk's). A window that starts inside a code block is read
    // with the block's fence before it (and the fence not shown), so that its code stays as written and
    // unmarked; one that starts inside inline code is shown with the backticks that opened it.
    let fence = open_fence(&text[..from]);
    let line = text[..from].rfind('\n').map_or(&text[..from], |at| &text[at + 1..from]);
    let opened = if fence.is_some() { 0 } else { code_ranges(line).1 };
    let skip = fence.as_ref().map_or(0, String::len);
    let before = fence.unwrap_or_else(|| "`".repeat(opened));
    let shown = knowledge_queries::wiki::readable_excerpt(&format!("{before}{}", &text[from..to]));
    let (open, close) = highlight.marks();
    // Markdown's bold marks inside code are shown as they are written (`**struct**_type`), and inside a link's
    // target they break the link (and the address a reader copies): a word in either is left unmarked there.
    let unmarked = match highlight {
        Highlight::Markdown => [code_ranges(&shown).0, link_targets(&shown)].concat(),
        _ => Vec::new(),
    };
    let in_code = |at: usize| unmarked.iter().any(|&(start, end)| (start..end).contains(&at));
    let mut out = String::new();
    if best > 0 {
        out.push('…');
    }
    // The source's text is escaped (no control character of its own reaches a terminal), the marks are not.
    let mut cursor = skip;
    for (from, to) in word_spans(&shown[skip..]).map(|(from, to)| (from + skip, to + skip)) {
        out.push_str(&crate::escape_text(&shown[cursor..from]));
        let word = &shown[from..to];
        if !in_code(from) && cache.stem_as_written(word).is_some_and(|stem| query.contains(stem)) {
            out.push_str(open);
            out.push_str(word);
            out.push_str(close);
        } else {
            out.push_str(word);
        }
        cursor = to;
    }
    out.push_str(&crate::escape_text(&shown[cursor..]));
    if cut_after {
        out.push('…');
    }
    Some(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Where a window whose first word starts at `from` begins: at the text's start (`first`) it keeps the markup
/// that opens its first word (a backtick, a bracket, an emphasis), not a heading's, quote's or list item's
/// marker; inside a block label's line (a rule id `r[expr.borrow.raw.place]`, `!!! tip`) it takes the whole
/// line, which the readable text then leaves out, rather than show its tail.
fn window_start(text: &str, mut from: usize, first: bool) -> usize {
    if first {
        let lead = text[..from].trim_start().trim_start_matches(['#', '>']).trim_start();
        let lead = ["- ", "* ", "+ "].iter().find_map(|marker| lead.strip_prefix(marker)).unwrap_or(lead);
        from -= lead.trim_start().len();
    }
    let line_start = text[..from].rfind('\n').map_or(0, |at| at + 1);
    let line_end = text[from..].find('\n').map_or(text.len(), |at| from + at);
    if knowledge_queries::is_block_label(&text[line_start..line_end]) {
        from = line_start;
    }
    from
}

/// Where a window whose last word ends at `to` ends: before the line that word is on when that line is a block
/// label (a component's tag `<TabItem label="npm">`, an `import` line) or opens a tag it does not close
/// (`<CommandTabs npm="…"`), whose head alone (`<TabItem…`) the readable text would show as text; the
/// window's first line is kept whatever it is.
pub(super) fn window_end(text: &str, from: usize, to: usize) -> usize {
    let line_start = text[..to].rfind('\n').map_or(0, |at| at + 1);
    let line_end = text[to..].find('\n').map_or(text.len(), |at| to + at);
    let line = &text[line_start..line_end];
    if line_start > from && (knowledge_queries::is_block_label(line) || knowledge_queries::opens_component_tag(line)) {
        return text[..line_start].trim_end().len().max(from);
    }
    to
}

/// The first word of the window of `width` words that holds the most distinct query stems (the earliest
/// such), moved to centre its matches; `spans` are the words, each with its stem's index below `stems`.
fn best_window(spans: &[(usize, usize, Option<usize>)], stems: usize, width: usize) -> usize {
    // Slide a window of `width` words, counting each stem's matches in it.
    let mut counts = vec![0_usize; stems];
    let mut distinct = 0;
    let (mut best, mut found) = (0, 0);
    for (at, &(.., matched)) in spans.iter().enumerate() {
        if let Some(stem) = matched {
            counts[stem] += 1;
            distinct += usize::from(counts[stem] == 1);
        }
        if let Some(stem) = at.checked_sub(width).and_then(|gone| spans[gone].2) {
            counts[stem] -= 1;
            distinct -= usize::from(counts[stem] == 0);
        }
        if at + 1 >= width && distinct > found {
            (best, found) = (at + 1 - width, distinct);
        }
    }
    // The earliest best window ends at its last match; centre the matches in it instead.
    let matched: Vec<usize> = (best..best + width).filter(|&at| spans[at].2.is_some()).collect();
    let (first, last) = (matched[0], matched[matched.len() - 1]);
    let slack = width - (last - first + 1);
    first.saturating_sub(slack / 2).min(spans.len() - width)
}

/// The fence line of the code block `text` ends inside (```` ```\n ````, `~~~~\n`), if it does, read as
/// quotes and chunks read fences ([`knowledge_queries::Fences`]).
fn open_fence(text: &str) -> Option<String> {
    let mut fences = knowledge_queries::Fences::default();
    for line in text.lines() {
        fences.is_code(line.trim_start_matches([' ', '>']));
    }
    fences.open().map(|(marker, run)| format!("{}\n", String::from(marker).repeat(run)))
}

/// The byte spans of `text`'s words: its runs of letters and digits.
fn word_spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = None;
    text.char_indices().chain(std::iter::once((text.len(), ' '))).filter_map(move |(at, c)| {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                start = None;
                return Some((from, at));
            }
            _ => {}
        }
        None
    })
}

/// The byte ranges of `text`'s code, inline or fenced: a run of backticks opens code that the next run of as
/// many closes; and the length of the run left open at its end (0 when none). Code a run opens and the text
/// does not close runs to the text's end (a window cut inside a span or a fence), so that range ends it.
fn code_ranges(text: &str) -> (Vec<(usize, usize)>, usize) {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut open: Option<(usize, usize)> = None;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let run = bytes[at..].iter().take_while(|&&byte| byte == b'`').count();
        match open {
            Some((start, length)) if length == run => {
                ranges.push((start, at + run));
                open = None;
            }
            None => open = Some((at, run)),
            Some(_) => {}
        }
        at += run;
    }
    if let Some((start, _)) = open {
        ranges.push((start, text.len()));
    }
    (ranges, open.map_or(0, |(_, length)| length))
}

/// The byte ranges of `text`'s link targets: an inline link's destination (`](…)`, to its closing bracket or
/// a space), and an address with a scheme (`https://…`, bare or in an autolink's `<…>`) to the next space,
/// `>` or `)`.
fn link_targets(text: &str) -> Vec<(usize, usize)> {
    let to_end = |from: usize, stop: &dyn Fn(char) -> bool| text[from..].find(stop).map_or(text.len(), |at| from + at);
    let destinations =
        text.match_indices("](").map(|(at, _)| (at + 2, to_end(at + 2, &|c| c == ')' || c.is_whitespace())));
    let addresses = text.match_indices("://").map(|(at, _)| {
        let scheme = text[..at].rfind(|c: char| !c.is_ascii_alphanumeric()).map_or(0, |before| before + 1);
        (scheme, to_end(at, &|c| c == '>' || c == ')' || c.is_whitespace()))
    });
    destinations.chain(addresses).collect()
}

/// The query's words as the phrase boost compares a text's with them: each word by the place of its first use
/// in the query, so that a run of the text's words is compared number by number. Made once a search, and a
/// word found by hashing: a query pasted whole (up to a message's 4 MB) must cost each chunk no more than its
/// own words.
pub(super) struct Phrase<'a> {
    places: FxHashMap<&'a str, usize>,
    /// The query's words, each as its place.
    read: Vec<usize>,
    /// Which bytes start a query word: a text's word starting with another is no query word, without hashing
    /// it (most of a chunk's words).
    firsts: [bool; 256],
}

impl<'a> Phrase<'a> {
    pub(super) fn of(words: &'a [String]) -> Phrase<'a> {
        let mut places = FxHashMap::default();
        let read = words.iter().enumerate().map(|(at, word)| *places.entry(word.as_str()).or_insert(at)).collect();
        let mut firsts = [false; 256];
        for word in words {
            firsts[first_byte(word)] = true;
        }
        Phrase { places, read, firsts }
    }

    /// Whether there is a phrase to find: two words or more.
    fn is_phrase(&self) -> bool {
        self.read.len() >= 2
    }

    /// A lowercased word of a text as the phrase reads it: its place in the query, or none.
    fn place(&self, word: &str) -> Option<usize> {
        if !self.firsts[first_byte(word)] {
            return None;
        }
        self.places.get(word).copied()
    }

    /// Whether a text whose words read as `text` ([`Phrase::place`]) holds the query's words in a row.
    fn stands_in(&self, text: &[Option<usize>]) -> bool {
        self.is_phrase()
            && text.windows(self.read.len()).any(|run| run.iter().zip(&self.read).all(|(word, at)| *word == Some(*at)))
    }
}

/// A word's first byte (0 for none), as [`Phrase`] tells the query's words apart by it.
fn first_byte(word: &str) -> usize {
    usize::from(word.as_bytes().first().copied().unwrap_or_default())
}

/// Applies the coverage and phrase boosts and records why the result matched.
pub(super) fn rerank(
    result: &mut SearchResult,
    cache: &mut StemCache,
    terms: &[String],
    query: &QueryStems,
    phrase: &Phrase<'_>,
) {
    let (mut body, mut title) = (Held::new(query), Held::new(query));
    // Each body word as the phrase reads it, kept only when there is a phrase to find.
    let mut body_as_read: Vec<Option<usize>> = Vec::new();
    each_lowercased_word(&result.text, |word| {
        body.read(query, cache, word);
        if phrase.is_phrase() {
            body_as_read.push(phrase.place(word));
        }
    });
    each_lowercased_word(&result.title, |word| title.read(query, cache, word));
    let covered = |stem: &str| body.has_stem(query, stem) || title.has_stem(query, stem);
    let exact = |word: &str| body.has_word(word) || title.has_word(word);
    let coverage = query.graded_coverage(covered, exact);
    let all_covered = query.weights.iter().all(|(stem, _)| covered(stem));
    let has_phrase = phrase.stands_in(&body_as_read);

    let mut score = result.scores.bm25 * (1.0 + coverage);
    if has_phrase {
        score *= 1.5;
    }
    result.scores.coverage = coverage;
    result.scores.keyword = score;
    result.score = score;

    if terms.iter().any(|t| exact(t)) {
        result.reason.push("exact_term".into());
    }
    if coverage > 0.0 && terms.iter().all(|t| !exact(t)) {
        result.reason.push("stemmed_term".into());
    }
    if has_phrase {
        result.reason.push("phrase_match".into());
    }
    if title.has_some_stem() {
        result.reason.push("title_match".into());
    }
    if query.weights.len() > 1 && all_covered {
        result.reason.push("all_terms".into());
    }
}
