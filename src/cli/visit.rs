//! `sitetrail visit`: records one visit.

use clap::Args;

use sitetrail::{Error, NewVisit, Result, Store, Timestamp};

use super::out;

#[derive(Args, Debug)]
pub(crate) struct VisitArgs {
    /// An http or https URL.
    url: String,
    /// The page title.
    #[arg(long)]
    title: Option<String>,
    /// When the visit happened, RFC 3339 [default: now].
    #[arg(long, value_name = "RFC3339")]
    at: Option<String>,
    /// Where the visit came from.
    #[arg(long, value_name = "NAME", default_value = "cli")]
    source: String,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_visit(store: &Store, args: VisitArgs) -> Result<()> {
    let visited_at = match args.at {
        Some(s) => parse_visit_time(&s)?,
        None => store.now(),
    };
    let rec = store.record_visit(&NewVisit {
        url: &args.url,
        title: args.title.as_deref(),
        visited_at,
        source: &args.source,
        source_visit_id: None,
    })?;
    if args.json {
        return out::json(&rec);
    }
    let new = if rec.new_website {
        " (new website, queued for classification)"
    } else {
        ""
    };
    out::line(&format!(
        "recorded visit to {}{new}",
        sitetrail::domain::unicode_form(&rec.domain)
    ))
}

/// Parses `--at`: an RFC 3339 date-time within the range the importers accept (1990–2200).
fn parse_visit_time(s: &str) -> Result<Timestamp> {
    let t = Timestamp::parse_rfc3339(s).ok_or_else(|| {
        Error::InvalidInput(format!(
            "--at {s:?} is not an RFC 3339 date-time (e.g. 2026-11-29T10:00:00Z)"
        ))
    })?;
    sitetrail::visits::check_visit_time(t)
        .map_err(|why| Error::InvalidInput(format!("--at {s:?}: {why}")))?;
    Ok(t)
}
