//! Focus sessions: for a while ("focus for 50 minutes"), pages of the chosen categories and
//! websites are held back in the browser with no "Continue", on every synced device, and the
//! session ends on its own.
//!
//! Invariants:
//! - One session at a time (`focus_session`, one row): starting one replaces the one before.
//! - Synced as one register ([`FOCUS_KEY`]): the last start or stop wins (clock, then device id),
//!   so every device that has seen the same writes holds the same session.
//! - Bounded whatever another device sends: at most [`MAX_MINUTES`] long, at most [`MAX_BLOCKS`]
//!   targets, each a category or a valid domain; anything else is dropped, not applied.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};
use uuid::Uuid;

use crate::changes::Change;
use crate::error::{Error, Result};
use crate::limits::Target;
use crate::store::Store;
use crate::sync_log::local;
use crate::sync_log::ops::Op;
use crate::time::Timestamp;

/// The register the session is synced as.
pub const FOCUS_KEY: &str = "focus";
/// The longest session: a working day.
pub const MAX_MINUTES: u32 = 12 * 60;
/// The most categories and websites one session holds back.
pub const MAX_BLOCKS: usize = 64;

/// A focus session as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Focus {
    /// When it started.
    pub started_at: Timestamp,
    /// When it ends on its own.
    pub ends_at: Timestamp,
    /// What it holds back.
    pub blocks: Vec<Target>,
    /// When it was stopped early, if it was.
    pub stopped_at: Option<Timestamp>,
}

impl Focus {
    /// True while it holds pages back at `now`.
    pub fn active(&self, now: Timestamp) -> bool {
        self.stopped_at.is_none() && self.started_at <= now && now < self.ends_at
    }

    /// The targets as stored and synced: `category:social`, `domain:youtube.com`.
    pub fn block_keys(&self) -> Vec<String> {
        self.blocks.iter().map(block_key).collect()
    }
}

fn block_key(t: &Target) -> String {
    format!("{}:{}", t.type_str(), t.key())
}

fn parse_block(key: &str) -> Option<Target> {
    let (kind, target) = key.split_once(':')?;
    Target::from_parts(kind, target)
}

/// The targets of `keys`, or `None` if any is not a target or there are none or too many.
fn parse_blocks(keys: &[String]) -> Option<Vec<Target>> {
    if keys.is_empty() || keys.len() > MAX_BLOCKS {
        return None;
    }
    let mut blocks: Vec<Target> = keys.iter().map(|k| parse_block(k)).collect::<Option<_>>()?;
    blocks.sort();
    blocks.dedup();
    Some(blocks)
}

/// A target as the extension sends it: a category id (`social`) or a domain (`youtube.com`).
pub fn parse_target(s: &str) -> Result<Target> {
    let s = s.trim();
    if s.contains('.') {
        let d = crate::domain::Domain::parse_host(s)?;
        return Ok(Target::Domain(d.as_str().to_owned()));
    }
    s.parse::<crate::category::Category>()
        .map(Target::Category)
        .map_err(|_| {
            Error::InvalidInput(format!(
                "{:?} is not a category id or a domain",
                s.chars().take(64).collect::<String>()
            ))
        })
}

/// The session stored (active or not), if any.
pub fn get_in(conn: &Connection) -> Result<Option<Focus>> {
    let row: Option<(i64, i64, String, Option<i64>)> = conn
        .prepare_cached(r#"SELECT started_at, ends_at, blocks, stopped_at FROM focus_session WHERE id = 1"#)?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let Some((started, ends, blocks, stopped)) = row else {
        return Ok(None);
    };
    let keys: Vec<String> = serde_json::from_str(&blocks).unwrap_or_default();
    Ok(Some(Focus {
        started_at: Timestamp(started),
        ends_at: Timestamp(ends),
        blocks: keys.iter().filter_map(|k| parse_block(k)).collect(),
        stopped_at: stopped.map(Timestamp),
    }))
}

fn put_in(tx: &Transaction<'_>, f: &Focus, now: Timestamp) -> Result<()> {
    let blocks = serde_json::Value::from(f.block_keys()).to_string();
    tx.prepare_cached(
        r#"INSERT INTO focus_session (id, started_at, ends_at, blocks, stopped_at, updated_at)
           VALUES (1, :s, :e, :b, :x, :now)
           ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at, ends_at = excluded.ends_at,
               blocks = excluded.blocks, stopped_at = excluded.stopped_at, updated_at = excluded.updated_at"#,
    )?
    .execute(named_params! {
        ":s": f.started_at.0, ":e": f.ends_at.0, ":b": blocks, ":x": f.stopped_at.map(|t| t.0), ":now": now.0,
    })?;
    Ok(())
}

fn op_of(f: &Focus) -> Op {
    Op::Focus {
        started_at: f.started_at.0,
        ends_at: f.ends_at.0,
        blocks: f.block_keys(),
        stopped_at: f.stopped_at.map(|t| t.0),
    }
}

/// Stores `f` and queues it for the other devices (nothing if not linked).
fn write_in(tx: &Transaction<'_>, f: &Focus, now: Timestamp) -> Result<()> {
    put_in(tx, f, now)?;
    let op = op_of(f);
    local::queue_register_in(tx, FOCUS_KEY, Some(&op.to_json()), &op)
}

/// Starts a session of `minutes` holding back `blocks`, replacing any before it.
pub fn start_in(tx: &Transaction<'_>, minutes: u32, blocks: Vec<Target>, now: Timestamp) -> Result<Focus> {
    if minutes == 0 || minutes > MAX_MINUTES {
        return Err(Error::InvalidInput(format!(
            "a focus session is from 1 minute to {} hours long",
            MAX_MINUTES / 60
        )));
    }
    let keys: Vec<String> = blocks.iter().map(block_key).collect();
    let Some(blocks) = parse_blocks(&keys) else {
        return Err(Error::InvalidInput(format!(
            "a focus session holds back from 1 to {MAX_BLOCKS} categories or websites"
        )));
    };
    let f = Focus {
        started_at: now,
        ends_at: Timestamp(now.0 + i64::from(minutes) * 60_000_000),
        blocks,
        stopped_at: None,
    };
    write_in(tx, &f, now)?;
    Ok(f)
}

/// Stops the active session; returns it as it was, `None` if none was active.
pub fn stop_in(tx: &Transaction<'_>, now: Timestamp) -> Result<Option<Focus>> {
    let Some(f) = get_in(tx)?.filter(|f| f.active(now)) else {
        return Ok(None);
    };
    write_in(
        tx,
        &Focus {
            stopped_at: Some(now),
            ..f.clone()
        },
        now,
    )?;
    Ok(Some(f))
}

/// The register value of the session stored here (what a link sends again, `sync::reconcile`):
/// the operation that writes it, as JSON.
pub fn register_value_in(conn: &Connection) -> Result<Option<String>> {
    Ok(get_in(conn)?.map(|f| op_of(&f).to_json()))
}

/// A session as another device wrote it (an [`Op::Focus`]).
#[derive(Clone, Copy, Debug)]
pub struct Synced<'a> {
    /// When it started (µs).
    pub started_at: i64,
    /// When it ends (µs).
    pub ends_at: i64,
    /// Its targets as keys.
    pub blocks: &'a [String],
    /// When it was stopped (µs), if it was.
    pub stopped_at: Option<i64>,
}

/// Applies another device's session written at clock `hlc`: stored if it is the newest write.
/// False if it is not a valid session (dropped).
pub fn apply_synced_in(
    tx: &Transaction<'_>,
    device: Uuid,
    hlc: i64,
    op: Synced<'_>,
    now: Timestamp,
) -> Result<bool> {
    let long = op.ends_at.checked_sub(op.started_at);
    let Some(blocks) = parse_blocks(op.blocks) else {
        return Ok(false);
    };
    if !long.is_some_and(|l| l > 0 && l <= i64::from(MAX_MINUTES) * 60_000_000) {
        return Ok(false);
    }
    let f = Focus {
        started_at: Timestamp(op.started_at),
        ends_at: Timestamp(op.ends_at),
        blocks,
        stopped_at: op.stopped_at.map(Timestamp),
    };
    if local::offer_register_in(tx, FOCUS_KEY, hlc, device, Some(&op_of(&f).to_json()))? {
        put_in(tx, &f, now)?;
    }
    Ok(true)
}

impl Store {
    /// Starts a focus session of `minutes` holding back `blocks` (on every synced device).
    #[tracing::instrument(level = "debug", skip_all, fields(minutes, blocks = blocks.len()))]
    pub fn start_focus(&self, minutes: u32, blocks: Vec<Target>) -> Result<Focus> {
        let now = self.now();
        self.write(Change::Limits, |tx| start_in(tx, minutes, blocks, now))
    }

    /// Stops the focus session running; `None` if none was.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn stop_focus(&self) -> Result<Option<Focus>> {
        let now = self.now();
        self.write(Change::Limits, |tx| stop_in(tx, now))
    }

    /// The focus session running now, if any.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn focus(&self) -> Result<Option<Focus>> {
        let now = self.now();
        Ok(self.with_conn(get_in)?.filter(|f| f.active(now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::category::Category;

    #[test]
    fn a_session_holds_until_it_ends_or_is_stopped_and_bad_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("db.sqlite")).unwrap();
        assert_eq!(store.focus().unwrap(), None);
        let blocks = vec![
            Target::Category(Category::Social),
            Target::Domain("video.example".into()),
        ];
        let f = store.start_focus(50, blocks.clone()).unwrap();
        assert_eq!(f.ends_at.0 - f.started_at.0, 50 * 60_000_000);
        assert!(f.active(f.started_at) && !f.active(f.ends_at));
        assert_eq!(store.focus().unwrap().map(|f| f.blocks.len()), Some(2));
        assert_eq!(store.stop_focus().unwrap().map(|f| f.ends_at), Some(f.ends_at));
        assert_eq!(store.focus().unwrap(), None);
        assert_eq!(store.stop_focus().unwrap(), None, "nothing left to stop");
        assert!(store.start_focus(0, blocks.clone()).is_err());
        assert!(store.start_focus(MAX_MINUTES + 1, blocks).is_err());
        assert!(store.start_focus(30, Vec::new()).is_err());
        assert_eq!(store.focus().unwrap(), None, "nothing stored when refused");
    }

    #[test]
    fn a_synced_session_is_applied_only_when_valid_and_newest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("db.sqlite")).unwrap();
        let now = store.now();
        let ok = vec!["category:social".to_owned()];
        let synced = |blocks: &[String], long: i64, hlc: i64, stopped: Option<i64>| {
            store
                .write(None, |tx| {
                    let op = Synced {
                        started_at: now.0,
                        ends_at: now.0 + long,
                        blocks,
                        stopped_at: stopped,
                    };
                    apply_synced_in(tx, Uuid::from_u128(7), hlc, op, now)
                })
                .unwrap()
        };
        assert!(!synced(&["nonsense".to_owned()], 60_000_000, 10, None));
        assert!(!synced(&ok, i64::from(MAX_MINUTES + 1) * 60_000_000, 10, None));
        assert!(!synced(&ok, -1, 10, None));
        assert_eq!(store.focus().unwrap(), None);
        assert!(synced(&ok, 60_000_000, 10, None));
        assert!(store.focus().unwrap().is_some());
        // An older stop loses; a newer one wins.
        assert!(synced(&ok, 60_000_000, 5, Some(now.0)));
        assert!(store.focus().unwrap().is_some());
        assert!(synced(&ok, 60_000_000, 11, Some(now.0)));
        assert_eq!(store.focus().unwrap(), None);
    }
}
