//! Logging in: every route but account creation and health carries `Authorization: Bearer
//! <account>.<login>`. The hub keeps only the SHA-256 of each login and compares it in
//! constant time; an unknown account and a wrong login are the same 401, after the same work.
//!
//! Invariant: what a handler may touch is named by [`Authed::account_id`], the account the
//! login opened; every query of every handler is keyed by it, so one account's login reads and
//! writes nothing of another's.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use sitetrail_sync_wire::{Login, DEVICE_HEADER};
use subtle::ConstantTimeEq;
use tokio_postgres::types::Type;
use uuid::Uuid;

use crate::app::App;
use crate::error::HubError;
use crate::request::parse_credentials;
use crate::sql::Queries;

/// A request whose login opened an account.
#[derive(Clone, Copy, Debug)]
pub struct Authed {
    /// The account.
    pub account_id: Uuid,
    /// The device named by the device header, if any (not necessarily registered).
    pub device_id: Option<Uuid>,
}

/// The SHA-256 of a login: what the hub stores.
pub fn login_hash(login: &Login) -> [u8; 32] {
    Sha256::digest(login.as_bytes()).into()
}

/// Whether `stored` (a hash from the database, if the account exists) matches `login`, in time
/// that depends on neither.
pub fn login_matches(stored: Option<&[u8]>, login: &Login) -> bool {
    let given = login_hash(login);
    match stored {
        Some(stored) => stored.ct_eq(&given).into(),
        None => {
            // The same comparison against nothing, so an unknown account takes as long.
            let _ = [0u8; 32].ct_eq(&given);
            false
        }
    }
}

impl FromRequestParts<App> for Authed {
    type Rejection = HubError;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let credentials = parse_credentials(
            parts
                .headers
                .get(axum::http::header::AUTHORIZATION)
                .map(axum::http::HeaderValue::as_bytes),
            parts
                .headers
                .get(DEVICE_HEADER)
                .map(axum::http::HeaderValue::as_bytes),
        )?;
        let client = app.pool.get().await?;
        let row = client
            .query_opt(
                "SELECT login_sha256 FROM account WHERE account_id = $1",
                &[(&credentials.account_id, Type::UUID)],
            )
            .await?;
        let stored: Option<Vec<u8>> = row.map(|r| r.get("login_sha256"));
        if !login_matches(stored.as_deref(), &credentials.login) {
            return Err(HubError::Unauthorized);
        }
        if let Some(device_id) = credentials.device_id {
            // Last seen, to the minute: at most one write per device and minute.
            client
                .execute(
                    r#"UPDATE device SET last_seen_at = date_trunc('minute', now())
                       WHERE account_id = $1 AND device_id = $2
                         AND last_seen_at < date_trunc('minute', now())"#,
                    &[(&credentials.account_id, Type::UUID), (&device_id, Type::UUID)],
                )
                .await?;
        }
        crate::db::note_up();
        Ok(Authed {
            account_id: credentials.account_id,
            device_id: credentials.device_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_right_login_matches() {
        let login = Login::new([4; 32]);
        let stored = login_hash(&login);
        assert!(login_matches(Some(&stored), &login));
        assert!(!login_matches(Some(&stored), &Login::new([5; 32])));
        assert!(!login_matches(Some(&stored[..31]), &login));
        assert!(!login_matches(None, &login));
        // The hash is not the login.
        assert_ne!(&stored, login.as_bytes());
    }
}
