//! Text no browser should send but some do, through the real `sitetrail native-host` on pipes:
//! a lone UTF-16 surrogate (a title cut inside an emoji), fields of megabytes, batch numbers that
//! are not small integers, and an event id reused for another page. None may stop the host, make
//! a reply the browser cannot take, or leave a refusal the extension cannot match to its batch.

use serde_json::{json, Value};

use crate::capture::host::{batch, now_ms, stored_visits, visit_event, HostProc};
use crate::support::{count, TempDb};

/// One framed message of raw bytes (what `JSON.stringify` in the extension would have written).
fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = u32::try_from(body.len()).unwrap().to_ne_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

#[test]
fn a_lone_surrogate_in_a_title_is_stored_as_a_replacement_character() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    // Written by hand: serde_json (like this test's own serializer) never writes a lone
    // surrogate, JavaScript's JSON.stringify does.
    let body = format!(
        r#"{{"type":"events","batch":3,"events":[
            {{"id":"v1","kind":"visit","url":"https://cut.test/","title":"Party \ud83c cut","at":{t}}},
            {{"id":"v2","kind":"visit","url":"https://low.test/","title":"\udc00 alone","at":{t}}},
            {{"id":"v3","kind":"visit","url":"https://pair.test/","title":"Party \ud83c\udf89","at":{t}}}]}}"#
    );
    host.send_raw(&framed(body.as_bytes()));
    let ack = host.recv();
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(ack["batch"], 3);
    assert_eq!(ack["stored"], json!(["v1", "v2", "v3"]));
    let titles: Vec<_> = stored_visits(&db.path).into_iter().map(|v| v.1).collect();
    assert_eq!(
        titles,
        vec![
            Some("Party \u{FFFD} cut".to_owned()),
            Some("\u{FFFD} alone".to_owned()),
            Some("Party 🎉".to_owned())
        ]
    );
    assert!(host.finish().success());
}

#[test]
fn a_refusal_names_its_batch_even_when_the_message_is_not_json() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    host.send_raw(&framed(
        br#"{"type":"events","batch":12,"events":[{"id":"x","title":"a" "#,
    ));
    let r = host.recv();
    assert_eq!(
        (r["type"].as_str(), r["kind"].as_str()),
        (Some("error"), Some("bad_json"))
    );
    assert_eq!(r["batch"], 12, "{r}");
    // A "batch" inside an event's text is not the message's number.
    host.send_raw(&framed(
        br#"{"type":"events","events":[{"title":"{\"batch\":5}"}], "batch": 13, oops}"#,
    ));
    assert_eq!(host.recv()["batch"], 13);
    assert_eq!(host.request(&json!({"type": "ping"}))["type"], "pong");
    assert!(host.finish().success());
}

/// Every reply's length (the reader thread of `HostProc` also fails past the browsers' 1 MB).
fn reply_len(v: &Value) -> usize {
    serde_json::to_vec(v).unwrap().len()
}

#[test]
fn megabyte_fields_get_short_refusals_and_the_host_reads_on() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let huge = "\u{1}x\"".repeat(300_000); // 2.7 MB as JSON (the control character six bytes)
    let t = now_ms();
    // A field of the wrong type quotes its value in serde's reason.
    let ack = host.request(&batch(
        1,
        vec![
            json!({"id": "bad", "kind": "visit", "url": "https://a.test/", "at": huge}),
            visit_event("good", "https://a.test/", Some("A"), t),
        ],
    ));
    assert_eq!(ack["type"], "ack", "the host answered");
    assert_eq!(ack["stored"], json!(["good"]));
    assert_eq!(ack["rejected"][0]["id"], "bad");
    assert!(
        reply_len(&ack) < 1_000,
        "a short reason: {} bytes",
        reply_len(&ack)
    );
    // A batch number that is a huge string, a fraction, a negative or past 2^53.
    for bad in [json!(huge), json!(1.5), json!(-1), json!(1u64 << 60)] {
        let r = host.request(&json!({"type": "events", "batch": bad, "events": []}));
        assert_eq!(
            (r["type"].as_str(), r["kind"].as_str()),
            (Some("error"), Some("bad_message"))
        );
        assert!(reply_len(&r) < 1_000, "{} bytes", reply_len(&r));
    }
    assert_eq!(host.request(&json!({"type": "ping"}))["type"], "pong");
    assert!(host.finish().success(), "the host never exited on its own");
}

#[test]
fn the_longest_possible_ack_is_one_message_within_the_browsers_limit() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    // A full batch of events the host refuses, each with the longest id and a reason quoting the
    // most JSON-escaped text there is.
    let quote = "\"\\".repeat(200_000 / 1000);
    let events: Vec<Value> = (0..1000)
        .map(|i| json!({"id": format!("{i:0>64}"), "kind": "visit", "url": "https://a.test/", "at": quote}))
        .collect();
    let ack = host.request(&batch(2, events));
    assert_eq!(ack["type"], "ack");
    assert_eq!(ack["rejected"].as_array().unwrap().len(), 1000);
    assert!(reply_len(&ack) < 1024 * 1024);
    assert!(host.finish().success());
}

#[test]
fn an_event_id_reused_for_another_page_is_refused_and_the_stored_visit_kept() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    let first = host.request(&batch(
        1,
        vec![visit_event("v1", "https://first.test/", Some("First"), t)],
    ));
    assert_eq!(first["stored"], json!(["v1"]));
    let again = host.request(&batch(
        2,
        vec![
            visit_event("v1", "https://other.test/", Some("Other"), t),
            visit_event("v1", "https://first.test/", Some("Later"), t + 1),
        ],
    ));
    assert_eq!(again["stored"], json!([]), "{again}");
    let reasons: Vec<_> = again["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("already stored for another page")),
        "{reasons:?}"
    );
    // The same page and time is still the same event: acknowledged, its title updated.
    let same = host.request(&batch(
        3,
        vec![visit_event(
            "v1",
            "https://first.test/",
            Some("First, renamed"),
            t,
        )],
    ));
    assert_eq!(same["stored"], json!(["v1"]));
    let rows = stored_visits(&db.path);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, "https://first.test/");
    assert_eq!(rows[0].1.as_deref(), Some("First, renamed"));
    assert_eq!(count(&db.open(), "website"), 1, "no website for the refused page");
    assert!(host.finish().success());
}

#[test]
fn the_extensions_own_queue_moves_past_every_hostile_event_against_the_real_host() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let t = now_ms();
    let events = json!([
        visit_event("a", "https://first.test/", Some("First"), t),
        {"id": "b", "kind": "visit", "visit": "b", "url": "https://cut.test/", "title": "Party", "cut": true, "at": t + 1},
        // The id of "a" again, for another page.
        {"id": "a", "kind": "visit", "visit": "a2", "url": "https://other.test/", "title": "Other", "at": t + 2},
        // A message over the host's 4 MiB: refused whole, then alone, then dropped.
        {"id": "d", "kind": "visit", "visit": "d", "url": "https://huge.test/", "pad": 5_000_000, "at": t + 3},
        visit_event("e", "https://after.test/", Some("After"), t + 4),
    ]);
    let file = dir.path().join("events.json");
    std::fs::write(&file, serde_json::to_vec(&events).unwrap()).unwrap();
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new("node")
        .arg(format!("{repo}/tests/support/extension_real_host.mjs"))
        .args([repo, env!("CARGO_BIN_EXE_sitetrail")])
        .arg(&db.path)
        .arg(&file)
        .output()
        .expect("node is needed (scripts/setup installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    assert_eq!(result["left"], 0, "the queue emptied: {result}");
    assert_eq!(
        result["rejected"], 2,
        "the reused id and the oversized event, counted: {result}"
    );
    let rows: Vec<(String, Option<String>)> =
        stored_visits(&db.path).into_iter().map(|v| (v.0, v.1)).collect();
    assert_eq!(
        rows,
        vec![
            ("https://first.test/".into(), Some("First".into())),
            ("https://cut.test/".into(), Some("Party \u{FFFD} cut".into())),
            ("https://after.test/".into(), Some("After".into())),
        ]
    );
}

#[test]
fn a_visit_sent_again_is_the_same_event_in_the_form_urls_are_stored_in() {
    // A URL the store keeps in another form (no password, control characters encoded) is still
    // the same page when its event is sent again.
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    let url = "https://user:pw@raw.test/a\u{7}b";
    for n in 1..=2 {
        let ack = host.request(&batch(n, vec![visit_event("r1", url, Some("Raw"), t)]));
        assert_eq!(ack["stored"], json!(["r1"]), "send {n}: {ack}");
    }
    assert_eq!(stored_visits(&db.path).len(), 1);
    assert!(host.finish().success());
}
