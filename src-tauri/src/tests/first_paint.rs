//! The first paint's report (issue 31): the page tells the shell when it has painted today's
//! figures, and the shell keeps its own milestones.

use serde_json::json;

use super::TestApp;
use crate::startup;

#[test]
fn the_first_view_report_is_taken_once_and_checked() {
    let t = TestApp::start(|_| {});
    let now = startup::now_ms();
    // Any IPC call is the first IPC: the shell's wrapper of the commands marks it.
    t.ok("list_categories", json!({}));
    assert!(
        startup::marks()
            .iter()
            .any(|(n, t)| *n == "first IPC" && *t <= startup::now_ms()),
        "{:?}",
        startup::marks()
    );
    let good = json!({ "times": {
        "navigation": now - 800.0, "painted": now,
        "marks": [["scripts run", now - 500.0], ["figures drawn", now - 50.0]],
    }});
    assert_eq!(t.ok("first_view_painted", good.clone()), json!(null));
    // A second report (a reloaded page) is taken and ignored.
    assert_eq!(t.ok("first_view_painted", good), json!(null));
    for bad in [
        json!({ "times": { "navigation": now - 800.0, "painted": 0.0 } }),
        json!({ "times": { "navigation": now, "painted": now - 800.0 } }),
        json!({ "times": { "navigation": now - 800.0, "painted": now + 3.0e9 } }),
        json!({ "times": { "navigation": now - 800.0, "painted": now, "marks": [["a\nb", now]] } }),
    ] {
        assert_eq!(
            t.err_kind("first_view_painted", bad.clone()),
            "invalid_input",
            "{bad}"
        );
    }
    // Not numbers at all: tauri refuses the arguments before the command runs.
    let bad = json!({ "times": { "navigation": now - 800.0, "painted": now, "marks": [["x", "soon"]] } });
    assert!(t.invoke("first_view_painted", bad).is_err());
}
