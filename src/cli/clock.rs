//! "Now" for the CLI: the system clock, or, in a debug build (what `cargo test` runs), the time
//! `SITETRAIL_NOW` gives, moving on from there at the system clock's pace. A test of the time
//! words (`--since today`, `week`) or of a lease that ran out gives the command the time it
//! needs instead of waiting for it: at midnight, "today" no longer changes under the test, and a
//! job claimed by a dead worker is reclaimable at once by a worker that lives a second later.
//!
//! A release build (every package) ignores the variable, like the native host's ack delay. The
//! time applies to what the command reads the clock for: the time words, "ago" and "from now"
//! in its output, and the database's clock (the store of every command that opens it).

use std::sync::{Arc, LazyLock};

use sitetrail::time::{Clock, OffsetClock, SystemClock};
use sitetrail::{Error, Result, Timestamp};

/// The variable a debug build reads "now" from, as RFC 3339 (`2026-12-02T10:00:00+09:00`).
const NOW_ENV: &str = "SITETRAIL_NOW";

/// Microseconds from the system clock to the given "now" (zero without the variable); the
/// variable's error, if it is not a time.
static SHIFT: LazyLock<std::result::Result<i64, String>> = LazyLock::new(|| {
    if !cfg!(debug_assertions) {
        return Ok(0);
    }
    match std::env::var(NOW_ENV) {
        Ok(v) if !v.trim().is_empty() => match Timestamp::parse_rfc3339(v.trim()) {
            Some(t) => Ok(t.as_micros().saturating_sub(Timestamp::now().as_micros())),
            None => Err(format!(
                "{NOW_ENV} must be an RFC 3339 date-time (2026-12-02T10:00:00+09:00), not {v:?}"
            )),
        },
        _ => Ok(0),
    }
});

/// Checks the variable; the CLI calls it before any command, so a bad value is an error
/// (exit 2) and not the system's time in its place.
pub(crate) fn check() -> Result<()> {
    SHIFT
        .as_ref()
        .map(|_| ())
        .map_err(|e| Error::InvalidInput(e.clone()))
}

/// The command's "now".
pub(crate) fn now() -> Timestamp {
    match *SHIFT {
        Ok(0) | Err(_) => Timestamp::now(),
        Ok(shift) => OffsetClock(shift).now(),
    }
}

/// The clock the command's store reads.
pub(crate) fn store_clock() -> Arc<dyn Clock> {
    match *SHIFT {
        Ok(0) | Err(_) => Arc::new(SystemClock),
        Ok(shift) => Arc::new(OffsetClock(shift)),
    }
}
