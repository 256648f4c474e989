//! Safari: `~/Library/Safari/History.db`.
//!
//! A visit is a row of `history_visits` (with its own title); its URL is in `history_items`.
//! `visit_time` is seconds since 2001-01-01 UTC (Core Data time), stored as REAL. A visit whose
//! `redirect_destination` is set redirected elsewhere and showed nothing: it is skipped and counted
//! as a redirect, and the destination visit is imported, as for the other browsers.

use rusqlite::types::ValueRef;

use super::rows::Columns;
use super::{RawVisit, Skip, SourceSpec};

/// Microseconds from 1970-01-01 to 2001-01-01.
const EPOCH_OFFSET_MICROS: i64 = 978_307_200_000_000;

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
    probe_sql: r#"SELECT visit_time AS visit_time FROM history_visits WHERE id = :id"#,
    time_key,
    rows_sql: r#"SELECT v.id AS id, v.visit_time AS visit_time, v.title AS title,
                        v.redirect_destination AS redirect_destination, i.url AS url
                 FROM history_visits AS v LEFT JOIN history_items AS i ON i.id = v.history_item
                 WHERE v.id > :after
                 ORDER BY v.id"#,
    read,
};

fn read<'r>(row: &dyn Columns<'r>) -> rusqlite::Result<RawVisit<'r>> {
    let skip = match row.value("redirect_destination")? {
        ValueRef::Null => None,
        _ => Some(Skip::Redirect),
    };
    let time = time_key(row.value("visit_time")?);
    RawVisit::from_row(
        row,
        time,
        time.and_then(|t| t.checked_add(EPOCH_OFFSET_MICROS)),
        skip,
    )
}

/// `visit_time` (Core Data seconds, REAL) as whole microseconds since 2001-01-01; `None` for
/// text, NaN, infinities and values beyond `i64`.
fn time_key(value: ValueRef<'_>) -> Option<i64> {
    let seconds = match value {
        ValueRef::Real(s) => s,
        ValueRef::Integer(s) => s as f64,
        _ => return None,
    };
    let micros = (seconds * 1e6).round();
    // The range check is done on the float: `as` would saturate silently.
    #[allow(clippy::cast_possible_truncation)] // whole and within i64 (checked)
    (micros.is_finite() && micros.abs() < 9.0e18).then_some(micros as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_data_time_is_read_as_whole_microseconds() {
        assert_eq!(time_key(ValueRef::Real(0.5)), Some(500_000));
        assert_eq!(time_key(ValueRef::Integer(2)), Some(2_000_000));
        assert_eq!(time_key(ValueRef::Real(f64::NAN)), None);
        assert_eq!(time_key(ValueRef::Real(f64::INFINITY)), None);
        assert_eq!(time_key(ValueRef::Real(1e300)), None);
        assert_eq!(time_key(ValueRef::Text(b"yesterday")), None);
    }
}
