//! The built-in classifier's accuracy. Run: `cargo bench --bench builtin_accuracy`.
//!
//! Three hand-labelled lists (each file's header says how it was made):
//! 1. `typical_domains.tsv`: the distinct websites of one person's history, mostly popular sites
//!    the bundled map covers, plus their local long tail: the figure a user would see;
//! 2. `labelled_domains.tsv`: the test list, long-tail sites none of which is in the map, so it
//!    measures the fallback rules alone; never used to choose rules;
//! 3. `dev_domains.tsv`: the development list the fallback rules are tuned against, disjoint from
//!    the map and the test list. `-- --show-dev-errors` prints each miss on it (and only on it);
//!    `-- --dev-only` prints only its figures, for tuning without looking at the other two;
//! 4. `tests/fixtures/national_sites.tsv`: well-known national sites of 30 countries (issue 28),
//!    whose misses were added to the map, so it shows the map at work, not the rules;
//! 5. `tests/fixtures/national_sites_heldout.tsv`: 716 more national sites of 32 countries, none in
//!    the map or another list and never added to it: what a national site the map does not know
//!    gets. `-- --national` prints only lists 4 and 5, with each miss of list 5.
//!
//! Each list is measured twice in this run: with the rules alone and with the open domain table
//! behind the bundled map (what ships). For the table it also prints how many of a list's domains
//! the table itself lists (its "overlap" with the hand labels) and how often it agrees with them,
//! and the accuracy on the domains it does not list, so the figure cannot hide a lookup of the
//! test list's answers. Per confidence band it prints how often the answer is right, and for the
//! typical list how many websites are certain: the remote calls the worker saves.

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

use std::collections::{BTreeMap, HashSet};

use std::io::Read;

use sitetrail::classify::builtin::{judge, parse_domain_map, Judgement, Rule, RuleOptions, DOMAINS_TSV};
use sitetrail::classify::model::features::{split_of, Split};
use sitetrail::classify::open_table;
use sitetrail::{Category, Confidence};

const TYPICAL: &str = include_str!("data/typical_domains.tsv");
const TEST: &str = include_str!("data/labelled_domains.tsv");
const DEV: &str = include_str!("data/dev_domains.tsv");
const NATIONAL: &str = include_str!("../tests/fixtures/national_sites.tsv");
const HELD_OUT: &str = include_str!("../tests/fixtures/national_sites_heldout.tsv");

/// A list of national sites, `country<TAB>domain<TAB>category` per line, as `(domain, category)`.
fn parse_national(text: &str) -> Vec<(&str, Category)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[1], f[2].trim().parse().unwrap())
        })
        .collect()
}

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

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

/// Classifies every domain of `list` with `opts`, prints the figures and, if `show_errors`, each
/// miss. Returns the number correct.
fn report(
    title: &str,
    list: &[(&str, Category)],
    known: &HashSet<&str>,
    opts: RuleOptions,
    show_errors: bool,
) -> usize {
    let mut right = 0;
    let mut as_other = 0;
    let mut other_right = 0;
    let mut per_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut per_band: BTreeMap<Confidence, (usize, usize)> = BTreeMap::new();
    let (mut in_map, mut in_map_right) = (0, 0);
    let (mut by_table, mut by_table_right) = (0, 0);
    for (domain, expected) in list {
        let j: Judgement = judge(domain, None, opts);
        let got = j.category;
        let entry = per_category.entry(expected.id()).or_default();
        entry.1 += 1;
        let ok = got == *expected;
        let band = per_band.entry(j.confidence).or_default();
        band.1 += 1;
        band.0 += usize::from(ok);
        if covered(known, domain) {
            in_map += 1;
            in_map_right += usize::from(ok);
        }
        if j.rule == Rule::OpenTable {
            by_table += 1;
            by_table_right += usize::from(ok);
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
                "   miss: {domain:<32} labelled {:<18} got {} ({:?}, {})",
                expected.id(),
                got.id(),
                j.rule,
                j.confidence
            );
        }
    }
    let n = list.len();
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
    if opts.open_table {
        println!(
            "   answered by the open table: {by_table} ({by_table_right} correct, {:.1}%); the rest: {} ({} correct, {:.1}%)",
            pct(by_table_right, by_table),
            n - by_table,
            right - by_table_right,
            pct(right - by_table_right, n - by_table)
        );
    }
    let bands: Vec<String> = per_band
        .iter()
        .rev()
        .map(|(b, (r, t))| format!("{b} {r}/{t} = {:.1}%", pct(*r, *t)))
        .collect();
    println!("   right per confidence: {}", bands.join(", "));
    let per: Vec<String> = per_category
        .iter()
        .map(|(c, (r, t))| format!("{c} {r}/{t}"))
        .collect();
    println!("   per category: {}", per.join(", "));
    right
}

/// How much of `list` the open table lists itself (the domain or a parent), and how often its
/// category is the list's label: the part of an accuracy figure that is a lookup of the answer.
fn overlap(title: &str, list: &[(&str, Category)]) {
    let table = open_table::table();
    let (mut exact, mut via_parent, mut agree) = (0, 0, 0);
    for (domain, expected) in list {
        let hit = with_parents(domain).find_map(|d| table.get(d).map(|c| (d == *domain, c)));
        if let Some((is_exact, c)) = hit {
            if is_exact {
                exact += 1;
            } else {
                via_parent += 1;
            }
            agree += usize::from(c == *expected);
        }
    }
    let hits = exact + via_parent;
    println!(
        "   {title}: {hits} of {} in the open table ({exact} exactly, {via_parent} by a parent) = {:.1}%; the table's category is the label for {agree} of them ({:.1}%)",
        list.len(),
        pct(hits, list.len()),
        pct(agree, hits)
    );
}

/// The remote calls the worker saves on `list`: websites whose built-in answer is certain.
fn remote_calls_saved(list: &[(&str, Category)], opts: RuleOptions) {
    let (mut certain, mut right) = (0, 0);
    for (domain, expected) in list {
        let j = judge(domain, None, opts);
        if j.is_certain() {
            certain += 1;
            right += usize::from(j.category == *expected);
        }
    }
    println!(
        "   certain, so no remote call: {certain} of {} websites = {:.1}% of the calls saved; {right} of them right ({:.1}%)",
        list.len(),
        pct(certain, list.len()),
        pct(right, certain)
    );
}

/// The open table's rows of one split (see `model::features::split_of`), as owned pairs.
fn table_split(which: Split) -> Vec<(String, Category)> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(open_table::TABLE_GZ)
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .filter(|(d, _)| split_of(d) == which)
        .map(|(d, c)| (d.to_owned(), c.parse().unwrap()))
        .collect()
}

/// Top-1, top-1 among `high` answers, per-category precision and recall and the worst
/// confusions of `opts` on `list`, one line each.
fn detail(title: &str, list: &[(&str, Category)], opts: RuleOptions) -> (usize, usize, usize) {
    let mut right = 0;
    let (mut high, mut high_right) = (0, 0);
    let mut labelled: BTreeMap<Category, usize> = BTreeMap::new();
    let mut answered: BTreeMap<Category, usize> = BTreeMap::new();
    let mut correct: BTreeMap<Category, usize> = BTreeMap::new();
    let mut confusions: BTreeMap<(Category, Category), usize> = BTreeMap::new();
    let mut per_rule: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (domain, expected) in list {
        let j = judge(domain, None, opts);
        let ok = j.category == *expected;
        right += usize::from(ok);
        *labelled.entry(*expected).or_default() += 1;
        *answered.entry(j.category).or_default() += 1;
        let r = per_rule.entry(j.rule.as_str()).or_default();
        r.1 += 1;
        r.0 += usize::from(ok);
        if ok {
            *correct.entry(*expected).or_default() += 1;
        } else {
            *confusions.entry((*expected, j.category)).or_default() += 1;
        }
        if j.is_certain() {
            high += 1;
            high_right += usize::from(ok);
        }
    }
    let n = list.len();
    println!("\n{title}: {n} domains");
    println!(
        "   top-1: {right}/{n} = {:.1}%; `high` answers: {high} ({:.1}% of all), right {high_right} = {:.1}%",
        pct(right, n),
        pct(high, n),
        pct(high_right, high)
    );
    let per: Vec<String> = labelled
        .iter()
        .map(|(c, t)| {
            let ok = correct.get(c).copied().unwrap_or(0);
            let said = answered.get(c).copied().unwrap_or(0);
            format!("{} P {:.0}% R {:.0}% ({t})", c.id(), pct(ok, said), pct(ok, *t))
        })
        .collect();
    println!(
        "   per category (precision, recall, labelled): {}",
        per.join("; ")
    );
    let mut worst: Vec<_> = confusions.into_iter().collect();
    worst.sort_by_key(|w| std::cmp::Reverse(w.1));
    let worst: Vec<String> = worst
        .iter()
        .take(8)
        .map(|((e, g), k)| format!("{} as {} {k}", e.id(), g.id()))
        .collect();
    println!("   worst confusions (labelled as answered): {}", worst.join(", "));
    let rules: Vec<String> = per_rule
        .iter()
        .map(|(r, (ok, t))| format!("{r} {ok}/{t}"))
        .collect();
    println!("   by rule (right/answered): {}", rules.join(", "));
    (right, high, high_right)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let show_dev_errors = args.iter().any(|a| a == "--show-dev-errors");
    let dev_only = args.iter().any(|a| a == "--dev-only");
    // Tuning reads the validation split; only the final figures read the test split.
    let tune = args.iter().any(|a| a == "--validation");
    let map = parse_domain_map(DOMAINS_TSV).expect("bundled map");
    let known: HashSet<&str> = map.iter().map(|(d, _)| *d).collect();
    let typical = parse_domain_map(TYPICAL).expect("typical list");
    let test = parse_domain_map(TEST).expect("test list");
    let dev = parse_domain_map(DEV).expect("dev list");
    let national = parse_national(NATIONAL);
    let held_out = parse_national(HELD_OUT);
    let national_only = args.iter().any(|a| a == "--national");
    for (domain, _) in &held_out {
        assert!(
            !covered(&known, domain),
            "held-out national list: {domain} is in the bundled map"
        );
    }

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

    println!("Built-in classifier accuracy (no network; src/classify/builtin.rs, hints.rs, model/)");
    let rules_only = RuleOptions {
        open_table: false,
        model: false,
        ..RuleOptions::default()
    };
    let before = RuleOptions::WITHOUT_MODEL;
    let shipped = RuleOptions::default();
    let lists: Vec<(&str, &[(&str, Category)])> = if dev_only {
        vec![("3. long tail, dev list (benches/data/dev_domains.tsv)", &dev)]
    } else if national_only {
        vec![
            ("4. national sites (tests/fixtures/national_sites.tsv)", &national),
            (
                "5. national sites, held out (tests/fixtures/national_sites_heldout.tsv)",
                &held_out,
            ),
        ]
    } else {
        vec![
            ("1. typical browsing (benches/data/typical_domains.tsv)", &typical),
            (
                "2. long tail, test list (benches/data/labelled_domains.tsv)",
                &test,
            ),
            ("3. long tail, dev list (benches/data/dev_domains.tsv)", &dev),
            ("4. national sites (tests/fixtures/national_sites.tsv)", &national),
            (
                "5. national sites, held out (tests/fixtures/national_sites_heldout.tsv)",
                &held_out,
            ),
        ]
    };
    for (title, list) in &lists {
        let show = (show_dev_errors && title.starts_with("3.")) || (national_only && title.starts_with("5."));
        let a = report(&format!("{title}, rules alone"), list, &known, rules_only, false);
        let b = report(
            &format!("{title}, before: rules and the open table"),
            list,
            &known,
            before,
            false,
        );
        let c = report(
            &format!("{title}, after: with the learned model"),
            list,
            &known,
            shipped,
            show,
        );
        println!(
            "   => rules alone {a}, with the open table {b}, with the model {c} correct ({:+.1} points for the model)",
            pct(c, list.len()) - pct(b, list.len())
        );
        detail(&format!("{title}, before"), list, before);
        detail(&format!("{title}, after"), list, shipped);
    }
    println!(
        "\nOverlap of the open table ({} domains) with the hand-labelled lists:",
        open_table::table().len()
    );
    for (title, list) in &lists {
        overlap(title, list);
    }
    if !dev_only && !national_only {
        println!("\nRemote calls saved on the typical-browsing list (certain built-in answers):");
        print!("   rules alone:");
        remote_calls_saved(&typical, rules_only);
        print!("   before, with the open table:");
        remote_calls_saved(&typical, before);
        print!("   after, with the learned model:");
        remote_calls_saved(&typical, shipped);

        // The table's own held-out rows, judged as if no list knew them (the table is not asked):
        // what the built-in classifier does on the long tail the lists miss.
        let which = if tune { Split::Validation } else { Split::Test };
        let rows = table_split(which);
        let rows: Vec<(&str, Category)> = rows.iter().map(|(d, c)| (d.as_str(), *c)).collect();
        let name = if tune { "validation" } else { "held-out test" };
        let unlisted_before = rules_only;
        let unlisted_after = RuleOptions {
            open_table: false,
            model: true,
            ..RuleOptions::default()
        };
        println!(
            "\nThe open table's {name} split ({} rows, never trained on), judged without the table:",
            rows.len()
        );
        let (b, bh, bhr) = detail(
            &format!("{name} split, before: the rules"),
            &rows,
            unlisted_before,
        );
        let (a, ah, ahr) = detail(
            &format!("{name} split, after: the learned model"),
            &rows,
            unlisted_after,
        );
        println!(
            "   => top-1 {:.1}% → {:.1}%; high answers {bh} ({:.1}% right) → {ah} ({:.1}% right)",
            pct(b, rows.len()),
            pct(a, rows.len()),
            pct(bhr, bh),
            pct(ahr, ah)
        );
        if !tune {
            // Calls saved with a remote provider set: the held-out rows are the long tail.
            println!(
                "   remote calls saved on these rows (certain answers): {bh} → {ah} of {} ({:.1}% → {:.1}%)",
                rows.len(),
                pct(bh, rows.len()),
                pct(ah, rows.len())
            );
        }
    }
    let map_right = map
        .iter()
        .filter(|(d, c)| judge(d, None, shipped).category == *c)
        .count();
    println!(
        "\n(domains in the bundled map itself: {map_right}/{} by lookup)",
        map.len()
    );
}
