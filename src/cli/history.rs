//! The `history` command: visits newest first (or best match first), with search, category and
//! date filters, in keyset pages like the app's. The querying is done by `sitetrail::history`;
//! this module turns arguments into a query and rows into text or JSON.
//!
//! A database from before the search index first gets its index built, with a progress bar on
//! stderr (once; resumable if interrupted).

use std::collections::HashMap;
use std::io::IsTerminal;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use sitetrail::domain::unicode_form;
use sitetrail::history::{CategoryFilter, HistoryQuery, HistoryRow, SortOrder, MAX_PAGE};
use sitetrail::ids::VisitId;
use sitetrail::search::{self, BackfillOptions, IndexStatus};
use sitetrail::time_spent::{VisitTime, MAX_VISIT_TIMES};
use sitetrail::{Error, Result, Store};

use super::out::{self, Align, Cell, Style, Table};
use super::{human, when};

/// Most visits one `history` command prints.
const MAX_LIMIT: usize = 100_000;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SortArg {
    /// Newest first.
    Newest,
    /// Best match first (needs --search); ranks the newest 10,000 matches.
    Rank,
}

#[derive(Args, Debug)]
pub(crate) struct HistoryArgs {
    /// Words to find in the domain, title or URL: every word, as a word or a word's beginning,
    /// ignoring case and accents (`sqlite lock` finds "SQLite: File Locking").
    #[arg(long, value_name = "Q")]
    search: Option<String>,
    /// Only visits to websites in this category: its id or name (see `sitetrail categories`).
    #[arg(long, value_name = "C", value_parser = human::CategoryArg, hide_possible_values = true)]
    category: Option<String>,
    /// Only visits to websites not classified yet.
    #[arg(long, conflicts_with = "category")]
    uncategorized: bool,
    /// Only visits at or after this time: RFC 3339, a date (local midnight), today, yesterday,
    /// 7d, 30d (the last N days), week or month.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only visits at or before this time: inclusive, to the millisecond (as for --since; a
    /// date or a word is the moment its day starts, so `--until today` ends at local midnight).
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// Most visits to print.
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: usize,
    /// Continue after this visit (the cursor the previous page printed).
    #[arg(long, value_name = "VISIT_ID", conflicts_with = "offset")]
    before: Option<String>,
    /// The order.
    #[arg(long, value_enum, default_value = "newest")]
    sort: SortArg,
    /// Best-first pages: skip this many matches (the offset the previous page printed).
    #[arg(long, value_name = "N")]
    offset: Option<usize>,
    /// Also print each visit's id (what `sitetrail forget visit` takes).
    #[arg(long)]
    ids: bool,
    /// Only visits recorded on the device of this name (see `sitetrail sync status`).
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// Print JSON: an array of {id, url, title, domain, category, category_source, visited_at,
    /// source, device}.
    #[arg(long)]
    json: bool,
}

impl HistoryArgs {
    fn query(&self) -> Result<HistoryQuery> {
        if self.limit == 0 || self.limit > MAX_LIMIT {
            return Err(Error::InvalidInput(format!(
                "--limit must be 1 to {MAX_LIMIT}, not {}",
                self.limit
            )));
        }
        let sort = match self.sort {
            SortArg::Newest => SortOrder::Newest,
            SortArg::Rank => SortOrder::Rank,
        };
        if sort == SortOrder::Rank && self.search.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(Error::InvalidInput("--sort rank needs --search".into()));
        }
        if self.offset.is_some() && sort != SortOrder::Rank {
            return Err(Error::InvalidInput(
                "--offset pages a --sort rank search; newest-first pages continue with --before".into(),
            ));
        }
        if self.before.is_some() && sort == SortOrder::Rank {
            return Err(Error::InvalidInput(
                "--before continues newest-first pages; best-first pages continue with --offset".into(),
            ));
        }
        let category = match (&self.category, self.uncategorized) {
            (Some(c), _) => Some(CategoryFilter::Is(human::parse_category(c)?)),
            (None, true) => Some(CategoryFilter::Uncategorized),
            (None, false) => None,
        };
        let before = self
            .before
            .as_deref()
            .map(|b| {
                b.parse::<VisitId>().map_err(|_| {
                    Error::InvalidInput(format!(
                        "--before {b:?} is not a visit id (use the cursor a previous page printed)"
                    ))
                })
            })
            .transpose()?;
        Ok(HistoryQuery {
            search: self.search.clone(),
            category,
            from: when::parse_opt("--since", self.since.as_deref())?,
            to: when::parse_opt("--until", self.until.as_deref())?,
            before,
            limit: self.limit.min(MAX_PAGE),
            sort,
            offset: self.offset.unwrap_or(0),
            device: self.device.clone(),
        })
    }
}

/// Builds the search index of a database from before it, with a progress bar; returns at once
/// when it is complete.
pub(crate) fn ensure_search_index(store: &Store) -> Result<IndexStatus> {
    let status = store.search_index_status()?;
    // A read-only database cannot get its index: searches read the visits without it.
    if status.complete || store.read_only().is_some() {
        return Ok(status);
    }
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(status.total);
        if let Ok(style) =
            ProgressStyle::with_template("building the search index [{bar:30}] {pos}/{len} visits ({eta})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let result = search::backfill(store, &BackfillOptions::default(), &mut |s| {
        bar.set_length(s.total);
        bar.set_position(s.done);
    });
    bar.finish_and_clear();
    result
}

/// Refuses a `--device` no visit can have, naming the devices there are: "no visits match"
/// would read as "that device has no visits in that time".
fn check_device(store: &Store, device: Option<&str>) -> Result<()> {
    let Some(device) = device else {
        return Ok(());
    };
    let names = store.device_names()?;
    if names.iter().any(|n| n == device) {
        return Ok(());
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let there = if names.is_empty() {
        "this history has no device names: it is not synced with other devices (see `sitetrail sync status`)"
            .to_owned()
    } else {
        format!("the devices are {}", quoted.join(", "))
    };
    Err(Error::InvalidInput(format!(
        "--device {:?}: no device has that name; {there}",
        sitetrail::error::truncate_chars(device, 80)
    )))
}

/// Runs `sitetrail history`.
pub(crate) fn run_history(store: &Store, args: HistoryArgs) -> Result<()> {
    let mut q = args.query()?;
    check_device(store, args.device.as_deref())?;
    ensure_search_index(store)?;
    let mut rows: Vec<HistoryRow> = Vec::with_capacity(args.limit.min(MAX_PAGE));
    let mut next: (Option<VisitId>, Option<usize>);
    loop {
        q.limit = (args.limit - rows.len()).min(MAX_PAGE);
        let page = store.history(&q)?;
        rows.extend(page.rows);
        next = (page.next_cursor, page.next_offset);
        if rows.len() >= args.limit {
            break;
        }
        match next {
            (Some(c), _) => q.before = Some(c),
            (_, Some(o)) => q.offset = o,
            (None, None) => break,
        }
    }
    if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "id": r.visit_id, "url": r.url, "title": r.title, "domain": r.domain,
                    "category": r.category, "category_source": r.category_source,
                    "visited_at": r.visited_at, "source": r.source, "device": r.device,
                })
            })
            .collect();
        out::json(&list)?;
    } else if rows.is_empty() {
        out::line("no visits match")?;
    } else {
        let spent = time_spent(store, &rows)?;
        out::table(&table(&rows, &spent, args.ids))?;
        if spent
            .values()
            .any(|t| t.active_ms.is_none() && t.estimated_ms.is_some())
        {
            out::note(&format!(
                "{} marks an estimate: how long the page stayed open, from the browser's own history",
                human::ESTIMATE_MARK
            ));
        }
    }
    // The cursor of the next page goes to stderr, so stdout stays the rows alone.
    match next {
        (Some(cursor), _) => out::note(&format!("more visits: add --before {cursor} for the next page")),
        (_, Some(offset)) => out::note(&format!("more matches: add --offset {offset} for the next page")),
        (None, None) => {}
    }
    Ok(())
}

/// The known time spent on each of `rows`' visits.
fn time_spent(store: &Store, rows: &[HistoryRow]) -> Result<HashMap<VisitId, VisitTime>> {
    let ids: Vec<VisitId> = rows.iter().map(|r| r.visit_id).collect();
    let mut spent = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(MAX_VISIT_TIMES) {
        spent.extend(store.visit_times(chunk)?.into_iter().map(|t| (t.visit_id, t)));
    }
    Ok(spent)
}

/// The rows as a table: time, domain, title, category, time spent (and the id first, with
/// `--ids`). A visit without a title shows its URL; an estimated time is marked `≈`.
fn table(rows: &[HistoryRow], spent: &HashMap<VisitId, VisitTime>, ids: bool) -> Table {
    let mut t = Table::new();
    if ids {
        t = t.column("ID", Align::Left);
    }
    let mut t = t
        .column("TIME", Align::Left)
        .column("DOMAIN", Align::Left)
        .flex("TITLE")
        .column("CATEGORY", Align::Left)
        .column("SPENT", Align::Right);
    for r in rows {
        let mut cells: Vec<Cell> = Vec::with_capacity(6);
        if ids {
            cells.push(Cell::styled(r.visit_id.to_string(), Style::Dim));
        }
        cells.push(human::local_time(r.visited_at).into());
        cells.push(unicode_form(&r.domain).into_owned().into());
        cells.push(match r.title.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(title) => title.into(),
            None => Cell::styled(r.url.clone(), Style::Dim),
        });
        cells.push(match r.category {
            Some(c) => c.name().into(),
            None => Cell::styled(human::category_name(None), Style::Dim),
        });
        cells.push(match spent.get(&r.visit_id) {
            Some(VisitTime {
                active_ms: Some(ms), ..
            }) => human::duration(*ms).into(),
            Some(VisitTime {
                estimated_ms: Some(ms),
                ..
            }) => Cell::styled(human::estimate(*ms), Style::Dim),
            _ => Cell::styled("-", Style::Dim),
        });
        t.row(cells);
    }
    t
}
