//! An account as a whole: what it uses (`sitetrail-hub accounts list|show`) and its deletion
//! (`DELETE /v1/account` by the account holder, `sitetrail-hub accounts delete` by the person
//! running the hub). Both callers share these functions, so the two deletions are one.
//!
//! Invariants:
//! - a deletion is one transaction: every row keyed by the account (its records, series heads,
//!   devices, claims and the account itself) goes at COMMIT, or nothing does. It locks the
//!   account's devices' rows first, which every push holds until its COMMIT, then the account's
//!   row (a registration and a claim wait for it): the order every writer of the hub keeps
//!   (devices, account, jobs), so none deadlocks with it. A push in flight either commits before
//!   the deletion reads the records (and its records are deleted with the rest) or finds no
//!   device afterwards (403) and stores nothing; a request that logs in afterwards finds no
//!   account (401);
//! - the address log (`account_creation`, for the per-address limit on new accounts) holds no
//!   account id: its rows name an address and a time only, and expire by themselves;
//! - what is reported is counts, sizes and times: never a login hash or a payload.

use tokio_postgres::GenericClient;
use uuid::Uuid;

/// What an account uses, as the person running the hub sees it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AccountUsage {
    /// The account's id.
    pub account_id: Uuid,
    /// When it was created (Unix milliseconds, the database's clock).
    pub created_at_ms: i64,
    /// Devices it registered, those that left included.
    pub devices: i64,
    /// Devices that have not left.
    pub active_devices: i64,
    /// Records stored.
    pub records: i64,
    /// Payload bytes stored (ciphertext, as sent).
    pub bytes: i64,
    /// Classification jobs (any state).
    pub claim_jobs: i64,
    /// When a device of it last talked to the hub (to the minute), if one ever did.
    pub last_seen_at_ms: Option<i64>,
}

/// Every account with its usage (or the one `only` names), oldest first. A whole-table read:
/// for the hub's operator, not for a request path.
const USAGE_QUERY: &str = r#"
    SELECT a.account_id,
           floor(extract(epoch FROM a.created_at) * 1000)::int8 AS created_at_ms,
           d.devices, d.active_devices, d.last_seen_at_ms, r.records, r.bytes, c.claim_jobs
    FROM account a
    CROSS JOIN LATERAL (
        SELECT count(*)::int8 AS devices,
               (count(*) FILTER (WHERE left_at IS NULL))::int8 AS active_devices,
               floor(extract(epoch FROM max(last_seen_at)) * 1000)::int8 AS last_seen_at_ms
        FROM device WHERE account_id = a.account_id) d
    CROSS JOIN LATERAL (
        SELECT count(*)::int8 AS records, coalesce(sum(octet_length(payload)), 0)::int8 AS bytes
        FROM record WHERE account_id = a.account_id) r
    CROSS JOIN LATERAL (
        SELECT count(*)::int8 AS claim_jobs FROM claim_job WHERE account_id = a.account_id) c
    WHERE $1::uuid IS NULL OR a.account_id = $1
    ORDER BY a.created_at, a.account_id"#;

/// Every account's usage, oldest first.
pub async fn list(client: &impl GenericClient) -> Result<Vec<AccountUsage>, tokio_postgres::Error> {
    usage(client, None).await
}

/// One account's usage, if it exists.
pub async fn show(
    client: &impl GenericClient,
    account_id: Uuid,
) -> Result<Option<AccountUsage>, tokio_postgres::Error> {
    Ok(usage(client, Some(account_id)).await?.into_iter().next())
}

async fn usage(
    client: &impl GenericClient,
    only: Option<Uuid>,
) -> Result<Vec<AccountUsage>, tokio_postgres::Error> {
    let rows = client.query(USAGE_QUERY, &[&only]).await?;
    Ok(rows
        .iter()
        .map(|row| AccountUsage {
            account_id: row.get("account_id"),
            created_at_ms: row.get("created_at_ms"),
            devices: row.get("devices"),
            active_devices: row.get("active_devices"),
            records: row.get("records"),
            bytes: row.get("bytes"),
            claim_jobs: row.get("claim_jobs"),
            last_seen_at_ms: row.get("last_seen_at_ms"),
        })
        .collect())
}

/// What a deletion removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Deleted {
    /// Devices (left ones included).
    pub devices: u64,
    /// Records.
    pub records: u64,
    /// Classification jobs.
    pub claim_jobs: u64,
}

/// Deletes the account and every row of it, inside `tx` (the caller commits): `None` if there
/// is no such account. The account's waiting long-polls are woken at COMMIT (in every hub
/// process), so they answer now instead of at the end of their wait.
pub async fn delete(
    tx: &tokio_postgres::Transaction<'_>,
    account_id: Uuid,
) -> Result<Option<Deleted>, tokio_postgres::Error> {
    // Devices first: each push holds its devices' rows until COMMIT, so this waits for the
    // pushes in flight, and the records read below include theirs.
    tx.execute(
        "SELECT 1 FROM device WHERE account_id = $1 ORDER BY device_id FOR UPDATE",
        &[&account_id],
    )
    .await?;
    let found = tx
        .query_opt(
            "SELECT 1 AS found FROM account WHERE account_id = $1 FOR UPDATE",
            &[&account_id],
        )
        .await?;
    if found.is_none() {
        return Ok(None);
    }
    // A device registered while this waited for the account's row is deleted too (this
    // statement sees what committed before it). Their series heads go with them (ON DELETE
    // CASCADE).
    let devices = tx
        .execute("DELETE FROM device WHERE account_id = $1", &[&account_id])
        .await?;
    let records = tx
        .execute("DELETE FROM record WHERE account_id = $1", &[&account_id])
        .await?;
    // Nothing should be left (the heads cascade from the devices): said, not assumed.
    tx.execute("DELETE FROM series_head WHERE account_id = $1", &[&account_id])
        .await?;
    let claim_jobs = tx
        .execute("DELETE FROM claim_job WHERE account_id = $1", &[&account_id])
        .await?;
    tx.execute("DELETE FROM account WHERE account_id = $1", &[&account_id])
        .await?;
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&crate::notify::CHANNEL, &account_id.to_string()],
    )
    .await?;
    Ok(Some(Deleted {
        devices,
        records,
        claim_jobs,
    }))
}

/// A time in Unix milliseconds as (year, month, day, seconds of the day, milliseconds), UTC.
fn civil(ms: i64) -> (i64, i64, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil, for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rest, ms.rem_euclid(1000))
}

/// A time in Unix milliseconds as `YYYY-MM-DD HH:MM UTC`, for the operator's tables.
pub fn utc_minute(ms: i64) -> String {
    let (year, month, day, rest, _) = civil(ms);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// A time in Unix milliseconds in RFC 3339, UTC, to the millisecond (`2026-12-05T08:30:00.125Z`),
/// for JSON logs.
pub fn rfc3339_millis(ms: i64) -> String {
    let (year, month, day, rest, millis) = civil(ms);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

pub use crate::quota_words::{human_bytes, human_bytes_of};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes_read_as_people_write_them() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minute(1_764_935_999_999), "2025-12-05 11:59 UTC");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(utc_minute(-60_000), "1969-12-31 23:59 UTC");
        assert_eq!(rfc3339_millis(1_764_935_999_125), "2025-12-05T11:59:59.125Z");
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(2 * 1024 * 1024 * 1024), "2.0 GiB");
        assert_eq!(human_bytes_of(2_147_000_000, 2 << 30), "2.0 of 2.0 GiB");
        assert_eq!(human_bytes_of(1536, 64 << 10), "1.5 of 64.0 KiB");
        assert_eq!(human_bytes_of(10, 100), "10 of 100 bytes");
    }
}
