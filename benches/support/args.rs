//! The benchmarks' command-line options.

/// `--visits N`: how many visits the synthetic history has (default 1,000,000).
pub fn visits() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--visits")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}
