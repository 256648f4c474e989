//! The Review view in the real window: the uncertain websites, most visited first; "Right" makes
//! the shown category the user's, the picker sets another; the history shows confidence; the
//! About section names the open data and its licence.

use std::time::Duration;

use serde_json::json;

use super::harness::Harness;
use super::{serial, visit, AppDirs};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn review_right_keeps_the_category_as_the_users() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let store = dirs.store();
    for i in 0..3i64 {
        visit(&store, "qzbank.example", &format!("a{i}"), "My bank", 10 + i);
    }
    visit(&store, "quietsite.example", "", "Quiet", 5);
    visit(&store, "github.com", "", "GitHub", 1);
    drop(store);

    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.click("#tab-review");
    // The built-in worker judges the three websites at once; github.com is certain.
    h.wait_for(WAIT, || (h.count("#r-rows tr") == 2).then_some(()));
    let order = h.exec(
        "return [...document.querySelectorAll('#r-rows tr')].map(r => r.dataset.domain)",
        json!([]),
    );
    assert_eq!(
        order,
        json!(["qzbank.example", "quietsite.example"]),
        "most visited first"
    );
    let bank = "#r-rows tr[data-domain='qzbank.example']";
    let cell = h.text(&format!("{bank} td.c"));
    assert!(cell.contains("Finance") && cell.contains("likely"), "{cell}");
    assert!(h.text(&format!("{bank} .site .t")).contains("a word in the name"));
    h.screenshot("review.png");

    h.click(&format!("{bank} button.right"));
    h.wait_for(WAIT, || {
        h.text(&format!("{bank} .review-actions"))
            .starts_with("Kept as yours: Finance")
            .then_some(())
    });
    let site = dirs.store().website("qzbank.example").expect("website");
    assert_eq!(site.category.map(sitetrail::Category::id), Some("finance"));
    assert_eq!(
        site.category_source.map(sitetrail::CategorySource::as_str),
        Some("user")
    );
    assert_eq!(site.category_confidence, Some(sitetrail::Confidence::High));

    // The picker: another category, also the user's.
    let quiet = "#r-rows tr[data-domain='quietsite.example']";
    h.click(&format!("{quiet} select.pick option[value='news']"));
    h.wait_for(WAIT, || {
        h.text(&format!("{quiet} .review-actions"))
            .starts_with("Kept as yours: News")
            .then_some(())
    });
    h.screenshot("review-done.png");
    assert_eq!(
        dirs.store()
            .website("quietsite.example")
            .unwrap()
            .category_source
            .map(sitetrail::CategorySource::as_str),
        Some("user")
    );
    h.click("#r-refresh");
    h.wait_for(WAIT, || (h.count("#r-rows tr") == 0).then_some(()));
    assert_eq!(
        h.exec("return document.getElementById('r-empty').hidden", json!([])),
        false
    );

    // The history rows show how sure each category is.
    h.click("#tab-history");
    h.wait_for(WAIT, || (h.count("#h-rows tr.visit") == 5).then_some(()));
    // Read as one snapshot of the page (a live refresh may replace the rows between two reads).
    let cells = h.exec(
        "const c = (d) => document.querySelector(`#h-rows tr[data-domain='${d}'] td.c`);\
         return [c('github.com'), c('qzbank.example')].map(e => e ? e.innerText.trim() : null)",
        json!([]),
    );
    let gh = cells[0].as_str().expect("a github.com row");
    assert!(gh.contains("built-in") && gh.contains("certain"), "{gh}");
    let mine = cells[1].as_str().expect("a qzbank.example row");
    assert!(mine.contains("you") && mine.contains("certain"), "{mine}");

    // About: the open domain table and its licence.
    h.click("#tab-settings");
    h.wait_for(WAIT, || {
        h.try_text("#s-open-data")
            .filter(|t| t.contains("CC BY-SA 4.0") && t.contains("Université Toulouse 1 Capitole"))
            .map(|_| ())
    });
    h.exec(
        "document.getElementById('s-about-title').scrollIntoView()",
        json!([]),
    );
    h.screenshot("settings-about.png");
    h.assert_no_csp_violations();
}
