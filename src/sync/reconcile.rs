//! What this device holds, queued again for the account whenever it is linked (setup, join, or
//! a heal after a restore): the account may lack any of it — changes queued when the device
//! left, changes made while it was not linked, records pushed to a hub that lost them. So a link
//! sends everything: its own visits with their times and titles, the user's and the AI's
//! categories, the never-record list, the exclusions, and every forgetting (visits by id, time
//! ranges, websites). The receivers keep each thing once (a visit by its id, a forgetting by
//! what it covers, a setting by its clock), so sending what they already hold costs bytes, not
//! state.
//!
//! Each thing goes with the clock it had where it has one (a visit's `sync_hlc`, a setting's
//! winning clock in `sync_register`, a website forgetting's `sync_hlc`): sent again, it never
//! wins over a newer change made elsewhere meanwhile, and a website forgotten elsewhere after a
//! visit still takes it. A setting whose value here is not the one its clock was written with
//! changed while this device was not linked: that change is newer than anything this device
//! knew, and gets a fresh clock ([`resend`]).

use std::collections::{BTreeMap, HashMap};

use rusqlite::{named_params, OptionalExtension, Transaction};

use crate::error::Result;
use crate::ids::VisitId;
use crate::store::Store;
use crate::sync_log::local;
use crate::sync_log::ops::Op;
use crate::time::Timestamp;

/// Visits queued per transaction when queueing this device's own visits.
const BACKFILL_BATCH: usize = 5_000;
/// Visit ids per queued forgetting of visits.
const FORGOTTEN_IDS_PER_OP: usize = 1_000;

/// How a setting held here is sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resend {
    /// With the clock it was written with (the value here is the one that clock won with, or
    /// the value is not known here).
    Held(i64),
    /// With a fresh clock: the value here changed while the device was not linked (or was never
    /// synced).
    Fresh,
    /// Not at all: nothing is known of it.
    Not,
}

/// How a setting is sent again: `held` is its register (clock and value) if this database ever
/// synced it, `here` the value it has here now (`None`: not known here, as a category of a
/// website forgotten here).
pub(crate) fn resend(held: Option<(i64, Option<&str>)>, here: Option<&str>) -> Resend {
    match (held, here) {
        (Some((hlc, value)), Some(now)) if value == Some(now) => Resend::Held(hlc),
        (Some(_) | None, Some(_)) => Resend::Fresh,
        (Some((hlc, _)), None) => Resend::Held(hlc),
        (None, None) => Resend::Not,
    }
}

/// The operation that sets register `key` to `value` (`None` for a key that is not a setting).
fn setting_op(key: &str, value: &str) -> Option<Op> {
    if key == crate::focus::FOCUS_KEY {
        // Its value is the operation that wrote it.
        return serde_json::from_str(value)
            .ok()
            .filter(|op| matches!(op, Op::Focus { .. }));
    }
    let (kind, name) = key.split_once(':')?;
    let name = name.to_owned();
    Some(match kind {
        "user" | "ai" => Op::Category {
            domain: name,
            category: value.to_owned(),
            source: kind.to_owned(),
        },
        "block" => Op::Block {
            domain: name,
            blocked: value == local::flag(true),
        },
        "exclude" => Op::Exclude {
            pattern: name,
            excluded: value == local::flag(true),
        },
        _ => return None,
    })
}

/// Queues `op` with the clock `hlc` it was first made with.
pub(crate) fn queue_held_in(tx: &Transaction<'_>, hlc: i64, op: &Op) -> Result<()> {
    tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:h, :op)"#)?
        .execute(named_params! { ":h": hlc, ":op": op.to_json() })?;
    Ok(())
}

/// Moves this device's clock past every clock the database holds (from an earlier link), so a
/// change made from now on beats what is sent again with its old clock.
pub(crate) fn raise_clock_in(tx: &Transaction<'_>) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE sync_link SET hlc = max(hlc,
               coalesce((SELECT max(hlc) FROM sync_register), 0),
               coalesce((SELECT max(sync_hlc) FROM tombstone), 0),
               coalesce((SELECT max(sync_hlc) FROM visit), 0))"#,
    )?
    .execute([])?;
    Ok(())
}

/// Which visits a link sends the account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Visits {
    /// This device's own (a join, a heal: the account holds the others' already).
    Own,
    /// Every visit it holds, other devices' included: the account is founded anew from this
    /// device (a rotation of the recovery key), and a visit whose device is lost, or that a
    /// restored database got back from its old series, would reach the new account from no one
    /// else.
    All,
}

/// Queues everything this device holds for the account: its settings and every forgetting now,
/// its visits (`visits`) from the next sync on, in batches ([`backfill_step`]): those without a
/// clock or with a clock below `before` (the clock of the link: later ones were queued as they
/// were made). A backfill of every visit not finished yet stays one (a heal during the first
/// sync after a rotation).
pub(crate) fn queue_everything_in(tx: &Transaction<'_>, before: i64, visits: Visits) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE sync_link SET backfill_before = :b, backfill_after = NULL,
                  backfill_others = (backfill_others AND NOT backfill_done) OR :all,
                  backfill_done = 0"#,
    )?
    .execute(named_params! { ":b": before, ":all": visits == Visits::All })?;
    queue_settings_in(tx)?;
    queue_titles_of_others_in(tx)?;
    // Limits and goals (their own registers, `limits::Version`): sent with the clocks they hold.
    crate::limits::queue_all_in(tx)?;
    queue_forgetting_in(tx)
}

/// The user's and the AI's categories, the never-record list, the exclusions and the focus
/// session.
fn queue_settings_in(tx: &Transaction<'_>) -> Result<()> {
    let held: HashMap<String, (i64, Option<String>)> = tx
        .prepare(r#"SELECT key, hlc, value FROM sync_register WHERE key NOT LIKE 'title:%'"#)?
        .query_map([], |r| Ok((r.get("key")?, (r.get("hlc")?, r.get("value")?))))?
        .collect::<rusqlite::Result<_>>()?;
    // The value of every setting here; the never-record list and the exclusions are on/off, so
    // a key held but not listed here is off.
    let mut here: BTreeMap<String, String> = BTreeMap::new();
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
        here.insert(key, category);
    }
    let blocked: Vec<String> = tx
        .prepare(r#"SELECT domain FROM blocked_domain"#)?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for domain in blocked {
        here.insert(local::block_key(&domain), local::flag(true).to_owned());
    }
    for e in crate::exclusions::list_in(tx)? {
        here.insert(local::exclude_key(&e.pattern), local::flag(true).to_owned());
    }
    if let Some(focus) = crate::focus::register_value_in(tx)? {
        here.insert(crate::focus::FOCUS_KEY.to_owned(), focus);
    }
    for key in held.keys() {
        if key.starts_with("block:") || key.starts_with("exclude:") {
            here.entry(key.clone())
                .or_insert_with(|| local::flag(false).to_owned());
        }
    }
    let mut keys: Vec<&String> = here.keys().chain(held.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let reg = held.get(key);
        let now = here.get(key).map(String::as_str);
        match resend(reg.map(|(h, v)| (*h, v.as_deref())), now) {
            Resend::Held(hlc) => {
                let value = reg.and_then(|(_, v)| v.as_deref());
                if let Some(op) = value.and_then(|v| setting_op(key, v)) {
                    queue_held_in(tx, hlc, &op)?;
                }
            }
            Resend::Fresh => {
                if let Some((value, op)) = now.and_then(|v| Some((v, setting_op(key, v)?))) {
                    local::queue_register_in(tx, key, Some(value), &op)?;
                }
            }
            Resend::Not => {}
        }
    }
    Ok(())
}

/// Every forgetting: time ranges, websites (known here only by their domain's SHA-256, which is
/// what is sent: the others forget the website whose domain has it) and visits by id.
fn queue_forgetting_in(tx: &Transaction<'_>) -> Result<()> {
    let ranges: Vec<(i64, i64)> = tx
        .prepare(r#"SELECT since, until FROM tombstone WHERE kind = 'range'"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (since, until) in ranges {
        local::queue_in(tx, &Op::ForgetRange { since, until })?;
    }
    let websites: Vec<(Vec<u8>, i64, Option<i64>)> = tx
        .prepare(
            r#"SELECT domain_sha256, forgotten_at, sync_hlc FROM tombstone
               WHERE kind = 'website' AND domain_sha256 IS NOT NULL"#,
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (hash, at, hlc) in websites {
        let domain_sha256 = hash.iter().map(|b| format!("{b:02x}")).collect();
        let op = Op::ForgetWebsiteHash { domain_sha256, at };
        // The stamp it has here (`conflict::tombstone_stamp`: the clock it was synced with, or,
        // from before any link, the stamp of its time), so every device orders the visits
        // recorded around it as this one does, whatever its wall clock says.
        queue_held_in(tx, crate::sync_log::conflict::tombstone_stamp(hlc, at), &op)?;
    }
    let visits: Vec<VisitId> = tx
        .prepare(r#"SELECT visit_id FROM tombstone WHERE kind = 'visit' AND visit_id IS NOT NULL"#)?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for ids in visits.chunks(FORGOTTEN_IDS_PER_OP) {
        local::queue_in(tx, &Op::ForgetVisits { ids: ids.to_vec() })?;
    }
    Ok(())
}

/// Queues the next batch of the visits that the account may lack (see [`queue_everything_in`]):
/// this device's own, and after a rotation every visit it holds; true when all are queued. A
/// visit never sent gets the clock of the link; one sent before keeps its clock and also sends
/// its title and times (the account may hold the visit, and the receivers skip a visit they
/// hold, not a title or a time). Another device's visit goes by the id every device knows it by;
/// its title, where this device holds a register of it, went with the registers
/// ([`queue_titles_of_others_in`]).
pub(crate) fn backfill_step(store: &Store) -> Result<bool> {
    store.write(None, |tx| {
        type Link = (bool, Option<VisitId>, Option<i64>, Timestamp, bool);
        let (done, after, before, linked_at, others): Link = tx
            .prepare_cached(
                r#"SELECT backfill_done, backfill_after, backfill_before, linked_at, backfill_others
                   FROM sync_link"#,
            )?
            .query_row([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?;
        if done {
            return Ok(true);
        }
        let fresh = local::next_hlc(0, linked_at.as_micros() / 1000);
        struct Row {
            id: VisitId,
            global: VisitId,
            own: bool,
            hlc: Option<i64>,
            op: String,
            title: Option<String>,
            active_ms: Option<i64>,
            estimated_ms: Option<i64>,
        }
        let rows: Vec<Row> = tx
            .prepare_cached(
                r#"SELECT v.id, coalesce(v.sync_id, v.id) AS global, v.device_id IS NULL AS own,
                          v.sync_hlc, v.title, t.active_ms, t.estimated_ms,
                          json_object('t', 'visit', 'id', lower(hex(coalesce(v.sync_id, v.id))),
                                      'url', v.url, 'title', v.title, 'at', v.visited_at,
                                      'source', v.source, 'active_ms', t.active_ms,
                                      'estimated_ms', t.estimated_ms) AS op
                   FROM visit v LEFT JOIN visit_time t ON t.visit_id = v.id
                   WHERE (v.device_id IS NULL OR :others)
                     AND (v.sync_hlc IS NULL OR v.sync_hlc < :before)
                     AND v.id > coalesce(:after, x'')
                   ORDER BY v.id LIMIT :n"#,
            )?
            .query_map(
                named_params! {
                    ":after": after,
                    ":before": before,
                    ":others": others,
                    ":n": BACKFILL_BATCH as i64,
                },
                |r| {
                    Ok(Row {
                        id: r.get("id")?,
                        global: r.get("global")?,
                        own: r.get("own")?,
                        hlc: r.get("sync_hlc")?,
                        op: r.get("op")?,
                        title: r.get("title")?,
                        active_ms: r.get("active_ms")?,
                        estimated_ms: r.get("estimated_ms")?,
                    })
                },
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut insert = tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:h, :op)"#)?;
        for row in &rows {
            let Some(hlc) = row.hlc else {
                insert.execute(named_params! { ":h": fresh, ":op": row.op })?;
                // The same clock here as on the devices that receive it.
                local::set_visit_hlc_in(tx, row.id, fresh)?;
                continue;
            };
            insert.execute(named_params! { ":h": hlc, ":op": row.op })?;
            if row.own {
                queue_title_in(tx, row.id, hlc, row.title.as_deref())?;
            }
            if let Some(ms) = row.active_ms {
                queue_held_in(tx, hlc, &Op::ActiveTime { id: row.global, ms })?;
            }
            if let Some(ms) = row.estimated_ms {
                queue_held_in(tx, hlc, &Op::EstimatedTime { id: row.global, ms })?;
            }
        }
        let done = rows.len() < BACKFILL_BATCH;
        tx.prepare_cached(r#"UPDATE sync_link SET backfill_after = :a, backfill_done = :d"#)?
            .execute(named_params! { ":a": rows.last().map(|r| r.id).or(after), ":d": done })?;
        Ok(done)
    })
}

/// Queues again the titles this device holds registers of for other devices' visits (a retitle
/// made here, or applied here): with the clock the register holds, or fresh when the title here
/// changed while this device was not linked. Its own visits' titles go with them
/// ([`backfill_step`]).
fn queue_titles_of_others_in(tx: &Transaction<'_>) -> Result<()> {
    let held: Vec<(String, i64, Option<String>)> = tx
        .prepare(r#"SELECT key, hlc, value FROM sync_register WHERE key >= 'title:' AND key < 'title;'"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (key, hlc, value) in held {
        let Some(id) = key
            .strip_prefix("title:")
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
            .map(VisitId)
        else {
            continue;
        };
        let here: Option<(Option<String>, bool)> = match local::local_visit_id(tx, id)? {
            Some(v) => tx
                .prepare_cached(r#"SELECT title, device_id IS NULL FROM visit WHERE id = :v"#)?
                .query_row(named_params! { ":v": v }, |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?,
            None => None,
        };
        let title = match here {
            // Its own visit: sent with it.
            Some((_, true)) => continue,
            Some((title, false)) => title,
            // Not here (forgotten, or never arrived): as held.
            None => {
                queue_held_in(tx, hlc, &Op::Title { id, title: value })?;
                continue;
            }
        };
        let op = Op::Title {
            id,
            title: title.clone(),
        };
        if title == crate::visits::clean_title(value.as_deref()) {
            queue_held_in(tx, hlc, &op)?;
        } else {
            local::queue_register_in(tx, &key, title.as_deref(), &op)?;
        }
    }
    Ok(())
}

/// Queues the title of visit `id` (recorded with clock `visit_hlc`) again: with the clock its
/// title register holds when the title is the one it won with, fresh when the title changed
/// while this device was not linked, with the visit's clock when it was never changed.
fn queue_title_in(tx: &Transaction<'_>, id: VisitId, visit_hlc: i64, title: Option<&str>) -> Result<()> {
    let key = local::title_key(id);
    let held = local::get_register(tx, &key)?;
    let op = Op::Title {
        id,
        title: title.map(str::to_owned),
    };
    match (held, title) {
        (None, None) => Ok(()),
        (None, Some(_)) => {
            // Its register here too, as the devices receiving it will hold it: a retitle stamped
            // below the visit's clock (from a device whose clock is behind) then loses here as
            // it does there.
            let device: Option<Vec<u8>> = tx
                .prepare_cached(r#"SELECT device_id FROM sync_link"#)?
                .query_row([], |r| r.get(0))
                .optional()?;
            if let Some(device) = device.and_then(|d| uuid::Uuid::from_slice(&d).ok()) {
                local::offer_register_in(tx, &key, visit_hlc, device, title)?;
            }
            queue_held_in(tx, visit_hlc, &op)
        }
        (Some(held), _) => match resend(Some((held.hlc, held.value.as_deref())), title) {
            Resend::Fresh => local::queue_register_in(tx, &key, title, &op),
            _ => queue_held_in(tx, held.hlc, &op),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_goes_with_its_clock_unless_it_changed_while_not_linked() {
        // Unchanged since it synced: its clock, so a newer change elsewhere still wins.
        assert_eq!(resend(Some((7, Some("news"))), Some("news")), Resend::Held(7));
        // Changed here while not linked: newer than anything this device knew.
        assert_eq!(resend(Some((7, Some("news"))), Some("shopping")), Resend::Fresh);
        // Never synced: fresh, as at a first link.
        assert_eq!(resend(None, Some("news")), Resend::Fresh);
        // Held but not known here (a website forgotten here): as held.
        assert_eq!(resend(Some((7, Some("news"))), None), Resend::Held(7));
        assert_eq!(resend(None, None), Resend::Not);
    }

    #[test]
    fn each_kind_of_register_is_sent_as_its_own_operation() {
        assert_eq!(
            setting_op("user:a.example", "news"),
            Some(Op::Category {
                domain: "a.example".into(),
                category: "news".into(),
                source: "user".into()
            })
        );
        assert_eq!(
            setting_op("block:a.example", "0"),
            Some(Op::Block {
                domain: "a.example".into(),
                blocked: false
            })
        );
        assert_eq!(
            setting_op("exclude:*.corp.example", "1"),
            Some(Op::Exclude {
                pattern: "*.corp.example".into(),
                excluded: true
            })
        );
        assert_eq!(setting_op("title:x", "t"), None);
        assert_eq!(setting_op("nonsense", "t"), None);
    }
}
