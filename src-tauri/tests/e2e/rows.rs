//! The history as something to act on, in the real window: three selected rows forgotten in one
//! action after one confirmation that says how many; a row's details with "open in browser" (the
//! system's default browser: here one the test declares through the XDG files every desktop
//! reads) and "copy URL"; the keyboard (`/`, arrows, Enter, Delete); internationalised domains in
//! Unicode while search finds both forms; nothing overflowing its cell at 800×600, the default
//! size and full HD; the empty states.

use std::time::Duration;

use serde_json::json;

use super::harness::Harness;
use super::{serial, visit, AppDirs};

const WAIT: Duration = Duration::from_secs(60);

pub(super) fn start(dirs: &AppDirs) -> Harness {
    let mut env = dirs.env();
    env.push(("HOME", dirs.dir.path().display().to_string()));
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    h
}

pub(super) fn visible(h: &Harness, css: &str) -> bool {
    h.exec(
        "const e = document.querySelector(arguments[0]); return !!e && e.getClientRects().length > 0 && !e.closest('[hidden]')",
        json!([css]),
    ) == true
}

/// A click with modifier keys, as the page sees it (WebDriver's element click has none).
fn click_with(h: &Harness, css: &str, shift: bool) {
    h.exec(
        "document.querySelector(arguments[0]).dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, shiftKey: arguments[1]}))",
        json!([css, shift]),
    );
}

fn key(h: &Harness, target: &str, key: &str) {
    h.exec(
        "const t = arguments[0] ? document.querySelector(arguments[0]) : document.activeElement; \
         t.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[1], bubbles: true, cancelable: true}))",
        json!([target, key]),
    );
}

/// WebDriver's key code for Enter.
pub(super) const ENTER: &str = "\u{E007}";

/// The id of the element with the focus.
pub(super) fn active_id(h: &Harness) -> String {
    h.exec(
        "return document.activeElement ? document.activeElement.id : ''",
        json!([]),
    )
    .as_str()
    .unwrap_or("")
    .to_owned()
}

/// Links the database to a sync account, as `sitetrail sync join` leaves it (the row only: the
/// hub is a closed port and there is no key, so the app's background sync just fails).
fn link_sync(store: &sitetrail::Store) {
    store
        .write(None, |tx| {
            tx.execute(
                "INSERT INTO sync_link (singleton, hub, account_id, device_id, device_name, linked_at)
                 VALUES (1, 'http://127.0.0.1:9', ?1, ?2, 'e2e', 0)",
                rusqlite::params![[1u8; 16].as_slice(), [2u8; 16].as_slice()],
            )?;
            Ok(())
        })
        .expect("link sync");
}

fn history_with(h: &Harness, rows: usize) {
    h.click("#tab-history");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == rows).then_some(()));
}

/// The history with `rows` rows once the start's own changes are in (the worker has classified
/// the new websites, whose change reloads a list at its top): what a test that needs the list to
/// hold still waits for.
pub(super) fn settled_history_with(h: &Harness, rows: usize) {
    history_with(h, rows);
    h.wait_for(WAIT, || {
        h.text("#worker-pill").starts_with("Up to date").then_some(())
    });
    history_with(h, rows);
}

#[test]
fn a_selection_is_not_dropped_by_visits_arriving_and_the_list_catches_up_after() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let store = dirs.store();
        for (i, d) in ["a.test", "b.test", "c.test"].iter().enumerate() {
            visit(&store, d, "", &format!("Page {d}"), 10 + i as i64);
        }
    }
    let mut h = start(&dirs);
    settled_history_with(&h, 3);
    click_with(&h, "#h-rows tr.visit:nth-of-type(2) input.sel", false);
    assert_eq!(h.count("#h-rows tr.visit.selected"), 1);
    // Another process records a visit: its change reaches the app within a second, and the list,
    // at its top, would reload, but not under the selection.
    visit(&dirs.store(), "new-under-selection.test", "", "Arrived", 1);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(h.count("#h-rows tr.visit.selected"), 1, "the selection stays");
    assert_eq!(h.count("#h-rows tr.visit"), 3, "no reload under the selection");
    // Nothing selected: the next change reloads the list, with both new visits.
    h.click("#h-sel-clear");
    visit(&dirs.store(), "new-after.test", "", "Arrived after", 0);
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 5).then_some(()));
    h.quit();
}

#[test]
fn three_selected_rows_are_forgotten_in_one_action() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let store = dirs.store();
        for (i, d) in ["a.test", "b.test", "c.test", "d.test", "e.test"]
            .iter()
            .enumerate()
        {
            visit(&store, d, "", &format!("Page {d}"), 10 + i as i64);
        }
    }
    let mut h = start(&dirs);
    history_with(&h, 5);
    // The second row, then shift-click the fourth: three rows. The history may still be
    // reloading its rows once (the new websites' categories landing just after the start): rows
    // replaced between the two clicks lose the first, so the two clicks are made again, up to
    // three times, on a cleared selection.
    let three = (0..3).any(|_| {
        click_with(&h, "#h-rows tr.visit:nth-of-type(3) input.sel", false);
        click_with(&h, "#h-rows tr.visit:nth-of-type(5) input.sel", true);
        if h.count("#h-rows tr.visit.selected") == 3 {
            return true;
        }
        if visible(&h, "#h-selbar") {
            h.click("#h-sel-clear");
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        false
    });
    assert!(three, "a click and a shift-click select three rows");
    assert_eq!(h.count("#h-rows tr.visit.selected"), 3);
    assert!(visible(&h, "#h-selbar"));
    assert_eq!(h.text("#h-sel-count"), "3 rows selected");
    let chosen: Vec<String> = serde_json::from_value(h.exec(
        "return [...document.querySelectorAll('#h-rows tr.visit.selected')].map((r) => r.dataset.domain)",
        json!([]),
    ))
    .unwrap();
    h.screenshot("history-selected.png");
    h.click("#h-sel-forget");
    // The dialog is filled in once it opens (the click returns before).
    let title = h.wait_for(WAIT, || Some(h.text("#fg-title")).filter(|t| !t.is_empty()));
    assert_eq!(title, "Forget 3 visits?", "one confirmation that says how many");
    // The safe button has the focus and says Cancel; Enter there forgets nothing. The words say
    // where it reaches: this computer (no sync).
    h.wait_for(WAIT, || (active_id(&h) == "fg-cancel").then_some(()));
    assert_eq!(h.text("#fg-cancel"), "Cancel");
    let words = h.text("#fg-body");
    assert!(words.contains("from this computer"), "{words}");
    assert!(!words.contains("devices"), "{words}");
    h.press_key(ENTER);
    h.wait_for(WAIT, || (!visible(&h, "#forget-dialog")).then_some(()));
    assert_eq!(dirs.store().visit_count().unwrap(), 5, "Enter forgot nothing");
    h.click("#h-sel-forget");
    h.wait_for(WAIT, || visible(&h, "#forget-dialog").then_some(()));
    h.click("#fg-confirm");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 2).then_some(()));
    assert!(!visible(&h, "#h-selbar"));
    let store = dirs.store();
    assert_eq!(store.visit_count().unwrap(), 2);
    for d in &chosen {
        assert!(
            store
                .website_visits(d, sitetrail::Timestamp(0), 10)
                .unwrap()
                .is_empty(),
            "{d} still has its visit"
        );
    }
    // Ctrl+A selects every loaded row; Escape clears.
    h.exec(
        "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'a', ctrlKey: true, bubbles: true, cancelable: true}))",
        json!([]),
    );
    assert_eq!(h.count("#h-rows tr.visit.selected"), 2);
    // Once this database syncs with others, forgetting says it reaches all of them.
    link_sync(&store);
    h.click("#h-sel-forget");
    h.wait_for(WAIT, || visible(&h, "#forget-dialog").then_some(()));
    let words = h.text("#fg-body");
    assert!(words.contains("on all your devices"), "{words}");
    h.click("#fg-cancel");
    assert_eq!(store.visit_count().unwrap(), 2);
    key(&h, "body", "Escape");
    assert_eq!(h.count("#h-rows tr.visit.selected"), 0);
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn a_rows_details_open_it_in_the_default_browser_and_the_keyboard_works() {
    let _lock = serial();
    let dirs = AppDirs::create();
    // The system's default browser, declared the way desktops do (mimeapps.list and a desktop
    // entry in the XDG folders the app is given): a script that writes down what it was asked.
    let opened = dirs.dir.path().join("opened.txt");
    let script = dirs.dir.path().join("browser.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$1\" >> '{}'\n", opened.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(dirs.data.join("applications")).unwrap();
    std::fs::create_dir_all(&dirs.config).unwrap();
    std::fs::write(
        dirs.data.join("applications/sitetrail-test-browser.desktop"),
        format!(
            "[Desktop Entry]\nType=Application\nName=Test browser\nExec={} %u\nMimeType=x-scheme-handler/http;x-scheme-handler/https;\n",
            script.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dirs.config.join("mimeapps.list"),
        "[Default Applications]\nx-scheme-handler/https=sitetrail-test-browser.desktop\nx-scheme-handler/http=sitetrail-test-browser.desktop\n",
    )
    .unwrap();
    {
        let store = dirs.store();
        visit(&store, "docs.test", "guide/intro?x=1", "The guide", 20);
        visit(&store, "mail.test", "inbox", "Inbox", 10);
    }
    let mut h = start(&dirs);
    history_with(&h, 2);
    // "/" from the overview: the history's search.
    h.click("#tab-overview");
    key(&h, "body", "/");
    h.wait_for(WAIT, || {
        (h.exec("return document.activeElement.id", json!([])) == "h-search").then_some(())
    });
    // Arrow down into the list, again to the second row, Enter opens its details.
    key(&h, "#h-search", "ArrowDown");
    assert_eq!(
        h.exec("return document.activeElement.dataset.domain", json!([])),
        "mail.test"
    );
    key(&h, "", "ArrowDown");
    assert_eq!(
        h.exec("return document.activeElement.dataset.domain", json!([])),
        "docs.test"
    );
    key(&h, "", "Enter");
    h.wait_for(WAIT, || visible(&h, "#visit-dialog").then_some(()));
    assert_eq!(h.text("#vd-url"), "https://docs.test/guide/intro?x=1");
    let details = h.text("#vd-body");
    assert!(
        details.contains("docs.test") && details.contains("Visited"),
        "{details}"
    );
    h.screenshot("history-details.png");
    h.click("#vd-open");
    let got = h.wait_for(WAIT, || {
        std::fs::read_to_string(&opened).ok().filter(|s| !s.is_empty())
    });
    assert_eq!(got.trim(), "https://docs.test/guide/intro?x=1");
    h.click("#vd-close");
    // Delete on a focused row asks before forgetting it.
    h.exec(
        "document.querySelector(\"#h-rows tr[data-domain='docs.test']\").focus()",
        json!([]),
    );
    key(&h, "", "Delete");
    h.wait_for(WAIT, || visible(&h, "#forget-dialog").then_some(()));
    // The first choice has the focus, never the Forget button; Enter on it forgets nothing.
    h.wait_for(WAIT, || {
        (h.exec("return document.activeElement.name", json!([])) == "fg-what").then_some(())
    });
    h.press_key(ENTER);
    std::thread::sleep(Duration::from_millis(500)); // what a forgetting would take to start
    assert!(visible(&h, "#forget-dialog"), "Enter closed the dialog");
    assert_eq!(dirs.store().visit_count().unwrap(), 2, "Enter forgot");
    h.click("#fg-cancel");
    assert_eq!(
        dirs.store().visit_count().unwrap(),
        2,
        "nothing without the confirmation"
    );
    // A click on a row opens its details too.
    h.click("#h-rows tr[data-domain='mail.test'] .site .t");
    h.wait_for(WAIT, || visible(&h, "#visit-dialog").then_some(()));
    assert_eq!(h.text("#vd-url"), "https://mail.test/inbox");
    h.click("#vd-close");
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn an_internationalised_domain_is_shown_in_unicode_and_found_in_both_forms() {
    let _lock = serial();
    let dirs = AppDirs::create();
    visit(&dirs.store(), "xn--mnchen-3ya.example", "stadt", "Stadtplan", 5);
    let mut h = start(&dirs);
    h.wait_for(WAIT, || {
        h.try_text("#top-sites li[data-domain='xn--mnchen-3ya.example'] button.d")
            .filter(|t| t == "münchen.example")
    });
    history_with(&h, 1);
    assert_eq!(h.text("#h-rows tr.visit .dn"), "münchen.example");
    for words in ["münchen", "xn--mnchen-3ya"] {
        h.type_into("#h-search", words);
        h.wait_for(WAIT, || {
            (h.text("#h-status") == "1 visit loaded." && h.count("#h-rows tr.visit") == 1).then_some(())
        });
    }
    h.click("#h-rows tr.visit .t");
    h.wait_for(WAIT, || visible(&h, "#visit-dialog").then_some(()));
    assert!(h
        .text("#vd-body")
        .contains("münchen.example (xn--mnchen-3ya.example)"));
    h.click("#vd-close");
    h.click("#tab-overview");
    h.click("#top-sites li[data-domain='xn--mnchen-3ya.example'] button.d");
    h.wait_for(WAIT, || {
        (h.try_text("#w-title").as_deref() == Some("münchen.example")).then_some(())
    });
    h.assert_no_csp_violations();
    h.quit();
}

/// Elements whose text is cut off (wider than their box) and that do not carry the full text on
/// hover (their own or an ancestor's `title`), and whether the page scrolls sideways.
const OVERFLOW: &str = r#"
  const cut = [];
  for (const e of document.querySelectorAll(arguments[0])) {
    if (!e.getClientRects().length) continue;
    if (e.scrollWidth > e.clientWidth + 1 && !e.closest('[title], [data-tip]')) cut.push(e.tagName + '.' + e.className + ': ' + e.textContent.trim().slice(0, 60));
  }
  const main = document.querySelector('main');
  return { cut, sideways: document.documentElement.scrollWidth > window.innerWidth + 1 || main.scrollWidth > main.clientWidth + 1 };
"#;

#[test]
fn nothing_overflows_its_cell_at_800x600_the_default_size_or_full_hd() {
    let _lock = serial();
    let dirs = AppDirs::create();
    {
        let store = dirs.store();
        let long = "a-very-long-subdomain-name-for-testing.with-many-parts.example-of-a-long-domain.test";
        visit(
            &store,
            long,
            "",
            "A page title that is long enough to be cut in a narrow window, and then some more words",
            30,
        );
        visit(&store, "dev.test", "", "Code", 20);
        store
            .set_user_category("dev.test", sitetrail::Category::DevTech)
            .unwrap();
        visit(&store, "xn--mnchen-3ya.example", "", "Stadt", 10);
    }
    let mut h = start(&dirs);
    let cells = "#h-rows td, #h-rows td *, #top-sites li *, #top-time li *, #split-legend li *, .period-bar *, .tab, .worker-pill";
    for (w, ht, name) in [
        (1100, 720, "default"),
        (800, 600, "800x600"),
        (1920, 1080, "1920x1080"),
    ] {
        if !h.resize(w, ht) {
            continue;
        }
        h.click("#tab-overview");
        h.click("[data-period='last7']");
        h.wait_for(WAIT, || {
            (h.count("#top-sites li[data-domain]") == 3).then_some(())
        });
        let o = h.exec(OVERFLOW, json!([cells]));
        assert_eq!(o, json!({"cut": [], "sideways": false}), "overview at {name}");
        h.screenshot(&format!("overview-{name}-long-names.png"));
        history_with(&h, 3);
        let o = h.exec(OVERFLOW, json!([cells]));
        assert_eq!(o, json!({"cut": [], "sideways": false}), "history at {name}");
        if name == "default" {
            // The category column: name and confidence whole, no ellipsis.
            let cut = h.exec(
                "return [...document.querySelectorAll('#h-rows td.c, #h-rows td.c *')].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.className + ': ' + e.textContent)",
                json!([]),
            );
            assert_eq!(
                cut,
                json!([]),
                "the category column is never cut at the default size"
            );
        }
        h.screenshot(&format!("history-{name}-long-names.png"));
    }
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn empty_views_say_what_they_are_for_without_an_empty_table() {
    let _lock = serial();
    let dirs = AppDirs::create();
    dirs.store();
    let mut h = start(&dirs);
    h.click("#tab-history");
    h.wait_for(WAIT, || visible(&h, "#h-empty").then_some(()));
    assert!(!visible(&h, "#h-table"));
    assert!(visible(&h, "#h-empty-import") && visible(&h, "#h-empty-link") && visible(&h, "#h-empty-file"));
    h.screenshot("history-empty.png");
    h.click("#tab-review");
    h.wait_for(WAIT, || visible(&h, "#r-empty").then_some(()));
    assert!(!visible(&h, "#r-table"));
    assert!(h.text("#r-empty").contains("nothing is wrong"));
    // Nothing ever failed: no Failed tab at all (it comes when a job fails: polish.rs).
    assert!(!visible(&h, "#tab-failed"));
    // The empty history's "link the extension" leads to it.
    h.click("#tab-history");
    h.click("#h-empty-link");
    h.wait_for(WAIT, || visible(&h, "#s-ext-title").then_some(()));
    h.assert_no_csp_violations();
    h.quit();
}
