//! How a worker runs: its timings, limits and retry policy. The defaults and the limits of the
//! values a person can set are defined here, once each ([`Bounds`]): [`WorkerConfig::default`]
//! and [`WorkerConfig::validate`] use them, and the settings schema (`crate::settings`) takes
//! its defaults and limits from them, so this module names nothing of the settings.

use std::fmt::Display;
use std::time::Duration;

use crate::error::{Error, Result};

/// A worker value's default and the range it must be in (`min..=max`). The default of a value
/// that may be unset is an `Option` (`D`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds<T, D = T> {
    /// The value when none is set.
    pub default: D,
    /// The smallest value that works.
    pub min: T,
    /// The largest value that works.
    pub max: T,
}

impl<T: PartialOrd + Copy + Display, D> Bounds<T, D> {
    /// Refuses `value` outside `min..=max`, naming it `what`.
    fn check(&self, value: T, what: &str) -> Result<()> {
        if self.min <= value && value <= self.max {
            Ok(())
        } else {
            Err(Error::InvalidConfig(format!(
                "{what} must be between {} and {}, not {value}",
                self.min, self.max
            )))
        }
    }
}

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

impl WorkerConfig {
    /// Sleep between ticks (ms).
    pub const FIXED_DELAY_MS: Bounds<u64> = Bounds {
        default: 1_000,
        min: 0,
        max: 3_600_000,
    };
    /// Most classifier calls a minute; `None`: no limit beyond the fixed delay.
    pub const MAX_REQUESTS_PER_MINUTE: Bounds<u32, Option<u32>> = Bounds {
        default: None,
        min: 1,
        max: 100_000,
    };
    /// Jobs claimed per tick; the default is the built-in rules' (one website a call).
    pub const BATCH_SIZE: Bounds<usize> = Bounds {
        default: 1,
        min: 1,
        max: 500,
    };
    /// Jobs claimed per tick for a remote provider, when none is set.
    pub const REMOTE_BATCH_SIZE: usize = 20;
    /// Attempts before a job is `FAILED`.
    pub const MAX_ATTEMPTS: Bounds<u32> = Bounds {
        default: 5,
        min: 1,
        max: 100,
    };
    /// Retry delay after a job's first failed attempt (ms).
    pub const RETRY_BASE_MS: Bounds<u64> = Bounds {
        default: 30_000,
        min: 0,
        max: 86_400_000,
    };
    /// Growth of the retry delay per further attempt.
    pub const RETRY_FACTOR: Bounds<f64> = Bounds {
        default: 2.0,
        min: 1.0,
        max: 100.0,
    };
    /// Longest retry delay (ms).
    pub const RETRY_MAX_MS: Bounds<u64> = Bounds {
        default: 30 * 60 * 1_000,
        min: 0,
        max: 7 * 86_400_000,
    };
    /// The lease on a claimed job (ms).
    pub const PROCESSING_TIMEOUT_MS: Bounds<u64> = Bounds {
        default: 300_000,
        min: 1,
        max: 86_400_000,
    };
}

/// The worker the default settings describe: every value here is written once, and the
/// settings schema's defaults are the constants above.
impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            fixed_delay: Duration::from_millis(Self::FIXED_DELAY_MS.default),
            retry: RetryPolicy::exponential(
                Duration::from_millis(Self::RETRY_BASE_MS.default),
                Self::RETRY_FACTOR.default,
                Duration::from_millis(Self::RETRY_MAX_MS.default),
            ),
            processing_timeout: Duration::from_millis(Self::PROCESSING_TIMEOUT_MS.default),
            max_attempts: Self::MAX_ATTEMPTS.default,
            batch_size: Self::BATCH_SIZE.default,
            max_requests_per_minute: Self::MAX_REQUESTS_PER_MINUTE.default,
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
    /// Checks that the values can work together, each within its [`Bounds`] (the limits the
    /// settings schema gives it too).
    pub fn validate(&self) -> Result<()> {
        Self::MAX_ATTEMPTS.check(self.max_attempts, "max attempts")?;
        Self::BATCH_SIZE.check(self.batch_size, "batch size")?;
        let timeout_ms = crate::time::millis(self.processing_timeout);
        Self::PROCESSING_TIMEOUT_MS.check(timeout_ms, "processing timeout (ms)")?;
        if let Some(n) = self.max_requests_per_minute {
            Self::MAX_REQUESTS_PER_MINUTE.check(n, "max requests per minute")?;
        }
        let Bounds { min, max, .. } = Self::RETRY_FACTOR;
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
