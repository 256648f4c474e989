//! A large synthetic history for the benchmarks, built fast with plain SQL in one transaction
//! (websites, their COMPLETED outbox rows, visits with ids made by `VisitId::at` as
//! `record_visit` makes them), then indexed by the search index's own backfill, as a database
//! upgraded to migration 6 would be.
//!
//! Titles are three words from a 20,000-word vocabulary drawn with a skewed (Zipf-like)
//! distribution, plus two marked words: `weather` in 3% of the titles, `zanzibar` in exactly one.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use rusqlite::{named_params, TransactionBehavior};
use sitetrail::ids::{OutboxId, VisitId, WebsiteId};
use sitetrail::search::{self, BackfillOptions};
use sitetrail::{Category, Store, Timestamp};

pub const WEBSITES: usize = 20_000;
const VOCABULARY: usize = 20_000;

#[path = "rng.rs"]
mod rng;
pub use rng::Rng;

/// A word of the vocabulary: pronounceable, distinct for every k.
pub fn word(k: usize) -> String {
    const C: &[u8] = b"bcdfghklmnprstvz";
    const V: &[u8] = b"aeiou";
    let mut w = String::new();
    let mut n = k + 1;
    while n > 0 {
        w.push(C[n % C.len()] as char);
        n /= C.len();
        w.push(V[n % V.len()] as char);
        n /= V.len();
    }
    w
}

/// What was built.
pub struct Built {
    pub sites: Vec<WebsiteId>,
    /// The domain of each website.
    pub domains: Vec<String>,
    /// Visits to website 0 (the most visited).
    pub top_site_visits: usize,
    pub build: Duration,
    pub index: Duration,
}

/// Builds `visits` visits over two years ending now, then the search index.
pub fn build(store: &Store, visits: usize) -> sitetrail::Result<Built> {
    build_over(store, visits, Duration::from_secs(2 * 365 * 86_400), false)
}

/// Builds `visits` visits spread evenly over `span` ending now (the last one now), then the
/// search index. With `times`, four visits in five have a time spent (up to 5 minutes, measured
/// or estimated as the extension and a Chromium import give them), as a person's history has.
pub fn build_over(store: &Store, visits: usize, span: Duration, times: bool) -> sitetrail::Result<Built> {
    let t = Instant::now();
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let now = Timestamp::now();
    let start = now.minus(span);
    let mut conn = store.conn()?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut sites = Vec::with_capacity(WEBSITES);
    let mut domains = Vec::with_capacity(WEBSITES);
    let mut top_site_visits = 0;
    let vocab: Vec<String> = (0..VOCABULARY).map(word).collect();
    {
        let mut site = tx.prepare(
            r#"INSERT INTO website (id, domain, category, category_source, classified_at, created_at, version)
               VALUES (:id, :domain, :category, :source, :at, :at, 1)"#,
        )?;
        let mut job = tx.prepare(
            r#"INSERT INTO website_category_classification_outbox
                   (id, website_id, status, attempt_count, attempted_at, created_at, version)
               VALUES (:id, :w, 'COMPLETED', 1, :at, :at, 2)"#,
        )?;
        for i in 0..WEBSITES {
            let id = WebsiteId::new();
            // One website in twenty is not classified yet.
            let category = (i % 20 != 0).then(|| Category::ALL[rng.below(Category::ALL.len())].id());
            let domain = format!("site{i}.example{}", i % 7);
            site.execute(named_params! {
                ":id": id, ":domain": domain, ":category": category,
                ":source": category.map(|_| "ai"), ":at": start,
            })?;
            job.execute(named_params! { ":id": OutboxId::new(), ":w": id, ":at": start })?;
            sites.push(id);
            domains.push(domain);
        }
        let mut visit = tx.prepare(
            r#"INSERT INTO visit (id, website_id, url, title, visited_at, source)
               VALUES (:id, :w, :url, :title, :at, 'bench')"#,
        )?;
        let mut time = tx.prepare(
            r#"INSERT INTO visit_time (visit_id, active_ms, estimated_ms, updated_at)
               VALUES (:id, :active, :estimated, :at)"#,
        )?;
        let step = span.as_micros() as i64 / visits as i64;
        for i in 0..visits {
            // Popular websites get most visits: a skewed pick.
            let spread = 1 + rng.below(WEBSITES);
            let w = rng.below(spread);
            top_site_visits += usize::from(w == 0);
            let at = Timestamp(start.as_micros() + i as i64 * step + (rng.below(1000) as i64));
            let mut title = String::new();
            for _ in 0..3 {
                // Zipf-like: rank ~ VOCABULARY^u.
                let k = ((VOCABULARY as f64).powf(rng.unit()) as usize).saturating_sub(1);
                title.push_str(&vocab[k.min(VOCABULARY - 1)]);
                title.push(' ');
            }
            if i % 33 == 0 {
                title.push_str("weather ");
            }
            if i == visits / 3 {
                title.push_str("zanzibar ");
            }
            title.push_str(&format!("- Site {w}"));
            let id = VisitId::at(at);
            visit.execute(named_params! {
                ":id": id, ":w": sites[w],
                ":url": format!("https://site{w}.example{}/page/{i}", w % 7),
                ":title": title, ":at": at,
            })?;
            if times && i % 5 != 0 {
                let ms = 1_000 + rng.below(300_000) as i64;
                let (active, estimated) = if i % 2 == 0 {
                    (Some(ms), None)
                } else {
                    (None, Some(ms))
                };
                time.execute(
                    named_params! { ":id": id, ":active": active, ":estimated": estimated, ":at": at },
                )?;
            }
        }
        // Stored without the index, as before migration 6: the backfill builds it.
        tx.execute(
            r#"UPDATE search_state SET below = X'ffffffffffffffffffffffffffffffff', total = :n, done = 0"#,
            named_params! { ":n": visits as i64 },
        )?;
    }
    tx.commit()?;
    drop(conn);
    let build = t.elapsed();
    let t = Instant::now();
    search::backfill(store, &BackfillOptions::default(), &mut |_| {})?;
    Ok(Built {
        sites,
        domains,
        top_site_visits,
        build,
        index: t.elapsed(),
    })
}
