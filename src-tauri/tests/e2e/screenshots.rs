//! Screenshots of every view at 800×600 and 1920×1080, in the light and the dark theme, written to
//! target/screenshots/ (a few are kept in docs/screenshots/ for the README). Each view is checked
//! to be the one shown and not to scroll sideways at either size.

use serde_json::json;

use super::harness::Harness;
use super::{serial, AppDirs};

const VIEWS: [&str; 5] = ["overview", "history", "review", "failed", "settings"];

fn shoot_all(dark: bool) {
    let dirs = AppDirs::create();
    super::overview::seed_realistic(&dirs.store());
    super::seed_failed(&dirs.store(), "qzbroken.example", "HTTP 503 from the provider", 5);
    let mut env = dirs.env();
    env.push(("HOME", dirs.dir.path().display().to_string()));
    if dark {
        env.push(("GTK_THEME", "Adwaita:dark".into()));
    }
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    let theme = if dark { "dark" } else { "light" };
    for (w, ht) in [(800, 600), (1920, 1080)] {
        if !h.resize(w, ht) {
            continue;
        }
        for view in VIEWS {
            h.click(&format!("#tab-{view}"));
            h.wait_for(super::overview::WAIT, || {
                (h.exec(
                    "return !document.querySelector(`#view-${arguments[0]}`).hidden && document.querySelector('main').scrollWidth <= document.querySelector('main').clientWidth + 1",
                    json!([view]),
                ) == true)
                    .then_some(())
            });
            if view == "overview" {
                h.wait_for(super::overview::WAIT, || {
                    (h.count("#timeline rect.block") > 0).then_some(())
                });
            }
            h.screenshot(&format!("view-{view}-{w}x{ht}-{theme}.png"));
        }
        h.click("#tab-overview");
        // The overview may redraw its lists as its data arrives: a click on a row that is being
        // replaced opens nothing, so it is made again (as a person would) until the page opens.
        h.wait_for(super::overview::WAIT, || {
            h.exec(
                "if (document.getElementById('view-website').hidden) { const b = document.querySelector('#top-time li[data-domain] button.d'); if (b) b.click(); }",
                json!([]),
            );
            (h.count("#w-rows tr.visit") > 0).then_some(())
        });
        h.screenshot(&format!("view-website-{w}x{ht}-{theme}.png"));
    }
    h.assert_no_csp_violations();
    h.quit();
}

#[test]
fn every_view_at_800x600_and_full_hd_in_both_themes() {
    let _lock = serial();
    shoot_all(false);
    shoot_all(true);
}
