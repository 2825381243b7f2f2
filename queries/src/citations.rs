//! Whether a written text keeps to the excerpts it cites: `ask --generate`'s answers and the wiki writer's
//! pages are checked by the same rule. A sentence ends with `[n]` markers naming excerpts; it is supported
//! when every marker names an excerpt and one excerpt it cites holds most of its words (stemmed, words of
//! three letters or more). The check is mechanical on purpose: it cannot be talked round by the text.

use std::collections::HashSet;

/// How much of a sentence's words one excerpt it cites must hold for the sentence to count as supported.
pub const SUPPORT_SHARE: f64 = 0.5;

/// A sentence of a written text, as checked.
#[derive(Clone, Debug, PartialEq)]
pub struct SentenceCheck {
    pub text: String,
    /// The excerpts it cites, by number (from 1).
    pub cites: Vec<usize>,
    /// Why it is not supported; `None` when it is.
    pub problem: Option<String>,
}

impl SentenceCheck {
    #[must_use]
    pub fn supported(&self) -> bool {
        self.problem.is_none()
    }
}

/// Splits `text` into sentences and checks each one's citations against `excerpts`, numbered from 1.
#[must_use]
pub fn check_sentences(text: &str, excerpts: &[&str]) -> Vec<SentenceCheck> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let content = |text: &str| -> HashSet<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|word| word.len() > 2)
            .map(|word| stemmer.stem(&word.to_lowercase()).into_owned())
            .collect()
    };
    let mut excerpt_words: Vec<Option<HashSet<String>>> = vec![None; excerpts.len()];
    split_cited_sentences(text)
        .into_iter()
        .map(|(text, cites)| {
            let words = content(&text);
            let mut problem = None;
            if cites.is_empty() {
                problem = Some("cites no excerpt".to_string());
            } else if let Some(&missing) = cites.iter().find(|&&n| n == 0 || n > excerpts.len()) {
                problem = Some(format!("cites [{missing}], which the pack does not hold"));
            } else {
                let best = cites
                    .iter()
                    .map(|&n| {
                        let excerpt = excerpt_words[n - 1].get_or_insert_with(|| content(excerpts[n - 1]));
                        words.iter().filter(|w| excerpt.contains(*w)).count() as f64 / words.len().max(1) as f64
                    })
                    .fold(0.0, f64::max);
                if best < SUPPORT_SHARE {
                    let share = (best * 100.0).round();
                    problem = Some(format!("the excerpts it cites hold only {share}% of its words"));
                }
            }
            SentenceCheck { text, cites, problem }
        })
        .collect()
}

/// The numbers a citation marker's inside holds (`1`, `1, 4`), or `None` when it is not a marker.
#[must_use]
pub fn marker_numbers(inner: &str) -> Option<Vec<usize>> {
    let numbers: Option<Vec<usize>> = inner.split(',').map(|part| part.trim().parse().ok()).collect();
    numbers.filter(|numbers| !numbers.is_empty())
}

/// The sentences of `text` with the `[n]` markers each ends with (markers removed from the text). A marker
/// after the sentence's full stop belongs to that sentence.
#[must_use]
pub fn split_cited_sentences(text: &str) -> Vec<(String, Vec<usize>)> {
    let mut sentences: Vec<(String, Vec<usize>)> = Vec::new();
    let mut current = String::new();
    let mut cites = Vec::new();
    let mut chars = text.chars().peekable();
    let mut ended = false;
    while let Some(c) = chars.next() {
        if c == '[' {
            let mut inner = String::new();
            while let Some(&next) = chars.peek() {
                if next == ']' || inner.len() > 12 {
                    break;
                }
                inner.push(next);
                chars.next();
            }
            if chars.peek() == Some(&']')
                && let Some(numbers) = marker_numbers(&inner)
            {
                chars.next();
                // A marker after a full stop cites the sentence just ended.
                match sentences.last_mut().filter(|_| ended && current.trim().is_empty()) {
                    Some(last) => last.1.extend(numbers),
                    None => cites.extend(numbers),
                }
                continue;
            }
            current.push('[');
            current.push_str(&inner);
            continue;
        }
        current.push(c);
        ended = false;
        let at_end =
            matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|next| next.is_whitespace() || *next == '[');
        if at_end || c == '\n' {
            let sentence = current.trim().to_string();
            if sentence.split_whitespace().count() > 0 && sentence.chars().any(char::is_alphanumeric) {
                sentences.push((sentence, std::mem::take(&mut cites)));
                ended = true;
            } else if let Some(last) = sentences.last_mut() {
                last.1.append(&mut cites);
            }
            current.clear();
        }
    }
    let rest = current.trim().to_string();
    if rest.chars().any(char::is_alphanumeric) {
        sentences.push((rest, cites));
    } else if let Some(last) = sentences.last_mut() {
        last.1.append(&mut cites);
    }
    for (text, cites) in &mut sentences {
        *text = text.split_whitespace().collect::<Vec<_>>().join(" ").replace(" .", ".");
        cites.sort_unstable();
        cites.dedup();
    }
    sentences
}

#[cfg(test)]
mod tests {
    use super::{check_sentences, split_cited_sentences};

    #[test]
    fn markers_belong_to_the_sentence_they_end() {
        let split = split_cited_sentences(
            "Ownership has rules [1]. Each value has one owner.[2][3] A value is dropped [1, 4].\nNo cite here.",
        );
        assert_eq!(
            split,
            [
                ("Ownership has rules.".to_string(), vec![1]),
                ("Each value has one owner.".to_string(), vec![2, 3]),
                ("A value is dropped.".to_string(), vec![1, 4]),
                ("No cite here.".to_string(), vec![]),
            ]
        );
        assert_eq!(
            split_cited_sentences("Arrays index from 0 [see the book]."),
            [("Arrays index from 0 [see the book].".to_string(), vec![])]
        );
    }

    #[test]
    fn a_sentence_is_supported_only_by_an_excerpt_it_cites_that_holds_its_words() {
        let excerpts = ["Each value in Rust has an owner.", "Borrowing lends a reference without moving."];
        let checked = check_sentences(
            "Each value has an owner [1]. Each value has an owner [2]. Values are owned [3]. Owners exist.",
            &excerpts,
        );
        let verdicts: Vec<bool> = checked.iter().map(super::SentenceCheck::supported).collect();
        assert_eq!(verdicts, [true, false, false, false]);
        assert!(checked[1].problem.as_deref().unwrap().contains("hold only"), "{checked:?}");
        assert!(checked[2].problem.as_deref().unwrap().contains("[3]"), "{checked:?}");
        assert_eq!(checked[3].problem.as_deref(), Some("cites no excerpt"));
    }
}
