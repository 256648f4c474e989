//! The one polling helper of every test crate: the integration tests (`tests/support`), the app's
//! command tests (`src-tauri/src/tests`) and its end-to-end tests and benchmark
//! (`src-tauri/tests/e2e/harness.rs`) include this file. Tests wait for a condition, never for a
//! guessed time.

use std::time::{Duration, Instant};

/// Calls `f` every `every` until it returns `Some` (returned) or `timeout` has passed (`None`).
pub fn poll<T>(timeout: Duration, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// [`poll`] for async tests: sleeps on the runtime between calls instead of blocking it.
#[allow(dead_code)]
pub async fn poll_async<T>(
    timeout: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}
