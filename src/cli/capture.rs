//! The `native-host` and `browser-link` commands: the browser extension's native-messaging host
//! on stdio, and linking a browser to it. The work is in `sitetrail::capture`.
//!
//! `native-host` never prints anything but protocol frames on stdout (logs go to stderr, which
//! the browser keeps in its own log).

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use clap::builder::PossibleValue;
use clap::{Args, Subcommand, ValueEnum};

use sitetrail::capture::host::{self, Host, HostConfig};
use sitetrail::capture::link::{self, LinkBrowser, LinkScope, LinkStatus, LinkTarget};
use sitetrail::import::detect::Roots;
use sitetrail::store::StoreOptions;
use sitetrail::{Error, Result, Store};

use super::human;
use super::out::{self, Align, Cell, Style, Table};

/// Waits this long after each committed batch before acknowledging it. For tests that kill the
/// host between a commit and its ack: read only by debug builds (what `cargo test` runs), so a
/// released host cannot be slowed by it, and capped at [`MAX_ACK_DELAY`] there too.
const ACK_DELAY_ENV: &str = "SITETRAIL_NATIVE_HOST_ACK_DELAY_MS";

/// The longest [`ACK_DELAY_ENV`] a debug build waits.
const MAX_ACK_DELAY: Duration = Duration::from_secs(120);

/// The test hook's delay: zero in a release build, whatever the environment says.
fn ack_delay() -> Result<Duration> {
    if !cfg!(debug_assertions) {
        return Ok(Duration::ZERO);
    }
    match std::env::var(ACK_DELAY_ENV) {
        Ok(v) if !v.trim().is_empty() => {
            let ms: u64 = v.trim().parse().map_err(|_| {
                Error::InvalidInput(format!(
                    "{ACK_DELAY_ENV} must be a number of milliseconds, not {v:?}"
                ))
            })?;
            Ok(Duration::from_millis(ms).min(MAX_ACK_DELAY))
        }
        _ => Ok(Duration::ZERO),
    }
}

#[derive(Args, Debug)]
pub(crate) struct NativeHostArgs {
    /// The browser this host serves; its visits are stored under the source `extension:<NAME>`.
    #[arg(long, value_name = "NAME", default_value = "chromium")]
    browser: String,
    /// What the browser passes: the extension's origin (Chromium family), or the manifest's
    /// path and the extension's id (Firefox). Logged, not needed: the browser already checked
    /// the manifest's allowed origins.
    #[arg(value_name = "CALLER", trailing_var_arg = true, allow_hyphen_values = true)]
    caller: Vec<String>,
}

/// The browser named on the command line: one of [`LinkBrowser::ALL`], by its name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BrowserName(LinkBrowser);

static BROWSER_NAMES: LazyLock<[BrowserName; LinkBrowser::ALL.len()]> =
    LazyLock::new(|| LinkBrowser::ALL.map(BrowserName));

impl ValueEnum for BrowserName {
    fn value_variants<'a>() -> &'a [Self] {
        &*BROWSER_NAMES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
    }
}

impl From<BrowserName> for LinkBrowser {
    fn from(b: BrowserName) -> LinkBrowser {
        b.0
    }
}

#[derive(Args, Debug)]
pub(crate) struct BrowserLinkArgs {
    #[command(subcommand)]
    action: LinkAction,
}

#[derive(Subcommand, Debug)]
enum LinkAction {
    /// Writes the host manifest where the browser looks for it, pointing at this binary and at
    /// the database (--db); replaces an earlier link.
    Install {
        /// The browser to link.
        #[arg(long, value_enum)]
        browser: BrowserName,
        /// A Chromium user-data directory (the browser's --user-data-dir): the manifest goes to
        /// its NativeMessagingHosts/ folder instead of the per-user location.
        #[arg(long, value_name = "DIR")]
        user_data_dir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Removes the host manifest (and its launcher).
    Uninstall {
        /// The browser to unlink.
        #[arg(long, value_enum)]
        browser: BrowserName,
        /// As for install.
        #[arg(long, value_name = "DIR")]
        user_data_dir: Option<PathBuf>,
    },
    /// Says which link each browser reads (yours, the system-wide one of the sitetrail package,
    /// or none), to which database, and whether its extension has talked to Sitetrail there
    /// ("recording"). JSON keys per browser: browser, linked, scope (user, system or none),
    /// manifest, system_manifest, exe, db, problem, heard_at, extension_version, recording.
    Status {
        /// Only this browser.
        #[arg(long, value_enum)]
        browser: Option<BrowserName>,
        /// As for install (needs --browser).
        #[arg(long, value_name = "DIR", requires = "browser")]
        user_data_dir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn db_path(db: Option<PathBuf>) -> Result<PathBuf> {
    match db {
        Some(p) => Ok(p),
        None => sitetrail::store::default_db_path(),
    }
}

/// Runs `sitetrail native-host` on stdin/stdout until the browser closes the connection.
pub(crate) fn run_native_host(db: Option<PathBuf>, args: NativeHostArgs) -> Result<()> {
    if !host::valid_browser(&args.browser) {
        return Err(Error::InvalidInput(format!(
            "--browser {:?} is not a browser name (lower-case letters, digits, - or _)",
            args.browser
        )));
    }
    let ack_delay = ack_delay()?;
    let config = HostConfig {
        browser: args.browser,
        db: db_path(db)?,
        store_options: super::with_clock(StoreOptions::from_env()?),
        ack_delay,
    };
    tracing::info!(caller = ?args.caller, db = %config.db.display(), "native host starting");
    let mut host = Host::new(config);
    // The host's stdout is the browser's message channel: protocol frames only, never `out`.
    #[allow(clippy::disallowed_methods)]
    let stdout = std::io::stdout().lock();
    let ended = host::serve(&mut host, std::io::stdin().lock(), stdout)?;
    tracing::info!(?ended, "native host stopping");
    Ok(())
}

/// Prints the links as a table: which link each browser reads, whether its extension records
/// into the database, and where.
fn print_status(list: &[LinkStatus]) -> Result<()> {
    let mut t = Table::new()
        .column("BROWSER", Align::Left)
        .column("STATE", Align::Left)
        .column("EXTENSION", Align::Left)
        .column("DATABASE", Align::Left)
        .flex("MANIFEST");
    for s in list {
        let link = match (s.scope, &s.problem) {
            (LinkScope::None, _) => Cell::styled("not linked", Style::Dim),
            (LinkScope::User, None) => Cell::styled("linked (yours)", Style::Green),
            (LinkScope::System, None) => Cell::styled("linked (system-wide)", Style::Green),
            (LinkScope::User, Some(_)) => Cell::styled("linked (yours), with a problem", Style::Yellow),
            (LinkScope::System, Some(_)) => {
                Cell::styled("linked (system-wide), with a problem", Style::Yellow)
            }
        };
        let heard = s.heard_at.map(human::local_time);
        let extension = match (s.recording, heard) {
            (true, Some(h)) => Cell::styled(format!("recording (last heard {h})"), Style::Green),
            (false, Some(h)) => Cell::styled(format!("not recording here (last heard {h})"), Style::Yellow),
            (_, None) if s.linked => Cell::styled("not heard from yet", Style::Dim),
            (_, None) => Cell::styled("-", Style::Dim),
        };
        let db = match (&s.db, s.linked) {
            (Some(d), true) => d.display().to_string().into(),
            (None, true) => "?".into(),
            (_, false) => Cell::styled("-", Style::Dim),
        };
        let manifest = if s.linked {
            s.manifest.display().to_string().into()
        } else {
            Cell::styled("-", Style::Dim)
        };
        t.row(vec![s.browser.as_str().into(), link, extension, db, manifest]);
    }
    out::table(&t)?;
    for s in list {
        if let Some(p) = s.problem.as_deref().filter(|_| s.linked) {
            out::line(&format!("{}: {p}", s.browser.as_str()))?;
        }
    }
    Ok(())
}

/// Fills in what the database `db` knows of each browser's extension (see [`LinkStatus::hear`]).
/// A database that does not exist yet has heard from nobody, and is not created for the asking.
fn hear(list: &mut [LinkStatus], db: &std::path::Path) -> Result<()> {
    if !db.exists() {
        return Ok(());
    }
    let contacts = Store::open_with(db, StoreOptions::from_env()?)?.extension_contacts()?;
    for s in list {
        s.hear(&contacts, db);
    }
    Ok(())
}

/// How to load the extension in Firefox so that it stays: Firefox removes a temporary add-on
/// when it quits, and recording stops with it.
fn firefox_steps() -> Vec<String> {
    let package = match link::firefox_package() {
        Some(p) => p.display().to_string(),
        None => format!(
            "dist/{} (run scripts/firefox-extension in Sitetrail's source folder to make it)",
            link::firefox_package_name()
        ),
    };
    vec![
        "Now install the extension in Firefox, so that it stays installed:".into(),
        format!("  the extension package is {package}."),
        "  Firefox ESR, Developer Edition or Nightly: in about:config set xpinstall.signatures.required to false, \
         then about:addons, the gear menu, Install Add-on From File, and pick the package."
            .into(),
        "  Release Firefox installs only extensions signed by Mozilla; Sitetrail's is not signed yet, so use \
         one of the editions above."
            .into(),
        "To only try it: about:debugging, This Firefox, Load Temporary Add-on, and pick the package. Firefox \
         removes a temporary add-on when it quits, and recording stops until you load it again."
            .into(),
    ]
}

/// Runs `sitetrail browser-link ...`.
pub(crate) fn run_browser_link(db: Option<PathBuf>, args: BrowserLinkArgs) -> Result<()> {
    let roots = Roots::current().ok_or_else(|| Error::Unavailable("no home directory found".into()))?;
    match args.action {
        LinkAction::Install {
            browser,
            user_data_dir,
            json,
        } => {
            let target = LinkTarget::new(browser.into(), user_data_dir.as_deref(), &roots)?;
            let db = db_path(db)?;
            // Open it once now: a file that is not a Sitetrail database is refused here (by the
            // store's own check, before anything is written), not later in the browser where
            // nobody sees the error.
            drop(Store::open_with(&db, StoreOptions::from_env()?)?);
            let exe = std::env::current_exe()?;
            let before = link::status(&target);
            let mut st = link::install(&target, &exe, &db)?;
            hear(std::slice::from_mut(&mut st), &db)?;
            if json {
                return out::json(&st);
            }
            let mut lines = vec![format!(
                "linked {}: {} runs `{} native-host` on {}",
                target.browser.product(),
                st.manifest.display(),
                exe.display(),
                db.display()
            )];
            if before.scope == LinkScope::System {
                lines.push(format!(
                    "(the system-wide link {} {}; {} now reads yours first)",
                    before.manifest.display(),
                    if before.serves(&db) {
                        "already served this database"
                    } else {
                        "served another database"
                    },
                    target.browser.product()
                ));
            }
            match (target.browser, link::extension_dir()) {
                (LinkBrowser::Firefox, _) => lines.extend(firefox_steps()),
                (_, Some(dir)) => lines.push(format!(
                    "Now load the extension: open the extensions page (chrome://extensions), turn on \
                     Developer mode, Load unpacked, and choose {}.",
                    dir.display()
                )),
                (_, None) => lines.push(
                    "Now load the extension: open the extensions page, turn on Developer mode, Load \
                     unpacked, and choose the folder of sitetrail-extension-<version>.zip, unpacked \
                     (the package installs it as /usr/share/sitetrail/extension)."
                        .into(),
                ),
            }
            for l in &lines {
                out::line(l)?;
            }
        }
        LinkAction::Uninstall {
            browser,
            user_data_dir,
        } => {
            let target = LinkTarget::new(browser.into(), user_data_dir.as_deref(), &roots)?;
            let removed = link::uninstall(&target)?;
            let product = target.browser.product();
            let mut lines = vec![if removed {
                format!("unlinked {product} ({} removed)", target.manifest().display())
            } else {
                format!("{product} had no link of yours")
            }];
            let after = link::status(&target);
            if after.scope == LinkScope::System {
                lines.push(format!(
                    "{product} is still linked for every user by the sitetrail package ({}); only removing \
                     the package removes that link, or turn the extension off in {product}",
                    after.manifest.display()
                ));
            }
            for l in &lines {
                out::line(l)?;
            }
        }
        LinkAction::Status {
            browser,
            user_data_dir,
            json,
        } => {
            let mut list = match browser {
                Some(b) => vec![link::status(&LinkTarget::new(
                    b.into(),
                    user_data_dir.as_deref(),
                    &roots,
                )?)],
                None => link::status_all(&roots),
            };
            hear(&mut list, &db_path(db)?)?;
            if json {
                return out::json(&list);
            }
            print_status(&list)?;
        }
    }
    Ok(())
}
