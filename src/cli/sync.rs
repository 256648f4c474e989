//! `sitetrail sync setup|join|now|status|devices|leave`: this device's link to a hub.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

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
struct LeaveArgs {
    /// Leave even if the hub cannot be reached (it is not told).
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum SyncCommand {
    /// Creates an account on the hub and links this device to it; prints the recovery key once.
    Setup(LinkArgs),
    /// Links this device to an existing account: reads the recovery key from standard input (or
    /// asks for it on a terminal; never from the command line).
    Join(LinkArgs),
    /// Pushes this device's changes and pulls the other devices' now.
    Now(JsonArgs),
    /// Says whether this device is linked, when it last synced and what waits to be pushed.
    Status(JsonArgs),
    /// Lists the account's devices, as the hub knows them.
    Devices(JsonArgs),
    /// This device leaves the account (its history stays here; the others keep what it sent).
    Leave(LeaveArgs),
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
            let (linked, key) =
                rt.block_on(engine::setup(store, &key_dir, &a.hub, a.device_name.as_deref()))?;
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
            let linked = rt.block_on(engine::join(
                store,
                &key_dir,
                &a.hub,
                a.device_name.as_deref(),
                &key,
            ))?;
            if a.json {
                return out::json(&json!({
                    "account_id": linked.account_id,
                    "device_id": linked.device_id,
                    "device_name": linked.device_name,
                }));
            }
            out::line(&format!(
                "This device ({}) joined the account on {}; run `sitetrail sync now` to bring in the others' history.",
                linked.device_name,
                a.hub.trim()
            ))
        }
        SyncCommand::Now(a) => {
            let r = rt.block_on(engine::sync_now(store, &key_dir))?;
            if a.json {
                return out::json(&r);
            }
            out::line(&format!(
                "synced: {} record(s) sent, {} received ({} visit(s) added); {} change(s) waiting",
                r.pushed, r.pulled, r.visits, r.pending
            ))?;
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
                    "pending": s.pending,
                    "devices": s.devices,
                    // `keyring`, `file`, or `missing` (linked, but the key is in neither); null
                    // when not linked.
                    "key_store": key_store.map(KeyPlace::name),
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
            out::line(&match l.last_sync_at {
                Some(t) => format!("last sync: {}", human::local_time(t)),
                None => "last sync: never".to_owned(),
            })?;
            if let Some(e) = &l.last_error {
                out::line(&format!("the last try failed: {}", out::escape(e)))?;
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
        SyncCommand::Leave(a) => {
            let link = rt.block_on(engine::leave(store, &key_dir, a.force))?;
            if a.json {
                return out::json(
                    &json!({ "left": true, "account_id": link.account_id, "device_id": link.device_id }),
                );
            }
            out::line(&format!(
                "this device left the account on {}; its history stays here, and its sync key is deleted",
                link.hub
            ))
        }
    }
}
