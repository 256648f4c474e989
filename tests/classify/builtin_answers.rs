//! The built-in classifier answers exactly what it answered when
//! `tests/fixtures/builtin_answers.tsv.gz` was recorded (see `examples/record_builtin_answers.rs`):
//! the same category, confidence and rule for every domain, the same word-rule answer, and the
//! model's same category and probability, to the bit. A change meant to make the rules faster
//! must keep this green without recording the file again.

use std::io::Read;

use std::collections::HashSet;

use sitetrail::classify::builtin::{judge_domain, Rule};
use sitetrail::classify::model;
use sitetrail::Category;

use crate::support::builtin_answer::answer_line;

const ANSWERS_GZ: &[u8] = include_bytes!("../fixtures/builtin_answers.tsv.gz");

#[test]
fn the_rules_answer_what_they_answered_when_recorded() {
    let mut text = String::new();
    flate2::read::GzDecoder::new(ANSWERS_GZ)
        .read_to_string(&mut text)
        .unwrap();
    let m = model::model().expect("the embedded model");
    let mut differ = Vec::new();
    let mut lines = 0;
    for line in text.lines() {
        lines += 1;
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 7, "{line:?}");
        let now = answer_line(m, f[0]);
        if now != line {
            differ.push(format!("recorded {line:?}\n     now {now:?}"));
        }
    }
    assert!(lines > 20_000, "only {lines} recorded answers");
    assert!(
        differ.is_empty(),
        "{} of {lines} answers differ from the recorded ones, first:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}

/// Well-known national sites (tests/fixtures/national_sites.tsv says how the list was made).
const NATIONAL: &str = include_str!("../fixtures/national_sites.tsv");

#[test]
fn well_known_national_sites_and_local_hosts_get_the_categories_people_expect() {
    let mut countries = HashSet::new();
    let mut wrong = Vec::new();
    let mut total = 0;
    for line in NATIONAL.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 3, "{line:?}");
        countries.insert(f[0]);
        total += 1;
        let want: Category = f[2].parse().unwrap();
        let got = judge_domain(f[1]);
        if got.category != want {
            wrong.push(format!(
                "{}: {} ({:?}), not {}",
                f[1],
                got.category.id(),
                got.rule,
                want.id()
            ));
        }
    }
    assert!(
        total >= 230 && countries.len() >= 20,
        "{total} sites, {} countries",
        countries.len()
    );
    let right = total - wrong.len();
    assert!(
        right * 100 >= total * 95,
        "{right} of {total} right; wrong:\n{}",
        wrong.join("\n")
    );
    // Those a reviewer named.
    assert_eq!(judge_domain("tagesschau.de").category, Category::News);
    assert_eq!(judge_domain("news.ycombinator.com").category, Category::News);
    // Local and test hosts: their own category, certain, never a guess from the letters.
    for host in [
        "localhost",
        "127.0.0.1",
        "10.1.2.3",
        "172.20.0.1",
        "192.168.1.1",
        "::1",
        "fd00::1",
        "printer.local",
        "shop.test",
        "db.internal",
        "app.localhost",
    ] {
        let j = judge_domain(host);
        assert_eq!((j.category, j.rule), (Category::LocalDev, Rule::Local), "{host}");
        assert!(j.is_certain(), "{host}");
    }
    assert_ne!(judge_domain("8.8.8.8").rule, Rule::Local);
}
