//! The JavaScript unit tests, run with node's built-in test runner on the real modules: the
//! extension's (`extension/test/`: queue, active-time tracker, host connection, formatting, in
//! `extension/lib/`) and the app UI's pure parts (`tests/js/`: formatting, in `ui/js/`).

use std::process::Command;

/// Runs `node --test <tests>/` in `dir` (under the repository); fails unless it passes and ran
/// at least `at_least` tests.
fn node_tests_pass(dir: &str, tests: &str, at_least: usize) {
    let dir = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("node")
        .args(["--test", &format!("{tests}/")])
        .current_dir(&dir)
        .output()
        .expect("node is needed for the JavaScript tests (scripts/setup installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test in {dir} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Guard against a runner that found nothing to run.
    let passed: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(passed >= at_least, "only {passed} tests ran in {dir}:\n{stdout}");
}

#[test]
fn the_extension_unit_tests_pass_under_node() {
    node_tests_pass("extension", "test", 20);
}

#[test]
fn the_app_ui_unit_tests_pass_under_node() {
    node_tests_pass(".", "tests/js", 2);
}
