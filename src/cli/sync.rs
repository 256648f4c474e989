//! `sitetrail sync setup|join|now|status|devices|leave|delete-account`: this device's link to a
//! hub, and the account on it.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use sitetrail::sync::client::{Transport, Trust, INSECURE_WARNING};
use sitetrail::sync::engine;
use sitetrail::sync::keystore::KeyPlace;
use sitetrail::{Error, ErrorKind, Result, Store};

use super::{human, out};

#[derive(Args, Debug)]
pub(crate) struct SyncArgs {
    #[command(subcommand)]
    command: SyncCommand,
}

#[derive(Args, Debug)]
struct LinkArgs {
    /// The hub's URL (e.g. https://hub.example.org).
    #[arg(long, env = "SITETRAIL_SYNC_HUB", value_name = "URL")]
    hub: String,
    /// This device's name, shown on the others [default: the host name].
    #[arg(long, value_name = "NAME")]
    device_name: Option<String>,
    /// Allow a plain http:// hub on another machine (the login then crosses the network in
    /// clear; said on every sync). Without it only https:// or this machine's own address
    /// (localhost, 127.0.0.0/8, ::1) is accepted.
    #[arg(long)]
    allow_insecure_http: bool,
    /// A PEM file of certificate authorities to trust for the hub besides the system's (a
    /// private CA that signed the hub's certificate); kept in the link for every later sync.
    #[arg(long, env = "SITETRAIL_SYNC_CA_FILE", value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct JsonArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct DevicesArgs {
    #[command(subcommand)]
    command: Option<DevicesCommand>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum DevicesCommand {
    /// Removes another device of the account (lost, wiped, reinstalled): it can push no more and
    /// no longer counts against the account's devices. Its changes stay on every device.
    Remove(RemoveArgs),
}

#[derive(Args, Debug)]
struct RemoveArgs {
    /// The device: its id, the start of its id (4 characters or more), or its exact name.
    #[arg(value_name = "ID|NAME")]
    device: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct LeaveArgs {
    /// Leave even if what this device queued cannot be sent first, or the hub cannot be told
    /// (the changes not sent stay only on this device until it joins again).
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct DeleteAccountArgs {
    /// Delete without asking (else: type the first 8 characters of the account's id).
    #[arg(long)]
    yes: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct RotateKeyArgs {
    /// Rotate without asking (else: type the first 8 characters of the account's id).
    #[arg(long)]
    yes: bool,
    /// Print JSON (with the new recovery key: keep the output safe).
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum SyncCommand {
    /// Creates an account on the hub and links this device to it; prints the recovery key once.
    Setup(LinkArgs),
    /// Links this device to an existing account and syncs once: reads the recovery key from
    /// standard input (or asks for it on a terminal; never from the command line).
    Join(LinkArgs),
    /// Pushes this device's changes and pulls the other devices' now.
    Now(JsonArgs),
    /// Says whether this device is linked, when it last synced and what waits to be pushed.
    Status(JsonArgs),
    /// Lists the account's devices, as the hub knows them (`devices remove ID|NAME` removes one).
    Devices(DevicesArgs),
    /// This device leaves the account, after sending what it queued (its history stays here;
    /// the others keep what it sent).
    Leave(LeaveArgs),
    /// Deletes the account on the hub, with everything of it there, for every device (asks
    /// first). The history on each device stays; this device's link and sync key are removed.
    DeleteAccount(DeleteAccountArgs),
    /// Makes a new recovery key and moves the account to it, so a lost or stolen device (or
    /// anyone holding the old key) reads nothing more: the account is founded anew from this
    /// device's history and the old one deleted on the hub (asks first). Prints the new key once;
    /// the other devices are told to join again with it, and lose nothing meanwhile.
    RotateKey(RotateKeyArgs),
}

impl LinkArgs {
    fn transport(&self) -> Result<Transport> {
        Ok(Transport {
            allow_insecure_http: self.allow_insecure_http,
            trust: Trust::load(self.ca_file.as_deref())?,
        })
    }

    /// Said once more right after linking: the user asked for it, and it stays true.
    fn warn_if_insecure(&self) {
        if self.allow_insecure_http && sitetrail::sync::client::is_insecure(&self.hub) {
            out::note(&format!("warning: {INSECURE_WARNING}"));
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?)
}

fn read_recovery_key() -> Result<String> {
    let key = if std::io::stdin().is_terminal() {
        rpassword::prompt_password("Recovery key (24 words; not shown as you type): ")?
    } else {
        let mut line = String::new();
        // A key is 24 short words: more than 4 KiB is not a key.
        let mut stdin = std::io::stdin().lock();
        let mut limited = std::io::Read::take(&mut stdin, 4096);
        std::io::BufReader::new(&mut limited).read_line(&mut line)?;
        line
    };
    if key.trim().is_empty() {
        return Err(Error::Sync {
            kind: ErrorKind::NeedsUser,
            message: "no recovery key was given on standard input; nothing was changed".into(),
        });
    }
    Ok(key)
}

pub(crate) fn run_sync(store: &Store, settings: Option<PathBuf>, args: SyncArgs) -> Result<()> {
    let key_dir = engine::key_dir(settings.as_deref())?;
    let rt = runtime()?;
    match args.command {
        SyncCommand::Setup(a) => {
            let (linked, key) = rt.block_on(engine::setup_with(
                store,
                &key_dir,
                &a.hub,
                a.device_name.as_deref(),
                a.transport()?,
            ))?;
            a.warn_if_insecure();
            if let Some(note) = &linked.key_note {
                out::note(note);
            }
            if a.json {
                return out::json(&json!({
                    "account_id": linked.account_id,
                    "device_id": linked.device_id,
                    "device_name": linked.device_name,
                    "recovery_key": key,
                }));
            }
            out::line(&format!(
                "This device ({}) is linked to a new account on {}.",
                linked.device_name,
                a.hub.trim()
            ))?;
            out::line("")?;
            out::line("Your recovery key (write it down and keep it safe; it is shown only this once):")?;
            out::line("")?;
            out::line(&format!("    {key}"))?;
            out::line("")?;
            out::line(
                "Anyone with this key can read your synced history. Without it, a new device cannot join and",
            )?;
            out::line(
                "nobody, not even the hub's operator, can recover your history. Join another device with",
            )?;
            out::line(&format!(
                "`sitetrail sync join --hub {}` and this key.",
                a.hub.trim()
            ))
        }
        SyncCommand::Join(a) => {
            let key = read_recovery_key()?;
            let linked = rt.block_on(engine::join_with(
                store,
                &key_dir,
                &a.hub,
                a.device_name.as_deref(),
                &key,
                a.transport()?,
            ))?;
            a.warn_if_insecure();
            // The first sync, at once: the device is joined whatever it brings (a failure here
            // is said, and the background sync or `sync now` tries again).
            let first = rt.block_on(engine::sync_now(store, &key_dir));
            if let Some(note) = &linked.key_note {
                out::note(note);
            }
            if a.json {
                let (report, error) = match &first {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                return out::json(&json!({
                    "account_id": linked.account_id,
                    "device_id": linked.device_id,
                    "device_name": linked.device_name,
                    "first_sync": report,
                    "first_sync_error": error,
                }));
            }
            out::line(&format!(
                "This device ({}) joined the account on {}.",
                linked.device_name,
                a.hub.trim()
            ))?;
            match first {
                Ok(r) => out::line(&format!(
                    "First sync: {} record(s) sent, {} received ({} visit(s) added); {} change(s) waiting",
                    r.pushed, r.pulled, r.visits, r.pending
                )),
                Err(e) => out::line(&format!(
                    "The first sync did not finish ({}); it is tried again by `sitetrail sync now` or the background sync.",
                    out::escape(&e.to_string())
                )),
            }
        }
        SyncCommand::Now(a) => {
            if store
                .with_conn(engine::get_link)?
                .is_some_and(|l| l.insecure_http)
            {
                out::note(&format!("warning: {INSECURE_WARNING}"));
            }
            let r = rt.block_on(engine::sync_now(store, &key_dir))?;
            if a.json {
                return out::json(&r);
            }
            out::line(&format!(
                "synced: {} record(s) sent, {} received ({} visit(s) added); {} change(s) waiting",
                r.pushed, r.pulled, r.visits, r.pending
            ))?;
            if r.healed {
                let notice = store.with_conn(engine::status)?.link.and_then(|l| l.notice);
                if let Some(n) = notice {
                    out::line(&format!("note: {}", out::escape(&n)))?;
                }
            }
            if r.unreadable > 0 {
                out::line(&format!(
                    "{} record(s) of other devices could not be read and were skipped; everything else was applied (`sitetrail sync status` says which)",
                    r.unreadable
                ))?;
            }
            Ok(())
        }
        SyncCommand::Status(a) => {
            let s = store.with_conn(engine::status)?;
            let key_store = s
                .link
                .as_ref()
                .map(|l| engine::key_place(&key_dir, l))
                .transpose()?;
            if a.json {
                let l = s.link.as_ref();
                return out::json(&json!({
                    "linked": l.is_some(),
                    "hub": l.map(|l| &l.hub),
                    "account_id": l.map(|l| l.account_id),
                    "device_id": l.map(|l| l.device_id),
                    "device_name": l.map(|l| &l.device_name),
                    "linked_at": l.map(|l| l.linked_at),
                    "last_sync_at": l.and_then(|l| l.last_sync_at),
                    "last_error": l.and_then(|l| l.last_error.as_ref()),
                    // The user allowed a plain http:// hub on another machine: the login crosses
                    // the network in clear. Null when not linked.
                    "insecure_http": l.map(|l| l.insecure_http),
                    // That warning as a sentence, said on every sync; null when not in clear.
                    "insecure_warning": s.insecure_warning,
                    // The hub refused the last sync at the account's quota: its sentence ("the
                    // hub's quota for this account is full: 2.0 of 2.0 GiB; ..."); recording goes
                    // on and everything is sent once there is room. Null otherwise.
                    "quota_full": s.quota_full,
                    // The PEM file of certificate authorities trusted for the hub (--ca-file).
                    "ca_file": l.and_then(|l| l.ca_file.as_ref()),
                    "pending": s.pending,
                    "devices": s.devices,
                    // `keyring`, `file`, or `missing` (linked, but the key is in neither); null
                    // when not linked.
                    "key_store": key_store.map(KeyPlace::name),
                    // What sync did on its own that the user should know (it went on as a new
                    // device after a restore), and when; null when nothing.
                    "notice": l.and_then(|l| l.notice.as_ref()),
                    "notice_at": l.and_then(|l| l.notice_at),
                    // Other devices' records skipped because they cannot be read: the most
                    // recent (device_id, series, idx, reason, seen_at), and how many in all.
                    "unreadable": s.unreadable.records,
                    "unreadable_count": s.unreadable.count,
                }));
            }
            let Some(l) = &s.link else {
                return out::line("not linked to a hub (`sitetrail sync setup --hub URL`, or `sitetrail sync join --hub URL`)");
            };
            out::line(&format!("linked to {} as {}", l.hub, out::escape(&l.device_name)))?;
            if let Some(w) = s.insecure_warning {
                out::line(&format!("warning: {w}"))?;
            }
            if let Some(ca) = &l.ca_file {
                out::line(&format!(
                    "trusting the certificate authorities of {}",
                    out::escape(ca)
                ))?;
            }
            out::line(&match l.last_sync_at {
                Some(t) => format!("last sync: {}", human::local_time(t)),
                None => "last sync: never".to_owned(),
            })?;
            if let Some(q) = &s.quota_full {
                out::line(&format!("warning: {}", out::escape(q)))?;
            } else if let Some(e) = &l.last_error {
                out::line(&format!("the last try failed: {}", out::escape(e)))?;
            }
            if let Some(n) = &l.notice {
                let when = l
                    .notice_at
                    .map(|t| format!(" ({})", human::local_time(t)))
                    .unwrap_or_default();
                out::line(&format!("note{when}: {}", out::escape(n)))?;
            }
            out::line(&format!("waiting to be sent: {} change(s)", s.pending))?;
            if let Some(latest) = s.unreadable.records.first() {
                let name = s
                    .devices
                    .iter()
                    .find(|d| d.device_id == latest.device_id)
                    .and_then(|d| d.name.as_deref())
                    .map_or_else(|| latest.device_id.to_string(), |n| out::escape(n).into_owned());
                out::line(&format!(
                    "could not be read: {} record(s) of other devices were skipped, never applied (everything else was); the latest, record {} of {name}, {}",
                    s.unreadable.count,
                    latest.idx,
                    latest.reason.describe()
                ))?;
            }
            out::line(match key_store.flatten() {
                Some(KeyPlace::Keyring) => "sync key: in the OS keyring",
                Some(KeyPlace::File) => "sync key: in a file readable by you only, in the config folder",
                None => {
                    "sync key: missing (run `sitetrail sync leave`, then join again with the recovery key)"
                }
            })?;
            let names: Vec<String> = s
                .devices
                .iter()
                .map(|d| {
                    let n = out::escape(d.name.as_deref().unwrap_or("(unnamed)")).into_owned();
                    if d.this_device {
                        format!("{n} (this one)")
                    } else {
                        n
                    }
                })
                .collect();
            out::line(&format!("devices: {}", names.join(", ")))
        }
        SyncCommand::Devices(DevicesArgs {
            command: Some(DevicesCommand::Remove(r)),
            ..
        }) => {
            let d = rt.block_on(engine::remove_device(store, &key_dir, &r.device))?;
            if r.json {
                return out::json(&json!({ "removed": true, "device": d }));
            }
            out::line(&format!(
                "removed {} ({}) from the account: it can send nothing more, and what it sent stays",
                out::escape(d.name.as_deref().unwrap_or("an unnamed device")),
                d.device_id
            ))
        }
        SyncCommand::Devices(a) => {
            let devices = rt.block_on(engine::devices(store, &key_dir))?;
            if a.json {
                return out::json(&json!({ "devices": devices }));
            }
            for d in &devices {
                let name = out::escape(d.name.as_deref().unwrap_or("(not synced yet)")).into_owned();
                let mut line = format!("{name}{}", if d.this_device { " (this one)" } else { "" });
                if let Some(t) = d.last_seen_at {
                    line.push_str(&format!(", last seen {}", human::local_time(t)));
                }
                if let Some(t) = d.left_at {
                    line.push_str(&format!(", left {}", human::local_time(t)));
                }
                out::line(&line)?;
            }
            Ok(())
        }
        SyncCommand::RotateKey(a) => {
            let link = store.with_conn(engine::get_link)?.ok_or_else(|| Error::Sync {
                kind: ErrorKind::NotFound,
                message: "this device is not linked to a hub: there is no account whose key to replace"
                    .into(),
            })?;
            if !a.yes {
                let id = link.account_id.simple().to_string();
                let short = id.get(..8).unwrap_or(&id);
                let answer = out::ask(&format!(
                    "This makes a new recovery key, sends this device's history to a new account on {} and \
                     deletes the account {} there: the old key, and every device that holds it, reads nothing \
                     more, and your other devices must join again with the new key (they keep what they \
                     recorded). Type {short} to go on:",
                    link.hub, link.account_id
                ))?;
                if answer != short {
                    return Err(Error::Conflict("not confirmed: nothing was changed".into()));
                }
            }
            let r = rt.block_on(sitetrail::sync::account::rotate_key(store, &key_dir))?;
            if let Some(note) = &r.linked.key_note {
                out::note(note);
            }
            if a.json {
                return out::json(&json!({
                    "hub": r.hub,
                    "old_account_id": r.old_account,
                    "account_id": r.linked.account_id,
                    "device_id": r.linked.device_id,
                    "device_name": r.linked.device_name,
                    "recovery_key": r.recovery_key,
                    "first_sync": r.first_sync.as_ref().ok(),
                    "first_sync_error": r.first_sync.as_ref().err().map(ToString::to_string),
                }));
            }
            out::line(&format!(
                "The account moved to a new recovery key on {}; the old account was deleted there.",
                r.hub
            ))?;
            out::line("")?;
            out::line("Your NEW recovery key (write it down and keep it safe; it is shown only this once):")?;
            out::line("")?;
            out::line(&format!("    {}", r.recovery_key))?;
            out::line("")?;
            out::line(
                "The old key opens nothing any more. On each of your other devices: `sitetrail sync leave`,",
            )?;
            out::line(&format!(
                "then `sitetrail sync join --hub {}` with this key (what they recorded meanwhile is sent then).",
                r.hub
            ))?;
            match &r.first_sync {
                Ok(_) => Ok(()),
                Err(e) => out::line(&format!(
                    "note: this device's history is queued for the new account but was not sent yet ({}); \
                     the next sync sends it",
                    out::escape(&e.to_string())
                )),
            }
        }
        SyncCommand::DeleteAccount(a) => {
            let link = store.with_conn(engine::get_link)?.ok_or_else(|| Error::Sync {
                kind: ErrorKind::NotFound,
                message: "this device is not linked to a hub: there is no account to delete".into(),
            })?;
            if !a.yes {
                let id = link.account_id.simple().to_string();
                let short = id.get(..8).unwrap_or(&id);
                let answer = out::ask(&format!(
                    "This deletes the account {} on {} and everything of it there, for every device \
                     (the history on each device stays). Type {short} to delete it:",
                    link.account_id, link.hub
                ))?;
                if answer != short {
                    return Err(Error::Conflict("not confirmed: nothing was deleted".into()));
                }
            }
            let link = rt.block_on(sitetrail::sync::account::delete_account(store, &key_dir))?;
            if a.json {
                return out::json(&json!({
                    "deleted": true,
                    "hub": link.hub,
                    "account_id": link.account_id,
                    "device_id": link.device_id,
                }));
            }
            out::line(&format!(
                "the account was deleted on {}, with everything of it there; this device's history stays here, \
                 and its link and sync key are removed. The other devices are told on their next sync.",
                link.hub
            ))
        }
        SyncCommand::Leave(a) => {
            let left = rt.block_on(engine::leave(store, &key_dir, a.force))?;
            let link = &left.link;
            if a.json {
                return out::json(&json!({
                    "left": true,
                    "account_id": link.account_id,
                    "device_id": link.device_id,
                    "pushed": left.pushed,
                    // Changes not sent (forced while the hub could not be reached, or the hub
                    // refuses this device): they stay only on this device, and go with it if it
                    // joins again.
                    "unsent": left.unsent,
                    // The hub refused this device for good (the account deleted or its key
                    // replaced, or this device removed): what it said; null otherwise.
                    "refused": left.refused,
                }));
            }
            if let Some(why) = &left.refused {
                out::line(&format!(
                    "the hub no longer takes this device's changes ({why}); so it leaves here only"
                ))?;
            }
            if left.unsent > 0 {
                out::line(&format!(
                    "{} change(s) of this device were not sent: they stay only on this device (joining again sends them)",
                    left.unsent
                ))?;
            }
            out::line(&format!(
                "this device left the account on {}; its history stays here, and its sync key is deleted",
                link.hub
            ))
        }
    }
}
