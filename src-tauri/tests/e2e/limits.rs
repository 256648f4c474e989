//! Limits and goals, the weekly report, focus sessions and reminders in the real app: a limit set
//! from the overview shows its progress (and one set elsewhere appears without a reload), the
//! weekly report shows `sitetrail report --week`'s numbers on the same database, a focus session
//! starts and stops, and the reminders' one question saves the answer.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};
use sitetrail::limits::{Kind, Period, Target};
use sitetrail::{Category, NewVisit, Store};

use super::harness::{Harness, APP};
use super::{serial, AppDirs};

const WAIT: Duration = Duration::from_secs(30);

/// Records a visit to `url` `days_ago` days ago with `minutes` of measured active time (the
/// extension's: only that counts toward a limit).
fn measured_visit(store: &Store, url: &str, minutes: i64, days_ago: u64) {
    let rec = store
        .record_visit(&NewVisit {
            url,
            title: Some("page"),
            visited_at: store.now().minus(Duration::from_secs(days_ago * 86_400)),
            source: "extension",
            source_visit_id: None,
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    store
        .write(None, |tx| {
            sitetrail::time_spent::set_active_ms_in(tx, id, minutes * 60_000, store.now())
        })
        .unwrap();
}

/// Sets `<select>` `css` to `value` and tells the page, as picking it would.
fn choose(h: &Harness, css: &str, value: &str) {
    h.exec(
        "const s = document.querySelector(arguments[0]); s.value = arguments[1]; \
         s.dispatchEvent(new Event('change'));",
        json!([css, value]),
    );
}

fn shown(h: &Harness, css: &str) -> bool {
    h.exec(
        "const e = document.querySelector(arguments[0]); return !!e && !e.closest('[hidden]')",
        json!([css]),
    ) == true
}

fn attr(h: &Harness, css: &str, name: &str) -> Option<String> {
    h.exec(
        "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
        json!([css, name]),
    )
    .as_str()
    .map(str::to_owned)
}

#[test]
fn a_limit_set_from_the_overview_shows_its_progress_and_one_set_elsewhere_appears() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let s = dirs.store();
        measured_visit(&s, "https://www.youtube.com/watch", 40, 0);
    }
    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.wait_for(WAIT, || shown(&h, "#l-empty").then_some(()));
    h.click("#l-add");
    h.wait_for(WAIT, || shown(&h, "#ld-target").then_some(()));
    choose(&h, "#ld-target", "__site");
    assert!(shown(&h, "#ld-site"), "a website is typed in");
    h.type_into("#ld-site", "youtube.com");
    // A bare number is refused inline with the library's words; nothing is stored.
    h.type_into("#ld-duration", "90");
    h.click("#ld-save");
    let said = h.wait_for(WAIT, || shown(&h, "#ld-error").then(|| h.text("#ld-error")));
    assert!(said.contains("90m"), "{said}");
    assert!(dirs.store().limits().unwrap().is_empty(), "nothing stored");
    h.type_into("#ld-duration", "30m");
    h.click("#ld-save");
    let row = "#l-list li[data-target='youtube.com'][data-kind='max']";
    h.wait_for(WAIT, || (h.count(row) == 1).then_some(()));
    assert_eq!(
        h.exec("return document.querySelector('#limit-dialog').open", json!([])),
        false,
        "the dialog closed"
    );
    assert_eq!(attr(&h, row, "data-state").as_deref(), Some("over"));
    let text = h.text(row);
    assert!(
        text.contains("youtube.com")
            && text.contains("at most 30 min a day")
            && text.contains("40 min of 30 min")
            && text.contains("over"),
        "{text}"
    );
    let stored = dirs.store().limits().unwrap();
    assert_eq!((stored.len(), stored[0].minutes), (1, 30), "{stored:?}");
    h.screenshot("limits-overview.png");

    // The overview's week: each limit day by day, today's state on today's chip.
    h.click("#period-bar [data-period='this-week']");
    h.wait_for(WAIT, || {
        (attr(&h, "#limits-card", "data-view").as_deref() == Some("week")).then_some(())
    });
    let today = h
        .exec("return document.querySelector('#p-day').max", json!([]))
        .as_str()
        .unwrap()
        .to_owned();
    let chip = format!("{row} .days [data-day='{today}']");
    h.wait_for(WAIT, || (h.count(&chip) == 1).then_some(()));
    assert_eq!(attr(&h, &chip, "data-state").as_deref(), Some("over"));
    h.screenshot("limits-week.png");

    // A goal set in another process (the CLI, the popup, a sync) appears without a reload.
    dirs.store()
        .set_limit(&Target::Domain("youtube.com".into()), Period::Week, Kind::Min, 10)
        .unwrap();
    let goal = "#l-list li[data-target='youtube.com'][data-kind='min']";
    h.wait_for(WAIT, || (h.count(goal) == 1).then_some(()));
    assert_eq!(attr(&h, goal, "data-state").as_deref(), Some("met"));
    h.assert_no_csp_violations();
}

/// The `sitetrail` CLI of this build (built beside the app if it is not there yet).
fn cli() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            // Always asked: cargo does nothing if it is up to date, and a stale one would print
            // another build's numbers.
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "sitetrail", "--bin", "sitetrail"])
                .current_dir(&root)
                .status()
                .expect("run cargo build for the CLI");
            assert!(status.success(), "could not build the sitetrail CLI");
            PathBuf::from(APP).with_file_name("sitetrail")
        })
        .clone()
}

fn report(dirs: &AppDirs, format: &str) -> String {
    let out = Command::new(cli())
        .args(["report", "--week", "--format", format])
        .env("SITETRAIL_DB", &dirs.db)
        .env("XDG_CONFIG_HOME", &dirs.config)
        .env("NO_COLOR", "1")
        .output()
        .expect("run sitetrail report");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_weekly_report_shows_the_numbers_of_sitetrail_report() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let s = dirs.store();
        measured_visit(&s, "https://www.youtube.com/a", 95, 0);
        measured_visit(&s, "https://www.youtube.com/b", 30, 7);
        measured_visit(&s, "https://github.com/a", 42, 0);
        measured_visit(&s, "https://github.com/b", 125, 7);
        measured_visit(&s, "https://reddit.com/r", 12, 7);
        s.set_user_category("youtube.com", Category::VideoStreaming)
            .unwrap();
        s.set_user_category("github.com", Category::DevTech).unwrap();
        s.set_user_category("reddit.com", Category::Social).unwrap();
        let video = Target::Category(Category::VideoStreaming);
        s.set_limit(&video, Period::Day, Kind::Max, 60).unwrap();
        let dev = Target::Category(Category::DevTech);
        s.set_limit(&dev, Period::Week, Kind::Min, 120).unwrap();
    }
    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.click("#l-report");
    h.wait_for(WAIT, || (h.count("#rp-cat-rows tr") >= 3).then_some(()));
    let json: Value = serde_json::from_str(&report(&dirs, "json")).unwrap();
    let text = report(&dirs, "text");
    let cats = json["categories"].as_array().unwrap();
    assert_eq!(h.count("#rp-cat-rows tr"), cats.len(), "{json}");
    for c in cats {
        let id = c["category"].as_str().unwrap();
        let row = format!("#rp-cat-rows tr[data-category='{id}']");
        for (key, a) in [("this_week_ms", "data-this-ms"), ("last_week_ms", "data-last-ms")] {
            assert_eq!(
                attr(&h, &row, a).and_then(|v| v.parse::<i64>().ok()),
                c[key].as_i64(),
                "{id} {key}"
            );
        }
        // The words too: the CLI's table line of the category has the same durations and change.
        let name = c["name"].as_str().unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} not in {text}"));
        for cell in ["td.this", "td.last", "td.change"] {
            let shown = h.text(&format!("{row} {cell}"));
            assert!(line.contains(&shown), "{name}: {shown:?} not in {line:?}");
        }
    }
    for l in json["limits"].as_array().unwrap() {
        let row = format!(
            "#rp-limit-rows tr[data-target='{}'][data-kind='{}'][data-period='{}']",
            l["target"].as_str().unwrap(),
            l["kind"].as_str().unwrap(),
            l["period"].as_str().unwrap()
        );
        assert_eq!(attr(&h, &row, "data-kept"), Some(l["kept"].to_string()), "{row}");
        let periods = l["periods"].as_array().unwrap();
        assert_eq!(
            h.count(&format!("{row} td[data-state]")),
            periods.len(),
            "{row}: the days counted"
        );
        for p in periods {
            let day = format!("{row} td[data-day='{}']", p["first_day"].as_str().unwrap());
            assert_eq!(
                attr(&h, &day, "data-state"),
                p["state"].as_str().map(str::to_owned),
                "{day}"
            );
            assert_eq!(
                attr(&h, &day, "data-active-ms"),
                Some(p["active_ms"].to_string()),
                "{day}"
            );
        }
    }
    assert_eq!(
        h.count("#rp-limit-rows tr"),
        json["limits"].as_array().unwrap().len()
    );
    h.screenshot("weekly-report.png");
    // The week before, whole, and back to this one.
    let this_week = json["week_first_day"].as_str().unwrap();
    let before = json["previous_week_first_day"].as_str().unwrap();
    h.click("#rp-prev");
    h.wait_for(WAIT, || {
        (attr(&h, "#view-report", "data-week").as_deref() == Some(before)).then_some(())
    });
    h.wait_for(WAIT, || {
        (attr(&h, "#rp-cat-rows tr[data-category='dev_tech']", "data-this-ms").as_deref() == Some("7500000"))
            .then_some(())
    });
    h.click("#rp-next");
    h.wait_for(WAIT, || {
        (attr(&h, "#view-report", "data-week").as_deref() == Some(this_week)).then_some(())
    });
    assert_eq!(
        h.exec("return document.querySelector('#rp-next').disabled", json!([])),
        true
    );
    h.assert_no_csp_violations();
}

#[test]
fn a_focus_session_starts_and_stops_from_the_app() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.wait_for(WAIT, || shown(&h, "#l-focus").then_some(()));
    assert!(!shown(&h, "#focus-bar"), "no session yet");
    h.click("#l-focus");
    h.wait_for(WAIT, || shown(&h, "#fd-duration").then_some(()));
    // The duration is focused first, never a button.
    assert_eq!(
        h.exec("return document.activeElement.id", json!([])),
        "fd-duration"
    );
    h.type_into("#fd-duration", "forever");
    h.click("#fd-start");
    h.wait_for(WAIT, || shown(&h, "#fd-error").then_some(()));
    assert!(dirs.store().focus().unwrap().is_none(), "nothing started");
    h.type_into("#fd-duration", "25m");
    h.type_into("#fd-sites", "example.org");
    h.click("#fd-start");
    h.wait_for(WAIT, || shown(&h, "#focus-bar").then_some(()));
    let status = h.text("#focus-status");
    assert!(
        status.contains("Social networks") && status.contains("example.org") && status.contains("left"),
        "{status}"
    );
    let f = dirs.store().focus().unwrap().expect("a session runs");
    assert_eq!(f.blocks.len(), 4, "social, video, games and the website: {f:?}");
    h.screenshot("focus.png");
    h.click("#focus-stop");
    h.wait_for(WAIT, || (!shown(&h, "#focus-bar")).then_some(()));
    assert!(dirs.store().focus().unwrap().is_none(), "stopped");
    // One started elsewhere (the popup, another device) shows here.
    dirs.store()
        .start_focus(10, vec![Target::Category(Category::Games)])
        .unwrap();
    h.wait_for(WAIT, || shown(&h, "#focus-bar").then_some(()));
    assert!(h.text("#focus-status").contains("Games"));
}

#[test]
fn reminders_are_asked_for_once_and_the_answer_is_saved() {
    let _lock = serial();
    let dirs = AppDirs::create();
    dirs.store()
        .set_limit(&Target::Category(Category::Social), Period::Day, Kind::Max, 30)
        .unwrap();
    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.wait_for(WAIT, || shown(&h, "#l-ask").then_some(()));
    assert_eq!(
        dirs.store().stored_reminder_settings().unwrap(),
        None,
        "not on by default"
    );
    h.click("#l-ask-on");
    h.wait_for(WAIT, || (!shown(&h, "#l-ask")).then_some(()));
    let saved = dirs.store().reminder_settings().unwrap();
    assert!(saved.enabled, "{saved:?}");

    // Settings: the warning point and quiet hours.
    h.click("#tab-settings");
    h.wait_for(WAIT, || {
        (h.exec("return document.querySelector('#s-rem-on').checked", json!([])) == true).then_some(())
    });
    h.type_into("#s-rem-warn", "80");
    h.exec(
        "document.querySelector('#s-rem-from').value = '22:00';",
        json!([]),
    );
    h.click("#s-rem-save");
    // One end of the quiet hours only: refused inline, nothing saved.
    h.wait_for(WAIT, || shown(&h, "#s-rem-error").then_some(()));
    assert_eq!(dirs.store().reminder_settings().unwrap().warn_percent, None);
    h.exec(
        "document.querySelector('#s-rem-until').value = '07:00';",
        json!([]),
    );
    h.click("#s-rem-save");
    h.wait_for(WAIT, || {
        h.text("#s-rem-status").starts_with("Saved").then_some(())
    });
    let saved = dirs.store().reminder_settings().unwrap();
    assert_eq!(saved.warn_percent, Some(80));
    assert_eq!(
        saved
            .quiet
            .map(|(a, b)| format!("{}-{}", a.format("%H:%M"), b.format("%H:%M"))),
        Some("22:00-07:00".to_owned())
    );
    assert!(saved.enabled);
    h.screenshot("reminders-settings.png");

    // Asked once: after a restart the question does not come back.
    h.quit();
    h.launch();
    h.wait_for(WAIT, || (h.count("#l-list li") == 1).then_some(()));
    assert!(!shown(&h, "#l-ask"), "asked again");
}
