//! Quotas per account, each a flag of `sitetrail-hub serve` (`0`: none): payload bytes and
//! records stored, devices ever registered (a device that left counts until it is removed), claim
//! jobs, and claims held with a live lease.
//!
//! Invariants:
//! - a write that would take the account past a quota stores nothing: it is refused 507
//!   `quota_exceeded` with the quota's name and the account's own figures (never another's);
//! - the check is exact with any number of requests and hub processes at once: bytes and records
//!   are counters on the account's row (`account.bytes_stored`, `records_stored`,
//!   `claim_jobs`), moved by the write in its own transaction under that row's lock, and the
//!   device and lease counts are read under the same lock;
//! - every write's answer says the usage it changed and the limit, in the
//!   [`sitetrail_sync_wire::quota_headers`] (`USED/LIMIT`), and `GET /v1/quota` gives them all.

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use sitetrail_sync_wire::{quota_headers, Quota, QuotaRefusal, QuotaUse};
use tokio_postgres::types::Type;
use uuid::Uuid;

use crate::error::{HubError, HubResult};
pub use crate::quota_words::{describe, flag, name};
use crate::sql::Queries;

/// The default of `--quota-bytes`: 2 GiB of ciphertext (a person's devices over years hold tens
/// to hundreds of MiB).
pub const DEFAULT_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// The default of `--quota-records`: a million records (up to 1,000 operations each).
pub const DEFAULT_RECORDS: u64 = 1_000_000;
/// The default of `--quota-devices`: devices ever registered, left ones included.
pub const DEFAULT_DEVICES: u64 = 256;
/// The default of `--quota-claim-jobs`: one per website ever classified.
pub const DEFAULT_CLAIM_JOBS: u64 = 200_000;
/// The default of `--quota-leases`: claims held at once (a device asks about a few websites at
/// a time).
pub const DEFAULT_LEASES: u64 = 1_000;
/// The default of `--max-new-accounts-per-hour`, over every address.
pub const DEFAULT_NEW_ACCOUNTS_PER_HOUR: u32 = 500;

/// The hub's quotas per account (`None`: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quotas {
    /// Payload bytes stored.
    pub bytes: Option<u64>,
    /// Records stored.
    pub records: Option<u64>,
    /// Devices ever registered.
    pub devices: Option<u64>,
    /// Classification jobs.
    pub claim_jobs: Option<u64>,
    /// Live leases.
    pub leases: Option<u64>,
    /// New accounts per hour over every address (beside the per-address limit).
    pub new_accounts_per_hour: Option<u32>,
}

impl Default for Quotas {
    fn default() -> Quotas {
        Quotas {
            bytes: Some(DEFAULT_BYTES),
            records: Some(DEFAULT_RECORDS),
            devices: Some(DEFAULT_DEVICES),
            claim_jobs: Some(DEFAULT_CLAIM_JOBS),
            leases: Some(DEFAULT_LEASES),
            new_accounts_per_hour: Some(DEFAULT_NEW_ACCOUNTS_PER_HOUR),
        }
    }
}

impl Quotas {
    /// No limit at all.
    pub fn none() -> Quotas {
        Quotas {
            bytes: None,
            records: None,
            devices: None,
            claim_jobs: None,
            leases: None,
            new_accounts_per_hour: None,
        }
    }

    /// The limit of `quota`.
    pub fn limit(&self, quota: Quota) -> Option<u64> {
        match quota {
            Quota::Bytes => self.bytes,
            Quota::Records => self.records,
            Quota::Devices => self.devices,
            Quota::ClaimJobs => self.claim_jobs,
            Quota::Leases => self.leases,
        }
    }

    /// Refuses (507) if `used + wanted` would pass `quota`'s limit. `used` is what the account
    /// holds without the request.
    pub fn check(&self, quota: Quota, used: u64, wanted: u64) -> HubResult<()> {
        match self.limit(quota) {
            Some(limit) if wanted > 0 && used.saturating_add(wanted) > limit => {
                crate::metrics::METRICS.quota_refused(quota);
                Err(HubError::QuotaExceeded(QuotaRefusal {
                    quota,
                    used,
                    limit,
                    wanted,
                }))
            }
            _ => Ok(()),
        }
    }

    /// `quota`'s usage as the answer's header says it.
    pub fn header(&self, headers: &mut HeaderMap, quota: Quota, used: u64) {
        let value = match self.limit(quota) {
            Some(limit) => format!("{used}/{limit}"),
            None => format!("{used}/none"),
        };
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(header_name(quota)), value);
        }
    }

    /// `quota`'s usage with its limit.
    pub fn usage(&self, quota: Quota, used: u64) -> QuotaUse {
        QuotaUse {
            used,
            limit: self.limit(quota),
        }
    }
}

/// The header of `quota`.
pub fn header_name(quota: Quota) -> &'static str {
    match quota {
        Quota::Bytes => quota_headers::BYTES,
        Quota::Records => quota_headers::RECORDS,
        Quota::Devices => quota_headers::DEVICES,
        Quota::ClaimJobs => quota_headers::CLAIM_JOBS,
        Quota::Leases => quota_headers::LEASES,
    }
}

/// Devices the account registered, those that left included.
pub async fn devices(client: &impl Queries, account_id: Uuid) -> HubResult<u64> {
    let n: i64 = client
        .query_one(
            "SELECT count(*) AS n FROM device WHERE account_id = $1",
            &[(&account_id, Type::UUID)],
        )
        .await?
        .get("n");
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Claims the account holds with a lease that has not run out (the partial index of claimed
/// jobs serves it).
pub async fn leases(client: &impl Queries, account_id: Uuid) -> HubResult<u64> {
    let n: i64 = client
        .query_one(
            r#"SELECT count(*) AS n FROM claim_job
               WHERE account_id = $1 AND state = 'claimed' AND lease_until > now()"#,
            &[(&account_id, Type::UUID)],
        )
        .await?
        .get("n");
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The account's counters: (bytes stored, records stored, claim jobs).
pub async fn counters(client: &impl Queries, account_id: Uuid) -> HubResult<(u64, u64, u64)> {
    let row = client
        .query_opt(
            "SELECT bytes_stored, records_stored, claim_jobs FROM account WHERE account_id = $1",
            &[(&account_id, Type::UUID)],
        )
        .await?
        .ok_or(HubError::Unauthorized)?;
    let get = |column: &str| u64::try_from(row.get::<_, i64>(column)).unwrap_or(0);
    Ok((get("bytes_stored"), get("records_stored"), get("claim_jobs")))
}

/// Reads a size given to a flag: bytes, or a number with a binary unit (`512KiB`, `2 GiB`,
/// `1.5G`; `K`, `M`, `G`, `T` alone are the binary units too). `0` is no limit.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        "t" | "tib" | "tb" => 1 << 40,
        _ => return Err("a size is a number of bytes, or a number with KiB, MiB, GiB or TiB".into()),
    };
    let whole = |n: &str| n.parse::<u64>().map_err(|_| "not a size".to_owned());
    match number.split_once('.') {
        None => whole(number)?
            .checked_mul(factor)
            .ok_or_else(|| "the size is too large".into()),
        Some((int, frac)) if !frac.is_empty() && frac.len() <= 3 && factor > 1 => {
            let scale = 10u64.pow(u32::try_from(frac.len()).unwrap_or(3));
            let int = if int.is_empty() { 0 } else { whole(int)? };
            let frac = whole(frac)?;
            int.checked_mul(factor)
                .and_then(|i| i.checked_add(frac.checked_mul(factor)? / scale))
                .ok_or_else(|| "the size is too large".into())
        }
        Some(_) => Err("not a size".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_with_binary_units() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        for bad in ["", "GiB", "-1", "1.5", "2 PB", "1..5G", "99999999999999999999"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_quota_refuses_only_what_would_pass_it() {
        let q = Quotas {
            bytes: Some(100),
            records: None,
            ..Quotas::default()
        };
        assert!(q.check(Quota::Bytes, 60, 40).is_ok());
        assert!(q.check(Quota::Bytes, 100, 0).is_ok(), "nothing added");
        let refused = q.check(Quota::Bytes, 60, 41).unwrap_err();
        let body = refused.body();
        assert_eq!(body.error, sitetrail_sync_wire::ErrorCode::QuotaExceeded);
        assert_eq!(
            body.quota,
            Some(QuotaRefusal {
                quota: Quota::Bytes,
                used: 60,
                limit: 100,
                wanted: 41
            })
        );
        assert!(body.message.contains("--quota-bytes"), "{}", body.message);
        assert!(q.check(Quota::Records, u64::MAX, u64::MAX).is_ok(), "no limit");
        let mut headers = HeaderMap::new();
        q.header(&mut headers, Quota::Bytes, 60);
        q.header(&mut headers, Quota::Records, 7);
        assert_eq!(headers[quota_headers::BYTES], "60/100");
        assert_eq!(headers[quota_headers::RECORDS], "7/none");
    }
}
