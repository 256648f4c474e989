//! History page benchmark for the desktop app and `sitetrail history`: how long one page of
//! `list_history` takes at 1,000,000 visits (target: under 50 ms; search: under 20 ms), first page,
//! a deep page, filtered pages, and search through the full-text index against the `LIKE` scan it
//! replaced, on the same file in alternating runs.
//!
//! The database is built fast with plain SQL (`support/history_db.rs`: 20,000 websites, 1,000,000
//! visits over two years, titles from a skewed vocabulary, `weather` in 3% of them and `zanzibar`
//! in one), then indexed by the search index's own backfill (timed: what an upgraded database
//! does once). Each query runs 30 times warm; median and worst are printed.
//!
//! Run: `cargo bench --bench history` (`-- --visits N` for another size).

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

#[path = "support/args.rs"]
mod args;
#[path = "support/history_db.rs"]
mod history_db;

use std::time::{Duration, Instant};

use rusqlite::{named_params, Connection};
use sitetrail::history::{list_history, page_end, CategoryFilter, HistoryQuery, SortOrder};
use sitetrail::ids::VisitId;
use sitetrail::{Category, Store, Timestamp};

const RUNS: usize = 30;

/// The search query before the full-text index (main at 8f4d577): a `LIKE '%text%'` over domain,
/// title and URL, reading visits newest first until it has a page.
const LIKE_SQL: &str = r#"SELECT v.id, v.url, v.title, v.visited_at, v.source,
           w.id AS website_id, w.domain, w.category, w.category_source
    FROM visit v JOIN website w ON w.id = v.website_id
    WHERE v.id >= :low AND v.id < :below
      AND (:category IS NULL OR w.category = :category)
      AND (:search IS NULL
           OR w.domain LIKE :search ESCAPE '\'
           OR v.title LIKE :search ESCAPE '\'
           OR v.url LIKE :search ESCAPE '\')
    ORDER BY v.id DESC"#;

/// A first page of 100 rows the old way.
fn like_page(conn: &Connection, text: &str, category: Option<&str>) -> sitetrail::Result<usize> {
    let mut stmt = conn.prepare_cached(LIKE_SQL)?;
    let rows = stmt.query_map(
        named_params! {
            ":low": VisitId(uuid::Uuid::nil()), ":below": page_end(None, None),
            ":category": category, ":search": format!("%{text}%"),
        },
        |r| r.get::<_, VisitId>("id"),
    )?;
    Ok(rows.take(101).count())
}

struct Times(Vec<Duration>);
impl Times {
    fn median(&mut self) -> f64 {
        self.0.sort();
        self.0[self.0.len() / 2].as_secs_f64() * 1e3
    }
    fn worst(&self) -> f64 {
        self.0.iter().max().copied().unwrap_or_default().as_secs_f64() * 1e3
    }
}

fn timed<T>(f: impl FnOnce() -> sitetrail::Result<T>) -> sitetrail::Result<(T, Duration)> {
    let t = Instant::now();
    let out = f()?;
    Ok((out, t.elapsed()))
}

fn time(store: &Store, name: &str, q: &HistoryQuery) -> sitetrail::Result<()> {
    let conn = store.conn()?;
    let mut times = Times(Vec::with_capacity(RUNS));
    let mut rows = 0;
    for _ in 0..RUNS {
        let (page, took) = timed(|| list_history(&conn, q))?;
        times.0.push(took);
        rows = page.rows.len();
    }
    println!(
        "  {name:<50} rows {rows:>3}  median {:>8.2} ms  worst {:>8.2} ms",
        times.median(),
        times.worst()
    );
    Ok(())
}

/// The index and the old LIKE scan on the same search, alternating run by run.
fn versus(store: &Store, name: &str, text: &str, category: Option<Category>) -> sitetrail::Result<f64> {
    let conn = store.conn()?;
    let q = HistoryQuery {
        search: Some(text.into()),
        category: category.map(CategoryFilter::Is),
        limit: 100,
        ..HistoryQuery::default()
    };
    let (mut fts, mut like) = (Times(Vec::new()), Times(Vec::new()));
    let (mut fts_rows, mut like_rows) = (0, 0);
    for _ in 0..RUNS {
        let (page, took) = timed(|| list_history(&conn, &q))?;
        fts.0.push(took);
        fts_rows = page.rows.len();
        let (n, took) = timed(|| like_page(&conn, text, category.map(Category::id)))?;
        like.0.push(took);
        like_rows = n.min(100);
    }
    let (f, l) = (fts.median(), like.median());
    println!(
        "  {name:<36} index: rows {fts_rows:>3} median {f:>7.2} ms worst {:>7.2} ms | LIKE: rows {like_rows:>3} median {l:>8.2} ms worst {:>8.2} ms | {:>6.1}x faster",
        fts.worst(),
        like.worst(),
        l / f
    );
    Ok(l / f)
}

fn main() -> sitetrail::Result<()> {
    let visits = args::visits();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.db");
    let store = Store::open(&path)?;
    let built = history_db::build(&store, visits)?;
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!(
        "history bench: built {visits} visits over {} websites in {:.1} s; the search index's backfill took {:.1} s ({:.0} visits/s)",
        history_db::WEBSITES,
        built.build.as_secs_f64(),
        built.index.as_secs_f64(),
        visits as f64 / built.index.as_secs_f64()
    );
    store.with_conn(|c| Ok(c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?))?;
    println!("  file {:.0} MiB", size(&path) as f64 / 1048576.0);
    let deep: VisitId = store.with_conn(|c| {
        Ok(c.query_row(
            r#"SELECT id FROM visit ORDER BY id DESC LIMIT 1 OFFSET :n"#,
            named_params! { ":n": (visits as i64) * 9 / 10 },
            |r| r.get("id"),
        )?)
    })?;
    let page = |f: &dyn Fn(&mut HistoryQuery)| {
        let mut q = HistoryQuery {
            limit: 100,
            ..HistoryQuery::default()
        };
        f(&mut q);
        q
    };
    println!("list_history, 100 rows per page, {RUNS} warm runs each:");
    time(&store, "first page", &page(&|_| {}))?;
    time(
        &store,
        "deep page (after 90% of the history)",
        &page(&|q| q.before = Some(deep)),
    )?;
    time(
        &store,
        "category filter (news), first page",
        &page(&|q| q.category = Some(CategoryFilter::Is(Category::News))),
    )?;
    time(
        &store,
        "not classified yet, first page",
        &page(&|q| q.category = Some(CategoryFilter::Uncategorized)),
    )?;
    time(
        &store,
        "last 7 days, first page",
        &page(&|q| q.from = Some(Timestamp::now().minus(Duration::from_secs(7 * 86_400)))),
    )?;

    println!("search, first page of 100, the index against LIKE on the same file ({RUNS} alternating runs):");
    versus(&store, "rare word \"zanzibar\" (1 visit)", "zanzibar", None)?;
    versus(&store, "word in 3% of titles \"weather\"", "weather", None)?;
    versus(&store, "prefix of it \"weath\"", "weath", None)?;
    versus(&store, "domain part \"site12\"", "site12", None)?;
    versus(
        &store,
        "\"weather\" + category news",
        "weather",
        Some(Category::News),
    )?;
    // The vocabulary's most frequent word (in about a fifth of the titles).
    let common = history_db::word(0);
    versus(
        &store,
        &format!("word in ~20% of titles \"{common}\""),
        &common,
        None,
    )?;
    time(
        &store,
        "search \"weather\" deep page (after 90%)",
        &page(&|q| {
            q.search = Some("weather".into());
            q.before = Some(deep);
        }),
    )?;
    time(
        &store,
        "search \"weather\", last 30 days",
        &page(&|q| {
            q.search = Some("weather".into());
            q.from = Some(Timestamp::now().minus(Duration::from_secs(30 * 86_400)));
        }),
    )?;
    println!("best first (--sort rank: bm25 over the newest 10,000 matches at most):");
    for (name, text) in [
        ("\"zanzibar\" (1 match)", "zanzibar".to_owned()),
        (
            "\"weath\" (3%: 30,000 matches at 1M, ranks 10,000)",
            "weath".to_owned(),
        ),
        (
            &format!("\"{common}\" (~20% at 1M: ranks 10,000)") as &str,
            common.clone(),
        ),
        ("\"site12\" (~0.5%)", "site12".to_owned()),
    ] {
        time(
            &store,
            name,
            &page(&|q| {
                q.search = Some(text.clone());
                q.sort = SortOrder::Rank;
            }),
        )?;
    }
    Ok(())
}
