//! The `import` and `daemon` commands: arguments, progress bar and output. The importing is done
//! by `sitetrail::import`; this module turns its reports into text or JSON.
//!
//! Exit status: non-zero when a file is refused (or, with `--auto`, when any profile failed; the
//! other profiles are still imported).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use sitetrail::auto_import::{self as schedule, AutoImport};
use sitetrail::import::detect::Roots;
use sitetrail::import::{self, Browser, DetectedProfile, ImportOptions, ImportReport, Progress};
use sitetrail::{Error, Result, Store};

use super::settings::{SettingFlags, IMPORT};
use super::{build_worker, open_with_settings, out, WorkerArgs};

/// The browser family named on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum BrowserArg {
    /// Chrome, Chromium, Edge, Brave, Vivaldi, Opera: `<profile>/History`.
    #[value(
        alias = "chromium",
        alias = "edge",
        alias = "brave",
        alias = "vivaldi",
        alias = "opera"
    )]
    Chrome,
    /// Firefox, LibreWolf, Waterfox: `<profile>/places.sqlite`.
    #[value(alias = "librewolf", alias = "waterfox")]
    Firefox,
    /// Safari: `~/Library/Safari/History.db`.
    Safari,
}

impl From<BrowserArg> for Browser {
    fn from(b: BrowserArg) -> Browser {
        match b {
            BrowserArg::Chrome => Browser::Chrome,
            BrowserArg::Firefox => Browser::Firefox,
            BrowserArg::Safari => Browser::Safari,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct ImportArgs {
    /// The browser family PATH belongs to.
    #[arg(
        value_enum,
        required_unless_present = "auto",
        conflicts_with = "auto",
        requires = "path"
    )]
    browser: Option<BrowserArg>,
    /// The history file: a Chrome-family `History`, Firefox `places.sqlite` or Safari `History.db`.
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
    /// Import every browser profile found on this computer.
    #[arg(long)]
    auto: bool,
    /// Store the visits under this source name (default: the browser and a hash of the path).
    #[arg(long, value_name = "NAME", conflicts_with = "auto")]
    source: Option<String>,
    /// Print a JSON summary.
    #[arg(long)]
    json: bool,
    /// Browser visits per transaction.
    #[arg(long, value_name = "N", default_value_t = import::DEFAULT_BATCH_SIZE, hide = true)]
    batch_size: usize,
}

#[derive(Args, Debug)]
pub(crate) struct DaemonArgs {
    #[command(flatten)]
    worker: WorkerArgs,
    /// The automatic import's settings, `--import-interval-min` and `--import-profile` (each
    /// overrides the environment and the saved settings).
    #[command(flatten)]
    import: SettingFlags<IMPORT>,
    /// Milliseconds between imports; overrides --import-interval-min (for tests and demos).
    #[arg(long, value_name = "N", hide = true)]
    import_interval_ms: Option<u64>,
    /// Seconds between syncs for the other devices' changes, when this device is linked to a hub
    /// (`sitetrail sync setup`/`join`); this device's own changes are pushed within seconds.
    #[arg(long, value_name = "N", default_value_t = 120)]
    sync_interval_s: u64,
    /// Milliseconds between syncs; overrides --sync-interval-s (for tests and benchmarks).
    #[arg(long, value_name = "N", hide = true)]
    sync_interval_ms: Option<u64>,
}

/// Runs `sitetrail import`.
pub(crate) fn run_import(store: &Store, args: ImportArgs) -> Result<()> {
    // Said before a browser's file is copied and checked, not after.
    store.check_writable()?;
    let opts = ImportOptions {
        source: args.source.clone(),
        batch_size: args.batch_size,
        cancel: None,
    };
    if args.auto {
        return run_auto_import(store, &opts, args.json);
    }
    let (Some(browser), Some(path)) = (args.browser, args.path) else {
        return Err(Error::InvalidInput("give a browser and a PATH, or --auto".into()));
    };
    let bar = progress_bar(&path.display().to_string());
    let result = import::import_file(store, browser.into(), &path, &opts, &mut |p| update(&bar, p));
    bar.finish_and_clear();
    let report = result?;
    if args.json {
        out::json(&report)
    } else {
        print_report(&report)
    }
}

fn run_auto_import(store: &Store, opts: &ImportOptions, json: bool) -> Result<()> {
    let profiles = import::detect_profiles();
    let none_found = profiles.is_empty();
    let mut bar: Option<(PathBuf, ProgressBar)> = None;
    let results = import::import_detected(store, profiles, opts, &mut |profile, p| {
        if bar.as_ref().is_none_or(|(path, _)| path != &profile.path) {
            if let Some((_, old)) = bar.take() {
                old.finish_and_clear();
            }
            let label = format!("{} {}", profile.product, profile.profile);
            bar = Some((profile.path.clone(), progress_bar(&label)));
        }
        if let Some((_, b)) = &bar {
            update(b, p);
        }
    });
    if let Some((_, b)) = bar {
        b.finish_and_clear();
    }
    let failed = results.iter().filter(|r| r.result.is_err()).count();
    if json {
        let list: Vec<_> = results
            .iter()
            .map(|r| match &r.result {
                Ok(report) => json!({"profile": r.profile, "report": report}),
                Err(e) => {
                    json!({"profile": r.profile, "error": {"kind": e.kind(), "message": e.to_string()}})
                }
            })
            .collect();
        out::json(&list)?;
    } else if none_found {
        out::line("no browser profiles found")?;
    } else {
        for r in &results {
            out::line(&format!("{} ({}):", r.profile.product, r.profile.profile))?;
            match &r.result {
                Ok(report) => print_report(report)?,
                Err(e) => out::line(&format!("  error: {e}"))?,
            }
        }
    }
    if failed > 0 {
        return Err(Error::Conflict(format!(
            "{failed} of {} browser profile(s) could not be imported (see above)",
            results.len()
        )));
    }
    Ok(())
}

/// A progress bar on stderr when it is a terminal; a hidden one otherwise.
fn progress_bar(label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} visits ({per_sec}, {eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    // A profile's folder name is text from outside: escaped like every human line.
    bar.set_message(out::escape(label).into_owned());
    bar
}

fn update(bar: &ProgressBar, p: Progress) {
    bar.set_length(p.total);
    bar.set_position(p.read);
}

fn print_report(r: &ImportReport) -> Result<()> {
    let mut lines = vec![format!(
        "imported {}  skipped {}  new websites {}  ({} from {})",
        r.imported,
        r.skipped.total,
        r.new_websites,
        r.source,
        r.path.display()
    )];
    let s = &r.skipped;
    let reasons: Vec<String> = [
        (s.redirect, "redirect"),
        (s.subframe, "subframe"),
        (s.non_web, "not http(s)"),
        (s.not_page, "not a page"),
        (s.bad_url, "bad URL"),
        (s.bad_timestamp, "bad timestamp"),
        (s.blocked, "blocked"),
        (s.forgotten, "forgotten"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    if !reasons.is_empty() {
        lines.push(format!("  skipped: {}", reasons.join(", ")));
    }
    if r.favicons > 0 {
        lines.push(format!(
            "  {} website icon(s) from the browser's icon file",
            r.favicons
        ));
    }
    if let Some(problem) = &r.favicons_problem {
        lines.push(format!("  icons not imported: {problem}"));
    }
    if r.rescanned {
        lines.push(
            "  the browser's history was cleared or replaced since the last import: read it all again".into(),
        );
    }
    if r.already_present > 0 {
        lines.push(format!("  {} visit(s) were already imported", r.already_present));
    }
    if r.repaired_titles > 0 {
        lines.push(format!(
            "  {} title(s) had invalid UTF-8 or control characters and were repaired",
            r.repaired_titles
        ));
    }
    for l in &lines {
        out::line(l)?;
    }
    Ok(())
}

/// Runs `sitetrail daemon`: the worker, and an import of the chosen (else every detected)
/// profiles at start and every interval, until SIGINT/SIGTERM. An import in progress stops after
/// the batch in flight commits. The interval and the profiles are the settings'
/// (`auto_import_minutes`, `import_profiles`: the flags, then the environment, then the file the
/// app saves them in); a saved 0 turns the import off, but the flag takes at least 1, as it did
/// before it was a setting.
pub(crate) fn run_daemon(db: Option<PathBuf>, settings: Option<PathBuf>, args: DaemonArgs) -> Result<()> {
    if args.worker.until_idle {
        return Err(Error::InvalidInput(
            "the daemon runs until SIGINT/SIGTERM; --until-idle is for `sitetrail worker`".into(),
        ));
    }
    if args.import.overrides.get("auto_import_minutes") == Some(&json!(0)) {
        return Err(Error::InvalidInput(
            "the import interval must be at least 1 minute (to import never, save auto_import_minutes 0 in the settings, or run `sitetrail worker`)".into(),
        ));
    }
    if args.import_interval_ms == Some(0) {
        return Err(Error::InvalidInput(
            "the import interval must be at least 1 minute".into(),
        ));
    }
    let mut overrides = args.worker.settings.overrides.clone();
    overrides.extend(&args.import.overrides);
    let (store, resolved) = open_with_settings(db, settings.clone(), &overrides)?;
    store.check_writable()?;
    let mut schedule = AutoImport::from_settings(&resolved.settings);
    if let Some(ms) = args.import_interval_ms {
        schedule.every = Some(Duration::from_millis(ms));
    }
    let sync_pace = sitetrail::sync::background::Pace {
        interval: match args.sync_interval_ms {
            Some(ms) => Duration::from_millis(ms.max(1)),
            None => Duration::from_secs(args.sync_interval_s.max(1)),
        },
        ..sitetrail::sync::background::Pace::default()
    };
    let key_dir = sitetrail::sync::engine::key_dir(settings.as_deref())?;
    let wake = Arc::new(tokio::sync::Notify::new());
    let (rt, mut signals) = super::worker::runtime_listening()?;
    let worker = build_worker(store.clone(), settings, &resolved, &args.worker, wake.clone())?;
    rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let cancel = Arc::new(AtomicBool::new(false));
        let cancel_on_signal = cancel.clone();
        tokio::spawn(async move {
            signals.recv().await;
            tracing::info!("stopping: finishing the job and import batch in flight (send the signal again to stop at once)");
            cancel_on_signal.store(true, Ordering::Relaxed);
            let _ = stop_tx.send(true);
            signals.recv().await;
            std::process::exit(130);
        });
        let syncer = tokio::spawn(sitetrail::sync::background::run(
            store.clone(),
            key_dir,
            sync_pace,
            wake,
            stop_rx.clone(),
            |_| {},
        ));
        // Reminders of limits and goals (off until the user turns them on; each shown once even
        // with the app running too).
        let reminders = tokio::spawn(sitetrail::reminders::remind_every(
            store.clone(),
            sitetrail::reminders::CHECK_EVERY,
            stop_rx.clone(),
        ));
        let importer = match schedule.every {
            Some(_) => Some(tokio::spawn(auto_import_loop(
                store,
                schedule,
                stop_rx.clone(),
                cancel,
            ))),
            None => {
                tracing::info!("auto-import off (auto_import_minutes is 0 in the settings)");
                None
            }
        };
        let worked = worker.run(stop_rx, false).await;
        reminders.await.map_err(|e| Error::Task(e.to_string()))?;
        if let Some(importer) = importer {
            importer.await.map_err(|e| Error::Task(e.to_string()))?;
        }
        syncer.await.map_err(|e| Error::Task(e.to_string()))?;
        worked
    })
}

/// The daemon's auto-import: the library's schedule as `plan` says, from the start, except
/// browsers linked to this database.
async fn auto_import_loop(
    store: Store,
    plan: AutoImport,
    stop: tokio::sync::watch::Receiver<bool>,
    cancel: Arc<AtomicBool>,
) {
    tracing::info!(
        interval_s = plan.every.unwrap_or_default().as_secs(),
        chosen_profiles = plan.profiles.len(),
        "auto-import every interval (of the chosen profiles, or all if none is chosen)"
    );
    let every = move || Ok(plan.clone());
    let round = |profiles: Vec<DetectedProfile>| {
        let (store, cancel) = (store.clone(), cancel.clone());
        async move {
            let opts = ImportOptions {
                cancel: Some(cancel),
                ..ImportOptions::default()
            };
            let results = store
                .run(move |s| Ok(import::import_detected(s, profiles, &opts, &mut |_, _| {})))
                .await;
            match results {
                Ok(results) => {
                    for r in results {
                        log_profile(&r.profile, &r.result);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "auto-import failed; will try again"),
            }
        }
    };
    let db = store.path().to_owned();
    schedule::run(Roots::current(), db, every, round, true, stop).await;
    tracing::info!("auto-import stopped");
}

fn log_profile(profile: &DetectedProfile, result: &Result<ImportReport>) {
    match result {
        Ok(r) => tracing::info!(
            browser = %profile.product,
            profile = %profile.profile,
            imported = r.imported,
            skipped = r.skipped.total,
            new_websites = r.new_websites,
            "imported"
        ),
        Err(e) => {
            tracing::warn!(browser = %profile.product, profile = %profile.profile, error = %e, "import failed");
        }
    }
}
