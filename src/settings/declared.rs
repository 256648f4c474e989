//! The one declaration of the settings: [`Settings`] and [`SCHEMA`], made together from one list
//! by the `settings!` macro, so a setting's name, type, default, limits, help, flag and variable
//! are written once.

use serde::{Deserialize, Serialize};

use super::{Provider, Spec};
use crate::store::Synchronous;
use crate::worker::WorkerConfig as W;

/// Declares [`Settings`] (with its defaults) and [`SCHEMA`] from one list: each setting's doc
/// comment, name, type, default and [`Spec`]. The worker's settings take their defaults and
/// limits from [`WorkerConfig`](crate::worker::WorkerConfig)'s [`Bounds`](crate::worker::Bounds),
/// where each is defined once.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $name:ident : $ty:ty = $default:expr, $spec:expr; )*) => {
        /// Saved settings. Every field has a default, so a file may hold only some of them.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct Settings {
            $( $(#[doc = $doc])* pub $name: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $name: $default, )* }
            }
        }

        /// Every setting, in the order the app's form shows them.
        pub static SCHEMA: &[Spec] = &[ $( $spec.named(stringify!($name)), )* ];
    };
}

settings! {
    /// The classifier.
    provider: Provider = Provider::Builtin,
        Spec::choice("provider", "Provider", Provider::NAMES).provider()
            .help("Which classifier answers: the built-in rules (offline), an OpenAI-compatible server, or a local Ollama.");
    /// The provider's base URL; `None`: the provider's default.
    base_url: Option<String> = None,
        Spec::url("base-url", "Base URL").provider()
            .optional("the provider's default: https://api.openai.com/v1, or http://127.0.0.1:11434 for Ollama")
            .help("The provider's address (LM Studio, vLLM, llama.cpp, OpenRouter, Groq... all speak the OpenAI API).");
    /// The model; `None`: the provider's default.
    model: Option<String> = None,
        Spec::text("model", "Model").provider()
            .optional("the provider's default: gpt-4o-mini, or llama3.2 for Ollama")
            .help("The model that classifies.");
    /// Sleep between ticks (ms).
    fixed_delay_ms: u64 = W::FIXED_DELAY_MS.default,
        Spec::integer("fixed-delay-ms", "Delay between requests", W::FIXED_DELAY_MS.min, W::FIXED_DELAY_MS.max).unit("ms")
            .help("Pause between one batch and the next: the queue is a buffer, so a burst of new sites never becomes a burst of calls.");
    /// Most classifier calls a minute; `None`: no limit beyond the fixed delay.
    max_requests_per_minute: Option<u32> = W::MAX_REQUESTS_PER_MINUTE.default,
        Spec::integer("max-requests-per-minute", "Requests per minute",
                      W::MAX_REQUESTS_PER_MINUTE.min as u64, W::MAX_REQUESTS_PER_MINUTE.max as u64)
            .optional("no limit beyond the delay")
            .help("Most classifier calls per minute, evenly spaced.");
    /// Jobs per call; `None`: 1 for builtin, 20 for remote providers.
    batch_size: Option<usize> = None,
        Spec::integer("batch-size", "Websites per request", W::BATCH_SIZE.min as u64, W::BATCH_SIZE.max as u64)
            .optional("1 for the built-in rules, 20 for remote providers")
            .help("Websites claimed and classified together in one call; each completes or fails on its own.");
    /// Attempts before a job is FAILED.
    max_attempts: u32 = W::MAX_ATTEMPTS.default,
        Spec::integer("max-attempts", "Attempts before giving up", W::MAX_ATTEMPTS.min as u64, W::MAX_ATTEMPTS.max as u64)
            .help("Attempts before a website's job is FAILED (failures that are not its fault, such as being offline, cost none).");
    /// Hosts never sent to a remote provider: exact domains and `*.suffix` patterns.
    exclusions: Vec<String> = Vec::new(),
        Spec::hosts("exclude", "Never send these to a remote provider").provider()
            .help("Hosts classified by the built-in rules only: a domain, or *.suffix for the suffix and everything under it (repeat the flag for more; added to the saved ones).");
    /// Retry delay after a job's first failed attempt (ms).
    retry_base_ms: u64 = W::RETRY_BASE_MS.default,
        Spec::integer("retry-delay-ms", "First retry after", W::RETRY_BASE_MS.min, W::RETRY_BASE_MS.max).unit("ms").advanced()
            .help("Delay before a failed job is retried the first time; later retries grow by the retry factor up to the longest retry delay, with ±20% jitter.");
    /// Growth of the retry delay per further attempt.
    retry_factor: f64 = W::RETRY_FACTOR.default,
        Spec::number("retry-factor", "Retry delay growth", W::RETRY_FACTOR.min, W::RETRY_FACTOR.max).advanced()
            .help("Growth of the retry delay per failed attempt.");
    /// Longest retry delay (ms).
    retry_max_ms: u64 = W::RETRY_MAX_MS.default,
        Spec::integer("retry-max-delay-ms", "Longest retry delay", W::RETRY_MAX_MS.min, W::RETRY_MAX_MS.max).unit("ms").advanced()
            .help("Longest delay between two attempts of a failed job.");
    /// The lease on a claimed job (ms): renewed by a live worker every third of it; a job whose
    /// worker died is reclaimed this long after its last renewal.
    processing_timeout_ms: u64 = W::PROCESSING_TIMEOUT_MS.default,
        Spec::integer("processing-timeout-ms", "Processing timeout", W::PROCESSING_TIMEOUT_MS.min, W::PROCESSING_TIMEOUT_MS.max).unit("ms").advanced()
            .help("The lease on a claimed job: a worker renews it every third of this while it works on the job, so a slow call never loses it; a job whose worker died is taken over this long after its last renewal.");
    /// Longest wait to connect to the provider (ms).
    connect_timeout_ms: u64 = crate::classify::http::HttpOptions::DEFAULT_CONNECT_MS,
        Spec::integer("connect-timeout-ms", "Connect timeout", 1, 600_000).unit("ms").provider().advanced()
            .help("Longest wait to connect to the provider.");
    /// Longest wait for a whole provider call (ms).
    request_timeout_ms: u64 = crate::classify::http::HttpOptions::DEFAULT_TOTAL_MS,
        Spec::integer("request-timeout-ms", "Request timeout", 1, 3_600_000).unit("ms").provider().advanced()
            .help("Longest wait for a whole provider call, from sending to the last byte of the answer.");
    /// How hard SQLite works to keep the last commits after a power cut.
    synchronous: Synchronous = Synchronous::Normal,
        Spec::choice("synchronous", "Durability", Synchronous::NAMES).store().advanced()
            .help("How hard SQLite keeps the last commits after a power cut: normal (a crash of Sitetrail loses nothing, a power cut may lose the last commits) or full (every commit synced to disk, an fsync each). Read when the database opens: the app, worker and daemon also take the saved setting, other commands only SITETRAIL_SYNCHRONOUS.");
    /// Minutes between automatic imports of the browsers' history; 0: never.
    auto_import_minutes: u32 = 15,
        Spec::integer("import-interval-min", "Import new history every", 0, 7 * 24 * 60).unit("min").import()
            .help("Minutes between imports of every detected browser profile (or those chosen), which keeps the history current without the extension; at most a week, 0: never (the daemon's flag takes 1 or more).");
    /// History files (profile paths) the automatic import reads; empty: every detected profile.
    import_profiles: Vec<String> = Vec::new(),
        Spec::paths("import-profile", "Browsers to import").import()
            .help("A browser profile's history file for the automatic import to read (repeat the flag for more); none: every profile found on this computer.");
}
