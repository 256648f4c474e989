//! "Where did my time go" in the real window: the overview's headline for a seeded day (its active
//! time, the change against yesterday, estimated time apart, the split by category with
//! percentages, the top websites by time with their category), the period navigation, each
//! category's one colour in every chart, on two renders and in both themes, the click-through from
//! a category to the history and from a website to its page, and the day timeline.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{Local, TimeZone};
use serde_json::{json, Value};
use sitetrail::{Category, NewVisit, Store, Timestamp};

use super::harness::Harness;
use super::{serial, AppDirs};

pub const WAIT: Duration = Duration::from_secs(60);
const MIN: i64 = 60_000;

/// Local midnight today.
pub(super) fn midnight() -> Timestamp {
    let start = Local::now().date_naive().and_hms_opt(0, 0, 0).expect("midnight");
    Timestamp(
        Local
            .from_local_datetime(&start)
            .earliest()
            .expect("local midnight")
            .timestamp_micros(),
    )
}

/// The `i`-th of `n` instants spread over the part of today already gone (never in the future,
/// never before midnight, in order).
fn today_at(store: &Store, i: i64, n: i64) -> Timestamp {
    let start = midnight();
    let span = store.now().0 - start.0;
    Timestamp(start.0 + span * (i + 1) / (n + 1))
}

/// Records a visit at `when` with its measured time (`Some(ms)`), an imported estimate
/// (`estimate`) or no time; returns its id.
pub(super) fn seed(
    store: &Store,
    url: &str,
    when: Timestamp,
    active: Option<i64>,
    estimate: Option<i64>,
) -> String {
    let rec = store
        .record_visit(&NewVisit {
            url,
            title: Some(&format!("Title of {url}")),
            visited_at: when,
            source: "e2e",
            source_visit_id: Some(url),
        })
        .expect("record visit");
    let id = rec.visit_id.expect("visit id");
    store
        .write(None, |tx| {
            if let Some(ms) = active {
                sitetrail::time_spent::set_active_ms_in(tx, id, ms, store.now())?;
            }
            if let Some(ms) = estimate {
                sitetrail::time_spent::set_estimated_ms_in(tx, id, ms, store.now())?;
            }
            Ok(())
        })
        .expect("set time");
    id.to_string()
}

/// Today: news 20 + 5 min, chat 10 min (35 min measured), an import estimated at 3 min, a visit
/// with no time; yesterday: news 10 min. Returns today's visit ids with their domain, in order.
fn seed_day(store: &Store) -> Vec<(String, &'static str)> {
    let n = 5;
    let today = vec![
        (
            seed(
                store,
                "https://news.test/a",
                today_at(store, 0, n),
                Some(20 * MIN),
                None,
            ),
            "news.test",
        ),
        (
            seed(
                store,
                "https://chat.test/",
                today_at(store, 1, n),
                Some(10 * MIN),
                None,
            ),
            "chat.test",
        ),
        (
            seed(
                store,
                "https://news.test/b",
                today_at(store, 2, n),
                Some(5 * MIN),
                None,
            ),
            "news.test",
        ),
        (
            seed(
                store,
                "https://imported.test/",
                today_at(store, 3, n),
                None,
                Some(3 * MIN),
            ),
            "imported.test",
        ),
        (
            seed(store, "https://untimed.test/", today_at(store, 4, n), None, None),
            "untimed.test",
        ),
    ];
    let noon_yesterday = midnight().minus(Duration::from_secs(12 * 3600));
    seed(
        store,
        "https://news.test/old",
        noon_yesterday,
        Some(10 * MIN),
        None,
    );
    store.set_user_category("news.test", Category::News).unwrap();
    store
        .set_user_category("chat.test", Category::Communication)
        .unwrap();
    store
        .set_user_category("imported.test", Category::Shopping)
        .unwrap();
    store.set_user_category("untimed.test", Category::Games).unwrap();
    today
}

/// A day that looks like a person's: the seeded day plus more websites in more categories, and
/// some time on the days before.
pub fn seed_realistic(store: &Store) {
    seed_day(store);
    let sites = [
        ("docs.rs", Category::DevTech, 14),
        ("github.com", Category::DevTech, 38),
        ("youtube.com", Category::VideoStreaming, 22),
        ("wikipedia.org", Category::SearchReference, 9),
        ("bank.test", Category::Finance, 3),
        ("music.test", Category::MusicAudio, 17),
    ];
    let n = sites.len() as i64 * 2;
    for (i, (domain, category, minutes)) in sites.iter().enumerate() {
        let i = i as i64;
        seed(
            store,
            &format!("https://{domain}/today"),
            today_at(store, 2 * i, n),
            Some(minutes * MIN),
            None,
        );
        for back in 1..6u64 {
            let when = midnight().minus(Duration::from_secs(back * 86_400 - 3_600 * (8 + i as u64)));
            seed(
                store,
                &format!("https://{domain}/{back}"),
                when,
                Some(minutes * MIN * (back as i64 % 3 + 1) / 2),
                None,
            );
        }
        store.set_user_category(domain, *category).unwrap();
    }
}

/// The category colours as ui/js/colours.js defines them (the one definition), lower-case.
fn defined_colours() -> BTreeMap<String, String> {
    let js = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/js/colours.js")).unwrap();
    let block = &js[js.find("CATEGORY_COLOURS = Object.freeze({").unwrap()..];
    let block = &block[..block.find("});").unwrap()];
    block
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            let v = v.trim().trim_end_matches(',').trim_matches('\'');
            v.starts_with('#')
                .then(|| (k.trim().to_owned(), v.to_lowercase()))
        })
        .collect()
}

/// Every category colour drawn in the page, per chart: `[chart, category, fill]`.
fn drawn_colours(h: &Harness) -> Vec<(String, String, String)> {
    let v = h.exec(
        r#"const out = [];
           const add = (chart, sel) => document.querySelectorAll(sel).forEach((n) => {
             const fill = n.getAttribute('fill') || n.getAttribute('stroke');
             const key = n.dataset.category || n.closest('[data-category]').dataset.category;
             out.push([chart, key, fill.toLowerCase()]);
           });
           add('donut', '#split-chart .slice');
           add('legend', '#split-legend [data-category] svg.swatch rect');
           add('days', '#time-chart rect.seg');
           add('timeline', '#timeline rect.block');
           add('top', '#top-time .cat-label svg.swatch rect');
           return out;"#,
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

fn start(dirs: &AppDirs, dark: bool) -> Harness {
    let mut env = dirs.env();
    env.push(("HOME", dirs.dir.path().display().to_string()));
    if dark {
        env.push(("GTK_THEME", "Adwaita:dark".into()));
    }
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    h
}

fn wait_text(h: &Harness, css: &str, want: &str) {
    h.wait_for(WAIT, || (h.try_text(css).as_deref() == Some(want)).then_some(()));
}

/// The text in the donut's centre (an SVG text: no innerText).
fn donut_centre(h: &Harness) -> String {
    h.exec(
        "const t = document.querySelector('#split-chart text.centre'); return t ? t.textContent : ''",
        json!([]),
    )
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

fn top(h: &Harness, css: &str) -> f64 {
    h.exec(
        "return document.querySelector(arguments[0]).getBoundingClientRect().top",
        json!([css]),
    )
    .as_f64()
    .unwrap()
}

#[test]
fn the_overview_headline_is_todays_active_time_by_category_against_yesterday() {
    let _lock = serial();
    let dirs = AppDirs::create();
    seed_day(&dirs.store());
    let mut h = start(&dirs, false);
    // The seeded day's time: 20 + 10 + 5 minutes measured and 3 estimated, one total marked ≈.
    wait_text(&h, "#hl-time", "≈ 38 min");
    assert_eq!(h.text("#p-label"), "Today");
    assert_eq!(h.text("#hl-title"), "Time spent, today");
    let change = h.text("#hl-change");
    assert!(
        change.contains("About 28 min more than yesterday (10 min)"),
        "{change}"
    );
    let est = h.text("#hl-estimated");
    assert!(
        est.contains("3 min of it (8 %) is estimated") && est.contains("35 min was measured"),
        "{est}"
    );
    let fallback = h.text("#hl-fallback");
    assert!(
        fallback.contains("5 visits, 1 of them without a known time"),
        "{fallback}"
    );
    // The split: the same total per category, with its share; the centre is the headline.
    let news = h.text("#split-legend li[data-category='news']");
    assert!(news.contains("25 min") && news.contains("66 %"), "{news}");
    let chat = h.text("#split-legend li[data-category='communication']");
    assert!(chat.contains("10 min") && chat.contains("26 %"), "{chat}");
    let shop = h.text("#split-legend li[data-category='shopping']");
    assert!(shop.contains("≈ 3 min") && shop.contains("8 %"), "{shop}");
    assert_eq!(h.count("#split-chart .slice"), 3, "the estimate is in the split");
    assert_eq!(donut_centre(&h), "≈ 38 min");
    // Top websites by time, with their category; no time, no place.
    let sites: Vec<String> = serde_json::from_value(h.exec(
        "return [...document.querySelectorAll('#top-time li')].map((li) => li.dataset.domain + ' ' + li.innerText.replace(/\\s+/g, ' ').trim())",
        json!([]),
    ))
    .unwrap();
    assert_eq!(sites.len(), 3, "{sites:?}");
    assert!(
        sites[0].starts_with("news.test") && sites[0].contains("News") && sites[0].contains("25 min"),
        "{sites:?}"
    );
    assert!(
        sites[1].starts_with("chat.test") && sites[1].contains("Email & chat"),
        "{sites:?}"
    );
    assert!(
        sites[2].starts_with("imported.test") && sites[2].contains("≈ 3 min"),
        "{sites:?}"
    );
    // The most visited list has every website, the untimed one too.
    assert_eq!(h.count("#top-sites li[data-domain]"), 4);
    // The queue is a line below the figures, not the headline.
    assert!(
        top(&h, "#q-pending") > top(&h, "#top-time"),
        "the queue comes after the figures"
    );
    assert!(h.text("#q-completed").parse::<u64>().is_ok());
    h.screenshot("overview-today.png");
    if h.resize(800, 600) {
        h.screenshot("overview-today-800x600.png");
    }
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn the_period_is_chosen_moved_and_kept_between_views() {
    let _lock = serial();
    let dirs = AppDirs::create();
    seed_day(&dirs.store());
    let mut h = start(&dirs, false);
    wait_text(&h, "#hl-time", "≈ 38 min");
    assert_eq!(
        h.exec("return document.querySelector('#p-next').disabled", json!([])),
        true,
        "no future"
    );
    h.click("[data-period='yesterday']");
    wait_text(&h, "#p-label", "Yesterday");
    wait_text(&h, "#hl-time", "10 min");
    assert!(h.text("#hl-change").contains("Nothing recorded the day before"));
    h.click("#p-prev");
    h.wait_for(WAIT, || (h.text("#hl-time") == "Nothing recorded").then_some(()));
    assert_ne!(h.text("#p-label"), "Yesterday", "a named day");
    h.click("#p-next");
    wait_text(&h, "#p-label", "Yesterday");
    h.click("#p-next");
    wait_text(&h, "#p-label", "Today");
    h.click("[data-period='last7']");
    wait_text(&h, "#p-label", "Last 7 days");
    wait_text(&h, "#hl-time", "≈ 48 min");
    assert_eq!(h.count("#time-chart g.day"), 7);
    assert!(
        h.text("#hl-change").contains("the 7 days before"),
        "{}",
        h.text("#hl-change")
    );
    h.click("[data-period='last30']");
    h.wait_for(WAIT, || (h.count("#time-chart g.day") == 30).then_some(()));
    h.screenshot("overview-30-days.png");
    // Kept while moving between views.
    h.click("#tab-history");
    h.click("#tab-overview");
    assert_eq!(h.text("#p-label"), "Last 30 days");
    // A day clicked in the chart becomes the period.
    let yesterday: String = serde_json::from_value(h.exec(
        "const g = [...document.querySelectorAll('#time-chart g.day')]; return g[g.length - 2].dataset.day",
        json!([]),
    ))
    .unwrap();
    h.exec(
        "document.querySelector(`#time-chart g.day[data-day='${arguments[0]}']`).dispatchEvent(new MouseEvent('click', {bubbles: true}))",
        json!([yesterday]),
    );
    wait_text(&h, "#p-label", "Yesterday");
    // A picked week.
    h.click("#p-week");
    h.exec(
        "const p = document.querySelector('#p-day'); p.value = arguments[0]; p.dispatchEvent(new Event('change'));",
        json!([yesterday]),
    );
    h.wait_for(WAIT, || {
        let l = h.text("#p-label");
        (l == "This week" || l == "Last week").then_some(())
    });
    h.assert_no_csp_violations();
    h.quit();
}

/// Renders the overview twice (today, another period, today again) and returns the colours drawn.
fn colours_of_two_renders(dark: bool) -> Vec<(String, String, String)> {
    let dirs = AppDirs::create();
    seed_day(&dirs.store());
    let mut h = start(&dirs, dark);
    wait_text(&h, "#hl-time", "≈ 38 min");
    h.wait_for(WAIT, || (h.count("#timeline rect.block") == 5).then_some(()));
    let first = drawn_colours(&h);
    h.click("[data-period='last7']");
    wait_text(&h, "#hl-time", "≈ 48 min");
    h.click("[data-period='today']");
    wait_text(&h, "#hl-time", "≈ 38 min");
    h.wait_for(WAIT, || (h.count("#timeline rect.block") == 5).then_some(()));
    let second = drawn_colours(&h);
    assert_eq!(first, second, "a category keeps its colour across renders");
    h.screenshot(if dark {
        "overview-today-dark.png"
    } else {
        "overview-today-light.png"
    });
    if dark && h.resize(800, 600) {
        h.screenshot("overview-today-dark-800x600.png");
    }
    h.assert_no_csp_violations();
    h.quit();
    first
}

#[test]
fn a_category_has_one_colour_in_every_chart_render_and_theme() {
    let _lock = serial();
    let defined = defined_colours();
    assert!(
        defined.len() > Category::ALL.len(),
        "every category and 'not classified yet'"
    );
    for c in Category::ALL {
        assert!(defined.contains_key(c.id()), "{} has no colour", c.id());
    }
    let mut distinct: Vec<&String> = defined.values().collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), defined.len(), "no two categories share a colour");

    let light = colours_of_two_renders(false);
    let dark = colours_of_two_renders(true);
    assert_eq!(light, dark, "the same colours in both themes");
    for chart in ["donut", "legend", "days", "timeline", "top"] {
        assert!(
            light.iter().any(|(c, _, _)| c == chart),
            "{chart} drew nothing: {light:?}"
        );
    }
    for (chart, key, fill) in &light {
        assert_eq!(Some(fill), defined.get(key), "{chart}: {key}");
    }
}

#[test]
fn a_category_opens_the_history_and_a_website_opens_its_page() {
    let _lock = serial();
    let dirs = AppDirs::create();
    seed_day(&dirs.store());
    let mut h = start(&dirs, false);
    wait_text(&h, "#hl-time", "≈ 38 min");
    // A category in the legend: History, filtered to it and to today.
    h.click("#split-legend li[data-category='news'] button.key");
    h.wait_for(WAIT, || {
        (h.exec(
            "return !document.querySelector('#view-history').hidden",
            json!([]),
        ) == true)
            .then_some(())
    });
    let filters = h.exec(
        "return [document.querySelector('#h-category').value, document.querySelector('#h-from').value, document.querySelector('#h-to').value]",
        json!([]),
    );
    let today = Local::now().date_naive().to_string();
    assert_eq!(filters, json!(["news", today, today]));
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 2).then_some(()));
    assert_eq!(
        h.count("#h-rows tr.visit[data-domain='news.test']"),
        2,
        "today's news only"
    );
    h.screenshot("history-from-category.png");

    // A slice of the donut does the same.
    h.click("#tab-overview");
    wait_text(&h, "#hl-time", "≈ 38 min");
    h.exec(
        "document.querySelector(\"#split-chart .slice[data-category='communication']\").dispatchEvent(new MouseEvent('click', {bubbles: true}))",
        json!([]),
    );
    h.wait_for(WAIT, || {
        (h.exec("return document.querySelector('#h-category').value", json!([])) == "communication"
            && h.count("#h-rows tr.visit") == 1)
            .then_some(())
    });

    // A website: its page, with its category, who set it, its time and visits.
    h.click("#tab-overview");
    h.click("#top-time li[data-domain='news.test'] button.d");
    wait_text(&h, "#w-title", "news.test");
    h.wait_for(WAIT, || (h.count("#w-rows tr.visit") == 3).then_some(()));
    assert!(h.text("#w-category").contains("News"));
    let how = h.text("#w-category-how");
    assert!(how.contains("Set by you") && how.contains("certain"), "{how}");
    let total = h.text("#w-total");
    assert!(total.contains("35 min") && total.contains("3 visits"), "{total}");
    assert_eq!(h.count("#w-chart g.day"), 30);
    h.screenshot("website-page.png");
    // Change its category from there.
    h.click("#w-edit");
    h.exec(
        "document.querySelector('#cat-select').value = 'education'",
        json!([]),
    );
    h.click("#cat-save");
    h.wait_for(WAIT, || h.text("#w-category").contains("Education").then_some(()));
    assert_eq!(
        dirs.store().website("news.test").unwrap().category,
        Some(Category::Education)
    );
    // Back to where it was opened from.
    h.click("#w-back");
    h.wait_for(WAIT, || {
        (h.exec(
            "return !document.querySelector('#view-overview').hidden",
            json!([]),
        ) == true)
            .then_some(())
    });
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn the_day_timeline_has_a_block_per_visit_and_opens_it_in_the_history() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let visits = seed_day(&dirs.store());
    let defined = defined_colours();
    let mut h = start(&dirs, false);
    wait_text(&h, "#hl-time", "≈ 38 min");
    h.wait_for(WAIT, || {
        (h.count("#timeline rect.block") == visits.len()).then_some(())
    });
    let blocks: Vec<(String, String, String, f64)> = serde_json::from_value(h.exec(
        "return [...document.querySelectorAll('#timeline rect.block')].map((b) => [b.dataset.visit, b.dataset.category, b.getAttribute('fill').toLowerCase(), b.getBBox().x])",
        json!([]),
    ))
    .unwrap();
    let category = |domain: &str| match domain {
        "news.test" => "news",
        "chat.test" => "communication",
        "imported.test" => "shopping",
        _ => "games",
    };
    for ((id, domain), (block_id, key, fill, _)) in visits.iter().zip(&blocks) {
        assert_eq!(id, block_id, "one block per visit, in time order");
        assert_eq!(key, category(domain));
        assert_eq!(Some(fill), defined.get(key), "{domain}");
    }
    assert!(
        blocks.windows(2).all(|w| w[0].3 <= w[1].3),
        "left to right in time"
    );
    // Longer visits are wider blocks.
    let width = |i: usize| -> f64 {
        h.exec(
            "return document.querySelectorAll('#timeline rect.block')[arguments[0]].getBBox().width",
            json!([i]),
        )
        .as_f64()
        .unwrap()
    };
    assert!(width(0) > width(1), "20 min is wider than 10 min");
    // Hover: site, title and duration.
    h.exec(
        "document.querySelectorAll('#timeline rect.block')[1].dispatchEvent(new MouseEvent('mouseenter', {clientX: 200, clientY: 200}))",
        json!([]),
    );
    let tip = h.text("#timeline-tip");
    assert!(
        tip.contains("chat.test") && tip.contains("Title of https://chat.test/") && tip.contains("10 min"),
        "{tip}"
    );
    h.screenshot("timeline-hover.png");
    // A click opens the visit in the history, marked.
    h.exec(
        "document.querySelectorAll('#timeline rect.block')[1].dispatchEvent(new MouseEvent('click', {bubbles: true}))",
        json!([]),
    );
    let marked: Value = h.wait_for(WAIT, || {
        let v = h.exec(
            "const r = document.querySelector('#h-rows tr.marked'); return r ? r.dataset.visit : null",
            json!([]),
        );
        (!v.is_null()).then_some(v)
    });
    assert_eq!(marked, json!(visits[1].0));
    h.screenshot("history-from-timeline.png");
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn a_few_measured_minutes_never_replace_the_estimated_time_of_imported_history() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let store = dirs.store();
        // Yesterday: an hour estimated from an imported history, on two websites.
        let noon_yesterday = midnight().minus(Duration::from_secs(12 * 3600));
        for i in 0..6u64 {
            let domain = if i % 2 == 0 { "docs.test" } else { "video.test" };
            seed(
                &store,
                &format!("https://{domain}/{i}"),
                noon_yesterday.plus(Duration::from_secs(i * 600)),
                None,
                Some(10 * MIN),
            );
        }
        // Today: the extension measured 3 minutes.
        seed(
            &store,
            "https://docs.test/now",
            today_at(&store, 0, 1),
            Some(3 * MIN),
            None,
        );
        store.set_user_category("docs.test", Category::DevTech).unwrap();
        store
            .set_user_category("video.test", Category::VideoStreaming)
            .unwrap();
    }
    let mut h = start(&dirs, false);
    // Today is measured; yesterday, estimated, is compared as time, marked ≈, not "nothing".
    wait_text(&h, "#hl-time", "3 min");
    let change = h.text("#hl-change");
    assert!(
        change.contains("About 57 min less than yesterday (≈ 1 h 00 min)"),
        "{change}"
    );
    assert!(!change.contains("Nothing"), "{change}");
    // The last 30 days: the hour and the 3 minutes, one total, mostly estimated and said so.
    h.click("[data-period='last30']");
    wait_text(&h, "#hl-time", "≈ 1 h 03 min");
    let est = h.text("#hl-estimated");
    assert!(
        est.contains("1 h 00 min of it (95 %) is estimated") && est.contains("3 min was measured"),
        "{est}"
    );
    // Every list on the screen is on the headline's basis.
    assert_eq!(donut_centre(&h), "≈ 1 h 03 min");
    let dev = h.text("#split-legend li[data-category='dev_tech']");
    assert!(dev.contains("≈ 33 min") && dev.contains("52 %"), "{dev}");
    let top = h.text("#top-time li[data-domain='docs.test']");
    assert!(top.contains("≈ 33 min"), "measured and estimated, marked: {top}");
    let video = h.text("#top-time li[data-domain='video.test']");
    assert!(video.contains("≈ 30 min"), "{video}");
    h.screenshot("overview-estimated-and-measured.png");
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn the_app_is_ready_once_todays_figures_are_drawn_and_logs_where_its_start_went() {
    let _lock = serial();
    let dirs = AppDirs::create();
    seed_day(&dirs.store());
    let h = start(&dirs, false);
    // `launch` waited for the page's ready flag: today's figures are drawn by then, every part of
    // the first view (the headline, the per-day chart, the day's timeline), nothing waited for.
    assert_eq!(h.text("#hl-time"), "≈ 38 min");
    assert!(h.count("#time-chart rect.seg") > 0, "the per-day chart is drawn");
    assert!(h.count("#timeline rect.block") > 0, "the day's timeline is drawn");
    // The page told the shell, which logged one line with the shell's and the page's milestones.
    let line = h.wait_for(WAIT, || {
        let log = std::fs::read_to_string(dirs.log()).unwrap_or_default();
        log.lines()
            .find(|l| l.contains("first view painted"))
            .map(str::to_owned)
    });
    for step in [
        "main ",
        "window created ",
        "first IPC ",
        "first overview query done ",
        "first answers ",
        "figures drawn ",
        "painted ",
        "painted at unix ms ",
    ] {
        assert!(line.contains(step), "{step:?} missing in: {line}");
    }
}
