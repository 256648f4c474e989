//! The built-in classifier's accuracy. Run: `cargo bench --bench builtin_accuracy`.
//!
//! Three hand-labelled lists (each file's header says how it was made):
//! 1. `typical_domains.tsv`: the distinct websites of one person's history, mostly popular sites
//!    the bundled map covers, plus their local long tail: the figure a user would see;
//! 2. `labelled_domains.tsv`: the test list, long-tail sites none of which is in the map, so it
//!    measures the fallback rules alone; never used to choose rules;
//! 3. `dev_domains.tsv`: the development list the fallback rules are tuned against, disjoint from
//!    the map and the test list. `-- --show-dev-errors` prints each miss on it (and only on it);
//!    `-- --dev-only` prints only its figures, for tuning without looking at the other two.

use std::collections::{BTreeMap, HashSet};

use sitetrail::classify::builtin::{classify_domain, parse_domain_map, DOMAINS_TSV};
use sitetrail::Category;

const TYPICAL: &str = include_str!("data/typical_domains.tsv");
const TEST: &str = include_str!("data/labelled_domains.tsv");
const DEV: &str = include_str!("data/dev_domains.tsv");

/// `domain` and each parent domain with at least two labels.
fn with_parents(domain: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(domain), |d| {
        d.split_once('.').map(|(_, p)| p).filter(|p| p.contains('.'))
    })
}

/// True when the bundled map answers for `domain` (itself or a parent).
fn covered(known: &HashSet<&str>, domain: &str) -> bool {
    with_parents(domain).any(|d| known.contains(d))
}

/// Classifies every domain of `list`, prints the figures and, if `show_errors`, each miss.
fn report(title: &str, list: &[(&str, Category)], known: &HashSet<&str>, show_errors: bool) {
    let mut right = 0;
    let mut as_other = 0;
    let mut other_right = 0;
    let mut per_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let (mut in_map, mut in_map_right) = (0, 0);
    for (domain, expected) in list {
        let got = classify_domain(domain);
        let entry = per_category.entry(expected.id()).or_default();
        entry.1 += 1;
        let ok = got == *expected;
        if covered(known, domain) {
            in_map += 1;
            in_map_right += usize::from(ok);
        }
        if ok {
            right += 1;
            entry.0 += 1;
        }
        if got == Category::Other {
            as_other += 1;
            other_right += usize::from(ok);
        }
        if show_errors && !ok {
            println!(
                "   miss: {domain:<32} labelled {:<18} got {}",
                expected.id(),
                got.id()
            );
        }
    }
    let n = list.len();
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    let answered = n - as_other;
    let answered_right = right - other_right;
    println!("\n{title}: {n} hand-labelled domains");
    println!("   correct: {right}/{n} = {:.1}%", pct(right, n));
    println!(
        "   answered `other`: {as_other} ({:.1}%, {other_right} of them labelled `other`); a wrong category: {} ({:.1}%)",
        pct(as_other, n),
        answered - answered_right,
        pct(answered - answered_right, n)
    );
    println!(
        "   precision of the non-`other` answers: {answered_right}/{answered} = {:.1}%",
        pct(answered_right, answered)
    );
    if in_map > 0 {
        let tail_right = right - in_map_right;
        println!(
            "   covered by the bundled map: {in_map} ({in_map_right} correct, {:.1}%); long tail: {} ({tail_right} correct, {:.1}%)",
            pct(in_map_right, in_map),
            n - in_map,
            pct(tail_right, n - in_map)
        );
    }
    let per: Vec<String> = per_category
        .iter()
        .map(|(c, (r, t))| format!("{c} {r}/{t}"))
        .collect();
    println!("   per category: {}", per.join(", "));
}

fn main() {
    let show_dev_errors = std::env::args().any(|a| a == "--show-dev-errors");
    let dev_only = std::env::args().any(|a| a == "--dev-only");
    let map = parse_domain_map(DOMAINS_TSV).expect("bundled map");
    let known: HashSet<&str> = map.iter().map(|(d, _)| *d).collect();
    let typical = parse_domain_map(TYPICAL).expect("typical list");
    let test = parse_domain_map(TEST).expect("test list");
    let dev = parse_domain_map(DEV).expect("dev list");

    // The test and dev lists must measure the fallback rules only, and must not share a site.
    let test_sites: HashSet<&str> = test.iter().flat_map(|(d, _)| with_parents(d)).collect();
    for (domain, _) in &test {
        assert!(
            !covered(&known, domain),
            "test list: {domain} is in the bundled map"
        );
    }
    for (domain, _) in &dev {
        assert!(
            !covered(&known, domain),
            "dev list: {domain} is in the bundled map"
        );
        assert!(
            !with_parents(domain).any(|d| test_sites.contains(d)),
            "dev list: {domain} is also in the test list"
        );
    }

    println!("Built-in classifier accuracy (no network; rules in src/classify/builtin.rs and hints.rs)");
    if !dev_only {
        report(
            "1. typical browsing (benches/data/typical_domains.tsv)",
            &typical,
            &known,
            false,
        );
        report(
            "2. long tail, test list (benches/data/labelled_domains.tsv)",
            &test,
            &known,
            false,
        );
    }
    report(
        "3. long tail, dev list (benches/data/dev_domains.tsv)",
        &dev,
        &known,
        show_dev_errors,
    );
    let map_right = map.iter().filter(|(d, c)| classify_domain(d) == *c).count();
    println!(
        "\n(domains in the bundled map itself: {map_right}/{} by lookup)",
        map.len()
    );
}
