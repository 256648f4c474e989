//! The rough edges of issue 28, each held in the real window: history rows of one line with the
//! actions behind a menu (a dozen rows at 800×600), the website's page a click away from a row and
//! from a visit's details, a visit's source named as people say it, a grouped row's time as a
//! range, a selection that never moves the table, no native tooltip over a modal dialog.

use std::time::Duration;

use serde_json::json;
use sitetrail::import::{default_source, Browser};
use sitetrail::{NewVisit, Store};

use super::harness::Harness;
use super::rows::{active_id, settled_history_with, start, visible, ENTER};
use super::{serial, visit, AppDirs};

const WAIT: Duration = Duration::from_secs(60);
/// WebDriver's key code for the down arrow.
const DOWN: &str = "\u{E015}";

/// Records a visit from `source` `minutes_ago` minutes ago.
fn visit_from(store: &Store, url: &str, title: &str, source: &str, minutes_ago: u64) {
    store
        .record_visit(&NewVisit {
            url,
            title: Some(title),
            visited_at: store.now().minus(Duration::from_secs(60 * minutes_ago)),
            source,
            source_visit_id: None,
        })
        .expect("record visit");
}

/// The history rows whose whole box is inside the list's visible part.
const ROWS_IN_VIEW: &str = r#"
  const view = document.getElementById('h-scroll').getBoundingClientRect();
  const head = document.querySelector('#h-table thead').getBoundingClientRect();
  return [...document.querySelectorAll('#h-rows tr.visit')].filter((r) => {
    const b = r.getBoundingClientRect();
    return b.top >= head.bottom - 1 && b.bottom <= Math.min(view.bottom, window.innerHeight) + 1;
  }).length;
"#;

fn first_row_top(h: &Harness) -> f64 {
    h.exec(
        "return document.querySelector('#h-rows tr.visit').getBoundingClientRect().top",
        json!([]),
    )
    .as_f64()
    .unwrap()
}

#[test]
fn history_rows_are_compact_lead_to_their_website_and_name_their_source() {
    let _lock = serial();
    let dirs = AppDirs::create();
    // A Chrome profile where the app looks for one (XDG_CONFIG_HOME), whose import id the visits
    // carry, as `sitetrail import --auto` stores them.
    let history = dirs.config.join("google-chrome/Default/History");
    std::fs::create_dir_all(history.parent().unwrap()).unwrap();
    std::fs::write(&history, b"not read by this test").unwrap();
    let chrome = default_source(Browser::Chrome, &history);
    {
        let store = dirs.store();
        for i in 0..14 {
            visit(
                &store,
                &format!("site{i:02}.test"),
                "",
                &format!("Page {i}"),
                30 + i,
            );
        }
        visit_from(&store, "https://imported.test/a", "From Chrome", &chrome, 20);
        visit_from(
            &store,
            "https://live.test/",
            "From the extension",
            "extension:firefox",
            15,
        );
        // Three reloads of one page: one row for three visits, 2 and 4 minutes apart.
        for m in [10, 8, 6] {
            visit_from(&store, "https://reload.test/p", "Reloaded", "e2e", m);
        }
    }
    let mut h = start(&dirs);
    assert!(h.resize(800, 600), "the driver resizes the window");
    h.click("#tab-history");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 17).then_some(()));
    h.screenshot("history-compact-800x600.png");
    let in_view = h.exec(ROWS_IN_VIEW, json!([])).as_u64().unwrap();
    assert!(in_view >= 10, "{in_view} rows in view at 800x600");

    // The grouped row says it stands for a span of visits, and the details say which is shown.
    let reload = "#h-rows tr.visit[data-domain='reload.test']";
    assert_eq!(h.text(&format!("{reload} .visits")), "×3");
    let at = h.text(&format!("{reload} .at"));
    assert!(at.contains('–'), "a range of times: {at}");
    h.click(&format!("{reload} .t"));
    h.wait_for(WAIT, || visible(&h, "#visit-dialog").then_some(()));
    let details = h.text("#vd-body");
    assert!(details.contains("the latest of 3 visits in a row"), "{details}");
    h.click("#vd-close");

    // A visit's source as people say it, never its id.
    for (domain, said) in [
        ("imported.test", "Google Chrome, profile Default"),
        ("live.test", "the Sitetrail extension in Firefox"),
    ] {
        h.click(&format!("#h-rows tr.visit[data-domain='{domain}'] .t"));
        h.wait_for(WAIT, || visible(&h, "#visit-dialog").then_some(()));
        h.wait_for(WAIT, || (h.text("#vd-source") == said).then_some(()));
        assert!(!h.text("#vd-body").contains(&chrome));
        // "Website" in the details opens the website's page.
        h.click("#vd-website");
        h.wait_for(WAIT, || {
            (h.exec(
                "return document.getElementById('view-website').dataset.domain",
                json!([]),
            ) == domain)
                .then_some(())
        });
        assert!(!visible(&h, "#visit-dialog"));
        h.click("#w-back");
        h.wait_for(WAIT, || visible(&h, "#view-history").then_some(()));
    }
    // The domain in a row opens the website's page too.
    h.click("#h-rows tr.visit[data-domain='site03.test'] button.dn");
    h.wait_for(WAIT, || {
        (h.try_text("#w-title").as_deref() == Some("site03.test") && visible(&h, "#view-website"))
            .then_some(())
    });
    h.click("#w-back");
    h.wait_for(WAIT, || visible(&h, "#view-history").then_some(()));

    // The actions are behind the row's menu, by keyboard too: Enter on its button opens it with
    // the focus on the first item, arrows move, Enter acts, Escape closes back to the button.
    let more = "#h-rows tr.visit[data-domain='site05.test'] button.more";
    h.exec("document.querySelector(arguments[0]).focus()", json!([more]));
    h.press_key(ENTER);
    h.wait_for(WAIT, || {
        (visible(&h, "#row-menu") && active_id(&h) == "rm-website").then_some(())
    });
    h.screenshot("history-row-menu.png");
    h.press_key("\u{E00C}"); // Escape
    h.wait_for(WAIT, || (!visible(&h, "#row-menu")).then_some(()));
    assert_eq!(
        h.exec(
            "return document.activeElement.matches(arguments[0])",
            json!([more])
        ),
        true,
        "the focus is back on the menu's button"
    );
    h.press_key(ENTER);
    h.wait_for(WAIT, || (active_id(&h) == "rm-website").then_some(()));
    h.press_key(DOWN);
    assert_eq!(active_id(&h), "rm-edit");
    h.press_key(ENTER);
    h.wait_for(WAIT, || visible(&h, "#cat-dialog").then_some(()));
    assert_eq!(h.text("#cat-domain"), "site05.test");
    h.click("#cat-cancel");

    // Selecting rows never moves the table under the pointer.
    let before = first_row_top(&h);
    h.click("#h-rows tr.visit[data-domain='site01.test'] input.sel");
    h.wait_for(WAIT, || visible(&h, "#h-selbar").then_some(()));
    h.screenshot("history-selected-800x600.png");
    assert_eq!(
        first_row_top(&h),
        before,
        "the first row moved when a row was selected"
    );
    h.click("#h-sel-clear");
    h.wait_for(WAIT, || (!visible(&h, "#h-selbar")).then_some(()));
    assert_eq!(first_row_top(&h), before);
    h.assert_no_csp_violations();
    h.quit();
}

/// Elements outside open dialogs that carry a native tooltip.
const TITLES_OUTSIDE: &str =
    "return [...document.querySelectorAll('[title]')].filter((e) => !e.closest('dialog')).length";

#[test]
fn visits_arriving_under_an_open_dialog_reload_the_history_once_it_closes() {
    let _lock = serial();
    let dirs = AppDirs::create();
    visit(&dirs.store(), "docs.test", "guide", "The guide", 5);
    let mut h = start(&dirs);
    settled_history_with(&h, 1);
    h.exec("document.querySelector('#h-rows tr.visit').focus()", json!([]));
    h.press_key(ENTER);
    h.wait_for(WAIT, || visible(&h, "#visit-dialog").then_some(()));
    // Another process records a visit: its change reaches the app within a second, and the list
    // under the dialog is left as it is (its rows keep their tooltips lent to the dialog).
    visit(&dirs.store(), "arrived.test", "", "Arrived", 1);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(h.count("#h-rows tr.visit"), 1, "no reload under the dialog");
    assert_eq!(h.exec(TITLES_OUTSIDE, json!([])), 0, "a title outside the modal");
    // Closed: the change is looked at again, and the list shows the new visit.
    h.click("#vd-close");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 2).then_some(()));
    h.quit();
}

#[test]
fn no_native_tooltip_outlives_the_opening_of_a_modal() {
    let _lock = serial();
    let dirs = AppDirs::create();
    visit(&dirs.store(), "docs.test", "guide", "The guide", 5);
    let mut h = start(&dirs);
    h.click("#tab-history");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 1).then_some(()));
    let before = h.exec(TITLES_OUTSIDE, json!([])).as_u64().unwrap();
    assert!(before > 0, "the page has titles to lend");
    // The pointer rests on a row with a tooltip, and a keypress opens the details over it. The
    // history may still be reloading its rows once (the new website's category landing just
    // after the start): a row replaced before the key arrives has lost the focus, so the key is
    // pressed on the row again, up to three times, never once the dialog is open.
    let opened = (0..3).any(|_| {
        h.exec("document.querySelector('#h-rows tr.visit').focus()", json!([]));
        h.press_key(ENTER);
        h.try_wait_for(Duration::from_secs(3), || {
            visible(&h, "#visit-dialog").then_some(())
        })
        .is_some()
    });
    assert!(opened, "Enter on a row opens its details");
    assert_eq!(h.exec(TITLES_OUTSIDE, json!([])), 0, "a title outside the modal");
    h.click("#vd-forget");
    h.wait_for(WAIT, || visible(&h, "#forget-dialog").then_some(()));
    assert_eq!(h.exec(TITLES_OUTSIDE, json!([])), 0, "a title outside the modal");
    h.click("#fg-cancel");
    h.wait_for(WAIT, || (!visible(&h, "#forget-dialog")).then_some(()));
    assert_eq!(
        h.exec(TITLES_OUTSIDE, json!([])).as_u64().unwrap(),
        before,
        "the titles are back"
    );
    h.assert_no_csp_violations();
    h.quit();
}

/// Moves the pointer onto the element matching `css`, as a mouse would (trusted events).
fn hover(h: &Harness, css: &str) {
    let id = h.find(css);
    h.post(
        "actions",
        json!({"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "duration": 0, "origin": {"element-6066-11e4-a52e-4f735466cecf": id}, "x": 0, "y": 0},
        ]}]}),
    );
}

/// The app's tooltip: its text while shown, else None.
fn tip(h: &Harness) -> Option<String> {
    h.exec(
        "const t = document.getElementById('tip'); return t.hidden ? null : t.textContent",
        json!([]),
    )
    .as_str()
    .map(str::to_owned)
}

#[test]
fn the_overview_shows_cut_names_whole_zooms_the_day_and_keeps_the_donut_clear() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let long = "a-very-long-subdomain-name-for-testing.with-many-parts.example-of-a-long-domain.test";
    {
        let store = dirs.store();
        // Five visits within twelve minutes today (never before midnight).
        let first = store
            .now()
            .minus(Duration::from_secs(12 * 60))
            .max(super::overview::midnight().plus(Duration::from_secs(60)));
        for (i, domain) in [long, "dev.test", long, "dev.test", "news.test"]
            .iter()
            .enumerate()
        {
            let when = first.plus(Duration::from_secs(120 * i as u64));
            super::overview::seed(
                &store,
                &format!("https://{domain}/{i}"),
                when,
                Some(100_000),
                None,
            );
        }
        store
            .set_user_category(long, sitetrail::Category::DevTech)
            .unwrap();
        store
            .set_user_category("dev.test", sitetrail::Category::DevTech)
            .unwrap();
    }
    let mut h = start(&dirs);
    assert!(h.resize(800, 600));
    h.wait_for(WAIT, || (h.count("#timeline rect.block") == 5).then_some(()));
    h.wait_for(WAIT, || (h.count("#top-time li[data-domain]") == 3).then_some(()));
    h.exec(
        "document.getElementById('timeline-card').scrollIntoView()",
        json!([]),
    );
    h.screenshot("overview-zoomed-timeline-800x600.png");

    // The day's timeline spans its visits: twelve minutes fill most of the width.
    let share = h
        .exec(
            "const svg = document.querySelector('#timeline svg'); const w = svg.width.baseVal.value - 16;\
             const b = [...svg.querySelectorAll('rect.block')].map((r) => r.getBBox());\
             return (Math.max(...b.map((r) => r.x + r.width)) - Math.min(...b.map((r) => r.x))) / w",
            json!([]),
        )
        .as_f64()
        .unwrap();
    assert!(share > 0.5, "the visits take {share:.2} of the timeline's width");
    // Its time labels never overlap (12-hour labels are wide).
    let apart = h.exec(
        "const b = [...document.querySelectorAll('#timeline text.tick')].map((t) => t.getBBox());\
         return b.length > 1 && b.slice(1).every((r, i) => r.x >= b[i].x + b[i].width + 4)",
        json!([]),
    );
    assert_eq!(apart, true, "the timeline's labels overlap or are missing");

    // A domain and a category name the window cuts show whole on focus and on hover.
    let domain = format!("#top-time li[data-domain='{long}'] button.d");
    let cut = "return (e => e.scrollWidth > e.clientWidth + 1)(document.querySelector(arguments[0]))";
    assert_eq!(
        h.exec(cut, json!([domain])),
        true,
        "the long domain is cut at 800x600"
    );
    h.exec("document.querySelector(arguments[0]).focus()", json!([domain]));
    h.wait_for(WAIT, || (tip(&h).as_deref() == Some(long)).then_some(()));
    h.screenshot("overview-tip-800x600.png");
    h.exec("document.activeElement.blur()", json!([]));
    h.wait_for(WAIT, || tip(&h).is_none().then_some(()));
    hover(&h, &domain);
    h.wait_for(WAIT, || (tip(&h).as_deref() == Some(long)).then_some(()));
    // Two columns (from 900 px on) leave the top websites' category names little room.
    assert!(h.resize(1000, 700));
    let category = format!("#top-time li[data-domain='{long}'] button.cat-link");
    h.wait_for(WAIT, || (h.exec(cut, json!([category])) == true).then_some(()));
    h.exec("document.querySelector(arguments[0]).focus()", json!([category]));
    h.wait_for(WAIT, || {
        (tip(&h).as_deref() == Some("Development & technology")).then_some(())
    });
    // A name that fits shows no tip.
    h.exec(
        "document.querySelector(\"#top-time li[data-domain='news.test'] button.d\").focus()",
        json!([]),
    );
    h.wait_for(WAIT, || tip(&h).is_none().then_some(()));

    // Nothing ever failed: no Failed tab. Once a website fails for good, the tab is there.
    assert!(!visible(&h, "#tab-failed"));
    h.quit();
    super::seed_failed(&dirs.store(), "qzbroken.example", "HTTP 503 from the provider", 3);
    let yesterday_noon = super::overview::midnight().minus(Duration::from_secs(12 * 3600));
    // Estimates are of at most 10 minutes a visit: fifteen of 9.4 minutes.
    for i in 0..15u64 {
        let when = yesterday_noon.plus(Duration::from_secs(600 * i));
        super::overview::seed(
            &dirs.store(),
            &format!("https://long.test/{i}"),
            when,
            None,
            Some(564_000),
        );
    }
    h.launch();
    h.wait_for(WAIT, || visible(&h, "#tab-failed").then_some(()));
    assert_eq!(h.text("#failed-badge"), "1");
    h.click("#tab-failed");
    h.wait_for(WAIT, || (h.count("#f-rows tr") == 1).then_some(()));

    // The donut's figure sits inside its hole, clear of the ring, however long: yesterday has
    // ≈ 2 h 21 min of imported time.
    h.click("#tab-overview");
    h.click("[data-period='yesterday']");
    h.wait_for(WAIT, || {
        (h.try_text("#hl-time").as_deref() == Some("≈ 2 h 21 min")).then_some(())
    });
    let clear = h
        .exec(
            "const svg = document.querySelector('#split-chart svg'); const t = svg.querySelector('text.centre').getBBox();\
             const c = svg.width.baseVal.value / 2; const r = Number(svg.dataset.inner);\
             const far = Math.max(...[[t.x, t.y], [t.x + t.width, t.y], [t.x, t.y + t.height], [t.x + t.width, t.y + t.height]]\
               .map(([x, y]) => Math.hypot(x - c, y - c)));\
             return [r - far, svg.querySelector('text.centre').textContent, [...svg.querySelectorAll('.slice')].map((p) => getComputedStyle(p).fill)]",
            json!([]),
        );
    assert!(
        clear[0].as_f64().unwrap() >= 12.0,
        "the donut's centre text crowds its ring: {clear}"
    );
    // One category: one ring, painted in its colour.
    let fills = clear[2].as_array().unwrap();
    assert_eq!(fills.len(), 1, "{clear}");
    assert_ne!(fills[0], "none", "the one slice is not painted: {clear}");

    h.screenshot("overview-donut-800x600.png");
    h.assert_no_csp_violations();
    h.quit();
}

/// The element's box against the window: whether all of it is in sight.
fn in_sight(h: &Harness, css: &str) -> bool {
    h.exec(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight",
        json!([css]),
    ) == true
}

/// Labels of the settings whose own text wraps, and fields whose placeholder is cut.
const CRAMPED: &str = r#"
  const wrapped = [];
  for (const label of document.querySelectorAll('#view-settings label')) {
    if (!label.getClientRects().length || label.closest('[hidden]')) continue;
    const text = [...label.childNodes].find((n) => n.nodeType === 3 && n.textContent.trim());
    if (!text) continue;
    const range = document.createRange();
    range.selectNodeContents(text);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    if (lines.size > 1) wrapped.push(text.textContent.trim());
  }
  const cut = [];
  const probe = document.createElement('span');
  probe.style.position = 'absolute';
  probe.style.visibility = 'hidden';
  probe.style.whiteSpace = 'pre';
  document.body.append(probe);
  for (const input of document.querySelectorAll('#view-settings input[placeholder]')) {
    if (!input.placeholder || !input.getClientRects().length || input.closest('[hidden]')) continue;
    const cs = getComputedStyle(input);
    probe.style.font = cs.font;
    probe.textContent = input.placeholder;
    const room = input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - (input.type === 'number' ? 18 : 0);
    if (probe.offsetWidth > room) cut.push(input.id + ': ' + input.placeholder);
  }
  probe.remove();
  return { wrapped, cut };
"#;

#[test]
fn settings_save_from_anywhere_take_seconds_and_fit_800x600() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let mut h = start(&dirs);
    assert!(h.resize(800, 600));
    h.click("#tab-settings");
    h.wait_for(WAIT, || visible(&h, "#s-provider").then_some(()));
    h.exec("document.getElementById('s-advanced').open = true", json!([]));
    // The one Save is in sight wherever the page is scrolled.
    for at in ["s-ext-title", "s-classifier", "s-advanced", "s-about-title"] {
        h.exec(
            "document.getElementById(arguments[0]).scrollIntoView()",
            json!([at]),
        );
        assert!(in_sight(&h, "#s-save"), "Save is out of sight at {at}");
    }
    h.screenshot("settings-savebar-800x600.png");
    // No label wraps, no placeholder is cut, with the built-in rules and with a remote provider.
    assert_eq!(
        h.exec(CRAMPED, json!([])),
        json!({"wrapped": [], "cut": []}),
        "built-in"
    );
    h.click("#s-provider option[value='openai']");
    h.exec(
        "document.querySelector('#s-provider').dispatchEvent(new Event('change'))",
        json!([]),
    );
    assert_eq!(
        h.exec(CRAMPED, json!([])),
        json!({"wrapped": [], "cut": []}),
        "openai"
    );
    h.click("#s-provider option[value='builtin']");
    h.exec(
        "document.querySelector('#s-provider').dispatchEvent(new Event('change'))",
        json!([]),
    );

    // Delays in seconds; the file keeps milliseconds.
    let label = h.exec(
        "return document.getElementById('s-fixed-delay-ms').closest('label').innerText",
        json!([]),
    );
    assert!(label.as_str().unwrap().contains("(seconds)"), "{label}");
    assert_eq!(
        h.exec(
            "return document.getElementById('s-fixed-delay-ms').value",
            json!([])
        ),
        "1",
        "the default of 1000 ms"
    );
    h.type_into("#s-fixed-delay-ms", "2.5");
    h.type_into("#s-request-timeout-ms", "90");
    h.click("#s-save");
    h.wait_for(WAIT, || {
        h.text("#s-save-status").starts_with("Saved").then_some(())
    });
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config.join("sitetrail/settings.json")).expect("settings file"),
    )
    .unwrap();
    assert_eq!(saved["fixed_delay_ms"], 2500, "{saved}");
    assert_eq!(saved["request_timeout_ms"], 90_000, "{saved}");

    // About: one line per data file; the licence texts behind "Licences".
    let about = h.text("#s-open-data");
    assert!(about.contains("CC BY-SA 4.0"), "{about}");
    assert!(
        !about.contains("Fabrice Prigent"),
        "the attributions are collapsed: {about}"
    );
    h.click("#s-licences summary");
    h.wait_for(WAIT, || {
        h.text("#s-open-data").contains("Fabrice Prigent").then_some(())
    });
    h.assert_no_csp_violations();
    h.quit();
}
