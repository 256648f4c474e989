//! The Sitetrail desktop app: a thin Tauri v2 shell over the `sitetrail` library.
//!
//! [`run`] builds the real app; everything else is generic over [`tauri::Runtime`] so the command
//! tests run the same wiring on tauri's mock runtime: [`builder`] registers the commands,
//! [`context`] embeds `tauri.conf.json`, the capabilities and the static UI in `../ui`, and
//! [`setup`] moves the old `app.json` into the settings file ([`migrate`]), opens the database,
//! starts the classification worker, the auto-import schedule and
//! forwards committed changes to the UI as coalesced events. On exit the worker is stopped
//! gracefully.
//!
//! Invariants: the shell holds no SQL and no business rules (the library does); no async task
//! holds a database connection; the UI hears of a change only after it committed.

pub mod cmd;
pub mod error;
pub mod events;
pub mod import;
pub mod import_slot;
pub mod locale;
pub mod migrate;
pub mod painting;
pub mod secret;
pub mod startup;
pub mod state;
pub mod upkeep;

#[cfg(test)]
mod tests;

use tauri::{AppHandle, Manager, RunEvent, Runtime};
use tokio::sync::oneshot;

use crate::cmd::export::{SavePicker, SaveRequest};
use crate::error::CmdError;
use crate::secret::KeyStore;
use crate::state::{AppPaths, AppState};

/// Registers the commands on any runtime.
pub fn builder<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    // The opener is used from Rust only (`open_url` checks the address first): the capability
    // grants the page none of its commands.
    let handler: fn(tauri::ipc::Invoke<R>) -> bool = tauri::generate_handler![
        cmd::overview::get_queue,
        cmd::overview::get_summary,
        cmd::period::get_period_overview,
        cmd::period::get_timeline,
        cmd::website::get_website_page,
        cmd::overview::list_categories,
        cmd::overview::get_app_info,
        cmd::overview::get_locale,
        cmd::history::list_history,
        cmd::history::set_category,
        cmd::history::reclassify_website,
        cmd::review::list_review,
        cmd::review::confirm_category,
        cmd::history::get_favicons,
        cmd::history::get_search_index,
        cmd::history::open_url,
        cmd::forget::forget_visits,
        cmd::forget::forget_website,
        cmd::forget::forget_recent,
        cmd::forget::list_blocked,
        cmd::forget::block_domain,
        cmd::forget::unblock_domain,
        cmd::jobs::list_failed_jobs,
        cmd::jobs::retry_jobs,
        cmd::jobs::retry_all_failed,
        cmd::jobs::get_jobs,
        cmd::export::export_data,
        cmd::settings::get_settings,
        cmd::settings::save_settings,
        cmd::settings::test_connection,
        cmd::settings::set_api_key,
        cmd::settings::delete_api_key,
        cmd::settings::resume_worker,
        cmd::import::detect_browsers,
        cmd::import::describe_source,
        cmd::import::import_browsers,
        cmd::import::import_history_file,
        cmd::import::get_import_settings,
        cmd::import::save_import_settings,
        cmd::capture::get_browser_links,
        cmd::capture::link_browser,
        cmd::capture::unlink_browser,
        cmd::capture::get_time_summary,
        cmd::capture::get_visit_times,
        cmd::sync::get_sync_status,
        cmd::sync::sync_setup,
        cmd::sync::sync_join,
        cmd::sync::sync_now,
        cmd::sync::sync_devices,
        cmd::sync::sync_leave,
        cmd::sync::sync_remove_device,
        cmd::sync::sync_rotate_key,
        cmd::sync::sync_delete_account,
        cmd::limits::list_limits,
        cmd::limits::set_limit,
        cmd::limits::remove_limit,
        cmd::limits::get_week_report,
        cmd::focus::get_focus,
        cmd::focus::start_focus,
        cmd::focus::stop_focus,
        cmd::reminders::get_reminders,
        cmd::reminders::set_reminders,
        cmd::overview::first_view_painted,
    ];
    builder
        .plugin(tauri_plugin_opener::init())
        .on_page_load(|_, payload| match payload.event() {
            tauri::webview::PageLoadEvent::Started => crate::startup::mark("page load started"),
            tauri::webview::PageLoadEvent::Finished => crate::startup::mark("page load finished"),
        })
        .invoke_handler(move |invoke| {
            crate::startup::mark("first IPC");
            handler(invoke)
        })
}

/// The real context: config, capabilities and the embedded UI, for any runtime.
pub fn context<R: Runtime>() -> tauri::Context<R> {
    tauri::generate_context!()
}

/// What [`setup`] needs from its caller.
pub struct Startup {
    /// Where the files are.
    pub paths: AppPaths,
    /// The API key store.
    pub keys: KeyStore,
    /// The save dialog.
    pub picker: SavePicker,
    /// The open dialog for a browser's history file.
    pub open_picker: crate::cmd::import::OpenPicker,
}

/// Moves the old `app.json` into the settings file, opens the database, starts the worker and
/// the change forwarder, and manages the state.
pub fn setup<R: Runtime>(app: &AppHandle<R>, startup: Startup) -> Result<(), CmdError> {
    match migrate::app_json(&startup.paths.config_dir, &startup.paths.settings_file) {
        migrate::Outcome::NothingToMove => {}
        migrate::Outcome::Moved { from } => {
            tracing::info!(from = %from.display(), "the import settings moved into the settings file");
        }
        migrate::Outcome::LeftAsItIs(why) => tracing::warn!("{why}"),
    }
    let state = AppState::open(startup.paths, startup.keys)?;
    let changes = state.store.subscribe();
    tracing::info!(db = %state.paths.db.display(), "database open");
    app.manage(state.clone());
    app.manage(startup.picker);
    app.manage(startup.open_picker);
    // The worker is built from the settings file, the keyring and the database: blocking work
    // that must not hold up the window, so it starts on the async runtime.
    tauri::async_runtime::spawn(async move {
        match state.start_worker().await {
            Ok(()) => tracing::info!("worker started"),
            Err(e) => tracing::error!(error = %e, "the worker could not start"),
        }
    });
    tauri::async_runtime::spawn(events::forward_changes(app.clone(), changes));
    tauri::async_runtime::spawn(import::schedule(app.clone()));
    tauri::async_runtime::spawn(upkeep::run(app.clone()));
    tauri::async_runtime::spawn(sync_in_background(app.clone()));
    tauri::async_runtime::spawn(remind(app.clone()));
    Ok(())
}

/// Shows the reminders of limits and goals due (off until the user turns them on), every minute
/// while the app runs; the daemon does the same, and each is shown once between them.
async fn remind<R: Runtime>(app: AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>().map(|s| s.inner().clone()) else {
        return;
    };
    // The app's background tasks end with the process.
    let (_keep, stop) = tokio::sync::watch::channel(false);
    sitetrail::reminders::remind_every(state.store.clone(), sitetrail::reminders::CHECK_EVERY, stop).await;
}

/// Syncs on its own while the app runs (when this device is linked): soon after a local change,
/// every two minutes for the others', at once when the worker's claims ask. Each outcome is told
/// to the UI ([`events::SYNC_STATUS`]).
async fn sync_in_background<R: Runtime>(app: AppHandle<R>) {
    use tauri::Emitter;
    let Some(state) = app.try_state::<AppState>().map(|s| s.inner().clone()) else {
        return;
    };
    // The app's background tasks end with the process.
    let (_keep, stop) = tokio::sync::watch::channel(false);
    sitetrail::sync::background::run(
        state.store.clone(),
        state.sync_keys.clone(),
        sitetrail::sync::background::Pace::default(),
        state.sync_wake.clone(),
        stop,
        move |last| {
            let _ = app.emit(
                events::SYNC_STATUS,
                serde_json::json!({ "report": last.report, "error": last.error }),
            );
        },
    )
    .await;
}

/// Stops the worker, waiting for the job in flight (or its grace period).
pub fn shutdown<R: Runtime>(app: &AppHandle<R>) {
    if let Some(state) = app.try_state::<AppState>() {
        tauri::async_runtime::block_on(state.stop_worker());
        tracing::info!("worker stopped; bye");
    }
}

/// The native save dialog.
fn dialog_picker<R: Runtime>(app: AppHandle<R>) -> SavePicker {
    use tauri_plugin_dialog::DialogExt;
    SavePicker(Box::new(move |req: SaveRequest| {
        let (tx, rx) = oneshot::channel();
        app.dialog()
            .file()
            .set_file_name(req.file_name)
            .add_filter(req.filter, &[req.extension])
            .save_file(move |path| {
                let _ = tx.send(path.and_then(|p| p.into_path().ok()));
            });
        rx
    }))
}

/// The native open dialog, for a browser's history file.
fn open_dialog_picker<R: Runtime>(app: AppHandle<R>) -> crate::cmd::import::OpenPicker {
    use tauri_plugin_dialog::DialogExt;
    crate::cmd::import::OpenPicker(Box::new(move || {
        let (tx, rx) = oneshot::channel();
        app.dialog()
            .file()
            .set_title("A browser's history file (History, places.sqlite or History.db)")
            .pick_file(move |path| {
                let _ = tx.send(path.and_then(|p| p.into_path().ok()));
            });
        rx
    }))
}

/// Turns SIGTERM/SIGINT (logout, `kill`, Ctrl+C in a terminal) into a normal exit, so the worker
/// is stopped gracefully on [`RunEvent::Exit`] instead of dying mid-job.
async fn exit_on_signal<R: Runtime>(app: AppHandle<R>) {
    sitetrail::signal::stop_requested().await;
    tracing::info!("signal received; exiting");
    app.exit(0);
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITETRAIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("sitetrail=info,sitetrail_app=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs the desktop app until its window closes.
pub fn run() {
    crate::startup::mark("main");
    // Before any thread starts: it may set WebKit's environment.
    let painting = crate::painting::choose();
    init_tracing();
    tracing::debug!(?painting, "how WebKit paints");
    let app = builder(tauri::Builder::default())
        .plugin(tauri_plugin_dialog::init())
        .setup(|app| {
            // Tauri creates the configured window just before this.
            crate::startup::mark("window created");
            let paths = AppPaths::from_env()?;
            let handle = app.handle().clone();
            let startup = Startup {
                paths,
                keys: KeyStore::system(),
                picker: dialog_picker(handle.clone()),
                open_picker: open_dialog_picker(handle.clone()),
            };
            setup(&handle, startup)?;
            crate::startup::mark("setup done");
            tauri::async_runtime::spawn(exit_on_signal(handle));
            Ok(())
        })
        .build(context());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            eprintln!("sitetrail: cannot start the app: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        if let RunEvent::Exit = event {
            shutdown(app);
        }
    });
}
