//! `sitetrail failed` (the FAILED jobs) and `sitetrail retry` (queue them again).

use clap::Args;

use sitetrail::domain::unicode_form;
use sitetrail::ids::OutboxId;
use sitetrail::{CategorySource, Error, Result, Store};

use super::human;
use super::out::{self, Align, Cell, Style, Table};

#[derive(Args, Debug)]
pub(crate) struct FailedArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct RetryArgs {
    /// Outbox job ids (as `failed` prints them).
    #[arg(
        value_name = "OUTBOX_ID",
        required_unless_present = "all_failed",
        conflicts_with = "all_failed"
    )]
    ids: Vec<String>,
    /// Retry every FAILED job.
    #[arg(long)]
    all_failed: bool,
}

pub(crate) fn run_failed(store: &Store, args: FailedArgs) -> Result<()> {
    let jobs = store.failed_jobs()?;
    if args.json {
        return out::json(&jobs);
    }
    if jobs.is_empty() {
        return out::line("no failed jobs");
    }
    let mut t = Table::new()
        .column("JOB", Align::Left)
        .column("WEBSITE", Align::Left)
        .column("ATTEMPTS", Align::Right)
        .column("LAST TRIED", Align::Left)
        .flex("ERROR")
        .column("CATEGORY", Align::Left);
    for j in &jobs {
        let keeps = match (j.category, j.category_source) {
            (Some(c), Some(CategorySource::Builtin)) => {
                Cell::styled(format!("keeps its provisional category {}", c.name()), Style::Dim)
            }
            (Some(c), Some(src)) => format!("{} ({})", c.name(), human::source_name(src)).into(),
            _ => Cell::styled("-", Style::Dim),
        };
        t.row(vec![
            Cell::styled(j.id.to_string(), Style::Dim),
            unicode_form(&j.domain).into_owned().into(),
            j.attempt_count.to_string().into(),
            j.attempted_at.map_or_else(
                || Cell::styled("-", Style::Dim),
                |at| human::local_time(at).into(),
            ),
            Cell::styled(j.last_error_message.clone().unwrap_or_default(), Style::Red),
            keeps,
        ]);
    }
    out::table(&t)?;
    out::note("retry one: `sitetrail retry JOB`; all: `sitetrail retry --all-failed`");
    Ok(())
}

pub(crate) fn run_retry(store: &Store, args: RetryArgs) -> Result<()> {
    if args.all_failed {
        let n = store.retry_all_failed()?;
        return out::line(&format!("{n} failed job(s) queued again"));
    }
    let ids = args
        .ids
        .iter()
        .map(|s| {
            s.parse::<OutboxId>().map_err(|_| {
                Error::InvalidInput(format!("{s:?} is not an outbox id (see `sitetrail failed`)"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    store.retry_jobs(&ids)?;
    out::line(&format!("{} job(s) queued again", ids.len()))
}
