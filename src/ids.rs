//! Typed ids.
//!
//! Every id is a UUIDv7 (time-ordered, so new rows append to the end of their B-tree) stored as a
//! 16-byte BLOB and printed as a hyphenated string. Each table has its own newtype so a visit id
//! can never be passed where an outbox id is expected.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use uuid::Uuid;

/// `(id, number)` pairs as the JSON text a batch statement reads with `json_each`:
/// `[["<32 hex digits>", n], ...]`, each id read back with `unhex(value ->> 0)` and its number with
/// `value ->> 1`. One statement for many rows where there would be one a row (the estimated times
/// of an import's batch, the titled visits per website).
pub(crate) fn id_number_rows(rows: impl IntoIterator<Item = (Uuid, i64)>) -> String {
    let mut json = String::from("[");
    for (i, (id, n)) in rows.into_iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        // Writing to a String cannot fail.
        let _ = write!(json, "[\"{}\",{n}]", id.simple());
    }
    json.push(']');
    json
}

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
    /// The id of a `visit` row: a UUIDv7 whose timestamp is the visit's `visited_at`, so the
    /// primary key sorts visits by time.
    VisitId
);

impl VisitId {
    /// A new id for a visit made at `visited_at`: a UUIDv7 whose 48-bit timestamp is the visit's
    /// millisecond and whose next 12 bits are its microsecond within it (RFC 9562, section 6.2,
    /// method 3), then random bits. Ids therefore sort by visit time to the microsecond, and
    /// visits recorded in time order append to the end of the primary key.
    pub fn at(visited_at: crate::time::Timestamp) -> Self {
        let micros = visited_at.as_micros().max(0) as u64;
        let millis = micros / 1_000;
        // 0..=4091, in 12 bits: the microsecond within the millisecond, scaled to 4096 steps.
        let fraction = u16::try_from((micros % 1_000) * 4096 / 1000).unwrap_or(0x0fff);
        let random = *Uuid::new_v4().as_bytes();
        let mut bytes = [0u8; 16];
        bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
        let [hi, lo] = fraction.to_be_bytes();
        bytes[6] = 0x70 | hi;
        bytes[7] = lo;
        bytes[8] = 0x80 | (random[8] & 0x3f);
        bytes[9..].copy_from_slice(&random[9..]);
        VisitId(Uuid::from_bytes(bytes))
    }

    /// The smallest id a visit made at or after `t` can have (for time-range queries).
    pub fn lower_bound(t: crate::time::Timestamp) -> Self {
        VisitId(bound(t, 0x00))
    }

    /// The largest id a visit made before `t`'s next millisecond can have.
    pub fn upper_bound(t: crate::time::Timestamp) -> Self {
        VisitId(bound(t, 0xff))
    }
}

/// A v7-shaped UUID for millisecond `t` with every other bit set to `fill`.
fn bound(t: crate::time::Timestamp, fill: u8) -> Uuid {
    // 48 bits of milliseconds reach the year 10889: a later time is the last millisecond, not
    // one that wrapped round to 1970.
    let millis = ((t.as_micros().max(0) / 1_000) as u64).min(0xffff_ffff_ffff);
    let mut bytes = [fill; 16];
    bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    Uuid::from_bytes(bytes)
}
id_type!(
    /// The id of a `website_category_classification_outbox` row.
    OutboxId
);
id_type!(
    /// A running worker (one per [`crate::worker::Worker`]), recorded in the `worker_id` of the
    /// jobs it holds.
    WorkerId
);
id_type!(
    /// The id of a `tombstone` row: one forgetting.
    TombstoneId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_number_rows_are_json_that_sqlite_reads_back_as_ids_and_numbers() {
        let (a, b) = (VisitId::new(), VisitId::new());
        let rows = id_number_rows([(a.0, 7), (b.0, -1)]);
        assert_eq!(
            rows,
            serde_json::json!([[a.0.simple().to_string(), 7], [b.0.simple().to_string(), -1]]).to_string()
        );
        assert_eq!(id_number_rows([]), "[]");
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let back: Vec<(VisitId, i64)> = conn
            .prepare("SELECT unhex(value ->> 0), value ->> 1 FROM json_each(?1)")
            .unwrap()
            .query_map([&rows], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(back, vec![(a, 7), (b, -1)]);
    }

    #[test]
    fn ids_print_hyphenated_and_parse_back() {
        let id = OutboxId::new();
        let s = id.to_string();
        assert_eq!(s.len(), 36);
        assert_eq!(s.parse::<OutboxId>().unwrap(), id);
        assert!("not-an-id".parse::<OutboxId>().is_err());
    }

    #[test]
    fn visit_ids_sort_by_visit_time_and_fall_within_their_bounds() {
        use crate::time::Timestamp;
        let early = Timestamp::parse_rfc3339("2020-01-01T00:00:00Z").unwrap();
        let late = Timestamp::parse_rfc3339("2026-11-29T10:00:00.5Z").unwrap();
        let (a, b) = (VisitId::at(late), VisitId::at(early));
        assert!(
            b < a,
            "an earlier visit sorts first whatever order the ids were made in"
        );
        assert!(VisitId::lower_bound(late) <= a && a <= VisitId::upper_bound(late));
        assert!(VisitId::upper_bound(early) < VisitId::lower_bound(late));
        assert_eq!(a.0.get_version_num(), 7);
        assert_eq!(a.0.get_variant(), uuid::Variant::RFC4122);
        // Microseconds apart in the same millisecond still sort by time.
        let (x, y) = (Timestamp(1_000_000_000_001), Timestamp(1_000_000_000_002));
        assert!(VisitId::at(x) < VisitId::at(y));
    }

    #[test]
    fn ids_are_time_ordered() {
        let a = VisitId::new();
        let b = VisitId::new();
        assert!(a < b);
    }
}
