//! The native-messaging host: reads the extension's messages from stdin, stores their events,
//! and answers on stdout. The `sitetrail native-host` command runs [`serve`] on the process's
//! stdio; tests run it on pipes or byte buffers.
//!
//! Invariants:
//! - An ack is written only after the batch's transaction committed ([`store_events`] returns
//!   after COMMIT), so the extension deletes an event only once it is stored.
//! - Nothing from the input can make the host panic or allocate without bound: malformed JSON, a
//!   wrong shape, an oversized message or a database error each get an error reply and the host
//!   reads on; only a length prefix no browser can send (the stream is not native messaging) or
//!   the input closing ends it.
//! - Only protocol frames are written to the output; logs go to stderr (the CLI's tracing setup).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Result;
use crate::store::{Store, StoreOptions};

use super::events::{store_events, too_many_events};
use super::protocol::{
    batch_number, bounded, mend_text, read_frame, write_frame, Frame, FrameError, Reply, Request, MAX_BATCH,
    MAX_INCOMING, PROTOCOL_VERSION,
};

/// How the host runs.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The browser the host was linked for (`chromium`, `firefox`, ...): visits are stored under
    /// the source `extension:<browser>`.
    pub browser: String,
    /// The database file.
    pub db: PathBuf,
    /// Options for opening it.
    pub store_options: StoreOptions,
    /// Waits this long after a batch committed before sending its ack (for tests that need events
    /// to be stored but not yet acknowledged when they kill the host). Zero in normal use.
    pub ack_delay: Duration,
}

/// The source name visits from `browser`'s extension are stored under.
pub fn source_for(browser: &str) -> String {
    format!("extension:{browser}")
}

/// True for a browser name the host accepts: 1 to 32 lower-case letters, digits, `-` or `_`.
pub fn valid_browser(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// A running host: its configuration and the database, opened when first needed and opened
/// again after a failure (a database on a disk that was not mounted yet, say).
pub struct Host {
    config: HostConfig,
    source: String,
    store: Option<Store>,
    /// When this host last recorded that the extension is there (`capture::contact`).
    contact_at: Option<std::time::Instant>,
}

/// How [`serve`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The browser closed the connection (the normal end).
    Closed,
    /// The input ended inside a message.
    Truncated,
}

impl Host {
    /// A host for `config`; the database is opened at the first message that needs it.
    pub fn new(config: HostConfig) -> Host {
        let source = source_for(&config.browser);
        Host {
            config,
            source,
            store: None,
            contact_at: None,
        }
    }

    /// Records that the extension talked to this database: at a hello, and while it sends pages
    /// at most every [`CONTACT_EVERY`](super::contact::CONTACT_EVERY). A failure is only logged:
    /// the pages matter more than the bookkeeping.
    fn record_contact(&mut self, extension_version: Option<&str>, force: bool) {
        let due = self
            .contact_at
            .is_none_or(|t| t.elapsed() >= super::contact::CONTACT_EVERY);
        if !(force || due) {
            return;
        }
        let browser = self.config.browser.clone();
        let result = self
            .store()
            .and_then(|s| s.record_extension_contact(&browser, extension_version));
        match result {
            Ok(()) => self.contact_at = Some(std::time::Instant::now()),
            Err(e) => tracing::warn!(error = %e, "could not record the extension's contact"),
        }
    }

    /// The database, opening it if it is not open yet.
    fn store(&mut self) -> Result<&Store> {
        if self.store.is_none() {
            let opts = StoreOptions {
                pool_size: 2,
                ..self.config.store_options.clone()
            };
            self.store = Some(Store::open_with(&self.config.db, opts)?);
        }
        match &self.store {
            Some(s) => Ok(s),
            None => Err(crate::Error::Task("the database could not be kept open".into())),
        }
    }

    /// The answer to one frame. Never fails: every problem becomes an error reply.
    pub fn handle(&mut self, frame: Frame) -> Reply {
        let bytes = match frame {
            Frame::Message(b) => b,
            Frame::TooLarge { len: n, batch } => {
                return Reply::Error {
                    batch,
                    kind: "too_large",
                    message: format!(
                    "a message of {n} bytes is over the host's limit of {MAX_INCOMING} bytes; it was skipped"
                ),
                }
            }
        };
        // A refusal names the batch it refuses whenever the message names one, even when the
        // rest of it cannot be read: the extension then splits the batch instead of waiting for
        // an answer it would never get.
        let named = batch_number(&bytes);
        let request: Request = match serde_json::from_slice::<serde_json::Value>(&mend_text(&bytes)) {
            Err(e) => {
                return Reply::Error {
                    batch: named,
                    kind: "bad_json",
                    message: bounded(format!("the message is not JSON: {e}")),
                }
            }
            Ok(value) => match serde_json::from_value(value) {
                Ok(r) => r,
                Err(e) => {
                    return Reply::Error {
                        batch: named,
                        kind: "bad_message",
                        message: bounded(format!("the message is not one this host knows: {e}")),
                    }
                }
            },
        };
        match request {
            Request::Ping => Reply::Pong,
            Request::Site { query, url } => {
                let site = self.store().and_then(|s| site_info(s, &url));
                Reply::Site {
                    query,
                    // A page that is not a website, a website never recorded, or a database that
                    // cannot be read all mean "nothing to show"; the last is logged.
                    site: site.unwrap_or_else(|e| {
                        if !matches!(e, crate::Error::InvalidInput(_) | crate::Error::NotFound { .. }) {
                            tracing::warn!(error = %e, "could not look the site up");
                        }
                        None
                    }),
                }
            }
            Request::Limits { query } => match self.store().and_then(Store::holds) {
                Ok(holds) => Reply::Limits {
                    query,
                    ok: true,
                    limits: holds.limits,
                    focus: holds.focus,
                },
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the limits");
                    Reply::Limits {
                        query,
                        ok: false,
                        limits: Vec::new(),
                        focus: None,
                    }
                }
            },
            Request::Focus {
                query,
                minutes,
                blocks,
            } => {
                let (ok, message) = match self.store().and_then(|s| focus_request(s, minutes, &blocks)) {
                    Ok(message) => (true, message),
                    Err(e) => (false, bounded(e.to_string())),
                };
                Reply::Focus { query, ok, message }
            }
            Request::Hello {
                protocol,
                extension_version,
            } => {
                tracing::info!(
                    ?protocol,
                    extension_version = extension_version.as_deref().unwrap_or("?"),
                    browser = %self.config.browser,
                    "extension connected"
                );
                let problem = self.store().err().map(|e| bounded(e.to_string()));
                if problem.is_none() {
                    self.record_contact(extension_version.as_deref(), true);
                }
                Reply::Hello {
                    protocol: PROTOCOL_VERSION,
                    host_version: env!("CARGO_PKG_VERSION"),
                    browser: self.config.browser.clone(),
                    db: self.config.db.display().to_string(),
                    ok: problem.is_none(),
                    problem,
                }
            }
            Request::Events { batch, .. } if batch > MAX_BATCH => Reply::Error {
                batch: None,
                kind: "bad_message",
                message: format!("a batch number is a whole number from 0 to {MAX_BATCH}"),
            },
            Request::Events { batch, events } => {
                if let Some(message) = too_many_events(events.len()) {
                    return Reply::Error {
                        batch: Some(batch),
                        kind: "too_many_events",
                        message,
                    };
                }
                let source = self.source.clone();
                let result = self.store().and_then(|s| store_events(s, &source, &events));
                match result {
                    Ok(outcome) => {
                        tracing::debug!(
                            batch,
                            stored = outcome.stored.len(),
                            rejected = outcome.rejected.len(),
                            new_visits = outcome.new_visits,
                            "batch committed"
                        );
                        for r in &outcome.rejected {
                            tracing::info!(id = ?r.id, reason = %r.reason, "event refused");
                        }
                        self.record_contact(None, false);
                        if !self.config.ack_delay.is_zero() {
                            std::thread::sleep(self.config.ack_delay);
                        }
                        Reply::Ack {
                            batch,
                            stored: outcome.stored,
                            rejected: outcome.rejected,
                        }
                    }
                    Err(e) => {
                        tracing::warn!(batch, error = %e, "batch not stored; the extension will send it again");
                        if matches!(e, crate::Error::Open { .. }) {
                            // Try opening again at the next message.
                            self.store = None;
                        }
                        Reply::Error {
                            batch: Some(batch),
                            kind: "database",
                            message: bounded(e.to_string()),
                        }
                    }
                }
            }
        }
    }
}

/// Starts (or with 0 minutes stops) a focus session from the extension's popup; the words to show.
fn focus_request(store: &Store, minutes: u32, blocks: &[String]) -> Result<String> {
    if minutes == 0 {
        return Ok(match store.stop_focus()? {
            Some(_) => "Focus stopped.".into(),
            None => "No focus session was running.".into(),
        });
    }
    let targets = blocks
        .iter()
        .map(|b| crate::focus::parse_target(b))
        .collect::<Result<Vec<_>>>()?;
    let f = store.start_focus(minutes, targets)?;
    let names: Vec<String> = f.blocks.iter().map(crate::limits::Target::name).collect();
    Ok(format!(
        "Focusing for {minutes} min: {} held back on all your devices.",
        names.join(", ")
    ))
}

/// What `store` knows of the site of `url`: its category and today's time on it (local day).
fn site_info(store: &Store, url: &str) -> Result<Option<super::protocol::SiteInfo>> {
    let domain = crate::domain::Domain::parse(url)?;
    let website = match store.website(domain.as_str()) {
        Ok(w) => w,
        Err(crate::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let today = store.website_days(&website.domain, store.recent_period(1)?)?;
    let row = today.into_iter().next().unwrap_or_default();
    Ok(Some(super::protocol::SiteInfo {
        display: crate::domain::unicode_form(&website.domain).into_owned(),
        category_name: website.category.map(crate::category::Category::name),
        category: website.category,
        domain: website.domain,
        today_active_ms: row.active_ms,
        today_estimated_ms: row.estimated_ms,
        today_visits: row.visits,
    }))
}

/// Serves the browser on `input`/`output` until it closes the connection. Returns an error only
/// when the output fails or the input is not a native-messaging stream (after telling the
/// browser so, if it can).
pub fn serve(host: &mut Host, mut input: impl Read, mut output: impl Write) -> std::io::Result<Ended> {
    loop {
        let frame = match read_frame(&mut input) {
            Ok(f) => f,
            Err(FrameError::Closed) => return Ok(Ended::Closed),
            Err(FrameError::Truncated) => return Ok(Ended::Truncated),
            Err(FrameError::Io(e)) => return Err(e),
            Err(e @ FrameError::Corrupt(_)) => {
                let reply = Reply::Error {
                    batch: None,
                    kind: "corrupt_stream",
                    message: e.to_string(),
                };
                let _ = write_frame(&mut output, &reply.to_json());
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    e.to_string(),
                ));
            }
        };
        let reply = host.handle(frame);
        for message in reply.to_frames() {
            write_frame(&mut output, &message)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::events::MAX_EVENTS_PER_BATCH;

    fn framed(json: &[u8]) -> Vec<u8> {
        let mut v = u32::try_from(json.len()).unwrap().to_ne_bytes().to_vec();
        v.extend_from_slice(json);
        v
    }

    fn replies(out: &[u8]) -> Vec<serde_json::Value> {
        let mut r = out;
        let mut v = Vec::new();
        while let Ok(Frame::Message(m)) = read_frame(&mut r) {
            v.push(serde_json::from_slice(&m).unwrap());
        }
        v
    }

    fn host(dir: &std::path::Path) -> Host {
        Host::new(HostConfig {
            browser: "chromium".into(),
            db: dir.join("db.sqlite"),
            store_options: StoreOptions::default(),
            ack_delay: Duration::ZERO,
        })
    }

    #[test]
    fn bad_json_and_unknown_messages_get_errors_and_the_host_reads_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut input = framed(b"{not json");
        input.extend(framed(br#"{"type":"launch","batch":4}"#));
        input.extend(framed(br#"{"type":"events","batch":5,"events":"nope"}"#));
        input.extend(framed(br#"{"type":"ping"}"#));
        let mut out = Vec::new();
        assert_eq!(
            serve(&mut host(dir.path()), &input[..], &mut out).unwrap(),
            Ended::Closed
        );
        let r = replies(&out);
        assert_eq!(r.len(), 4);
        assert_eq!(
            (r[0]["type"].as_str(), r[0]["kind"].as_str()),
            (Some("error"), Some("bad_json"))
        );
        assert_eq!(
            (r[1]["kind"].as_str(), r[1]["batch"].as_u64()),
            (Some("bad_message"), Some(4))
        );
        assert_eq!(
            (r[2]["kind"].as_str(), r[2]["batch"].as_u64()),
            (Some("bad_message"), Some(5))
        );
        assert_eq!(r[3]["type"], "pong");
        assert!(
            !dir.path().join("db.sqlite").exists(),
            "nothing needed the database"
        );
    }

    #[test]
    fn a_corrupt_length_ends_the_stream_with_an_error_reply() {
        let dir = tempfile::tempdir().unwrap();
        let mut input = framed(br#"{"type":"ping"}"#);
        input.extend(u32::MAX.to_ne_bytes());
        let mut out = Vec::new();
        let err = serve(&mut host(dir.path()), &input[..], &mut out).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        let r = replies(&out);
        assert_eq!(r[0]["type"], "pong");
        assert_eq!(r[1]["kind"], "corrupt_stream");
    }

    #[test]
    fn too_many_events_are_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let events: Vec<_> = (0..=MAX_EVENTS_PER_BATCH)
            .map(|i| serde_json::json!({"id": format!("e{i}"), "kind": "visit", "url": "https://a.test/", "at": 1_800_000_000_000i64}))
            .collect();
        let msg =
            serde_json::to_vec(&serde_json::json!({"type": "events", "batch": 1, "events": events})).unwrap();
        let mut out = Vec::new();
        serve(&mut host(dir.path()), &framed(&msg)[..], &mut out).unwrap();
        let r = replies(&out);
        assert_eq!(r[0]["kind"], "too_many_events");
    }

    #[test]
    fn a_database_that_cannot_open_is_reported_in_hello_and_batches() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("not-a-db");
        std::fs::write(&bad, vec![b'x'; 8192]).unwrap();
        let mut h = Host::new(HostConfig {
            browser: "chromium".into(),
            db: bad,
            store_options: StoreOptions::default(),
            ack_delay: Duration::ZERO,
        });
        let mut input = framed(br#"{"type":"hello","protocol":1}"#);
        input.extend(framed(
            br#"{"type":"events","batch":9,"events":[{"id":"e1","kind":"visit","url":"https://a.test/","at":1800000000000}]}"#,
        ));
        let mut out = Vec::new();
        serve(&mut h, &input[..], &mut out).unwrap();
        let r = replies(&out);
        assert_eq!(r[0]["ok"], false);
        assert!(r[0]["problem"].as_str().unwrap().contains("not-a-db"), "{}", r[0]);
        assert_eq!(
            (r[1]["kind"].as_str(), r[1]["batch"].as_u64()),
            (Some("database"), Some(9))
        );
    }

    #[test]
    fn a_hello_records_that_the_browsers_extension_talked_to_this_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let mut h = Host::new(HostConfig {
            browser: "brave".into(),
            db: db.clone(),
            store_options: StoreOptions::default(),
            ack_delay: Duration::ZERO,
        });
        // Nothing before the extension says hello.
        assert!(Store::open(&db).unwrap().extension_contacts().unwrap().is_empty());
        let input = framed(br#"{"type":"hello","protocol":1,"extension_version":"0.1.0"}"#);
        let mut out = Vec::new();
        serve(&mut h, &input[..], &mut out).unwrap();
        assert_eq!(replies(&out)[0]["ok"], true);
        let contacts = Store::open(&db).unwrap().extension_contacts().unwrap();
        assert_eq!(contacts.len(), 1);
        assert_eq!(contacts[0].browser, "brave");
        assert_eq!(contacts[0].extension_version.as_deref(), Some("0.1.0"));
    }

    #[test]
    fn a_site_question_is_answered_with_its_category_and_todays_time() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        {
            let store = Store::open(&db).unwrap();
            crate::time_spent::measured_visit_for_tests(&store, "https://news.test/a", 90_000);
            store
                .set_user_category("news.test", crate::Category::News)
                .unwrap();
        }
        let mut h = Host::new(HostConfig {
            browser: "chromium".into(),
            db,
            store_options: StoreOptions::default(),
            ack_delay: Duration::ZERO,
        });
        let mut input = framed(br#"{"type":"site","query":7,"url":"https://www.news.test/page"}"#);
        input.extend(framed(
            br#"{"type":"site","query":8,"url":"https://never.test/"}"#,
        ));
        input.extend(framed(br#"{"type":"site","query":9,"url":"chrome://settings"}"#));
        let mut out = Vec::new();
        serve(&mut h, &input[..], &mut out).unwrap();
        let r = replies(&out);
        assert_eq!(
            (r[0]["type"].as_str(), r[0]["query"].as_u64()),
            (Some("site"), Some(7))
        );
        let site = &r[0]["site"];
        assert_eq!(site["domain"], "news.test");
        assert_eq!(site["category"], "news");
        assert_eq!(site["category_name"], "News");
        // Today's time (just recorded, so today unless midnight passed in between).
        assert!(
            site["today_active_ms"] == 90_000 || site["today_visits"] == 0,
            "{site}"
        );
        assert_eq!((r[1]["query"].as_u64(), r[1]["site"].is_null()), (Some(8), true));
        assert_eq!((r[2]["query"].as_u64(), r[2]["site"].is_null()), (Some(9), true));
    }

    #[test]
    fn the_limits_used_up_are_answered_with_the_websites_they_cover() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        let day = chrono::Local::now().date_naive();
        {
            let store = Store::open(&db).unwrap();
            for (url, ms) in [
                ("https://www.news.test/a", 90_000),
                ("https://other.test/", 1_000),
            ] {
                crate::time_spent::measured_visit_for_tests(&store, url, ms);
            }
            store
                .set_user_category("news.test", crate::Category::News)
                .unwrap();
            store
                .set_user_category("other.test", crate::Category::Shopping)
                .unwrap();
            use crate::limits::{Kind, Period, Target};
            // News: 90 s of 1 min, used up; shopping: 1 s of 1 min, not yet.
            for c in [crate::Category::News, crate::Category::Shopping] {
                store
                    .set_limit(&Target::Category(c), Period::Day, Kind::Max, 1)
                    .unwrap();
            }
        }
        let mut h = host(dir.path());
        let mut out = Vec::new();
        serve(&mut h, &framed(br#"{"type":"limits","query":3}"#)[..], &mut out).unwrap();
        let r = replies(&out);
        assert_eq!(
            (
                r[0]["type"].as_str(),
                r[0]["query"].as_u64(),
                r[0]["ok"].as_bool()
            ),
            (Some("limits"), Some(3), Some(true))
        );
        let limits = r[0]["limits"].as_array().unwrap();
        // Midnight between the visit and the question would leave nothing used up.
        if chrono::Local::now().date_naive() == day {
            assert_eq!(limits.len(), 1, "{limits:?}");
            assert_eq!(limits[0]["target"], "news");
            assert_eq!(limits[0]["domains"], serde_json::json!(["news.test"]));
            assert_eq!(limits[0]["limit_ms"], 60_000);
        }
    }

    #[test]
    fn the_popup_starts_and_stops_a_focus_session_and_bad_blocks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = host(dir.path());
        let mut input =
            framed(br#"{"type":"focus","query":1,"minutes":25,"blocks":["social","video.example"]}"#);
        input.extend(framed(br#"{"type":"limits","query":2}"#));
        input.extend(framed(
            br#"{"type":"focus","query":3,"minutes":25,"blocks":["nonsense"]}"#,
        ));
        input.extend(framed(br#"{"type":"focus","query":4,"minutes":0}"#));
        input.extend(framed(br#"{"type":"limits","query":5}"#));
        let mut out = Vec::new();
        serve(&mut h, &input[..], &mut out).unwrap();
        let r = replies(&out);
        assert_eq!(
            (r[0]["type"].as_str(), r[0]["ok"].as_bool()),
            (Some("focus"), Some(true)),
            "{:?}",
            r[0]
        );
        assert_eq!(
            r[0]["message"],
            "Focusing for 25 min: Social networks, video.example held back on all your devices."
        );
        assert_eq!(
            r[1]["focus"]["domains"],
            serde_json::json!(["video.example"]),
            "no social website recorded yet"
        );
        assert_eq!(
            r[1]["focus"]["target_names"],
            serde_json::json!(["Social networks", "video.example"])
        );
        assert_eq!(
            (r[2]["ok"].as_bool(), r[2]["query"].as_u64()),
            (Some(false), Some(3))
        );
        assert_eq!(
            (r[3]["ok"].as_bool(), r[3]["message"].as_str()),
            (Some(true), Some("Focus stopped."))
        );
        assert!(r[4]["focus"].is_null(), "{:?}", r[4]);
    }

    #[test]
    fn browser_names_are_plain() {
        assert!(valid_browser("chromium"));
        assert!(!valid_browser("Chromium"));
        assert!(!valid_browser(""));
        assert!(!valid_browser("a/b"));
    }
}
