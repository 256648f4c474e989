//! What the app holds while it runs: the database, the worker, where its files live, the API key.
//!
//! The database is the CLI's file (`SITETRAIL_DB`, else `sitetrail.db` in the user's data
//! directory, which honours `XDG_DATA_HOME`), so the app and the CLI can run at once on the same
//! data. The worker runs on tauri's tokio runtime; [`AppState::stop_worker`] stops it gracefully
//! (the job in flight finishes, or is given back after the grace period) and is called on exit.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sitetrail::backlog::RateMeter;
use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::Classifier;
use sitetrail::settings::{Environment, Overrides, Resolved, Settings};
use sitetrail::worker::{Worker, WorkerConfig, WorkerHandle};
use sitetrail::Store;

use crate::error::{CmdError, CmdResult};
use crate::secret::KeyStore;

/// Where the app's files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppPaths {
    /// The database file.
    pub db: PathBuf,
    /// The config directory (where the app's old `app.json` was).
    pub config_dir: PathBuf,
    /// The settings file (shared with the CLI): classifier, worker, import, durability.
    pub settings_file: PathBuf,
    /// The home directory whose browser folders "link the extension" writes to; `None`: the
    /// user's own (tests point it at a temp dir).
    pub home: Option<PathBuf>,
    /// The `sitetrail` command a linked browser starts as its native-messaging host, if found.
    pub cli: Option<PathBuf>,
    /// The root the system-wide link folders are read under (`/etc/chromium/...`); `None`: the
    /// real one (tests point it at a temp dir).
    pub system_root: Option<PathBuf>,
}

impl AppPaths {
    /// The paths the CLI uses too: `SITETRAIL_DB` or the default database, and the user's config
    /// directory (`XDG_CONFIG_HOME` on Linux).
    pub fn from_env() -> sitetrail::Result<AppPaths> {
        let db = sitetrail::store::default_db_path()?;
        let dirs = sitetrail::fsutil::project_dirs()?;
        Ok(AppPaths {
            db,
            config_dir: dirs.config_dir().to_path_buf(),
            settings_file: sitetrail::settings::default_settings_path()?,
            home: None,
            cli: find_cli(),
            system_root: None,
        })
    }

    /// The browsers' base directories for linking: under [`AppPaths::home`] if set, else the
    /// user's own.
    pub fn roots(&self) -> Option<sitetrail::import::detect::Roots> {
        use sitetrail::import::detect::{Os, Roots};
        let mut roots = match &self.home {
            Some(h) => Some(Roots::for_home(Os::current(), h)),
            None => Roots::current(),
        }?;
        if let Some(root) = &self.system_root {
            roots.system = root.clone();
        }
        // The package's link writes to the user's default database, which is the app's.
        roots.default_db = Some(self.db.clone());
        Some(roots)
    }

    /// The same layout under one directory (for tests), with its own home and no CLI.
    pub fn under(dir: &std::path::Path) -> AppPaths {
        AppPaths {
            db: dir.join("data/sitetrail.db"),
            config_dir: dir.join("config"),
            settings_file: dir.join("config/settings.json"),
            home: Some(dir.join("home")),
            cli: None,
            system_root: Some(dir.join("system")),
        }
    }
}

/// The `sitetrail` command: `SITETRAIL_CLI` if set, else next to this app's executable (how the
/// two are built and shipped together), else on `PATH`.
fn find_cli() -> Option<PathBuf> {
    let name = if cfg!(windows) {
        "sitetrail.exe"
    } else {
        "sitetrail"
    };
    if let Some(p) = std::env::var_os("SITETRAIL_CLI").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
    })
}

/// The app's state, managed by tauri. Cheap to clone (an `Arc`): a command moves a clone into
/// blocking work, so no command ever blocks the async runtime or the UI thread.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct Inner {
    /// The database.
    pub store: Store,
    /// Where things are.
    pub paths: AppPaths,
    /// The API key.
    pub keys: KeyStore,
    /// The drain-rate meter behind the overview's ETA.
    pub rate: Mutex<RateMeter>,
    /// Where the sync key file is (beside the settings file, as for the CLI).
    pub sync_keys: PathBuf,
    /// Asks the background sync to run now (a claim's answer to pull or push, a new link).
    pub sync_wake: Arc<tokio::sync::Notify>,
    /// At most one browser import at a time.
    pub imports: crate::import_slot::ImportSlot,
    /// Held from reading the settings file to writing it back, so the classifier form and the
    /// import form, saved at once, never lose each other's change.
    settings_edit: Mutex<()>,
    /// The running worker. An async mutex: a restart holds it from stopping the old worker to
    /// starting the new one, so two restarts can never leave two workers running.
    worker: tokio::sync::Mutex<Option<WorkerHandle>>,
    /// Set once the app is quitting: no worker starts after that.
    closing: std::sync::atomic::AtomicBool,
    running: Mutex<Running>,
}

/// What the running worker was built with.
#[derive(Clone, Debug, Default)]
struct Running {
    config: WorkerConfig,
    provider: String,
    /// Why the saved settings could not be used (the worker then runs the built-in rules).
    problem: Option<String>,
}

/// A worker ready to start, built on a blocking thread.
struct WorkerPlan {
    classifier: Arc<dyn Classifier>,
    running: Running,
}

impl AppState {
    /// Opens the database (creating it if needed), with `SITETRAIL_SYNCHRONOUS` if it is set
    /// (checked as by the CLI), else the settings file's `synchronous`. A settings file that
    /// cannot be used does not stop the app: the database opens as the environment says, and the
    /// worker reports the file's problem. Blocking: called once, in setup, before the window shows.
    pub fn open(paths: AppPaths, keys: KeyStore) -> sitetrail::Result<AppState> {
        let options = match Settings::load(&paths.settings_file) {
            Ok(saved) => saved.store_options()?,
            Err(e) => {
                tracing::warn!(error = %e, "settings file unusable; the database opens with SITETRAIL_SYNCHRONOUS or the default durability");
                sitetrail::StoreOptions::from_env()?
            }
        };
        let store = Store::open_with(&paths.db, options)?;
        let sync_keys = sitetrail::sync::engine::key_dir(Some(&paths.settings_file))?;
        Ok(AppState(Arc::new(Inner {
            store,
            paths,
            keys,
            rate: Mutex::new(RateMeter::default()),
            sync_keys,
            sync_wake: Arc::new(tokio::sync::Notify::new()),
            imports: crate::import_slot::ImportSlot::default(),
            settings_edit: Mutex::new(()),
            worker: tokio::sync::Mutex::new(None),
            closing: std::sync::atomic::AtomicBool::new(false),
            running: Mutex::new(Running::default()),
        })))
    }

    /// Runs `f` (database, files, keyring) on the blocking pool, through the library's one
    /// helper for blocking work.
    pub async fn blocking<T, F>(&self, f: F) -> CmdResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> sitetrail::Result<T> + Send + 'static,
    {
        let me = self.clone();
        sitetrail::blocking::run(move || f(&me))
            .await
            .map_err(CmdError::from)
    }

    /// Starts the worker with the saved settings; if they cannot be used (a remote provider with
    /// no key, say), starts the built-in rules and remembers why. The settings, the keyring and
    /// the user's categories are read on a blocking thread.
    pub async fn start_worker(&self) -> CmdResult<()> {
        let mut slot = self.worker.lock().await;
        self.start_locked(&mut slot).await
    }

    async fn start_locked(&self, slot: &mut Option<WorkerHandle>) -> CmdResult<()> {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let plan = self.blocking(|s| Ok(s.plan_worker())).await?;
        // Remote calls are shared with the user's other devices through the hub's claims.
        let claims = sitetrail::sync::claims::HubClaims::new(
            self.store.clone(),
            self.sync_keys.clone(),
            plan.running.config.processing_timeout,
            self.sync_wake.clone(),
        );
        let worker = Worker::new(self.store.clone(), plan.classifier, plan.running.config.clone())?
            .with_gate(Arc::new(claims));
        if let Ok(mut r) = self.running.lock() {
            *r = plan.running;
        }
        *slot = Some(worker.spawn());
        Ok(())
    }

    /// Stops the worker gracefully and waits for it; nothing to do if none runs. After this no
    /// worker starts again (the app is quitting).
    pub async fn stop_worker(&self) {
        self.closing.store(true, std::sync::atomic::Ordering::SeqCst);
        let handle = self.worker.lock().await.take();
        if let Some(h) = handle {
            if let Err(e) = h.shutdown().await {
                tracing::warn!(error = %e, "worker did not stop cleanly");
            }
        }
    }

    /// Restarts the worker (after the settings changed).
    pub async fn restart_worker(&self) -> CmdResult<()> {
        let mut slot = self.worker.lock().await;
        if let Some(h) = slot.take() {
            if let Err(e) = h.shutdown().await {
                tracing::warn!(error = %e, "worker did not stop cleanly");
            }
        }
        self.start_locked(&mut slot).await
    }
}

impl Inner {
    /// The configuration of the running worker.
    pub fn worker_config(&self) -> WorkerConfig {
        self.running.lock().map(|r| r.config.clone()).unwrap_or_default()
    }

    /// The name of the classifier the worker uses.
    pub fn provider_name(&self) -> String {
        self.running
            .lock()
            .map(|r| r.provider.clone())
            .unwrap_or_default()
    }

    /// Why the saved settings could not be used, if they could not.
    pub fn worker_problem(&self) -> Option<String> {
        self.running.lock().ok().and_then(|r| r.problem.clone())
    }

    /// The saved settings (defaults if there is no file). Blocking.
    pub fn load_settings(&self) -> sitetrail::Result<Settings> {
        Settings::load(&self.paths.settings_file)
    }

    /// Changes the saved settings: `edit` gets them as saved and returns them changed; the
    /// result is validated and written atomically. Edits never overlap, so two forms saved at
    /// once each keep the other's values. Returns what was saved. Blocking.
    pub fn update_settings(
        &self,
        edit: impl FnOnce(Settings) -> sitetrail::Result<Settings>,
    ) -> sitetrail::Result<Settings> {
        let _one_at_a_time = self
            .settings_edit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let new = edit(self.load_settings()?)?;
        new.save(&self.paths.settings_file)?;
        Ok(new)
    }

    /// `settings` with the environment applied and the API key attached (the environment's, else
    /// the keyring's or this session's). Blocking (the keyring).
    pub fn resolve(&self, settings: Settings) -> sitetrail::Result<Resolved> {
        let mut resolved = settings.resolve(&Environment::from_process(), &Overrides::new())?;
        if resolved.api_key.is_none() {
            resolved.api_key = self.keys.get().0;
        }
        Ok(resolved)
    }

    /// The classifier and worker configuration from the saved settings and the environment.
    /// Blocking.
    pub fn build_worker(&self) -> sitetrail::Result<(Arc<dyn Classifier>, WorkerConfig, String)> {
        let resolved = self.resolve(self.load_settings()?)?;
        // The worker reads the user's categories itself at each pass (as the CLI's does).
        let (classifier, config) = resolved.build(Default::default())?;
        Ok((classifier, config, resolved.settings.provider.as_str().to_owned()))
    }

    /// What to start: the saved settings' worker, or the built-in rules and why. Blocking.
    fn plan_worker(&self) -> WorkerPlan {
        match self.build_worker() {
            Ok((classifier, config, provider)) => WorkerPlan {
                classifier,
                running: Running {
                    config,
                    provider,
                    problem: None,
                },
            },
            Err(e) => {
                tracing::warn!(error = %e, "saved classifier settings unusable; using the built-in rules");
                WorkerPlan {
                    classifier: Arc::new(Builtin),
                    running: Running {
                        config: WorkerConfig::default(),
                        provider: "builtin".to_owned(),
                        problem: Some(e.to_string()),
                    },
                }
            }
        }
    }
}
