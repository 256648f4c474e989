//! What the hub is doing, for Prometheus: `GET /metrics` on its own listener
//! (`--metrics-listen`, off by default), in the text exposition format (version 0.0.4).
//!
//! Written by hand rather than with a metrics crate: a dozen series of atomics and one map behind
//! a mutex, rendered in one function, need no registry, no new dependency and no global
//! recorder. The counters are process-wide (one hub process, one set); the figures of the
//! database (accounts, records, bytes stored) are read at each scrape from the accounts'
//! counters, so every process reports the same totals.
//!
//! Invariant: labels are route patterns, methods, statuses and quota names: never an id, a
//! path as sent, a header or anything else a client chose, so the series stay few and say
//! nothing of a user.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use sitetrail_sync_wire::Quota;

use crate::sql::{Pool, Queries};

/// The upper bounds of the request-duration histogram's buckets, in seconds (long-polls end in
/// the last ones).
const BUCKETS: [f64; 13] = [
    0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One route's request durations.
#[derive(Default)]
struct Histogram {
    /// Requests at or under each bucket's bound (not cumulative here; summed when rendered).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum_seconds: f64,
}

/// The process's counters.
#[derive(Default)]
pub struct Metrics {
    /// Requests by (route, method, status).
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    /// Durations by route.
    durations: Mutex<BTreeMap<String, Histogram>>,
    pushed_bytes: AtomicU64,
    pushed_records: AtomicU64,
    pulled_bytes: AtomicU64,
    pulled_records: AtomicU64,
    waits_open: AtomicI64,
    index_reads: AtomicU64,
    wait_wakeups: AtomicU64,
    postgres_unavailable: AtomicU64,
    postgres_errors: AtomicU64,
    quota_refusals: Mutex<BTreeMap<&'static str, u64>>,
    waits_refused: Mutex<BTreeMap<&'static str, u64>>,
}

/// The hub's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::default);

impl Metrics {
    /// A request answered.
    pub fn request(&self, route: &str, method: &str, status: u16, took: Duration) {
        *self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((route.to_owned(), method.to_owned(), status))
            .or_default() += 1;
        let seconds = took.as_secs_f64();
        let mut durations = self.durations.lock().unwrap_or_else(PoisonError::into_inner);
        let h = durations.entry(route.to_owned()).or_default();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            h.buckets[i] += 1;
        }
        h.count += 1;
        h.sum_seconds += seconds;
    }

    /// Records stored by a push.
    pub fn pushed(&self, records: u64, bytes: u64) {
        self.pushed_records.fetch_add(records, Ordering::Relaxed);
        self.pushed_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Records sent in a page.
    pub fn pulled(&self, records: u64, bytes: u64) {
        self.pulled_records.fetch_add(records, Ordering::Relaxed);
        self.pulled_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The account index was read from the database (by `GET /v1/index` or a long-poll).
    pub fn index_read(&self) {
        self.index_reads.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` long-polls were woken by a change of their account's index (the notifications' listener).
    pub fn waits_woken(&self, n: u64) {
        if n > 0 {
            self.wait_wakeups.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A long-poll starts waiting; it stops when the guard is dropped.
    pub fn wait_open(&'static self) -> WaitGuard {
        self.waits_open.fetch_add(1, Ordering::Relaxed);
        WaitGuard(self)
    }

    /// A database call failed: `unavailable` (PostgreSQL away, answered 503) or not.
    pub fn postgres_error(&self, unavailable: bool) {
        if unavailable {
            self.postgres_unavailable.fetch_add(1, Ordering::Relaxed);
        } else {
            self.postgres_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A wait answered at once, past the cap named `cap` (`account`, `address`, `total`).
    pub fn wait_refused(&self, cap: &'static str) {
        *self
            .waits_refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(cap)
            .or_default() += 1;
    }

    /// A write refused at a quota.
    pub fn quota_refused(&self, quota: Quota) {
        *self
            .quota_refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(crate::quota_words::name(quota))
            .or_default() += 1;
    }

    /// The text exposition, with the pool's state and the database's totals given.
    pub fn render(&self, pool: &deadpool_postgres::Status, stored: Option<Stored>) -> String {
        let requests = self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let durations: Vec<(String, [u64; BUCKETS.len()], u64, f64)> = self
            .durations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(r, h)| (r.clone(), h.buckets, h.count, h.sum_seconds))
            .collect();
        let waits_refused = self
            .waits_refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let refusals = self
            .quota_refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed).to_string();

        let mut out = String::with_capacity(4096);
        header(
            &mut out,
            "sitetrail_hub_requests_total",
            "counter",
            "Requests answered, by route pattern, method and status.",
        );
        for ((route, method, status), n) in &requests {
            sample(
                &mut out,
                "sitetrail_hub_requests_total",
                &format!("route=\"{route}\",method=\"{method}\",status=\"{status}\""),
                &n.to_string(),
            );
        }
        header(
            &mut out,
            "sitetrail_hub_request_duration_seconds",
            "histogram",
            "Time to answer a request, by route pattern (a long-poll's includes its wait).",
        );
        for (route, buckets, count, sum) in &durations {
            let mut cumulative = 0;
            for (bound, n) in BUCKETS.iter().zip(buckets) {
                cumulative += n;
                sample(
                    &mut out,
                    "sitetrail_hub_request_duration_seconds_bucket",
                    &format!("route=\"{route}\",le=\"{bound}\""),
                    &cumulative.to_string(),
                );
            }
            let labels = format!("route=\"{route}\"");
            sample(
                &mut out,
                "sitetrail_hub_request_duration_seconds_bucket",
                &format!("{labels},le=\"+Inf\""),
                &count.to_string(),
            );
            sample(
                &mut out,
                "sitetrail_hub_request_duration_seconds_sum",
                &labels,
                &sum.to_string(),
            );
            sample(
                &mut out,
                "sitetrail_hub_request_duration_seconds_count",
                &labels,
                &count.to_string(),
            );
        }
        let in_use = pool.size.saturating_sub(pool.available);
        for (name, kind, help, value) in [
            (
                "sitetrail_hub_pushed_bytes_total",
                "counter",
                "Payload bytes stored by pushes.",
                load(&self.pushed_bytes),
            ),
            (
                "sitetrail_hub_pushed_records_total",
                "counter",
                "Records stored by pushes.",
                load(&self.pushed_records),
            ),
            (
                "sitetrail_hub_pulled_bytes_total",
                "counter",
                "Payload bytes sent in pages.",
                load(&self.pulled_bytes),
            ),
            (
                "sitetrail_hub_pulled_records_total",
                "counter",
                "Records sent in pages.",
                load(&self.pulled_records),
            ),
            (
                "sitetrail_hub_index_reads_total",
                "counter",
                "Reads of an account's index from the database (the waits of one account share one; a push's NOTIFY carries the heads that moved, so a woken wait reads none).",
                load(&self.index_reads),
            ),
            (
                "sitetrail_hub_wait_wakeups_total",
                "counter",
                "Long-polls woken by a change of their account's index: only those the change puts behind (all of an account's on a look-again).",
                load(&self.wait_wakeups),
            ),
            (
                "sitetrail_hub_waits_open",
                "gauge",
                "Long-polls waiting in this process.",
                self.waits_open.load(Ordering::Relaxed).max(0).to_string(),
            ),
            (
                "sitetrail_hub_pool_connections_in_use",
                "gauge",
                "PostgreSQL connections of the pool lent to requests.",
                in_use.to_string(),
            ),
            (
                "sitetrail_hub_pool_connections_open",
                "gauge",
                "PostgreSQL connections the pool holds.",
                pool.size.to_string(),
            ),
            (
                "sitetrail_hub_pool_connections_max",
                "gauge",
                "The pool's size (--pool-size).",
                pool.max_size.to_string(),
            ),
            (
                "sitetrail_hub_pool_waiting",
                "gauge",
                "Requests waiting for a PostgreSQL connection.",
                pool.waiting.to_string(),
            ),
        ] {
            header(&mut out, name, kind, help);
            sample(&mut out, name, "", &value);
        }
        header(
            &mut out,
            "sitetrail_hub_postgres_errors_total",
            "counter",
            "Database calls that failed: unavailable (answered 503) or error (answered 500).",
        );
        sample(
            &mut out,
            "sitetrail_hub_postgres_errors_total",
            "kind=\"unavailable\"",
            &load(&self.postgres_unavailable),
        );
        sample(
            &mut out,
            "sitetrail_hub_postgres_errors_total",
            "kind=\"error\"",
            &load(&self.postgres_errors),
        );
        header(
            &mut out,
            "sitetrail_hub_quota_refusals_total",
            "counter",
            "Writes refused at an account's quota, by quota.",
        );
        for quota in ["bytes", "records", "devices", "claim_jobs", "leases"] {
            let n = refusals.get(quota).copied().unwrap_or(0);
            sample(
                &mut out,
                "sitetrail_hub_quota_refusals_total",
                &format!("quota=\"{quota}\""),
                &n.to_string(),
            );
        }
        header(
            &mut out,
            "sitetrail_hub_waits_refused_total",
            "counter",
            "Long-polls answered at once past a cap (--max-waits-per-account, --max-waits-per-address, --max-waits).",
        );
        for cap in ["account", "address", "total"] {
            let n = waits_refused.get(cap).copied().unwrap_or(0);
            sample(
                &mut out,
                "sitetrail_hub_waits_refused_total",
                &format!("cap=\"{cap}\""),
                &n.to_string(),
            );
        }
        if let Some(s) = stored {
            for (name, help, value) in [
                ("sitetrail_hub_accounts", "Accounts in the database.", s.accounts),
                (
                    "sitetrail_hub_records_stored",
                    "Records in the database, over every account.",
                    s.records,
                ),
                (
                    "sitetrail_hub_bytes_stored",
                    "Payload bytes in the database, over every account.",
                    s.bytes,
                ),
            ] {
                header(&mut out, name, "gauge", help);
                sample(&mut out, name, "", &value.to_string());
            }
        }
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &str, value: &str) {
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {value}");
    } else {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

/// A long-poll that is waiting; counted until dropped.
pub struct WaitGuard(&'static Metrics);

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.0.waits_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The database's totals, read at a scrape.
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    /// Accounts.
    pub accounts: i64,
    /// Records over every account.
    pub records: i64,
    /// Payload bytes over every account.
    pub bytes: i64,
}

async fn read_stored(pool: &Pool) -> Option<Stored> {
    let client = pool.get().await.ok()?;
    let row = client
        .query_one(
            r#"SELECT count(*)::int8 AS accounts, coalesce(sum(records_stored), 0)::int8 AS records,
                      coalesce(sum(bytes_stored), 0)::int8 AS bytes
               FROM account"#,
            &[],
        )
        .await
        .ok()?;
    Some(Stored {
        accounts: row.get("accounts"),
        records: row.get("records"),
        bytes: row.get("bytes"),
    })
}

/// `GET /metrics`. The database's totals are left out while PostgreSQL does not answer; the
/// process's own figures are always there.
async fn metrics(State(pool): State<Pool>) -> impl IntoResponse {
    let stored = read_stored(&pool).await;
    let body = METRICS.render(&pool.status(), stored);
    ([(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body)
}

/// The metrics listener's router: `GET /metrics` only, reading the stored totals through `pool`.
pub fn router(pool: Pool) -> Router {
    Router::new().route("/metrics", get(metrics)).with_state(pool)
}
