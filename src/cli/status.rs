//! `sitetrail status` (the queue's job counts, the worker's pause and crashes, the backlog) and
//! `sitetrail resume`.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use sitetrail::settings::Overrides;
use sitetrail::{Error, Result, Store};

use super::{human, out, resolve_settings};

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
        return out::json(&v);
    }
    let mut lines = vec![format!(
        "pending {}  processing {}  completed {}  failed {}",
        s.pending, s.processing, s.completed, s.failed
    )];
    if let Some(age) = s.oldest_pending_age_ms {
        lines.push(format!("oldest pending job: {} old", human::duration(age)));
    }
    if let Some(e) = eta {
        let left =
            std::time::Duration::try_from_secs_f64(e.seconds.ceil()).unwrap_or(std::time::Duration::MAX);
        lines.push(format!(
            "backlog: about {} at the configured pace",
            human::duration(i64::try_from(sitetrail::time::millis(left)).unwrap_or(i64::MAX))
        ));
    }
    if let Some(reason) = &w.paused_reason {
        let until = w
            .paused_until
            .map(|t| {
                let left = t
                    .as_micros()
                    .saturating_sub(sitetrail::Timestamp::now().as_micros())
                    .max(0)
                    / 1000;
                format!(
                    " until {} ({} from now)",
                    human::local_time(t),
                    human::duration(left)
                )
            })
            .unwrap_or_else(|| " until you run `sitetrail resume`".into());
        let whose = w
            .paused_provider
            .as_deref()
            .map(|p| format!(" (for {p})"))
            .unwrap_or_default();
        lines.push(format!("worker paused{until}{whose}: {reason}"));
    }
    if let (Some(at), Some(message)) = (&w.last_crash_at, &w.last_crash_message) {
        lines.push(format!(
            "worker crashed {} time(s), last at {}: {message} (it restarted by itself)",
            w.worker_crashes,
            human::local_time(*at)
        ));
    }
    for l in &lines {
        out::line(l)?;
    }
    Ok(())
}

pub(crate) fn run_resume(store: &Store) -> Result<()> {
    match store.resume_worker()? {
        Some(w) => out::line(&format!(
            "worker resumed (it was paused: {})",
            w.paused_reason.unwrap_or_default()
        )),
        None => out::line("the worker was not paused"),
    }
}
