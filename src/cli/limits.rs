//! The `limits` command: limits (at most) and goals (at least) of measured active time per day or
//! week, on a category or a website, synced to the user's other devices (`sitetrail::limits`).

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use sitetrail::domain::Domain;
use sitetrail::limits::progress::{Progress, State};
use sitetrail::limits::{parse_minutes, Kind, Period, Target};
use sitetrail::{Error, Result, Store};

use super::human;
use super::out::{self, Align, Cell, Style, Table};

/// What the text output says about what is counted.
pub(crate) const COUNTED: &str =
    "counted: active time measured by the browser extension on every synced device; \
                                  estimated time of imported history is not counted";

#[derive(Args, Debug)]
pub(crate) struct LimitsArgs {
    #[command(subcommand)]
    action: Option<LimitsAction>,
    /// Print JSON: a list of limits and goals with target_type, target, target_name, kind,
    /// period, minutes, limit_ms, active_ms, state, period_first_day, period_last_day,
    /// created_at, updated_at.
    #[arg(long)]
    json: bool,
}

/// A period as the flag takes it.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Per {
    /// A calendar day (local time).
    Day,
    /// An ISO week, Monday to Sunday (local time).
    Week,
}

impl Per {
    fn period(self) -> Period {
        match self {
            Per::Day => Period::Day,
            Per::Week => Period::Week,
        }
    }
}

#[derive(Subcommand, Debug)]
enum LimitsAction {
    /// Sets a limit (--max) or a goal (--min) on TARGET per day or week; setting it again changes
    /// it. Counted from measured active time on all your devices.
    Add {
        /// A category id or name (`social`, "video & streaming") or a domain (`youtube.com`,
        /// which covers its subdomains).
        target: String,
        /// A limit: at most this much (30m, 2h, 1h30m, 90 min, 1:30).
        #[arg(
            long,
            value_name = "DURATION",
            conflicts_with = "min",
            required_unless_present = "min"
        )]
        max: Option<String>,
        /// A goal: at least this much.
        #[arg(long, value_name = "DURATION")]
        min: Option<String>,
        /// The period it is counted over.
        #[arg(long, value_enum, default_value = "day")]
        per: Per,
        /// Print the limit as JSON (the keys of `limits --json`).
        #[arg(long)]
        json: bool,
    },
    /// Turns desktop reminders on or off (off until you turn them on), or says how they are set:
    /// a notification when a limit is reached (and once at --warn), and when a goal is met, on
    /// the device where the time is spent, at most two a limit a period, none in quiet hours.
    Reminders {
        /// `on` or `off`; without it, prints how they are set.
        #[arg(value_parser = ["on", "off"])]
        state: Option<String>,
        /// Also warn once a limit's time reaches this percentage of it (1 to 99; 0: no warning).
        #[arg(long, value_name = "PERCENT")]
        warn: Option<u8>,
        /// No reminder in these hours, local time: 22:00-07:00 (`none`: always).
        #[arg(long, value_name = "HH:MM-HH:MM")]
        quiet: Option<String>,
        /// Show the reminders due now and exit (what the daemon and the app do every minute).
        #[arg(long)]
        check: bool,
        /// Print JSON: {"enabled", "warn_percent", "quiet"} (with --check: {"shown": [...]}).
        #[arg(long)]
        json: bool,
    },
    /// Removes the limits and goals on TARGET (of one period with --per).
    Remove {
        /// The category or domain, as for `add`.
        target: String,
        /// Only the one of this period.
        #[arg(long, value_enum)]
        per: Option<Per>,
        /// Print what was removed as JSON: {"removed": [...]}.
        #[arg(long)]
        json: bool,
    },
}

/// TARGET as a person types it: a domain if it has a dot (or is a URL), else a category by id or
/// name, with the nearest categories when it is neither.
pub(crate) fn parse_target(input: &str) -> Result<Target> {
    let typed = input.trim();
    if typed.contains('.') || typed.contains("://") {
        let host = typed.strip_prefix("*.").unwrap_or(typed);
        return Ok(Target::Domain(Domain::parse(host)?.as_str().to_owned()));
    }
    human::parse_category(typed).map(Target::Category).map_err(|e| {
        let why = match e {
            Error::UnknownCategory(typed) => {
                format!("{typed:?} is not a category (`sitetrail categories` lists them)")
            }
            other => other.to_string(),
        };
        Error::InvalidInput(format!(
            "{why}; a target is a category or a domain with a dot (youtube.com)"
        ))
    })
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Max => "at most",
        Kind::Min => "at least",
    }
}

fn per_word(period: Period) -> &'static str {
    match period {
        Period::Day => "a day",
        Period::Week => "a week",
    }
}

pub(crate) fn state_cell(state: State) -> Cell {
    match state {
        State::Kept => Cell::from("kept"),
        State::Met => Cell::styled("met", Style::Bold),
        State::Over => Cell::styled("over", Style::Bold),
        State::NotYet => Cell::from("not yet"),
    }
}

fn progress_of(store: &Store, target: &Target, period: Period, kind: Kind) -> Result<Option<Progress>> {
    Ok(store
        .limit_progress()?
        .into_iter()
        .find(|p| p.limit.target() == *target && p.limit.period == period && p.limit.kind == kind))
}

/// Runs `sitetrail limits`.
pub(crate) fn run_limits(store: &Store, args: LimitsArgs) -> Result<()> {
    match args.action {
        Some(LimitsAction::Add {
            target,
            max,
            min,
            per,
            json,
        }) => {
            // Everything is checked before anything is stored.
            let target = parse_target(&target)?;
            let (kind, typed) = match (max, min) {
                (Some(m), None) => (Kind::Max, m),
                (None, Some(m)) => (Kind::Min, m),
                _ => return Err(Error::InvalidInput("give --max or --min".into())),
            };
            let minutes = parse_minutes(&typed)?;
            let period = per.period();
            let new = store.set_limit(&target, period, kind, minutes)?;
            let Some(p) = progress_of(store, &target, period, kind)? else {
                return Err(Error::NotFound {
                    what: "limit",
                    key: target.key().to_owned(),
                });
            };
            if json {
                return out::json(&p);
            }
            let what = if kind == Kind::Max { "limit" } else { "goal" };
            out::line(&format!(
                "{} {what}: {} {} of {} {} (on all your devices once they sync)",
                if new { "new" } else { "changed" },
                kind_word(kind),
                human::duration(p.limit_ms),
                p.target_name,
                per_word(period)
            ))?;
            out::line(&format!(
                "so far: {} ({}); {COUNTED}",
                human::duration(p.active_ms),
                p.state.as_str().replace('_', " ")
            ))
        }
        Some(LimitsAction::Reminders {
            state,
            warn,
            quiet,
            check,
            json,
        }) => run_reminders(store, state, warn, quiet, check, json),
        Some(LimitsAction::Remove { target, per, json }) => {
            let target = parse_target(&target)?;
            let removed = store.remove_limits(&target, per.map(Per::period))?;
            if removed.is_empty() {
                return Err(Error::NotFound {
                    what: "limit or goal on",
                    key: target.name(),
                });
            }
            if json {
                return out::json(&json!({ "removed": removed }));
            }
            for l in &removed {
                out::line(&format!(
                    "removed: {} {} of {} {}",
                    kind_word(l.kind),
                    human::duration(i64::from(l.minutes) * 60_000),
                    target.name(),
                    per_word(l.period)
                ))?;
            }
            Ok(())
        }
        None => {
            let list = store.limit_progress()?;
            if args.json {
                return out::json(&list);
            }
            if list.is_empty() {
                return out::line(
                    "no limits or goals: `sitetrail limits add social --max 30m --per day` sets one",
                );
            }
            let mut t = Table::new()
                .flex("TARGET")
                .column("LIMIT/GOAL", Align::Left)
                .column("PER", Align::Left)
                .column("ACTIVE", Align::Right)
                .column("STATE", Align::Left);
            for p in &list {
                t.row(vec![
                    out::escape(&p.target_name).into_owned().into(),
                    format!("{} {}", kind_word(p.limit.kind), human::duration(p.limit_ms)).into(),
                    p.limit.period.as_str().into(),
                    human::duration(p.active_ms).into(),
                    state_cell(p.state),
                ]);
            }
            out::table(&t)?;
            out::note(COUNTED);
            Ok(())
        }
    }
}

fn run_reminders(
    store: &Store,
    state: Option<String>,
    warn: Option<u8>,
    quiet: Option<String>,
    check: bool,
    json: bool,
) -> Result<()> {
    use sitetrail::reminders::{parse_quiet, Desktop};
    // Everything is checked before anything is stored.
    let mut s = store.reminder_settings()?;
    if let Some(state) = &state {
        s.enabled = state == "on";
    }
    if let Some(w) = warn {
        if w > 99 {
            return Err(Error::InvalidInput(
                "--warn takes 1 to 99 (percent of the limit), or 0 for no warning".into(),
            ));
        }
        s.warn_percent = (w > 0).then_some(w);
    }
    if let Some(q) = &quiet {
        s.quiet = if q.trim() == "none" {
            None
        } else {
            Some(parse_quiet(q)?)
        };
    }
    if state.is_some() || warn.is_some() || quiet.is_some() {
        store.set_reminder_settings(&s)?;
    }
    if check {
        let shown = store.send_due_reminders(&Desktop)?;
        if json {
            return out::json(&json!({ "shown": shown }));
        }
        for d in &shown {
            out::line(&format!("shown: {}: {}", d.title, d.body))?;
        }
        return Ok(());
    }
    let quiet = s
        .quiet
        .map(|(a, b)| format!("{}-{}", a.format("%H:%M"), b.format("%H:%M")));
    if json {
        return out::json(&json!({ "enabled": s.enabled, "warn_percent": s.warn_percent, "quiet": quiet }));
    }
    out::line(&format!(
        "Reminders are {}{}{}.",
        if s.enabled {
            "on"
        } else {
            "off (`sitetrail limits reminders on` turns them on)"
        },
        s.warn_percent
            .map(|w| format!(", with a warning at {w} % of a limit"))
            .unwrap_or_default(),
        quiet.map(|q| format!(", quiet {q}")).unwrap_or_default()
    ))
}
