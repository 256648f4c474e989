//! The user-facing scenarios.

use std::time::Duration;

use serde_json::json;
use sitetrail::Category;

use super::fake_ai::FakeAi;
use super::harness::Harness;
use super::{seed_failed, serial, visit, AppDirs};

const WAIT: Duration = Duration::from_secs(30);

/// Failed panel: Retry one row; the worker, pointed at a fake OpenAI-compatible server, classifies
/// it; the row shows the category, live. The websites are ones the built-in rules are not sure
/// of (a certain one, like github.com, is answered without asking the provider).
#[test]
fn retry_in_the_failed_panel_shows_the_category_live() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let store = dirs.store();
    let gh = seed_failed(
        &store,
        "quietsite.example",
        "HTTP 503 from the provider (attempt 3)",
        3,
    );
    let wiki = seed_failed(&store, "en.wikipedia.org", "timed out after 30 s", 3);
    seed_failed(
        &store,
        "casino.example",
        "answer outside the taxonomy: \"betting\"",
        3,
    );
    visit(&store, "hackerlinks.example", "", "Hacker links", 1);
    drop(store);
    let fake = FakeAi::start(&[("quietsite.example", "dev_tech"), ("hackerlinks.example", "news")]);
    let mut env = dirs.env();
    env.push(("SITETRAIL_PROVIDER", "openai".into()));
    env.push(("SITETRAIL_BASE_URL", fake.base_url.clone()));

    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    h.wait_for(WAIT, || (h.text("#q-failed") == "3").then_some(()));
    h.screenshot("overview.png");

    h.click("#tab-failed");
    h.wait_for(WAIT, || (h.count("#f-rows tr") == 3).then_some(()));
    let row = format!("#f-rows tr[data-id='{gh}']");
    assert_eq!(h.text(&format!("{row} .attempts")), "3");
    assert!(h.text(&format!("{row} .err")).contains("HTTP 503"));
    // Until the AI answers, the website shows its provisional built-in category (the one the
    // app's local pass wrote), and says so.
    let keeps = h.wait_for(WAIT, || {
        let t = h.text(&format!("{row} .keeps"));
        t.contains("still has its provisional category: ").then_some(t)
    });
    let provisional = dirs.store().website("quietsite.example").expect("website");
    assert_eq!(
        provisional.category_source.map(sitetrail::CategorySource::as_str),
        Some("builtin")
    );
    let name = provisional.category.expect("a provisional category").name();
    assert!(
        keeps.contains(&format!("provisional category: {name} (built-in")),
        "{keeps:?} names {name}"
    );
    h.screenshot("failed.png");

    h.click(&format!("{row} button.retry"));
    let done = h.wait_for(WAIT, || {
        let t = h.text(&format!("{row} .status"));
        t.starts_with("Done").then_some(t)
    });
    assert_eq!(done, format!("Done: {}", Category::DevTech.name()));
    // The other rows are untouched and still offer Retry.
    assert_eq!(h.count(&format!("#f-rows tr[data-id='{wiki}'] button.retry")), 1);
    h.screenshot("failed-after-retry.png");
    h.assert_no_csp_violations();

    let site = dirs.store().website("quietsite.example").expect("website");
    assert_eq!(site.category.map(sitetrail::Category::id), Some("dev_tech"));
    assert_eq!(
        site.category_source.map(sitetrail::CategorySource::as_str),
        Some("ai"),
        "classified by the fake server"
    );
    assert!(fake.calls.load(std::sync::atomic::Ordering::SeqCst) >= 1);
}

/// History: newest first, infinite scroll, search and the category filter.
#[test]
fn history_search_and_category_filter() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let store = dirs.store();
    // 250 visits: more than two pages, so scrolling has to load more.
    for i in 0..240 {
        visit(
            &store,
            &format!("site{}.example", i % 40),
            &format!("p{i}"),
            &format!("Page {i}"),
            300 + i,
        );
    }
    visit(&store, "en.wikipedia.org", "wiki/SQLite", "SQLite - Wikipedia", 3);
    visit(
        &store,
        "github.com",
        "rust-lang/rust",
        "rust-lang/rust: Empowering everyone",
        2,
    );
    for (i, d) in ["chess.example", "puzzles.example"].iter().enumerate() {
        for k in 0..4 {
            visit(&store, d, &format!("game{k}"), "Play", 10 + i as i64 * 5 + k);
        }
        store.set_user_category(d, Category::Games).expect("categorize");
    }
    drop(store);

    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.click("#tab-history");
    // Read the first row in the same poll: the worker classifying the websites reloads a list
    // still at the top, which leaves it empty for a moment.
    h.wait_for(WAIT, || {
        (h.count("#h-rows tr.visit") == 100
            && h.try_text("#h-rows tr.visit .site .d").as_deref() == Some("github.com"))
        .then_some(())
    });
    h.screenshot("history.png");

    // Scrolling to the end loads the next keyset page. (Scrolled again while waiting: the worker
    // classifying the websites refreshes a list that is still at the top, which is meant.)
    h.wait_for(WAIT, || {
        h.exec(
            "const s = document.getElementById('h-scroll'); s.scrollTop = s.scrollHeight;",
            json!([]),
        );
        (h.count("#h-rows tr.visit") >= 200).then_some(())
    });

    h.type_into("#h-search", "wikipedia");
    h.wait_for(WAIT, || {
        (h.count("#h-rows tr.visit") == 1
            && h.try_text("#h-rows tr.visit .site .d").as_deref() == Some("en.wikipedia.org"))
        .then_some(())
    });
    h.screenshot("history-search.png");

    h.click("#h-clear");
    h.click("#h-category option[value='games']");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 8).then_some(()));
    let domains = h.exec(
        "return [...document.querySelectorAll('#h-rows tr.visit')].map(r => r.dataset.domain)",
        json!([]),
    );
    let domains: Vec<String> = serde_json::from_value(domains).unwrap();
    assert!(
        domains
            .iter()
            .all(|d| d == "chess.example" || d == "puzzles.example"),
        "{domains:?}"
    );
    assert!(h.text("#h-rows tr.visit td.c").contains("you"), "source shown");
    h.screenshot("history-games.png");

    // Edit: set the website's category from the dialog; every row of it follows.
    h.click("#h-rows tr[data-domain='puzzles.example'] button.more");
    h.click("#rm-edit");
    h.wait_for(WAIT, || {
        (h.exec("return document.getElementById('cat-dialog').open", json!([])) == true).then_some(())
    });
    h.click("#cat-select option[value='education']");
    h.screenshot("history-edit.png");
    h.click("#cat-save");
    // Saved as the user's choice: the rows show it at once, then the list (filtered on Games)
    // reloads after the commit's change event, without them.
    h.wait_for(WAIT, || {
        (h.count("#h-rows tr[data-domain='puzzles.example']") == 0).then_some(())
    });
    assert_eq!(h.count("#h-rows tr[data-domain='chess.example']"), 4);
    let site = dirs.store().website("puzzles.example").unwrap();
    assert_eq!(site.category.map(sitetrail::Category::id), Some("education"));
    assert_eq!(
        site.category_source.map(sitetrail::CategorySource::as_str),
        Some("user")
    );

    // The same view at 800×600 and at full HD.
    if h.resize(800, 600) {
        h.screenshot("history-800x600.png");
        h.click("#tab-overview");
        h.screenshot("overview-800x600.png");
        h.click("#tab-settings");
        h.screenshot("settings-800x600.png");
    }
    if h.resize(1920, 1080) {
        h.click("#tab-overview");
        h.screenshot("overview-1920x1080.png");
        h.click("#tab-history");
        h.screenshot("history-1920x1080.png");
    }
    h.assert_no_csp_violations();
}

/// Dark mode follows the system (`prefers-color-scheme`, from the GTK theme on Linux).
#[test]
fn dark_mode_follows_the_system_theme() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let store = dirs.store();
    seed_failed(&store, "broken.example", "HTTP 503", 5);
    visit(&store, "github.com", "", "GitHub", 1);
    drop(store);
    let mut env = dirs.env();
    env.push(("GTK_THEME", "Adwaita:dark".into()));
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    assert_eq!(
        h.exec(
            "return matchMedia('(prefers-color-scheme: dark)').matches",
            json!([])
        ),
        true,
        "the dark GTK theme reaches the page"
    );
    let bg = h.exec(
        "return getComputedStyle(document.documentElement).backgroundColor",
        json!([]),
    );
    assert_eq!(bg, "rgb(20, 23, 28)", "the dark palette is used");
    h.wait_for(WAIT, || (h.text("#q-failed") == "1").then_some(()));
    h.screenshot("overview-dark.png");
    h.click("#tab-failed");
    h.wait_for(WAIT, || (h.count("#f-rows tr") == 1).then_some(()));
    h.screenshot("failed-dark.png");
    h.assert_no_csp_violations();
}
