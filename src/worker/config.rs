//! How a worker runs: its timings, limits and retry policy, checked against the limits the
//! settings schema gives each of them.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::settings::Settings;

/// How long a failed job waits before its next attempt: `base * factor^(attempt-1)`, capped at
/// `max`, then spread by up to `±jitter` (a fraction) so that jobs that failed together do not
/// retry together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Delay after the first failed attempt.
    pub base: Duration,
    /// Growth per further attempt (1.0 = fixed delay).
    pub factor: f64,
    /// Longest delay.
    pub max: Duration,
    /// Random spread, as a fraction of the delay (0.0 = none).
    pub jitter: f64,
}

impl RetryPolicy {
    /// A fixed delay.
    pub fn fixed(delay: Duration) -> Self {
        RetryPolicy {
            base: delay,
            factor: 1.0,
            max: delay,
            jitter: 0.0,
        }
    }

    /// The delay after attempt number `attempt` (1-based) failed.
    pub fn delay(&self, attempt: i64) -> Duration {
        let exp = i32::try_from(attempt.saturating_sub(1).clamp(0, 60)).unwrap_or(60);
        let raw = self.base.as_secs_f64() * self.factor.max(1.0).powi(exp);
        let capped = raw.min(self.max.max(self.base).as_secs_f64());
        let spread = if self.jitter > 0.0 {
            (fastrand::f64() * 2.0 - 1.0) * self.jitter.min(1.0)
        } else {
            0.0
        };
        Duration::from_secs_f64((capped * (1.0 + spread)).max(0.0))
    }

    /// The longest delay this policy can give (the cap plus its jitter): a retry time further
    /// ahead than this can only come from a clock that has since moved back.
    pub fn longest(&self) -> Duration {
        let capped = self.max.max(self.base).as_secs_f64() * (1.0 + self.jitter.clamp(0.0, 1.0));
        Duration::try_from_secs_f64(capped).unwrap_or(Duration::MAX)
    }

    /// Exponential backoff with ±20% jitter: `base * factor^(attempt-1)`, capped at `max`.
    pub fn exponential(base: Duration, factor: f64, max: Duration) -> Self {
        RetryPolicy {
            base,
            factor,
            max,
            jitter: 0.2,
        }
    }
}

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Sleep between ticks.
    pub fixed_delay: Duration,
    /// Delay before a failed job is retried.
    pub retry: RetryPolicy,
    /// The lease on a claimed job: the worker renews it every third of this while it works on
    /// the job, and a job whose lease ran out (its worker died) is reclaimed.
    pub processing_timeout: Duration,
    /// Attempts before a job is `FAILED`.
    pub max_attempts: u32,
    /// Jobs claimed (and classified in one call) per tick.
    pub batch_size: usize,
    /// On shutdown, how long a classification in flight may take before its jobs are given back.
    pub shutdown_grace: Duration,
    /// Most classifier calls a minute (a token bucket on top of the fixed delay); `None`: no limit.
    pub max_requests_per_minute: Option<u32>,
    /// While the provider is unreachable: first wait, doubled after each failed try...
    pub offline_backoff_first: Duration,
    /// ...up to this. Also used for a rate limit that does not say how long to wait.
    pub offline_backoff_max: Duration,
    /// Longest wait of a paused worker between two looks at the pause state: it looks at once
    /// when the state is announced to have changed (by any process); this is the safety net.
    pub pause_poll: Duration,
    /// Longest sleep of an idle worker. It wakes as soon as new work is announced (by this
    /// process or another, see [`crate::changes`]) or a retry falls due; this is the safety net.
    pub idle_poll: Duration,
    /// After a crash, the first wait before the worker restarts, doubled after each crash...
    pub crash_backoff_first: Duration,
    /// ...up to this.
    pub crash_backoff_max: Duration,
    /// The provider this worker calls, as its pauses are recorded (`<provider> <base URL>
    /// <model>`, never a credential): pauses of other providers do not hold it. `None`: the
    /// classifier's name.
    pub pause_scope: Option<String>,
}

/// The worker the default settings describe (the settings schema holds each default once).
impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig::from_settings(&Settings::default())
    }
}

impl WorkerConfig {
    /// The worker `s` describes. The fields that are not settings get their values here, the
    /// one place they are written.
    pub fn from_settings(s: &Settings) -> WorkerConfig {
        WorkerConfig {
            fixed_delay: Duration::from_millis(s.fixed_delay_ms),
            retry: RetryPolicy::exponential(
                Duration::from_millis(s.retry_base_ms),
                s.retry_factor,
                Duration::from_millis(s.retry_max_ms),
            ),
            processing_timeout: Duration::from_millis(s.processing_timeout_ms),
            max_attempts: s.max_attempts,
            batch_size: s.batch_size(),
            max_requests_per_minute: s.max_requests_per_minute,
            shutdown_grace: Duration::from_secs(10),
            offline_backoff_first: Duration::from_secs(1),
            offline_backoff_max: Duration::from_secs(300),
            pause_poll: Duration::from_secs(30),
            idle_poll: Duration::from_secs(60),
            crash_backoff_first: Duration::from_secs(1),
            crash_backoff_max: Duration::from_secs(60),
            pause_scope: None,
        }
    }
}

impl WorkerConfig {
    /// Checks that the values can work together, within the limits the settings schema gives
    /// each of them ([`crate::settings::SCHEMA`]).
    pub fn validate(&self) -> Result<()> {
        use crate::settings::schema::{limits, number_limits};
        let within = |name: &str, value: u64, what: &str| {
            let (min, max) = limits(name);
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(Error::InvalidConfig(format!(
                    "{what} must be between {min} and {max}, not {value}"
                )))
            }
        };
        within("max_attempts", u64::from(self.max_attempts), "max attempts")?;
        within("batch_size", self.batch_size as u64, "batch size")?;
        let timeout_ms = crate::time::millis(self.processing_timeout);
        within("processing_timeout_ms", timeout_ms, "processing timeout (ms)")?;
        if let Some(n) = self.max_requests_per_minute {
            within("max_requests_per_minute", u64::from(n), "max requests per minute")?;
        }
        let (min, max) = number_limits("retry_factor");
        if !(self.retry.factor >= min && self.retry.factor <= max) {
            return Err(Error::InvalidConfig(format!(
                "retry factor must be between {min} and {max}"
            )));
        }
        if self.offline_backoff_first.is_zero()
            || self.pause_poll.is_zero()
            || self.crash_backoff_first.is_zero()
        {
            return Err(Error::InvalidConfig(
                "offline backoff, crash backoff and pause poll must be more than 0".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_grow_exponentially_with_jitter_up_to_the_cap() {
        let p = RetryPolicy::exponential(Duration::from_secs(1), 2.0, Duration::from_secs(10));
        for (attempt, nominal) in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)] {
            let spread: Vec<f64> = (0..200).map(|_| p.delay(attempt).as_secs_f64()).collect();
            let (lo, hi) = spread
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), d| (l.min(*d), h.max(*d)));
            assert!(
                lo >= nominal * 0.8 - 1e-9 && hi <= nominal * 1.2 + 1e-9,
                "attempt {attempt}: {lo}..{hi}"
            );
            assert!(
                hi - lo > nominal * 0.1,
                "attempt {attempt}: jitter spreads the delays ({lo}..{hi})"
            );
        }
        assert_eq!(
            RetryPolicy::fixed(Duration::from_millis(5)).delay(7),
            Duration::from_millis(5)
        );
    }

    #[test]
    fn config_rejects_values_that_cannot_work() {
        let ok = WorkerConfig::default();
        assert!(ok.validate().is_ok());
        assert!(WorkerConfig {
            max_requests_per_minute: Some(0),
            ..ok.clone()
        }
        .validate()
        .is_err());
        let slow = RetryPolicy::exponential(Duration::from_secs(1), 0.5, Duration::from_secs(1));
        assert!(WorkerConfig { retry: slow, ..ok }.validate().is_err());
    }
}
