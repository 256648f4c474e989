//! Timestamps and the clock.
//!
//! Every timestamp in the database is an INTEGER of microseconds since the Unix epoch, UTC. The
//! store reads "now" through a [`Clock`] so tests can move time by hand instead of sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// Microseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Self {
        Timestamp(Utc::now().timestamp_micros())
    }

    /// Microseconds since the epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// This time plus `d` (saturating).
    pub fn plus(self, d: Duration) -> Self {
        Timestamp(
            self.0
                .saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
        )
    }

    /// This time minus `d` (saturating).
    pub fn minus(self, d: Duration) -> Self {
        Timestamp(
            self.0
                .saturating_sub(i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
        )
    }

    /// Whole milliseconds from `earlier` to `self` (negative if `earlier` is later).
    pub fn millis_since(self, earlier: Timestamp) -> i64 {
        (self.0 - earlier.0) / 1000
    }

    /// Parses an RFC 3339 date-time ("2026-11-29T10:00:00Z", any offset).
    pub fn parse_rfc3339(s: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| Timestamp(t.with_timezone(&Utc).timestamp_micros()))
    }

    /// RFC 3339 in UTC with microsecond precision, e.g. `2026-11-29T10:00:00.000000Z`.
    pub fn to_rfc3339(self) -> String {
        match DateTime::<Utc>::from_timestamp_micros(self.0) {
            Some(t) => t.to_rfc3339_opts(SecondsFormat::Micros, true),
            None => format!("@{}us", self.0),
        }
    }
}

/// `d` in whole milliseconds, as logs and reports give durations (saturating: a `Duration`
/// holds more than `u64` milliseconds).
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl ToSql for Timestamp {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0))
    }
}

impl FromSql for Timestamp {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        i64::column_result(value).map(Timestamp)
    }
}

thread_local! {
    static WRITE_NOW: std::cell::Cell<Option<Timestamp>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` as a write at `now` on this thread: [`write_now`] reads it meanwhile. The store runs
/// every write transaction so, with its clock's time, so that what a write path stamps without
/// a clock of its own (the sync clock, `sync_log::local`) follows the store's clock (a test's).
pub fn writing_at<T>(now: Timestamp, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<Timestamp>);
    impl Drop for Reset {
        fn drop(&mut self) {
            WRITE_NOW.with(|w| w.set(self.0));
        }
    }
    let _reset = Reset(WRITE_NOW.with(|w| w.replace(Some(now))));
    f()
}

/// The time of the write running on this thread ([`writing_at`]), or the system's outside one.
pub fn write_now() -> Timestamp {
    WRITE_NOW
        .with(std::cell::Cell::get)
        .unwrap_or_else(Timestamp::now)
}

/// Where the store gets "now" from.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// The real clock, `.0` microseconds off: a device whose clock is wrong (the sync tests), or a
/// command given a "now" of its own (the CLI's `SITETRAIL_NOW` test hook). It moves at the real
/// clock's pace.
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock(pub i64);

impl Clock for OffsetClock {
    fn now(&self) -> Timestamp {
        Timestamp(Timestamp::now().0.saturating_add(self.0))
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start.0)))
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.0.fetch_add(micros, Ordering::SeqCst);
    }

    /// Sets the clock to `t`.
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// A clock that moves with tokio's: the wall time it was made at plus the time tokio's clock
/// has moved since. On a runtime whose time is paused (`#[tokio::test(start_paused = true)]`), the
/// database's "now" and every sleep, timeout and interval move together, so a test of a lease, a
/// retry delay or a pause passes it in no real time; elsewhere it is the real clock. (effectum's
/// job queue builds its clock the same way.)
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    wall: Timestamp,
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock that reads the wall time now, and then moves with tokio's. Called inside a
    /// runtime, it follows that runtime's clock (paused or not).
    pub fn new() -> Self {
        TokioClock {
            wall: Timestamp::now(),
            start: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        // Tokio's clock is read from the runtime of the calling thread (the blocking pool's
        // threads have it too); on a thread outside any runtime it is the monotonic clock.
        self.wall
            .plus(tokio::time::Instant::now().saturating_duration_since(self.start))
    }
}

/// A duration as people read it: `1 h 05 min`, `12 min`, `45 s`, the same words as the app and the
/// extension (tests/fixtures/durations.json is the table all three are tested against). Under a
/// minute, whole seconds to the nearest; from 59.5 s on, whole minutes to the nearest (from the
/// milliseconds, so a value is rounded once); halves go up.
pub fn duration_words(ms: i64) -> String {
    let ms = ms.max(0);
    let s = ms.saturating_add(500) / 1000;
    if s < 60 {
        return format!("{s} s");
    }
    let min = ms.saturating_add(30_000) / 60_000;
    if min < 60 {
        format!("{min} min")
    } else {
        format!("{} h {:02} min", min / 60, min % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_tokio_clock_moves_with_paused_time_and_its_sleeps() {
        let c = TokioClock::new();
        let t0 = c.now();
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(
            c.now().millis_since(t0),
            3_600_000,
            "an hour passed in no real time"
        );
        let on_blocking = tokio::task::spawn_blocking(move || c.now()).await.unwrap();
        assert_eq!(on_blocking, c.now(), "the blocking pool reads the same clock");
    }

    #[test]
    fn rfc3339_round_trip_keeps_microseconds() {
        let t = Timestamp::parse_rfc3339("2026-11-29T10:00:00.123456+01:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-29T09:00:00.123456Z");
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp(1_000));
        assert_eq!(c.now(), Timestamp(1_000));
        c.advance(Duration::from_millis(2));
        assert_eq!(c.now(), Timestamp(3_000));
    }
}
