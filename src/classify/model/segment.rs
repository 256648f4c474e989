//! Finding the words in a site's name: `bestsourdoughrecipes` → `best`, `sourdough`, `recipes`.
//!
//! The word list (`data/wordfreq/words.tsv.gz`, about 59,000 words of seven European languages
//! with their frequencies; CC BY-SA 4.0, its sources in the README beside it) is embedded and
//! decoded once into one string arena with an open-addressing hash table of offsets (about
//! 1.3 MB). [`segment`] picks the split of a run of letters that costs least, where a known word
//! costs its rarity (−log10 of its frequency) and an unknown stretch a fixed price plus a little
//! per letter, so letters that make no words stay one unknown stretch instead of rare short words.
//!
//! If the embedded list could not be read (a broken build, refused by a unit test first), the
//! list is empty, the log says so, and names are not segmented: the model still has its n-grams.

use std::io::Read;
use std::sync::LazyLock;

/// The word list as shipped.
pub const WORDS_GZ: &[u8] = include_bytes!("../data/wordfreq/words.tsv.gz");

/// The attribution to show wherever the word list is distributed (CC BY-SA 4.0).
pub const ATTRIBUTION: &str = include_str!("../data/wordfreq/ATTRIBUTION.txt");

/// Words in the list as shipped (a unit test checks it).
pub const ROWS: usize = 59_288;

/// Where the word list comes from, in a few words.
pub const SOURCE_SHORT: &str = "wordfreq 3.1.1 by Robyn Speer, CC BY-SA 4.0";

/// Longest word looked up.
pub const MAX_WORD: usize = 24;

/// Cost of an unknown stretch: this much, plus [`UNKNOWN_PER_LETTER`] per letter.
const UNKNOWN_BASE: f32 = 4.0;
const UNKNOWN_PER_LETTER: f32 = 1.0;
/// Every word costs this much on top of its rarity, so fewer, longer words are preferred.
const PER_WORD: f32 = 0.5;

/// The decoded word list.
pub struct WordList {
    arena: String,
    /// End offset of each word in `arena`.
    ends: Vec<u32>,
    /// Frequency bucket of each word (frequency 10^(−bucket/100)).
    buckets: Vec<u16>,
    /// Open addressing: word index + 1, 0 for empty. Its length is a power of two.
    slots: Vec<u32>,
}

static WORDS: LazyLock<WordList> = LazyLock::new(|| match WordList::decode(WORDS_GZ) {
    Ok(w) => w,
    Err(e) => {
        tracing::error!(error = %e, "the embedded word list cannot be read; site names are not segmented");
        WordList::empty()
    }
});

/// The embedded word list, decoded on first use.
pub fn words() -> &'static WordList {
    &WORDS
}

/// FNV-1a, 64 bits: the one hash of the model's features and of the word table.
pub fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64 ^ seed, |h, b| fnv1a_step(h, *b))
}

/// One byte more of an [`fnv1a`] hash.
fn fnv1a_step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
}

impl WordList {
    fn empty() -> WordList {
        WordList {
            arena: String::new(),
            ends: Vec::new(),
            buckets: Vec::new(),
            slots: vec![0],
        }
    }

    /// Decodes a gzip word list: `word<TAB>bucket` lines, `#` comments ignored. A word that is not
    /// lower-case ASCII letters and digits, a bucket that is not a number, or a word listed twice
    /// is an error naming its line.
    pub fn decode(gz: &[u8]) -> Result<WordList, String> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut text)
            .map_err(|e| format!("not a gzip UTF-8 text: {e}"))?;
        let mut list = WordList::empty();
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (word, bucket) = line
                .split_once('\t')
                .ok_or_else(|| format!("line {}: no tab", n + 1))?;
            if word.is_empty()
                || word.len() > MAX_WORD
                || !word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            {
                return Err(format!("line {}: {word:?} is not a word", n + 1));
            }
            let bucket: u16 = bucket
                .parse()
                .map_err(|_| format!("line {}: {bucket:?} is not a bucket", n + 1))?;
            list.arena.push_str(word);
            list.ends
                .push(u32::try_from(list.arena.len()).map_err(|_| "the list is too large".to_owned())?);
            list.buckets.push(bucket);
        }
        list.slots = vec![0; (list.ends.len() * 2).next_power_of_two().max(2)];
        let mask = list.slots.len() - 1;
        for i in 0..list.ends.len() {
            let word = list.word(i);
            let mut at = slot_of(fnv1a(0, word.as_bytes()), mask);
            while list.slots[at] != 0 {
                if list.word(list.slots[at] as usize - 1) == word {
                    return Err(format!("{word:?} is listed twice"));
                }
                at = (at + 1) & mask;
            }
            list.slots[at] = u32::try_from(i + 1).map_err(|_| "the list is too large".to_owned())?;
        }
        Ok(list)
    }

    fn word(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    /// Bytes the decoded list holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.arena.capacity()
            + 4 * self.ends.capacity()
            + 2 * self.buckets.capacity()
            + 4 * self.slots.capacity()
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if the list is empty.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The frequency bucket of `word` (its frequency is 10^(−bucket/100)), if it is listed.
    pub fn bucket(&self, word: &str) -> Option<u16> {
        self.bucket_hashed(word, fnv1a(0, word.as_bytes()))
    }

    /// [`WordList::bucket`] given `hash`, the word's `fnv1a(0, word)`.
    fn bucket_hashed(&self, word: &str, hash: u64) -> Option<u16> {
        if self.ends.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = slot_of(hash, mask);
        loop {
            match self.slots[at] {
                0 => return None,
                i if self.word(i as usize - 1) == word => return Some(self.buckets[i as usize - 1]),
                _ => at = (at + 1) & mask,
            }
        }
    }
}

fn slot_of(hash: u64, mask: usize) -> usize {
    // The mask is below the table's length, a `usize`: the low bits fit.
    usize::try_from(hash & (mask as u64)).unwrap_or(0)
}

/// The known words of `run` (a run of lower-case letters, as found in a host name) in the split
/// that costs least; unknown stretches are left out. Runs longer than 64 letters are not split.
pub fn segment(run: &str) -> Vec<&str> {
    segment_with(words(), run)
}

/// [`segment`] with a given word list.
pub fn segment_with<'a>(list: &WordList, run: &'a str) -> Vec<&'a str> {
    let n = run.len();
    if !(3..=64).contains(&n) || !run.is_ascii() {
        return Vec::new();
    }
    // known[i][k]: the bucket of run[i..i + k], if it is a word of 3 to MAX_WORD letters; each
    // start's hash is extended a letter at a time instead of hashing every piece again.
    let mut known = [[None::<u16>; MAX_WORD + 1]; 64];
    for (i, row) in known.iter_mut().enumerate().take(n) {
        let mut hash = fnv1a(0, &[]);
        for k in 1..=MAX_WORD.min(n - i) {
            hash = fnv1a_step(hash, run.as_bytes()[i + k - 1]);
            if k >= 3 {
                row[k] = list.bucket_hashed(&run[i..i + k], hash);
            }
        }
    }
    // best[j]: the cheapest split of run[..j]; from[j]: where its last piece starts, and
    // whether that piece is a known word.
    let mut best = [f32::INFINITY; 65];
    let mut from = [(0usize, false); 65];
    best[0] = 0.0;
    for j in 1..=n {
        for i in 0..j {
            if !best[i].is_finite() {
                continue;
            }
            let unknown = best[i] + UNKNOWN_BASE + UNKNOWN_PER_LETTER * (j - i) as f32;
            if unknown < best[j] {
                best[j] = unknown;
                from[j] = (i, false);
            }
            if j - i >= 3 && j - i <= MAX_WORD {
                if let Some(bucket) = known[i][j - i] {
                    let cost = best[i] + PER_WORD + f32::from(bucket) / 100.0;
                    if cost < best[j] {
                        best[j] = cost;
                        from[j] = (i, true);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut j = n;
    while j > 0 {
        let (i, known) = from[j];
        if known {
            out.push(&run[i..j]);
        }
        j = i;
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_word_list_is_valid_and_large() {
        let list = WordList::decode(WORDS_GZ).unwrap();
        assert_eq!(list.len(), ROWS);
        assert!(ATTRIBUTION.contains("CC BY-SA 4.0") && ATTRIBUTION.contains("wordfreq"));
        for w in [
            "recipes", "casino", "bonus", "stadt", "werke", "zeitung", "voyage", "noticias", "muenchen",
        ] {
            assert!(list.bucket(w).is_some(), "{w} is missing");
        }
        assert_eq!(list.bucket("zzzqqq"), None);
        assert!(WordList::decode(b"not gzip").is_err());
    }

    #[test]
    fn names_split_into_their_words() {
        assert_eq!(
            segment("bestsourdoughrecipes"),
            ["best", "sour", "dough", "recipes"]
        );
        assert_eq!(segment("casinobonus"), ["casino", "bonus"]);
        assert_eq!(
            segment("stadtwerkemusterstadt"),
            ["stadt", "werke", "muster", "stadt"]
        );
        assert_eq!(segment("meteofrance"), ["meteo", "france"]);
        // Letters that are no word stay an unknown stretch. (A brand made of short common words,
        // `zalando` → `zal`·`ando`, is split: the model learns such words say little.)
        assert!(segment("xkcdqrzt").is_empty(), "{:?}", segment("xkcdqrzt"));
        assert!(segment("ab").is_empty());
        assert!(segment(&"a".repeat(200)).is_empty());
    }
}
