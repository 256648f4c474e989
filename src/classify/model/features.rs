//! The learned classifier's features: what a domain (and, on the device, its pages' titles) looks
//! like to the model, as hashed indices with values.
//!
//! From the domain (normalised like the rules do it: lower case, no `www.`):
//! - `g`: character n-grams (3 to 5) of the site's name, the label before the public ending, with
//!   `<` and `>` marking its start and end (`<cas`, `sino>`);
//! - `w`: the words of every name label, found by [`super::segment`] in each run of letters
//!   (`casinobonus24` → `casino`, `bonus`);
//! - `s` and `t`: the public ending as the rules read it (`co.uk`, `de`) and the top-level label;
//! - `d`: the leftmost label of a name with a subdomain (`shop.` in `shop.example.com`).
//!
//! From titles and URL paths (never leaves the device): their words, lower case and folded to
//! ASCII, counted over the site's pages; the [`MAX_TITLE_WORDS`] most frequent that are not
//! too common to mean anything are features `w`, the same as the words found in names, so what
//! the model learnt from `recipes` in a name applies to `Recipe` in a title. Their values add up
//! to [`TITLE_MASS`], so a site with many pages does not drown its name.
//!
//! Every feature is hashed with FNV-1a (its group tag first) into [`crate::classify::model`]'s
//! bucket count; [`FEATURE_VERSION`] names this recipe and is stored in the weights file, so
//! weights trained with another recipe are refused.

use std::collections::HashMap;

use super::segment::{self, fnv1a};
use crate::classify::hints;

/// The version of the feature recipe; bump it with any change here (the weights must be trained
/// again, and the weights file's check refuses older ones).
pub const FEATURE_VERSION: u16 = 1;

/// Most title and path words a judgement uses.
pub const MAX_TITLE_WORDS: usize = 24;

/// The sum of the title words' values.
pub const TITLE_MASS: f32 = 8.0;

/// Words at least this common (frequency bucket below it: more often than 1 in 3,000 words)
/// say nothing about a site: `the`, `und`, `les`, `home`.
const COMMON_BUCKET: u16 = 350;

/// One hashed feature: bucket index and value.
pub type Feature = (u32, f32);

/// Hashes `text` of feature group `tag` into `bits` bits.
fn hash(tag: u8, text: &str, bits: u32) -> u32 {
    let h = fnv1a(u64::from(tag), text.as_bytes());
    // The top bits are the best mixed; `bits` is at most 20 (checked where weights load), so the
    // shifted value fits.
    u32::try_from(h >> (64 - bits.min(32))).unwrap_or(u32::MAX)
}

/// The feature of a word (in a name, a title or a path), for a word seen on its own.
pub fn word_feature(word: &str, bits: u32) -> Feature {
    (hash(b'w', word, bits), 1.0)
}

/// The features of `domain` (already normalised by the caller: lower case, no `www.`), in
/// `bits`-bit buckets, appended to `out`.
pub fn domain_features(domain: &str, bits: u32, out: &mut Vec<Feature>) {
    let labels: Vec<&str> = domain.split('.').filter(|l| !l.is_empty()).collect();
    if labels.is_empty() {
        return;
    }
    let names = hints::name_labels(&labels);
    let ending = labels[names.len()..].join(".");
    out.push((hash(b's', &ending, bits), 1.0));
    if let Some(tld) = labels.last() {
        out.push((hash(b't', tld, bits), 1.0));
    }
    let Some(site) = names.last() else { return };
    if names.len() >= 2 {
        out.push((hash(b'd', names[0], bits), 1.0));
    }
    let marked = format!("<{site}>");
    let bytes = marked.as_bytes();
    for n in 3..=5 {
        for w in bytes.windows(n) {
            if let Ok(gram) = std::str::from_utf8(w) {
                out.push((hash(b'g', gram, bits), 1.0));
            }
        }
    }
    for label in names {
        for token in hints::tokens(label) {
            if token.bytes().all(|b| b.is_ascii_lowercase()) {
                for word in segment::segment(token) {
                    out.push((hash(b'w', word, bits), 1.0));
                }
            }
        }
    }
}

/// The words of page titles and URL paths, counted: lower case, Latin letters folded to ASCII
/// (`Rezepte für Brot` → `rezepte`, `fur`, `brot`), words of 3 to 24 letters, too-common words
/// left out.
#[derive(Clone, Debug, Default)]
pub struct TitleWords {
    counts: HashMap<String, u32>,
}

impl TitleWords {
    /// No words yet.
    pub fn new() -> TitleWords {
        TitleWords::default()
    }

    /// Counts the words of one title or URL path.
    pub fn add(&mut self, text: &str) {
        let folded = fold(text);
        for word in folded.split(|c: char| !c.is_ascii_alphanumeric()) {
            if word.len() < 3 || word.len() > segment::MAX_WORD || word.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if segment::words().bucket(word).is_some_and(|b| b < COMMON_BUCKET) {
                continue;
            }
            *self.counts.entry(word.to_owned()).or_default() += 1;
        }
    }

    /// True if no word was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The [`MAX_TITLE_WORDS`] most frequent words (ties in word order), most frequent first.
    pub fn top(&self) -> Vec<(&str, u32)> {
        let mut all: Vec<(&str, u32)> = self.counts.iter().map(|(w, n)| (w.as_str(), *n)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        all.truncate(MAX_TITLE_WORDS);
        all
    }

    /// The title features, appended to `out`: the top words, values in proportion to their
    /// counts, adding up to [`TITLE_MASS`].
    pub fn features(&self, bits: u32, out: &mut Vec<Feature>) {
        let top = self.top();
        let total: u32 = top.iter().map(|(_, n)| n).sum();
        if total == 0 {
            return;
        }
        for (word, n) in top {
            out.push((hash(b'w', word, bits), TITLE_MASS * n as f32 / total as f32));
        }
    }
}

/// Lower case, with the Latin letters of Western European languages folded to ASCII; other
/// characters become spaces.
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        let folded = match c {
            'a'..='z' | '0'..='9' => {
                out.push(c);
                continue;
            }
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => "a",
            'æ' => "ae",
            'ç' => "c",
            'è' | 'é' | 'ê' | 'ë' => "e",
            'ì' | 'í' | 'î' | 'ï' => "i",
            'ñ' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => "o",
            'œ' => "oe",
            'ù' | 'ú' | 'û' | 'ü' => "u",
            'ý' | 'ÿ' => "y",
            'ß' => "ss",
            _ => " ",
        };
        out.push_str(folded);
    }
    out
}

/// The group a domain belongs to when the table is split for training (a registrable domain and
/// every name under it fall together): the site name and its ending, as the rules read them.
pub fn split_key(domain: &str) -> String {
    let labels: Vec<&str> = domain.split('.').filter(|l| !l.is_empty()).collect();
    let names = hints::name_labels(&labels);
    let keep = (labels.len() - names.len() + 1).min(labels.len());
    labels[labels.len() - keep..].join(".")
}

/// Where a domain of the training data falls: 80 % train, 10 % validation (tuning), 10 % test
/// (the figures), by a hash of its [`split_key`], so the split is the same on every machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Trained on.
    Train,
    /// Tuned on: the calibration and the confidence thresholds.
    Validation,
    /// Held out: measured once, for the figures.
    Test,
}

/// The split of `domain` (see [`Split`]).
pub fn split_of(domain: &str) -> Split {
    match fnv1a(0x5173_7472, split_key(domain).as_bytes()) % 100 {
        0..=9 => Split::Test,
        10..=19 => Split::Validation,
        _ => Split::Train,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(domain: &str) -> Vec<Feature> {
        let mut out = Vec::new();
        domain_features(domain, 18, &mut out);
        out
    }

    #[test]
    fn a_domain_gives_its_ending_ngrams_and_words() {
        let f = features("casinobonus24.co.uk");
        let has = |tag: u8, text: &str| f.iter().any(|(i, _)| *i == hash(tag, text, 18));
        assert!(has(b's', "co.uk") && has(b't', "uk"));
        assert!(!has(b's', "uk"), "the ending is the whole public part");
        assert!(has(b'g', "<cas") && has(b'g', "s24>") && has(b'g', "bonus"));
        assert!(has(b'g', "<ca") && !has(b'g', "onus24"), "no 6-grams");
        assert!(has(b'w', "casino") && has(b'w', "bonus"));
        assert!(!has(b'd', "casinobonus24"), "no subdomain");
        // 3..5-grams of `<casinobonus24>` (15 bytes): 13 + 12 + 11, two endings, two words.
        assert_eq!(f.len(), 13 + 12 + 11 + 2 + 2);
        let sub = features("shop.example.com");
        assert!(sub.contains(&(hash(b'd', "shop", 18), 1.0)));
        assert!(features("").is_empty());
    }

    #[test]
    fn hashes_stay_in_their_bits() {
        for bits in [10, 16, 18, 24] {
            let mut out = Vec::new();
            domain_features("stadtwerke-musterstadt.de", bits, &mut out);
            assert!(out.iter().all(|(i, _)| *i < (1 << bits)));
        }
    }

    #[test]
    fn title_words_are_folded_counted_and_capped() {
        let mut t = TitleWords::new();
        t.add("Rezepte für Brot – Das beste Sauerteig-Rezept");
        t.add("Brot backen: Rezepte");
        t.add("/rezepte/brot-backen?page=2");
        let top = t.top();
        // Most frequent first, ties in word order.
        assert_eq!(top[0], ("brot", 3));
        assert_eq!(top[1], ("rezepte", 3));
        assert!(
            top.iter().all(|(w, _)| *w != "das" && *w != "fur"),
            "common words are left out: {top:?}"
        );
        assert!(top.iter().any(|(w, _)| *w == "sauerteig"));
        let mut many = TitleWords::new();
        for i in 0..100 {
            many.add(&format!("word{i}x"));
        }
        assert_eq!(many.top().len(), MAX_TITLE_WORDS);
        let mut f = Vec::new();
        t.features(18, &mut f);
        let mass: f32 = f.iter().map(|(_, v)| v).sum();
        assert!((mass - TITLE_MASS).abs() < 1e-4);
        assert!(TitleWords::new().is_empty());
    }

    #[test]
    fn the_split_keeps_a_site_together_and_is_stable() {
        assert_eq!(split_key("a.b.example.co.uk"), "example.co.uk");
        assert_eq!(split_key("example.com"), "example.com");
        assert_eq!(split_key("com"), "com");
        assert_eq!(split_of("x.example.co.uk"), split_of("example.co.uk"));
        let n = 20_000;
        let test = (0..n)
            .filter(|i| split_of(&format!("site{i}.com")) == Split::Test)
            .count();
        let val = (0..n)
            .filter(|i| split_of(&format!("site{i}.com")) == Split::Validation)
            .count();
        assert!(
            (1_700..2_300).contains(&test) && (1_700..2_300).contains(&val),
            "{test} {val}"
        );
    }
}
