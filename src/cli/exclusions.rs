//! The `exclusions` command: the hosts never sent to a remote provider. The list it edits is kept
//! in the database and synced to the user's other devices (`sitetrail::exclusions`); the settings'
//! exclusions (the file, `SITETRAIL_EXCLUSIONS`) add to it on this machine and are listed beside it.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;
use sitetrail::settings::Overrides;
use sitetrail::{Error, Result, Store};

use super::out::{self, Align, Table};
use super::{human, resolve_settings};

#[derive(Args, Debug)]
pub(crate) struct ExclusionsArgs {
    #[command(subcommand)]
    action: Option<ExclusionsAction>,
    /// Print the list as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum ExclusionsAction {
    /// Never sends PATTERN to a remote provider, on any of your devices: a domain
    /// (`bank.example`) or `*.` and a domain (`*.corp.example`: it and everything under it).
    /// Its websites get the built-in category.
    Add {
        /// The pattern.
        pattern: String,
    },
    /// Takes PATTERN off the list (websites already answered by the built-in rules keep their
    /// category: `sitetrail reclassify DOMAIN` asks the provider).
    Remove {
        /// The pattern.
        pattern: String,
    },
}

/// Runs `sitetrail exclusions`.
pub(crate) fn run_exclusions(store: &Store, settings: Option<PathBuf>, args: ExclusionsArgs) -> Result<()> {
    match args.action {
        Some(ExclusionsAction::Add { pattern }) => {
            let (p, added) = store.exclude_host(&pattern)?;
            let p = sitetrail::exclusions::display(&p);
            if added {
                out::line(&format!(
                    "{p} is never sent to a remote provider (on all your devices once they sync)"
                ))
            } else {
                out::line(&format!("{p} was already excluded"))
            }
        }
        Some(ExclusionsAction::Remove { pattern }) => {
            let (p, removed) = store.include_host(&pattern)?;
            if removed {
                out::line(&format!(
                    "{} may be sent to the remote provider again",
                    sitetrail::exclusions::display(&p)
                ))
            } else {
                Err(Error::NotFound {
                    what: "exclusion",
                    key: p,
                })
            }
        }
        None => {
            let shared = store.excluded_hosts()?;
            // The settings' own (file and environment), for this machine; settings that cannot
            // be read are `status`'s and `worker`'s to report, not this list's.
            let local: Vec<String> = resolve_settings(settings, &Overrides::new())
                .map(|r| r.settings.exclusions)
                .unwrap_or_default()
                .into_iter()
                .filter(|p| !sitetrail::exclusions::is_listed(&shared, p))
                .collect();
            if args.json {
                let mut list: Vec<_> = shared
                    .iter()
                    .map(|e| json!({"pattern": e.pattern, "excluded_at": e.excluded_at, "source": "shared"}))
                    .collect();
                list.extend(
                    local
                        .iter()
                        .map(|p| json!({"pattern": p, "excluded_at": null, "source": "settings"})),
                );
                return out::json(&list);
            }
            if shared.is_empty() && local.is_empty() {
                return out::line("no exclusions: only private hosts are kept from remote providers");
            }
            let mut t = Table::new()
                .flex("PATTERN")
                .column("SINCE", Align::Left)
                .column("WHERE", Align::Left);
            for e in &shared {
                t.row(vec![
                    sitetrail::exclusions::display(&e.pattern).into(),
                    human::local_time(e.excluded_at).into(),
                    "all devices".into(),
                ]);
            }
            for p in &local {
                t.row(vec![
                    p.clone().into(),
                    "".into(),
                    "this machine (settings)".into(),
                ]);
            }
            out::table(&t)
        }
    }
}
