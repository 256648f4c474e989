//! The API key, kept out of logs, errors, `Debug` output and the database.
//!
//! [`ApiKey`] is the only place the key lives. Its `Debug` and `Display` print `ApiKey(***)`; the
//! key itself is read only by the HTTP providers when they build the `Authorization` header
//! ([`ApiKey::expose`]). Whatever text comes back from a server goes through [`ApiKey::redact`]
//! before it becomes part of an error, so a server that echoes the key cannot leak it.

use std::fmt;

/// A secret API key. Never printed, never serialised.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

/// What is printed instead of the key.
pub const REDACTED: &str = "***";

impl ApiKey {
    /// Wraps `key`; `None` for an empty or blank string (an unset variable is the same as none).
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into().trim().to_owned();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    /// The key itself, for the `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.0, REDACTED)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({REDACTED})")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Redacts `text` with `key`, if there is one.
pub fn redact(key: Option<&ApiKey>, text: &str) -> String {
    match key {
        Some(k) => k.redact(text),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_formatted() {
        let key = ApiKey::new("sk-secret-123").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        assert_eq!(format!("{key}"), "***");
        assert_eq!(
            key.redact("bad key sk-secret-123, again sk-secret-123"),
            "bad key ***, again ***"
        );
        assert!(ApiKey::new("  ").is_none());
    }
}
