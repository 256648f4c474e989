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
    let w = store.worker_status()?;
    // The backlog at the saved settings' pace (the app also knows the measured rate).
    let eta = resolve_settings(settings, &Overrides::new())
        .ok()
        .and_then(|r| sitetrail::backlog::estimate(&s, &r.worker_config(), None));
    if args.json {
        // Flat keys (a contract for scripts), in this order, from the one status the app shows too.
        let pause = w.pause.as_ref();
        let mut v = serde_json::to_value(&s).map_err(|e| Error::Io(e.into()))?;
        v["paused_kind"] = json!(pause.map(|p| p.kind));
        v["paused_reason"] = json!(pause.map(|p| &p.reason));
        v["paused_until"] = json!(pause.and_then(|p| p.until));
        v["eta_seconds"] = json!(eta.map(|e| e.seconds));
        v["paused_provider"] = json!(pause.and_then(|p| p.provider.as_deref()));
        v["worker_crashes"] = json!(w.crash.as_ref().map_or(0, |c| c.count));
        v["last_crash"] = match &w.crash {
            Some(c) => json!({"at": c.at, "message": c.message}),
            None => serde_json::Value::Null,
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
    if let Some(p) = &w.pause {
        let until = p
            .until
            .map(|t| {
                let left = t
                    .as_micros()
                    .saturating_sub(super::clock::now().as_micros())
                    .max(0)
                    / 1000;
                format!(
                    " until {} ({} from now)",
                    human::local_time(t),
                    human::duration(left)
                )
            })
            .unwrap_or_else(|| " until you run `sitetrail resume`".into());
        let whose = p
            .provider
            .as_deref()
            .map(|p| format!(" (for {p})"))
            .unwrap_or_default();
        lines.push(format!("worker paused{until}{whose}: {}", p.reason));
    }
    if let Some(c) = &w.crash {
        lines.push(format!(
            "worker crashed {} time(s), last at {}: {} (it restarted by itself)",
            c.count,
            human::local_time(c.at),
            c.message.as_deref().unwrap_or_default()
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
