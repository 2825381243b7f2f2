//! Which concepts get a page, and what each page cites: a pure function of every source's signals.
//!
//! The rules (docs/wiki.md explains why):
//! - A source's title names a concept only when no other source has the same title (every RFC titled
//!   "Summary" names nothing). Its front matter aliases name the same concept.
//! - A wikilink or a relative link to another source mentions that source's concept; an unresolved
//!   wikilink mentions the concept its target names.
//! - Defined terms and tags name concepts by their text; headings below the title only add places to a
//!   concept that something else names.
//! - A concept gets a page when at least `min_sources` sources mention it, at least one of them by
//!   something other than a heading, and no hand-written page in the wiki folder defines it.

use std::borrow::Cow;
use std::collections::BTreeMap;

// The planner hashes every signal's concept key: Fx is several times faster than SipHash on short
// strings, and nothing here needs SipHash's resistance to chosen keys (iteration order is never output).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::signals::{Excerpt, Signal, SignalKind};
use super::terms::fold_key;
use crate::links::{link_candidates, link_path, path_stem, wiki_names, wikilink_key};

/// One source, as the planner sees it. Sources are given sorted by path.
#[derive(Clone, Debug)]
pub struct CatalogSource<'a> {
    pub path: &'a str,
    pub title: &'a str,
    /// The section its pages go to: its top-level folder or a front matter field, decided by the driver.
    pub section: String,
    /// A hand-written page in the wiki folder: it holds its slug, and a concept it defines gets no page.
    pub handwritten: bool,
    pub signals: &'a [PlanSignal],
    /// What resolving its links needs of the source alone ([`source_links`]), made once per source rather
    /// than in every plan.
    pub links: &'a SourceLinks,
}

/// A signal as the planner reads it: what it names, and where it stands among the source's signals, but not
/// its byte offsets, so an edit that only moves text leaves the plan's input equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanSignal {
    pub kind: SignalKind,
    /// The label, then its concept key where the key differs from it, then the folded key where that
    /// differs from the key: one allocation for the three, since a fresh process that plans makes a
    /// catalog's every signal (49,003 on rust-rfcs) and their memory was most of reading them.
    text: String,
    /// Where the label ends, and where the key and the folded key lie, in `text`.
    label_end: u32,
    key: (u32, u32),
    folded: (u32, u32),
    /// The folded key's [`key_hash`], made with the signal: the planner numbers concepts by it, so a plan
    /// reads each signal's text only where its key names a concept (in `--watch` the plan runs after an
    /// idle wait, and reading 49,003 signals' texts from memory again was most of numbering them).
    folded_hash: u64,
    pub other: Option<String>,
    /// The signal's rank by its place in the source (first is 0).
    pub order: u32,
    /// Whether a page may quote its place ([`Signal::quotable`]).
    pub quotable: bool,
    /// How much the source uses a term ([`Signal::weight`]).
    pub weight: u32,
}

impl PlanSignal {
    /// A signal of `kind` labelled `label`, with the label's [`concept_keys`] (made once with the signal: a
    /// re-plan after one source's edit keys only that source's signals again); first in its source,
    /// quotable and of no weight until those fields are set.
    #[must_use]
    pub fn new(kind: SignalKind, label: &str, (key, folded): (&str, &str), other: Option<String>) -> PlanSignal {
        PlanSignal::with_own_keys(kind, label, (key != label).then_some(key), (folded != key).then_some(folded), other)
    }

    /// [`PlanSignal::new`] given only the keys that differ: the concept key where it is not the label, the
    /// folded key where it is not the concept key (as the index stores them, so a read compares no text).
    #[must_use]
    pub fn with_own_keys(
        kind: SignalKind,
        label: &str,
        own_key: Option<&str>,
        own_folded: Option<&str>,
        other: Option<String>,
    ) -> PlanSignal {
        let own = |part: Option<&str>| part.map_or(0, str::len);
        let mut text = String::with_capacity(label.len() + own(own_key) + own(own_folded));
        let mut place = |part: Option<&str>, otherwise: (u32, u32)| match part {
            None => otherwise,
            Some(part) => {
                let start = text.len();
                text.push_str(part);
                (start as u32, text.len() as u32)
            }
        };
        let label_range = place(Some(label), (0, 0));
        let key_range = place(own_key, label_range);
        let folded_range = place(own_folded, key_range);
        let folded_hash = key_hash(&text[folded_range.0 as usize..folded_range.1 as usize]);
        PlanSignal {
            kind,
            text,
            label_end: label_range.1,
            key: key_range,
            folded: folded_range,
            folded_hash,
            other,
            order: 0,
            quotable: true,
            weight: 0,
        }
    }

    /// The signal's text (a wikilink's part before `|`, a link's destination).
    #[must_use]
    pub fn label(&self) -> &str {
        &self.text[..self.label_end as usize]
    }

    /// The label's [`concept_key`].
    #[must_use]
    pub fn key(&self) -> &str {
        &self.text[self.key.0 as usize..self.key.1 as usize]
    }

    /// The key with plurals folded ([`fold_key`]).
    #[must_use]
    pub fn folded(&self) -> &str {
        &self.text[self.folded.0 as usize..self.folded.1 as usize]
    }

    /// The folded key with its hash, as the planner numbers it.
    fn folded_key(&self) -> FoldedKey<'_> {
        FoldedKey { text: Cow::Borrowed(self.folded()), hash: self.folded_hash }
    }
}

/// A concept key's hash, by which the planner numbers keys before it compares their texts.
fn key_hash(key: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(key.as_bytes());
    hasher.finish()
}

/// A folded concept key and its [`key_hash`].
#[derive(Clone, Debug)]
struct FoldedKey<'k> {
    text: Cow<'k, str>,
    hash: u64,
}

impl<'k> FoldedKey<'k> {
    fn owned(text: String) -> FoldedKey<'k> {
        let hash = key_hash(&text);
        FoldedKey { text: Cow::Owned(text), hash }
    }

    /// A folded key borrowed from `text`, hashed here.
    fn borrowed_text(text: &'k str) -> FoldedKey<'k> {
        FoldedKey { text: Cow::Borrowed(text), hash: key_hash(text) }
    }

    fn borrowed(&self) -> FoldedKey<'_> {
        FoldedKey { text: Cow::Borrowed(&self.text), hash: self.hash }
    }

    fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// A source's signals split into what the planner reads and where each one stands, in the same order (so a
/// plan's `Mention::signal` indexes both).
#[must_use]
pub fn split_signals(signals: Vec<Signal>) -> (Vec<PlanSignal>, Vec<Excerpt>) {
    let order = place_ranks(signals.iter().map(|signal| signal.excerpt.start));
    signals.into_iter().zip(order).map(|(signal, order)| plan_signal(signal, order)).unzip()
}

/// Each signal's rank by its place in the source (by excerpt start, then by index): a [`PlanSignal`]'s `order`.
#[must_use]
pub fn place_ranks(starts: impl IntoIterator<Item = u32>) -> Vec<u32> {
    let starts: Vec<u32> = starts.into_iter().collect();
    let mut by_place: Vec<usize> = (0..starts.len()).collect();
    by_place.sort_by_key(|&at| (starts[at], at));
    let mut order = vec![0; starts.len()];
    for (rank, at) in by_place.into_iter().enumerate() {
        order[at] = rank as u32;
    }
    order
}

/// A signal as the planner reads it, given its rank by place among its source's signals, and its excerpt.
#[must_use]
pub fn plan_signal(signal: Signal, order: u32) -> (PlanSignal, Excerpt) {
    let (key, folded) = concept_keys(&signal.label);
    let plan = PlanSignal {
        order,
        quotable: signal.quotable,
        weight: signal.weight,
        ..PlanSignal::new(signal.kind, &signal.label, (&key, &folded), signal.other)
    };
    (plan, signal.excerpt)
}

/// A label's [`concept_key`] and that key with plurals folded, as a [`PlanSignal`] holds them.
#[must_use]
pub fn concept_keys(label: &str) -> (String, String) {
    let key = concept_key(label);
    let folded = fold_key(&key);
    (key, folded)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanSettings {
    pub min_sources: usize,
    pub max_places: usize,
    pub max_related: usize,
}

/// A signal of a source: indexes into the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mention {
    pub source: usize,
    pub signal: usize,
}

/// A page to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagePlan {
    pub slug: String,
    pub title: String,
    pub aliases: Vec<String>,
    pub section: String,
    /// The sources that define the concept (title or alias), which come first in `places`.
    pub defined_by: Vec<usize>,
    /// One quoted place per source, best first, at most `max_places`.
    pub places: Vec<Mention>,
    /// Sources that mention the concept beyond `max_places`: listed, not quoted.
    pub also: Vec<usize>,
    /// Other pages (indexes into the plan) that share the most sources with this one, in slug order.
    pub related: Vec<usize>,
    /// Links and wikilinks to the concept, in path and line order.
    pub backlinks: Vec<Mention>,
}

impl PagePlan {
    /// The sources the page quotes or lists, each once.
    fn sources(&self) -> impl Iterator<Item = usize> + '_ {
        self.places.iter().map(|m| m.source).chain(self.also.iter().copied())
    }
}

/// The slug form of a name: lowercase letters and digits, other runs of characters as one `-`.
#[must_use]
pub fn concept_key(name: &str) -> String {
    let name = name.trim();
    let mut key = String::with_capacity(name.len().min(84));
    let mut push = |c: char, alphanumeric: bool| {
        if alphanumeric {
            key.push(c);
        } else if !key.is_empty() && !key.ends_with('-') {
            key.push('-');
        }
        key.len() < 80
    };
    // The planner keys every signal: ASCII, which most names are, skips Unicode's case tables.
    if name.is_ascii() {
        for byte in name.bytes() {
            if !push(char::from(byte.to_ascii_lowercase()), byte.is_ascii_alphanumeric()) {
                break;
            }
        }
    } else {
        for c in name.chars().flat_map(char::to_lowercase) {
            if !push(c, c.is_alphanumeric()) {
                break;
            }
        }
    }
    while key.ends_with('-') {
        key.pop();
    }
    key
}

/// A heading at least this many sources carry, and at least one in [`TEMPLATE_HEADING_SHARE`] of all
/// sources, is the documents' template ("Summary", "Motivation", "Unresolved questions" in every RFC): it
/// names no concept, so it adds no place, even to a concept something else names.
const TEMPLATE_HEADING_SOURCES: usize = 10;
const TEMPLATE_HEADING_SHARE: usize = 20;

/// A plan: its pages, and the concept keys it could read a place of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub pages: Vec<PagePlan>,
    /// Every folded concept key whose concept something names (a title, alias, definition, link, tag: any
    /// signal but a heading or a term), sorted, one per line. A heading or a term whose key is not here is
    /// a place of a concept nothing names, which gets no page whatever its places ([`plan_reads`]).
    pub named_keys: String,
}

/// Whether a plan whose [`Plan::named_keys`] are `named_keys` (its lines, in order) reads a signal of `kind`
/// whose folded concept key is `folded_key`: a heading or a term whose key names no concept would only add a
/// place to a concept that gets no page, so the plan drops it unread (the template rule counts only named
/// concepts' headings), and adding, removing or reweighing it leaves the plan as it was.
#[must_use]
pub fn plan_reads(kind: SignalKind, folded_key: &str, named_keys: &[String]) -> bool {
    !kind.is_place_only()
        || (!folded_key.is_empty() && named_keys.binary_search_by(|key| key.as_str().cmp(folded_key)).is_ok())
}

/// Plans every page.
#[must_use]
pub fn plan(sources: &[CatalogSource<'_>], settings: PlanSettings) -> Plan {
    let resolver = Resolver::new(sources);
    let (by_concept, named_keys) = mentions_by_concept(sources, &resolver, settings);
    let handwritten_slugs: HashSet<String> = sources
        .iter()
        .filter(|s| s.handwritten)
        .map(|s| concept_key(s.path.rsplit('/').next().unwrap_or(s.path).trim_end_matches(".md")))
        .collect();
    // Beside each candidate, its definer's own title when the page's title had to tell it apart.
    let (mut candidates, shared_titles): (Vec<PagePlan>, Vec<Option<&str>>) =
        in_parts(&by_concept, CANDIDATES_PER_THREAD, || {
            |_, (key, mentions)| candidate(sources, &resolver, key, mentions, settings)
        })
        .into_iter()
        .flatten()
        .unzip();

    let navigation = hubs(&candidates, sources.len());
    list_hubs_unquoted(&mut candidates, &navigation);
    let (mut candidates, shared_titles): (Vec<PagePlan>, Vec<Option<&str>>) =
        candidates.into_iter().zip(shared_titles).filter(|(page, _)| !quotes_too_few(sources, page, settings)).unzip();

    // A told-apart title is needed only where another page would carry the same title.
    let plain: Vec<String> = candidates
        .iter()
        .zip(&shared_titles)
        .map(|(page, shared)| shared.unwrap_or(&page.title).trim().to_lowercase())
        .collect();
    let mut title_count: HashMap<&str, usize> = HashMap::default();
    for title in &plain {
        *title_count.entry(title.as_str()).or_default() += 1;
    }
    for ((page, shared), plain) in candidates.iter_mut().zip(&shared_titles).zip(&plain) {
        if let Some(title) = shared.filter(|title| !title.trim().is_empty())
            && title_count[plain.as_str()] == 1
        {
            page.title = title.to_string();
        }
    }

    candidates.retain(|page| !page.slug.is_empty() && !handwritten_slugs.contains(&page.slug));

    // Slugs: a concept named by a source comes first; a slug a hand-written page holds is never taken,
    // and a second concept with the same slug gets a numbered one.
    let mut candidates = sorted_by(candidates, |a, b| {
        (a.defined_by.is_empty(), std::cmp::Reverse(a.places.len() + a.also.len()), &a.slug, &a.title).cmp(&(
            b.defined_by.is_empty(),
            std::cmp::Reverse(b.places.len() + b.also.len()),
            &b.slug,
            &b.title,
        ))
    });
    let mut taken = handwritten_slugs;
    for page in &mut candidates {
        let base = page.slug.clone();
        let mut n = 1;
        while taken.contains(&page.slug) {
            n += 1;
            page.slug = format!("{base}-{n}");
        }
        taken.insert(page.slug.clone());
    }
    let mut candidates = sorted_by(candidates, |a, b| a.slug.cmp(&b.slug));
    // The hubs found before the thin pages went: sources are indexed the same, and a table of contents
    // stays one for the related lists too.
    let listing = pages_of_source(&candidates, sources.len());
    relate(&mut candidates, &listing, &navigation, settings.max_related);
    Plan { pages: candidates, named_keys }
}

/// Whether a page would quote fewer than `min_sources` sources once tables of contents and places it may
/// not quote (embeds, placeholders) are set aside: a chapter titled "The Slice Type" that only a
/// `SUMMARY.md` lists would get a page echoing its own heading and first paragraph, and a note only linked
/// from one changelog line a page of that line. Such a source feeds the pages of the concepts it teaches
/// instead.
fn quotes_too_few(sources: &[CatalogSource<'_>], page: &PagePlan, settings: PlanSettings) -> bool {
    let quoted = page.places.iter().filter(|m| sources[m.source].signals[m.signal].quotable).count();
    quoted < settings.min_sources.max(1)
}

/// `items` in the order `compare` gives, equal ones as they came, each moved once: a sort in place moves
/// every item many times, and a plan sorts its concepts and its candidate pages (216 bytes each, about 800
/// on a Dendron vault).
fn sorted_by<T>(items: Vec<T>, mut compare: impl FnMut(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| compare(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.into_iter().map(|at| slots[at].take().expect("each item is taken once")).collect()
}

/// Every concept enough sources mention, in key order, with the signals of each source that mention it, and
/// the [`Plan::named_keys`]. A concept is a key with the aliases its sources declare joined to it; a
/// heading the documents' template repeats is no mention.
fn mentions_by_concept(
    sources: &[CatalogSource<'_>],
    resolver: &Resolver<'_>,
    settings: PlanSettings,
) -> (Vec<(String, ConceptMentions)>, String) {
    // A catalog has about one distinct key in four signals (rust-rfcs: 13,353 in 49,179), most of them
    // named by nothing.
    let signals: usize = sources.iter().map(|s| s.signals.len()).sum();
    let mut keys = ConceptKeys::with_capacity(signals / 8);
    let mut aliased: Vec<(u32, u32)> = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        if let Some(own) = &resolver.own_folded[index] {
            for signal in source.signals.iter().filter(|s| s.kind == SignalKind::Alias && !s.folded().is_empty()) {
                aliased.push((keys.number(own.borrowed()), keys.number(signal.folded_key())));
            }
        }
    }

    // Plurals fold, so that a chapter's "Smart Pointers", a defined *smart pointer* and the term "smart
    // pointers" other chapters use are one concept.
    let mut keyed = named_mentions(sources, resolver, &mut keys);
    let roots = keys.joined(&aliased);
    let named_keys = keys.sorted_names();
    drop_template_vocabulary(sources, &mut keyed, keys.len());

    // Every mention, by concept (a counting sort, which keeps each concept's mentions in source order);
    // then only concepts enough sources mention, in key order.
    let mut starts = vec![0usize; keys.len() + 1];
    for &(key, _) in &keyed {
        starts[roots[key as usize] as usize + 1] += 1;
    }
    for root in 0..keys.len() {
        starts[root + 1] += starts[root];
    }
    let mut filled = starts.clone();
    let mut grouped = vec![Mention { source: 0, signal: 0 }; keyed.len()];
    for &(key, mention) in &keyed {
        let root = roots[key as usize] as usize;
        grouped[filled[root]] = mention;
        filled[root] += 1;
    }
    let min_sources = settings.min_sources.max(1);
    let mut by_concept: Vec<(String, ConceptMentions)> = Vec::new();
    for (root, bounds) in starts.windows(2).enumerate() {
        let mentions = &grouped[bounds[0]..bounds[1]];
        if mentions.len() < min_sources {
            continue;
        }
        let mentions = ConceptMentions::new(mentions.to_vec());
        if mentions.sources < min_sources {
            continue;
        }
        by_concept.push((keys.name(root as u32).to_string(), mentions));
    }
    let by_concept = sorted_by(by_concept, |a, b| a.0.cmp(&b.0));
    (by_concept, named_keys)
}

/// Every mention of a concept something names, with its key's number in `keys` (which numbers the named
/// keys), in source order and a source's in signal order. A concept is named by a title, alias, definition,
/// link or tag: any signal but a heading or a term. A concept nothing names gets no page (`candidate`),
/// whatever its places, so a heading or term of any other key is no mention (57 % of rust-rfcs' signals): it
/// is looked up, never numbered. Aliases join only named keys, so a key is named exactly when its concept is.
fn named_mentions<'k>(
    sources: &'k [CatalogSource<'k>],
    resolver: &'k Resolver<'k>,
    keys: &mut ConceptKeys<'k>,
) -> Vec<(u32, Mention)> {
    // Each naming signal's number in signal order, `None` where it names no key: resolving a wikilink is
    // the dearest step, so it is done once.
    let naming: usize = sources.iter().map(|s| s.signals.iter().filter(|s| !s.kind.is_place_only()).count()).sum();
    let mut naming_numbers: Vec<Option<u32>> = Vec::with_capacity(naming);
    for (index, source) in sources.iter().enumerate() {
        let mut links = source.links.links.iter();
        for signal in source.signals.iter().filter(|s| !s.kind.is_place_only()) {
            let link = if signal.kind.is_reference() { links.next() } else { None };
            let key = resolver.folded_key_of(index, signal, link).filter(|k| !k.is_empty());
            naming_numbers.push(key.map(|key| keys.number(key)));
        }
    }
    let mut naming_numbers = naming_numbers.into_iter();

    // Sources are visited in order, so a key's mentions are in source order.
    let signals: usize = sources.iter().map(|s| s.signals.len()).sum();
    let mut keyed: Vec<(u32, Mention)> = Vec::with_capacity(signals / 2);
    for (index, source) in sources.iter().enumerate() {
        for (at, signal) in source.signals.iter().enumerate() {
            let number = if signal.kind.is_place_only() {
                // A heading or a term, which is no link.
                resolver.folded_key_of(index, signal, None).filter(|k| !k.is_empty()).and_then(|key| keys.named(&key))
            } else {
                naming_numbers.next().flatten()
            };
            let Some(number) = number else { continue };
            keyed.push((number, Mention { source: index, signal: at }));
        }
    }
    keyed
}

/// Drops the mentions of the documents' template from `keyed` (mentions by key number, of `key_count` keys).
/// A heading at least [`TEMPLATE_HEADING_SOURCES`] sources carry, and one in [`TEMPLATE_HEADING_SHARE`], is
/// the template's ("Summary", "Drawbacks" in every RFC): it is no mention, and neither is its word in a
/// source's prose (a term, or "whether this is a *drawback*"). Only a title, alias, tag or link names it as
/// a concept. `keyed` is in source order, so a source is counted once per heading key by remembering the last
/// one counted.
fn drop_template_vocabulary(sources: &[CatalogSource<'_>], keyed: &mut Vec<(u32, Mention)>, key_count: usize) {
    let kind = |m: &Mention| sources[m.source].signals[m.signal].kind;
    let mut heading_sources = vec![0usize; key_count];
    let mut last_counted = vec![usize::MAX; key_count];
    for (key, mention) in keyed.iter().filter(|(_, m)| kind(m) == SignalKind::Heading) {
        let key = *key as usize;
        if last_counted[key] != mention.source {
            last_counted[key] = mention.source;
            heading_sources[key] += 1;
        }
    }
    let template_threshold = TEMPLATE_HEADING_SOURCES.max(sources.len().div_ceil(TEMPLATE_HEADING_SHARE));
    let names_explicitly =
        |m: &Mention| !kind(m).is_place_only() && !matches!(kind(m), SignalKind::Defined | SignalKind::Introduced);
    keyed.retain(|&(key, mention)| heading_sources[key as usize] < template_threshold || names_explicitly(&mention));
}

/// A concept's mentions in source order, a source's in signal order.
struct ConceptMentions {
    mentions: Vec<Mention>,
    /// How many sources mention the concept.
    sources: usize,
}

impl ConceptMentions {
    /// `mentions` must come in source order, a source's in signal order.
    fn new(mentions: Vec<Mention>) -> ConceptMentions {
        debug_assert!(mentions.is_sorted(), "mentions in source and signal order");
        let sources = mentions.chunk_by(|a, b| a.source == b.source).count();
        ConceptMentions { mentions, sources }
    }

    /// Each source that mentions the concept, with its mentions.
    fn by_source(&self) -> impl Iterator<Item = (usize, &[Mention])> {
        self.mentions.chunk_by(|a, b| a.source == b.source).map(|group| (group[0].source, group))
    }
}

/// The page a concept gets, if any, and beside it its definer's own title when the page's title had to
/// tell it apart from other sources sharing it. No page: only headings and terms mention the concept, it is
/// a phrase only definitions, headings and terms support, a hand-written page defines it, or only embeds
/// mention it.
fn candidate<'a>(
    sources: &[CatalogSource<'a>],
    resolver: &Resolver<'_>,
    key: &str,
    mentions: &ConceptMentions,
    settings: PlanSettings,
) -> Option<(PagePlan, Option<&'a str>)> {
    let signal = |m: &Mention| &sources[m.source].signals[m.signal];
    let kind = |m: &Mention| signal(m).kind;
    let each_mention = || mentions.mentions.iter().copied();
    // What names the concept: everything but headings and terms, which only add places.
    let naming: Vec<Mention> = each_mention().filter(|m| !kind(m).is_place_only()).collect();
    if naming.is_empty() {
        return None;
    }
    let naming_label = || most_common(naming.iter().map(|m| display_label(signal(m))));
    let referenced = naming.iter().any(|m| !matches!(kind(m), SignalKind::Defined | SignalKind::Introduced));
    // A word most of the corpus uses is its subject or its vocabulary ("Rust", "value", "type" in the Rust
    // book), not a concept a page can gather: named by emphasis alone, it gets no page.
    if !referenced && mentions.sources > SUBJECT_SOURCES.max(sources.len() / 2) {
        return None;
    }
    // A concept only emphasis supports must read as a name, not a phrase ("current value"), unless other
    // sources discuss it by that name: then it is their subject, whatever its case. Its label, made once here,
    // titles its page too (no source is titled by it).
    let discussed = mentions.sources > settings.min_sources.max(1);
    let emphasis_label = (!referenced).then(naming_label);
    if emphasis_label.as_deref().is_some_and(|label| !reads_as_name(label, !discussed)) {
        return None;
    }
    let defines = |m: &Mention| matches!(kind(m), SignalKind::Title | SignalKind::Alias);
    let titled_by: Vec<usize> =
        mentions.by_source().filter(|(_, group)| group.iter().any(defines)).map(|(source, _)| source).collect();
    if titled_by.iter().any(|&s| sources[s].handwritten) {
        return None;
    }
    // With no source titled by the concept, the source that defines it (else the first to introduce it)
    // leads the page with that passage.
    let defined_by: Vec<usize> = if titled_by.is_empty() {
        let first = |wanted: SignalKind| naming.iter().find(|m| kind(m) == wanted).map(|m| m.source);
        first(SignalKind::Defined).or_else(|| first(SignalKind::Introduced)).into_iter().collect()
    } else {
        titled_by.clone()
    };
    let shared_title = titled_by.first().filter(|&&s| resolver.own_key[s].is_none()).map(|&s| sources[s].title);
    let (title, slug) = match titled_by.first() {
        // A definer whose title other sources share names its concept by its file: its page is told
        // apart by where the definer lives, and keeps the file's key as its slug.
        Some(&definer) if shared_title.is_some() => {
            (distinct_title(&sources[definer]), resolver.link_key[definer].unwrap_or(key).to_string())
        }
        Some(&definer) => (sources[definer].title.to_string(), resolver.title_key[definer].to_string()),
        None => {
            let title = named_title(emphasis_label.unwrap_or_else(naming_label), each_mention().map(|m| signal(&m)));
            let slug = concept_key(&title);
            (title, slug)
        }
    };
    let (best, also) = places(sources, mentions, &defined_by, settings)?;
    let section = match defined_by.first() {
        Some(&definer) => sources[definer].section.clone(),
        None => most_common(mentions.by_source().map(|(source, _)| sources[source].section.as_str())),
    };
    let mut aliases: Vec<String> = each_mention()
        .filter(|m| kind(m) == SignalKind::Alias && titled_by.contains(&m.source))
        .map(|m| signal(&m).label().to_string())
        .filter(|alias| !alias.eq_ignore_ascii_case(&title))
        .collect();
    aliases.sort();
    aliases.dedup();
    let mut backlinks: Vec<Mention> = each_mention().filter(|m| kind(m).is_reference()).collect();
    backlinks.sort_by_cached_key(|m| (m.source, signal(m).order));
    let page =
        PagePlan { slug, title, aliases, section, defined_by, places: best, also, related: Vec::new(), backlinks };
    Some((page, shared_title))
}

/// A concept's places to quote, best first, and the sources listed beside them: the best place of each
/// source (the first kind present, but a passage that discusses the concept, a term used four times or more,
/// before a link's sentence, which is often a cross-reference), definers first, then the sources that
/// discuss the concept most. An embed's place transcludes another note and says nothing itself: its source
/// is listed, not quoted. `None` when only embeds mention the concept: it has nothing to quote.
fn places(
    sources: &[CatalogSource<'_>],
    mentions: &ConceptMentions,
    defined_by: &[usize],
    settings: PlanSettings,
) -> Option<(Vec<Mention>, Vec<usize>)> {
    let signal = |m: &Mention| &sources[m.source].signals[m.signal];
    let kind = |m: &Mention| signal(m).kind;
    // The best place of each source: the first kind present, but a passage that discusses the concept
    // (a term used four times or more) before a link's sentence, which is often a cross-reference.
    let rank = |m: &Mention| {
        let signal = signal(m);
        let discussing = signal.kind == SignalKind::Term && signal.weight >= 2;
        let kind = if discussing { SignalKind::Heading } else { signal.kind };
        (kind, signal.order)
    };
    // Each source's best place, keyed by its order on the page: definers first, then the sources that
    // discuss the concept most (their most used term for it). Each source has one best place, so no two
    // keys are equal.
    let mut best: Vec<_> = mentions
        .by_source()
        .map(|(source, group)| {
            let best = *group.iter().min_by_key(|m| rank(m)).expect("a concept's source mentions it");
            let weight = group.iter().map(|m| signal(m).weight).max().unwrap_or_default();
            ((!defined_by.contains(&source), std::cmp::Reverse(weight), kind(&best), source), best)
        })
        .collect();
    best.sort_unstable_by_key(|&(key, _)| key);
    // An embed's place transcludes the other note and says nothing itself: its source is listed, not
    // quoted, and a concept that only embeds mention has nothing to quote and gets no page.
    let mut quoted: Vec<Mention> = Vec::with_capacity(best.len());
    let mut embeds: Vec<usize> = Vec::new();
    for (_, m) in best {
        if kind(&m) != SignalKind::Embed || defined_by.contains(&m.source) {
            quoted.push(m);
        } else {
            embeds.push(m.source);
        }
    }
    if quoted.is_empty() {
        return None;
    }
    let mut also: Vec<usize> =
        quoted.split_off(quoted.len().min(settings.max_places)).into_iter().map(|m| m.source).collect();
    also.extend(embeds);
    Some((quoted, also))
}

/// The title of a page no source is titled by: its naming `label` as its mentions write it as a name
/// ([`as_written`]), else with a capital first letter.
fn named_title<'s>(label: String, mentions: impl Iterator<Item = &'s PlanSignal>) -> String {
    // Only a label with a capital can be written as a name: the others are not made into strings.
    let capitalized_labels = mentions.filter(|signal| has_capital(signal.label())).map(display_label);
    as_written(&label, capitalized_labels).unwrap_or_else(|| capitalized(label))
}

/// Whether a text holds an uppercase letter, its bytes read as ASCII where it is ASCII (most labels are):
/// every label of a concept many sources mention is asked.
fn has_capital(text: &str) -> bool {
    if text.is_ascii() { text.bytes().any(|b| b.is_ascii_uppercase()) } else { text.chars().any(char::is_uppercase) }
}

/// How the mentions write a label its naming signals give in lowercase only (`url` set in italics), when they
/// write it as a name is written, not as a heading capitalises words: the most common of their forms with a
/// capital inside a word or a lowercase first letter ("URL", "PyPI", "GitHub", "impl Trait"). A capitalised
/// first letter alone would make "Url"; a heading's "Block Reward" is the label in title case, which a page's
/// sentence-case title does not follow.
fn as_written<'s>(label: &str, labels: impl Iterator<Item = &'s str>) -> Option<String> {
    if label.chars().any(char::is_uppercase) {
        return None;
    }
    // A word in capitals is an acronym when short ("ABI", "URL"); a longer one is shouted or an opcode
    // (`BALANCE`, `ADDRESS`), and the word as a page names it is the plain one.
    let shouted = |word: &str| word.chars().count() > ACRONYM_LETTERS && !word.chars().any(char::is_lowercase);
    let a_name = |form: &&str| {
        // The label itself, lowercased without a new string (most forms are another label's).
        let same_label = form.chars().flat_map(char::to_lowercase).eq(label.chars());
        let capital_inside = form.split_whitespace().any(|word| word.chars().skip(1).any(char::is_uppercase))
            && !form.split_whitespace().any(shouted);
        let lower_first = form.chars().next().is_some_and(char::is_lowercase) && form.chars().any(char::is_uppercase);
        same_label && (capital_inside || lower_first)
    };
    let written: Vec<&str> = labels.filter(a_name).collect();
    (!written.is_empty()).then(|| most_common(written.into_iter()))
}

/// The most letters of a word in capitals that [`as_written`] takes for an acronym.
const ACRONYM_LETTERS: usize = 4;

/// A title made of lowercase words (a term as the sources write it, "borrowing") with its first letter
/// capitalised, as a page's heading is written.
fn capitalized(title: String) -> String {
    let mut chars = title.chars();
    match chars.next() {
        Some(first) if !title.chars().any(char::is_uppercase) => first.to_uppercase().chain(chars).collect(),
        _ => title,
    }
}

/// The pages each of `source_count` sources is quoted or listed on, by source. Moving a source from a page's
/// places to its list (as [`list_hubs_unquoted`] does) keeps it on the page, so one listing serves both
/// steps.
fn pages_of_source(pages: &[PagePlan], source_count: usize) -> PagesOfSource {
    // Counted, then filled: one list for every source (a list each, grown one page at a time, was a
    // thousand allocations a plan on a Dendron vault).
    let mut starts = vec![0usize; source_count + 1];
    for plan in pages {
        for source in plan.sources() {
            starts[source + 1] += 1;
        }
    }
    for source in 0..source_count {
        starts[source + 1] += starts[source];
    }
    let mut filled = starts.clone();
    let mut listed = vec![0usize; starts[source_count]];
    for (page, plan) in pages.iter().enumerate() {
        for source in plan.sources() {
            listed[filled[source]] = page;
            filled[source] += 1;
        }
    }
    PagesOfSource { starts, pages: listed }
}

/// The pages each source is quoted or listed on, in page order: source `s`'s are
/// `pages[starts[s]..starts[s + 1]]`.
struct PagesOfSource {
    starts: Vec<usize>,
    pages: Vec<usize>,
}

impl PagesOfSource {
    /// The pages `source` is on.
    fn of(&self, source: usize) -> &[usize] {
        &self.pages[self.starts[source]..self.starts[source + 1]]
    }

    /// How many sources there are.
    fn len(&self) -> usize {
        self.starts.len() - 1
    }
}

/// The sources that link to more than [`HUB_PAGES`] pages' concepts: navigation (a table of contents, an
/// index note). Only links count: a long chapter that discusses many concepts by name is no hub. Whether each
/// of `source_count` sources is one, by source.
fn hubs(pages: &[PagePlan], source_count: usize) -> Vec<bool> {
    let mut linked = vec![0usize; source_count];
    // Each source counted once a page: the last page that counted it.
    let mut counted_on = vec![usize::MAX; source_count];
    for (at, page) in pages.iter().enumerate() {
        for source in page.backlinks.iter().map(|m| m.source) {
            if counted_on[source] != at {
                counted_on[source] = at;
                linked[source] += 1;
            }
        }
    }
    linked.into_iter().map(|count| count > HUB_PAGES).collect()
}

/// A hub is listed on the pages it links to, not quoted: its line is a link to the page's own document,
/// which says nothing. On rust-book every page quoted its `SUMMARY.md` line before this rule.
fn list_hubs_unquoted(pages: &mut [PagePlan], hubs: &[bool]) {
    for plan in pages.iter_mut() {
        let listed_here = |m: &Mention| hubs[m.source] && !plan.defined_by.contains(&m.source);
        // Most pages quote no hub: nothing to move.
        if !plan.places.iter().any(listed_here) {
            continue;
        }
        let (listed, places): (Vec<Mention>, Vec<Mention>) = plan.places.iter().partition(|m| listed_here(m));
        plan.places = places;
        plan.also.splice(0..0, listed.into_iter().map(|m| m.source));
    }
}

/// A concept named only by emphasis that more sources than this (and than half of all) mention is the
/// corpus's subject or vocabulary.
const SUBJECT_SOURCES: usize = 20;

/// Single words that name a part of a document rather than a subject: as headings and emphasized terms
/// they recur across unrelated sources ("Validation" in fourteen EIPs about fourteen things).
const DOCUMENT_PARTS: &[&str] = &[
    "abstract",
    "background",
    "code",
    "conclusion",
    "configuration",
    "details",
    "discussion",
    "example",
    "examples",
    "execution",
    "implementation",
    "installation",
    "introduction",
    "motivation",
    "notes",
    "overview",
    "rationale",
    "references",
    "requirements",
    "setup",
    "specification",
    "summary",
    "usage",
    "validation",
    "verification",
];

/// Whether a label reads as a name: two letters or more, not a path or a sentence (no `/`, no closing
/// punctuation), not one of [`DOCUMENT_PARTS`], and, when `needs_capital`, not an all-lowercase phrase of
/// plain words ("current value"): a name carries a capital, a digit or an identifier's `_`.
fn reads_as_name(label: &str, needs_capital: bool) -> bool {
    let label = label.trim();
    let letters = label.chars().filter(|c| c.is_alphabetic()).count();
    let words: Vec<&str> = label.split_whitespace().collect();
    let document_part = words.len() == 1 && DOCUMENT_PARTS.contains(&label.to_lowercase().as_str());
    let path_or_sentence = label.contains('/') || label.ends_with(['.', ':', ',', ';', '!', '?']);
    letters >= 2
        && !path_or_sentence
        && !document_part
        && (!needs_capital || label.chars().any(|c| c.is_uppercase() || c.is_ascii_digit() || c == '_'))
}

/// A source that links to more pages than this is navigation (a table of contents, an index): it makes no
/// two of its pages related. Without the cut, every chapter of a book "relates" to every other through its
/// `SUMMARY.md`, in alphabetical order.
const HUB_PAGES: usize = 20;

/// Related pages: the pages that share the most sources with each page, each shared source weighted by how
/// few pages it lists (sharing a two-page source says more than sharing a twenty-page one) and the sum
/// divided by the square root of how many sources the other page lists (a page on everything relates to
/// nothing in particular), ties to the smaller slug; listed in slug order. A page that shares only
/// navigation hubs has no related pages. `pages` come in slug order.
fn relate(pages: &mut [PagePlan], pages_of_source: &PagesOfSource, hubs: &[bool], max_related: usize) {
    debug_assert!(pages.windows(2).all(|pair| pair[0].slug < pair[1].slug), "pages in slug order");
    // How broad each page is: the square root of how many sources it lists (navigation set aside). A page
    // most of the corpus mentions shares sources with every page; scored by its shared sources alone it
    // would be every page's related page (the Rust book's "Functions" was on 130 of 181 lists).
    let breadth: Vec<f64> = pages
        .iter()
        .map(|plan| (plan.sources().filter(|source| !hubs[*source]).count().max(1) as f64).sqrt())
        .collect();
    // What sharing each source is worth, made once: one over how many pages list it.
    let weight: Vec<f64> =
        (0..pages_of_source.len()).map(|source| 1.0 / pages_of_source.of(source).len().max(1) as f64).collect();
    let related_to = |page: usize, plan: &PagePlan, shared: &mut [f64], touched: &mut Vec<usize>| -> Vec<usize> {
        // Every page of each source is scored, the page itself too (it lists the source), and set aside
        // below: one test a page rather than one a page of every listing, the step this loop repeats most.
        for source in plan.sources().filter(|&source| !hubs[source]) {
            let weight = weight[source];
            for &other in pages_of_source.of(source) {
                if shared[other] == 0.0 {
                    touched.push(other);
                }
                shared[other] += weight;
            }
        }
        // The best few, best first, kept while the scores are read: a page shares a source with hundreds of
        // others and keeps `max_related` (eight by default). Pages are in slug order, so a tie goes to the smaller
        // index. Scores are positive and finite (a shared source's weight over a page's breadth, both above
        // zero), so `>` and `==` order them as `total_cmp` does, for less.
        let before = |a: &(usize, f64), b: &(usize, f64)| a.1 > b.1 || (a.1 == b.1 && a.0 < b.0);
        let mut best: Vec<(usize, f64)> = Vec::with_capacity(max_related + 1);
        for other in touched.drain(..) {
            let total = std::mem::take(&mut shared[other]);
            if other == page {
                continue;
            }
            let scored = (other, total / breadth[other]);
            if best.len() == max_related && best.last().is_none_or(|last| !before(&scored, last)) {
                continue;
            }
            let at = best.partition_point(|kept| before(kept, &scored));
            best.insert(at, scored);
            best.truncate(max_related);
        }
        // Listed in slug order, not by score: a page added or removed elsewhere moves every score a little,
        // and a list that only changed its order would write its page again for nothing.
        let mut related: Vec<usize> = best.into_iter().map(|(other, _)| other).collect();
        related.sort_unstable();
        related
    };
    // Each part of the pages scores on its own thread, with a score list of its own.
    let related_of = || {
        let mut shared = vec![0.0f64; pages.len()];
        let mut touched: Vec<usize> = Vec::new();
        move |page: usize, plan: &PagePlan| -> Vec<usize> { related_to(page, plan, &mut shared, &mut touched) }
    };
    let related = in_parts(pages, PAGES_PER_THREAD, related_of);
    for (plan, related) in pages.iter_mut().zip(related) {
        plan.related = related;
    }
}

/// Concepts a thread of the plan takes at least: each is weighed in about two microseconds.
const CANDIDATES_PER_THREAD: usize = 128;

/// Pages a thread relating pages takes at least: each reads every page it shares a source with.
const PAGES_PER_THREAD: usize = 128;

/// `each` of a thread (made by `worker`, so each thread keeps scratch space of its own) over every item with
/// its index, the results in item order: the plan's per-concept and per-page steps split across the cores,
/// which a re-planning edit leaves idle. A thread takes at least `per_thread` items: with fewer it would
/// cost more than it saves.
fn in_parts<T: Sync, R: Send, F: FnMut(usize, &T) -> R>(
    items: &[T],
    per_thread: usize,
    worker: impl Fn() -> F + Sync,
) -> Vec<R> {
    let threads = cores().min(items.len() / per_thread.max(1));
    if threads <= 1 {
        let mut each = worker();
        return items.iter().enumerate().map(|(at, item)| each(at, item)).collect();
    }
    let size = items.len().div_ceil(threads);
    let part = |start: usize| {
        let mut each = worker();
        let end = (start + size).min(items.len());
        items[start..end].iter().zip(start..).map(|(item, at)| each(at, item)).collect::<Vec<R>>()
    };
    std::thread::scope(|scope| {
        let part = &part;
        let others: Vec<_> = (size..items.len()).step_by(size).map(|start| scope.spawn(move || part(start))).collect();
        let mut results = part(0);
        for other in others {
            results.extend(other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        results
    })
}

/// How many threads can run at once, asked once: the standard library reads the process's cgroup files each
/// time, and a plan asks twice.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The label a signal shows: a wikilink's target name without a heading part or folders.
fn display_label(signal: &PlanSignal) -> &str {
    match signal.kind {
        SignalKind::Wikilink | SignalKind::Embed => {
            let target = signal.label().split(['#', '^']).next().unwrap_or_default().trim();
            let name = target.rsplit('/').next().unwrap_or(target);
            name.strip_suffix(".md").unwrap_or(name)
        }
        _ => signal.label().trim(),
    }
}

/// The title of a source whose title other sources share, told apart by where it lives: `Links
/// (dendron.topic)` for the Dendron note `dendron.topic.links.md`, `Setup (guides)` for `guides/setup.md`.
fn distinct_title(source: &CatalogSource<'_>) -> String {
    let (stem, file) = path_stem(source.path);
    let folder = stem.rsplit_once('/').map_or("", |(folder, _)| folder);
    let parent = file.rsplit_once('.').map_or(folder, |(parent, _)| parent);
    match (source.title.trim(), parent) {
        ("", _) => file.to_string(),
        (title, "") => format!("{title} ({file})"),
        (title, parent) => format!("{title} ({parent})"),
    }
}

/// The most frequent value; ties go to the smallest. Counted by reference: only the one returned is made.
fn most_common<'v>(values: impl Iterator<Item = &'v str>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for value in values {
        *counts.entry(value).or_default() += 1;
    }
    let top = counts.values().copied().max().unwrap_or(0);
    counts.into_iter().find(|(_, count)| *count == top).map(|(value, _)| value.to_string()).unwrap_or_default()
}

/// What resolving a source's links and wikilinks needs of the source alone: the names a wikilink may use
/// for it, its file's key, and each link's keys. It depends on nothing else in the catalog, so the query
/// graph keeps it with the source's part of the catalog, and a plan only looks the keys up ([`Resolver`]):
/// the keys' strings (a wikilink's normalized names, a link's resolved path) were most of resolving a
/// Dendron vault's wikilinks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceLinks {
    /// The names a wikilink may use for the source ([`wiki_names`]).
    names: Vec<String>,
    /// One per link, wikilink or embed, in signal order.
    links: Vec<LinkKeys>,
    /// The concept key of its file's name, which a wikilink to it names when it names no concept itself.
    file_key: String,
    /// [`SourceLinks::file_key`] with plurals folded.
    file_folded: String,
    /// The concept key of its path without the extension, which such a wikilink names instead when another
    /// source has the same file name; and with plurals folded.
    path_key: String,
    path_folded: String,
}

/// The keys a plan looks one link up by.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LinkKeys {
    /// A wikilink's or embed's sides as names ([`wikilink_key`]). Where no source has those names, the plan
    /// keys the concept the wikilink names by its own label: most wikilinks name a source, so that key is
    /// made only where it is needed.
    Wikilink { names: Vec<String> },
    /// A link's resolved path ([`link_path`]; `None` when it leaves the project), and the paths a source at
    /// it may have ([`link_candidates`]).
    Link { resolved: Option<String>, candidates: Vec<String> },
}

/// What resolving the links of the source at `path`, titled `title`, with `signals`, needs of it alone.
#[must_use]
pub fn source_links(path: &str, title: &str, signals: &[PlanSignal]) -> SourceLinks {
    let aliases: Vec<String> =
        signals.iter().filter(|s| s.kind == SignalKind::Alias).map(|s| s.label().to_string()).collect();
    let links = signals
        .iter()
        .filter(|signal| signal.kind.is_reference())
        .map(|signal| match signal.kind {
            SignalKind::Link => {
                let resolved = link_path(path, signal.label());
                let candidates = resolved.as_deref().map(|at| link_candidates(at).collect()).unwrap_or_default();
                LinkKeys::Link { resolved, candidates }
            }
            _ => {
                let sides = std::iter::once(signal.label()).chain(signal.other.as_deref());
                LinkKeys::Wikilink { names: sides.filter_map(|side| wikilink_key(path, side)).collect() }
            }
        })
        .collect();
    let (path_without_extension, file_stem) = path_stem(path);
    let (file_key, path_key) = (concept_key(file_stem), concept_key(path_without_extension));
    let (file_folded, path_folded) = (fold_key(&file_key), fold_key(&path_key));
    SourceLinks { names: wiki_names(path, title, &aliases), links, file_key, file_folded, path_key, path_folded }
}

impl SourceLinks {
    /// Whether the source has a wikilink or an embed.
    fn has_wikilinks(&self) -> bool {
        self.links.iter().any(|link| matches!(link, LinkKeys::Wikilink { .. }))
    }
}

/// Resolves signals to concept keys.
struct Resolver<'a> {
    sources: &'a [CatalogSource<'a>],
    /// The concept key of each source's title (its title signal's, made with the signal).
    title_key: Vec<Cow<'a, str>>,
    /// The concept each source names itself: its title when no other source shares it, else its first alias.
    own_key: Vec<Option<Cow<'a, str>>>,
    /// [`Resolver::own_key`] with plurals folded.
    own_folded: Vec<Option<FoldedKey<'a>>>,
    /// The concept a wikilink to a source without an own key names: its file name's key (its path's, when
    /// another source has the same file name). `None` where no source has a wikilink.
    link_key: Vec<Option<&'a str>>,
    /// [`Resolver::link_key`] with plurals folded.
    link_folded: Vec<Option<FoldedKey<'a>>>,
    by_name: HashMap<&'a str, usize>,
    by_path: HashMap<&'a str, usize>,
    /// The folder every source but the hand-written pages shares, with its `/` (`docs/`): where a link from the
    /// site's root (`/guide/`) names a page when the project's root holds none, as lint resolves it.
    site_root: String,
    /// Each source by the route a site serves it at (`links::route_key`), made at the first link from the
    /// site's root that no path names.
    by_route: std::sync::OnceLock<HashMap<String, usize>>,
}

impl<'a> Resolver<'a> {
    fn new(sources: &'a [CatalogSource<'a>]) -> Resolver<'a> {
        // A source's title is almost always its title signal's label, whose key and folded key are made (and
        // kept with the signal): a plan keys only a title no signal carries.
        let title_keys: Vec<(Cow<'a, str>, Option<&'a PlanSignal>)> = sources
            .iter()
            .map(|source| {
                let signal = source.signals.iter().find(|s| s.kind == SignalKind::Title && s.label() == source.title);
                match signal {
                    Some(signal) => (Cow::Borrowed(signal.key()), Some(signal)),
                    None => (Cow::Owned(concept_key(source.title)), None),
                }
            })
            .collect();
        let mut title_count: HashMap<&str, usize> = HashMap::default();
        for (key, _) in &title_keys {
            *title_count.entry(key.as_ref()).or_default() += 1;
        }
        let (own_key, own_folded): (Vec<Option<Cow<'a, str>>>, Vec<Option<FoldedKey<'a>>>) = sources
            .iter()
            .zip(&title_keys)
            .map(|(source, (title, signal))| {
                if !title.is_empty() && title_count[title.as_ref()] == 1 {
                    let folded = match signal {
                        Some(signal) => signal.folded_key(),
                        None => FoldedKey::owned(fold_key(title)),
                    };
                    return (Some(title.clone()), Some(folded));
                }
                let alias = source.signals.iter().find(|s| s.kind == SignalKind::Alias).filter(|s| !s.key().is_empty());
                (alias.map(|alias| Cow::Borrowed(alias.key())), alias.map(PlanSignal::folded_key))
            })
            .unzip();
        // Names matter only to wikilinks, which many projects have none of.
        let mut by_name = HashMap::default();
        let mut link_key = vec![None; sources.len()];
        let mut link_folded = vec![None; sources.len()];
        if sources.iter().any(|s| s.links.has_wikilinks()) {
            for (index, source) in sources.iter().enumerate() {
                for name in &source.links.names {
                    by_name.entry(name.as_str()).or_insert(index);
                }
            }
            let mut file_count: HashMap<&str, usize> = HashMap::default();
            for source in sources {
                *file_count.entry(source.links.file_key.as_str()).or_default() += 1;
            }
            for (index, source) in sources.iter().enumerate() {
                let links = source.links;
                let (key, folded) = if file_count[links.file_key.as_str()] == 1 {
                    (&links.file_key, &links.file_folded)
                } else {
                    (&links.path_key, &links.path_folded)
                };
                if !key.is_empty() {
                    link_key[index] = Some(key.as_str());
                    link_folded[index] = Some(FoldedKey::borrowed_text(folded));
                }
            }
        }
        let by_path = sources.iter().enumerate().map(|(index, s)| (s.path, index)).collect();
        let site_root = crate::links::shared_folders(sources.iter().filter(|s| !s.handwritten).map(|s| s.path));
        let by_route = std::sync::OnceLock::new();
        let title_key = title_keys.into_iter().map(|(key, _)| key).collect();
        Resolver {
            sources,
            title_key,
            own_key,
            own_folded,
            link_key,
            link_folded,
            by_name,
            by_path,
            site_root,
            by_route,
        }
    }

    /// The source one of a link's candidate paths ([`link_candidates`]) names.
    fn at_candidate<S: AsRef<str>>(&self, candidates: impl IntoIterator<Item = S>) -> Option<usize> {
        candidates.into_iter().find_map(|path| self.by_path.get(path.as_ref()).copied())
    }

    /// The source a link's resolved path names when no candidate path at the project's root does: for a link
    /// from the site's root (`rooted`), one under the site's root or its route there.
    fn under_site_root(&self, resolved: &str, rooted: bool) -> Option<usize> {
        if !rooted || self.site_root.is_empty() {
            return None;
        }
        // The site's root itself (`/`) is the site root's folder, whose index page a link to it names.
        let under_root = format!("{}{resolved}", self.site_root).trim_end_matches('/').to_string();
        self.at_candidate(link_candidates(&under_root)).or_else(|| {
            let by_route = self.by_route.get_or_init(|| {
                let routes = self.sources.iter().enumerate().map(|(index, s)| (crate::links::route_key(s.path), index));
                let mut by_route = HashMap::default();
                for (route, index) in routes {
                    by_route.entry(route).or_insert(index);
                }
                by_route
            });
            by_route.get(&crate::links::route_key(&under_root)).copied()
        })
    }

    /// The source a bare relative link (no `./` or `../`) names under the site's root when its file's folder
    /// holds none, as Docusaurus resolves it and lint reads it (`[Store](api/Store.md)` from
    /// `docs/understanding/glossary.md` is `docs/api/Store.md`).
    fn bare_link_target(&self, label: &str) -> Option<usize> {
        if self.site_root.is_empty() {
            return None;
        }
        let under_root = crate::links::bare_path_under(self.site_root.trim_end_matches('/'), label)?;
        self.at_candidate(link_candidates(&under_root))
    }

    /// The key a signal names, plurals folded ([`fold_key`]): borrowed from the signal or the resolver. A
    /// link, wikilink or embed is looked up by its keys (`link`: its entry of the source's [`SourceLinks`]).
    fn folded_key_of<'k>(
        &'k self,
        source: usize,
        signal: &'k PlanSignal,
        link: Option<&'k LinkKeys>,
    ) -> Option<FoldedKey<'k>> {
        let own_key = |target: usize| self.own_folded[target].as_ref().map(FoldedKey::borrowed);
        let link_key = |target: usize| self.link_folded[target].as_ref().map(FoldedKey::borrowed);
        match signal.kind {
            SignalKind::Title => match &self.own_key[source] {
                Some(own) if *own == signal.key() => Some(signal.folded_key()),
                Some(_) => None,
                None => link_key(source),
            },
            SignalKind::Alias
            | SignalKind::Defined
            | SignalKind::Introduced
            | SignalKind::Heading
            | SignalKind::Tag
            | SignalKind::Term => Some(signal.folded_key()),
            SignalKind::Wikilink | SignalKind::Embed => {
                let Some(LinkKeys::Wikilink { names }) = link else { return None };
                let target = names.iter().find_map(|name| self.by_name.get(name.as_str()).copied());
                match target {
                    Some(target) if target == source => None,
                    Some(target) => own_key(target).or_else(|| link_key(target)),
                    None => Some(FoldedKey::owned(fold_key(&concept_key(display_label(signal))))),
                }
            }
            SignalKind::Link => {
                let Some(LinkKeys::Link { resolved, candidates }) = link else { return None };
                let resolved = resolved.as_deref()?;
                let label = signal.label();
                let target = self
                    .at_candidate(candidates)
                    .or_else(|| self.under_site_root(resolved, label.starts_with('/')))
                    .or_else(|| self.bare_link_target(label))?;
                if target == source { None } else { own_key(target) }
            }
        }
    }
}

/// Folded concept keys as numbers: a catalog's tens of thousands of signals share a few thousand keys, so
/// the planner groups mentions by number. A key is looked up by its hash, made with its signal, and its text
/// is compared only when the hash is found: most signals' keys name nothing, and their texts stay unread.
struct ConceptKeys<'k> {
    /// The number of the first key numbered with each hash.
    numbers: HashMap<u64, u32>,
    /// The numbers of keys whose hash an earlier key had (two different keys with one 64-bit hash: kept
    /// apart, never merged).
    collided: HashMap<Cow<'k, str>, u32>,
    /// The keys, by number.
    names: Vec<Cow<'k, str>>,
}

impl<'k> ConceptKeys<'k> {
    /// Room for `keys` keys without growing.
    fn with_capacity(keys: usize) -> ConceptKeys<'k> {
        ConceptKeys {
            numbers: HashMap::with_capacity_and_hasher(keys, Default::default()),
            collided: HashMap::default(),
            names: Vec::with_capacity(keys),
        }
    }

    fn number(&mut self, key: FoldedKey<'k>) -> u32 {
        let next = self.names.len() as u32;
        let number = match self.numbers.get(&key.hash) {
            Some(&number) if self.names[number as usize] == key.text => return number,
            Some(_) => *self.collided.entry(key.text.clone()).or_insert(next),
            None => *self.numbers.entry(key.hash).or_insert(next),
        };
        if number == next {
            self.names.push(key.text);
        }
        number
    }

    /// The number of a key already numbered.
    fn named(&self, key: &FoldedKey<'_>) -> Option<u32> {
        match self.numbers.get(&key.hash) {
            Some(&number) if self.names[number as usize] == key.text => Some(number),
            Some(_) => self.collided.get(key.text.as_ref()).copied(),
            None => None,
        }
    }

    fn len(&self) -> usize {
        self.names.len()
    }

    /// Every key, sorted, one per line.
    fn sorted_names(&self) -> String {
        let mut names: Vec<&str> = self.names.iter().map(|name| name.as_ref()).collect();
        names.sort_unstable();
        names.join("\n")
    }

    fn name(&self, number: u32) -> &str {
        &self.names[number as usize]
    }

    /// Each key's concept once the pairs are joined: the smallest key of its set, so the result does not
    /// depend on the order of the pairs.
    fn joined(&self, pairs: &[(u32, u32)]) -> Vec<u32> {
        let mut parent: Vec<u32> = (0..self.names.len() as u32).collect();
        fn root(parent: &mut [u32], mut key: u32) -> u32 {
            while parent[key as usize] != key {
                let up = parent[parent[key as usize] as usize];
                parent[key as usize] = up;
                key = up;
            }
            key
        }
        for &(a, b) in pairs {
            let (a, b) = (root(&mut parent, a), root(&mut parent, b));
            if a != b {
                let (small, large) = if self.name(a) < self.name(b) { (a, b) } else { (b, a) };
                parent[large as usize] = small;
            }
        }
        (0..self.names.len() as u32).map(|key| root(&mut parent, key)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{
        ConceptKeys, FoldedKey, HUB_PAGES, Mention, PagePlan, as_written, hubs, in_parts, pages_of_source, sorted_by,
    };

    /// A page quoting `places` and listing `also`, linked from `backlinks`, all by source.
    fn page(places: &[usize], also: &[usize], backlinks: &[usize]) -> PagePlan {
        let mention = |&source: &usize| Mention { source, signal: 0 };
        PagePlan {
            slug: String::new(),
            title: String::new(),
            aliases: Vec::new(),
            section: String::new(),
            defined_by: Vec::new(),
            places: places.iter().map(mention).collect(),
            also: also.to_vec(),
            related: Vec::new(),
            backlinks: backlinks.iter().map(mention).collect(),
        }
    }

    #[test]
    fn each_source_lists_the_pages_it_is_on_in_page_order() {
        let pages = [page(&[2, 0], &[3], &[]), page(&[], &[2], &[]), page(&[0], &[], &[])];
        let listing = pages_of_source(&pages, 5);
        let lists: Vec<&[usize]> = (0..listing.len()).map(|source| listing.of(source)).collect();
        assert_eq!(lists, [&[0, 2][..], &[], &[0, 1], &[0], &[]]);
    }

    #[test]
    fn a_hub_links_to_more_pages_however_often_it_links_to_each() {
        // Source 0 links to every page twice; source 1 links to one page more than `HUB_PAGES` times.
        let mut pages: Vec<PagePlan> = (0..=HUB_PAGES).map(|_| page(&[], &[], &[0, 0])).collect();
        pages.push(page(&[], &[], &[1; HUB_PAGES + 1]));
        assert_eq!(hubs(&pages, 2), [true, false]);
        pages.pop();
        pages.pop();
        assert_eq!(hubs(&pages, 2), [false, false], "exactly HUB_PAGES pages is no hub");
    }

    #[test]
    fn sorted_items_keep_the_order_they_came_in_among_equals() {
        let items = vec![(2, 'a'), (1, 'b'), (2, 'c'), (0, 'd'), (1, 'e')];
        assert_eq!(sorted_by(items, |a, b| a.0.cmp(&b.0)), [(0, 'd'), (1, 'b'), (1, 'e'), (2, 'a'), (2, 'c')]);
        assert!(sorted_by(Vec::<u8>::new(), u8::cmp).is_empty());
    }

    #[test]
    fn keys_sharing_a_hash_keep_their_own_numbers() {
        let key = |text: &'static str, hash: u64| FoldedKey { text: Cow::Borrowed(text), hash };
        let mut keys = ConceptKeys::with_capacity(4);
        let trait_ = keys.number(key("trait", 7));
        let closure = keys.number(key("closure", 7));
        let lifetime = keys.number(key("lifetime", 9));
        assert_eq!([trait_, closure, lifetime], [0, 1, 2], "three keys, three numbers");
        assert_eq!(keys.number(key("closure", 7)), closure, "a collided key numbered again keeps its number");
        assert_eq!(keys.named(&key("trait", 7)), Some(trait_));
        assert_eq!(keys.named(&key("closure", 7)), Some(closure));
        assert_eq!(keys.named(&key("macro", 7)), None, "a third key with the hash was never numbered");
        assert_eq!(keys.named(&key("macro", 8)), None);
        assert_eq!(keys.len(), 3);
        assert_eq!(keys.sorted_names(), "closure\nlifetime\ntrait");
    }

    #[test]
    fn work_split_across_threads_comes_back_in_item_order_with_scratch_space_per_thread() {
        let items: Vec<u32> = (0..1000).collect();
        for per_thread in [1, 7, 128, 1000, 5000] {
            // Each worker counts the items it saw: a count shared between threads would skip or repeat.
            let results = in_parts(&items, per_thread, || {
                let mut seen = 0;
                move |at: usize, item: &u32| {
                    seen += 1;
                    (at, *item * 2, seen)
                }
            });
            assert_eq!(results.len(), items.len(), "per thread {per_thread}");
            assert!(results.iter().enumerate().all(|(at, r)| r.0 == at && r.1 == 2 * at as u32));
            let restarts = results.windows(2).filter(|pair| pair[1].2 != pair[0].2 + 1).count();
            let threads = super::cores().min(items.len() / per_thread);
            let parts = if threads <= 1 { 1 } else { items.len().div_ceil(items.len().div_ceil(threads)) };
            assert_eq!(restarts + 1, parts, "one worker a thread, per thread {per_thread}");
        }
    }

    fn written(label: &str, forms: &[&str]) -> Option<String> {
        as_written(label, forms.iter().copied())
    }

    #[test]
    fn a_lowercase_label_takes_the_form_its_mentions_write_as_a_name() {
        assert_eq!(written("url", &["url", "URL", "URL", "Url"]).as_deref(), Some("URL"), "the commonest name form");
        assert_eq!(written("pypi", &["PyPI"]).as_deref(), Some("PyPI"));
        assert_eq!(written("impl trait", &["impl Trait"]).as_deref(), Some("impl Trait"));
        // A heading's title case, a word shouted in capitals and a label with capitals of its own keep theirs.
        assert_eq!(written("block reward", &["Block Reward", "Block reward"]), None);
        assert_eq!(written("balance", &["BALANCE"]), None);
        assert_eq!(written("abi", &["ABI"]).as_deref(), Some("ABI"), "a short word in capitals is an acronym");
        assert_eq!(written("Rust", &["RUST"]), None);
        assert_eq!(written("git", &["GitHub"]), None, "another word");
    }
}
