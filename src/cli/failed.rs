//! `sitetrail failed` (the FAILED jobs) and `sitetrail retry` (queue them again).

use clap::Args;

use sitetrail::ids::OutboxId;
use sitetrail::{CategorySource, Error, Result, Store, Timestamp};

use super::print_json;

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
        return print_json(&jobs);
    }
    if jobs.is_empty() {
        println!("no failed jobs");
    }
    for j in jobs {
        let at = j.attempted_at.map(Timestamp::to_rfc3339).unwrap_or_default();
        let err = j.last_error_message.unwrap_or_default();
        let keeps = match (j.category, j.category_source) {
            (Some(c), Some(CategorySource::Builtin)) => {
                format!("  (keeps its provisional category {c})")
            }
            (Some(c), Some(src)) => format!("  (category {c}, {})", src.as_str()),
            _ => String::new(),
        };
        println!(
            "{}  {}  attempts {}  {}  {}{keeps}",
            j.id, j.domain, j.attempt_count, at, err
        );
    }
    Ok(())
}

pub(crate) fn run_retry(store: &Store, args: RetryArgs) -> Result<()> {
    if args.all_failed {
        let n = store.retry_all_failed()?;
        println!("{n} failed job(s) queued again");
        return Ok(());
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
    println!("{} job(s) queued again", ids.len());
    Ok(())
}
