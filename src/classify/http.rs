//! HTTP plumbing shared by the AI providers: the client, and what a failed call means.
//!
//! Every way an HTTP call can fail is mapped to one [`ClassifyError`] variant, because the
//! variant decides whether the jobs lose an attempt:
//! - could not connect (DNS, refused, no route, connect timeout): [`ClassifyError::Offline`];
//! - 429 with a wait (`retry-after-ms`, `Retry-After`, `x-ratelimit-reset-*`):
//!   [`ClassifyError::RateLimited`]; 429 `insufficient_quota`, 401, 403, 404:
//!   [`ClassifyError::NeedsUser`];
//! - 408, 409, 425, 5xx, 529, a timeout after connecting, a cut or unreadable body:
//!   [`ClassifyError::Transient`]; any other status: [`ClassifyError::Permanent`].
//!
//! Invariant: every piece of server text put into an error is redacted with the API key first.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;

use super::secret::{redact, ApiKey};
use super::ClassifyError;
use crate::error::truncate_chars;

/// Timeouts for provider calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpOptions {
    /// Longest wait to open a connection.
    pub connect_timeout: Duration,
    /// Longest wait for a whole call, from sending to the last byte of the answer.
    pub total_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            connect_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(120),
        }
    }
}

/// A client with `opts`' timeouts, rustls, and a user agent naming the app.
pub fn build_client(opts: HttpOptions) -> Result<reqwest::Client, ClassifyError> {
    reqwest::Client::builder()
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.total_timeout)
        .user_agent(concat!("sitetrail/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ClassifyError::NeedsUser(format!("cannot set up the HTTP client: {e}")))
}

/// The base URL without a trailing slash, checked to be http(s).
pub fn normalise_base_url(base: &str) -> Result<String, String> {
    let trimmed = base.trim().trim_end_matches('/');
    let url = url::Url::parse(trimmed).map_err(|e| format!("base URL {trimmed:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "base URL {trimmed:?} must start with http:// or https://"
        ));
    }
    Ok(trimmed.to_owned())
}

/// What a failed send (no HTTP status) means.
pub fn send_error(provider: &str, e: &reqwest::Error, key: Option<&ApiKey>) -> ClassifyError {
    // reqwest's message names the URL, never the headers, so it is safe once redacted.
    let detail = redact(key, &error_chain(e));
    if e.is_connect() {
        ClassifyError::Offline(format!("cannot reach {provider}: {detail}"))
    } else if e.is_timeout() {
        ClassifyError::Transient(format!("{provider} did not answer in time: {detail}"))
    } else {
        ClassifyError::Transient(format!("{provider} call failed: {detail}"))
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
    truncate_chars(&s, 400)
}

/// What an answer with a non-success `status` means. `body` is the response body as text.
pub fn status_error(
    provider: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    key: Option<&ApiKey>,
) -> ClassifyError {
    let said = redact(key, &server_message(body));
    let code = status.as_u16();
    let lower = body.to_ascii_lowercase();
    match code {
        429 if lower.contains("insufficient_quota") || lower.contains("quota exceeded") => {
            ClassifyError::NeedsUser(format!(
                "{provider} says the account is out of quota (HTTP 429): {said}; add credit or change provider, then run `sitetrail resume`"
            ))
        }
        429 => ClassifyError::RateLimited {
            retry_after: retry_after(headers),
            message: format!("{provider} asked to slow down (HTTP 429): {said}"),
        },
        401 | 403 => ClassifyError::NeedsUser(format!(
            "{provider} refused the API key (HTTP {code}): {said}; check SITETRAIL_API_KEY, then run `sitetrail resume`"
        )),
        404 => ClassifyError::NeedsUser(format!(
            "{provider} does not know the model or the address (HTTP 404): {said}; check --model and --base-url, then run `sitetrail resume`"
        )),
        408 | 409 | 425 | 500..=599 => {
            ClassifyError::Transient(format!("{provider} failed (HTTP {code}): {said}"))
        }
        _ => ClassifyError::Permanent(format!("{provider} rejected the request (HTTP {code}): {said}")),
    }
}

/// The provider's own error message (`error.message` or `error` in a JSON body), else the body.
fn server_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error")?;
        e.get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    if text.is_empty() {
        "no details".to_owned()
    } else {
        truncate_chars(&text, 300)
    }
}

/// How long a 429 asks us to wait: the longest of `retry-after-ms`, `Retry-After` (seconds or
/// an HTTP date) and `x-ratelimit-reset-requests` / `-tokens` (OpenAI's `1m30s` form).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let mut waits = Vec::new();
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        waits.push(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    if let Some(v) = get("retry-after") {
        if let Ok(secs) = v.parse::<f64>() {
            waits.push(Duration::from_secs_f64(secs.max(0.0)));
        } else if let Ok(at) = chrono::DateTime::parse_from_rfc2822(v) {
            let ms = (at.timestamp_millis() - chrono::Utc::now().timestamp_millis()).max(0);
            waits.push(Duration::from_millis(ms as u64));
        }
    }
    for name in [
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
        "x-ratelimit-reset",
    ] {
        if let Some(d) = get(name).and_then(parse_go_duration) {
            waits.push(d);
        }
    }
    // Never trust a wait of more than a day: that is a broken header, not a rate limit.
    waits
        .into_iter()
        .max()
        .map(|d| d.min(Duration::from_secs(86_400)))
}

/// Parses durations like `1s`, `6m0s`, `1h2m3.5s`, `20ms` or a bare number of seconds.
fn parse_go_duration(s: &str) -> Option<Duration> {
    if let Ok(secs) = s.parse::<f64>() {
        return (secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn rate_limit_waits_are_read_from_every_header() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("x-ratelimit-reset-requests", "1m30s"),
                ("x-ratelimit-reset-tokens", "20ms")
            ])),
            Some(Duration::from_secs(90))
        );
        let later = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        let d = retry_after(&headers(&[("retry-after", &later)])).unwrap();
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        assert_eq!(retry_after(&headers(&[])), None);
        assert_eq!(
            parse_go_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(parse_go_duration("soon"), None);
    }

    #[test]
    fn statuses_map_to_failure_classes() {
        let h = HeaderMap::new();
        let e = |code: u16, body: &str| {
            status_error("openai", StatusCode::from_u16(code).unwrap(), &h, body, None)
        };
        assert!(matches!(
            e(429, r#"{"error":{"type":"insufficient_quota"}}"#),
            ClassifyError::NeedsUser(_)
        ));
        assert!(matches!(e(429, "slow down"), ClassifyError::RateLimited { .. }));
        for code in [401, 403, 404] {
            assert!(matches!(e(code, ""), ClassifyError::NeedsUser(_)), "{code}");
        }
        for code in [500, 502, 503, 529, 408] {
            assert!(matches!(e(code, ""), ClassifyError::Transient(_)), "{code}");
        }
        assert!(matches!(e(400, "bad"), ClassifyError::Permanent(_)));
    }

    #[test]
    fn server_text_is_redacted() {
        let key = ApiKey::new("sk-live-abc").unwrap();
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-live-abc"}}"#;
        let err = status_error(
            "openai",
            StatusCode::UNAUTHORIZED,
            &HeaderMap::new(),
            body,
            Some(&key),
        );
        assert!(!err.to_string().contains("sk-live-abc"), "{err}");
        assert!(err.to_string().contains("***"));
    }
}
