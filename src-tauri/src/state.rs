//! What the app holds while it runs: the database, the worker, where its files live, the API key.
//!
//! The database is the CLI's file (`SITETRAIL_DB`, else `sitetrail.db` in the user's data
//! directory, which honours `XDG_DATA_HOME`), so the app and the CLI can run at once on the same
//! data. The worker runs on tauri's tokio runtime; [`AppState::stop_worker`] stops it gracefully
//! (the job in flight finishes, or is given back after the grace period) and is called on exit.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::secret::ApiKey;
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
    /// The directory holding the settings files.
    pub config_dir: PathBuf,
    /// The classifier settings file (shared with the CLI).
    pub settings_file: PathBuf,
}

impl AppPaths {
    /// The paths the CLI uses too: `SITETRAIL_DB` or the default database, and the user's config
    /// directory (`XDG_CONFIG_HOME` on Linux).
    pub fn from_env() -> sitetrail::Result<AppPaths> {
        let db = match std::env::var_os("SITETRAIL_DB").filter(|p| !p.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => sitetrail::store::default_db_path()?,
        };
        let dirs = directories::ProjectDirs::from("app", "Sitetrail", "sitetrail")
            .ok_or_else(|| sitetrail::Error::InvalidConfig("no home directory found".into()))?;
        Ok(AppPaths {
            db,
            config_dir: dirs.config_dir().to_path_buf(),
            settings_file: sitetrail::settings::default_settings_path()?,
        })
    }

    /// The same layout under one directory (for tests).
    pub fn under(dir: &std::path::Path) -> AppPaths {
        AppPaths {
            db: dir.join("data/sitetrail.db"),
            config_dir: dir.join("config"),
            settings_file: dir.join("config/settings.json"),
        }
    }
}

/// Completed-or-failed job counts over the last minutes, to tell how fast the queue drains.
#[derive(Debug, Default)]
pub struct RateMeter {
    samples: std::collections::VecDeque<(Instant, i64)>,
}

/// How far back the drain rate looks.
const RATE_WINDOW: Duration = Duration::from_secs(120);

impl RateMeter {
    /// Records that `done` jobs are finished now; returns jobs per second over the window, once
    /// the window spans a few seconds.
    pub fn sample(&mut self, now: Instant, done: i64) -> Option<f64> {
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        self.samples.push_back((now, done));
        let (t0, d0) = *self.samples.front()?;
        let secs = now.duration_since(t0).as_secs_f64();
        (secs >= 3.0).then(|| ((done - d0).max(0) as f64) / secs)
    }
}

/// The app's state, managed by tauri.
pub struct AppState {
    /// The database.
    pub store: Store,
    /// Where things are.
    pub paths: AppPaths,
    /// The API key.
    pub keys: KeyStore,
    /// The drain-rate meter behind the overview's ETA.
    pub rate: Mutex<RateMeter>,
    worker: Mutex<Option<WorkerHandle>>,
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

impl AppState {
    /// Opens the database (creating it if needed), with the CLI's options (`SITETRAIL_SYNCHRONOUS`).
    pub fn open(paths: AppPaths, keys: KeyStore) -> sitetrail::Result<AppState> {
        let store = Store::open_with(&paths.db, sitetrail::StoreOptions::from_env()?)?;
        Ok(AppState {
            store,
            paths,
            keys,
            rate: Mutex::new(RateMeter::default()),
            worker: Mutex::new(None),
            running: Mutex::new(Running::default()),
        })
    }

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

    /// The saved settings (defaults if there is no file).
    pub fn load_settings(&self) -> sitetrail::Result<Settings> {
        Settings::load(&self.paths.settings_file)
    }

    /// `settings` with the environment applied and the API key attached (the environment's, else
    /// the keyring's or this session's).
    pub fn resolve(&self, settings: Settings) -> sitetrail::Result<Resolved> {
        let mut resolved = settings.resolve(&Environment::from_process(), &Overrides::default())?;
        if resolved.api_key.is_none() {
            resolved.api_key = self.keys.get().0.and_then(ApiKey::new);
        }
        Ok(resolved)
    }

    /// The classifier and worker configuration from the saved settings and the environment.
    pub fn build_worker(&self) -> sitetrail::Result<(Arc<dyn Classifier>, WorkerConfig, String)> {
        let resolved = self.resolve(self.load_settings()?)?;
        let user = self.store.with_conn(sitetrail::websites::list_user_categories)?;
        let (classifier, config) = resolved.build(user)?;
        Ok((classifier, config, resolved.settings.provider.as_str().to_owned()))
    }

    /// Starts the worker with the saved settings; if they cannot be used (a remote provider with
    /// no key, say), starts the built-in rules and remembers why. Must run on a tokio runtime.
    pub fn start_worker(&self) -> CmdResult<()> {
        let (classifier, config, provider, problem) = match self.build_worker() {
            Ok((c, config, provider)) => (c, config, provider, None),
            Err(e) => {
                tracing::warn!(error = %e, "saved classifier settings unusable; using the built-in rules");
                let c: Arc<dyn Classifier> = Arc::new(Builtin);
                (
                    c,
                    WorkerConfig::default(),
                    "builtin".to_owned(),
                    Some(e.to_string()),
                )
            }
        };
        let worker = Worker::new(self.store.clone(), classifier, config.clone())?;
        let handle = worker.spawn();
        let mut slot = self
            .worker
            .lock()
            .map_err(|_| CmdError::unavailable("the worker slot is poisoned; restart the app"))?;
        if let Ok(mut r) = self.running.lock() {
            *r = Running {
                config,
                provider,
                problem,
            };
        }
        *slot = Some(handle);
        Ok(())
    }

    /// Stops the worker gracefully and waits for it; nothing to do if none runs.
    pub async fn stop_worker(&self) {
        let handle = self.worker.lock().ok().and_then(|mut w| w.take());
        if let Some(h) = handle {
            if let Err(e) = h.shutdown().await {
                tracing::warn!(error = %e, "worker did not stop cleanly");
            }
        }
    }

    /// Restarts the worker (after the settings changed).
    pub async fn restart_worker(&self) -> CmdResult<()> {
        self.stop_worker().await;
        self.start_worker()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_jobs_per_second_over_the_window() {
        let mut m = RateMeter::default();
        let t0 = Instant::now();
        assert_eq!(m.sample(t0, 10), None, "one sample says nothing");
        assert_eq!(m.sample(t0 + Duration::from_secs(1), 12), None, "too short");
        let r = m.sample(t0 + Duration::from_secs(10), 30).unwrap();
        assert!((r - 2.0).abs() < 1e-9, "{r}");
        // Old samples leave the window.
        let r = m.sample(t0 + Duration::from_secs(400), 30).unwrap_or(0.0);
        assert_eq!(r, 0.0);
    }
}
