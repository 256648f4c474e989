//! HTTP plumbing shared by the AI providers: the client, the endpoint and one capped POST, and
//! the answer as the providers read it.
//!
//! What a failed call means is in `http/errors.rs` (every HTTP failure mapped to one
//! [`ClassifyError`] class: [`send_error`], [`status_error`]); how long a rate-limited provider
//! asks us to wait in `http/rate_limit.rs` ([`retry_after`]). Both are re-exported here.
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

mod errors;
pub(crate) use errors::certificate_error;
mod rate_limit;

pub use errors::{send_error, status_error};
pub use rate_limit::{retry_after, MAX_RATE_LIMIT_WAIT};

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
use errors::body_error;

/// Largest successful answer read (bytes). A batch of 500 hosts answers in well under 100 KiB;
/// anything bigger is a broken or hostile server, and reading it whole would cost its size in
/// memory.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Largest part of an error answer (non-2xx) read (bytes): enough for any error message; the rest
/// is not read, and the status decides what the error means.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

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

/// Helpers the HTTP layer's unit tests share (the client, the error mapping, the rate limits).
#[cfg(test)]
pub(crate) mod test_support {
    use reqwest::header::{HeaderMap, HeaderValue};

    /// Response headers from `(name, value)` pairs.
    pub(crate) fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    /// A fixed "now" for answers that carry times.
    pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(1_750_000_000, 0).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
