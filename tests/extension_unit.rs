//! The extension's own unit tests (queue, active-time tracker, host connection), run with node's
//! built-in test runner on the real modules in `extension/lib/`.

use std::process::Command;

#[test]
fn the_extension_unit_tests_pass_under_node() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/extension");
    let out = Command::new("node")
        .args(["--test", "test/"])
        .current_dir(dir)
        .output()
        .expect("node is needed for the extension's tests (scripts/setup installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Guard against a runner that found nothing to run.
    let passed: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(passed >= 20, "only {passed} extension tests ran:\n{stdout}");
}
