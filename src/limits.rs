//! Limits and goals: at most (a limit) or at least (a goal) so many minutes of measured active time
//! per day or per ISO week, on a category or on a website (a domain and everything under it),
//! kept in `time_limit` and synced to the user's other devices.
//!
//! Invariants:
//! - One entry per (target, period, kind): setting it again changes its minutes.
//! - Synced as a register per entry ([`register_key`]) whose winner is decided by
//!   [`Version::beats`]: a removal wins over every edit of the incarnation it removed, whatever
//!   their clocks (deletions win); among writes of one incarnation the last writer wins (clock,
//!   then device id); a limit added again after a removal is a new incarnation (its clock is past
//!   the removal's on the device that saw it), so it wins over that removal. The order is total,
//!   so every device that has seen the same writes holds the same entries.
//! - Progress ([`progress`]) counts measured active time only, never imported estimates.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};
use uuid::Uuid;

use crate::category::Category;
use crate::changes::Change;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::sync_log::local;
use crate::sync_log::ops::Op;
use crate::time::Timestamp;

pub mod duration;
pub mod progress;

pub use duration::parse_minutes;

/// What a limit or goal is on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// The visits of websites in a category.
    Category(Category),
    /// The visits of a domain (normalised) and its subdomains.
    Domain(String),
}

impl Target {
    /// `category` or `domain`: the stored `target_type`.
    pub fn type_str(&self) -> &'static str {
        match self {
            Target::Category(_) => "category",
            Target::Domain(_) => "domain",
        }
    }

    /// The category id or the domain: the stored `target`.
    pub fn key(&self) -> &str {
        match self {
            Target::Category(c) => c.id(),
            Target::Domain(d) => d,
        }
    }

    /// The target a stored (or synced) pair names, `None` if it names none.
    pub fn from_parts(target_type: &str, target: &str) -> Option<Target> {
        match target_type {
            "category" => target.parse().ok().map(Target::Category),
            "domain" => match Domain::parse_host(target) {
                Ok(d) if d.as_str() == target => Some(Target::Domain(target.to_owned())),
                _ => None,
            },
            _ => None,
        }
    }

    /// The website `domain` (of category `category`) is counted toward this target.
    pub fn covers(&self, domain: &str, category: Option<&str>) -> bool {
        match self {
            Target::Category(c) => category == Some(c.id()),
            Target::Domain(d) => crate::blocked::suffixes(domain).any(|s| s == d),
        }
    }

    /// The name people read: the category's name, or the domain in its own script.
    pub fn name(&self) -> String {
        match self {
            Target::Category(c) => c.name().to_owned(),
            Target::Domain(d) => crate::domain::unicode_form(d).into_owned(),
        }
    }
}

/// A limit (at most) or a goal (at least).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A limit: at most so many minutes.
    Max,
    /// A goal: at least so many minutes.
    Min,
}

crate::names::named!(Kind {
    Max = "max",
    Min = "min",
});

/// The period a limit or goal is counted over, in local time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Period {
    /// A calendar day.
    Day,
    /// An ISO week (Monday to Sunday).
    Week,
}

crate::names::named!(Period {
    Day = "day",
    Week = "week",
});

impl Period {
    /// The most minutes the period holds: a limit or goal past it could never be reached.
    pub fn max_minutes(self) -> u32 {
        match self {
            Period::Day => 24 * 60,
            Period::Week => 7 * 24 * 60,
        }
    }
}

/// A limit or goal as stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Limit {
    /// `category` or `domain`.
    pub target_type: &'static str,
    /// The category id or the domain.
    pub target: String,
    /// `max` (a limit) or `min` (a goal).
    pub kind: Kind,
    /// `day` or `week`.
    pub period: Period,
    /// The minutes.
    pub minutes: u32,
    /// When it was first set (here, or when it reached this device).
    pub created_at: Timestamp,
    /// When its minutes last changed here.
    pub updated_at: Timestamp,
}

impl Limit {
    /// Its target.
    pub fn target(&self) -> Target {
        // Rows are checked when written; a row this build cannot read is left out by `list_in`.
        Target::from_parts(self.target_type, &self.target).unwrap_or(Target::Domain(self.target.clone()))
    }
}

/// Refuses minutes the period cannot hold, and a goal of nothing.
pub fn check_minutes(kind: Kind, period: Period, minutes: u32) -> Result<()> {
    if minutes > period.max_minutes() {
        return Err(Error::InvalidInput(format!(
            "a {} has {} hours: {minutes} minutes could never be reached",
            period.as_str(),
            period.max_minutes() / 60
        )));
    }
    if kind == Kind::Min && minutes == 0 {
        return Err(Error::InvalidInput(
            "a goal of 0 minutes is always met: give it some time".into(),
        ));
    }
    Ok(())
}

/// Every entry, by target, period and kind. Rows this build cannot read (from a newer one) are
/// left out.
pub fn list_in(conn: &Connection) -> Result<Vec<Limit>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT target_type, target, period, kind, minutes, created_at, updated_at FROM time_limit
           ORDER BY target_type, target, period, kind"#,
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>("target_type")?,
            r.get::<_, String>("target")?,
            r.get::<_, String>("period")?,
            r.get::<_, String>("kind")?,
            r.get::<_, u32>("minutes")?,
            r.get::<_, Timestamp>("created_at")?,
            r.get::<_, Timestamp>("updated_at")?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (tt, target, period, kind, minutes, created_at, updated_at) = row?;
        let (Some(t), Some(period), Some(kind)) = (
            Target::from_parts(&tt, &target),
            Period::parse(&period),
            Kind::parse(&kind),
        ) else {
            continue;
        };
        out.push(Limit {
            target_type: t.type_str(),
            target,
            kind,
            period,
            minutes,
            created_at,
            updated_at,
        });
    }
    Ok(out)
}

/// The register key of one entry.
pub fn register_key(target: &Target, period: Period, kind: Kind) -> String {
    format!(
        "limit:{}:{}:{}:{}",
        target.type_str(),
        target.key(),
        period.as_str(),
        kind.as_str()
    )
}

/// One write of an entry's register, as [`Version::beats`] orders them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// The clock of the write that created the incarnation written to.
    pub created: i64,
    /// Its minutes, `None` for a removal.
    pub minutes: Option<u32>,
    /// The write's clock.
    pub hlc: i64,
    /// The writing device.
    pub device: Uuid,
}

impl Version {
    /// True if this write wins over `other`: the later incarnation; within one, a removal; then
    /// the later write (clock, then device).
    pub fn beats(&self, other: &Version) -> bool {
        let key = |v: &Version| (v.created, v.minutes.is_none(), v.hlc, v.device);
        key(self) > key(other)
    }

    fn value(&self) -> String {
        match self.minutes {
            Some(m) => format!("{}:{m}", self.created),
            None => format!("{}:-", self.created),
        }
    }

    fn from_register(r: &local::Register) -> Option<Version> {
        let (created, minutes) = r.value.as_deref()?.split_once(':')?;
        Some(Version {
            created: created.parse().ok()?,
            minutes: match minutes {
                "-" => None,
                m => Some(m.parse().ok()?),
            },
            hlc: r.hlc,
            device: r.device,
        })
    }
}

/// Writes `v` as the winner of `key`, whatever its clock (the caller decided it wins).
fn put_register_in(tx: &Transaction<'_>, key: &str, v: &Version) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO sync_register (key, hlc, device_id, value) VALUES (:k, :h, :d, :v)
           ON CONFLICT (key) DO UPDATE SET hlc = excluded.hlc, device_id = excluded.device_id,
                                           value = excluded.value"#,
    )?
    .execute(named_params! {
        ":k": key, ":h": v.hlc, ":d": v.device.as_bytes().as_slice(), ":v": v.value(),
    })?;
    Ok(())
}

/// The clock of the incarnation of an entry stored here (`None` if not stored, or stored before
/// this device was linked), and whether it is stored.
fn get_created_in(
    conn: &Connection,
    target: &Target,
    period: Period,
    kind: Kind,
) -> Result<Option<Option<i64>>> {
    Ok(conn
        .prepare_cached(
            r#"SELECT sync_created_hlc FROM time_limit
               WHERE target_type = :tt AND target = :t AND period = :p AND kind = :k"#,
        )?
        .query_row(
            named_params! {
                ":tt": target.type_str(), ":t": target.key(), ":p": period.as_str(), ":k": kind.as_str(),
            },
            |r| r.get::<_, Option<i64>>("sync_created_hlc"),
        )
        .optional()?)
}

/// Stores the entry with `minutes` (its incarnation's clock `created`, if known), keeping its
/// creation time if it was stored.
fn upsert_in(
    tx: &Transaction<'_>,
    target: &Target,
    period: Period,
    kind: Kind,
    minutes: u32,
    created: Option<i64>,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO time_limit (target_type, target, period, kind, minutes, created_at, updated_at,
                                   sync_created_hlc)
           VALUES (:tt, :t, :p, :k, :m, :now, :now, :c)
           ON CONFLICT (target_type, target, period, kind) DO UPDATE
              SET minutes = excluded.minutes, sync_created_hlc = excluded.sync_created_hlc,
                  updated_at = CASE WHEN minutes = excluded.minutes THEN updated_at ELSE excluded.updated_at END,
                  created_at = CASE WHEN sync_created_hlc IS excluded.sync_created_hlc
                                      OR sync_created_hlc IS NULL THEN created_at
                                    ELSE excluded.created_at END"#,
    )?
    .execute(named_params! {
        ":tt": target.type_str(), ":t": target.key(), ":p": period.as_str(), ":k": kind.as_str(),
        ":m": minutes, ":now": now, ":c": created,
    })?;
    Ok(())
}

fn delete_in(tx: &Transaction<'_>, target: &Target, period: Period, kind: Kind) -> Result<bool> {
    Ok(tx
        .prepare_cached(
            r#"DELETE FROM time_limit WHERE target_type = :tt AND target = :t AND period = :p AND kind = :k"#,
        )?
        .execute(named_params! {
            ":tt": target.type_str(), ":t": target.key(), ":p": period.as_str(), ":k": kind.as_str(),
        })?
        == 1)
}

/// Queues a write of the entry for the other devices (nothing if not linked) and records it as
/// its register's winner; returns the incarnation's clock if it was queued.
fn queue_in(
    tx: &Transaction<'_>,
    target: &Target,
    period: Period,
    kind: Kind,
    minutes: Option<u32>,
    created: Option<i64>,
) -> Result<Option<i64>> {
    let op = Op::Limit {
        target_type: target.type_str().to_owned(),
        target: target.key().to_owned(),
        period: period.as_str().to_owned(),
        kind: kind.as_str().to_owned(),
        minutes,
        created,
    };
    let Some((hlc, device)) = local::queue_in(tx, &op)? else {
        return Ok(None);
    };
    let created = created.unwrap_or(hlc);
    let v = Version {
        created,
        minutes,
        hlc,
        device,
    };
    put_register_in(tx, &register_key(target, period, kind), &v)?;
    Ok(Some(created))
}

/// Sets the entry to `minutes` (checked); true if it is new.
pub fn set_in(
    tx: &Transaction<'_>,
    target: &Target,
    period: Period,
    kind: Kind,
    minutes: u32,
    now: Timestamp,
) -> Result<bool> {
    check_minutes(kind, period, minutes)?;
    let stored = get_created_in(tx, target, period, kind)?;
    let created = stored.flatten();
    upsert_in(tx, target, period, kind, minutes, created, now)?;
    if let Some(c) = queue_in(tx, target, period, kind, Some(minutes), created)? {
        if created.is_none() {
            tx.prepare_cached(
                r#"UPDATE time_limit SET sync_created_hlc = :c
                   WHERE target_type = :tt AND target = :t AND period = :p AND kind = :k"#,
            )?
            .execute(named_params! {
                ":c": c, ":tt": target.type_str(), ":t": target.key(), ":p": period.as_str(), ":k": kind.as_str(),
            })?;
        }
    }
    Ok(stored.is_none())
}

/// Removes the entries of `target` (of `period` only, if given); returns those removed.
pub fn remove_in(tx: &Transaction<'_>, target: &Target, period: Option<Period>) -> Result<Vec<Limit>> {
    let gone: Vec<Limit> = list_in(tx)?
        .into_iter()
        .filter(|l| l.target() == *target && period.is_none_or(|p| p == l.period))
        .collect();
    for l in &gone {
        let created = get_created_in(tx, target, l.period, l.kind)?.flatten();
        delete_in(tx, target, l.period, l.kind)?;
        queue_in(tx, target, l.period, l.kind, None, created)?;
    }
    Ok(gone)
}

/// Removes the entry of `target`, `period` and `kind` (the other kind of the period stays); true
/// if there was one.
pub fn remove_one_in(tx: &Transaction<'_>, target: &Target, period: Period, kind: Kind) -> Result<bool> {
    let Some(created) = get_created_in(tx, target, period, kind)? else {
        return Ok(false);
    };
    delete_in(tx, target, period, kind)?;
    queue_in(tx, target, period, kind, None, created)?;
    Ok(true)
}

/// Queues every entry and every removal this device holds for the other devices, at a link
/// (nothing if not linked). One its register holds as it is here is sent with the version the
/// register holds (its clock and incarnation), so a newer change made elsewhere meanwhile still
/// wins over it, as for the other settings; one changed, set or removed while this device was not
/// linked (the register was not written then) is sent as a new write of its incarnation (a new
/// incarnation if it was set anew).
pub fn queue_all_in(tx: &Transaction<'_>) -> Result<()> {
    if local::is_applying() || !local::is_linked(tx)? {
        return Ok(());
    }
    let mut held: std::collections::BTreeMap<String, Version> = tx
        .prepare(r#"SELECT key, hlc, device_id, value FROM sync_register WHERE key >= 'limit:' AND key < 'limit;'"#)?
        .query_map([], |r| {
            let device: Vec<u8> = r.get("device_id")?;
            Ok((r.get::<_, String>("key")?, r.get("hlc")?, device, r.get::<_, Option<String>>("value")?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter_map(|(key, hlc, device, value)| {
            let device = Uuid::from_slice(&device).ok()?;
            let v = Version::from_register(&local::Register { hlc, device, value })?;
            Some((key, v))
        })
        .collect();
    for l in list_in(tx)? {
        let target = l.target();
        let key = register_key(&target, l.period, l.kind);
        let created = get_created_in(tx, &target, l.period, l.kind)?.flatten();
        match held.remove(&key) {
            Some(v) if v.minutes == Some(l.minutes) && created == Some(v.created) => {
                queue_held_in(tx, &target, l.period, l.kind, &v)?;
            }
            _ => {
                if let Some(c) = queue_in(tx, &target, l.period, l.kind, Some(l.minutes), created)? {
                    upsert_in(tx, &target, l.period, l.kind, l.minutes, Some(c), l.updated_at)?;
                }
            }
        }
    }
    // Entries held in a register but not here: removed (here, or by the device that won).
    for (key, v) in held {
        let Some((target, period, kind)) = parse_register_key(&key) else {
            continue;
        };
        if v.minutes.is_none() {
            queue_held_in(tx, &target, period, kind, &v)?;
        } else {
            // Removed while this device was not linked.
            queue_in(tx, &target, period, kind, None, Some(v.created))?;
        }
    }
    Ok(())
}

/// Queues the write `v` of an entry with the clock it was made with (its register's).
fn queue_held_in(
    tx: &Transaction<'_>,
    target: &Target,
    period: Period,
    kind: Kind,
    v: &Version,
) -> Result<()> {
    let op = Op::Limit {
        target_type: target.type_str().to_owned(),
        target: target.key().to_owned(),
        period: period.as_str().to_owned(),
        kind: kind.as_str().to_owned(),
        minutes: v.minutes,
        created: Some(v.created),
    };
    tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:h, :op)"#)?
        .execute(named_params! { ":h": v.hlc, ":op": op.to_json() })?;
    Ok(())
}

/// The entry a register key ([`register_key`]) names.
fn parse_register_key(key: &str) -> Option<(Target, Period, Kind)> {
    let rest = key.strip_prefix("limit:")?;
    let (target_type, rest) = rest.split_once(':')?;
    let (rest, kind) = rest.rsplit_once(':')?;
    let (target, period) = rest.rsplit_once(':')?;
    Some((
        Target::from_parts(target_type, target)?,
        Period::parse(period)?,
        Kind::parse(kind)?,
    ))
}

/// A limit as another device wrote it (an [`Op::Limit`]).
#[derive(Clone, Copy, Debug)]
pub struct Synced<'a> {
    /// `category` or `domain`.
    pub target_type: &'a str,
    /// The category id or domain.
    pub target: &'a str,
    /// `day` or `week`.
    pub period: &'a str,
    /// `max` or `min`.
    pub kind: &'a str,
    /// The minutes, `None` for a removal.
    pub minutes: Option<u32>,
    /// The clock of the incarnation's creation, `None` if this write created it.
    pub created: Option<i64>,
}

/// Applies `op` of `device` written at clock `hlc`: stored if it wins ([`Version::beats`]).
/// False if it names nothing valid here (dropped).
pub fn apply_synced_in(
    tx: &Transaction<'_>,
    device: Uuid,
    hlc: i64,
    op: Synced<'_>,
    now: Timestamp,
) -> Result<bool> {
    let (Some(target), Some(period), Some(kind)) = (
        Target::from_parts(op.target_type, op.target),
        Period::parse(op.period),
        Kind::parse(op.kind),
    ) else {
        return Ok(false);
    };
    if op
        .minutes
        .is_some_and(|m| check_minutes(kind, period, m).is_err())
    {
        return Ok(false);
    }
    let key = register_key(&target, period, kind);
    let incoming = Version {
        created: op.created.unwrap_or(hlc),
        minutes: op.minutes,
        hlc,
        device,
    };
    if let Some(old) = local::get_register(tx, &key)?
        .as_ref()
        .and_then(Version::from_register)
    {
        if !incoming.beats(&old) {
            return Ok(true);
        }
    }
    put_register_in(tx, &key, &incoming)?;
    match op.minutes {
        Some(m) => upsert_in(tx, &target, period, kind, m, Some(incoming.created), now)?,
        None => {
            delete_in(tx, &target, period, kind)?;
        }
    }
    Ok(true)
}

impl Store {
    /// Sets a limit or goal (minutes checked against the period); true if it is new.
    // The target's type only: a domain is never in a span.
    #[tracing::instrument(level = "debug", skip_all, fields(target_type = target.type_str(), period = period.as_str(), kind = kind.as_str()))]
    pub fn set_limit(&self, target: &Target, period: Period, kind: Kind, minutes: u32) -> Result<bool> {
        check_minutes(kind, period, minutes)?;
        let now = self.now();
        self.write(Change::Limits, |tx| {
            set_in(tx, target, period, kind, minutes, now)
        })
    }

    /// Removes the limits and goals of `target` (of `period` only, if given); returns them.
    #[tracing::instrument(level = "debug", skip_all, fields(target_type = target.type_str()))]
    pub fn remove_limits(&self, target: &Target, period: Option<Period>) -> Result<Vec<Limit>> {
        self.write(Change::Limits, |tx| remove_in(tx, target, period))
    }

    /// Removes the one limit or goal of `target` of `period` and `kind`; true if there was one.
    #[tracing::instrument(level = "debug", skip_all, fields(target_type = target.type_str(), period = period.as_str(), kind = kind.as_str()))]
    pub fn remove_limit(&self, target: &Target, period: Period, kind: Kind) -> Result<bool> {
        self.write(Change::Limits, |tx| remove_one_in(tx, target, period, kind))
    }

    /// Every limit and goal.
    pub fn limits(&self) -> Result<Vec<Limit>> {
        self.with_conn(list_in)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(created: i64, minutes: Option<u32>, hlc: i64, device: u128) -> Version {
        Version {
            created,
            minutes,
            hlc,
            device: Uuid::from_u128(device),
        }
    }

    #[test]
    fn a_removal_wins_over_edits_of_its_incarnation_and_loses_to_a_new_one() {
        let removal = v(10, None, 20, 1);
        // An edit of the same incarnation made later, by a device that had not seen the removal.
        assert!(removal.beats(&v(10, Some(5), 30, 2)));
        assert!(!v(10, Some(5), 30, 2).beats(&removal));
        // Added again after the removal: a new incarnation.
        assert!(v(25, Some(5), 25, 2).beats(&removal));
        // Edits of one incarnation: the last writer wins, then the device id.
        assert!(v(10, Some(7), 31, 1).beats(&v(10, Some(5), 30, 2)));
        assert!(v(10, Some(7), 30, 2).beats(&v(10, Some(5), 30, 1)));
        let r = local::Register {
            hlc: 30,
            device: Uuid::from_u128(2),
            value: Some(v(10, Some(5), 30, 2).value()),
        };
        assert_eq!(Version::from_register(&r), Some(v(10, Some(5), 30, 2)));
    }

    #[test]
    fn targets_cover_their_category_or_domain_and_its_subdomains() {
        let d = Target::Domain("video.example".into());
        assert!(d.covers("video.example", None));
        assert!(d.covers("m.video.example", Some("news")));
        assert!(!d.covers("notvideo.example", None));
        let c = Target::Category(Category::Social);
        assert!(c.covers("any.example", Some("social")));
        assert!(!c.covers("any.example", None));
        assert_eq!(
            Target::from_parts("domain", "WWW.Video.example"),
            None,
            "stored normalised"
        );
        assert_eq!(Target::from_parts("category", "social"), Some(c));
        assert!(check_minutes(Kind::Max, Period::Day, 1441).is_err());
        assert!(check_minutes(Kind::Max, Period::Week, 1441).is_ok());
        assert!(check_minutes(Kind::Min, Period::Day, 0).is_err());
        assert!(check_minutes(Kind::Max, Period::Day, 0).is_ok());
    }
}
