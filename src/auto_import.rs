//! The auto-import schedule: which browser profiles a scheduled import reads, and the loop that
//! runs one round every interval. `sitetrail daemon` and the desktop app both run it, from the
//! same two settings (`auto_import_minutes`, `import_profiles`: [`crate::settings`], with their
//! default, limits, flags and variables): the daemon resolves them once at start (its
//! `--import-interval-min` and `--import-profile` first), the app re-reads the saved ones every
//! round so a change applies at once. Each says how a round imports (the daemon logs, the app
//! sends progress events).
//!
//! A round reads every detected profile (or those chosen), except the browsers linked to this
//! database: the extension records those live, and importing their history file again would
//! store every visit twice.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use crate::error::Result;
use crate::import::detect::{detect_profiles_in, Roots};
use crate::import::DetectedProfile;
use crate::settings::Settings;

/// How often a schedule looks again at its settings when it is off or not yet due.
pub const RECHECK: Duration = Duration::from_secs(60);

/// What the schedule should do now, read before every round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AutoImport {
    /// Time between rounds; `None`: off.
    pub every: Option<Duration>,
    /// History files (profile paths) to import; empty: every detected profile.
    pub profiles: Vec<String>,
}

impl AutoImport {
    /// The schedule `settings` ask for: every `auto_import_minutes` (0: off), the
    /// `import_profiles` (none: every detected profile).
    pub fn from_settings(settings: &Settings) -> AutoImport {
        let minutes = u64::from(settings.auto_import_minutes);
        AutoImport {
            every: (minutes > 0).then(|| Duration::from_secs(60 * minutes)),
            profiles: settings.import_profiles.clone(),
        }
    }
}

/// One round's profiles: those to import, and those left out because the extension records them.
#[derive(Clone, Debug, Default)]
pub struct Round {
    /// To import.
    pub import: Vec<DetectedProfile>,
    /// Linked to this database: recorded live, not imported.
    pub live: Vec<DetectedProfile>,
}

/// The profiles a round imports from the browsers under `roots`: the `chosen` ones (all if
/// empty; a chosen profile that is gone is skipped), without those linked to `db`. Blocking.
pub fn plan_round(roots: Option<&Roots>, db: &Path, chosen: &[String]) -> Round {
    crate::blocking::note("profile detection");
    let Some(roots) = roots else {
        return Round::default();
    };
    let detected = detect_profiles_in(roots);
    let picked: Vec<DetectedProfile> = if chosen.is_empty() {
        detected
    } else {
        detected
            .into_iter()
            .filter(|p| chosen.contains(&p.path.display().to_string()))
            .collect()
    };
    let (import, live) = crate::capture::link::without_live_profiles(picked, roots, db);
    for p in &live {
        info!(browser = %p.product, profile = %p.profile, "not imported: recorded live by the extension");
    }
    Round { import, live }
}

/// Runs the schedule until `stop` turns true: reads `settings` (on the blocking pool), and when
/// a round is due plans it ([`plan_round`]) and hands its profiles to `import`. With
/// `at_start`, the first round runs at once; otherwise after the first interval.
pub async fn run<S, I, Fut>(
    roots: Option<Roots>,
    db: std::path::PathBuf,
    settings: S,
    mut import: I,
    at_start: bool,
    mut stop: watch::Receiver<bool>,
) where
    S: Fn() -> Result<AutoImport> + Send + Sync + Clone + 'static,
    I: FnMut(Vec<DetectedProfile>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut since_last: Option<Duration> = (!at_start).then_some(Duration::ZERO);
    loop {
        if *stop.borrow() {
            return;
        }
        let read = settings.clone();
        let plan = match crate::blocking::run(read).await {
            Ok(p) => p,
            Err(e) => {
                warn!(error = %e, "auto-import settings unreadable; skipping this round");
                AutoImport::default()
            }
        };
        let wait = match plan.every {
            None => RECHECK,
            Some(every) if since_last.is_some_and(|t| t < every) => {
                (every - since_last.unwrap_or_default()).min(RECHECK)
            }
            Some(every) => {
                let (roots, db, chosen) = (roots.clone(), db.clone(), plan.profiles.clone());
                match crate::blocking::run(move || Ok(plan_round(roots.as_ref(), &db, &chosen))).await {
                    Ok(round) => import(round.import).await,
                    Err(e) => warn!(error = %e, "auto-import: cannot look for browsers"),
                }
                since_last = Some(Duration::ZERO);
                every.min(RECHECK)
            }
        };
        let slept = tokio::time::Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        if let Some(t) = &mut since_last {
            *t += slept.elapsed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn the_schedule_is_the_settings_own() {
        let d = AutoImport::from_settings(&Settings::default());
        assert_eq!(d.every, Some(Duration::from_secs(15 * 60)));
        assert!(d.profiles.is_empty(), "every detected profile");
        let off = AutoImport::from_settings(&Settings {
            auto_import_minutes: 0,
            import_profiles: vec!["/a/History".into()],
            ..Settings::default()
        });
        assert_eq!((off.every, off.profiles), (None, vec!["/a/History".to_owned()]));
    }

    #[tokio::test(start_paused = true)]
    async fn rounds_come_every_interval_and_the_settings_are_read_each_time() {
        let home = tempfile::tempdir().unwrap();
        let roots = Roots::for_home(crate::import::detect::Os::current(), home.path());
        let every = Arc::new(AtomicUsize::new(0)); // minutes; 0 = off
        let rounds = Arc::new(AtomicUsize::new(0));
        let (stop_tx, stop) = watch::channel(false);
        let e = every.clone();
        let settings = move || {
            let m = e.load(Ordering::SeqCst) as u64;
            Ok(AutoImport {
                every: (m > 0).then(|| Duration::from_secs(60 * m)),
                profiles: Vec::new(),
            })
        };
        let r = rounds.clone();
        let task = tokio::spawn(run(
            Some(roots),
            home.path().join("db"),
            settings,
            move |_profiles| {
                r.fetch_add(1, Ordering::SeqCst);
                async {}
            },
            false,
            stop,
        ));
        // Off: no round, however long.
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 0);
        // Every 15 minutes, set while it runs: the settings are read again at each look, and
        // the interval counts from the start.
        every.store(15, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 0, "11 minutes in: not yet");
        tokio::time::sleep(Duration::from_secs(5 * 60)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 1, "16 minutes in: the first round");
        tokio::time::sleep(Duration::from_secs(13 * 60)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 1, "not before the next interval");
        tokio::time::sleep(Duration::from_secs(3 * 60)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 2);
        stop_tx.send(true).unwrap();
        task.await.unwrap();
    }
}
