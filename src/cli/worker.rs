//! `sitetrail worker`: classifies queued websites until stopped (or, with `--until-idle`, until
//! the queue is empty). `daemon` builds its worker here too.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use sitetrail::settings::Resolved;
use sitetrail::worker::Worker;
use sitetrail::{Result, Store};

use super::open_with_settings;
use super::settings::{SettingFlags, WORKER};

#[derive(Args, Debug)]
pub(crate) struct WorkerArgs {
    /// Exit once no job is PENDING or PROCESSING.
    #[arg(long)]
    pub(crate) until_idle: bool,
    /// Settings (each overrides the environment and the saved settings).
    #[command(flatten)]
    pub(crate) settings: SettingFlags<WORKER>,
    /// Adds this much latency to every classifier call (ms): simulates a slow provider, for
    /// tests and demos.
    #[arg(long, value_name = "N", hide = true)]
    simulate_latency_ms: Option<u64>,
    /// Makes the classifier panic whenever it is asked about DOMAIN: simulates a crash, for tests
    /// of the worker's supervisor.
    #[arg(long, value_name = "DOMAIN", hide = true)]
    simulate_panic_on: Option<String>,
}

/// The runtime of a long-running command (`worker`, `daemon`), already listening for SIGTERM and
/// SIGINT: made before the command logs that it starts, so a stop sent the moment it says so is
/// a graceful stop, not the signal's default (the process killed).
pub(crate) fn runtime_listening() -> Result<(tokio::runtime::Runtime, sitetrail::signal::StopSignals)> {
    let rt = tokio::runtime::Runtime::new()?;
    let signals = {
        let _in_runtime = rt.enter();
        sitetrail::signal::StopSignals::listen()
    };
    Ok((rt, signals))
}

pub(crate) fn run_worker(db: Option<PathBuf>, settings: Option<PathBuf>, args: WorkerArgs) -> Result<()> {
    let (store, resolved) = open_with_settings(db, settings.clone(), &args.settings.overrides)?;
    // Every tick writes: on a read-only database it would only fail, again and again.
    store.check_writable()?;
    let (rt, mut signals) = runtime_listening()?;
    let worker = build_worker(
        store,
        settings,
        &resolved,
        &args,
        Arc::new(tokio::sync::Notify::new()),
    )?;
    rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            signals.recv().await;
            tracing::info!("stopping: finishing the job in flight (send the signal again to stop at once)");
            let _ = stop_tx.send(true);
            signals.recv().await;
            std::process::exit(130);
        });
        worker.run(stop_rx, args.until_idle).await
    })
}

/// The worker the `worker` and `daemon` commands run, from the resolved settings and the worker
/// options (`settings` is the settings file's path, beside which the sync key lives). Its remote
/// calls are shared with the user's other devices through the hub's claims when this device is
/// linked (`wake` hears when a sync should run at once).
pub(crate) fn build_worker(
    store: Store,
    settings: Option<PathBuf>,
    resolved: &Resolved,
    args: &WorkerArgs,
    wake: Arc<tokio::sync::Notify>,
) -> Result<Worker> {
    let key_dir = sitetrail::sync::engine::key_dir(settings.as_deref())?;
    // No user categories for the classifier: the worker judges every website with the built-in
    // rules and the user's categories as they are at each pass (worker::local), and asks its
    // classifier only about hosts for the remote provider.
    let (mut classifier, config) = resolved.build(Default::default())?;
    tracing::info!(
        provider = resolved.settings.provider.as_str(),
        base_url = resolved
            .settings
            .provider
            .is_remote()
            .then(|| sitetrail::classify::http::display_url(resolved.base_url())),
        model = resolved.settings.provider.is_remote().then(|| resolved.model()),
        batch_size = config.batch_size,
        max_requests_per_minute = config.max_requests_per_minute,
        synchronous = resolved.settings.synchronous.as_str(),
        "worker starting"
    );
    if let Some(ms) = args.simulate_latency_ms {
        classifier = Arc::new(sitetrail::classify::WithLatency::new(
            classifier,
            Duration::from_millis(ms),
        ));
    }
    if let Some(domain) = &args.simulate_panic_on {
        classifier = Arc::new(sitetrail::worker::PanicsOn::new(classifier, domain.clone()));
    }
    let lease = config.processing_timeout;
    let claims = sitetrail::sync::claims::HubClaims::new(store.clone(), key_dir, lease, wake);
    Ok(Worker::new(store, classifier, config)?.with_gate(Arc::new(claims)))
}
