//! Time spent in the real window: the overview's stacked bars per day (a day with nothing
//! recorded says so, a day with only untimed visits says that), the top websites by time, the
//! time of each history row, and the browser-extension section of the settings.

use std::time::Duration;

use sitetrail::{Category, NewVisit, Store};

use super::harness::Harness;
use super::{serial, AppDirs};

const WAIT: Duration = Duration::from_secs(60);

fn timed(store: &Store, domain: &str, hours_ago: u64, active_ms: Option<i64>) {
    let rec = store
        .record_visit(&NewVisit {
            url: &format!("https://{domain}/"),
            title: Some(domain),
            visited_at: store.now().minus(Duration::from_secs(hours_ago * 3600 + 60)),
            source: "extension:chromium",
            source_visit_id: Some(&format!("{domain}-{hours_ago}")),
        })
        .expect("record visit");
    if let Some(ms) = active_ms {
        let id = rec.visit_id.expect("visit id");
        store
            .write(None, |tx| {
                sitetrail::time_spent::set_active_ms_in(tx, id, ms, store.now())
            })
            .expect("set time");
    }
}

#[test]
fn the_overview_charts_time_per_category_per_day_and_history_rows_show_their_time() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let store = dirs.store();
        timed(&store, "reading.test", 0, Some(150_000));
        timed(&store, "mail.test", 0, Some(40_000));
        timed(&store, "reading.test", 48, Some(600_000));
        timed(&store, "imported.test", 72, None);
        store.set_user_category("reading.test", Category::News).unwrap();
        store
            .set_user_category("mail.test", Category::Communication)
            .unwrap();
    }
    let mut env = dirs.env();
    env.push(("HOME", dirs.dir.path().display().to_string()));
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    let states = |h: &Harness, state: &str| h.count(&format!("#time-chart g.day[data-state='{state}']"));
    h.wait_for(WAIT, || (states(&h, "timed") == 2).then_some(()));
    assert_eq!(h.count("#time-chart g.day"), 7);
    assert_eq!(states(&h, "untimed"), 1, "three days ago: visits, no time");
    assert_eq!(states(&h, "nothing"), 4);
    assert!(
        h.text("#time-chart").contains("nothing recorded"),
        "empty days say so"
    );
    assert!(h.count("#time-chart rect.seg[data-category='news']") >= 2);
    let note = h.text("#time-note");
    assert!(note.contains("Nothing recorded on 4 of the 7 days"), "{note}");
    assert!(h.count("#time-legend .key") >= 2);
    h.screenshot("time-spent-7-days.png");
    h.click("[data-period='last30']");
    h.wait_for(WAIT, || (h.count("#time-chart g.day") == 30).then_some(()));
    h.wait_for(WAIT, || h.text("#top-time").contains("13 min").then_some(()));
    let top = h.text("#top-time");
    assert!(
        top.find("reading.test").unwrap() < top.find("mail.test").unwrap(),
        "{top}"
    );
    assert!(top.contains("13 min"), "2.5 + 10 minutes, rounded: {top}");
    h.screenshot("time-spent-30-days.png");

    h.click("#tab-history");
    h.wait_for(WAIT, || {
        let t: String = h
            .exec(
                "const s = document.querySelector(\"#h-rows tr[data-domain='mail.test'] .spent\"); return s ? s.textContent : ''",
                serde_json::json!([]),
            )
            .as_str()
            .unwrap_or("")
            .to_owned();
        (t == "40 s").then_some(())
    });
    h.screenshot("history-with-time.png");

    h.click("#tab-settings");
    h.wait_for(WAIT, || {
        (h.count("#s-ext-body li[data-browser]") == 6).then_some(())
    });
    assert!(h.text("#s-ext-body").contains("Load unpacked"));
    h.exec(
        "document.querySelector('#s-ext-title').scrollIntoView()",
        serde_json::json!([]),
    );
    h.screenshot("settings-extension.png");
    h.assert_no_csp_violations();
    h.quit();
}
