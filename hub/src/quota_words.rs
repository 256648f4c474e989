//! How a quota is named and said: in the wire's and the metrics' names, the flag that sets it and
//! a sentence of its usage. Below the quotas' checks ([`crate::quota`]) and the errors that refuse
//! a write ([`crate::error`]), which both say them.

use sitetrail_sync_wire::Quota;

/// `quota`'s name, as the wire and the metrics write it.
pub fn name(quota: Quota) -> &'static str {
    match quota {
        Quota::Bytes => "bytes",
        Quota::Records => "records",
        Quota::Devices => "devices",
        Quota::ClaimJobs => "claim_jobs",
        Quota::Leases => "leases",
    }
}

/// The flag that sets `quota`, for messages.
pub fn flag(quota: Quota) -> &'static str {
    match quota {
        Quota::Bytes => "--quota-bytes",
        Quota::Records => "--quota-records",
        Quota::Devices => "--quota-devices",
        Quota::ClaimJobs => "--quota-claim-jobs",
        Quota::Leases => "--quota-leases",
    }
}

/// What `quota` counts, for messages: `2.0 of 2.0 GiB`, `10 of 10 devices`.
pub fn describe(quota: Quota, used: u64, limit: u64) -> String {
    match quota {
        Quota::Bytes => human_bytes_of(used, limit),
        Quota::Records => format!("{used} of {limit} records"),
        Quota::Devices => format!("{used} of {limit} devices registered (those that left included)"),
        Quota::ClaimJobs => format!("{used} of {limit} classification jobs"),
        Quota::Leases => format!("{used} of {limit} claims held at once"),
    }
}

/// A size in bytes as people read it: `512 B`, `1.5 KiB`, `2.0 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)] // one decimal is shown
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `used` of `limit` bytes in the limit's unit: `2.0 of 2.0 GiB`, `512.0 of 1024.0 KiB`.
pub fn human_bytes_of(used: u64, limit: u64) -> String {
    let shown = human_bytes(limit);
    let Some((_, unit)) = shown.split_once(' ') else {
        return format!("{used} of {limit} bytes");
    };
    let divisor: u64 = match unit {
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "PiB" => 1 << 50,
        _ => return format!("{used} of {limit} bytes"),
    };
    #[allow(clippy::cast_precision_loss)] // one decimal is shown
    let (u, l) = (used as f64 / divisor as f64, limit as f64 / divisor as f64);
    format!("{u:.1} of {l:.1} {unit}")
}
