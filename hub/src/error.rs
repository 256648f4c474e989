//! The hub's one error type and how each becomes an answer: a status and the wire's
//! [`ErrorBody`] (`{"error": <code>, "message": <sentence>}`).
//!
//! Invariant: a message never copies what the client sent (it names the field and the limit),
//! and never carries a database error's text (those are logged, without parameters, and the
//! client hears `internal` or `unavailable`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sitetrail_sync_wire::{ErrorBody, ErrorCode};

/// A refused or failed request.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// 400: malformed, or outside a limit (the message says which).
    #[error("{0}")]
    BadRequest(String),
    /// 401: no login, or a login that does not open this account.
    #[error("no login, or a login that does not open an account on this hub")]
    Unauthorized,
    /// 403: the login is right but the device may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// 403: the account has no such device (not one that left: none at all), said so in the
    /// body (`unregistered`) so the device registers again (a hub restored from a dump taken
    /// before it registered).
    #[error(
        "this device is not registered with this account: register it first (PUT /v1/devices/{{device_id}})"
    )]
    NotRegistered,
    /// 404: no such account, device or route.
    #[error("{0}")]
    NotFound(String),
    /// 409: the request does not fit what is stored.
    #[error("{0}")]
    Conflict(String),
    /// 413: the body (or a push's payload) is over its limit.
    #[error("{0}")]
    TooLarge(String),
    /// 429: too many requests of this kind from this address; try again after `retry_after_s`.
    #[error("{message}")]
    TooManyRequests {
        /// What was refused.
        message: String,
        /// Seconds until a request would be taken (the `Retry-After` header).
        retry_after_s: u64,
    },
    /// 503: PostgreSQL is unreachable (or the request ran out of time); try again later.
    #[error("{0}")]
    Unavailable(String),
    /// 507: the account is at a quota; nothing of the request was stored.
    #[error(
        "the hub's quota for this account is full: {} ({}); this request would add {}, so nothing of it was stored",
        crate::quota_words::describe(.0.quota, .0.used, .0.limit),
        crate::quota_words::flag(.0.quota),
        .0.wanted
    )]
    QuotaExceeded(sitetrail_sync_wire::QuotaRefusal),
    /// 500: the hub failed. The cause is logged, not sent.
    #[error("the hub failed; the error is in its log")]
    Internal,
}

/// The `Retry-After` of a 503: PostgreSQL restarts or fails over in seconds.
pub const UNAVAILABLE_RETRY_AFTER_S: u64 = 5;

/// Shorthand for handlers.
pub type HubResult<T> = Result<T, HubError>;

impl HubError {
    /// The status and code this error is answered with.
    pub fn status_and_code(&self) -> (StatusCode, ErrorCode) {
        match self {
            HubError::BadRequest(_) => (StatusCode::BAD_REQUEST, ErrorCode::BadRequest),
            HubError::Unauthorized => (StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized),
            HubError::Forbidden(_) | HubError::NotRegistered => (StatusCode::FORBIDDEN, ErrorCode::Forbidden),
            HubError::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::NotFound),
            HubError::Conflict(_) => (StatusCode::CONFLICT, ErrorCode::Conflict),
            HubError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::TooLarge),
            HubError::TooManyRequests { .. } => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::TooManyRequests),
            HubError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Unavailable),
            HubError::QuotaExceeded(_) => (StatusCode::INSUFFICIENT_STORAGE, ErrorCode::QuotaExceeded),
            HubError::Internal => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal),
        }
    }

    /// The answer's body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.status_and_code().1,
            message: self.to_string(),
            quota: match self {
                HubError::QuotaExceeded(refusal) => Some(*refusal),
                _ => None,
            },
            unregistered: matches!(self, HubError::NotRegistered),
        }
    }

    /// 503 for an unreachable database.
    pub fn database_unavailable() -> HubError {
        HubError::Unavailable("the hub's database is unreachable; try again in a few seconds".into())
    }
}

impl IntoResponse for HubError {
    fn into_response(self) -> Response {
        // Both "try again later" answers say when, so a device need not guess.
        let retry_after = match &self {
            HubError::TooManyRequests { retry_after_s, .. } => Some(*retry_after_s),
            HubError::Unavailable(_) => Some(UNAVAILABLE_RETRY_AFTER_S),
            _ => None,
        };
        let (status, _) = self.status_and_code();
        let mut response = (status, Json(self.body())).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(seconds),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_the_status_of_its_code() {
        let all = [
            HubError::BadRequest("x".into()),
            HubError::Unauthorized,
            HubError::Forbidden("x".into()),
            HubError::NotRegistered,
            HubError::NotFound("x".into()),
            HubError::Conflict("x".into()),
            HubError::TooLarge("x".into()),
            HubError::TooManyRequests {
                message: "x".into(),
                retry_after_s: 3,
            },
            HubError::database_unavailable(),
            HubError::QuotaExceeded(sitetrail_sync_wire::QuotaRefusal {
                quota: sitetrail_sync_wire::Quota::Leases,
                used: 3,
                limit: 3,
                wanted: 1,
            }),
            HubError::Internal,
        ];
        for error in all {
            let (status, code) = error.status_and_code();
            let json = serde_json::to_value(error.body()).unwrap();
            let expected = match status.as_u16() {
                400 => "bad_request",
                401 => "unauthorized",
                403 => "forbidden",
                404 => "not_found",
                409 => "conflict",
                413 => "too_large",
                429 => "too_many_requests",
                503 => "unavailable",
                507 => "quota_exceeded",
                500 => "internal",
                other => panic!("unexpected status {other}"),
            };
            assert_eq!(json["error"], expected, "{code:?}");
            assert!(!json["message"].as_str().unwrap().is_empty());
        }
    }
}
