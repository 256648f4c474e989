//! Chromium family (Chrome, Chromium, Edge, Brave, Vivaldi, Opera): `<profile>/History`.
//!
//! A visit is a row of `visits`, its URL and title are in `urls`. `visit_time` is microseconds since
//! 1601-01-01 UTC. The importer keeps what Chromium's own History page shows (Chromium's
//! `VisitDatabase::GetVisibleVisitsInRange` uses the same test): the last visit of a redirect chain
//! (the `CHAIN_END` qualifier), never a subframe (core transition 3 or 4) or a keyword-generated
//! visit (10). The other visits of a chain (the URL that redirected, or Chromium's HTTPS-first
//! attempt of an `http://` URL) are skipped and counted as redirects; the page the user saw is
//! still imported once. `visit_duration` (how long the page stayed open) becomes the visit's
//! estimated time spent (capped: see `time_spent::MAX_ESTIMATE_MS`).

use rusqlite::types::ValueRef;

use super::rows::Columns;
use super::{RawVisit, Skip, SourceSpec};

/// The core transition type is the low byte; the rest are qualifier bits.
const CORE_MASK: i64 = 0xFF;
/// Core types of visits made inside a frame of a page: not a page the user navigated to.
const AUTO_SUBFRAME: i64 = 3;
const MANUAL_SUBFRAME: i64 = 4;
/// The search-engine URL Chromium derives from a keyword search; the search itself is a visit too.
const KEYWORD_GENERATED: i64 = 10;
/// Qualifier of the last visit of a redirect chain (every plain navigation is a chain of one).
const CHAIN_END: i64 = 0x2000_0000;
/// Microseconds from 1601-01-01 (Chromium's epoch) to 1970-01-01.
const EPOCH_OFFSET_MICROS: i64 = 11_644_473_600_000_000;

pub(super) const SPEC: SourceSpec = SourceSpec {
    schema: &[
        ("urls", &["id", "url", "title"]),
        (
            "visits",
            &["id", "url", "visit_time", "transition", "visit_duration"],
        ),
    ],
    count_sql: r#"SELECT count(*) FROM visits WHERE id > :after"#,
    probe_sql: r#"SELECT visit_time AS visit_time FROM visits WHERE id = :id"#,
    time_key,
    rows_sql: r#"SELECT v.id AS id, v.visit_time AS visit_time, v.transition AS transition,
                        v.visit_duration AS visit_duration, u.url AS url, u.title AS title
                 FROM visits AS v LEFT JOIN urls AS u ON u.id = v.url
                 WHERE v.id > :after
                 ORDER BY v.id"#,
    read,
};

fn read<'r>(row: &dyn Columns<'r>) -> rusqlite::Result<RawVisit<'r>> {
    // A transition that is not an integer is treated as a plain, complete navigation: the URL and
    // the time are what make a visit, and Chromium itself always writes an integer here.
    let transition = match row.value("transition")? {
        ValueRef::Integer(t) => t,
        _ => CHAIN_END,
    };
    let core = transition & CORE_MASK;
    let skip = if core == AUTO_SUBFRAME || core == MANUAL_SUBFRAME {
        Some(Skip::Subframe)
    } else if core == KEYWORD_GENERATED {
        Some(Skip::NotPage)
    } else if transition & CHAIN_END == 0 {
        Some(Skip::Redirect)
    } else {
        None
    };
    let time = time_key(row.value("visit_time")?);
    let mut raw = RawVisit::from_row(
        row,
        time,
        time.and_then(|t| t.checked_sub(EPOCH_OFFSET_MICROS)),
        skip,
    )?;
    // Microseconds the page stayed open (until the next navigation in its tab); 0 when unknown.
    // Optional among given column values (a row without it has no estimate).
    raw.duration_ms = match row.value("visit_duration") {
        Ok(ValueRef::Integer(us)) if us > 0 => Some(us / 1000),
        _ => None,
    };
    Ok(raw)
}

/// `visit_time` as stored: microseconds since 1601, an integer.
fn time_key(value: ValueRef<'_>) -> Option<i64> {
    match value {
        ValueRef::Integer(t) => Some(t),
        _ => None,
    }
}
