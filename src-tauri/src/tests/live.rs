//! Live updates: committed changes reach the UI as coalesced events.

use std::time::Duration;

use super::{visit, wait_for, TestApp};

#[test]
fn a_burst_of_commits_becomes_a_few_events() {
    let t = TestApp::start(|_| {});
    let seen = t.store_changes();
    // The app's own store handle notifies; a second handle (another process) would not.
    let state = tauri::Manager::state::<crate::state::AppState>(&t.app);
    for i in 0..50 {
        visit(&state.store, &format!("s{i}.example"), "x");
    }
    let first = wait_for(Duration::from_secs(10), || seen.lock().unwrap().first().cloned());
    assert_eq!(first["visits"], true, "{first}");
    // The time is what is tested: coalescing is a rate (one event per window at most), so the
    // events are counted over a fixed span of a little more than two windows.
    std::thread::sleep(Duration::from_millis(700));
    let n = seen.lock().unwrap().len();
    assert!(
        (1..=5).contains(&n),
        "50 commits in a burst should arrive as a few coalesced events, got {n}"
    );
}
