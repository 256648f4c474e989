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
        Quota::Bytes => crate::accounts::human_bytes_of(used, limit),
        Quota::Records => format!("{used} of {limit} records"),
        Quota::Devices => format!("{used} of {limit} devices registered (those that left included)"),
        Quota::ClaimJobs => format!("{used} of {limit} classification jobs"),
        Quota::Leases => format!("{used} of {limit} claims held at once"),
    }
}
