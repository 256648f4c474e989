//! The `forget` and `blocked` commands. The forgetting is done by `sitetrail::forget` and
//! `sitetrail::blocked`; this module turns arguments into calls and reports into text or JSON.
//!
//! Every `forget` first finishes a forgetting an earlier command left unfinished (interrupted
//! between its batches), and builds the search index if the database predates it (the index is
//! what finds a website's visits without scanning all of them).

use std::io::IsTerminal;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use sitetrail::forget::{ForgetOptions, ForgetProgress, ForgetReport};
use sitetrail::ids::VisitId;
use sitetrail::{Error, Result, Store, Timestamp};

use super::history::ensure_search_index;
use super::print_json;

#[derive(Args, Debug)]
pub(crate) struct ForgetArgs {
    #[command(subcommand)]
    what: ForgetWhat,
    /// Print what was forgotten as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum ForgetWhat {
    /// Forgets visits by id (as `sitetrail history` prints them).
    Visit {
        /// Visit ids.
        #[arg(required = true, value_name = "VISIT_ID")]
        ids: Vec<String>,
    },
    /// Forgets a website: every visit to it, its classification job and the website itself.
    Website {
        /// The website's domain.
        domain: String,
        /// Also never record the domain and its subdomains again (see `sitetrail blocked`).
        #[arg(long)]
        block: bool,
    },
    /// Forgets every visit made in a time range; no visit in it is recorded again.
    Range {
        /// The range's start (RFC 3339).
        #[arg(long, value_name = "RFC3339")]
        since: String,
        /// The range's end, inclusive (RFC 3339).
        #[arg(long, value_name = "RFC3339")]
        until: String,
    },
}

#[derive(Args, Debug)]
pub(crate) struct BlockedArgs {
    #[command(subcommand)]
    action: Option<BlockedAction>,
    /// Print the list as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum BlockedAction {
    /// Never records visits to DOMAIN and its subdomains (existing history is kept: `sitetrail
    /// forget website DOMAIN` deletes it); its websites are not classified.
    Add {
        /// The domain.
        domain: String,
    },
    /// Records DOMAIN again.
    Remove {
        /// The domain.
        domain: String,
    },
}

fn parse_time(flag: &str, s: &str) -> Result<Timestamp> {
    Timestamp::parse_rfc3339(s.trim()).ok_or_else(|| {
        Error::InvalidInput(format!(
            "{flag} {s:?} is not an RFC 3339 date-time (e.g. 2026-11-29T10:00:00Z)"
        ))
    })
}

fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} forgetting: {msg}") {
        bar.set_style(style);
    }
    bar
}

fn show(bar: &ProgressBar, p: ForgetProgress) {
    bar.set_message(format!("{} visit(s), {} website(s)", p.visits, p.websites));
}

/// Runs `sitetrail forget`.
pub(crate) fn run_forget(store: &Store, args: ForgetArgs) -> Result<()> {
    let bar = progress_bar();
    let opts = ForgetOptions::default();
    ensure_search_index(store)?;
    store.resume_forgetting(&opts, &mut |p| show(&bar, p))?;
    let report = match args.what {
        ForgetWhat::Visit { ids } => {
            let ids = ids
                .iter()
                .map(|s| {
                    s.parse::<VisitId>().map_err(|_| {
                        Error::InvalidInput(format!("{s:?} is not a visit id (see `sitetrail history`)"))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            store.forget_visits(&ids)?
        }
        ForgetWhat::Website { domain, block } => {
            store.forget_website(&domain, block, &opts, &mut |p| show(&bar, p))?
        }
        ForgetWhat::Range { since, until } => {
            let (since, until) = (parse_time("--since", &since)?, parse_time("--until", &until)?);
            store.forget_range(since, until, &opts, &mut |p| show(&bar, p))?
        }
    };
    bar.finish_and_clear();
    if args.json {
        return print_json(&report);
    }
    print_report(&report);
    Ok(())
}

fn print_report(r: &ForgetReport) {
    println!("forgot {} visit(s) and {} website(s)", r.visits, r.websites);
    if r.not_found > 0 {
        println!(
            "  {} visit id(s) were not stored (already forgotten?)",
            r.not_found
        );
    }
    if let Some(d) = &r.blocked {
        println!("  {d} and its subdomains are blocked: never recorded again");
    }
    if r.reclaimed_bytes > 0 {
        println!(
            "  the database file shrank by {:.1} MiB",
            r.reclaimed_bytes as f64 / (1024.0 * 1024.0)
        );
    }
}

/// Runs `sitetrail blocked`.
pub(crate) fn run_blocked(store: &Store, args: BlockedArgs) -> Result<()> {
    match args.action {
        Some(BlockedAction::Add { domain }) => {
            let added = store.block_domain(&domain)?;
            let d = sitetrail::domain::Domain::parse(&domain)?;
            if added {
                println!("{d} and its subdomains are blocked: never recorded, never classified");
            } else {
                println!("{d} was already blocked");
            }
        }
        Some(BlockedAction::Remove { domain }) => {
            let d = sitetrail::domain::Domain::parse(&domain)?;
            if store.unblock_domain(&domain)? {
                println!("{d} is recorded again");
            } else {
                return Err(Error::NotFound {
                    what: "blocked domain",
                    key: d.to_string(),
                });
            }
        }
        None => {
            let list = store.blocked_domains()?;
            if args.json {
                let list: Vec<_> = list
                    .iter()
                    .map(|b| json!({"domain": b.domain, "blocked_at": b.blocked_at}))
                    .collect();
                return print_json(&list);
            }
            if list.is_empty() {
                println!("no blocked domains");
            }
            for b in list {
                println!("{}  (since {})", b.domain, b.blocked_at.to_rfc3339());
            }
        }
    }
    Ok(())
}
