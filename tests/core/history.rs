//! History pages (keyset pagination, search, filters) and the overview summaries.

use std::time::Duration;

use sitetrail::history::{CategoryFilter, HistoryQuery};
use sitetrail::{Category, NewVisit, Store, Timestamp};

use crate::support::TempDb;

const DAY: Duration = Duration::from_secs(86_400);

fn t0() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-01T12:00:00Z").unwrap()
}

/// 60 visits, one an hour from t0, over three sites; titles say which.
fn seeded() -> (TempDb, Store) {
    let db = TempDb::new();
    let store = db.open();
    let sites = ["news.example", "shop.example", "mail.example"];
    // Recorded out of order on purpose: pages must come out by visit time regardless.
    for i in (0..60).rev() {
        let site = sites[i % 3];
        store
            .record_visit(&NewVisit {
                url: &format!("https://{site}/page/{i}"),
                title: Some(&format!("Page {i} on {site} 100%")),
                visited_at: t0().plus(Duration::from_secs(3600 * i as u64)),
                source: "test",
                source_visit_id: None,
            })
            .unwrap();
    }
    store.set_user_category("news.example", Category::News).unwrap();
    store
        .set_user_category("shop.example", Category::Shopping)
        .unwrap();
    (db, store)
}

fn query(limit: usize) -> HistoryQuery {
    HistoryQuery {
        limit,
        ..HistoryQuery::default()
    }
}

#[test]
fn pages_walk_all_visits_newest_first_without_gaps_or_repeats() {
    let (_db, store) = seeded();
    let mut q = query(7);
    let mut times = Vec::new();
    loop {
        let page = store.history(&q).unwrap();
        assert!(page.rows.len() <= 7);
        times.extend(page.rows.iter().map(|r| r.visited_at));
        match page.next_cursor {
            Some(c) => q.before = Some(c),
            None => break,
        }
    }
    assert_eq!(times.len(), 60);
    assert!(times.windows(2).all(|w| w[0] > w[1]), "not strictly newest first");
    assert_eq!(times[0], t0().plus(Duration::from_secs(3600 * 59)));
}

#[test]
fn search_matches_domain_title_and_url_words_and_punctuation_separates_them() {
    let (_db, store) = seeded();
    let page = store
        .history(&HistoryQuery {
            search: Some("SHOP.example".into()),
            ..query(100)
        })
        .unwrap();
    assert_eq!(page.rows.len(), 20);
    assert!(page.rows.iter().all(|r| r.domain == "shop.example"));
    let page = store
        .history(&HistoryQuery {
            search: Some("Page 42 ".into()),
            ..query(100)
        })
        .unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.rows[0].url, "https://news.example/page/42");
    // `%` is punctuation: it separates words and is no wildcard.
    let all = store
        .history(&HistoryQuery {
            search: Some("100%".into()),
            ..query(100)
        })
        .unwrap();
    assert_eq!(all.rows.len(), 60);
    let none = store
        .history(&HistoryQuery {
            search: Some("1%0".into()),
            ..query(100)
        })
        .unwrap();
    assert_eq!(none.rows.len(), 0);
}

#[test]
fn category_and_date_filters() {
    let (_db, store) = seeded();
    let news = store
        .history(&HistoryQuery {
            category: Some(CategoryFilter::Is(Category::News)),
            ..query(100)
        })
        .unwrap();
    assert_eq!(news.rows.len(), 20);
    assert!(news
        .rows
        .iter()
        .all(|r| r.category.map(sitetrail::Category::id) == Some("news")
            && r.category_source.map(sitetrail::CategorySource::as_str) == Some("user")));
    let unclassified = store
        .history(&HistoryQuery {
            category: Some(CategoryFilter::Uncategorized),
            ..query(100)
        })
        .unwrap();
    assert!(unclassified.rows.iter().all(|r| r.domain == "mail.example"));
    assert_eq!(unclassified.rows.len(), 20);
    // Hours 24..=47: the second day.
    let day2 = store
        .history(&HistoryQuery {
            from: Some(t0().plus(DAY)),
            to: Some(t0().plus(DAY * 2).minus(Duration::from_secs(1))),
            ..query(100)
        })
        .unwrap();
    assert_eq!(day2.rows.len(), 24);
    let bad = store.history(&HistoryQuery {
        from: Some(t0().plus(DAY)),
        to: Some(t0()),
        ..query(10)
    });
    assert!(bad.is_err());
    assert!(store.history(&query(0)).is_err());
    assert!(store.history(&query(10_000)).is_err());
}

#[test]
fn summaries_count_visits_per_category_and_top_sites_in_a_window() {
    let (_db, store) = seeded();
    // The last 24 hours of the data: hours 36..=59, 8 visits per site.
    let since = t0().plus(Duration::from_secs(3600 * 36));
    let counts = store.category_counts(since).unwrap();
    let get = |c: Option<&str>| {
        counts
            .iter()
            .find(|x| x.category.map(sitetrail::Category::id) == c)
            .map(|x| (x.visits, x.websites))
    };
    assert_eq!(get(Some("news")), Some((8, 1)));
    assert_eq!(get(Some("shopping")), Some((8, 1)));
    assert_eq!(get(None), Some((8, 1)));
    let top = store.top_websites(t0(), 2).unwrap();
    assert_eq!(top.len(), 2);
    assert_eq!(top[0].visits, 20);
    assert_eq!(store.visit_count().unwrap(), 60);
}

#[test]
fn the_history_page_reads_the_primary_key_in_order_without_sorting() {
    let (_db, store) = seeded();
    let plan: Vec<String> = store
        .with_conn(|c| {
            let mut s = c.prepare(&format!("EXPLAIN QUERY PLAN {}", sitetrail::history::HISTORY_SQL))?;
            // All NULL: the first page, unfiltered (the case that must never sort 1,000,000 rows).
            let nulls = vec![rusqlite::types::Null; s.parameter_count()];
            let rows = s.query_map(rusqlite::params_from_iter(nulls), |r| {
                r.get::<_, String>("detail")
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap();
    let plan = plan.join(" | ");
    assert!(plan.contains("SEARCH v USING PRIMARY KEY"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "{plan}");
}

/// A page deep in the history must start its index search at the cursor: it may not step over
/// the newer visits (that made a page after 90% of 1,000,000 visits take 115 ms instead of 0.2).
#[test]
fn a_deep_page_starts_at_its_cursor_instead_of_stepping_over_newer_visits() {
    use rusqlite::named_params;
    use sitetrail::history::{page_end, HISTORY_SQL};
    use sitetrail::ids::VisitId;

    let db = TempDb::new();
    let store = db.open();
    let now = store.now();
    store
        .write(None, |tx| {
            for i in 0..3_000u64 {
                sitetrail::visits::record_visit_in(
                    tx,
                    &NewVisit {
                        url: &format!("https://site{}.example/{i}", i % 50),
                        title: None,
                        visited_at: t0().plus(Duration::from_secs(60 * i)),
                        source: "test",
                        source_visit_id: None,
                    },
                    now,
                )?;
            }
            Ok(())
        })
        .unwrap();
    // The cursor of the oldest 20 visits: 2,980 newer visits lie before it in id order.
    let cursor: VisitId = store
        .with_conn(|c| {
            Ok(
                c.query_row(r#"SELECT id FROM visit ORDER BY id LIMIT 1 OFFSET 20"#, [], |r| {
                    r.get("id")
                })?,
            )
        })
        .unwrap();
    let steps = store
        .with_conn(|c| {
            let mut s = c.prepare(HISTORY_SQL)?;
            let low = VisitId(uuid::Uuid::nil());
            let below = page_end(None, Some(cursor));
            let null: Option<String> = None;
            let mut rows = s.query(named_params! {
                ":low": low, ":below": below, ":category": null, ":uncategorized": false,
            })?;
            let mut n = 0;
            while rows.next()?.is_some() {
                n += 1;
            }
            assert_eq!(n, 20, "the 20 visits older than the cursor");
            drop(rows);
            Ok(s.get_status(rusqlite::StatementStatus::VmStep))
        })
        .unwrap();
    // Reading 20 rows costs a few hundred VM steps; stepping over 2,980 rows would cost tens of
    // thousands.
    assert!(
        steps < 2_000,
        "the page stepped {steps} times: it scanned past the cursor"
    );
}
