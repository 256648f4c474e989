//! Safari: `~/Library/Safari/History.db`.
//!
//! A visit is a row of `history_visits` (with its own title); its URL is in `history_items`.
//! `visit_time` is seconds since 2001-01-01 UTC (Core Data time), stored as REAL. A visit whose
//! `redirect_destination` is set redirected elsewhere and showed nothing: it is skipped and counted
//! as a redirect, and the destination visit is imported, as for the other browsers.

use rusqlite::types::ValueRef;
use rusqlite::Row;

use super::{timestamp_in_range, RawVisit, Skip, SourceSpec};

/// Seconds from 1970-01-01 to 2001-01-01.
const EPOCH_OFFSET_SECS: f64 = 978_307_200.0;

pub(super) const SPEC: SourceSpec = SourceSpec {
    schema: &[
        ("history_items", &["id", "url"]),
        (
            "history_visits",
            &[
                "id",
                "history_item",
                "visit_time",
                "title",
                "redirect_destination",
            ],
        ),
    ],
    count_sql: r#"SELECT count(*) FROM history_visits WHERE id > :after"#,
    rows_sql: r#"SELECT v.id AS id, v.visit_time AS visit_time, v.title AS title,
                        v.redirect_destination AS redirect_destination, i.url AS url
                 FROM history_visits AS v LEFT JOIN history_items AS i ON i.id = v.history_item
                 WHERE v.id > :after
                 ORDER BY v.id"#,
    read,
};

fn read<'r>(row: &'r Row<'_>) -> rusqlite::Result<RawVisit<'r>> {
    let skip = match row.get_ref("redirect_destination")? {
        ValueRef::Null => None,
        _ => Some(Skip::Redirect),
    };
    let seconds = match row.get_ref("visit_time")? {
        ValueRef::Real(s) => Some(s),
        ValueRef::Integer(s) => Some(s as f64),
        _ => None,
    };
    let visited_at = seconds.and_then(core_data_to_micros).and_then(timestamp_in_range);
    Ok(RawVisit {
        id: row.get("id")?,
        url: row.get_ref("url")?,
        title: row.get_ref("title")?,
        visited_at,
        skip,
    })
}

/// Core Data seconds to Unix microseconds; `None` for NaN, infinities and values beyond `i64`.
fn core_data_to_micros(seconds: f64) -> Option<i64> {
    let micros = ((seconds + EPOCH_OFFSET_SECS) * 1e6).round();
    // The range check is done on the float: `as` would saturate silently.
    (micros.is_finite() && micros.abs() < 9.0e18).then_some(micros as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_data_time_converts_to_unix_micros() {
        // 2026-11-29T00:00:00Z is 1_795_910_400 s after the Unix epoch.
        assert_eq!(
            core_data_to_micros(1_795_910_400.0 - EPOCH_OFFSET_SECS),
            Some(1_795_910_400_000_000)
        );
        assert_eq!(core_data_to_micros(0.5), Some(978_307_200_500_000));
        assert_eq!(core_data_to_micros(f64::NAN), None);
        assert_eq!(core_data_to_micros(f64::INFINITY), None);
        assert_eq!(core_data_to_micros(1e300), None);
    }
}
