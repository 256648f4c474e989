//! The CLI as people use it, through the real binary: the time words of `--since`/`--until`, the
//! questions before forgetting (asked on a terminal only, a real pseudo-terminal here), colour only
//! on a terminal (`NO_COLOR`), "did you mean" for categories, control and bidi characters escaped
//! in every human output, Unicode domains, time spent in `history`, and a reader that goes away
//! (every listing command into a pipe closed after one byte, on a history that fills the pipe).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Command, ExitStatus, Output, Stdio};

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, TimeZone};
use serde_json::Value;

use sitetrail::{time_spent, NewVisit, Store, Timestamp};

use crate::support::{cli, count, exec, run_ok, table_rows, TempDb};

/// The zone the date tests run in (a POSIX TZ string: no zoneinfo files needed). UTC+9 puts local
/// midnight at 15:00 UTC, so a mistake of zone shows.
const TZ: &str = "JST-9";

/// The time the date tests' commands are given as "now" (`SITETRAIL_NOW`).
const NOW: &str = "2026-11-19T15:20:00+09:00";

fn jst() -> FixedOffset {
    FixedOffset::east_opt(9 * 3600).unwrap()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn record(store: &Store, url: &str, title: Option<&str>, at: Timestamp) -> sitetrail::ids::VisitId {
    store
        .record_visit(&NewVisit {
            url,
            title,
            visited_at: at,
            source: "test",
            source_visit_id: None,
        })
        .unwrap()
        .visit_id
        .unwrap()
}

fn ts(t: DateTime<FixedOffset>) -> Timestamp {
    Timestamp(t.timestamp_micros())
}

fn local_midnight(d: NaiveDate) -> DateTime<FixedOffset> {
    jst()
        .from_local_datetime(&d.and_hms_opt(0, 0, 0).unwrap())
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// --since / --until

#[test]
fn every_since_and_until_form_selects_from_the_start_of_its_day_or_period() {
    let db = TempDb::new();
    let store = db.open();
    // The commands' "now" (a debug build's `SITETRAIL_NOW`): a Thursday afternoon, so "today"
    // cannot change between this test and the command, and every form below starts on a day
    // of its own.
    let now = DateTime::parse_from_rfc3339(NOW).unwrap();
    let today = now.date_naive();
    let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    let first = today.with_day(1).unwrap();
    let date = NaiveDate::from_ymd_opt(2026, 11, 10).unwrap();
    let forms: Vec<(String, NaiveDate)> = vec![
        ("today".into(), today),
        ("yesterday".into(), today.pred_opt().unwrap()),
        ("7d".into(), today - Duration::days(6)),
        ("30d".into(), today - Duration::days(29)),
        ("week".into(), monday),
        ("month".into(), first),
        ("2026-11-10".into(), date),
    ];
    // A visit just after each boundary and one just before it.
    let mut visits: Vec<(String, Timestamp)> = Vec::new();
    for (i, (_, day)) in forms.iter().enumerate() {
        let start = local_midnight(*day);
        for (side, t) in [
            ("in", start + Duration::seconds(30)),
            ("out", start - Duration::seconds(30)),
        ] {
            let url = format!("https://f{i}-{side}.example/");
            record(&store, &url, None, ts(t));
            visits.push((url, ts(t)));
        }
    }
    let all = visits.len() as i64;
    let urls_of = |args: &[&str]| -> Vec<String> {
        let mut urls: Vec<String> = json(&run_ok(
            cli(&db.path)
                .env("TZ", TZ)
                .env("SITETRAIL_NOW", NOW)
                .args(["history", "--json", "--limit", "1000"])
                .args(args),
        ))
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["url"].as_str().unwrap().to_owned())
        .collect();
        urls.sort();
        urls
    };
    for (form, day) in &forms {
        let boundary = ts(local_midnight(*day));
        let mut after: Vec<String> = visits
            .iter()
            .filter(|(_, t)| *t >= boundary)
            .map(|(u, _)| u.clone())
            .collect();
        after.sort();
        let mut before: Vec<String> = visits
            .iter()
            .filter(|(_, t)| *t <= boundary)
            .map(|(u, _)| u.clone())
            .collect();
        before.sort();
        assert_eq!(urls_of(&["--since", form]), after, "history --since {form}");
        assert_eq!(urls_of(&["--until", form]), before, "history --until {form}");
        // `time` reads the same words.
        let rows = json(&run_ok(
            cli(&db.path)
                .env("TZ", TZ)
                .env("SITETRAIL_NOW", NOW)
                .args(["time", "--json", "--since", form]),
        ));
        let visits_in: i64 = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["visits"].as_i64().unwrap())
            .sum();
        assert_eq!(visits_in, after.len() as i64, "time --since {form}");
    }
    assert_eq!(count(&store, "visit"), all);

    // `forget range` too: yesterday's visits, from its midnight to today's.
    let out = run_ok(cli(&db.path).env("TZ", TZ).env("SITETRAIL_NOW", NOW).args([
        "forget",
        "range",
        "--since",
        "yesterday",
        "--until",
        "today",
        "--json",
    ]));
    let report = json(&out);
    let yesterday = ts(local_midnight(today.pred_opt().unwrap()));
    let midnight = ts(local_midnight(today));
    let expected = visits
        .iter()
        .filter(|(_, t)| *t >= yesterday && *t <= midnight)
        .count();
    assert_eq!(report["visits"], expected as i64, "{out}");
    assert_eq!(count(&store, "visit"), all - expected as i64);
}

#[test]
fn a_time_that_is_none_of_the_forms_says_what_is_accepted() {
    let db = TempDb::new();
    for args in [
        vec!["history", "--since", "tomorrow"],
        vec!["history", "--until", "7 days"],
        vec!["time", "--since", "0d"],
        vec!["time", "--until", "2026-13-01"],
        vec!["forget", "range", "--since", "last week", "--until", "today"],
    ] {
        let out = cli(&db.path).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is not a time")
                && err.contains("RFC 3339")
                && err.contains("2026-11-29")
                && err.contains("yesterday")
                && err.contains("30d")
                && err.contains("week")
                && err.contains("month"),
            "{args:?}: {err}"
        );
    }
    // A test's "now" that is not a time is refused the same way, before anything is read.
    let out = cli(&db.path)
        .env("SITETRAIL_NOW", "tomorrow")
        .args(["history"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SITETRAIL_NOW must be an RFC 3339 date-time"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// A pseudo-terminal

/// A pseudo-terminal `cols` wide: (master, slave).
fn pty(cols: u16) -> (File, OwnedFd) {
    let size = nix::pty::Winsize {
        ws_row: 40,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let p = nix::pty::openpty(Some(&size), None).unwrap();
    (File::from(p.master), p.slave)
}

/// Runs `cmd` with a terminal as standard input, typing `answer` into it; stdout and stderr are
/// pipes.
fn with_terminal_stdin(cmd: &mut Command, answer: &str) -> Output {
    let (mut master, slave) = pty(100);
    let child = cmd
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    master.write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(master);
    out
}

/// Runs `cmd` with a terminal `cols` wide as standard output; returns what it showed there.
fn on_terminal(cmd: &mut Command, cols: u16) -> (ExitStatus, String) {
    let (mut master, slave) = pty(cols);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command's copy of the terminal's other end: closed, so reading ends with the child.
    cmd.stdout(Stdio::null());
    let reader = std::thread::spawn(move || {
        let mut shown = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => shown.extend_from_slice(&buf[..n]),
                // Linux reports the other end's close as EIO.
                Err(e) if e.raw_os_error() == Some(5) || e.kind() == ErrorKind::UnexpectedEof => break,
                Err(e) => panic!("reading the terminal: {e}"),
            }
        }
        shown
    });
    let status = child.wait().unwrap();
    let shown = reader.join().unwrap();
    (status, String::from_utf8(shown).unwrap().replace("\r\n", "\n"))
}

// ---------------------------------------------------------------------------------------------
// Questions before forgetting

#[test]
fn forgetting_a_website_or_a_range_asks_first_on_a_terminal_only() {
    let db = TempDb::new();
    let store = db.open();
    let now = Timestamp::now();
    for site in ["keep.example", "yes.example", "flag.example", "script.example"] {
        record(&store, &format!("https://{site}/"), None, now);
    }
    let website = |d: &str| count(&store, &format!("website WHERE domain = '{d}'"));

    // No: nothing is forgotten, and the exit code says so.
    let out = with_terminal_stdin(cli(&db.path).args(["forget", "website", "keep.example"]), "n\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Forget keep.example") && err.contains("[y/N]"),
        "{err}"
    );
    assert!(err.contains("nothing was forgotten"), "{err}");
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(website("keep.example"), 1);
    // An empty answer is a no.
    let out = with_terminal_stdin(cli(&db.path).args(["forget", "website", "keep.example"]), "\n");
    assert!(!out.status.success());
    assert_eq!(website("keep.example"), 1);

    // Yes.
    let out = with_terminal_stdin(cli(&db.path).args(["forget", "website", "yes.example"]), "y\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("forgot 1 visit(s)"));
    assert_eq!(website("yes.example"), 0);

    // --yes: not asked (had it asked, the "n" typed would have refused).
    let out = with_terminal_stdin(
        cli(&db.path).args(["forget", "website", "flag.example", "--yes"]),
        "n\n",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("[y/N]"));
    assert_eq!(website("flag.example"), 0);

    // Without a terminal (a script): not asked, forgotten as before.
    let out = cli(&db.path)
        .args(["forget", "website", "script.example"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("[y/N]"));
    assert_eq!(website("script.example"), 0);

    // A range: the question names the range in local time; no keeps it.
    let visits = || count(&store, "visit");
    let before = visits();
    let range = [
        "forget",
        "range",
        "--since",
        "2026-11-29T09:00:00Z",
        "--until",
        "today",
    ];
    let out = with_terminal_stdin(cli(&db.path).env("TZ", "UTC").args(range), "no\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Forget every visit from Sun 29 Nov 2026 09:00 to "),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(visits(), before);
    let out = with_terminal_stdin(cli(&db.path).env("TZ", "UTC").args(range), "YES\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A website that is not there: said at once, nothing asked.
    let out = with_terminal_stdin(
        cli(&db.path).args(["forget", "website", "nowhere.example"]),
        "y\n",
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("[y/N]"));

    // Visits by id are named one by one: never asked.
    let id = record(&store, "https://byid.example/", None, now).to_string();
    let out = with_terminal_stdin(cli(&db.path).args(["forget", "visit", &id]), "n\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("[y/N]"));
}

#[test]
fn forgetting_says_on_all_your_devices_when_sync_is_on_and_the_other_device_forgets_too() {
    use crate::support::sync::{converge, Device, TestHub};
    let hub = TestHub::start();
    let (laptop, desktop) = (Device::new(), Device::new());
    let key = laptop.setup(&hub, "laptop");
    desktop.join(&hub, "desktop", &key);
    laptop.visit_at("https://shared.example/", "shared", 100);
    laptop.visit_at("https://kept.example/", "kept", 110);
    converge(&[&laptop, &desktop]);
    assert_eq!(desktop.visits().len(), 2);

    // The question says where, and so does the answer.
    let out = with_terminal_stdin(
        cli(&laptop.db).args(["forget", "website", "shared.example"]),
        "n\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Forget shared.example on all your devices (sync is on):"),
        "{err}"
    );
    let range = [
        "forget",
        "range",
        "--since",
        "2026-11-29T09:00:00Z",
        "--until",
        "today",
    ];
    let out = with_terminal_stdin(cli(&laptop.db).env("TZ", "UTC").args(range), "n\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(local time) on all your devices"), "{err}");
    let said = run_ok(cli(&laptop.db).args(["forget", "website", "shared.example"]));
    assert!(
        said.contains("forgot 1 visit(s) and 1 website(s) on all your devices"),
        "{said}"
    );
    // And it is so: the other device forgets it at its next sync.
    converge(&[&laptop, &desktop]);
    let urls: Vec<String> = desktop.visits().into_iter().map(|v| v.1).collect();
    assert_eq!(urls, ["https://kept.example/"]);

    // Without sync, the words say this computer.
    let db = TempDb::new();
    record(&db.open(), "https://alone.example/", None, Timestamp::now());
    let out = with_terminal_stdin(cli(&db.path).args(["forget", "website", "alone.example"]), "n\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Forget alone.example on this computer:"), "{err}");
    let said = run_ok(cli(&db.path).args(["forget", "website", "alone.example"]));
    assert!(
        said.contains("forgot 1 visit(s) and 1 website(s) on this computer"),
        "{said}"
    );
    assert!(!said.contains("devices"), "{said}");
}

// ---------------------------------------------------------------------------------------------
// Colour, width

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let db = TempDb::new();
    let store = db.open();
    record(
        &store,
        "https://long.example/",
        Some("A title far too long to fit in a terminal that is only sixty columns wide, cut"),
        Timestamp::now(),
    );
    let history = || {
        let mut c = cli(&db.path);
        c.env("TERM", "xterm").env_remove("NO_COLOR").args(["history"]);
        c
    };
    let (status, shown) = on_terminal(&mut history(), 60);
    assert!(status.success());
    assert!(shown.contains("\x1b[1mTIME\x1b[0m"), "headers in bold: {shown:?}");
    // Cut to the terminal's width, the title column ending in an ellipsis.
    let plain = shown
        .replace("\x1b[1m", "")
        .replace("\x1b[2m", "")
        .replace("\x1b[0m", "");
    assert!(plain.lines().all(|l| l.chars().count() <= 60), "{plain}");
    assert!(plain.contains("A title far") && plain.contains('…'), "{plain}");

    let (status, shown) = on_terminal(history().env("NO_COLOR", "1"), 60);
    assert!(status.success());
    assert!(!shown.contains('\x1b'), "NO_COLOR: {shown:?}");
    assert!(shown.contains("TIME"), "{shown:?}");
    let (_, shown) = on_terminal(history().env("TERM", "dumb"), 60);
    assert!(!shown.contains('\x1b'), "TERM=dumb: {shown:?}");

    // Into a pipe: no colour, nothing cut.
    let piped = run_ok(&mut history());
    assert!(!piped.contains('\x1b'), "{piped:?}");
    assert!(piped.contains("only sixty columns wide, cut"), "{piped}");
}

// ---------------------------------------------------------------------------------------------
// Categories

#[test]
fn category_ids_and_names_are_accepted_and_near_misses_get_a_did_you_mean() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://tools.example/"]));
    run_ok(cli(&db.path).args(["categorize", "tools.example", "Development & technology"]));
    let sites = json(&run_ok(cli(&db.path).args([
        "websites",
        "--json",
        "--category",
        "dev_tech",
    ])));
    assert_eq!(sites[0]["domain"], "tools.example");
    assert_eq!(sites[0]["category"], "dev_tech");
    let named = json(&run_ok(cli(&db.path).args([
        "history",
        "--json",
        "--category",
        "development and technology",
    ])));
    assert_eq!(named.as_array().unwrap().len(), 1);

    for (args, suggestion) in [
        (
            vec!["history", "--category", "tech"],
            "did you mean dev_tech (Development & technology)?",
        ),
        (
            vec!["websites", "--category", "shoping"],
            "did you mean shopping (Shopping)?",
        ),
        (
            vec!["categorize", "tools.example", "social media"],
            "did you mean social (Social networks)?",
        ),
        (
            vec!["review", "--confirm", "tools.example", "--expect", "newz"],
            "did you mean news (News)?",
        ),
    ] {
        let out = cli(&db.path).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(suggestion), "{args:?}: {err}");
    }
    // Nothing near: the list is where to look.
    let out = cli(&db.path)
        .args(["history", "--category", "qqqq"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sitetrail categories"));
    // The category did not change on any refused command.
    let sites = json(&run_ok(cli(&db.path).args(["websites", "--json"])));
    assert_eq!(sites[0]["category"], "dev_tech");
}

// ---------------------------------------------------------------------------------------------
// What people read

#[test]
fn history_shows_time_domain_title_category_and_time_spent_and_ids_on_request() {
    let db = TempDb::new();
    let store = db.open();
    let now = Timestamp::now();
    let measured = record(&store, "https://docs.example/a", Some("Measured page"), now);
    let estimated = record(&store, "https://docs.example/b", Some("Estimated page"), now);
    record(&store, "https://xn--mnchen-3ya.example/", None, now);
    store
        .write(None, |tx| {
            time_spent::set_active_ms_in(tx, measured, 12 * 60_000 + 5_000, now)?;
            time_spent::set_estimated_ms_in(tx, estimated, 45_000, now)
        })
        .unwrap();
    run_ok(cli(&db.path).args(["categorize", "docs.example", "education"]));

    let text = run_ok(cli(&db.path).args(["history"]));
    let rows = table_rows(&text);
    assert_eq!(
        rows[0],
        ["TIME", "DOMAIN", "TITLE", "CATEGORY", "SPENT"],
        "{text}"
    );
    let page = |title: &str| {
        rows.iter()
            .find(|r| r[2] == title)
            .unwrap_or_else(|| panic!("{title}: {text}"))
            .clone()
    };
    let m = page("Measured page");
    assert_eq!(
        m[1..],
        ["docs.example", "Measured page", "Education", "12 min"],
        "{text}"
    );
    // Recorded just now: said as a time of day (or "yesterday" just after midnight).
    assert!(m[0].len() == 5 || m[0].starts_with("yesterday"), "{text}");
    // Marked as the app marks an estimate.
    assert_eq!(page("Estimated page")[4], "≈ 45 s", "{text}");
    // The IDN in Unicode; a visit without a title shows its URL.
    let munich = rows
        .iter()
        .find(|r| r[1] == "münchen.example")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(munich[2], "https://xn--mnchen-3ya.example/", "{text}");
    assert_eq!(munich[4], "-", "no time known: {text}");

    let with_ids = table_rows(&run_ok(cli(&db.path).args(["history", "--ids"])));
    assert_eq!(with_ids[0][0], "ID");
    assert!(
        with_ids.iter().any(|r| r[0] == measured.to_string()),
        "{with_ids:?}"
    );
    // Those ids are what `forget visit` takes, and its help says where to find them.
    let help = run_ok(cli(&db.path).args(["forget", "visit", "--help"]));
    assert!(help.contains("history --ids"), "{help}");
    run_ok(cli(&db.path).args(["forget", "visit", &with_ids[1][0]]));
    assert_eq!(count(&store, "visit"), 2);
}

#[test]
fn internationalised_domains_are_shown_in_unicode_and_found_in_both_forms() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args([
        "visit",
        "https://xn--mnchen-3ya.example/karte",
        "--title",
        "Karte",
    ]));
    run_ok(cli(&db.path).args(["visit", "https://bücher.example/", "--title", "Bücher"]));
    let websites = run_ok(cli(&db.path).arg("websites"));
    assert!(
        websites.contains("münchen.example") && websites.contains("bücher.example"),
        "{websites}"
    );
    assert!(!websites.contains("xn--"), "{websites}");
    let time = run_ok(cli(&db.path).arg("time"));
    assert!(time.contains("münchen.example"), "{time}");
    for q in ["münchen", "xn--mnchen-3ya"] {
        let found = json(&run_ok(cli(&db.path).args(["history", "--json", "--search", q])));
        assert_eq!(found.as_array().unwrap().len(), 1, "{q}");
        // JSON keeps the stored form: scripts see what they always saw.
        assert_eq!(found[0]["domain"], "xn--mnchen-3ya.example");
    }
}

#[test]
fn control_and_bidi_characters_never_reach_the_terminal_raw() {
    let db = TempDb::new();
    let store = db.open();
    let hostile_url = "https://evil.example/\x1b]0;owned\x07\x1b[2J\nforged line\r\u{9b}31m";
    record(&store, hostile_url, None, Timestamp::now());
    // Stored percent-encoded now; a database written before holds it raw, and is shown escaped.
    exec(
        &store,
        &format!(
            "UPDATE visit SET url = '{}' WHERE url LIKE 'https://evil.example/%'",
            hostile_url.replace('\'', "''")
        ),
    );
    record(
        &store,
        "https://rtl.example/",
        Some("invoice \u{202e}fdp.exe\u{202c} \u{2066}x\u{2069}"),
        Timestamp::now(),
    );
    exec(
        &store,
        "UPDATE website_category_classification_outbox SET status = 'FAILED', attempt_count = 5, \
         attempted_at = 1, last_error_message = 'server said: ' || char(27) || ']0;x' || char(7) || char(10) || 'fake'",
    );
    let raw = |s: &str| {
        s.chars().any(|c| {
            c.is_control() && c != '\n' || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
    };
    for args in [
        vec!["history"],
        vec!["history", "--ids"],
        vec!["failed"],
        vec!["websites"],
        vec!["time"],
    ] {
        let out = cli(&db.path).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !raw(&text),
            "{args:?} printed a raw control or bidi character: {text:?}"
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(!raw(&stderr.replace('\n', "")), "{args:?}: {stderr:?}");
        // No forged line: a header and one line per row.
        if args[0] == "history" {
            assert_eq!(text.lines().count(), 3, "{text}");
            assert!(
                text.contains("\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\nforged line\\r\\u{9b}31m"),
                "{text}"
            );
            assert!(
                text.contains("invoice \\u{202e}fdp.exe\\u{202c} \\u{2066}x\\u{2069}"),
                "{text}"
            );
        }
        if args[0] == "failed" {
            assert!(text.contains("server said: \\u{1b}]0;x\\u{7}\\nfake"), "{text}");
        }
    }
    // JSON is unchanged: serde's escapes for control characters, the title as stored.
    let j = run_ok(cli(&db.path).args(["history", "--json"]));
    assert!(j.contains("\\u001b]0;owned\\u0007"), "{j}");
    assert_eq!(
        json(&j)
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["url"] == hostile_url)
            .count(),
        1
    );
    // Errors are escaped too (they repeat what was typed).
    let out = cli(&db.path)
        .args(["categorize", "\x1b]0;x\x07.example", "news"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success() && !raw(&err.replace('\n', "")) && err.contains("\\u{1b}"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// A reader that goes away

/// Websites in the big history, each with two visits.
const SITES: usize = 1_500;

fn site(i: usize) -> String {
    format!("w{i:04}-a-rather-long-website-name-that-fills-the-pipe-buffer-fast.example")
}

/// A history whose every listing is well over a pipe's 64 KiB: 1,500 websites with long names,
/// 3,000 visits with long titles and some time spent, every job failed with a long message, 1,500
/// blocked domains, the categories given by the built-in rules (uncertain ones to review).
fn big_history(db: &TempDb) -> Store {
    let store = db.open();
    let start = Timestamp::now().minus(std::time::Duration::from_secs(3 * 86_400));
    for i in 0..SITES {
        for j in 0..2 {
            let at = start.plus(std::time::Duration::from_secs((i * 2 + j) as u64 * 60));
            let title = format!("Page {j} of website {i}, with a title long enough to fill the pipe");
            let id = record(&store, &format!("https://{}/page/{j}", site(i)), Some(&title), at);
            if j == 0 {
                store
                    .write(None, |tx| {
                        time_spent::set_active_ms_in(tx, id, (i as i64 + 1) * 1_000, store.now())
                    })
                    .unwrap();
            }
        }
    }
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    // The learned model is sure of many of these made-up names: all are made uncertain, so that
    // the review list is long too.
    exec(
        &store,
        "UPDATE website_category_classification_outbox SET status = 'FAILED', attempt_count = 5, \
         attempted_at = 1700000000000000, \
         last_error_message = 'the provider refused this website with a long explanation of why it did so'; \
         UPDATE website SET category_confidence = 'low' WHERE category_source = 'builtin'; \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500) \
         INSERT INTO blocked_domain (domain, blocked_at) \
         SELECT 'blocked-' || i || '-a-rather-long-name-that-fills-the-pipe.example', 1700000000000000 FROM n;",
    );
    store
}

/// Runs `cmd` into a pipe whose reader reads one byte, then goes away.
fn into_pipe_closed_after_one_byte(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    stdout.read_exact(&mut one).unwrap();
    drop(stdout);
    child.wait_with_output().unwrap()
}

/// Runs `cmd` into a pipe whose reader is gone before it starts.
fn into_closed_pipe(cmd: &mut Command) -> Output {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The end of the output, taken calmly: exit 0, no panic, no error message.
fn assert_quiet_end(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success()
            && !err.contains("panicked")
            && !err.contains("Broken pipe")
            && !err.contains("error"),
        "{what}: {:?}, stderr: {err}",
        out.status
    );
}

#[test]
fn every_listing_command_ends_quietly_when_its_reader_goes_away() {
    let db = TempDb::new();
    let store = big_history(&db);
    let settings = db.dir.path().join("no-settings.json");
    let domains: Vec<String> = (0..2_000).map(site).collect();
    let listings: Vec<Vec<String>> = [
        vec!["history", "--limit", "3000"],
        vec!["history", "--limit", "3000", "--ids"],
        vec!["history", "--limit", "3000", "--json"],
        vec!["history", "--limit", "3000", "--search", "website"],
        vec!["websites"],
        vec!["websites", "--json"],
        vec!["time"],
        vec!["time", "--json"],
        vec!["failed"],
        vec!["failed", "--json"],
        vec!["review", "--limit", "1000"],
        vec!["review", "--limit", "1000", "--json"],
        vec!["blocked"],
        vec!["blocked", "--json"],
    ]
    .iter()
    .map(|a| a.iter().map(|s| (*s).to_owned()).collect())
    .chain([["classify".to_owned()].into_iter().chain(domains).collect()])
    .collect();
    for args in &listings {
        let what = args[..args.len().min(4)].join(" ");
        let command = || {
            let mut c = cli(&db.path);
            c.arg("--settings")
                .arg(&settings)
                .env_remove("SITETRAIL_BASE_URL")
                .args(args);
            c
        };
        // The whole output is well over a pipe's 64 KiB buffer, so the command is still writing
        // when its reader leaves.
        let full = command().output().unwrap();
        assert!(
            full.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&full.stderr)
        );
        assert!(
            full.stdout.len() > 96 * 1024,
            "{what} printed only {} bytes",
            full.stdout.len()
        );
        assert_quiet_end(&into_pipe_closed_after_one_byte(&mut command()), &what);
        assert_quiet_end(&into_closed_pipe(&mut command()), &what);
    }
    // Short listings too, into a pipe closed before they write.
    for args in [
        vec!["status"],
        vec!["status", "--json"],
        vec!["categories"],
        vec!["categories", "--json"],
        vec!["time", "--by", "category"],
        vec!["time", "--by", "day"],
        vec!["--help"],
        vec!["history", "--help"],
    ] {
        assert_quiet_end(&into_closed_pipe(cli(&db.path).args(&args)), &args.join(" "));
    }
    drop(store);
}

#[test]
fn commands_that_change_things_finish_their_work_before_a_closed_output_ends_them() {
    let db = TempDb::new();
    let store = db.open();
    record(&store, "https://a.example/", None, Timestamp::now());
    record(&store, "https://b.example/", None, Timestamp::now());
    record(&store, "https://gone.example/", None, Timestamp::now());
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    let n = |sql: &str| count(&store, sql);
    let home = tempfile::tempdir().unwrap();
    let profile = home.path().join("profile");
    let export = db.dir.path().join("h.csv");

    type Done<'a> = Box<dyn Fn() -> bool + 'a>;
    let steps: Vec<(Vec<&str>, Done)> = vec![
        (
            vec!["visit", "https://new.example/"],
            Box::new(|| n("website WHERE domain = 'new.example'") == 1),
        ),
        (
            vec!["categorize", "a.example", "news"],
            Box::new(|| n("website WHERE domain = 'a.example' AND category = 'news'") == 1),
        ),
        (
            vec!["review", "--confirm", "b.example"],
            Box::new(|| n("website WHERE domain = 'b.example' AND category_source = 'user'") == 1),
        ),
        (
            vec!["reclassify", "b.example"],
            Box::new(|| n("website WHERE domain = 'b.example' AND category_source = 'user'") == 0),
        ),
        (
            vec!["blocked", "add", "never.example"],
            Box::new(|| n("blocked_domain WHERE domain = 'never.example'") == 1),
        ),
        (
            vec!["forget", "website", "gone.example"],
            Box::new(|| n("website WHERE domain = 'gone.example'") == 0),
        ),
        (vec!["resume"], Box::new(|| true)),
        (vec!["retry", "--all-failed"], Box::new(|| true)),
    ];
    for (args, done) in &steps {
        assert_quiet_end(&into_closed_pipe(cli(&db.path).args(args)), &args.join(" "));
        assert!(done(), "{args:?} did not finish its work");
    }
    let out = into_closed_pipe(cli(&db.path).args(["export", "history", "-o"]).arg(&export));
    assert_quiet_end(&out, "export");
    assert!(std::fs::read_to_string(&export).unwrap().contains("a.example"));

    // The manifest case: linking writes the launcher and the manifest, whole, then prints.
    let out = into_closed_pipe(
        cli(&db.path)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .args([
                "browser-link",
                "install",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(&profile),
    );
    assert_quiet_end(&out, "browser-link install");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(profile.join("NativeMessagingHosts/app.sitetrail.host.json")).unwrap(),
    )
    .unwrap();
    assert!(std::path::Path::new(manifest["path"].as_str().unwrap()).is_file());
    for args in [
        vec!["browser-link", "status", "--json"],
        vec!["browser-link", "status"],
    ] {
        let out = into_closed_pipe(
            cli(&db.path)
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path().join(".config"))
                .args(&args),
        );
        assert_quiet_end(&out, &args.join(" "));
    }
}

/// The bytes of the database and its WAL, to check a secret is not in them.
fn file_bytes(db: &std::path::Path) -> Vec<u8> {
    let mut all = std::fs::read(db).unwrap();
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    all.extend(std::fs::read(wal).unwrap_or_default());
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// A URL typed into `visit` is stored as browsers store it: control characters percent-encoded
/// (so no output, human or JSON, ever holds them raw, nor a forged line), and without a user
/// name or password, which are never stored or printed.
#[test]
fn visit_stores_urls_percent_encoded_and_without_credentials() {
    let db = TempDb::new();
    let hostile = "https://evil.example/\x1b]0;owned\x07\x1b[2J\nforged line\r\u{9b}31m\u{202e}x";
    run_ok(cli(&db.path).args(["visit", hostile]));
    run_ok(cli(&db.path).args(["visit", "https://alice:hunter2@creds.example/inbox?a=1"]));
    run_ok(cli(&db.path).args(["visit", "http://bob@user-only.example/"]));

    let listed = json(&run_ok(cli(&db.path).args(["history", "--json"])));
    let mut urls: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["url"].as_str().unwrap())
        .collect();
    urls.sort_unstable();
    assert_eq!(
        urls,
        [
            "http://user-only.example/",
            "https://creds.example/inbox?a=1",
            "https://evil.example/%1B]0;owned%07%1B[2Jforged%20line%C2%9B31m%E2%80%AEx",
        ]
    );
    let export = db.path.with_extension("csv");
    run_ok(cli(&db.path).args(["export", "history", "-o"]).arg(&export));
    let exported = std::fs::read_to_string(&export).unwrap();
    for args in [
        vec!["history"],
        vec!["history", "--json"],
        vec!["websites"],
        vec!["time"],
    ] {
        let out = cli(&db.path).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' || c == '\u{202e}'),
            "{args:?}: {text:?}"
        );
        if args == ["history"] {
            assert_eq!(text.lines().count(), 4, "a header and three rows: {text}");
        }
        for secret in ["hunter2", "alice", "bob@"] {
            assert!(!text.contains(secret), "{args:?} printed {secret}: {text}");
            assert!(!exported.contains(secret), "the export holds {secret}");
        }
    }
    assert!(
        !contains(&file_bytes(&db.path), "hunter2"),
        "the password is in the database file"
    );
    // A refused URL's message does not repeat its password either.
    let out = cli(&db.path)
        .args(["visit", "https://carol:s3cret@[::1/"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("cannot record") && !err.contains("s3cret"), "{err}");
}
