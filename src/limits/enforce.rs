//! Which limits are used up now, and the websites each covers: what the browser extension turns
//! into its redirect rules (the page it shows instead of a site over its limit).
//!
//! Invariants:
//! - Only limits (`max`) are enforced, never goals; a limit is used up once its measured active
//!   time reaches it (so `0m` means "none at all"), counted as [`list_progress`] counts.
//! - A domain target covers itself and its subdomains (the browser's `requestDomains` match
//!   subdomains too); a category target covers the websites recorded in that category now (a site
//!   never recorded has no category yet, so it opens until it has one).
//! - The answer is bounded: at most [`MAX_DOMAINS`] domains in all, so it fits one native message.

use rusqlite::Connection;

use super::progress::{list_progress, Progress};
use super::{Kind, Target};
use crate::error::Result;
use crate::store::Store;
use crate::time::Timestamp;

/// The most domains an answer names in all (about 40 bytes each with their quotes, well inside
/// the browser's 1 MB message).
pub const MAX_DOMAINS: usize = 10_000;

/// A limit used up, with the websites the browser should hold back.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Reached {
    /// The limit and its progress.
    #[serde(flatten)]
    pub progress: Progress,
    /// The domains it covers (as stored: punycode, no `www.`), sorted.
    pub domains: Vec<String>,
    /// True if more websites are in the category than the answer could name.
    pub truncated: bool,
}

/// True if `p` is a limit whose time is used up.
pub fn used_up(p: &Progress) -> bool {
    p.limit.kind == Kind::Max && p.active_ms >= p.limit_ms
}

/// The limits used up at `now` on `tz`'s calendar, each with the domains it covers.
pub fn reached_in<Tz: chrono::TimeZone>(conn: &Connection, now: Timestamp, tz: &Tz) -> Result<Vec<Reached>> {
    let mut left = MAX_DOMAINS;
    let mut out = Vec::new();
    for progress in list_progress(conn, now, tz)?.into_iter().filter(used_up) {
        let (domains, truncated) = match progress.limit.target() {
            Target::Domain(d) => (vec![d], false),
            Target::Category(c) => {
                let mut stmt = conn.prepare_cached(
                    "SELECT domain FROM website WHERE category = ?1 ORDER BY domain LIMIT ?2",
                )?;
                let domains: Vec<String> = stmt
                    .query_map(rusqlite::params![c.id(), left as i64 + 1], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                let truncated = domains.len() > left;
                (domains.into_iter().take(left).collect(), truncated)
            }
        };
        left -= domains.len().min(left);
        out.push(Reached {
            progress,
            domains,
            truncated,
        });
    }
    Ok(out)
}

impl Store {
    /// The limits used up now (local calendar), each with the domains it covers.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn limits_reached(&self) -> Result<Vec<Reached>> {
        let now = self.now();
        self.with_conn(|c| reached_in(c, now, &chrono::Local))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{Period, Target};
    use crate::store::Store;

    fn visit(store: &Store, url: &str, active_ms: i64) {
        let now = store.now();
        let id = store
            .record_visit(&crate::NewVisit {
                url,
                title: None,
                visited_at: now,
                source: "test",
                source_visit_id: None,
            })
            .unwrap()
            .visit_id
            .unwrap();
        store
            .write(None, |tx| {
                crate::time_spent::set_active_ms_in(tx, id, active_ms, now)
            })
            .unwrap();
    }

    #[test]
    fn a_limit_is_enforced_once_its_time_is_used_up_and_a_goal_never() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("db.sqlite")).unwrap();
        visit(&store, "https://m.video.example/watch", 29 * 60_000);
        let video = Target::Domain("video.example".into());
        store.set_limit(&video, Period::Day, Kind::Max, 30).unwrap();
        store
            .set_limit(&Target::Domain("zero.example".into()), Period::Day, Kind::Max, 0)
            .unwrap();
        store
            .set_limit(&Target::Domain("goal.example".into()), Period::Day, Kind::Min, 1)
            .unwrap();
        visit(&store, "https://goal.example/", 5 * 60_000);
        let names = |r: Vec<Reached>| r.into_iter().map(|r| r.domains).collect::<Vec<_>>();
        // 29 of 30 minutes: not yet; 0m: at once; a goal met: never.
        assert_eq!(
            names(store.limits_reached().unwrap()),
            vec![vec!["zero.example".to_owned()]]
        );
        visit(&store, "https://video.example/again", 60_000);
        assert_eq!(
            names(store.limits_reached().unwrap()),
            vec![vec!["video.example".to_owned()], vec!["zero.example".to_owned()]]
        );
    }
}
