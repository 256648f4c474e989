//! Linking a device to an account, and one sync: queue what was here before the link, seal
//! operations into records, push them, pull and apply the other devices' records.
//!
//! Every step is resumable and idempotent, so a crash, a killed hub or a lost answer anywhere
//! loses nothing and stores nothing twice:
//! - sealing moves operations from `sync_op` into a numbered record in `sync_sealed` in one
//!   transaction (the record's index and id are fixed from then on, so a repeated push is the
//!   same record: the hub acknowledges it as a duplicate);
//! - a sealed record is deleted only once the hub acknowledged it;
//! - a pulled record is applied, and `sync_applied` moved past it, in one transaction; applying
//!   is on the forgetting's connection (deleted bytes zeroed), one record (at most
//!   [`OPS_PER_RECORD`] operations) per transaction, so the write lock is held briefly.
//!
//! Database work runs on the blocking pool ([`crate::blocking::run`]); only HTTP awaits here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{named_params, Connection, OptionalExtension};
use uuid::Uuid;

use sitetrail_sync_wire::{self as wire, Series};

use super::client::{normalise_hub_url, HubClient};
use super::crypto::{AccountKeys, AccountSecret, Place};
use super::{apply, keystore};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::VisitId;
use crate::store::{Change, Store};
use crate::sync_log::local;
use crate::sync_log::ops::{self, Op};
use crate::time::Timestamp;

/// The one series each device writes.
pub const SERIES: &str = "ops";
/// Most operations sealed into one record.
pub const OPS_PER_RECORD: usize = 1_000;
/// Most plaintext bytes (deflated) of one record, well below the hub's 256 KiB.
const MAX_PACKED_BYTES: usize = 192 * 1024;
/// Visits queued per transaction when queueing what was here before the link.
const BACKFILL_BATCH: usize = 5_000;
/// Records asked for per page.
const PAGE_RECORDS: u32 = 100;
/// Longest device name.
pub const MAX_DEVICE_NAME: usize = 64;

fn series() -> Series {
    // A constant valid name.
    Series::new(SERIES).unwrap_or_else(|_| series())
}

/// This device's link to an account.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    /// The hub's URL.
    pub hub: String,
    /// The account's id.
    pub account_id: Uuid,
    /// This device's id.
    pub device_id: Uuid,
    /// This device's name.
    pub device_name: String,
    /// When it was linked.
    pub linked_at: Timestamp,
    /// When it last synced without an error.
    pub last_sync_at: Option<Timestamp>,
    /// The last sync's error, if it failed.
    pub last_error: Option<String>,
}

/// The link, if this database has one.
pub fn get_link(conn: &Connection) -> Result<Option<Link>> {
    let row = conn
        .prepare_cached(
            r#"SELECT hub, account_id, device_id, device_name, linked_at, last_sync_at, last_error
               FROM sync_link"#,
        )?
        .query_row([], |r| {
            Ok((
                r.get::<_, String>("hub")?,
                r.get::<_, Vec<u8>>("account_id")?,
                r.get::<_, Vec<u8>>("device_id")?,
                r.get::<_, String>("device_name")?,
                r.get::<_, Timestamp>("linked_at")?,
                r.get::<_, Option<Timestamp>>("last_sync_at")?,
                r.get::<_, Option<String>>("last_error")?,
            ))
        })
        .optional()?;
    let Some((hub, a, d, device_name, linked_at, last_sync_at, last_error)) = row else {
        return Ok(None);
    };
    let (Ok(account_id), Ok(device_id)) = (Uuid::from_slice(&a), Uuid::from_slice(&d)) else {
        return Err(Error::Sync {
            kind: ErrorKind::Database,
            message: "the sync link in this database is damaged; run `sitetrail sync leave`".into(),
        });
    };
    Ok(Some(Link {
        hub,
        account_id,
        device_id,
        device_name,
        linked_at,
        last_sync_at,
        last_error,
    }))
}

fn not_linked() -> Error {
    Error::Sync {
        kind: ErrorKind::NotFound,
        message: "this device is not linked to a hub; run `sitetrail sync setup --hub URL` (first device) or `sitetrail sync join --hub URL`".into(),
    }
}

/// The name this machine goes by (its host name), for a device name not given.
pub fn default_device_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "this device".to_owned())
}

fn clean_name(name: Option<&str>) -> Result<String> {
    let name = name.map_or_else(default_device_name, |n| {
        n.chars().filter(|c| !c.is_control()).collect()
    });
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::InvalidInput("a device name must not be empty".into()));
    }
    if name.chars().count() > MAX_DEVICE_NAME {
        return Err(Error::InvalidInput(format!(
            "a device name is at most {MAX_DEVICE_NAME} characters"
        )));
    }
    Ok(name.to_owned())
}

/// A device just linked.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Linked {
    /// The account's id.
    pub account_id: Uuid,
    /// This device's id.
    pub device_id: Uuid,
    /// This device's name.
    pub device_name: String,
}

fn already_linked(store: &Store) -> Result<()> {
    if let Some(link) = store.with_conn(get_link)? {
        return Err(Error::Sync {
            kind: ErrorKind::Conflict,
            message: format!(
                "this device is already linked to the hub at {}; run `sitetrail sync leave` first",
                link.hub
            ),
        });
    }
    Ok(())
}

async fn link(
    store: &Store,
    key_dir: &Path,
    hub: &str,
    name: Option<&str>,
    secret: &AccountSecret,
    create: bool,
) -> Result<Linked> {
    let hub = normalise_hub_url(hub)?;
    let name = clean_name(name)?;
    {
        let store = store.clone();
        blocking::run(move || already_linked(&store)).await?;
    }
    let keys = secret.keys();
    let device = Uuid::now_v7();
    let client = HubClient::new(&hub, keys.account_id, keys.login.clone(), Some(device))?;
    if create {
        client.create_account().await?;
    }
    client.register_device(device).await?;
    let (store, dir, secret) = (store.clone(), key_dir.to_path_buf(), secret.clone());
    let account = keys.account_id;
    let device_name = name.clone();
    blocking::run(move || {
        keystore::save(&dir, account, device, &secret)?;
        let now = store.now();
        store.write(Some(Change::Visits), |tx| {
            tx.prepare_cached(
                r#"INSERT INTO sync_link (singleton, hub, account_id, device_id, device_name, linked_at)
                   VALUES (1, :hub, :a, :d, :n, :now)"#,
            )?
            .execute(named_params! {
                ":hub": hub, ":a": account.as_bytes().as_slice(), ":d": device.as_bytes().as_slice(),
                ":n": device_name, ":now": now,
            })?;
            // Names are the device's own, like any other change (its own row is written here).
            let op = Op::Device {
                name: device_name.clone(),
            };
            let hlc = local::queue_in(tx, &op)?.map_or(0, |(hlc, _)| hlc);
            apply::set_device_name_in(tx, device, &device_name, hlc)?;
            queue_state_in(tx)?;
            Ok(())
        })
    })
    .await?;
    Ok(Linked {
        account_id: account,
        device_id: device,
        device_name: name,
    })
}

/// What this device knew before it was linked, other than its visits (queued in batches by
/// [`backfill_step`]): the user's and the AI's categories, the never-record list, the exclusions, the
/// limits and goals, the forgotten
/// time ranges and the forgotten websites (known here only by their domain's SHA-256, which is
/// what is sent: the other devices forget the website whose domain has it).
fn queue_state_in(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let categories: Vec<(String, String, String)> = tx
        .prepare(
            r#"SELECT domain, category, category_source FROM website
               WHERE category_source IN ('user', 'ai') AND category IS NOT NULL"#,
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (domain, category, source) in categories {
        let key = if source == "user" {
            local::user_key(&domain)
        } else {
            local::ai_key(&domain)
        };
        let value = category.clone();
        local::queue_register_in(
            tx,
            &key,
            Some(&value),
            &Op::Category {
                domain,
                category,
                source,
            },
        )?;
    }
    let blocked: Vec<String> = tx
        .prepare(r#"SELECT domain FROM blocked_domain"#)?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for domain in blocked {
        local::queue_register_in(
            tx,
            &local::block_key(&domain),
            Some(local::flag(true)),
            &Op::Block {
                domain,
                blocked: true,
            },
        )?;
    }
    for e in crate::exclusions::list_in(tx)? {
        local::queue_register_in(
            tx,
            &local::exclude_key(&e.pattern),
            Some(local::flag(true)),
            &Op::Exclude {
                pattern: e.pattern,
                excluded: true,
            },
        )?;
    }
    crate::limits::queue_all_in(tx)?;
    let ranges: Vec<(i64, i64)> = tx
        .prepare(r#"SELECT since, until FROM tombstone WHERE kind = 'range'"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (since, until) in ranges {
        local::queue_in(tx, &Op::ForgetRange { since, until })?;
    }
    // This device's own website forgettings (those from other devices carry a clock).
    let websites: Vec<(Vec<u8>, i64)> = tx
        .prepare(
            r#"SELECT domain_sha256, forgotten_at FROM tombstone
               WHERE kind = 'website' AND domain_sha256 IS NOT NULL AND sync_hlc IS NULL"#,
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (hash, at) in websites {
        let domain_sha256 = hash.iter().map(|b| format!("{b:02x}")).collect();
        local::queue_in(tx, &Op::ForgetWebsiteHash { domain_sha256, at })?;
    }
    Ok(())
}

/// Queues the next batch of this device's own visits recorded before the link; true when all
/// are queued.
fn backfill_step(store: &Store) -> Result<bool> {
    store.write(None, |tx| {
        let (done, after): (bool, Option<VisitId>) = tx
            .prepare_cached(r#"SELECT backfill_done, backfill_after FROM sync_link"#)?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if done {
            return Ok(true);
        }
        let linked_at: Timestamp = tx.query_row(r#"SELECT linked_at FROM sync_link"#, [], |r| r.get(0))?;
        let hlc = local::next_hlc(0, linked_at.as_micros() / 1000);
        // Visits recorded since the link were queued as they were recorded, with their clock
        // (`sync_hlc`): only those without one are this device's from before.
        let rows: Vec<(VisitId, String)> = tx
            .prepare_cached(
                r#"SELECT v.id, json_object('t', 'visit', 'id', lower(hex(v.id)), 'url', v.url,
                                            'title', v.title, 'at', v.visited_at, 'source', v.source,
                                            'active_ms', t.active_ms, 'estimated_ms', t.estimated_ms)
                   FROM visit v LEFT JOIN visit_time t ON t.visit_id = v.id
                   WHERE v.device_id IS NULL AND v.sync_hlc IS NULL AND v.id > coalesce(:after, x'')
                   ORDER BY v.id LIMIT :n"#,
            )?
            .query_map(
                named_params! {
                    ":after": after,
                    ":n": BACKFILL_BATCH as i64,
                },
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut insert = tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:h, :op)"#)?;
        for (id, op) in &rows {
            insert.execute(named_params! { ":h": hlc, ":op": op })?;
            // The same clock here as on the devices that receive it.
            local::set_visit_hlc_in(tx, *id, hlc)?;
        }
        let done = rows.len() < BACKFILL_BATCH;
        tx.prepare_cached(r#"UPDATE sync_link SET backfill_after = :a, backfill_done = :d"#)?
            .execute(named_params! { ":a": rows.last().map(|r| r.0).or(after), ":d": done })?;
        Ok(done)
    })
}

/// Creates an account on the hub at `hub` and links this device to it (the first device).
/// Returns the link and the recovery key, to show the user once.
pub async fn setup(store: &Store, key_dir: &Path, hub: &str, name: Option<&str>) -> Result<(Linked, String)> {
    let secret = AccountSecret::generate();
    let linked = link(store, key_dir, hub, name, &secret, true).await?;
    Ok((linked, secret.recovery_key()))
}

/// Links this device to the account `recovery_key` opens on the hub at `hub`.
pub async fn join(
    store: &Store,
    key_dir: &Path,
    hub: &str,
    name: Option<&str>,
    recovery_key: &str,
) -> Result<Linked> {
    let secret = AccountSecret::from_recovery_key(recovery_key).map_err(|e| Error::Sync {
        kind: ErrorKind::NeedsUser,
        message: format!("{e}; nothing was changed"),
    })?;
    link(store, key_dir, hub, name, &secret, false).await
}

/// A linked device's link, keys and client, for one sync or one claim.
pub(crate) struct Session {
    pub(crate) link: Link,
    pub(crate) keys: AccountKeys,
    pub(crate) client: HubClient,
}

pub(crate) async fn session(store: &Store, key_dir: &Path) -> Result<Session> {
    let (store, dir) = (store.clone(), key_dir.to_path_buf());
    let (link, secret) = blocking::run(move || {
        let link = store.with_conn(get_link)?.ok_or_else(not_linked)?;
        let secret = keystore::load(&dir, link.account_id, link.device_id)?;
        Ok((link, secret))
    })
    .await?;
    let keys = secret.keys();
    if keys.account_id != link.account_id {
        return Err(Error::Sync {
            kind: ErrorKind::NeedsUser,
            message: "this device's sync key is not the key of its account; run `sitetrail sync leave`, then join again".into(),
        });
    }
    let client = HubClient::new(
        &link.hub,
        link.account_id,
        keys.login.clone(),
        Some(link.device_id),
    )?;
    Ok(Session { link, keys, client })
}

/// This device leaves the account: the hub is told (if it can be reached; else `force` leaves
/// anyway), the link, the waiting records and the key (its keyring entry and file) are deleted. The history stays.
pub async fn leave(store: &Store, key_dir: &Path, force: bool) -> Result<Link> {
    let s = session(store, key_dir).await;
    let link = match s {
        Ok(s) => {
            match s.client.leave(s.link.device_id).await {
                Ok(()) => {}
                Err(e) if force => tracing::warn!(error = %e, "leaving without telling the hub"),
                Err(e) => return Err(e),
            }
            s.link
        }
        Err(e) if force || e.kind() == ErrorKind::NeedsUser => {
            let store = store.clone();
            blocking::run(move || store.with_conn(get_link)).await?.ok_or(e)?
        }
        Err(e) => return Err(e),
    };
    let (store, dir, l) = (store.clone(), key_dir.to_path_buf(), link.clone());
    blocking::run(move || {
        store.write(None, |tx| {
            for table in [
                "sync_link",
                "sync_op",
                "sync_sealed",
                "sync_applied",
                "sync_register",
                "sync_device",
            ] {
                tx.execute(&format!("DELETE FROM {table}"), [])?;
            }
            Ok(())
        })?;
        keystore::delete(&dir, l.account_id, l.device_id)
    })
    .await?;
    Ok(link)
}

/// What one sync did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    /// Records pushed (acknowledged by the hub).
    pub pushed: u64,
    /// Records pulled and applied.
    pub pulled: u64,
    /// Visits added from other devices.
    pub visits: u64,
    /// Operations still waiting to be pushed.
    pub pending: u64,
}

/// Seals waiting operations into one record; false if none were waiting.
fn seal_one(store: &Store, keys: &AccountKeys, device: Uuid) -> Result<bool> {
    let series = series();
    store.write(None, |tx| {
        let mut n = OPS_PER_RECORD;
        let ops: Vec<(i64, i64, String)> = tx
            .prepare_cached(r#"SELECT seq, hlc, op FROM sync_op ORDER BY seq LIMIT :n"#)?
            .query_map(named_params! { ":n": n as i64 }, |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        if ops.is_empty() {
            return Ok(false);
        }
        let pairs: Vec<(i64, String)> = ops.iter().map(|(_, h, o)| (*h, o.clone())).collect();
        n = n.min(pairs.len());
        let mut packed = ops::pack(&pairs[..n]);
        while packed.len() > MAX_PACKED_BYTES && n > 1 {
            n /= 2;
            packed = ops::pack(&pairs[..n]);
        }
        if packed.len() > MAX_PACKED_BYTES {
            // One operation too large to send (a title is capped, so this is damage): dropped,
            // said in the log.
            tracing::warn!(bytes = packed.len(), "an operation too large to sync was dropped");
        }
        let idx: i64 = tx.query_row(r#"SELECT next_idx FROM sync_link"#, [], |r| r.get(0))?;
        let record_id = Uuid::now_v7();
        let place = Place {
            device_id: device,
            series: &series,
            idx: u64::try_from(idx).unwrap_or(0),
            record_id,
        };
        let last_seq = ops[n - 1].0;
        if packed.len() <= MAX_PACKED_BYTES {
            let payload = keys.seal(&place, &packed);
            tx.prepare_cached(
                r#"INSERT INTO sync_sealed (idx, record_id, payload, ops) VALUES (:i, :r, :p, :n)"#,
            )?
            .execute(named_params! {
                ":i": idx, ":r": record_id.as_bytes().as_slice(), ":p": payload, ":n": n as i64,
            })?;
            tx.prepare_cached(r#"UPDATE sync_link SET next_idx = next_idx + 1"#)?
                .execute([])?;
        }
        tx.prepare_cached(r#"DELETE FROM sync_op WHERE seq <= :s"#)?
            .execute(named_params! { ":s": last_seq })?;
        Ok(true)
    })
}

type Sealed = (i64, Vec<u8>, Vec<u8>);

fn list_sealed(store: &Store) -> Result<Vec<Sealed>> {
    store.with_conn(|c| {
        let mut bytes = 0usize;
        let mut out = Vec::new();
        let mut stmt =
            c.prepare_cached(r#"SELECT idx, record_id, payload FROM sync_sealed ORDER BY idx LIMIT :n"#)?;
        let mut rows = stmt.query(named_params! { ":n": wire::limits::MAX_RECORDS_PER_PUSH as i64 })?;
        while let Some(r) = rows.next()? {
            let payload: Vec<u8> = r.get(2)?;
            bytes += payload.len();
            if bytes > wire::limits::MAX_PUSH_PAYLOAD_BYTES - wire::limits::MAX_RECORD_BYTES
                && !out.is_empty()
            {
                break;
            }
            out.push((r.get(0)?, r.get(1)?, payload));
        }
        Ok(out)
    })
}

/// Pending operations and sealed records not yet acknowledged.
pub fn pending(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row(
        r#"SELECT (SELECT count(*) FROM sync_op) + coalesce((SELECT sum(ops) FROM sync_sealed), 0)"#,
        [],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

async fn push(s: &Session, store: &Store) -> Result<u64> {
    let mut pushed = 0;
    loop {
        // Seal everything waiting first, so records stay in order and full.
        loop {
            let (st, keys, device) = (store.clone(), s.keys.clone(), s.link.device_id);
            if !blocking::run(move || seal_one(&st, &keys, device)).await? {
                break;
            }
        }
        let st = store.clone();
        let batch = blocking::run(move || list_sealed(&st)).await?;
        if batch.is_empty() {
            return Ok(pushed);
        }
        let records = batch
            .iter()
            .map(|(idx, id, payload)| wire::Record {
                record_id: Uuid::from_slice(id).unwrap_or_default(),
                device_id: s.link.device_id,
                series: series(),
                idx: u64::try_from(*idx).unwrap_or(0),
                payload: wire::Payload(payload.clone()),
            })
            .collect();
        let results = s.client.push(records).await?;
        let mut acked = Vec::new();
        for (r, (idx, _, _)) in results.iter().zip(&batch) {
            if r.status.is_acknowledged() {
                acked.push(*idx);
            } else {
                return Err(Error::Sync {
                    kind: ErrorKind::Conflict,
                    message: format!(
                        "the hub holds other records of this device than this database (record {} is a {:?}); was the database restored from a copy? Run `sitetrail sync leave`, then join again",
                        idx, r.status
                    ),
                });
            }
        }
        pushed += acked.len() as u64;
        let st = store.clone();
        blocking::run(move || {
            st.write(None, |tx| {
                let mut del = tx.prepare_cached(r#"DELETE FROM sync_sealed WHERE idx = :i"#)?;
                for i in &acked {
                    del.execute(named_params! { ":i": i })?;
                }
                Ok(())
            })
        })
        .await?;
    }
}

fn applied_idx(conn: &Connection, device: Uuid) -> Result<u64> {
    let n: Option<i64> = conn
        .prepare_cached(r#"SELECT last_idx FROM sync_applied WHERE device_id = :d AND series = :s"#)?
        .query_row(
            named_params! { ":d": device.as_bytes().as_slice(), ":s": SERIES },
            |r| r.get(0),
        )
        .optional()?;
    Ok(n.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn tampered(device: Uuid, idx: u64) -> Error {
    Error::Sync {
        kind: ErrorKind::Conflict,
        message: format!(
            "record {idx} of device {device} on the hub was changed or moved (it does not open with this account's key): it was not applied, and nothing after it is"
        ),
    }
}

/// Applies one opened record and moves past it, in one transaction.
fn apply_record(
    store: &Store,
    conn: &mut Connection,
    device: Uuid,
    idx: u64,
    stamped: &[ops::Stamped],
) -> Result<apply::Applied> {
    let now = store.now();
    store.write_on(conn, crate::forget::forgetting(), |tx| {
        // Applied already (another process of this device got here first): nothing to do.
        if applied_idx(tx, device)? >= idx {
            return Ok(apply::Applied::default());
        }
        let applied = apply::apply_in(tx, device, stamped, now)?;
        tx.prepare_cached(
            r#"INSERT INTO sync_applied (device_id, series, last_idx) VALUES (:d, :s, :i)
               ON CONFLICT (device_id, series) DO UPDATE SET last_idx = excluded.last_idx"#,
        )?
        .execute(named_params! { ":d": device.as_bytes().as_slice(), ":s": SERIES, ":i": idx as i64 })?;
        Ok(applied)
    })
}

async fn pull(s: &Session, store: &Store, report: &mut SyncReport) -> Result<()> {
    let heads = s.client.index().await?;
    let series = series();
    for head in heads {
        if head.device_id == s.link.device_id || head.series != series {
            continue;
        }
        let (st, d) = (store.clone(), head.device_id);
        let mut after = blocking::run(move || st.with_conn(|c| applied_idx(c, d))).await?;
        while after < head.last_idx {
            let page = s
                .client
                .page(head.device_id, &series, after, PAGE_RECORDS)
                .await?;
            if page.records.is_empty() {
                break;
            }
            let mut opened = Vec::with_capacity(page.records.len());
            for stored in &page.records {
                let r = &stored.record;
                let expected = after + opened.len() as u64 + 1;
                if r.device_id != head.device_id || r.series != series || r.idx != expected {
                    return Err(tampered(head.device_id, expected));
                }
                let place = Place {
                    device_id: r.device_id,
                    series: &series,
                    idx: r.idx,
                    record_id: r.record_id,
                };
                let plain = s
                    .keys
                    .open(&place, &r.payload.0)
                    .map_err(|_| tampered(r.device_id, r.idx))?;
                let stamped = ops::unpack(&plain).map_err(|_| tampered(r.device_id, r.idx))?;
                opened.push((r.idx, stamped));
            }
            let st = store.clone();
            let device = head.device_id;
            let count = opened.len() as u64;
            let (visits, forgetting_left) = blocking::run(move || {
                let mut conn = crate::forget::open_connection(&st)?;
                let (mut visits, mut left) = (0, false);
                for (idx, stamped) in &opened {
                    let a = apply_record(&st, &mut conn, device, *idx, stamped)?;
                    visits += a.visits;
                    left |= a.forgetting_left;
                }
                Ok((visits, left))
            })
            .await?;
            if forgetting_left {
                let st = store.clone();
                blocking::run(move || {
                    st.resume_forgetting(&crate::forget::ForgetOptions::default(), &mut |_| {})
                        .map(|_| ())
                })
                .await?;
            }
            after += count;
            report.pulled += count;
            report.visits += visits;
            if !page.more && after < head.last_idx {
                // The index said more; the page says no more yet: next sync.
                break;
            }
        }
    }
    Ok(())
}

fn note_result(store: &Store, result: &Result<SyncReport>) -> Result<()> {
    let now = store.now();
    store.write(None, |tx| {
        match result {
            Ok(_) => tx.execute(
                r#"UPDATE sync_link SET last_sync_at = :now, last_error = NULL"#,
                named_params! { ":now": now },
            )?,
            Err(e) => tx.execute(
                r#"UPDATE sync_link SET last_error = :e"#,
                named_params! { ":e": crate::error::truncate_chars(&e.to_string(), 500) },
            )?,
        };
        Ok(())
    })
}

/// One sync: queue what was here before the link (in batches), push everything waiting, pull
/// and apply what the other devices pushed. The outcome is noted for `sync status`.
pub async fn sync_now(store: &Store, key_dir: &Path) -> Result<SyncReport> {
    let s = session(store, key_dir).await?;
    let result = async {
        loop {
            let st = store.clone();
            if blocking::run(move || backfill_step(&st)).await? {
                break;
            }
        }
        let mut report = SyncReport {
            pushed: push(&s, store).await?,
            ..SyncReport::default()
        };
        pull(&s, store, &mut report).await?;
        let st = store.clone();
        report.pending = blocking::run(move || st.with_conn(pending)).await?;
        Ok(report)
    }
    .await;
    let st = store.clone();
    let noted = blocking::run(move || {
        note_result(&st, &result)?;
        Ok(result)
    })
    .await?;
    noted
}

/// How many records of the other devices' series this device has applied (the count the hub's
/// long-poll compares).
fn applied_total(conn: &Connection, me: Uuid) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(
            r#"SELECT coalesce(sum(last_idx), 0) FROM sync_applied WHERE series = :s AND device_id <> :me"#,
        )?
        .query_row(
            named_params! { ":s": SERIES, ":me": me.as_bytes().as_slice() },
            |r| r.get(0),
        )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// What a long-poll found: whether the other devices hold records this one has not applied, and
/// how many this one had applied when it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waited {
    /// True if a pull would bring something.
    pub more: bool,
    /// This device's count of the others' records when it asked.
    pub seen: u64,
}

/// Long-polls the hub for the other devices' records (`GET /v1/index/wait`), keeping its session
/// (the key, and the HTTP client with its open connection) from one wait to the next while the
/// link stays the same: a device waits every 25 s, and a new client each time would be a new
/// connection (and TLS handshake) each time.
#[derive(Default)]
pub struct Waiter {
    session: Option<Session>,
}

impl Waiter {
    /// A waiter with no session yet.
    pub fn new() -> Waiter {
        Waiter::default()
    }

    /// Waits on the hub (a long-poll of at most `wait`) until the other devices' records add up
    /// to more than this one has applied; `None` at once when this device is not linked. Holds
    /// no database connection while it waits. A failure drops the session, so the next wait
    /// builds it again (a key that moved, a hub that changed).
    pub async fn wait(&mut self, store: &Store, key_dir: &Path, wait: Duration) -> Result<Option<Waited>> {
        let r = self.wait_once(store, key_dir, wait).await;
        if !matches!(r, Ok(Some(_))) {
            self.session = None;
        }
        r
    }

    async fn wait_once(&mut self, store: &Store, key_dir: &Path, wait: Duration) -> Result<Option<Waited>> {
        // The link and what this device has applied, in one read.
        let st = store.clone();
        let read = blocking::run(move || {
            st.with_conn(|c| {
                Ok(match get_link(c)? {
                    Some(link) => {
                        let seen = applied_total(c, link.device_id)?;
                        Some((link, seen))
                    }
                    None => None,
                })
            })
        })
        .await?;
        let Some((link, seen)) = read else {
            return Ok(None);
        };
        let same = |s: &Session| {
            (&s.link.hub, s.link.account_id, s.link.device_id) == (&link.hub, link.account_id, link.device_id)
        };
        let s = match self.session.take() {
            Some(s) if same(&s) => s,
            _ => session(store, key_dir).await?,
        };
        let s = self.session.insert(s);
        let series = series();
        let heads = s.client.wait_index(&series, seen, wait).await?;
        let others = wire::records_of_others(&heads, Some(link.device_id), &series);
        Ok(Some(Waited {
            more: others > seen,
            seen,
        }))
    }
}

/// A device of the account, as `sync status` and `sync devices` show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeviceRow {
    /// Its id.
    pub device_id: Uuid,
    /// Its name (as it last told the others).
    pub name: Option<String>,
    /// This device.
    pub this_device: bool,
    /// When it registered with the hub (only from the hub).
    pub created_at: Option<Timestamp>,
    /// When the hub last heard from it (only from the hub).
    pub last_seen_at: Option<Timestamp>,
    /// When it left, if it did.
    pub left_at: Option<Timestamp>,
}

/// The state of sync on this device, from the database alone.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SyncStatus {
    /// The link (None: not linked).
    pub link: Option<Link>,
    /// Operations waiting to be pushed.
    pub pending: u64,
    /// The devices this one has heard of.
    pub devices: Vec<DeviceRow>,
}

fn known_devices(conn: &Connection, me: Option<Uuid>) -> Result<Vec<DeviceRow>> {
    let rows: Vec<(Vec<u8>, String)> = conn
        .prepare_cached(r#"SELECT device_id, name FROM sync_device ORDER BY name"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, name)| Uuid::from_slice(&id).ok().map(|id| (id, name)))
        .map(|(device_id, name)| DeviceRow {
            device_id,
            name: Some(name),
            this_device: Some(device_id) == me,
            created_at: None,
            last_seen_at: None,
            left_at: None,
        })
        .collect())
}

/// Sync's state on this device.
pub fn status(conn: &Connection) -> Result<SyncStatus> {
    let link = get_link(conn)?;
    Ok(SyncStatus {
        pending: if link.is_some() { pending(conn)? } else { 0 },
        devices: known_devices(conn, link.as_ref().map(|l| l.device_id))?,
        link,
    })
}

fn millis(ms: i64) -> Timestamp {
    Timestamp(ms.saturating_mul(1000))
}

/// The account's devices as the hub knows them, with the names they gave.
pub async fn devices(store: &Store, key_dir: &Path) -> Result<Vec<DeviceRow>> {
    let s = session(store, key_dir).await?;
    let on_hub = s.client.devices().await?;
    let st = store.clone();
    let me = s.link.device_id;
    let known = blocking::run(move || st.with_conn(|c| known_devices(c, Some(me)))).await?;
    Ok(on_hub
        .into_iter()
        .map(|d| DeviceRow {
            device_id: d.device_id,
            name: known
                .iter()
                .find(|k| k.device_id == d.device_id)
                .and_then(|k| k.name.clone()),
            this_device: d.device_id == me,
            created_at: Some(millis(d.created_at_ms)),
            last_seen_at: Some(millis(d.last_seen_at_ms)),
            left_at: d.left_at_ms.map(millis),
        })
        .collect())
}

/// Where the key of the device linked as `link` is kept (None: nowhere; see
/// [`keystore::locate`]). It blocks (a file, a keyring call).
pub fn key_place(key_dir: &Path, link: &Link) -> Result<Option<keystore::KeyPlace>> {
    keystore::locate(key_dir, link.account_id, link.device_id)
}

/// The key folder for a settings path (see [`keystore::key_dir`]).
pub fn key_dir(settings: Option<&Path>) -> Result<PathBuf> {
    keystore::key_dir(settings)
}
