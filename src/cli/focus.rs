//! The `focus` command: a focus session that holds back pages of chosen categories and websites in
//! the browser, with no "Continue", on every synced device, until it ends (`sitetrail::focus`).

use clap::{Args, Subcommand};
use serde_json::json;

use sitetrail::focus::Focus;
use sitetrail::limits::{parse_minutes, Target};
use sitetrail::{Category, Error, Result, Store, Timestamp};

use super::human;
use super::limits::parse_target;
use super::out;

#[derive(Args, Debug)]
pub(crate) struct FocusArgs {
    #[command(subcommand)]
    action: FocusAction,
}

#[derive(Subcommand, Debug)]
enum FocusAction {
    /// Starts a focus session of DURATION (50m, 1h30m) holding back pages of the --block
    /// categories and websites in the browser, on all your devices; it replaces one running.
    Start {
        /// How long: 50m, 1h, 1h30m, 90 min (at most 12 h).
        duration: String,
        /// What to hold back, comma-separated: category ids or names, the first word of an id
        /// (`video` for video_streaming), or domains (`youtube.com`, with its subdomains).
        #[arg(long, value_name = "TARGETS", required = true, value_delimiter = ',')]
        block: Vec<String>,
        /// Print the session as JSON (the keys of `focus status --json`).
        #[arg(long)]
        json: bool,
    },
    /// Stops the focus session running (on all your devices); exit code 3 if none is.
    Stop {
        /// Print the session stopped as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Says whether a focus session is running, until when and what it holds back.
    Status {
        /// Print JSON: {"active": false} or {"active": true, "started_at", "ends_at",
        /// "remaining_ms", "blocks": [{"target_type", "target", "target_name"}]}.
        #[arg(long)]
        json: bool,
    },
}

/// A block as typed: a target as `limits` takes it, or a category by the first word of its id.
fn parse_block(typed: &str) -> Result<Target> {
    let word = typed.trim().to_lowercase();
    if !word.contains('.') {
        let first_word: Vec<Category> = Category::ALL
            .iter()
            .copied()
            .filter(|c| c.id().split('_').next() == Some(word.as_str()))
            .collect();
        if let [c] = first_word[..] {
            return Ok(Target::Category(c));
        }
    }
    parse_target(typed)
}

fn session_json(f: &Focus, now: Timestamp) -> serde_json::Value {
    json!({
        "active": f.active(now),
        "started_at": f.started_at.to_rfc3339(),
        "ends_at": f.ends_at.to_rfc3339(),
        "stopped_at": f.stopped_at.map(Timestamp::to_rfc3339),
        "remaining_ms": if f.active(now) { f.ends_at.millis_since(now) } else { 0 },
        "blocks": f.blocks.iter().map(|t| json!({
            "target_type": t.type_str(), "target": t.key(), "target_name": t.name(),
        })).collect::<Vec<_>>(),
    })
}

fn names(f: &Focus) -> String {
    f.blocks.iter().map(Target::name).collect::<Vec<_>>().join(", ")
}

pub(crate) fn run_focus(store: &Store, args: FocusArgs) -> Result<()> {
    match args.action {
        FocusAction::Start {
            duration,
            block,
            json,
        } => {
            // Everything is checked before anything is stored.
            let minutes = parse_minutes(&duration)?;
            let blocks = block
                .iter()
                .filter(|b| !b.trim().is_empty())
                .map(|b| parse_block(b))
                .collect::<Result<Vec<_>>>()?;
            let f = store.start_focus(minutes, blocks)?;
            if json {
                return out::json(&session_json(&f, store.now()));
            }
            out::line(&format!(
                "Focusing for {}, until {}: {} held back in the browser (on all your devices once they sync).",
                human::duration(f.ends_at.millis_since(f.started_at)),
                human::local_time(f.ends_at),
                names(&f)
            ))
        }
        FocusAction::Stop { json } => {
            let Some(f) = store.stop_focus()? else {
                return Err(Error::NotFound {
                    what: "running",
                    key: "focus session".into(),
                });
            };
            let now = store.now();
            if json {
                return out::json(&json!({ "stopped": session_json(&f, now) }));
            }
            out::line(&format!(
                "Focus stopped with {} left: {} open again.",
                human::duration(f.ends_at.millis_since(now).max(0)),
                names(&f)
            ))
        }
        FocusAction::Status { json } => {
            let now = store.now();
            match (store.focus()?, json) {
                (None, true) => out::json(&json!({ "active": false })),
                (None, false) => out::line("No focus session is running."),
                (Some(f), true) => out::json(&session_json(&f, now)),
                (Some(f), false) => out::line(&format!(
                    "Focusing until {} ({} left): {} held back in the browser.",
                    human::local_time(f.ends_at),
                    human::duration(f.ends_at.millis_since(now)),
                    names(&f)
                )),
            }
        }
    }
}
