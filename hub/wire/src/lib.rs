//! The sync hub's HTTP API, version 1: every route, request and answer shape, limit and header
//! that the hub (`sitetrail-hub`) and the devices (the `sitetrail` library) exchange, defined once
//! for both.
//!
//! The hub routes ciphertext and sees as little as it can: an account, its devices, per-device
//! numbered series of records (each an opaque, end-to-end encrypted payload), and classification
//! claims keyed by blinded tokens (an HMAC of a domain under a key the hub never has). It never
//! sees a URL, a title, a domain, a category or a visit time. See `docs/SYNC.md` for the protocol
//! and the cryptography, which lives on the devices only.
//!
//! Every type here checks its own shape when it is read ([`Series::new`], [`Token::new`],
//! [`Login::from_base64url`], [`Record::check`]), so neither side ever acts on a value outside
//! the limits in [`limits`].

#![warn(missing_docs)]

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The routes. Every route is versioned; a later version gets its own prefix.
pub mod routes {
    /// `POST`: create an account ([`crate::CreateAccount`] → [`crate::AccountCreated`]). No login.
    pub const ACCOUNTS: &str = "/v1/accounts";
    /// `DELETE`: the account the login opens, and everything of it, is deleted (204).
    pub const ACCOUNT: &str = "/v1/account";
    /// `GET`: the account's devices ([`crate::DevicesResponse`]).
    pub const DEVICES: &str = "/v1/devices";
    /// `PUT`: register (or touch) a device; `DELETE`: the device leaves. `{device_id}` is a UUID.
    pub const DEVICE: &str = "/v1/devices/{device_id}";
    /// `POST`: push records ([`crate::PushRequest`] → [`crate::PushResponse`]); `GET` with
    /// [`crate::PageQuery`]: a page of one series ([`crate::PageResponse`]).
    pub const RECORDS: &str = "/v1/records";
    /// `GET`: the last index of every series of the account ([`crate::IndexResponse`]).
    pub const INDEX: &str = "/v1/index";
    /// `GET` with [`crate::WaitQuery`]: the account's index ([`crate::IndexResponse`]) once
    /// another device's series has more than the asker has seen, or after the wait (long-poll).
    pub const INDEX_WAIT: &str = "/v1/index/wait";
    /// `POST`: ask for classification claims ([`crate::ClaimRequest`] → [`crate::ClaimResponse`]).
    pub const CLAIMS: &str = "/v1/claims";
    /// `POST`: the answer for these claims is pushed ([`crate::SettleRequest`] → [`crate::SettleResponse`]).
    pub const CLAIMS_COMPLETE: &str = "/v1/claims/complete";
    /// `POST`: give these claims back unanswered, for another device to take.
    pub const CLAIMS_RELEASE: &str = "/v1/claims/release";
    /// `GET`: 200 [`crate::Health`] when the hub and its database answer, 503 otherwise. No login.
    pub const HEALTH: &str = "/v1/health";
    /// `GET`: what the account uses of each of the hub's quotas ([`crate::QuotaResponse`]).
    pub const QUOTA: &str = "/v1/quota";

    /// [`DEVICE`] for one device.
    pub fn device(device_id: uuid::Uuid) -> String {
        format!("/v1/devices/{}", device_id.hyphenated())
    }
}

/// The limits the hub enforces on every request; a device keeps within them so that it is never
/// refused. Each refusal names the limit.
pub mod limits {
    /// Largest request body, in bytes (JSON, with payloads in base64).
    pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
    /// Most records in one push.
    pub const MAX_RECORDS_PER_PUSH: usize = 200;
    /// Largest payload of one record (ciphertext, before base64), in bytes.
    pub const MAX_RECORD_BYTES: usize = 256 * 1024;
    /// Most payload bytes (before base64) a device puts in one push, so the body stays under
    /// [`MAX_BODY_BYTES`] with room for base64 and JSON.
    pub const MAX_PUSH_PAYLOAD_BYTES: usize = 8 * 1024 * 1024;
    /// Most records in one page of a pull.
    pub const MAX_PAGE_RECORDS: u32 = 200;
    /// Most payload bytes in one page: the hub ends a page early (with `more`) past this.
    pub const MAX_PAGE_PAYLOAD_BYTES: usize = 8 * 1024 * 1024;
    /// Most tokens in one claim request, and claims in one settle request.
    pub const MAX_CLAIM_ITEMS: usize = 100;
    /// Shortest and longest lease a claim may ask for, in milliseconds.
    pub const LEASE_MS: std::ops::RangeInclusive<u64> = 1_000..=3_600_000;
    /// Longest series name, in bytes (`[a-z0-9_-]`).
    pub const MAX_SERIES_NAME: usize = 32;
    /// Most series one device may write.
    pub const MAX_SERIES_PER_DEVICE: usize = 16;
    /// Most devices one account may register.
    pub const MAX_DEVICES_PER_ACCOUNT: usize = 64;
    /// Accounts one network address may create per minute.
    pub const ACCOUNTS_PER_ADDRESS_PER_MINUTE: u32 = 10;
    /// Longest wait of one long-poll ([`crate::routes::INDEX_WAIT`]), in milliseconds: under the
    /// idle timeout of common proxies and load balancers (60 s).
    pub const MAX_WAIT_MS: u64 = 30_000;
}

/// The header every device sends with its id, so the hub knows when each device was last seen.
pub const DEVICE_HEADER: &str = "x-sitetrail-device";

/// The headers of a write's answer that give the account's usage of a quota, as `USED/LIMIT`
/// (`USED/none` when the hub sets no limit): the push's bytes and records, a registration's and a
/// leaving's devices, a claim's jobs and live leases.
pub mod quota_headers {
    /// Payload bytes stored.
    pub const BYTES: &str = "x-sitetrail-quota-bytes";
    /// Records stored.
    pub const RECORDS: &str = "x-sitetrail-quota-records";
    /// Devices registered, those that left included.
    pub const DEVICES: &str = "x-sitetrail-quota-devices";
    /// Classification jobs.
    pub const CLAIM_JOBS: &str = "x-sitetrail-quota-claim-jobs";
    /// Claims held with a lease that has not run out.
    pub const LEASES: &str = "x-sitetrail-quota-leases";
}

/// Why a value from the other side was refused: a short sentence for an error message, never a
/// copy of the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

fn refuse<T>(why: impl Into<String>) -> Result<T, WireError> {
    Err(WireError(why.into()))
}

/// An account's login: 32 bytes a device derives from the account secret. The hub keeps only its
/// SHA-256, so a copy of the hub's database logs nobody in. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Login([u8; 32]);

impl Login {
    /// The login made of `bytes`.
    pub fn new(bytes: [u8; 32]) -> Login {
        Login(bytes)
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Its text form (base64url, no padding: 43 characters).
    pub fn to_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }

    /// Reads the text form.
    pub fn from_base64url(text: &str) -> Result<Login, WireError> {
        if text.len() != 43 {
            return refuse("a login is 43 base64url characters");
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(text)
            .or_else(|_| refuse("a login is 43 base64url characters"))?;
        let bytes: [u8; 32] = bytes.try_into().or_else(|_| refuse("a login is 32 bytes"))?;
        Ok(Login(bytes))
    }
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Login(***)")
    }
}

impl Serialize for Login {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64url())
    }
}

impl<'de> Deserialize<'de> for Login {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Login::from_base64url(&text).map_err(serde::de::Error::custom)
    }
}

/// The `Authorization` header's value for `account` logging in with `login`:
/// `Bearer <account uuid>.<login in base64url>`.
pub fn authorization(account: Uuid, login: &Login) -> String {
    format!("Bearer {}.{}", account.hyphenated(), login.to_base64url())
}

/// Reads an `Authorization` header written by [`authorization`].
pub fn parse_authorization(header: &str) -> Result<(Uuid, Login), WireError> {
    let Some(rest) = header.strip_prefix("Bearer ") else {
        return refuse("the Authorization header must be `Bearer <account>.<login>`");
    };
    let Some((account, login)) = rest.trim().split_once('.') else {
        return refuse("the Authorization header must be `Bearer <account>.<login>`");
    };
    let account = Uuid::try_parse(account).or_else(|_| refuse("the account id is not a UUID"))?;
    Ok((account, Login::from_base64url(login)?))
}

/// The name of one of a device's series (`[a-z0-9_-]`, 1 to [`limits::MAX_SERIES_NAME`] bytes).
/// The devices use a few fixed names (forgetting, state, visits), so the hub can be asked for the
/// deletions first; which one a record is in is all the hub learns of what it holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Series(String);

impl Series {
    /// The series named `name`, if the name is well formed.
    pub fn new(name: &str) -> Result<Series, WireError> {
        let ok = !name.is_empty()
            && name.len() <= limits::MAX_SERIES_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if ok {
            Ok(Series(name.to_owned()))
        } else {
            refuse(format!(
                "a series name is 1 to {} characters of a-z, 0-9, _ and -",
                limits::MAX_SERIES_NAME
            ))
        }
    }

    /// Its name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Series {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Series {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Series::new(&text).map_err(serde::de::Error::custom)
    }
}

/// A blinded domain: 64 lower-case hex characters (an HMAC-SHA256 the devices compute under a key
/// derived from the account secret). The hub keeps one classification job per account and token.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    /// The token written as `hex`, if it is 64 lower-case hex characters.
    pub fn new(hex: &str) -> Result<Token, WireError> {
        if hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Token(hex.to_owned()))
        } else {
            refuse("a token is 64 lower-case hex characters")
        }
    }

    /// Its hex form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Token::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Opaque bytes (a record's ciphertext), carried in JSON as standard base64.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Payload(pub Vec<u8>);

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Payload({} bytes)", self.0.len())
    }
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        // Base64 is 4 characters per 3 bytes: refuse before decoding what cannot fit.
        if text.len() > (limits::MAX_RECORD_BYTES / 3 + 1) * 4 {
            return Err(serde::de::Error::custom(format!(
                "a record's payload is at most {} bytes",
                limits::MAX_RECORD_BYTES
            )));
        }
        let bytes = STANDARD
            .decode(text.as_bytes())
            .map_err(|_| serde::de::Error::custom("a record's payload is not base64"))?;
        if bytes.len() > limits::MAX_RECORD_BYTES {
            return Err(serde::de::Error::custom(format!(
                "a record's payload is at most {} bytes",
                limits::MAX_RECORD_BYTES
            )));
        }
        Ok(Payload(bytes))
    }
}

/// One record of a device's series: its place (`device_id`, `series`, `idx`, counted from 1 with
/// no gaps), its id (a UUIDv7 made when the device sealed it; a repeated push carries the same
/// id) and its ciphertext.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The record's id.
    pub record_id: Uuid,
    /// The device whose series it belongs to.
    pub device_id: Uuid,
    /// The series.
    pub series: Series,
    /// Its index in the series, from 1.
    pub idx: u64,
    /// The ciphertext (the hub never reads it).
    pub payload: Payload,
}

impl Record {
    /// Whether the record keeps within the limits: an index from 1 that fits PostgreSQL's
    /// `bigint`, a payload of at most [`limits::MAX_RECORD_BYTES`].
    pub fn check(&self) -> Result<(), WireError> {
        if self.idx == 0 || self.idx > i64::MAX as u64 {
            return refuse("a record's idx counts from 1 and fits a signed 64-bit integer");
        }
        if self.payload.0.is_empty() || self.payload.0.len() > limits::MAX_RECORD_BYTES {
            return refuse(format!(
                "a record's payload is 1 to {} bytes",
                limits::MAX_RECORD_BYTES
            ));
        }
        Ok(())
    }
}

/// `POST /v1/accounts`: a new account, named by an id and a login the device derived from a new
/// account secret.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CreateAccount {
    /// The account's id.
    pub account_id: Uuid,
    /// Its login (the hub keeps its SHA-256).
    pub login: Login,
}

/// The answer to [`CreateAccount`] (201; 409 if the id is taken).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountCreated {
    /// The account's id.
    pub account_id: Uuid,
}

/// A device of the account, as the hub knows it (its name is in its own encrypted records).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The device's id.
    pub device_id: Uuid,
    /// When it registered (Unix milliseconds, the hub's clock).
    pub created_at_ms: i64,
    /// When it last talked to the hub (Unix milliseconds, to the minute).
    pub last_seen_at_ms: i64,
    /// When it left, if it did.
    pub left_at_ms: Option<i64>,
}

/// `GET /v1/devices`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevicesResponse {
    /// Every device the account registered, oldest first.
    pub devices: Vec<DeviceInfo>,
}

/// `POST /v1/records`: records to store. Each must be from a registered device of the account
/// that has not left.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PushRequest {
    /// At most [`limits::MAX_RECORDS_PER_PUSH`], in index order per series.
    pub records: Vec<Record>,
}

/// What became of one pushed record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PushStatus {
    /// Stored now.
    Stored,
    /// Already stored with the same record id: acknowledged, not stored again.
    Duplicate,
    /// Another record (another id) already holds this place: the device's series is not what it
    /// thinks (two devices with one id, or a restored copy of a device's database).
    Conflict,
    /// The index is past the next free place of its series: push the missing ones first.
    Gap,
}

impl PushStatus {
    /// Whether the device may forget the record: the hub holds it.
    pub fn is_acknowledged(self) -> bool {
        matches!(self, PushStatus::Stored | PushStatus::Duplicate)
    }
}

/// One pushed record's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushResult {
    /// The record's device.
    pub device_id: Uuid,
    /// Its series.
    pub series: Series,
    /// Its index.
    pub idx: u64,
    /// What became of it.
    pub status: PushStatus,
}

/// The answer to [`PushRequest`]: one result per record, in the request's order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushResponse {
    /// The results.
    pub results: Vec<PushResult>,
}

/// The last index stored in one series.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesHead {
    /// The series' device.
    pub device_id: Uuid,
    /// The series.
    pub series: Series,
    /// Its last index (records `1..=last_idx` are stored).
    pub last_idx: u64,
}

/// What a long-poll compares with its `seen` ([`WaitQuery`]): the records of `series` held by
/// every device but `asker` (every device when `None`), the sum of their last indexes. The hub
/// answers a wait once this is more than `seen`; the device asks with what it has applied.
pub fn records_of_others(heads: &[SeriesHead], asker: Option<Uuid>, series: &Series) -> u64 {
    heads
        .iter()
        .filter(|h| Some(h.device_id) != asker && h.series == *series)
        .map(|h| h.last_idx)
        .fold(0, u64::saturating_add)
}

/// `GET /v1/index`: every series of the account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexResponse {
    /// One head per series.
    pub series: Vec<SeriesHead>,
}

/// `GET /v1/index/wait?series=…&seen=…&wait_ms=…`: wait until the records of the other devices'
/// `series` (all devices but the one in the device header) add up to more than `seen`, at most
/// `wait_ms` (default and cap [`limits::MAX_WAIT_MS`]); then the index, as `GET /v1/index`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitQuery {
    /// The series counted.
    pub series: Series,
    /// How many records of the other devices' `series` the asker holds (the sum of their indexes).
    pub seen: u64,
    /// How long to wait at most, in milliseconds.
    pub wait_ms: Option<u64>,
}

/// `GET /v1/records?device_id=…&series=…&after=…&limit=…`: the records of one series after an
/// index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageQuery {
    /// The series' device.
    pub device_id: Uuid,
    /// The series.
    pub series: Series,
    /// Records with a greater index (0: from the first).
    pub after: u64,
    /// At most this many (default and cap [`limits::MAX_PAGE_RECORDS`]).
    pub limit: Option<u32>,
}

/// A record as the hub stored it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRecord {
    /// The record.
    #[serde(flatten)]
    pub record: Record,
    /// When the hub received it (Unix milliseconds).
    pub received_at_ms: i64,
}

/// A page of a series, in index order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageResponse {
    /// The records, consecutive from `after + 1`.
    pub records: Vec<StoredRecord>,
    /// Whether the series holds more after the last of these.
    pub more: bool,
}

/// One website a device is about to ask a remote provider about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimItem {
    /// The website's blinded token.
    pub token: Token,
    /// The user asked for a new answer: grant a claim even if another device answered already.
    #[serde(default)]
    pub again: bool,
}

/// `POST /v1/claims`: may this device ask the provider about these websites?
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClaimRequest {
    /// The asking device.
    pub device_id: Uuid,
    /// How long a granted claim lasts without news (within [`limits::LEASE_MS`]); a device that
    /// asks again for a token it holds renews it.
    pub lease_ms: u64,
    /// At most [`limits::MAX_CLAIM_ITEMS`].
    pub items: Vec<ClaimItem>,
}

/// The answer for one token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ClaimState {
    /// This device asks the provider, then pushes the answer and completes the claim.
    Granted {
        /// The claim, for complete or release.
        claim_id: Uuid,
        /// How many claims this website's job has had (this one included).
        attempts: u32,
    },
    /// Another device is asking (or deciding right now): its answer will arrive as a record;
    /// ask again after this long if it has not.
    Held {
        /// How long until the holder's lease runs out (at least a second).
        retry_after_ms: u64,
    },
    /// Another device has answered and pushed its answer: pull it.
    Done {
        /// When it was answered (Unix milliseconds).
        done_at_ms: i64,
    },
}

/// One token's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimAnswer {
    /// The token asked about.
    pub token: Token,
    /// The answer.
    #[serde(flatten)]
    pub state: ClaimState,
}

/// The answer to [`ClaimRequest`]: one per item, in the request's order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimResponse {
    /// The answers.
    pub claims: Vec<ClaimAnswer>,
}

/// A claim to settle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settle {
    /// Its token.
    pub token: Token,
    /// The claim granted for it.
    pub claim_id: Uuid,
}

/// `POST /v1/claims/complete` (the answer is pushed) or `/v1/claims/release` (no answer: let
/// another device try).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SettleRequest {
    /// The device that holds the claims.
    pub device_id: Uuid,
    /// At most [`limits::MAX_CLAIM_ITEMS`].
    pub claims: Vec<Settle>,
}

/// The answer to [`SettleRequest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettleResponse {
    /// Claims settled.
    pub settled: u32,
    /// Claims this device no longer held (its lease ran out and another device took it, or it
    /// was settled before): nothing changed for them.
    pub stale: u32,
}

/// `GET /v1/health`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// The hub's schema version in its database.
    pub schema_version: i64,
}

/// One quota: what the account uses, and the limit (`None`: the hub sets none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaUse {
    /// What the account uses.
    pub used: u64,
    /// The most it may use, if the hub sets a limit.
    pub limit: Option<u64>,
}

/// `GET /v1/quota`: the account's usage of each quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaResponse {
    /// Payload bytes stored.
    pub bytes: QuotaUse,
    /// Records stored.
    pub records: QuotaUse,
    /// Devices registered (those that left included).
    pub devices: QuotaUse,
    /// Classification jobs.
    pub claim_jobs: QuotaUse,
    /// Claims held with a live lease.
    pub leases: QuotaUse,
}

/// Which quota a `quota_exceeded` refusal is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quota {
    /// Payload bytes stored.
    Bytes,
    /// Records stored.
    Records,
    /// Devices registered.
    Devices,
    /// Classification jobs.
    ClaimJobs,
    /// Live leases.
    Leases,
}

/// The figures of a `quota_exceeded` refusal: the account's own, never another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaRefusal {
    /// The quota.
    pub quota: Quota,
    /// What the account uses now (the refused request stored nothing).
    pub used: u64,
    /// The limit.
    pub limit: u64,
    /// What the request would have added.
    pub wanted: u64,
}

/// What kind of refusal an error answer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: the request is malformed or outside a limit; the message says which.
    BadRequest,
    /// 401: no login, or a login that does not open this account.
    Unauthorized,
    /// 403: the login is right but the device may not do this (left, or not this account's).
    Forbidden,
    /// 404: no such account, device or route.
    NotFound,
    /// 409: the request does not fit what is stored (an account id taken).
    Conflict,
    /// 413: the body is over [`limits::MAX_BODY_BYTES`].
    TooLarge,
    /// 429: too many requests of this kind from this address; try later.
    TooManyRequests,
    /// 503: the hub's database is unreachable; try later.
    Unavailable,
    /// 507: the account is at one of the hub's quotas; nothing of the request was stored
    /// ([`ErrorBody::quota`] says which).
    QuotaExceeded,
    /// 500: the hub failed.
    Internal,
}

/// The body of every error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The kind of refusal.
    pub error: ErrorCode,
    /// What was wrong, in a sentence (never a copy of what was sent).
    pub message: String,
    /// For `quota_exceeded`: which quota, and the account's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<QuotaRefusal>,
    /// For `forbidden`: true when the account has no such device at all (not one that left):
    /// the hub was restored from a dump taken before the device registered, and the device may
    /// register again under the same id. Absent (false) from hubs before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unregistered: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_poll_counts_the_other_devices_records_of_its_series_only() {
        let (me, other, third) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let ops = Series::new("ops").unwrap();
        let head = |device_id, series: &str, last_idx| SeriesHead {
            device_id,
            series: Series::new(series).unwrap(),
            last_idx,
        };
        let heads = [
            head(me, "ops", 50),
            head(other, "ops", 7),
            head(third, "ops", 5),
            head(other, "later", 100),
        ];
        assert_eq!(records_of_others(&heads, Some(me), &ops), 12);
        assert_eq!(
            records_of_others(&heads, None, &ops),
            62,
            "no device header: every device"
        );
        let full = [head(other, "ops", u64::MAX), head(third, "ops", 1)];
        assert_eq!(records_of_others(&full, Some(me), &ops), u64::MAX, "saturates");
    }

    #[test]
    fn the_login_header_reads_back_and_hides_the_login() {
        let account = Uuid::from_u128(7);
        let login = Login::new([9; 32]);
        let header = authorization(account, &login);
        assert_eq!(parse_authorization(&header), Ok((account, login.clone())));
        assert_eq!(format!("{login:?}"), "Login(***)");
        for bad in [
            "",
            "Bearer",
            "Basic x",
            "Bearer nope.x",
            "Bearer 00000000-0000-0000-0000-000000000007.short",
        ] {
            assert!(parse_authorization(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn series_and_tokens_are_checked() {
        assert!(Series::new("visits").is_ok());
        for bad in ["", "Visits", "a b", "é", &"x".repeat(33)] {
            assert!(Series::new(bad).is_err(), "{bad:?}");
        }
        assert!(Token::new(&"ab".repeat(32)).is_ok());
        for bad in ["", &"AB".repeat(32), &"ab".repeat(31), &"zz".repeat(32)] {
            assert!(Token::new(bad).is_err(), "{bad:?}");
        }
        let json = format!(r#"{{"token":"{}","again":false}}"#, "A".repeat(64));
        assert!(serde_json::from_str::<ClaimItem>(&json).is_err());
    }

    #[test]
    fn records_round_trip_and_keep_their_limits() {
        let record = Record {
            record_id: Uuid::from_u128(1),
            device_id: Uuid::from_u128(2),
            series: Series::new("visits").unwrap(),
            idx: 1,
            payload: Payload(vec![1, 2, 3]),
        };
        let json = serde_json::to_string(&record).unwrap();
        assert!(json.contains(r#""payload":"AQID""#), "{json}");
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), record);
        assert!(record.check().is_ok());
        assert!(Record {
            idx: 0,
            ..record.clone()
        }
        .check()
        .is_err());
        assert!(Record {
            idx: u64::MAX,
            ..record.clone()
        }
        .check()
        .is_err());
        assert!(Record {
            payload: Payload(vec![]),
            ..record.clone()
        }
        .check()
        .is_err());
        let huge = Record {
            payload: Payload(vec![0; limits::MAX_RECORD_BYTES + 1]),
            ..record
        };
        assert!(huge.check().is_err());
        // Too long to be a payload within the limit: refused before decoding.
        let json = serde_json::to_string(&huge).unwrap();
        assert!(serde_json::from_str::<Record>(&json).is_err());
    }

    #[test]
    fn claim_states_are_tagged() {
        let answer = ClaimAnswer {
            token: Token::new(&"0".repeat(64)).unwrap(),
            state: ClaimState::Held { retry_after_ms: 1500 },
        };
        let json = serde_json::to_value(&answer).unwrap();
        assert_eq!(json["state"], "held");
        assert_eq!(json["retry_after_ms"], 1500);
        assert_eq!(serde_json::from_value::<ClaimAnswer>(json).unwrap(), answer);
    }
}
