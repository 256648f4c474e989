//! HTTP plumbing shared by the AI providers: the client, one capped POST, and what an answer or a
//! failed call means.
//!
//! Every way an HTTP call can fail is mapped to one [`ClassifyError`] variant, because the
//! variant decides whether the jobs lose an attempt:
//! - could not connect (DNS, refused, no route, connect timeout), or no answer at all (the
//!   connection was reset or closed before a status line came back): [`ClassifyError::Offline`];
//! - 429 with or without a wait (see [`retry_after`]): [`ClassifyError::RateLimited`];
//!   429 `insufficient_quota`, 401, 403, 404, any redirect (never followed), a TLS certificate the
//!   client refuses: [`ClassifyError::NeedsUser`];
//! - 408, 409, 425, 5xx, 529, a 1xx final answer, a timeout after connecting, a cut, unreadable
//!   or too large body: [`ClassifyError::Transient`]; any other status: [`ClassifyError::Permanent`].
//!
//! Invariants:
//! - Every answer is bounded and read totally: a body is read in chunks and given up beyond
//!   [`MAX_BODY_BYTES`] (error bodies: [`MAX_ERROR_BODY_BYTES`]); no status, header, body or JSON
//!   shape can panic; every wait taken from a header is at most [`MAX_RATE_LIMIT_WAIT`].
//! - Reading an answer is a pure function of (status, headers, body bytes, clock), callable
//!   without a network (the fuzz targets in `fuzz/` call it): [`Answer`], [`AnswerContext`].
//! - Every piece of server text put into an error goes through [`Secrets::clean`]: redacted
//!   first, then cut. Credentials in a base URL never reach reqwest's URL, a log or an error.
//! - Redirects are never followed: a POST is never re-sent anywhere the user did not name.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;
use url::Url;

/// How a provider's URL may be shown (its credentials as `***`): defined with the page URLs'
/// forms, kept here under its old path.
pub use crate::page_url::display_url;

use super::secret::{ApiKey, BasicAuth, Secrets};
use super::ClassifyError;

/// Largest successful answer read (bytes). A batch of 500 hosts answers in well under 100 KiB;
/// anything bigger is a broken or hostile server, and reading it whole would cost its size in
/// memory.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Largest part of an error answer (non-2xx) read (bytes): enough for any error message; the rest
/// is not read, and the status decides what the error means.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Longest wait a rate-limit header can impose. A longer or infinite one becomes this: the
/// worker asks again after an hour, and waits again if it is told to.
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(3600);

/// Characters of server text kept in an error message.
const SERVER_TEXT_CHARS: usize = 300;

/// Timeouts for provider calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// Longest wait to open a connection.
    pub connect_timeout: Duration,
    /// Longest wait for a whole call, from sending to the last byte of the answer.
    pub total_timeout: Duration,
}

impl HttpOptions {
    /// The default connect timeout (ms): the `connect-timeout-ms` setting's default.
    pub const DEFAULT_CONNECT_MS: u64 = 10_000;
    /// The default timeout of a whole call (ms): the `request-timeout-ms` setting's default.
    pub const DEFAULT_TOTAL_MS: u64 = 120_000;
}

/// The timeouts of the default settings (which take their defaults from here).
impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            connect_timeout: Duration::from_millis(Self::DEFAULT_CONNECT_MS),
            total_timeout: Duration::from_millis(Self::DEFAULT_TOTAL_MS),
        }
    }
}

/// A client with `opts`' timeouts, rustls (certificates verified), no redirects followed, and a
/// user agent naming the app.
pub fn build_client(opts: HttpOptions) -> Result<reqwest::Client, ClassifyError> {
    reqwest::Client::builder()
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.total_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("sitetrail/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ClassifyError::NeedsUser(format!("cannot set up the HTTP client: {e}")))
}

/// The base URL without a trailing slash, checked to be http(s). The error shows the URL without
/// its credentials.
pub fn normalise_base_url(base: &str) -> Result<String, String> {
    let trimmed = base.trim().trim_end_matches('/');
    let shown = display_url(trimmed);
    let url = Url::parse(trimmed).map_err(|e| format!("base URL {shown:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("base URL {shown:?} must start with http:// or https://"));
    }
    Ok(trimmed.to_owned())
}

/// One provider endpoint: a client, the URL (without credentials) and the secrets to redact.
#[derive(Debug)]
pub struct Endpoint {
    provider: &'static str,
    client: reqwest::Client,
    url: Url,
    basic: Option<BasicAuth>,
    secrets: Secrets,
}

impl Endpoint {
    /// `path` under `base_url` for `provider`; the URL's credentials (if any) are sent as Basic
    /// authentication and, like `key`, redacted from everything the server says.
    pub fn new(
        provider: &'static str,
        base_url: &str,
        path: &str,
        http: HttpOptions,
        key: Option<&ApiKey>,
    ) -> Result<Endpoint, ClassifyError> {
        let base = normalise_base_url(base_url).map_err(ClassifyError::NeedsUser)?;
        let mut url = Url::parse(&format!("{base}{path}")).map_err(|e| {
            ClassifyError::NeedsUser(format!("base URL {:?} is not a URL ({e})", display_url(&base)))
        })?;
        let basic = BasicAuth::take_from(&mut url);
        let secrets = Secrets::new(key, basic.as_ref());
        Ok(Endpoint {
            provider,
            client: build_client(http)?,
            url,
            basic,
            secrets,
        })
    }

    /// The endpoint URL, without credentials.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// What reading an answer from this endpoint needs, at the current time.
    pub fn context(&self) -> AnswerContext<'_> {
        AnswerContext {
            provider: self.provider,
            endpoint: &self.url,
            secrets: &self.secrets,
            now: chrono::Utc::now(),
        }
    }

    /// POSTs `body` as JSON (with `bearer` as the `Authorization` header, if given) and reads the
    /// answer's body up to its cap. Fails only when no complete answer came back.
    pub async fn post(&self, body: &Value, bearer: Option<&ApiKey>) -> Result<Received, ClassifyError> {
        let mut req = self.client.post(self.url.clone()).json(body);
        if let Some(b) = &self.basic {
            req = req.basic_auth(&b.username, b.password.as_deref());
        }
        if let Some(k) = bearer {
            req = req.bearer_auth(k.expose());
        }
        let ctx = self.context();
        let mut resp = req.send().await.map_err(|e| send_error(&ctx, &e))?;
        let status = resp.status();
        let headers = std::mem::take(resp.headers_mut());
        let cap = if status.is_success() {
            MAX_BODY_BYTES
        } else {
            MAX_ERROR_BODY_BYTES
        };
        let (body, truncated) = read_capped(&mut resp, cap)
            .await
            .map_err(|e| body_error(&ctx, &e))?;
        // Dropping `resp` here closes a connection whose answer was not read to its end.
        Ok(Received {
            status,
            headers,
            body,
            truncated,
        })
    }
}

/// An answer as received: status, headers and (at most the cap of) the body.
#[derive(Debug)]
pub struct Received {
    /// The HTTP status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, or its first part when `truncated`.
    pub body: Vec<u8>,
    /// True if the server sent more than the cap.
    pub truncated: bool,
}

impl Received {
    /// The answer, borrowed, for the pure readers.
    pub fn answer(&self) -> Answer<'_> {
        Answer {
            status: self.status,
            headers: &self.headers,
            body: &self.body,
            truncated: self.truncated,
        }
    }
}

/// An answer to read: status, headers, body bytes.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    /// The HTTP status.
    pub status: StatusCode,
    /// The headers.
    pub headers: &'a HeaderMap,
    /// The body (its first part if `truncated`).
    pub body: &'a [u8],
    /// True if the body was longer than its cap and only its first part was read.
    pub truncated: bool,
}

/// What reading an answer needs besides the answer itself.
#[derive(Clone, Copy, Debug)]
pub struct AnswerContext<'a> {
    /// The provider's name, for messages.
    pub provider: &'a str,
    /// The URL asked, to resolve a relative redirect target.
    pub endpoint: &'a Url,
    /// What to redact from server text.
    pub secrets: &'a Secrets,
    /// Now, for HTTP dates and epoch times in rate-limit headers.
    pub now: chrono::DateTime<chrono::Utc>,
}

impl AnswerContext<'_> {
    /// Server text safe to put into an error: redacted, then cut to `max` characters.
    pub fn clean(&self, text: &str, max: usize) -> String {
        self.secrets.clean(text, max)
    }

    /// The error for a successful status whose body is over [`MAX_BODY_BYTES`].
    pub fn too_large(&self) -> ClassifyError {
        ClassifyError::Transient(format!(
            "{} sent an answer larger than {} MiB; it was not read (a smaller --batch-size may help)",
            self.provider,
            MAX_BODY_BYTES / (1024 * 1024)
        ))
    }
}

/// What a failed send (no HTTP status) means: no answer at all is offline, a refused certificate
/// needs the user, a timeout or anything else is transient.
pub fn send_error(ctx: &AnswerContext<'_>, e: &reqwest::Error) -> ClassifyError {
    let provider = ctx.provider;
    let detail = ctx.clean(&error_chain(e), 400);
    if let Some(tls) = certificate_error(e) {
        let what = ctx.clean(&tls, 200);
        ClassifyError::NeedsUser(format!(
            "{provider}'s TLS certificate was refused ({what}) at {}: Sitetrail verifies certificates and sends nothing to a server it cannot verify; check --base-url, or give the server a certificate this system trusts, then run `sitetrail resume`",
            display_url(ctx.endpoint.as_str())
        ))
    } else if e.is_timeout() {
        ClassifyError::Transient(format!("{provider} did not answer in time: {detail}"))
    } else if e.is_connect() {
        ClassifyError::Offline(format!("cannot reach {provider}: {detail}"))
    } else if no_answer(e) {
        ClassifyError::Offline(format!(
            "{provider} closed the connection without answering: {detail}"
        ))
    } else {
        ClassifyError::Transient(format!("{provider} call failed: {detail}"))
    }
}

/// What a failure while reading a body (after the status came) means: the answer was cut.
fn body_error(ctx: &AnswerContext<'_>, e: &reqwest::Error) -> ClassifyError {
    let detail = ctx.clean(&error_chain(e), 400);
    if e.is_timeout() {
        ClassifyError::Transient(format!(
            "{} did not finish its answer in time: {detail}",
            ctx.provider
        ))
    } else {
        ClassifyError::Transient(format!("{}'s answer was cut off: {detail}", ctx.provider))
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Every error in `e`'s chain, including the ones wrapped inside `io::Error`s (whose `source`
/// skips them; reqwest's TLS errors are an `io::Error` inside an `io::Error`).
fn causes<'a>(e: &'a (dyn std::error::Error + 'static)) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut out = Vec::new();
    let mut todo = vec![e];
    // Error chains are short; the bound only guards against a chain that loops.
    while let Some(err) = todo.pop().filter(|_| out.len() < 64) {
        out.push(err);
        todo.extend(err.source());
        if let Some(inner) = err.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            let inner: &(dyn std::error::Error + 'static) = inner;
            todo.push(inner);
        }
    }
    out
}

/// The certificate problem, if the call failed because the server's certificate was refused.
fn certificate_error(e: &reqwest::Error) -> Option<String> {
    causes(e)
        .into_iter()
        .find_map(|c| match c.downcast_ref::<rustls::Error>()? {
            tls @ (rustls::Error::InvalidCertificate(_)
            | rustls::Error::NoCertificatesPresented
            | rustls::Error::InvalidCertRevocationList(_)
            | rustls::Error::UnsupportedNameType) => Some(tls.to_string()),
            _ => None,
        })
}

/// True if the connection ended before an answer came: reset, closed, EOF before a status line.
fn no_answer(e: &reqwest::Error) -> bool {
    use std::io::ErrorKind;
    causes(e).into_iter().any(|c| {
        if let Some(h) = c.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message()
                || h.is_canceled()
                || h.is_closed()
                || h.is_body_write_aborted();
        }
        c.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
                    | ErrorKind::NotConnected
            )
        })
    })
}

/// What an answer with a non-success `status` means.
pub fn status_error(ctx: &AnswerContext<'_>, answer: &Answer<'_>) -> ClassifyError {
    let provider = ctx.provider;
    let body = String::from_utf8_lossy(answer.body);
    let said = ctx.clean(&server_message(&body), SERVER_TEXT_CHARS);
    let code = answer.status.as_u16();
    let lower = body.to_ascii_lowercase();
    match code {
        429 if lower.contains("insufficient_quota") || lower.contains("quota exceeded") => {
            ClassifyError::NeedsUser(format!(
                "{provider} says the account is out of quota (HTTP 429): {said}; add credit or change provider, then run `sitetrail resume`"
            ))
        }
        429 => ClassifyError::RateLimited {
            retry_after: retry_after(answer.headers, ctx.now),
            message: format!("{provider} asked to slow down (HTTP 429): {said}"),
        },
        300..=399 => {
            let target = answer
                .headers
                .get(reqwest::header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .map(|l| match ctx.endpoint.join(l.trim()) {
                    Ok(u) => display_url(u.as_str()),
                    Err(_) => display_url(&l),
                })
                .map(|l| ctx.clean(&l, 200));
            let to = target.map_or_else(|| " with no target".to_owned(), |t| format!(" to {t}"));
            ClassifyError::NeedsUser(format!(
                "{provider} answered with a redirect (HTTP {code}){to}; Sitetrail never follows a provider's redirect, so nothing was sent there: if that address is right, set it as --base-url, then run `sitetrail resume`"
            ))
        }
        401 | 403 => ClassifyError::NeedsUser(format!(
            "{provider} refused the API key (HTTP {code}): {said}; check SITETRAIL_API_KEY, then run `sitetrail resume`"
        )),
        404 => ClassifyError::NeedsUser(format!(
            "{provider} does not know the model or the address (HTTP 404): {said}; check --model and --base-url, then run `sitetrail resume`"
        )),
        100..=199 | 408 | 409 | 425 | 500..=599 => {
            ClassifyError::Transient(format!("{provider} failed (HTTP {code}): {said}"))
        }
        _ => ClassifyError::Permanent(format!("{provider} rejected the request (HTTP {code}): {said}")),
    }
}

/// The provider's own error message (`error.message` or `error` in a JSON body), else the body.
/// Not yet redacted or cut.
fn server_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error")?;
        e.get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    if text.trim().is_empty() {
        "no details".to_owned()
    } else {
        text
    }
}

/// A wait read from one header.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    /// A wait between zero and [`MAX_RATE_LIMIT_WAIT`].
    Sane(Duration),
    /// More than [`MAX_RATE_LIMIT_WAIT`], or infinite.
    TooLong,
}

/// `secs` as a wait; `None` for NaN and negative values (a time in the past cannot be a wait).
fn wait_secs(secs: f64) -> Option<Wait> {
    if secs.is_nan() || secs < 0.0 {
        None
    } else if secs > MAX_RATE_LIMIT_WAIT.as_secs_f64() {
        Some(Wait::TooLong)
    } else {
        Duration::try_from_secs_f64(secs).ok().map(Wait::Sane)
    }
}

/// How long a 429 asks us to wait, from the most explicit header that gives a sane value:
/// 1. `retry-after-ms` (milliseconds), 2. `Retry-After` (seconds or an HTTP date), 3. OpenAI's
///    `x-ratelimit-reset-requests` / `-tokens` (the one whose `x-ratelimit-remaining-*` is 0, else
///    the longer), 4. `x-ratelimit-reset` / `ratelimit-reset`.
///
/// Reset headers are read as durations (`1m30s`, `20ms`, a number of seconds), as points in time
/// when the number can only be one (at least 10⁹: Unix seconds; at least 10¹²: Unix
/// milliseconds), or as dates (RFC 3339, HTTP date). A value that cannot be right (unparseable,
/// negative, a time in the past, longer than [`MAX_RATE_LIMIT_WAIT`]) gives way to the next
/// header; if every value given was too long, the wait is [`MAX_RATE_LIMIT_WAIT`]; if none could
/// be read, `None` (the worker then backs off as when offline).
pub fn retry_after(headers: &HeaderMap, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let now_secs = now.timestamp_millis() as f64 / 1000.0;
    let mut candidates: Vec<Option<Wait>> = Vec::new();
    candidates.push(
        get("retry-after-ms")
            .and_then(|v| v.parse::<f64>().ok())
            .and_then(|ms| wait_secs(ms / 1000.0)),
    );
    candidates.push(get("retry-after").and_then(|v| match v.parse::<f64>() {
        Ok(secs) => wait_secs(secs),
        Err(_) => date_secs(v).and_then(|at| wait_secs(at - now_secs)),
    }));
    let requests = get("x-ratelimit-reset-requests").and_then(|v| reset_wait(v, now_secs));
    let tokens = get("x-ratelimit-reset-tokens").and_then(|v| reset_wait(v, now_secs));
    let exhausted = |name: &str| get(name).and_then(|v| v.parse::<f64>().ok()) == Some(0.0);
    candidates.push(
        match (
            exhausted("x-ratelimit-remaining-requests"),
            exhausted("x-ratelimit-remaining-tokens"),
        ) {
            (true, false) if requests.is_some() => requests,
            (false, true) if tokens.is_some() => tokens,
            _ => longer(requests, tokens),
        },
    );
    candidates.push(get("x-ratelimit-reset").and_then(|v| reset_wait(v, now_secs)));
    candidates.push(get("ratelimit-reset").and_then(|v| reset_wait(v, now_secs)));
    let sane = candidates.iter().find_map(|c| match c {
        Some(Wait::Sane(d)) => Some(*d),
        _ => None,
    });
    sane.or_else(|| {
        candidates
            .contains(&Some(Wait::TooLong))
            .then_some(MAX_RATE_LIMIT_WAIT)
    })
}

/// The longer of two waits, a sane one before a too long one.
fn longer(a: Option<Wait>, b: Option<Wait>) -> Option<Wait> {
    match (a, b) {
        (Some(Wait::Sane(x)), Some(Wait::Sane(y))) => Some(Wait::Sane(x.max(y))),
        (Some(Wait::Sane(x)), _) | (_, Some(Wait::Sane(x))) => Some(Wait::Sane(x)),
        (x, y) => x.or(y),
    }
}

/// A reset header's value as a wait from `now_secs` (Unix seconds).
fn reset_wait(v: &str, now_secs: f64) -> Option<Wait> {
    if let Ok(n) = v.parse::<f64>() {
        return if n >= 1e12 {
            wait_secs(n / 1000.0 - now_secs)
        } else if n >= 1e9 {
            wait_secs(n - now_secs)
        } else {
            wait_secs(n)
        };
    }
    if let Some(secs) = parse_go_duration(v) {
        return wait_secs(secs);
    }
    date_secs(v).and_then(|at| wait_secs(at - now_secs))
}

/// An RFC 3339 or HTTP (RFC 2822) date as Unix seconds.
fn date_secs(v: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(v)
        .or_else(|_| chrono::DateTime::parse_from_rfc2822(v))
        .ok()
        .map(|at| at.timestamp_millis() as f64 / 1000.0)
}

/// Seconds in durations like `1s`, `6m0s`, `1h2m3.5s`, `20ms`; `None` for anything else. The sum
/// may be infinite for absurd input; [`wait_secs`] bounds it.
fn parse_go_duration(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest.get(..end)?.parse().ok()?;
        rest = rest.get(end..)?;
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let scale = match rest.get(..unit_end)? {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += n * scale;
        rest = rest.get(unit_end..)?;
    }
    Some(total)
}

/// Reads at most `cap` bytes of `resp`'s body: the bytes, and whether there was more (then the
/// rest is not read: a body announced larger than `cap` is not read at all).
pub(crate) async fn read_capped(
    resp: &mut reqwest::Response,
    cap: usize,
) -> std::result::Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut truncated = resp.content_length().is_some_and(|n| n > cap as u64);
    while !truncated {
        let Some(chunk) = resp.chunk().await? else {
            break;
        };
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
        } else {
            body.extend_from_slice(&chunk);
        }
    }
    Ok((body, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::secret::ApiKey;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(1_750_000_000, 0).unwrap()
    }

    fn wait(pairs: &[(&'static str, &str)]) -> Option<Duration> {
        retry_after(&headers(pairs), now())
    }

    #[test]
    fn rate_limit_waits_are_read_from_every_header() {
        assert_eq!(wait(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            wait(&[("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-reset-requests", "1m30s"),
                ("x-ratelimit-reset-tokens", "20ms")
            ]),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-reset-requests", "1m30s"),
                ("x-ratelimit-reset-tokens", "20ms"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-remaining-requests", "12"),
            ]),
            Some(Duration::from_millis(20)),
            "the exhausted bucket's reset"
        );
        let later = (now() + chrono::Duration::seconds(30)).to_rfc2822();
        assert_eq!(wait(&[("retry-after", &later)]), Some(Duration::from_secs(30)));
        assert_eq!(wait(&[]), None);
        assert_eq!(parse_go_duration("1h2m3.5s"), Some(3723.5));
        assert_eq!(parse_go_duration("soon"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn epoch_resets_are_points_in_time_and_the_most_explicit_header_wins() {
        let epoch = |secs: i64| (now().timestamp() + secs).to_string();
        let epoch_ms = |secs: i64| ((now().timestamp() + secs) * 1000).to_string();
        assert_eq!(
            wait(&[("x-ratelimit-reset", &epoch(42))]),
            Some(Duration::from_secs(42))
        );
        assert_eq!(
            wait(&[("x-ratelimit-reset", &epoch_ms(42))]),
            Some(Duration::from_secs(42))
        );
        assert_eq!(
            wait(&[("x-ratelimit-reset", "17")]),
            Some(Duration::from_secs(17))
        );
        assert_eq!(
            wait(&[("retry-after", "2"), ("x-ratelimit-reset", &epoch(86_400))]),
            Some(Duration::from_secs(2)),
            "Retry-After is more explicit than a reset time"
        );
        assert_eq!(
            wait(&[("retry-after", "2"), ("retry-after-ms", "2500")]),
            Some(Duration::from_millis(2500))
        );
        // A reset in the past cannot be right: the next header is used, or none.
        assert_eq!(
            wait(&[
                ("x-ratelimit-reset-requests", &epoch(-5)),
                ("x-ratelimit-reset", "9")
            ]),
            Some(Duration::from_secs(9))
        );
        assert_eq!(wait(&[("x-ratelimit-reset", &epoch(-5))]), None);
        let iso = (now() + chrono::Duration::seconds(8)).to_rfc3339();
        assert_eq!(wait(&[("x-ratelimit-reset", &iso)]), Some(Duration::from_secs(8)));
        // An absurd value gives way to a sane one, and alone becomes the cap.
        assert_eq!(
            wait(&[("retry-after", "1e20"), ("x-ratelimit-reset", &epoch(30))]),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn no_header_value_can_panic_and_every_wait_is_bounded() {
        let hostile = [
            "inf",
            "-inf",
            "Infinity",
            "NaN",
            "1e20",
            "1e30",
            "1e308",
            "-1",
            "-0",
            "0",
            "1.7976931348623157e308",
            "99999999999999999999999999",
            "9223372036854775807",
            "18446744073709551616",
            "1e400",
            "0x10",
            "",
            " ",
            "1h1h1h1h",
            "1e300h",
            "999999999999999999999h",
            "1.5.5s",
            "s",
            "ms",
            "µs",
            "5µ",
            "🙂",
            "1m-5s",
            "Mon, 99 Feb 9999 99:99:99 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Thu, 01 Jan 1970 00:00:00 GMT",
            "9999-12-31T23:59:59Z",
            "+262143-12-31T23:59:59Z",
        ];
        let names = [
            "retry-after",
            "retry-after-ms",
            "x-ratelimit-reset-requests",
            "x-ratelimit-reset-tokens",
            "x-ratelimit-reset",
            "ratelimit-reset",
        ];
        for name in names {
            for v in hostile {
                let Ok(value) = HeaderValue::from_str(v) else {
                    continue;
                };
                let mut h = HeaderMap::new();
                h.insert(name, value);
                if let Some(d) = retry_after(&h, now()) {
                    assert!(d <= MAX_RATE_LIMIT_WAIT, "{name}: {v} → {d:?}");
                }
            }
        }
        for v in ["inf", "1e20", "Infinity", "1e308"] {
            assert_eq!(wait(&[("retry-after", v)]), Some(MAX_RATE_LIMIT_WAIT), "{v}");
        }
        assert_eq!(
            wait(&[("x-ratelimit-reset-requests", "1e30")]),
            Some(MAX_RATE_LIMIT_WAIT)
        );
        assert_eq!(wait(&[("retry-after", "NaN")]), None);
        assert_eq!(wait(&[("retry-after", "-3")]), None);
        // Header bytes that are not UTF-8 are ignored.
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_bytes(b"\xff\xfe").unwrap());
        assert_eq!(retry_after(&h, now()), None);
    }

    fn ctx_for<'a>(secrets: &'a Secrets, url: &'a Url) -> AnswerContext<'a> {
        AnswerContext {
            provider: "openai",
            endpoint: url,
            secrets,
            now: now(),
        }
    }

    fn error(code: u16, h: &HeaderMap, body: &str, secrets: &Secrets) -> ClassifyError {
        let url = Url::parse("http://127.0.0.1:9/v1/chat/completions").unwrap();
        let answer = Answer {
            status: StatusCode::from_u16(code).unwrap(),
            headers: h,
            body: body.as_bytes(),
            truncated: false,
        };
        status_error(&ctx_for(secrets, &url), &answer)
    }

    #[test]
    fn statuses_map_to_failure_classes() {
        let h = HeaderMap::new();
        let none = Secrets::default();
        let e = |code: u16, body: &str| error(code, &h, body, &none);
        assert!(matches!(
            e(429, r#"{"error":{"type":"insufficient_quota"}}"#),
            ClassifyError::NeedsUser(_)
        ));
        assert!(matches!(e(429, "slow down"), ClassifyError::RateLimited { .. }));
        for code in [301, 302, 303, 307, 308, 401, 403, 404] {
            assert!(matches!(e(code, ""), ClassifyError::NeedsUser(_)), "{code}");
        }
        for code in [500, 502, 503, 529, 408, 101] {
            assert!(matches!(e(code, ""), ClassifyError::Transient(_)), "{code}");
        }
        assert!(matches!(e(400, "bad"), ClassifyError::Permanent(_)));
    }

    #[test]
    fn a_redirect_names_its_target_without_credentials() {
        let none = Secrets::default();
        let h = headers(&[(
            "location",
            "https://user:hunter22@other.example/v1/chat/completions",
        )]);
        let msg = error(307, &h, "", &none).to_string();
        assert!(
            msg.contains("redirect (HTTP 307) to https://***@other.example/v1/chat/completions"),
            "{msg}"
        );
        assert!(!msg.contains("hunter22") && !msg.contains("user:"), "{msg}");
        let h = headers(&[("location", "/elsewhere")]);
        let msg = error(308, &h, "", &none).to_string();
        assert!(msg.contains("to http://127.0.0.1:9/elsewhere"), "{msg}");
        let msg = error(302, &HeaderMap::new(), "", &none).to_string();
        assert!(msg.contains("with no target"), "{msg}");
    }

    #[test]
    fn server_text_is_redacted_before_it_is_cut() {
        let key = ApiKey::new("sk-live-abc-0123456789").unwrap();
        let secrets = Secrets::new(Some(&key), None);
        let h = HeaderMap::new();
        let padding = "x".repeat(SERVER_TEXT_CHARS - 10);
        for body in [
            r#"{"error":{"message":"Incorrect API key provided: sk-live-abc-0123456789"}}"#.to_owned(),
            format!(r#"{{"error":{{"message":"{padding}sk-live-abc-0123456789"}}}}"#),
            format!("{padding}sk-live-abc-0123456789"),
            format!(r#"{{"error":"{padding}sk-live-abc-\u0030123456789"}}"#),
        ] {
            for code in [400, 401, 429, 500] {
                let err = error(code, &h, &body, &secrets).to_string();
                for w in key.expose().as_bytes().windows(8) {
                    assert!(
                        !err.contains(std::str::from_utf8(w).unwrap()),
                        "{code} {body}: {err}"
                    );
                }
            }
        }
    }

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(
            display_url("http://u:p@h.example:8/v1"),
            "http://***@h.example:8/v1"
        );
        assert_eq!(display_url("http://h.example/v1"), "http://h.example/v1");
        assert_eq!(display_url("http://u:p@bad host/v1"), "http://***@bad host/v1");
        assert_eq!(display_url("not a url"), "not a url");
        let err = normalise_base_url("ftp://user:secretpw@h.example").unwrap_err();
        assert!(!err.contains("secretpw"), "{err}");
        let err = normalise_base_url("http://user:secretpw@bad host").unwrap_err();
        assert!(!err.contains("secretpw"), "{err}");
    }
}
