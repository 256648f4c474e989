//! Records the built-in classifier's answers for a large fixed list of domains into
//! `tests/fixtures/builtin_answers.tsv.gz`, so a change that is meant to make the rules faster
//! (not different) can be checked against what they answered before it. Run through
//! `scripts/record-builtin-answers`, and only when the answers are meant to change (a new
//! vocabulary, new weights, a new rule): the test `builtin_answers` then compares every line.
//!
//! The list (about 24,000 domains, the same on every run): the three hand-labelled lists of the
//! benches, the bundled map, a fixed sample of the open table and the same names under an unknown
//! ending (so they reach the model and the word rules), every vocabulary word and mask at each
//! place a rule can look at (alone, inside, at the start and end of a token, beside digits and
//! hyphens, in a subdomain), generated long-tail names from words of the vocabulary and of the
//! word list, and odd input (upper case, `www.`, trailing dots, empty labels, digits, non-ASCII).
//!
//! One line per domain, written by `tests/support/builtin_answer.rs` (shared with the test).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{Read, Write};

#[path = "../tests/support/builtin_answer.rs"]
mod builtin_answer;

use builtin_answer::answer_line;
use sitetrail::classify::builtin::{parse_domain_map, DOMAINS_TSV};
use sitetrail::classify::hints::{parse_words, WordRule, WORDS_TSV};
use sitetrail::classify::model::{self, segment};
use sitetrail::classify::open_table;

const LISTS: [&str; 3] = [
    include_str!("../benches/data/typical_domains.tsv"),
    include_str!("../benches/data/labelled_domains.tsv"),
    include_str!("../benches/data/dev_domains.tsv"),
];

/// xorshift, fixed seed: the same list on every machine.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n as u64).unwrap()
    }
}

/// The fixed list of domains (see the module's doc).
fn domains() -> Vec<String> {
    let mut out: Vec<String> = LISTS
        .iter()
        .flat_map(|t| parse_domain_map(t).unwrap())
        .map(|(d, _)| d.to_owned())
        .collect();
    out.extend(
        parse_domain_map(DOMAINS_TSV)
            .unwrap()
            .into_iter()
            .map(|(d, _)| d.to_owned()),
    );
    let table: Vec<&str> = open_table::table().iter().map(|(d, _)| d).collect();
    let mut rng = Rng(0x5eed_0020_b0b0_cafe);
    for _ in 0..4_000 {
        let d = table[rng.below(table.len())];
        out.push(d.to_owned());
        // The same site name under an ending no list knows: the model and the word rules answer.
        let name = d.rsplit('.').nth(1).unwrap_or(d);
        out.push(format!("{name}.example"));
    }
    let rules = parse_words(WORDS_TSV).unwrap();
    let vocabulary: Vec<&str> = rules
        .iter()
        .map(|r| match r {
            WordRule::Word(w, _, _) | WordRule::Mask(w) => *w,
        })
        .collect();
    for w in &vocabulary {
        for form in [
            format!("{w}.com"),
            format!("x{w}y.net"),
            format!("{w}zz.de"),
            format!("qq{w}.fr"),
            format!("{w}-info.org"),
            format!("my-{w}.co.uk"),
            format!("{w}24.de"),
            format!("24{w}7.com"),
            format!("{w}.qzxv.com"),
            format!("{w}{w}.io"),
        ] {
            out.push(form);
        }
    }
    let list = segment::words();
    let common: Vec<&str> = [
        "best",
        "online",
        "my",
        "the",
        "blue",
        "river",
        "north",
        "city",
        "home",
        "group",
        "berlin",
        "paris",
        "madrid",
        "sourdough",
        "recipes",
        "stadtwerke",
        "kanzlei",
        "atelier",
        "notizie",
    ]
    .into_iter()
    .filter(|w| w.len() < 3 || list.bucket(w).is_some())
    .collect();
    let endings = [
        "com", "de", "fr", "es", "co.uk", "net", "org", "io", "shop", "gov", "example",
    ];
    for i in 0..7_000 {
        let a = vocabulary[rng.below(vocabulary.len())];
        let b = common[rng.below(common.len())];
        let c = vocabulary[rng.below(vocabulary.len())];
        let ending = endings[rng.below(endings.len())];
        out.push(match i % 7 {
            0 => format!("{b}{a}.{ending}"),
            1 => format!("{a}{b}{c}.{ending}"),
            2 => format!("{a}-{c}.{ending}"),
            3 => format!("{b}{}{a}.{ending}", i % 100),
            4 => format!("shop.{b}{c}.{ending}"),
            5 => format!("{a}.{b}.{c}.{ending}"),
            _ => format!("{c}{a}{b}{i}.example-{}.{ending}", i % 13),
        });
    }
    for odd in [
        "",
        ".",
        "com",
        "WWW.Casino-Bonus.DE.",
        "www.",
        "a..b",
        "..casino..",
        "-bet-.com",
        "_bank_.net",
        "123.456",
        "bet365.com",
        "365bet.com",
        "münchen-bank.de",
        "casinoé.com",
        "ébet.com",
        "xn--mnchen-3ya.example",
        "localhost",
        "192.168.0.1",
        "[::1]",
    ] {
        out.push(odd.to_owned());
    }
    out.push(format!("{}.com", "casino".repeat(20)));
    out.push(format!("{}.com", "a".repeat(63)));
    out
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/fixtures/builtin_answers.tsv.gz".into());
    let m = model::model().expect("the embedded model");
    let mut text = String::new();
    for d in domains() {
        assert!(!d.contains(['\t', '\n']), "{d:?}");
        text.push_str(&answer_line(m, &d));
        text.push('\n');
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(text.as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    // Read back, so a file that cannot be read is never left behind.
    let mut back = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut back)
        .unwrap();
    assert_eq!(back, text);
    std::fs::write(&path, &bytes).unwrap();
    println!(
        "wrote {path}: {} domains, {} bytes",
        text.lines().count(),
        bytes.len()
    );
}
