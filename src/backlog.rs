//! How long the classification backlog will take: the drain rate measured over the last minutes
//! and the estimate from it (or from the worker's configured pace until a rate is known). Shared
//! by the app's overview and `sitetrail status`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::outbox::QueueStatus;
use crate::worker::WorkerConfig;

/// How far back the drain rate looks.
pub const RATE_WINDOW: Duration = Duration::from_secs(120);

/// Completed-or-failed job counts over the last minutes, to tell how fast the queue drains.
#[derive(Debug, Default)]
pub struct RateMeter {
    samples: VecDeque<(Instant, i64)>,
}

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

/// What an estimate is based on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EtaBasis {
    /// The drain rate measured over the last minutes.
    Measured,
    /// The worker's configured pace: one batch per fixed delay.
    Configured,
}

/// How long the backlog will take.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Eta {
    /// Seconds until every waiting job is done.
    pub seconds: f64,
    /// What the estimate is based on.
    pub basis: EtaBasis,
}

/// The estimate for `queue`: at the `measured` rate (jobs per second) once there is one, else at
/// `config`'s pace; `None` when nothing waits.
pub fn estimate(queue: &QueueStatus, config: &WorkerConfig, measured: Option<f64>) -> Option<Eta> {
    let backlog = (queue.pending + queue.processing) as f64;
    if backlog == 0.0 {
        return None;
    }
    Some(match measured {
        Some(rate) if rate > 0.0 => Eta {
            seconds: backlog / rate,
            basis: EtaBasis::Measured,
        },
        _ => {
            let pace =
                config.batch_size as f64 / config.fixed_delay.max(Duration::from_millis(1)).as_secs_f64();
            Eta {
                seconds: backlog / pace,
                basis: EtaBasis::Configured,
            }
        }
    })
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

    #[test]
    fn the_estimate_uses_the_measured_rate_once_known_else_the_pace() {
        let q = QueueStatus {
            pending: 90,
            processing: 10,
            ..QueueStatus::default()
        };
        let config = WorkerConfig {
            fixed_delay: Duration::from_millis(500),
            batch_size: 5,
            ..WorkerConfig::default()
        };
        let e = estimate(&q, &config, None).unwrap();
        assert_eq!(
            (e.seconds, e.basis),
            (10.0, EtaBasis::Configured),
            "10 jobs/s configured"
        );
        let e = estimate(&q, &config, Some(4.0)).unwrap();
        assert_eq!((e.seconds, e.basis), (25.0, EtaBasis::Measured));
        assert_eq!(estimate(&QueueStatus::default(), &config, Some(4.0)), None);
    }
}
