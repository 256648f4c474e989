// Prevents an extra console window on Windows in release.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

/// mimalloc for Rust's allocations, as the CLI (`src/main.rs`): an import from the app runs the
/// same two threads. WebKit and GTK keep their own allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    sitetrail_app::run();
}
