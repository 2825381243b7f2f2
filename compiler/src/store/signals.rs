//! A source's concept signals as the index keeps them: one blob per source (`concept_signals.signals`),
//! the signals in the order the source gave them, each as the planner reads it (its concept keys made
//! when it was stored, its rank by place) with the excerpt a page would quote.
//!
//! Why one blob and not a row per signal: a fresh process whose edit changes what the planner reads must
//! read every quotable source's signals (49,003 on rust-rfcs); stepping and decoding a row per signal, then
//! keying each label again, was about a third of such an edit's time (docs/performance.md). Every read
//! takes a source's signals whole, or steps over them to a few by index.
//!
//! Layout, integers little-endian `u32`: the number of signals; per signal, the kind (one byte, its index
//! in [`SignalKind::ALL`]), flags (one byte: [`QUOTABLE`], [`HAS_OTHER`], [`OWN_KEY`], [`OWN_FOLDED`]), the
//! label, then `other`, the concept key and the folded key where the flags say they are there (each a
//! length and its bytes; a key not there is the label, a folded key not there is the key), then the
//! excerpt's chunk, start, end, start line and end line, the weight and the place, then where the flags say
//! the excerpt is a table row with its header elsewhere ([`TABLE_HEADER`]), the header's chunk, start, end and
//! line.
//!
//! The layout is this binary's own, like the tags: an index another binary wrote has another fingerprint,
//! and such a build derives every source again before it reads a stored blob (`Before::read` in
//! `build/write.rs` reads none then), so a layout may change with any release.

use std::collections::BTreeSet;

use knowledge_queries::wiki::{Excerpt, PlanSignal, Signal, SignalKind, TableHeaderPlace, concept_keys, place_ranks};

use super::wiki::SourceSignals;

const QUOTABLE: u8 = 1;
const HAS_OTHER: u8 = 2;
/// The concept key differs from the label, so it is stored.
const OWN_KEY: u8 = 4;
/// The folded key differs from the key, so it is stored.
const OWN_FOLDED: u8 = 8;
/// The excerpt is a table's body row, and its header's place is stored.
const TABLE_HEADER: u8 = 16;

/// The tag of a kind: its index in [`SignalKind::ALL`] (a kind added to the enum fails to compile here first).
/// The index ties itself to the binary (its pipeline fingerprint), so a tag always means what that list says.
fn tag(kind: SignalKind) -> u8 {
    match kind {
        SignalKind::Title => 0,
        SignalKind::Alias => 1,
        SignalKind::Defined => 2,
        SignalKind::Introduced => 3,
        SignalKind::Heading => 4,
        SignalKind::Wikilink => 5,
        SignalKind::Link => 6,
        SignalKind::Tag => 7,
        SignalKind::Embed => 8,
        SignalKind::Term => 9,
    }
}

/// A source's signals as one blob, each with its concept keys and rank by place (`None` when it has none:
/// no row then).
pub(super) fn encode(signals: &[Signal]) -> Option<Vec<u8>> {
    if signals.is_empty() {
        return None;
    }
    let places = place_ranks(signals.iter().map(|signal| signal.excerpt.start));
    let text: usize = signals.iter().map(|s| 3 * s.label.len() + s.other.as_ref().map_or(0, |o| 4 + o.len())).sum();
    let mut bytes = Vec::with_capacity(4 + signals.len() * 46 + text);
    bytes.extend(u32::try_from(signals.len()).unwrap_or(u32::MAX).to_le_bytes());
    for (signal, place) in signals.iter().zip(places) {
        let (key, folded) = concept_keys(&signal.label);
        let own_key = key != signal.label;
        let own_folded = folded != key;
        let flag = |set: bool, flag: u8| if set { flag } else { 0 };
        let flags = flag(signal.quotable, QUOTABLE)
            | flag(signal.other.is_some(), HAS_OTHER)
            | flag(own_key, OWN_KEY)
            | flag(own_folded, OWN_FOLDED)
            | flag(signal.excerpt.table_header.is_some(), TABLE_HEADER);
        bytes.extend([tag(signal.kind), flags]);
        put_text(&mut bytes, &signal.label);
        for text in [signal.other.as_deref(), own_key.then_some(key.as_str()), own_folded.then_some(folded.as_str())]
            .into_iter()
            .flatten()
        {
            put_text(&mut bytes, text);
        }
        let Excerpt { chunk, start, end, start_line, end_line, table_header } = signal.excerpt;
        for value in [chunk, start, end, start_line, end_line, signal.weight, place] {
            bytes.extend(value.to_le_bytes());
        }
        if let Some(TableHeaderPlace { chunk, start, end, line }) = table_header {
            for value in [chunk, start, end, line] {
                bytes.extend(value.to_le_bytes());
            }
        }
    }
    Some(bytes)
}

fn put_text(bytes: &mut Vec<u8>, text: &str) {
    bytes.extend(u32::try_from(text.len()).unwrap_or(u32::MAX).to_le_bytes());
    bytes.extend(text.as_bytes());
}

/// A stored blob that does not decode: a damaged index. Reported as a failed read of the index.
#[derive(Debug, thiserror::Error)]
#[error(
    "a source's stored concept signals do not decode at byte {at}: the index is damaged; remove it and build again"
)]
pub struct DamagedSignals {
    at: usize,
}

impl From<DamagedSignals> for rusqlite::Error {
    fn from(damaged: DamagedSignals) -> rusqlite::Error {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, Box::new(damaged))
    }
}

/// One stored signal, borrowed from its blob.
#[derive(Debug, Clone, Copy)]
pub(super) struct StoredSignal<'a> {
    pub(super) kind: SignalKind,
    pub(super) label: &'a str,
    pub(super) other: Option<&'a str>,
    /// The concept key where it differs from the label, and the folded key where it differs from that.
    own_key: Option<&'a str>,
    own_folded: Option<&'a str>,
    pub(super) excerpt: Excerpt,
    pub(super) quotable: bool,
    pub(super) weight: u32,
    place: u32,
}

impl StoredSignal<'_> {
    /// The signal as the planner reads it, and its excerpt.
    pub(super) fn planned(&self) -> (PlanSignal, Excerpt) {
        let other = self.other.map(str::to_string);
        let mut signal = PlanSignal::with_own_keys(self.kind, self.label, self.own_key, self.own_folded, other);
        (signal.order, signal.quotable, signal.weight) = (self.place, self.quotable, self.weight);
        (signal, self.excerpt)
    }
}

/// The stored signals of a blob, in their order: how many, and each. Nothing is read past the first signal
/// that does not decode (the rest of the blob has no known place to start from).
pub(super) fn decode(
    bytes: &[u8],
) -> Result<(usize, impl Iterator<Item = Result<StoredSignal<'_>, DamagedSignals>>), DamagedSignals> {
    let mut reader = Reader { bytes, at: 0 };
    let count = reader.number()? as usize;
    let signals = std::iter::from_fn(move || {
        let signal = (reader.at < reader.bytes.len()).then(|| reader.signal())?;
        if signal.is_err() {
            reader.at = reader.bytes.len();
        }
        Some(signal)
    });
    Ok((count, signals))
}

/// The signals of a blob at `indexes` (ascending), each with its index, as the planner reads them; the
/// others are stepped over, not made. An index past the blob's signals is not returned.
pub(super) fn decode_at(
    bytes: &[u8],
    indexes: &BTreeSet<u32>,
) -> Result<Vec<(u32, PlanSignal, Excerpt)>, DamagedSignals> {
    let mut reader = Reader { bytes, at: 0 };
    reader.number()?;
    let mut named = Vec::with_capacity(indexes.len());
    let mut next = 0;
    for &index in indexes {
        // A signal stepped over must decode too: one that does not leaves no place to read the next from.
        while next < index && reader.at < bytes.len() {
            reader.step_over()?;
            next += 1;
        }
        if reader.at == bytes.len() {
            break;
        }
        let (signal, excerpt) = reader.signal()?.planned();
        named.push((index, signal, excerpt));
        next += 1;
    }
    Ok(named)
}

/// Every signal of a blob as the planner reads it, and their excerpts, in the same order.
pub(super) fn decode_planned(bytes: &[u8]) -> Result<SourceSignals, DamagedSignals> {
    let (count, signals) = decode(bytes)?;
    // The count only sizes the vectors: a damaged one must not ask for memory the blob cannot fill.
    let capacity = count.min(bytes.len() / 40);
    let (mut planned, mut excerpts) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    for signal in signals {
        let (signal, excerpt) = signal?.planned();
        planned.push(signal);
        excerpts.push(excerpt);
    }
    if planned.len() != count {
        return Err(DamagedSignals { at: 0 });
    }
    Ok((planned, excerpts))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn signal(&mut self) -> Result<StoredSignal<'a>, DamagedSignals> {
        let start = self.at;
        let [tag, flags] = *self.take(2)? else { unreachable!("two bytes taken") };
        let kind = *SignalKind::ALL.get(usize::from(tag)).ok_or(DamagedSignals { at: start })?;
        let label = self.text()?;
        let other = if flags & HAS_OTHER != 0 { Some(self.text()?) } else { None };
        let own_key = if flags & OWN_KEY != 0 { Some(self.text()?) } else { None };
        let own_folded = if flags & OWN_FOLDED != 0 { Some(self.text()?) } else { None };
        // The seven numbers in one read, the table header's four in another.
        let [chunk, start, end, start_line, end_line, weight, place] = self.numbers()?;
        let table_header = if flags & TABLE_HEADER != 0 {
            let [chunk, start, end, line] = self.numbers()?;
            Some(TableHeaderPlace { chunk, start, end, line })
        } else {
            None
        };
        let excerpt = Excerpt { chunk, start, end, start_line, end_line, table_header };
        let quotable = flags & QUOTABLE != 0;
        Ok(StoredSignal { kind, label, other, own_key, own_folded, excerpt, quotable, weight, place })
    }

    /// Steps over one signal by its lengths alone: its texts are not made, so not checked as UTF-8.
    fn step_over(&mut self) -> Result<(), DamagedSignals> {
        let start = self.at;
        let [tag, flags] = *self.take(2)? else { unreachable!("two bytes taken") };
        SignalKind::ALL.get(usize::from(tag)).ok_or(DamagedSignals { at: start })?;
        let texts = 1 + [HAS_OTHER, OWN_KEY, OWN_FOLDED].iter().filter(|&&flag| flags & flag != 0).count();
        for _ in 0..texts {
            let len = self.number()? as usize;
            self.take(len)?;
        }
        let numbers = if flags & TABLE_HEADER != 0 { 11 } else { 7 };
        self.take(numbers * 4)?;
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], DamagedSignals> {
        let bytes = self.bytes.get(self.at..self.at.saturating_add(len)).ok_or(DamagedSignals { at: self.at })?;
        self.at += len;
        Ok(bytes)
    }

    /// `N` numbers in a row.
    fn numbers<const N: usize>(&mut self) -> Result<[u32; N], DamagedSignals> {
        let bytes = self.take(4 * N)?;
        Ok(std::array::from_fn(|at| u32::from_le_bytes(bytes[4 * at..4 * at + 4].try_into().expect("four bytes"))))
    }

    fn number(&mut self) -> Result<u32, DamagedSignals> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")))
    }

    fn text(&mut self) -> Result<&'a str, DamagedSignals> {
        let len = self.number()? as usize;
        let at = self.at;
        std::str::from_utf8(self.take(len)?).map_err(|_| DamagedSignals { at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(kind: SignalKind, label: &str, other: Option<&str>, start: u32) -> Signal {
        Signal {
            kind,
            label: label.to_string(),
            other: other.map(str::to_string),
            excerpt: Excerpt {
                chunk: 2,
                start,
                end: start + 7,
                start_line: 3,
                end_line: 4,
                // Every third signal a table row whose header is in another chunk.
                table_header: start.is_multiple_of(3).then_some(TableHeaderPlace {
                    chunk: 1,
                    start: start / 3,
                    end: start / 3 + 20,
                    line: 2,
                }),
            },
            quotable: start.is_multiple_of(2),
            weight: start % 5,
        }
    }

    #[test]
    fn every_kind_is_tagged_by_its_place_in_the_list() {
        for (index, kind) in SignalKind::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(tag(kind)), index, "{kind:?}");
        }
    }

    #[test]
    fn signals_read_back_as_the_planner_reads_them() {
        let signals: Vec<Signal> = SignalKind::ALL
            .into_iter()
            .enumerate()
            .map(|(n, kind)| {
                let other = (n % 3 == 0).then_some("shown ∂ text");
                // Labels whose keys are the label, differ from it, and fold a plural.
                let label = ["ownership", "Trait Objects", "label é", "pointers"][n % 4];
                signal(kind, label, other, 100 - n as u32 * 7)
            })
            .chain([signal(SignalKind::Term, "", None, 0)])
            .collect();
        let blob = encode(&signals).expect("signals");
        let expected: (Vec<PlanSignal>, Vec<Excerpt>) = signals
            .iter()
            .zip(place_ranks(signals.iter().map(|s| s.excerpt.start)))
            .map(|(signal, place)| knowledge_queries::wiki::plan_signal(signal.clone(), place))
            .unzip();
        assert_eq!(decode_planned(&blob).unwrap(), expected);
        assert!(encode(&[]).is_none());
        // Each signal read by its index, the ones before it stepped over (other texts, own keys, table
        // headers among them), is the signal read in order.
        for index in 0..signals.len() as u32 {
            let read = decode_at(&blob, &[index].into()).unwrap();
            let at = index as usize;
            assert_eq!(read, [(index, expected.0[at].clone(), expected.1[at])], "signal {index}");
        }
    }

    #[test]
    fn a_blob_that_does_not_decode_is_an_error_and_nothing_is_read_past_it() {
        // The second signal is a table row with its header's place (start 6 is a multiple of three).
        let blob = encode(&[
            signal(SignalKind::Heading, "Smart Pointers", Some("own"), 4),
            signal(SignalKind::Wikilink, "Row", None, 6),
        ])
        .unwrap();
        // Cut anywhere, a blob fails to decode rather than yielding a signal.
        for len in 0..blob.len() {
            assert!(decode_planned(&blob[..len]).is_err(), "cut at {len}");
        }
        let mut unknown_kind = blob.clone();
        unknown_kind[4] = 200;
        assert!(decode_planned(&unknown_kind).is_err());
        let mut bad_text = blob.clone();
        bad_text[10] = 0xff;
        assert!(decode_planned(&bad_text).is_err());
        let mut huge = blob.clone();
        huge[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_planned(&huge).is_err());
        let mut miscounted = blob;
        miscounted[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_planned(&miscounted).is_err());

        // Three signals, the second's kind damaged: reading stops at it, whether it is asked for or stepped
        // over, and the first still reads where nothing past it is asked for.
        let three: Vec<Signal> = ["Ownership", "Borrowing", "Lifetimes"]
            .iter()
            .zip([4, 40, 80])
            .map(|(label, start)| signal(SignalKind::Heading, label, None, start))
            .collect();
        let mut blob = encode(&three).unwrap();
        let (planned, excerpts) = decode_planned(&blob).unwrap();
        let at = |indexes: &[u32]| decode_at(&blob, &indexes.iter().copied().collect());
        let read = at(&[0, 2, 5]).unwrap();
        assert_eq!(
            read,
            [(0, planned[0].clone(), excerpts[0]), (2, planned[2].clone(), excerpts[2])],
            "past the end: none"
        );
        assert_eq!(at(&[]).unwrap(), []);
        let second = 4 + 2 + 4 + "Ownership".len() + 4 + "ownership".len() + 7 * 4;
        assert_eq!(blob[second], tag(SignalKind::Heading), "the second signal starts there");
        blob[second] = 200;
        let at = |indexes: &[u32]| decode_at(&blob, &indexes.iter().copied().collect());
        assert!(at(&[2]).is_err(), "a damaged signal stepped over fails the read");
        assert!(at(&[1]).is_err());
        assert_eq!(at(&[0]).unwrap().len(), 1);
        let (_, signals) = decode(&blob).unwrap();
        assert_eq!(signals.map(|signal| signal.is_ok()).collect::<Vec<_>>(), [true, false], "nothing past it");
    }
}
