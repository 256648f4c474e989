//! History page benchmark for the desktop app: how long one page of `list_history` takes at
//! 1,000,000 visits (target: under 50 ms), first page, a deep page, and filtered pages.
//!
//! The database is built fast with plain SQL in one transaction (20,000 websites, 1,000,000 visits
//! over two years, ids made by `VisitId::at` as `record_visit` makes them, every website with its
//! outbox row), then each query runs 30 times warm and the median and worst are printed.
//!
//! Run: `cargo bench --bench history` (`-- --visits N` for another size).

use std::time::{Duration, Instant};

use rusqlite::{named_params, TransactionBehavior};
use sitetrail::history::{list_history, CategoryFilter, HistoryQuery};
use sitetrail::ids::{OutboxId, VisitId, WebsiteId};
use sitetrail::{Category, Store, Timestamp};

const WEBSITES: usize = 20_000;
const RUNS: usize = 30;

/// A cheap deterministic pseudo-random sequence (xorshift), so every run builds the same data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn build(store: &Store, visits: usize) -> sitetrail::Result<Vec<WebsiteId>> {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let now = Timestamp::now();
    let span = Duration::from_secs(2 * 365 * 86_400);
    let start = now.minus(span);
    let mut conn = store.conn()?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut sites = Vec::with_capacity(WEBSITES);
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
            site.execute(named_params! {
                ":id": id, ":domain": format!("site{i}.example{}", i % 7), ":category": category,
                ":source": category.map(|_| "ai"), ":at": start,
            })?;
            job.execute(named_params! { ":id": OutboxId::new(), ":w": id, ":at": start })?;
            sites.push(id);
        }
        let mut visit = tx.prepare(
            r#"INSERT INTO visit (id, website_id, url, title, visited_at, source)
               VALUES (:id, :w, :url, :title, :at, 'bench')"#,
        )?;
        let step = span.as_micros() as i64 / visits as i64;
        for i in 0..visits {
            // Popular websites get most visits: a skewed pick.
            let spread = 1 + rng.below(WEBSITES);
            let w = rng.below(spread);
            let at = Timestamp(start.as_micros() + i as i64 * step + (rng.below(1000) as i64));
            visit.execute(named_params! {
                ":id": VisitId::at(at), ":w": sites[w],
                ":url": format!("https://site{w}.example/page/{i}"),
                ":title": format!("Page {i} of site {w}"), ":at": at,
            })?;
        }
    }
    tx.commit()?;
    Ok(sites)
}

fn time(store: &Store, name: &str, q: &HistoryQuery) -> sitetrail::Result<()> {
    let conn = store.conn()?;
    let mut times = Vec::with_capacity(RUNS);
    let mut rows = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let page = list_history(&conn, q)?;
        times.push(t.elapsed());
        rows = page.rows.len();
    }
    times.sort();
    println!(
        "  {name:<46} rows {rows:>3}  median {:>8.2} ms  worst {:>8.2} ms",
        times[RUNS / 2].as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() -> sitetrail::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let visits = args
        .iter()
        .position(|a| a == "--visits")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path().join("bench.db"))?;
    let t = Instant::now();
    build(&store, visits)?;
    println!(
        "history bench: built {visits} visits over {WEBSITES} websites in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let deep: VisitId = store.with_conn(|c| {
        Ok(c.query_row(
            r#"SELECT id FROM visit ORDER BY id DESC LIMIT 1 OFFSET :n"#,
            named_params! { ":n": (visits as i64) * 9 / 10 },
            |r| r.get("id"),
        )?)
    })?;
    let page = |f: fn(&mut HistoryQuery)| {
        let mut q = HistoryQuery {
            limit: 100,
            ..HistoryQuery::default()
        };
        f(&mut q);
        q
    };
    println!("list_history, 100 rows per page, {RUNS} warm runs each:");
    time(&store, "first page", &page(|_| {}))?;
    let mut q = page(|_| {});
    q.before = Some(deep);
    time(&store, "deep page (after 90% of the history)", &q)?;
    time(
        &store,
        "category filter (news), first page",
        &page(|q| q.category = Some(CategoryFilter::Is(Category::News))),
    )?;
    time(
        &store,
        "not classified yet, first page",
        &page(|q| q.category = Some(CategoryFilter::Uncategorized)),
    )?;
    time(
        &store,
        "last 7 days, first page",
        &page(|q| q.from = Some(Timestamp::now().minus(Duration::from_secs(7 * 86_400)))),
    )?;
    time(
        &store,
        "search \"site12.\" (common), first page",
        &page(|q| q.search = Some("site12.".into())),
    )?;
    time(
        &store,
        "search \"page 777777 \" (one match: full scan)",
        &page(|q| q.search = Some("page 777777 ".into())),
    )?;
    Ok(())
}
