# Sourced by scripts/test, scripts/run-tests and scripts/package: the workspace's one debug build.
#
# Every test of the workspace is built by this one cargo command, and the packages' debug profile
# bundles the very binaries it leaves in target/debug instead of building them again. The app is
# built with `custom-protocol`, so its UI is embedded and served as it ships (the end-to-end tests
# drive that app). A plain `cargo build` of the same crates would resolve other features (the
# tests' dev-dependencies turn on tokio's `test-util`, tauri's `test`, rusqlite's `trace`, ...)
# and build most of the tree a second time, which is what made the package step take minutes.
# shellcheck disable=SC2034  # used by the scripts that source this file
test_build=(--workspace --lib --bins --tests --features sitetrail-app/custom-protocol)
