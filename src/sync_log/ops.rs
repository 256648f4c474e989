//! The operations a device records for the others, and how a record carries them.
//!
//! An operation is stored as JSON in `sync_op` (in the transaction of the change it describes)
//! and sealed with others into one record: `deflate(JSON [{"h": clock, "o": op}, ...])`,
//! encrypted (crypto.rs). An operation of a kind this build does not know (a newer device's) is
//! [`Op::Unknown`] and skipped, so old and new devices can share an account.

use std::io::{Read, Write};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};

use crate::ids::VisitId;

/// The most bytes a record's operations may inflate to (a record is at most 256 KiB on the
/// wire; this bounds what a hostile or broken record can make a device allocate).
pub const MAX_INFLATED_BYTES: u64 = 16 * 1024 * 1024;

/// One change, as the other devices apply it. Times are microseconds since the epoch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Op {
    /// A visit, with its id on every device.
    Visit {
        /// The visit's id (the same on every device).
        id: VisitId,
        /// Its URL.
        url: String,
        /// Its title.
        title: Option<String>,
        /// When it was made.
        at: i64,
        /// Where it was recorded from (`extension`, an import source, `cli`).
        source: String,
        /// Its measured active time, if known when it was sent.
        #[serde(default)]
        active_ms: Option<i64>,
        /// Its estimated time (an imported duration), if any.
        #[serde(default)]
        estimated_ms: Option<i64>,
    },
    /// A visit's title changed.
    Title {
        /// The visit.
        id: VisitId,
        /// Its new title.
        title: Option<String>,
    },
    /// A visit's measured active time (a running total: the largest wins).
    ActiveTime {
        /// The visit.
        id: VisitId,
        /// Milliseconds.
        ms: i64,
    },
    /// A visit's estimated time (an imported duration).
    EstimatedTime {
        /// The visit.
        id: VisitId,
        /// Milliseconds.
        ms: i64,
    },
    /// A domain's category: the user's own (`user`, also a confirmation in Review) or a remote
    /// provider's (`ai`).
    Category {
        /// The website's domain.
        domain: String,
        /// The category id.
        category: String,
        /// `user` or `ai`.
        source: String,
    },
    /// A domain put on (or taken off) the never-record list.
    Block {
        /// The domain.
        domain: String,
        /// On the list.
        blocked: bool,
    },
    /// A host pattern put on (or taken off) the list of hosts never sent to a remote provider.
    Exclude {
        /// The pattern: `bank.example` or `*.corp.example`, normalised.
        pattern: String,
        /// On the list.
        excluded: bool,
    },
    /// A limit or goal set (or removed): a register per (target, period, kind), see
    /// `crate::limits` for which write wins.
    Limit {
        /// `category` or `domain`.
        target_type: String,
        /// The category id or the normalised domain.
        target: String,
        /// `day` or `week`.
        period: String,
        /// `max` (a limit) or `min` (a goal).
        kind: String,
        /// The minutes; absent for a removal.
        #[serde(default)]
        minutes: Option<u32>,
        /// The clock of the write that created this incarnation; absent when this write did.
        #[serde(default)]
        created: Option<i64>,
    },
    /// A focus session started or stopped: one register, the last write wins (`crate::focus`).
    Focus {
        /// When it started (µs).
        started_at: i64,
        /// When it ends on its own (µs).
        ends_at: i64,
        /// What it holds back: `category:social`, `domain:youtube.com`.
        blocks: Vec<String>,
        /// When it was stopped early (µs); absent while it runs.
        #[serde(default)]
        stopped_at: Option<i64>,
    },
    /// Visits forgotten by id.
    ForgetVisits {
        /// Their ids.
        ids: Vec<VisitId>,
    },
    /// A website forgotten: every visit to it made up to `at`.
    ForgetWebsite {
        /// The domain.
        domain: String,
        /// When it was forgotten.
        at: i64,
    },
    /// A website this device forgot before it was linked: its tombstone keeps only the SHA-256 of
    /// the domain (never the domain), so that is what is sent; the others forget the website whose
    /// domain has it, every visit to it made up to `at`.
    ForgetWebsiteHash {
        /// SHA-256 of the domain as stored, in lower-case hex.
        domain_sha256: String,
        /// When it was forgotten.
        at: i64,
    },
    /// Every visit made from `since` to `until`, for good.
    ForgetRange {
        /// First instant.
        since: i64,
        /// Last instant.
        until: i64,
    },
    /// The sending device's name.
    Device {
        /// Its name.
        name: String,
    },
    /// An operation this build does not know.
    #[serde(other)]
    Unknown,
}

impl Op {
    /// The JSON stored in `sync_op`.
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// An operation with the clock of the change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped {
    /// The hybrid logical clock of the change.
    pub hlc: i64,
    /// The change.
    pub op: Op,
}

#[derive(Deserialize)]
struct Entry {
    h: i64,
    o: serde_json::Value,
}

/// The plaintext of a record: operations stored as JSON (`(hlc, json)`), deflated.
pub fn pack(ops: &[(i64, String)]) -> Vec<u8> {
    let mut json = String::with_capacity(ops.iter().map(|(_, j)| j.len() + 16).sum::<usize>() + 2);
    json.push('[');
    for (i, (h, o)) in ops.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str("{\"h\":");
        json.push_str(&h.to_string());
        json.push_str(",\"o\":");
        json.push_str(o);
        json.push('}');
    }
    json.push(']');
    let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(json.as_bytes());
    enc.finish().unwrap_or_default()
}

/// Most operations a record may carry (a device seals at most 1,000; a newer one may seal more):
/// with [`MAX_INFLATED_BYTES`], what bounds the memory one record takes once read.
pub const MAX_OPS_PER_RECORD: usize = 10_000;

/// Why a record's plaintext was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnpackError {
    /// Not deflate data, or not a list of operations.
    #[error("a record's contents are damaged")]
    Damaged,
    /// More than [`MAX_INFLATED_BYTES`] inflated, or more than [`MAX_OPS_PER_RECORD`] operations.
    #[error("a record's contents are larger than a record may be")]
    TooLarge,
}

/// Inflates a record's plaintext: at most [`MAX_INFLATED_BYTES`], read no further.
pub fn inflate(bytes: &[u8]) -> Result<Vec<u8>, UnpackError> {
    let mut json = Vec::new();
    DeflateDecoder::new(bytes)
        .take(MAX_INFLATED_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|_| UnpackError::Damaged)?;
    if json.len() as u64 > MAX_INFLATED_BYTES {
        return Err(UnpackError::TooLarge);
    }
    Ok(json)
}

/// The operations in an inflated record, read one at a time (never the whole list as JSON
/// values first): at most [`MAX_OPS_PER_RECORD`].
pub fn parse(json: &[u8]) -> Result<Vec<Stamped>, UnpackError> {
    struct Entries<'a>(&'a std::cell::Cell<bool>);
    impl<'de> serde::de::Visitor<'de> for Entries<'_> {
        type Value = Vec<Stamped>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of operations")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(e) = seq.next_element::<Entry>()? {
                if out.len() == MAX_OPS_PER_RECORD {
                    self.0.set(true);
                    return Err(serde::de::Error::custom("too many operations"));
                }
                out.push(Stamped {
                    hlc: e.h,
                    op: serde_json::from_value(e.o).unwrap_or(Op::Unknown),
                });
            }
            Ok(out)
        }
    }
    let too_many = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(json);
    let parsed =
        serde::Deserializer::deserialize_seq(&mut de, Entries(&too_many)).and_then(|v| de.end().map(|()| v));
    match parsed {
        Ok(v) => Ok(v),
        Err(_) if too_many.get() => Err(UnpackError::TooLarge),
        Err(_) => Err(UnpackError::Damaged),
    }
}

/// Reads what [`pack`] made. Operations of unknown kinds, or known kinds with fields this build
/// cannot read, come back as [`Op::Unknown`].
pub fn unpack(bytes: &[u8]) -> Result<Vec<Stamped>, UnpackError> {
    parse(&inflate(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_and_unknown_kinds_are_skipped_not_refused() {
        let visit = Op::Visit {
            id: VisitId::new(),
            url: "https://a.example/x".into(),
            title: Some("A \"quoted\" title".into()),
            at: 1_700_000_000_000_000,
            source: "extension".into(),
            active_ms: Some(5),
            estimated_ms: None,
        };
        let ops = vec![
            (1, visit.to_json()),
            (2, r#"{"t":"from_the_future","x":1}"#.to_owned()),
            (3, r#"{"t":"block","domain":"b.example"}"#.to_owned()),
            (4, Op::ForgetRange { since: 1, until: 2 }.to_json()),
        ];
        let back = unpack(&pack(&ops)).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back[0], Stamped { hlc: 1, op: visit });
        assert_eq!(back[1].op, Op::Unknown);
        assert_eq!(back[2].op, Op::Unknown, "a known kind with a missing field");
        assert_eq!(back[3].op, Op::ForgetRange { since: 1, until: 2 });
    }

    #[test]
    fn damaged_or_huge_contents_are_refused() {
        assert_eq!(unpack(b"not deflate"), Err(UnpackError::Damaged));
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(&vec![b' '; usize::try_from(MAX_INFLATED_BYTES + 10).unwrap()])
            .unwrap();
        assert_eq!(unpack(&enc.finish().unwrap()), Err(UnpackError::TooLarge));
        let many: Vec<(i64, String)> = (0..=MAX_OPS_PER_RECORD as i64)
            .map(|h| (h, "{}".to_owned()))
            .collect();
        assert_eq!(unpack(&pack(&many)), Err(UnpackError::TooLarge));
        assert_eq!(unpack(&pack(&many[1..])).map(|v| v.len()), Ok(MAX_OPS_PER_RECORD));
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(b"[{\"h\": 1, \"o\": {}}] trailing").unwrap();
        assert_eq!(unpack(&enc.finish().unwrap()), Err(UnpackError::Damaged));
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(b"{\"not\": \"a list\"}").unwrap();
        assert_eq!(unpack(&enc.finish().unwrap()), Err(UnpackError::Damaged));
    }
}
