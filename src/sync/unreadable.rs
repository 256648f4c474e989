//! Other devices' records this device could not read, kept in `sync_unreadable` (migration 15)
//! so that `sync status` (and the app) can say which: nothing another party sends can stop a
//! device syncing, and nothing is skipped without a word.
//!
//! A record is unreadable when it does not open with the account's key, when what it opens to
//! does not inflate or parse, or when it would inflate past its cap ([`Reason`]). It is never
//! applied, and the pull moves past it in the same transaction as it notes it, so the rest of
//! its series still applies. A record the hub served at the wrong place is `misplaced`: its
//! series stops for that sync (the hub may answer right the next time), and the row goes as
//! soon as the record at that place is applied.

use rusqlite::{named_params, Connection, Transaction};
use uuid::Uuid;

use crate::error::Result;
use crate::time::Timestamp;

/// Most unreadable records `sync status` lists (the count says how many there are in all).
pub const LISTED: usize = 20;

/// Why a record was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// It does not open with the account's key: changed, moved, of another account, or garbage.
    DoesNotOpen,
    /// It opens, but its contents do not inflate, or are not a list of operations.
    Damaged,
    /// Its contents would inflate past [`crate::sync_log::ops::MAX_INFLATED_BYTES`], or hold
    /// more than [`crate::sync_log::ops::MAX_OPS_PER_RECORD`] operations.
    TooLarge,
    /// The hub served another record (another device's, series' or index) at its place.
    Misplaced,
}

impl Reason {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::DoesNotOpen => "does_not_open",
            Reason::Damaged => "damaged",
            Reason::TooLarge => "too_large",
            Reason::Misplaced => "misplaced",
        }
    }

    /// The reason stored as `s`.
    pub fn parse(s: &str) -> Option<Reason> {
        [
            Reason::DoesNotOpen,
            Reason::Damaged,
            Reason::TooLarge,
            Reason::Misplaced,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }

    /// What it means, in a few words for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::DoesNotOpen => "does not open with this account's key",
            Reason::Damaged => "is damaged",
            Reason::TooLarge => "is larger than a record may be",
            Reason::Misplaced => "was served at the wrong place by the hub",
        }
    }
}

crate::sql_enum::sql_text!(Reason, "unreadable record reason", as_str, parse);

/// One record not applied.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Unreadable {
    /// The device whose series holds it.
    pub device_id: Uuid,
    /// The series.
    pub series: String,
    /// Its index in the series.
    pub idx: u64,
    /// Why it was not applied.
    pub reason: Reason,
    /// When this device last found it so.
    pub seen_at: Timestamp,
}

/// The unreadable records, as `sync status` shows them: how many, and the first [`LISTED`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnreadableSummary {
    /// How many records of other devices were not applied.
    pub count: u64,
    /// The most recent of them (at most [`LISTED`]), newest first.
    pub records: Vec<Unreadable>,
}

/// Notes the record at `idx` of `device`'s `series` as unreadable for `reason`.
pub fn insert_in(
    tx: &Transaction<'_>,
    device: Uuid,
    series: &str,
    idx: u64,
    reason: Reason,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO sync_unreadable (device_id, series, idx, reason, seen_at)
           VALUES (:d, :s, :i, :r, :now)
           ON CONFLICT (device_id, series, idx) DO UPDATE SET reason = excluded.reason,
                                                             seen_at = excluded.seen_at"#,
    )?
    .execute(named_params! {
        ":d": device.as_bytes().as_slice(), ":s": series,
        ":i": i64::try_from(idx).unwrap_or(i64::MAX), ":r": reason, ":now": now,
    })?;
    Ok(())
}

/// Forgets a note about the record at `idx` (it was applied after all: a misplaced record the hub
/// then served right).
pub fn delete_in(tx: &Transaction<'_>, device: Uuid, series: &str, idx: u64) -> Result<()> {
    tx.prepare_cached(r#"DELETE FROM sync_unreadable WHERE device_id = :d AND series = :s AND idx = :i"#)?
        .execute(named_params! {
            ":d": device.as_bytes().as_slice(), ":s": series,
            ":i": i64::try_from(idx).unwrap_or(i64::MAX),
        })?;
    Ok(())
}

/// How many records were not applied, and the most recent [`LISTED`].
pub fn summary(conn: &Connection) -> Result<UnreadableSummary> {
    let count: i64 = conn
        .prepare_cached(r#"SELECT count(*) FROM sync_unreadable"#)?
        .query_row([], |r| r.get(0))?;
    let rows = conn
        .prepare_cached(
            r#"SELECT device_id, series, idx, reason, seen_at FROM sync_unreadable
               ORDER BY seen_at DESC, device_id, series, idx LIMIT :n"#,
        )?
        .query_map(named_params! { ":n": LISTED as i64 }, |r| {
            Ok((
                r.get::<_, Vec<u8>>("device_id")?,
                r.get::<_, String>("series")?,
                r.get::<_, i64>("idx")?,
                r.get::<_, Reason>("reason")?,
                r.get::<_, Timestamp>("seen_at")?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(UnreadableSummary {
        count: u64::try_from(count).unwrap_or(0),
        records: rows
            .into_iter()
            .filter_map(|(d, series, idx, reason, seen_at)| {
                Some(Unreadable {
                    device_id: Uuid::from_slice(&d).ok()?,
                    series,
                    idx: u64::try_from(idx).ok()?,
                    reason,
                    seen_at,
                })
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_through_their_stored_names() {
        for r in [
            Reason::DoesNotOpen,
            Reason::Damaged,
            Reason::TooLarge,
            Reason::Misplaced,
        ] {
            assert_eq!(Reason::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        assert_eq!(Reason::parse("other"), None);
    }
}
