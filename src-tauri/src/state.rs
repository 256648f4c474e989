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
use sitetrail::classify::Classifier;
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
        })
    }

    /// The same layout under one directory (for tests).
    pub fn under(dir: &std::path::Path) -> AppPaths {
        AppPaths {
            db: dir.join("data/sitetrail.db"),
            config_dir: dir.join("config"),
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
    worker_config: Mutex<WorkerConfig>,
}

impl AppState {
    /// Opens the database (creating it if needed).
    pub fn open(paths: AppPaths, keys: KeyStore) -> sitetrail::Result<AppState> {
        let store = Store::open(&paths.db)?;
        Ok(AppState {
            store,
            paths,
            keys,
            rate: Mutex::new(RateMeter::default()),
            worker: Mutex::new(None),
            worker_config: Mutex::new(WorkerConfig::default()),
        })
    }

    /// The configuration of the running worker.
    pub fn worker_config(&self) -> WorkerConfig {
        self.worker_config.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The name of the classifier the worker uses.
    pub fn provider_name(&self) -> String {
        "builtin".into()
    }

    /// The classifier and worker configuration from the saved settings.
    pub fn build_worker(&self) -> CmdResult<(Arc<dyn Classifier>, WorkerConfig)> {
        Ok((Arc::new(Builtin), WorkerConfig::default()))
    }

    /// Starts the worker with the saved settings; must be called on a tokio runtime.
    pub fn start_worker(&self) -> CmdResult<()> {
        let (classifier, config) = self.build_worker()?;
        let worker = Worker::new(self.store.clone(), classifier, config.clone())?;
        let handle = worker.spawn();
        let mut slot = self
            .worker
            .lock()
            .map_err(|_| CmdError::unavailable("the worker slot is poisoned; restart the app"))?;
        if let Ok(mut c) = self.worker_config.lock() {
            *c = config;
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
