//! The hub's HTTP API (docs/SYNC.md), as a device calls it.
//!
//! Every answer is read with a cap; every failure becomes an [`Error::Sync`] whose kind says what
//! to do: `offline` (the hub cannot be reached, or is unavailable: the records wait, nothing is
//! lost), `needs_user` (the key does not open the account, or this device left it), `conflict`,
//! `provider_failed` (the hub answered something that is not its API). A message never holds the
//! login, the key or a record's contents.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

use sitetrail_sync_wire::{self as wire, routes, Login};

use crate::error::{Error, ErrorKind, Result};

/// How long one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long connecting may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection to the hub is kept idle for the next request: under the hub's own
/// idle timeout (`sitetrail-hub serve --header-timeout`, 10 s by default), so the client lets a
/// connection go before the hub closes it. Kept past it, a request could be sent on a connection
/// the hub was closing at that moment and fail with a transport error (pushes lost that race in
/// `hub/benches/load.rs`, whose devices push every 5-15 s). `hub/tests/cli.rs` checks it against
/// the hub's default.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

fn sync_error(kind: ErrorKind, message: impl Into<String>) -> Error {
    Error::Sync {
        kind,
        message: message.into(),
    }
}

/// A hub URL as the user gave it, checked and without a trailing slash: `http` or `https`, a
/// host, no credentials, query or fragment.
pub fn normalise_hub_url(input: &str) -> Result<String> {
    let bad = |why: &str| Error::InvalidInput(format!("the hub URL is not usable: {why}"));
    let url =
        url::Url::parse(input.trim()).map_err(|_| bad("it is not a URL (e.g. https://hub.example.org)"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("it must not hold a user name or password"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("it must not have a query or a fragment"));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// How this device may reach its hub: what the user allowed when linking it.
#[derive(Clone, Debug, Default)]
pub struct Transport {
    /// Plain `http://` to a host that is not this machine (`--allow-insecure-http`, kept in the
    /// link): the login crosses the network in clear.
    pub allow_insecure_http: bool,
    /// Certificate authorities trusted for the hub besides the system's ([`Trust::load`]).
    pub trust: Trust,
}

/// The environment variable naming a PEM file of certificate authorities to trust for the hub,
/// when the link names none (`--ca-file` at setup or join is kept in the link).
pub const CA_FILE_VAR: &str = "SITETRAIL_SYNC_CA_FILE";

/// Certificate authorities trusted for the hub besides the system's: a private CA's.
#[derive(Clone, Default)]
pub struct Trust {
    /// The file they came from.
    pub file: Option<std::path::PathBuf>,
    certificates: Vec<reqwest::Certificate>,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("file", &self.file)
            .field("certificates", &self.certificates.len())
            .finish()
    }
}

impl Trust {
    /// Reads the PEM certificates of `file`, else of the file [`CA_FILE_VAR`] names, else none
    /// (blocking: a file read).
    pub fn load(file: Option<&std::path::Path>) -> Result<Trust> {
        let from_env = std::env::var_os(CA_FILE_VAR)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from);
        let Some(file) = file.map(std::path::Path::to_path_buf).or(from_env) else {
            return Ok(Trust::default());
        };
        crate::blocking::note("ca file");
        let bad = |why: String| {
            Error::InvalidInput(format!(
                "the certificate authority file {} is not usable: {why}",
                file.display()
            ))
        };
        let pem = std::fs::read(&file).map_err(|e| bad(e.to_string()))?;
        let certificates = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
        if certificates.is_empty() {
            return Err(bad(
                "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()
            ));
        }
        Ok(Trust {
            file: Some(file),
            certificates,
        })
    }
}

/// Whether `url`'s host is this machine: `localhost`, 127.0.0.0/8 or ::1 (also as
/// `::ffff:127.x.x.x`). Other names are not trusted to resolve to it.
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        None => false,
    }
}

/// True if a request to `hub` would carry the login in clear over a network: `http://` to a host
/// that is not this machine. A URL that does not parse is not judged here ([`normalise_hub_url`]
/// refuses it).
pub fn is_insecure(hub: &str) -> bool {
    url::Url::parse(hub.trim()).is_ok_and(|url| url.scheme() == "http" && !is_loopback(&url))
}

/// Refuses a hub reached in clear over a network unless the user allowed it.
pub fn check_transport(hub: &str, transport: &Transport) -> Result<()> {
    if is_insecure(hub) && !transport.allow_insecure_http {
        return Err(Error::InvalidInput(format!(
            "the hub at {} is plain http:// on another machine: its login would cross the network in clear, \
             and anyone on the way could push into the account or make its devices leave. Use https:// \
             (README, \"Sync hub\"), or, on a network that is yours alone, link with --allow-insecure-http \
             (`sitetrail sync leave`, then `sitetrail sync join --hub URL --allow-insecure-http`)",
            hub.trim().trim_end_matches('/')
        )));
    }
    Ok(())
}

/// What `sync status` and every sync say while a hub is reached in clear.
pub const INSECURE_WARNING: &str = "the hub is reached over plain http:// (--allow-insecure-http): \
     the login crosses the network in clear";

/// How [`quota_full`]'s sentence begins.
pub const QUOTA_FULL: &str = "the hub's quota for this account is full";

/// The quota sentence of a sync's error as the link keeps it (`last_error`, which [`Error`]'s
/// display prefixes with `sync: `), if the hub refused the sync at the account's quota.
pub fn quota_full_in(last_error: &str) -> Option<&str> {
    let message = last_error.strip_prefix("sync: ").unwrap_or(last_error);
    message.starts_with(QUOTA_FULL).then_some(message)
}

/// What a device says when the hub refuses a write at the account's quota: the hub's figures, in
/// plain words, and that nothing is lost (the records stay sealed here and go once there is room).
pub fn quota_full(refusal: &wire::QuotaRefusal) -> String {
    let (used, limit) = (refusal.used, refusal.limit);
    let figures = match refusal.quota {
        wire::Quota::Bytes => bytes_of(used, limit),
        wire::Quota::Records => format!("{used} of {limit} records"),
        wire::Quota::Devices => format!("{used} of {limit} devices (those that left included)"),
        wire::Quota::ClaimJobs => format!("{used} of {limit} classification jobs"),
        wire::Quota::Leases => format!("{used} of {limit} claims held at once"),
    };
    format!(
        "{QUOTA_FULL}: {figures}; what is recorded here stays here and is sent \
         once there is room (ask the hub's operator for more)"
    )
}

/// `used` of `limit` bytes in the limit's unit: `2.0 of 2.0 GiB`.
fn bytes_of(used: u64, limit: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    match UNITS.iter().find(|(_, size)| limit >= *size) {
        Some((unit, size)) => {
            #[allow(clippy::cast_precision_loss)] // one decimal is shown
            let (u, l) = (used as f64 / *size as f64, limit as f64 / *size as f64);
            format!("{u:.1} of {l:.1} {unit}")
        }
        None => format!("{used} of {limit} bytes"),
    }
}

/// Who asks, which says what a refused login (401) means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// A device joining with a recovery key the user just gave: the key is wrong (or the URL).
    Joining,
    /// A linked device, whose key opened the account before: the account is gone from the hub.
    Linked,
    /// A linked device leaving: as [`Caller::Linked`], and a hub that has no record of it (404)
    /// has nothing to be told.
    Leaving,
}

/// What a linked device is told when its login opens nothing any more.
pub const ACCOUNT_GONE: &str = "the account was deleted on the hub, or its recovery key was replaced: \
     join again with the new key (`sitetrail sync leave`, then `sitetrail sync join`); nothing recorded here is lost";

/// What a device is told when a hub has no record of it at all (restored from a dump taken
/// before the device registered); the sync registers it again on its own.
pub const DEVICE_UNKNOWN: &str =
    "the hub has no record of this device (it was restored from a copy taken before this device joined)";

/// True if `e` is the hub saying it has no record of this device at all ([`DEVICE_UNKNOWN`]):
/// registering it again under the same id is all it takes.
pub fn hub_lost_this_device(e: &Error) -> bool {
    matches!(e, Error::Sync { kind: ErrorKind::Conflict, message } if message == DEVICE_UNKNOWN)
}

/// What a device removed from the account (or that left it) is told by the hub.
pub const DEVICE_GONE: &str =
    "this device has left the account on this hub; join it again with `sitetrail sync join`";

/// True if `e` is the hub refusing this device for good: its account is gone (deleted, or its key
/// replaced: [`ACCOUNT_GONE`]) or it is no longer a device of it ([`DEVICE_GONE`]). Nothing this
/// device holds can be sent to that account any more.
pub fn refuses_this_device(e: &Error) -> bool {
    match e {
        Error::Sync {
            kind: ErrorKind::NeedsUser,
            message,
        } => message == ACCOUNT_GONE || message == DEVICE_GONE,
        _ => false,
    }
}

impl Caller {
    fn unauthorized(self) -> &'static str {
        match self {
            Caller::Joining => {
                "this recovery key does not open an account on this hub (check the key, and the hub URL)"
            }
            Caller::Linked | Caller::Leaving => ACCOUNT_GONE,
        }
    }
}

/// A client of one hub, for one account (and, once registered, one device).
#[derive(Clone)]
pub struct HubClient {
    http: reqwest::Client,
    base: String,
    account: Uuid,
    login: Login,
    device: Option<Uuid>,
}

impl std::fmt::Debug for HubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubClient")
            .field("base", &self.base)
            .field("account", &self.account)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl HubClient {
    /// A client of the hub at `base` (from [`normalise_hub_url`]), over https or to this machine.
    pub fn new(base: &str, account: Uuid, login: Login, device: Option<Uuid>) -> Result<HubClient> {
        HubClient::with_transport(base, account, login, device, &Transport::default())
    }

    /// A client of the hub at `base`, reached as `transport` allows ([`check_transport`]).
    pub fn with_transport(
        base: &str,
        account: Uuid,
        login: Login,
        device: Option<Uuid>,
        transport: &Transport,
    ) -> Result<HubClient> {
        let base = normalise_hub_url(base)?;
        check_transport(&base, transport)?;
        if is_insecure(&base) {
            tracing::warn!(hub = %base, "{INSECURE_WARNING}");
        }
        let mut http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("sitetrail/", env!("CARGO_PKG_VERSION")));
        for certificate in &transport.trust.certificates {
            http = http.add_root_certificate(certificate.clone());
        }
        let http = http
            .build()
            .map_err(|e| sync_error(ErrorKind::Internal, format!("cannot make an HTTP client: {e}")))?;
        Ok(HubClient {
            http,
            base,
            account,
            login,
            device,
        })
    }

    /// The hub's URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        auth: bool,
    ) -> Result<Option<T>> {
        self.call_as(method, path, body, auth, Caller::Linked).await
    }

    async fn call_as<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        auth: bool,
        caller: Caller,
    ) -> Result<Option<T>> {
        Ok(self.exchange(method, path, body, auth, caller).await?.0)
    }

    /// A request and its answer, with the answer's `Retry-After` (seconds) if it had one.
    async fn exchange<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        auth: bool,
        caller: Caller,
    ) -> Result<(Option<T>, Option<u64>)> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.request(method, &url);
        if auth {
            req = req.header("authorization", wire::authorization(self.account, &self.login));
        }
        if let Some(d) = self.device {
            req = req.header(wire::DEVICE_HEADER, d.hyphenated().to_string());
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let mut resp = req.send().await.map_err(|e| {
            if let Some(why) = crate::classify::http::certificate_error(&e) {
                return sync_error(
                    ErrorKind::NeedsUser,
                    format!(
                        "the hub at {}: its TLS certificate is not trusted ({why}); nothing was sent. If it is \
                         signed by your own certificate authority, give that authority's PEM file with --ca-file \
                         (sync setup or join) or {CA_FILE_VAR}",
                        self.base
                    ),
                );
            }
            let why = if e.is_timeout() {
                "it did not answer in time"
            } else if e.is_connect() {
                "the connection was refused or could not be made"
            } else {
                "the connection failed"
            };
            sync_error(
                ErrorKind::Offline,
                format!(
                    "the hub at {} cannot be reached ({why}); changes wait here until it can",
                    self.base
                ),
            )
        })?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let cap = if status.is_success() {
            wire::limits::MAX_BODY_BYTES
        } else {
            64 * 1024
        };
        let (bytes, truncated) = crate::classify::http::read_capped(&mut resp, cap)
            .await
            .map_err(|_| {
                sync_error(
                    ErrorKind::Offline,
                    format!(
                        "the hub at {} closed the connection before its answer ended",
                        self.base
                    ),
                )
            })?;
        if status.is_success() {
            if status == StatusCode::NO_CONTENT {
                return Ok((None, retry_after));
            }
            if truncated {
                return Err(sync_error(
                    ErrorKind::ProviderFailed,
                    format!("the hub at {} sent an answer over the size limit", self.base),
                ));
            }
            return serde_json::from_slice(&bytes)
                .map(|v| (Some(v), retry_after))
                .map_err(|_| {
                    sync_error(
                        ErrorKind::ProviderFailed,
                        format!(
                        "the hub at {} answered something that is not the sync API (is it a Sitetrail hub?)",
                        self.base
                    ),
                    )
                });
        }
        let body = serde_json::from_slice::<wire::ErrorBody>(&bytes).ok();
        let said = body
            .as_ref()
            .map(|b| crate::error::truncate_chars(&b.message.replace(|c: char| c.is_control(), " "), 300))
            .unwrap_or_else(|| format!("HTTP {}", status.as_u16()));
        if status == StatusCode::NOT_FOUND && caller == Caller::Leaving {
            // The hub has no record of the device leaving (restored from a dump taken before it
            // registered): it is not a device of the account there, which is what leaving wants.
            return Ok((None, None));
        }
        if status == StatusCode::FORBIDDEN && body.as_ref().is_some_and(|b| b.unregistered) {
            return Err(sync_error(ErrorKind::Conflict, DEVICE_UNKNOWN));
        }
        if let Some(refusal) = body.and_then(|b| b.quota) {
            return Err(sync_error(ErrorKind::RateLimited, quota_full(&refusal)));
        }
        Err(match status {
            StatusCode::UNAUTHORIZED => sync_error(ErrorKind::NeedsUser, caller.unauthorized()),
            StatusCode::FORBIDDEN => sync_error(ErrorKind::NeedsUser, DEVICE_GONE),
            StatusCode::CONFLICT => sync_error(ErrorKind::Conflict, format!("the hub refused: {said}")),
            StatusCode::TOO_MANY_REQUESTS => sync_error(
                ErrorKind::RateLimited,
                format!("the hub asks to slow down: {said}"),
            ),
            s if s.is_server_error() => sync_error(
                ErrorKind::Offline,
                format!(
                    "the hub at {} is unavailable ({said}); changes wait here until it is back",
                    self.base
                ),
            ),
            _ => sync_error(
                ErrorKind::ProviderFailed,
                format!("the hub refused a request: {said}"),
            ),
        })
    }

    async fn json<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T> {
        self.call(method, path, body, true).await?.ok_or_else(|| {
            sync_error(
                ErrorKind::ProviderFailed,
                format!("the hub at {} sent no answer where one was due", self.base),
            )
        })
    }

    /// Creates the account (also fine if it exists with this very login).
    pub async fn create_account(&self) -> Result<()> {
        let body = wire::CreateAccount {
            account_id: self.account,
            login: self.login.clone(),
        };
        let _: Option<wire::AccountCreated> = self
            .call(Method::POST, routes::ACCOUNTS, Some(&body), false)
            .await?;
        Ok(())
    }

    /// Registers (or touches) `device`: the first call of a device joining, so a refused login
    /// means the key given (not an account deleted since).
    pub async fn register_device(&self, device: Uuid) -> Result<wire::DeviceInfo> {
        self.call_as::<(), _>(Method::PUT, &routes::device(device), None, true, Caller::Joining)
            .await?
            .ok_or_else(|| {
                sync_error(
                    ErrorKind::ProviderFailed,
                    format!("the hub at {} sent no answer where one was due", self.base),
                )
            })
    }

    /// Deletes the account on the hub, with every record, device and claim of it.
    pub async fn delete_account(&self) -> Result<()> {
        let _: Option<serde_json::Value> = self
            .call::<(), _>(Method::DELETE, routes::ACCOUNT, None, true)
            .await?;
        Ok(())
    }

    /// `device` leaves the account.
    pub async fn leave(&self, device: Uuid) -> Result<()> {
        let _: Option<serde_json::Value> = self
            .call::<(), _>(Method::DELETE, &routes::device(device), None, true)
            .await?;
        Ok(())
    }

    /// This device leaves the account; a hub with no record of it (restored from a dump taken
    /// before it registered) has nothing to be told, and that is no error.
    pub async fn leave_self(&self, device: Uuid) -> Result<()> {
        let _: Option<serde_json::Value> = self
            .call_as::<(), _>(
                Method::DELETE,
                &routes::device(device),
                None,
                true,
                Caller::Leaving,
            )
            .await?;
        Ok(())
    }

    /// The account's devices.
    pub async fn devices(&self) -> Result<Vec<wire::DeviceInfo>> {
        Ok(self
            .json::<(), wire::DevicesResponse>(Method::GET, routes::DEVICES, None)
            .await?
            .devices)
    }

    /// Pushes `records`; one result per record.
    pub async fn push(&self, records: Vec<wire::Record>) -> Result<Vec<wire::PushResult>> {
        let n = records.len();
        let body = wire::PushRequest { records };
        let results = self
            .json::<_, wire::PushResponse>(Method::POST, routes::RECORDS, Some(&body))
            .await?
            .results;
        if results.len() != n {
            return Err(sync_error(
                ErrorKind::ProviderFailed,
                "the hub's answer to a push does not match what was pushed",
            ));
        }
        Ok(results)
    }

    /// The last index of every series of the account.
    pub async fn index(&self) -> Result<Vec<wire::SeriesHead>> {
        Ok(self
            .json::<(), wire::IndexResponse>(Method::GET, routes::INDEX, None)
            .await?
            .series)
    }

    /// The long-poll: the index once the other devices' records of `series` add up to more than
    /// `seen`, or after `wait` (at most [`wire::limits::MAX_WAIT_MS`]; within [`REQUEST_TIMEOUT`]).
    pub async fn wait_index(
        &self,
        series: &wire::Series,
        seen: u64,
        wait: Duration,
    ) -> Result<Vec<wire::SeriesHead>> {
        let ms = u64::try_from(wait.as_millis())
            .unwrap_or(u64::MAX)
            .min(wire::limits::MAX_WAIT_MS);
        let path = format!(
            "{}?series={}&seen={seen}&wait_ms={ms}",
            routes::INDEX_WAIT,
            series.as_str()
        );
        let (answer, retry_after) = self
            .exchange::<(), wire::IndexResponse>(Method::GET, &path, None, true, Caller::Linked)
            .await?;
        let answer = answer.ok_or_else(|| {
            sync_error(
                ErrorKind::ProviderFailed,
                format!("the hub at {} sent no answer where one was due", self.base),
            )
        })?;
        // The hub answered at once because it holds as many waits as it will (of this account,
        // this address, or in all): spend the wait here before the caller asks again, so a
        // device never asks in a loop.
        if let Some(seconds) = retry_after {
            tokio::time::sleep(Duration::from_secs(seconds).min(wait)).await;
        }
        Ok(answer.series)
    }

    /// Asks for claims on `items` for `lease_ms`; one answer per item.
    pub async fn claims(
        &self,
        device: Uuid,
        lease_ms: u64,
        items: Vec<wire::ClaimItem>,
    ) -> Result<Vec<wire::ClaimAnswer>> {
        let n = items.len();
        let body = wire::ClaimRequest {
            device_id: device,
            lease_ms,
            items,
        };
        let claims = self
            .json::<_, wire::ClaimResponse>(Method::POST, routes::CLAIMS, Some(&body))
            .await?
            .claims;
        if claims.len() != n {
            return Err(sync_error(
                ErrorKind::ProviderFailed,
                "the hub's answer to a claim does not match what was asked",
            ));
        }
        Ok(claims)
    }

    /// Completes (`done`) or releases claims.
    pub async fn settle(
        &self,
        device: Uuid,
        claims: Vec<wire::Settle>,
        done: bool,
    ) -> Result<wire::SettleResponse> {
        let body = wire::SettleRequest {
            device_id: device,
            claims,
        };
        let route = if done {
            routes::CLAIMS_COMPLETE
        } else {
            routes::CLAIMS_RELEASE
        };
        self.json::<_, wire::SettleResponse>(Method::POST, route, Some(&body))
            .await
    }

    /// Records of a series after `after`.
    pub async fn page(
        &self,
        device: Uuid,
        series: &wire::Series,
        after: u64,
        limit: u32,
    ) -> Result<wire::PageResponse> {
        let path = format!(
            "{}?device_id={}&series={}&after={after}&limit={limit}",
            routes::RECORDS,
            device.hyphenated(),
            series.as_str()
        );
        self.json::<(), _>(Method::GET, &path, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_quota_is_said_in_the_limits_unit() {
        let said = quota_full(&wire::QuotaRefusal {
            quota: wire::Quota::Bytes,
            used: 2_147_000_000,
            limit: 2 << 30,
            wanted: 5_000,
        });
        assert!(
            said.starts_with("the hub's quota for this account is full: 2.0 of 2.0 GiB;"),
            "{said}"
        );
        assert_eq!(bytes_of(1536, 64 << 10), "1.5 of 64.0 KiB");
        assert_eq!(bytes_of(10, 100), "10 of 100 bytes");
        // As the link keeps it (the error's display), and nothing else.
        let kept = Error::Sync {
            kind: ErrorKind::RateLimited,
            message: said.clone(),
        }
        .to_string();
        assert_eq!(quota_full_in(&kept), Some(said.as_str()));
        assert_eq!(quota_full_in(&said), Some(said.as_str()));
        for other in ["sync: the hub is busy", "", "sync: quota"] {
            assert_eq!(quota_full_in(other), None, "{other}");
        }
    }

    #[test]
    fn only_plain_http_to_another_machine_is_insecure() {
        for here in [
            "http://127.0.0.1:8470",
            "http://127.1.2.3",
            "http://localhost:8470/",
            "http://LOCALHOST",
            "http://[::1]:8470",
            "http://[::ffff:127.0.0.1]:8470",
            "https://192.0.2.2",
            "https://hub.example.org",
        ] {
            assert!(!is_insecure(here), "{here}");
            check_transport(here, &Transport::default()).unwrap();
        }
        for away in [
            "http://192.0.2.2:8470",
            "http://hub.example.org",
            "http://localhost.example.org",
            "http://127.0.0.1.example.org",
            "http://[fd00::2]",
            "http://0.0.0.0:8470",
        ] {
            assert!(is_insecure(away), "{away}");
            let e = check_transport(away, &Transport::default()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert!(e.to_string().contains("--allow-insecure-http"), "{e}");
            check_transport(
                away,
                &Transport {
                    allow_insecure_http: true,
                    ..Transport::default()
                },
            )
            .unwrap();
        }
    }
}
