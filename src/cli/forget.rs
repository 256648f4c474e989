//! The `forget` and `blocked` commands. The forgetting is done by `sitetrail::forget` and
//! `sitetrail::blocked`; this module turns arguments into calls and reports into text or JSON.
//!
//! Its words say where the forgetting reaches: this computer, or, when the database is linked to
//! a sync account, every device of it (the others forget at their next sync).
//!
//! Every `forget` first finishes a forgetting an earlier command left unfinished (interrupted
//! between its batches), and builds the search index if the database predates it (the index is
//! what finds a website's visits without scanning all of them).

use std::io::IsTerminal;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use sitetrail::domain::{unicode_form, Domain};
use sitetrail::forget::{ForgetOptions, ForgetProgress, ForgetReport};
use sitetrail::ids::VisitId;
use sitetrail::{Error, Result, Store, Timestamp};

use super::history::ensure_search_index;
use super::out::{self, Align, Table};
use super::{human, when};

#[derive(Args, Debug)]
pub(crate) struct ForgetArgs {
    #[command(subcommand)]
    what: ForgetWhat,
    /// Print what was forgotten as JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Do not ask before forgetting a website or a time range (asked only when standard input
    /// is a terminal; scripts are never asked).
    #[arg(long, short = 'y', global = true)]
    yes: bool,
}

#[derive(Subcommand, Debug)]
enum ForgetWhat {
    /// Forgets visits by id (`sitetrail history --ids` prints them, as does `--json`).
    Visit {
        /// Visit ids (the ID column of `sitetrail history --ids`).
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
        /// The range's start: RFC 3339, a date (local midnight), today, yesterday, 7d, 30d (the
        /// last N days), week or month.
        #[arg(long, value_name = "WHEN")]
        since: String,
        /// The range's end, inclusive (as for --since).
        #[arg(long, value_name = "WHEN")]
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
    if p.waiting_for_readers {
        bar.suspend(|| {
            out::note(&format!(
                "another process (the app, the browser's host, another command) is reading the database: \
                 waiting up to {} s to scrub what was forgotten from its write-ahead log",
                sitetrail::forget::SCRUB_WAIT.as_secs()
            ));
        });
        return;
    }
    bar.set_message(format!("{} visit(s), {} website(s)", p.visits, p.websites));
}

/// Where a forgetting reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// This database only: sync is not set up.
    ThisComputer,
    /// Every device of the sync account this database is linked to.
    AllDevices,
}

impl Reach {
    fn of(store: &Store) -> Result<Reach> {
        let linked = store.with_conn(sitetrail::sync::engine::get_link)?.is_some();
        Ok(if linked {
            Reach::AllDevices
        } else {
            Reach::ThisComputer
        })
    }

    /// Where, in a question: "on this computer", "on all your devices".
    fn words(self) -> &'static str {
        match self {
            Reach::ThisComputer => "on this computer",
            Reach::AllDevices => "on all your devices (sync is on)",
        }
    }
}

/// What to forget, with its arguments checked.
enum Forgetting {
    Visits(Vec<VisitId>),
    Website { domain: String, block: bool },
    Range { since: Timestamp, until: Timestamp },
}

impl Forgetting {
    fn from_args(what: ForgetWhat) -> Result<Forgetting> {
        Ok(match what {
            ForgetWhat::Visit { ids } => Forgetting::Visits(
                ids.iter()
                    .map(|s| {
                        s.parse::<VisitId>().map_err(|_| {
                            Error::InvalidInput(format!(
                                "{s:?} is not a visit id (see `sitetrail history --ids`)"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
            ForgetWhat::Website { domain, block } => {
                // Checked now, so a typo is refused before the question is asked.
                Domain::parse(&domain)?;
                Forgetting::Website { domain, block }
            }
            ForgetWhat::Range { since, until } => Forgetting::Range {
                since: when::parse("--since", &since)?,
                until: when::parse("--until", &until)?,
            },
        })
    }

    /// The question a person at a terminal is asked first, if this forgetting needs one: a
    /// website or a range can be a lot of history, and there is no undo.
    fn question(&self, reach: Reach) -> Option<String> {
        let place = reach.words();
        match self {
            Forgetting::Visits(_) => None,
            Forgetting::Website { domain, block } => {
                let d = Domain::parse(domain)
                    .map_or_else(|_| domain.clone(), |d| unicode_form(d.as_str()).into_owned());
                let and_block = if *block {
                    ", and never record it or its subdomains again"
                } else {
                    ""
                };
                Some(format!(
                    "Forget {d} {place}: every visit to it, its category and the website itself{and_block}? This cannot be undone."
                ))
            }
            Forgetting::Range { since, until } => Some(format!(
                "Forget every visit from {} to {} (local time) {place}? Nothing in that time will be recorded again. This cannot be undone.",
                human::local_time_in_full(*since),
                human::local_time_in_full(*until)
            )),
        }
    }
}

/// Runs `sitetrail forget`.
pub(crate) fn run_forget(store: &Store, args: ForgetArgs) -> Result<()> {
    let what = Forgetting::from_args(args.what)?;
    let reach = Reach::of(store)?;
    // Asked only of a person: without a terminal (a script, a pipe) forgetting proceeds as
    // it always did.
    if let Some(question) = what
        .question(reach)
        .filter(|_| !args.yes && out::stdin_is_terminal())
    {
        // A website that is not there is said so before asking about it (one to block needs
        // no visits).
        if let Forgetting::Website { domain, block: false } = &what {
            store.website(domain)?;
        }
        if !out::confirm(&question)? {
            return Err(Error::Conflict("not confirmed: nothing was forgotten".into()));
        }
    }
    let bar = progress_bar();
    let opts = ForgetOptions::default();
    ensure_search_index(store)?;
    store.resume_forgetting(&opts, &mut |p| show(&bar, p))?;
    let range = matches!(what, Forgetting::Range { .. });
    let report = match what {
        Forgetting::Visits(ids) => store.forget_visits(&ids)?,
        Forgetting::Website { domain, block } => {
            store.forget_website(&domain, block, &opts, &mut |p| show(&bar, p))?
        }
        Forgetting::Range { since, until } => {
            store.forget_range(since, until, &opts, &mut |p| show(&bar, p))?
        }
    };
    bar.finish_and_clear();
    if args.json {
        return out::json(&report);
    }
    print_report(&report, reach, range)
}

/// Says what was forgotten, where (this computer, or every device of the sync account), and only
/// what is true: nothing forgotten is said as such, and space given back then comes from earlier
/// changes, not from this forgetting.
fn print_report(r: &ForgetReport, reach: Reach, range: bool) -> Result<()> {
    let place = match reach {
        Reach::ThisComputer => "on this computer",
        Reach::AllDevices => "on all your devices (here now, on the others when they next sync)",
    };
    let nothing = r.visits == 0 && r.websites == 0;
    if !nothing {
        out::line(&format!(
            "forgot {} visit(s) and {} website(s) {place}",
            r.visits, r.websites
        ))?;
    } else if range {
        out::line(
            "no visits were stored in that time, so none were forgotten; the time is remembered as \
             forgotten: nothing in it will be recorded",
        )?;
    } else {
        out::line("nothing was forgotten")?;
    }
    if r.not_found > 0 {
        out::line(&format!(
            "  {} visit id(s) were not stored (already forgotten?)",
            r.not_found
        ))?;
    }
    if let Some(d) = &r.blocked {
        out::line(&format!(
            "  {} and its subdomains are blocked: never recorded again",
            unicode_form(d)
        ))?;
    }
    if r.scrub_pending {
        out::line(
            "  not complete yet: another process was reading the database, so copies of what was forgotten \
             may remain in its write-ahead log (the -wal file); the next Sitetrail command, or the app, \
             removes them when it opens the database once that process has stopped reading",
        )?;
    }
    if r.reclaimed_bytes > 0 {
        let why = if nothing {
            " (free space left by earlier changes, given back now)"
        } else {
            ""
        };
        out::line(&format!(
            "  the database file shrank by {:.1} MiB{why}",
            r.reclaimed_bytes as f64 / (1024.0 * 1024.0)
        ))?;
    }
    Ok(())
}

/// Runs `sitetrail blocked`.
pub(crate) fn run_blocked(store: &Store, args: BlockedArgs) -> Result<()> {
    match args.action {
        Some(BlockedAction::Add { domain }) => {
            let added = store.block_domain(&domain)?;
            let d = sitetrail::blocked::parse_pattern(&domain)?;
            let d = unicode_form(d.as_str());
            if added {
                out::line(&format!(
                    "{d} and its subdomains are blocked: never recorded, never classified"
                ))
            } else {
                out::line(&format!("{d} was already blocked"))
            }
        }
        Some(BlockedAction::Remove { domain }) => {
            let d = sitetrail::blocked::parse_pattern(&domain)?;
            if store.unblock_domain(&domain)? {
                out::line(&format!("{} is recorded again", unicode_form(d.as_str())))
            } else {
                Err(Error::NotFound {
                    what: "blocked domain",
                    key: d.to_string(),
                })
            }
        }
        None => {
            let list = store.blocked_domains()?;
            if args.json {
                let list: Vec<_> = list
                    .iter()
                    .map(|b| json!({"domain": b.domain, "blocked_at": b.blocked_at}))
                    .collect();
                return out::json(&list);
            }
            if list.is_empty() {
                return out::line("no blocked domains");
            }
            let mut t = Table::new().flex("DOMAIN").column("SINCE", Align::Left);
            for b in &list {
                t.row(vec![
                    unicode_form(&b.domain).into_owned().into(),
                    human::local_time(b.blocked_at).into(),
                ]);
            }
            out::table(&t)
        }
    }
}
