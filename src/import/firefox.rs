//! Firefox family (Firefox, LibreWolf, Waterfox): `<profile>/places.sqlite`.
//!
//! A visit is a row of `moz_historyvisits`, its URL and title are in `moz_places`. `visit_date` is
//! microseconds since the Unix epoch (PRTime).
//!
//! Redirects: a visit of type 5 (permanent redirect) or 6 (temporary redirect) is the page the
//! user landed on, and its `from_visit` is the URL that redirected (a link shortener, say), which
//! showed nothing. Like Chromium's chain rule and Firefox's own history view (which hides redirect
//! sources), the landing visit is imported and the redirect source is skipped and counted as a
//! redirect. Embedded (4) and framed-link (8) visits are frame loads, counted as subframes;
//! downloads (7) are files, not pages, counted as `not_page`.

use rusqlite::types::ValueRef;

use super::rows::Columns;
use super::{RawVisit, Skip, SourceSpec};

const TRANSITION_EMBED: i64 = 4;
const TRANSITION_DOWNLOAD: i64 = 7;
const TRANSITION_FRAMED_LINK: i64 = 8;

pub(super) const SPEC: SourceSpec = SourceSpec {
    schema: &[
        ("moz_places", &["id", "url", "title"]),
        (
            "moz_historyvisits",
            &["id", "from_visit", "place_id", "visit_date", "visit_type"],
        ),
    ],
    count_sql: r#"SELECT count(*) FROM moz_historyvisits WHERE id > :after"#,
    probe_sql: r#"SELECT visit_date AS visit_time FROM moz_historyvisits WHERE id = :id"#,
    time_key,
    // `moz_historyvisits_fromindex` (on from_visit) serves the EXISTS lookup in real profiles.
    rows_sql: r#"SELECT v.id AS id, v.visit_date AS visit_date, v.visit_type AS visit_type,
                        EXISTS (SELECT 1 FROM moz_historyvisits AS r
                                WHERE r.from_visit = v.id AND r.visit_type IN (5, 6)) AS redirect_source,
                        p.url AS url, p.title AS title
                 FROM moz_historyvisits AS v LEFT JOIN moz_places AS p ON p.id = v.place_id
                 WHERE v.id > :after
                 ORDER BY v.id"#,
    read,
};

fn read<'r>(row: &dyn Columns<'r>) -> rusqlite::Result<RawVisit<'r>> {
    let visit_type = match row.value("visit_type")? {
        ValueRef::Integer(t) => t,
        _ => 0,
    };
    let redirect_source = super::rows::integer(row, "redirect_source")? != 0;
    let skip = if redirect_source {
        Some(Skip::Redirect)
    } else if visit_type == TRANSITION_EMBED || visit_type == TRANSITION_FRAMED_LINK {
        Some(Skip::Subframe)
    } else if visit_type == TRANSITION_DOWNLOAD {
        Some(Skip::NotPage)
    } else {
        None
    };
    let time = time_key(row.value("visit_date")?);
    RawVisit::from_row(row, time, time, skip)
}

/// `visit_date` as stored: microseconds since the Unix epoch, an integer.
fn time_key(value: ValueRef<'_>) -> Option<i64> {
    match value {
        ValueRef::Integer(t) => Some(t),
        _ => None,
    }
}
