//! What the browser holds back now: which limits are used up (and the focus session running), and the websites each covers: what
//! the browser extension turns into its redirect rules (the page it shows in their place).
//!
//! Invariants:
//! - Only limits (`max`) are enforced, never goals; a limit is used up once its measured active
//!   time reaches it (so `0m` means "none at all"), counted as [`list_progress`] counts.
//! - A domain target covers itself and its subdomains (the browser's `requestDomains` match
//!   subdomains too); a category target covers the websites recorded in that category now (a site
//!   never recorded has no category yet, so it opens until it has one).
//! - The answer is bounded: at most [`MAX_DOMAINS`] domains in all, so it fits one native message.
//! - A focus session (`crate::focus`) running holds back its categories and websites the same way,
//!   until it ends.

use rusqlite::Connection;

use crate::error::Result;
use crate::limits::progress::{list_progress, Progress};
use crate::limits::{Kind, Target};
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

/// The focus session running, with the websites it holds back.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FocusHold {
    /// When it ends on its own (RFC 3339).
    pub ends_at: String,
    /// The same in milliseconds since the epoch (for the browser's timers).
    pub ends_at_ms: i64,
    /// The names of what it holds back, as people read them.
    pub target_names: Vec<String>,
    /// The domains it covers, sorted.
    pub domains: Vec<String>,
    /// True if more websites are in its categories than the answer could name.
    pub truncated: bool,
}

/// What the browser holds back now: the limits used up and the focus session.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Holds {
    /// The limits used up.
    pub limits: Vec<Reached>,
    /// The focus session running, if any.
    pub focus: Option<FocusHold>,
}

/// The domains `target` covers, at most `left` of them; true if there were more.
fn domains_of(conn: &Connection, target: Target, left: usize) -> Result<(Vec<String>, bool)> {
    Ok(match target {
        Target::Domain(d) if left > 0 => (vec![d], false),
        Target::Domain(_) => (Vec::new(), true),
        Target::Category(c) => {
            let mut stmt = conn
                .prepare_cached("SELECT domain FROM website WHERE category = ?1 ORDER BY domain LIMIT ?2")?;
            let domains: Vec<String> = stmt
                .query_map(rusqlite::params![c.id(), left as i64 + 1], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let truncated = domains.len() > left;
            (domains.into_iter().take(left).collect(), truncated)
        }
    })
}

/// The focus session running at `now` and the limits used up on `tz`'s calendar, each with the
/// domains it covers ([`MAX_DOMAINS`] in all, the session's first).
pub fn holds_in<Tz: chrono::TimeZone>(conn: &Connection, now: Timestamp, tz: &Tz) -> Result<Holds> {
    let mut left = MAX_DOMAINS;
    let focus = match crate::focus::get_in(conn)?.filter(|f| f.active(now)) {
        None => None,
        Some(f) => {
            let mut domains = Vec::new();
            let mut truncated = false;
            for t in &f.blocks {
                let (d, more) = domains_of(conn, t.clone(), left)?;
                left -= d.len();
                truncated |= more;
                domains.extend(d);
            }
            domains.sort();
            domains.dedup();
            Some(FocusHold {
                ends_at: f.ends_at.to_rfc3339(),
                ends_at_ms: f.ends_at.0 / 1000,
                target_names: f.blocks.iter().map(Target::name).collect(),
                domains,
                truncated,
            })
        }
    };
    let mut limits = Vec::new();
    for progress in list_progress(conn, now, tz)?.into_iter().filter(used_up) {
        let (domains, truncated) = domains_of(conn, progress.limit.target(), left)?;
        left -= domains.len();
        limits.push(Reached {
            progress,
            domains,
            truncated,
        });
    }
    Ok(Holds { limits, focus })
}

impl Store {
    /// What the browser holds back now (local calendar): the focus session and the limits used
    /// up, each with the domains it covers.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn holds(&self) -> Result<Holds> {
        let now = self.now();
        self.with_conn(|c| holds_in(c, now, &chrono::Local))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{Kind, Period, Target};
    use crate::store::Store;

    #[test]
    fn a_limit_is_enforced_once_its_time_is_used_up_and_a_goal_never() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("db.sqlite")).unwrap();
        crate::time_spent::measured_visit_for_tests(&store, "https://m.video.example/watch", 29 * 60_000);
        let video = Target::Domain("video.example".into());
        store.set_limit(&video, Period::Day, Kind::Max, 30).unwrap();
        store
            .set_limit(&Target::Domain("zero.example".into()), Period::Day, Kind::Max, 0)
            .unwrap();
        store
            .set_limit(&Target::Domain("goal.example".into()), Period::Day, Kind::Min, 1)
            .unwrap();
        crate::time_spent::measured_visit_for_tests(&store, "https://goal.example/", 5 * 60_000);
        let names = |r: Vec<Reached>| r.into_iter().map(|r| r.domains).collect::<Vec<_>>();
        // 29 of 30 minutes: not yet; 0m: at once; a goal met: never.
        assert_eq!(
            names(store.holds().unwrap().limits),
            vec![vec!["zero.example".to_owned()]]
        );
        crate::time_spent::measured_visit_for_tests(&store, "https://video.example/again", 60_000);
        assert_eq!(
            names(store.holds().unwrap().limits),
            vec![vec!["video.example".to_owned()], vec!["zero.example".to_owned()]]
        );
    }
}
