//! Typed ids.
//!
//! Every id is a UUIDv7 (time-ordered, so new rows append to the end of their B-tree) stored as a
//! 16-byte BLOB and printed as a hyphenated string. Each table has its own newtype so a visit id
//! can never be passed where an outbox id is expected.

use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new time-ordered id.
            pub fn new() -> Self {
                $name(Uuid::now_v7())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim()).map($name)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&self.0.hyphenated())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.0.as_bytes().to_vec()))
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let bytes = value.as_blob()?;
                let arr: [u8; 16] = bytes
                    .try_into()
                    .map_err(|_| FromSqlError::InvalidBlobSize { expected_size: 16, blob_size: bytes.len() })?;
                Ok($name(Uuid::from_bytes(arr)))
            }
        }
    };
}

id_type!(
    /// The id of a `website` row.
    WebsiteId
);
id_type!(
    /// The id of a `visit` row.
    VisitId
);
id_type!(
    /// The id of a `website_category_classification_outbox` row.
    OutboxId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_hyphenated_and_parse_back() {
        let id = OutboxId::new();
        let s = id.to_string();
        assert_eq!(s.len(), 36);
        assert_eq!(s.parse::<OutboxId>().unwrap(), id);
        assert!("not-an-id".parse::<OutboxId>().is_err());
    }

    #[test]
    fn ids_are_time_ordered() {
        let a = VisitId::new();
        let b = VisitId::new();
        assert!(a < b);
    }
}
