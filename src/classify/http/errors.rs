//! What a failed provider call means: every HTTP failure mapped to one [`ClassifyError`] class.
//!
//! The class decides whether the jobs lose an attempt:
//! - could not connect (DNS, refused, no route, connect timeout), or no answer at all (the
//!   connection was reset or closed before a status line came back): [`ClassifyError::Offline`];
//! - 429 with or without a wait (see [`retry_after`]): [`ClassifyError::RateLimited`];
//!   429 `insufficient_quota`, 401, 403, 404, any redirect (never followed), a TLS certificate the
//!   client refuses: [`ClassifyError::NeedsUser`];
//! - 408, 409, 425, 5xx, 529, a 1xx final answer, a timeout after connecting, a cut, unreadable
//!   or too large body: [`ClassifyError::Transient`]; any other status: [`ClassifyError::Permanent`].
//!
//! Every piece of server text put into an error goes through [`AnswerContext::clean`] (redacted
//! first, then cut), and a redirect's target is shown without credentials.

use serde_json::Value;

use super::rate_limit::retry_after;
use super::{display_url, Answer, AnswerContext};
use crate::classify::ClassifyError;

/// Characters of server text kept in an error message.
const SERVER_TEXT_CHARS: usize = 300;

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
pub(super) fn body_error(ctx: &AnswerContext<'_>, e: &reqwest::Error) -> ClassifyError {
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

/// The certificate problem, if the call failed because the server's certificate was refused
/// (also used by the sync client).
pub(crate) fn certificate_error(e: &reqwest::Error) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::http::test_support::{headers, now};
    use crate::classify::secret::{ApiKey, Secrets};
    use reqwest::header::HeaderMap;
    use reqwest::StatusCode;
    use url::Url;

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
}
