//! The history view as a person lives in it: visits under day headings, a page visited several
//! times in a row shown once with a count, each site's icon, and forgetting a row and everything.

use std::time::Duration;

use chrono::{Local, TimeZone};
use serde_json::json;
use sitetrail::{NewVisit, Store, Timestamp};

use super::harness::Harness;
use super::{serial, AppDirs};

const WAIT: Duration = Duration::from_secs(30);

fn at(store: &Store, url: &str, title: &str, when: Timestamp) {
    store
        .record_visit(&NewVisit {
            url,
            title: Some(title),
            visited_at: when,
            source: "e2e",
            source_visit_id: None,
        })
        .expect("record visit");
}

/// Reads the row order until it is `expected` (or 30 s pass); returns the last read.
fn poll_order(order: &dyn Fn() -> serde_json::Value, expected: &serde_json::Value) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let got = order();
        if &got == expected || start.elapsed() > WAIT {
            return got;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Local midnight today, as a timestamp.
fn midnight() -> Timestamp {
    let today = Local::now().date_naive();
    let start = today.and_hms_opt(0, 0, 0).expect("midnight");
    let local = Local
        .from_local_datetime(&start)
        .earliest()
        .expect("local midnight");
    Timestamp(local.timestamp_micros())
}

#[test]
fn history_groups_visits_by_day_collapses_repeats_shows_icons_and_forgets() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let store = dirs.store();
    let day = Duration::from_secs(86_400);
    let noon = Duration::from_secs(12 * 3600);
    let today_start = midnight();
    // Today (never before midnight, even if the test runs just after it).
    let now = store.now();
    let recent = now
        .minus(Duration::from_secs(180))
        .max(today_start.plus(Duration::from_secs(5)));
    at(
        &store,
        "https://other.example/x",
        "Another page",
        recent.minus(Duration::from_secs(4)),
    );
    for s in [2, 1, 0] {
        // Three reloads of one page in a row: one row, "×3".
        at(
            &store,
            "https://news.example/today",
            "Today's news",
            recent.minus(Duration::from_secs(s)),
        );
    }
    at(
        &store,
        "https://yesterday.example/",
        "Yesterday's page",
        today_start.minus(noon),
    );
    let three_days_ago = today_start.minus(day * 3).plus(noon);
    at(&store, "https://old.example/", "An older page", three_days_ago);
    // An icon, as an import from the browser's icon file would store it.
    let site = store.website("news.example").expect("website");
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0\x90wS\xde\0\0\0\x0cIDATx\x9cc\xf8\xcf\xc0\0\0\x03\x01\x01\0\xc9\xfe\x92\xef\0\0\0\0IEND\xaeB`\x82";
    store
        .write(None, |tx| {
            sitetrail::favicon::insert_favicon_in(tx, site.id, "image/png", png, None, now)
        })
        .expect("favicon");
    drop(store);

    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.click("#tab-history");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 4).then_some(()));
    let headings = h.exec(
        "return [...document.querySelectorAll('#h-rows tr.day')].map(r => r.innerText.trim())",
        json!([]),
    );
    let expected_old = h.exec(
        "return new Intl.DateTimeFormat(undefined, {weekday: 'long', day: 'numeric', month: 'long', year: 'numeric'}).format(new Date(arguments[0]))",
        json!([three_days_ago.as_micros() / 1000]),
    );
    assert_eq!(headings, json!(["Today", "Yesterday", expected_old]));
    // The rows under their headings, in order. (Waited for: the worker classifying the websites
    // right after the start redraws the list at the top, which empties it for a moment.)
    let expected = json!([
        "#",
        "news.example",
        "other.example",
        "#",
        "yesterday.example",
        "#",
        "old.example"
    ]);
    let order = || {
        h.exec(
            "return [...document.querySelectorAll('#h-rows tr')].map(r => r.classList.contains('day') ? '#' : r.dataset.domain)",
            json!([]),
        )
    };
    let got = poll_order(&order, &expected);
    assert_eq!(got, expected);
    let news = "#h-rows tr.visit[data-domain='news.example']";
    assert_eq!(h.text(&format!("{news} .visits")), "×3");
    // The icon, as a data: URL (nothing fetched); a site without one shows none.
    h.wait_for(WAIT, || {
        h.exec(
            "const i = document.querySelector(arguments[0]); return i && !i.hidden && i.src.startsWith('data:image/png;base64,') && i.complete && i.naturalWidth === 1",
            json!([format!("{news} img.fav")]),
        )
        .as_bool()
        .unwrap_or(false)
        .then_some(())
    });
    assert_eq!(
        h.exec(
            "return document.querySelector(arguments[0]).hidden",
            json!(["#h-rows tr.visit[data-domain='other.example'] img.fav"])
        ),
        true
    );
    h.screenshot("history-days.png");

    // Forget the collapsed row: its three visits go, and the website with them.
    // Its menu's "Forget these 3 visits…".
    h.click(&format!("{news} button.more"));
    assert_eq!(h.text("#rm-forget"), "Forget these 3 visits…");
    h.click("#rm-forget");
    h.wait_for(WAIT, || {
        (h.exec("return document.getElementById('forget-dialog').open", json!([])) == true).then_some(())
    });
    assert!(h.text("#fg-body").contains("These 3 visits"));
    h.screenshot("history-forget-row.png");
    h.click("#fg-confirm");
    h.wait_for(WAIT, || (h.count(news) == 0).then_some(()));
    assert!(
        dirs.store().website("news.example").is_err(),
        "its last visits were forgotten"
    );
    assert_eq!(dirs.store().visit_count().unwrap(), 3);
    assert_eq!(h.count("#h-rows tr.day"), 3, "Today keeps other.example");

    // Forget everything, after a confirmation.
    h.click("#h-forget");
    h.wait_for(WAIT, || {
        (h.exec("return document.getElementById('forget-dialog').open", json!([])) == true).then_some(())
    });
    h.click("#fg-body input[value='all']");
    h.screenshot("history-forget-all.png");
    h.click("#fg-confirm");
    h.wait_for(WAIT, || (h.count("#h-rows tr") == 0).then_some(()));
    h.wait_for(WAIT, || (h.text("#h-status") == "No visits match.").then_some(()));
    assert_eq!(dirs.store().visit_count().unwrap(), 0);
    h.assert_no_csp_violations();
}

/// The times shown in History for a visit at 21:57 on 4 November 2026 (local), with the app
/// started under `locale` (LC_ALL): the row's time, its full date and time, and its day heading.
fn times_shown_under(locale: &str) -> (String, String, String) {
    let dirs = AppDirs::create();
    let store = dirs.store();
    let when = Local
        .from_local_datetime(
            &chrono::NaiveDate::from_ymd_opt(2026, 11, 4)
                .unwrap()
                .and_hms_opt(21, 57, 0)
                .unwrap(),
        )
        .earliest()
        .unwrap();
    at(
        &store,
        "https://late.test/",
        "Late",
        Timestamp(when.timestamp_micros()),
    );
    drop(store);
    let mut env = dirs.env();
    env.push(("HOME", dirs.dir.path().display().to_string()));
    env.push(("LC_ALL", locale.to_owned()));
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    h.click("#tab-history");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 1).then_some(()));
    let shown = h.exec(
        "const r = document.querySelector('#h-rows tr.visit'); const heads = [...document.querySelectorAll('#h-rows tr')].map((t) => t.innerText.trim()).filter((t) => t && !t.includes('late.test')); return [r.querySelector('.at').textContent, r.querySelector('td.time').title, heads[0] || '']",
        json!([]),
    );
    h.quit();
    serde_json::from_value(shown).unwrap()
}

#[test]
fn dates_and_times_follow_the_systems_locale_and_clock() {
    let _lock = serial();
    // German: a 24-hour clock, the day before the month.
    let (time, full, heading) = times_shown_under("de_DE.UTF-8");
    assert_eq!(time, "21:57");
    assert_eq!(full, "04.11.2026, 21:57");
    assert!(heading.contains("4. November 2026"), "{heading}");
    // US English: its own 12-hour clock.
    let (time, full, _) = times_shown_under("en_US.UTF-8");
    assert!(time.starts_with("9:57") && time.ends_with("PM"), "{time}");
    assert!(full.starts_with("Nov 4, 2026"), "{full}");
}
