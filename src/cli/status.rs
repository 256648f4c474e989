//! `sitetrail status` (the queue's job counts, the worker's pause and crashes, the backlog) and
//! `sitetrail resume`.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use sitetrail::settings::Overrides;
use sitetrail::{Error, Result, Store};

use super::{print_json, resolve_settings};

#[derive(Args, Debug)]
pub(crate) struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_status(store: &Store, settings: Option<PathBuf>, args: StatusArgs) -> Result<()> {
    let s = store.queue_status()?;
    let w = store.worker_state()?;
    // The backlog at the saved settings' pace (the app also knows the measured rate).
    let eta = resolve_settings(settings, &Overrides::new())
        .ok()
        .and_then(|r| sitetrail::backlog::estimate(&s, &r.worker_config(), None));
    if args.json {
        let mut v = serde_json::to_value(&s).map_err(|e| Error::Io(e.into()))?;
        v["paused_kind"] = json!(w.paused_kind);
        v["paused_reason"] = json!(w.paused_reason);
        v["paused_until"] = json!(w.paused_until);
        v["eta_seconds"] = json!(eta.map(|e| e.seconds));
        v["paused_provider"] = json!(w.paused_provider);
        v["worker_crashes"] = json!(w.worker_crashes);
        v["last_crash"] = match (&w.last_crash_at, &w.last_crash_message) {
            (Some(at), message) => json!({"at": at, "message": message}),
            (None, _) => serde_json::Value::Null,
        };
        return print_json(&v);
    }
    println!(
        "pending {}  processing {}  completed {}  failed {}",
        s.pending, s.processing, s.completed, s.failed
    );
    if let Some(age) = s.oldest_pending_age_ms {
        println!("oldest pending job: {:.1} s old", age as f64 / 1000.0);
    }
    if let Some(e) = eta {
        println!("backlog: about {:.0} s at the configured pace", e.seconds.ceil());
    }
    if let Some(reason) = &w.paused_reason {
        let until = w
            .paused_until
            .map(|t| format!(" until {}", t.to_rfc3339()))
            .unwrap_or_else(|| " until you run `sitetrail resume`".into());
        let whose = w
            .paused_provider
            .as_deref()
            .map(|p| format!(" (for {p})"))
            .unwrap_or_default();
        println!("worker paused{until}{whose}: {reason}");
    }
    if let (Some(at), Some(message)) = (&w.last_crash_at, &w.last_crash_message) {
        println!(
            "worker crashed {} time(s), last at {}: {message} (it restarted by itself)",
            w.worker_crashes,
            at.to_rfc3339()
        );
    }
    Ok(())
}

pub(crate) fn run_resume(store: &Store) -> Result<()> {
    match store.resume_worker()? {
        Some(w) => println!(
            "worker resumed (it was paused: {})",
            w.paused_reason.unwrap_or_default()
        ),
        None => println!("the worker was not paused"),
    }
    Ok(())
}
