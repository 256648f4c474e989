//! The built-in classifier's vocabulary (`data/words.tsv`): words in a site's name that say what
//! it is (`bank`, `casino`, `zeitung`), each at a place in a token, and words masked out first so
//! a misleading one inside them says nothing (`alphabet` is not `bet`). The rules were tuned on
//! `benches/data/dev_domains.tsv` and measured on a separate list (see docs/BENCHMARKS.md).
//!
//! The vocabulary is parsed and compiled once per process into two Aho-Corasick automata (the
//! masked words, the rule words), so a label is read once for all ~740 words instead of once
//! per word. The answer is defined by the rules, not by the automaton: of the rules whose word
//! is found at its place, the longest word wins, and between words of equal length the earlier
//! line; masks are applied one after the other in the file's order. A fixture of ~25,000 answers
//! recorded from the plain one-scan-per-word implementation (`tests/classify/builtin_answers.rs`) checks
//! that the automata answer exactly the same.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};

use crate::category::Category;

/// The bundled vocabulary, as shipped.
pub const WORDS_TSV: &str = include_str!("data/words.tsv");

/// Where in a label a vocabulary word must appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Anywhere in the label.
    Anywhere,
    /// As a whole token.
    Token,
    /// At the start of a token.
    TokenStart,
    /// At the end of a token.
    TokenEnd,
}

/// One line of the vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordRule<'a> {
    /// `word` at `place` says `category`.
    Word(&'a str, Place, Category),
    /// `word` is masked out of a label before any word is looked for.
    Mask(&'a str),
}

/// Parses the vocabulary (format in the header of `data/words.tsv`).
pub fn parse_words(text: &str) -> Result<Vec<WordRule<'_>>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(n, l)| {
            if let Some(masked) = l.strip_prefix('!') {
                return Ok(WordRule::Mask(masked.trim()));
            }
            let (pattern, c) = l
                .split_once('\t')
                .ok_or_else(|| format!("words line {}: no tab in {l:?}", n + 1))?;
            let category = c
                .trim()
                .parse()
                .map_err(|e| format!("words line {}: {e}", n + 1))?;
            let (word, place) = if let Some(w) = pattern.strip_prefix('=') {
                (w, Place::Token)
            } else if let Some(w) = pattern.strip_prefix('^') {
                (w, Place::TokenStart)
            } else if let Some(w) = pattern.strip_suffix('$') {
                (w, Place::TokenEnd)
            } else {
                (pattern, Place::Anywhere)
            };
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
                return Err(format!(
                    "words line {}: {pattern:?} is not a lower-case word",
                    n + 1
                ));
            }
            Ok(WordRule::Word(word, place, category))
        })
        .collect()
}

/// A rule of the vocabulary as the matcher needs it.
#[derive(Clone, Copy, Debug)]
struct Rule {
    /// Its line among the rules: the earlier wins between words of equal length.
    order: usize,
    place: Place,
    category: Category,
}

/// The vocabulary compiled for matching.
struct Vocabulary {
    /// The masked words, in the file's order.
    masks: Vec<&'static str>,
    /// Finds the masked words in a label (pattern `i` is `masks[i]`).
    any_mask: AhoCorasick,
    /// Every distinct rule word, one pattern each.
    words: AhoCorasick,
    /// The rules of each pattern of `words` (a word may be listed at several places).
    rules: Vec<Vec<Rule>>,
}

impl Vocabulary {
    fn compile(rules: &[WordRule<'static>]) -> Result<Vocabulary, String> {
        let mut masks = Vec::new();
        let mut words: Vec<&'static str> = Vec::new();
        let mut by_word: Vec<Vec<Rule>> = Vec::new();
        for (order, rule) in rules.iter().enumerate() {
            match *rule {
                WordRule::Mask(word) => masks.push(word),
                WordRule::Word(word, place, category) => {
                    // Tokens never mix letters and digits, so a word that does is only ever
                    // found anywhere in a label.
                    let mixed =
                        word.bytes().any(|b| b.is_ascii_digit()) && word.bytes().any(|b| !b.is_ascii_digit());
                    if mixed && place != Place::Anywhere {
                        continue;
                    }
                    let at = match words.iter().position(|w| *w == word) {
                        Some(at) => at,
                        None => {
                            words.push(word);
                            by_word.push(Vec::new());
                            words.len() - 1
                        }
                    };
                    by_word[at].push(Rule {
                        order,
                        place,
                        category,
                    });
                }
            }
        }
        let build = |patterns: &[&str]| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(patterns)
                .map_err(|e| format!("the vocabulary cannot be compiled: {e}"))
        };
        Ok(Vocabulary {
            any_mask: build(&masks)?,
            masks,
            words: build(&words)?,
            rules: by_word,
        })
    }

    /// The label with every masked word replaced by dots, one masked word after the other in the
    /// file's order; the label itself (no copy) when none occurs in it. Dots never make a word,
    /// so only the masked words found in the label as given are looked for again.
    fn mask<'a>(&self, label: &'a str, buf: &'a mut String) -> &'a str {
        let mut found: Vec<usize> = self
            .any_mask
            .find_overlapping_iter(label)
            .map(|m| m.pattern().as_usize())
            .collect();
        if found.is_empty() {
            return label;
        }
        found.sort_unstable();
        found.dedup();
        buf.clear();
        buf.push_str(label);
        for word in found.iter().map(|i| self.masks[*i]) {
            while let Some(at) = buf.find(word) {
                buf.replace_range(at..at + word.len(), &".".repeat(word.len()));
            }
        }
        buf
    }

    /// The category of the longest word found at its place in `names` (the earlier rule between
    /// words of equal length).
    fn hint(&self, names: &[&str]) -> Option<Category> {
        let mut best: Option<(usize, Rule)> = None;
        let mut buf = String::new();
        for label in names {
            let masked = self.mask(label, &mut buf);
            let bytes = masked.as_bytes();
            for m in self.words.find_overlapping_iter(masked) {
                let (start, end) = (m.start(), m.end());
                let len = end - start;
                if best.is_some_and(|(l, _)| l > len) {
                    continue;
                }
                let at_start = start == 0 || boundary(bytes[start - 1], bytes[start]);
                let at_end = end == bytes.len() || boundary(bytes[end - 1], bytes[end]);
                for rule in &self.rules[m.pattern().as_usize()] {
                    let found = match rule.place {
                        Place::Anywhere => true,
                        Place::Token => at_start && at_end,
                        Place::TokenStart => at_start,
                        Place::TokenEnd => at_end,
                    };
                    let better = best.is_none_or(|(l, b)| len > l || (len == l && rule.order < b.order));
                    if found && better {
                        best = Some((len, *rule));
                    }
                }
            }
        }
        best.map(|(_, r)| r.category)
    }
}

fn is_separator(b: u8) -> bool {
    matches!(b, b'-' | b'_' | b'.')
}

/// True if a token ends between the bytes `before` and `after` of a label (as [`tokens`] splits
/// it: at a separator, and between a digit and a non-digit). Rule words are ASCII, so a
/// boundary next to one is a boundary between characters.
fn boundary(before: u8, after: u8) -> bool {
    is_separator(before) || is_separator(after) || before.is_ascii_digit() != after.is_ascii_digit()
}

static VOCABULARY: LazyLock<Option<Vocabulary>> = LazyLock::new(|| {
    // A unit test checks the bundled file; were it ever broken, the word rules would be missing,
    // never the process.
    match parse_words(WORDS_TSV).and_then(|rules| Vocabulary::compile(&rules)) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::error!(error = %e, "src/classify/data/words.tsv is broken; word rules are off");
            None
        }
    }
});

/// Compiles the vocabulary now (it is otherwise compiled on first use).
pub fn warm() {
    LazyLock::force(&VOCABULARY);
}

/// Words in the site's name; the longest word found wins.
pub fn word_hint(names: &[&str]) -> Option<Category> {
    VOCABULARY.as_ref()?.hint(names)
}

/// Splits a label at `-`, `_`, `.` and letter/digit boundaries: `bet365-live` → `bet`, `365`,
/// `live`.
pub fn tokens(label: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let mut prev_digit = false;
    for (i, ch) in label.char_indices() {
        if matches!(ch, '-' | '_' | '.') {
            if let Some(s) = start.take() {
                out.push(&label[s..i]);
            }
            continue;
        }
        let digit = ch.is_ascii_digit();
        match start {
            Some(s) if digit != prev_digit => {
                out.push(&label[s..i]);
                start = Some(i);
            }
            None => start = Some(i),
            _ => {}
        }
        prev_digit = digit;
    }
    if let Some(s) = start {
        out.push(&label[s..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_vocabulary_is_valid_and_without_duplicates() {
        let rules = parse_words(WORDS_TSV).unwrap();
        assert!(rules.len() >= 400, "only {} rules", rules.len());
        let mut seen = std::collections::HashSet::new();
        for rule in &rules {
            let key = match rule {
                WordRule::Word(w, p, _) => format!("{w} {p:?}"),
                WordRule::Mask(w) => format!("!{w}"),
            };
            assert!(seen.insert(key.clone()), "{key} is listed twice");
        }
        assert!(VOCABULARY.is_some(), "the bundled vocabulary compiles");
        assert!(parse_words("shop\tnot_a_category").is_err());
        assert!(parse_words("Shop\tshopping").is_err());
        assert!(parse_words("shop shopping").is_err());
    }

    #[test]
    fn words_match_at_their_place_and_the_longest_wins() {
        // Anywhere in a label.
        assert_eq!(word_hint(&["mybankonline"]), Some(Category::Finance));
        // Whole tokens only: `tv` in `my-tv`, not in `atvrepair`-like words.
        assert_eq!(word_hint(&["my-tv"]), Some(Category::VideoStreaming));
        assert_eq!(word_hint(&["atvquad"]), None);
        // At the start or the end of a token.
        assert_eq!(word_hint(&["betfoo"]), Some(Category::Gambling));
        assert_eq!(word_hint(&["foobet"]), Some(Category::Gambling));
        assert_eq!(word_hint(&["foobetbar"]), None);
        // Masked words say nothing: `alphabet` is not `bet`, `essex` is not adult.
        assert_eq!(word_hint(&["alphabet"]), None);
        assert_eq!(word_hint(&["essex-county"]), Some(Category::GovernmentLaw));
        // The longest word wins: `sportsbook` over `sport`, `newspaper` over `news`.
        assert_eq!(word_hint(&["bestsportsbook"]), Some(Category::Gambling));
        assert_eq!(word_hint(&["career-care"]), Some(Category::Jobs));
        assert_eq!(word_hint(&["example"]), None);
    }

    #[test]
    fn places_follow_tokens_and_equal_lengths_go_to_the_earlier_line() {
        let rules = parse_words(
            "!xbank\nbank\tfinance\n=tv\tvideo_streaming\n^bet\tgambling\nbet$\tgambling\n\
             shop\tshopping\nsale\tlifestyle_hobbies\nbet1\tgames\n",
        )
        .unwrap();
        let v = Vocabulary::compile(&rules).unwrap();
        // A mask turns its letters into separators: `xbank` hides `bank`, and what is left is
        // split there (`bet` ends a token before the dots).
        assert_eq!(v.hint(&["xbank"]), None);
        assert_eq!(v.hint(&["betxbank"]), Some(Category::Gambling));
        // Tokens end at separators and between letters and digits, not inside a word.
        assert_eq!(v.hint(&["tv24"]), Some(Category::VideoStreaming));
        assert_eq!(v.hint(&["24tv-x"]), Some(Category::VideoStreaming));
        assert_eq!(v.hint(&["tvx"]), None);
        assert_eq!(v.hint(&["xbet2"]), Some(Category::Gambling));
        assert_eq!(v.hint(&["xbetx"]), None);
        // A word with letters and digits is found anywhere (longer than `bet`, so it wins).
        assert_eq!(v.hint(&["xbet1x"]), Some(Category::Games));
        // Equal length: the earlier line wins, wherever in the name each is found.
        assert_eq!(v.hint(&["salezshop"]), Some(Category::Shopping));
        assert_eq!(v.hint(&["sale", "shop"]), Some(Category::Shopping));
        // Non-ASCII letters are letters: `é` does not start a token.
        assert_eq!(v.hint(&["ébet"]), Some(Category::Gambling));
        assert_eq!(v.hint(&["xtvé"]), None);
    }

    #[test]
    fn labels_split_into_tokens() {
        assert_eq!(tokens("bet365-live"), ["bet", "365", "live"]);
        assert_eq!(tokens("alphabet"), ["alphabet"]);
        assert_eq!(tokens("a..b_c"), ["a", "b", "c"]);
    }
}
