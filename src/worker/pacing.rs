//! Pacing for the worker: the request-rate limit it imposes on itself and the growing wait while
//! a provider is unreachable.
//!
//! [`RequestPacer`] is a token bucket refilled with one token every `60 s / limit` that holds
//! at most one second's worth of calls (at least one), and starts with one token. Calls are
//! spaced evenly; a call that took longer than the spacing is caught up on afterwards instead of
//! lost, so draining a queue takes `calls / limit` minutes, not more. From the start, calls never
//! run ahead of `limit` per minute; in any 60 s window there are at most `limit + limit / 60`.
//! [`Backoff`] doubles from its first wait up to its cap and starts over after a success.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A token bucket: at most `limit` calls per minute, evenly spaced, with up to one second of
/// calls banked to catch up after slow ones.
#[derive(Debug)]
pub struct RequestPacer {
    interval: Duration,
    /// How far behind `now` the next slot may lie: the bucket's capacity less one token.
    catch_up: Duration,
    next: Mutex<Option<Instant>>,
}

impl RequestPacer {
    /// At most `per_minute` calls a minute (at least 1).
    pub fn per_minute(per_minute: u32) -> RequestPacer {
        let interval = Duration::from_secs(60) / per_minute.max(1);
        RequestPacer {
            interval,
            catch_up: Duration::from_secs(1).saturating_sub(interval),
            next: Mutex::new(None),
        }
    }

    /// The spacing between calls.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Takes the next slot and returns how long to wait for it (zero if it is free now).
    pub fn reserve(&self) -> Duration {
        let now = Instant::now();
        // A poisoned lock only means another thread panicked mid-update; the value is still a time.
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let earliest = now.checked_sub(self.catch_up).unwrap_or(now);
        let slot = next.map_or(now, |n| n.max(earliest));
        *next = Some(slot + self.interval);
        slot.saturating_duration_since(now)
    }
}

/// A wait that doubles on each failure, from `first` up to `max`.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    current: Option<Duration>,
}

impl Backoff {
    /// Starts at `first`, doubles, never exceeds `max`.
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: max.max(first),
            current: None,
        }
    }

    /// The wait after one more failure.
    pub fn next_wait(&mut self) -> Duration {
        let next = match self.current {
            None => self.first,
            Some(d) => (d * 2).min(self.max),
        };
        self.current = Some(next);
        next
    }

    /// Starts over after a success.
    pub fn reset(&mut self) {
        self.current = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let waits: Vec<u64> = (0..5).map(|_| b.next_wait().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        b.reset();
        assert_eq!(b.next_wait(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn the_pacer_spaces_calls_evenly() {
        let p = RequestPacer::per_minute(600);
        assert_eq!(p.reserve(), Duration::ZERO);
        assert_eq!(p.reserve(), Duration::from_millis(100));
        assert_eq!(p.reserve(), Duration::from_millis(200));
        // Idle for a long time: at most one second of calls (10) go at once, then spacing again.
        tokio::time::advance(Duration::from_secs(5)).await;
        let waits: Vec<u128> = (0..12).map(|_| p.reserve().as_millis()).collect();
        assert_eq!(waits, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 200]);
        // A slow limit never banks more than one call.
        let slow = RequestPacer::per_minute(30);
        assert_eq!(slow.reserve(), Duration::ZERO);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(slow.reserve(), Duration::ZERO);
        assert_eq!(slow.reserve(), Duration::from_secs(2));
    }
}
