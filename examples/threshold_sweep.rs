//! How often the learned model alone is right at and above each probability, on the table's
//! validation split (what its `high` threshold is chosen on) and on the benches' hand-labelled
//! lists (the typical-browsing list, and the long-tail dev and test lists): for choosing the
//! `high` threshold by measurement (docs/BENCHMARKS.md). The model reads each name alone (no
//! list answers first), so well-known sites of the typical list count too.
//!
//! Run: `cargo run --release --example threshold_sweep`.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use sitetrail::classify::builtin::parse_domain_map;
use sitetrail::classify::model::features::{split_of, Split};
use sitetrail::classify::model::{self, Model};
use sitetrail::classify::open_table;
use sitetrail::Category;

const THRESHOLDS: [f32; 10] = [0.5, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99];

fn list(text: &str) -> Vec<(String, Category)> {
    parse_domain_map(text)
        .unwrap()
        .into_iter()
        .map(|(d, c)| (d.to_owned(), c))
        .collect()
}

fn sweep(m: &Model, name: &str, labelled: &[(String, Category)]) {
    let scored: Vec<(f32, bool)> = labelled
        .iter()
        .map(|(d, c)| {
            let p = m.predict(d, None);
            (p.probability, p.category == *c)
        })
        .collect();
    let mut line = format!("{name:>10} ({:>5} domains):", scored.len());
    for t in THRESHOLDS {
        let above: Vec<bool> = scored
            .iter()
            .filter(|(p, _)| *p >= t)
            .map(|(_, ok)| *ok)
            .collect();
        let right = above.iter().filter(|ok| **ok).count();
        line.push_str(&format!(
            "  ≥{t}: {right}/{} = {:.1} %",
            above.len(),
            100.0 * right as f64 / above.len().max(1) as f64
        ));
    }
    println!("{line}");
}

fn main() {
    let m = model::model().unwrap();
    println!(
        "shipped thresholds: high {:.4}, medium {:.4}; right / answers at or above each probability:",
        m.weights().high,
        m.weights().medium
    );
    let validation: Vec<(String, Category)> = open_table::table()
        .iter()
        .filter(|(d, _)| split_of(d) == Split::Validation)
        .map(|(d, c)| (d.to_owned(), c))
        .collect();
    sweep(m, "validation", &validation);
    sweep(
        m,
        "typical",
        &list(include_str!("../benches/data/typical_domains.tsv")),
    );
    sweep(m, "dev", &list(include_str!("../benches/data/dev_domains.tsv")));
    sweep(
        m,
        "test",
        &list(include_str!("../benches/data/labelled_domains.tsv")),
    );
}
