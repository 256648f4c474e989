//! The native host's messages: the input's first byte chooses how the rest is sent, as raw frame
//! bytes (anything at all), or as a title of arbitrary UTF-16 code units (lone surrogates
//! included, written as `\uXXXX` escapes as `JSON.stringify` writes them) inside a well-formed
//! batch. Whatever comes: no panic, every reply is JSON within the browsers' 1 MB, a refusal of
//! a message that names its batch names it too, and a batch with a valid event is acknowledged
//! with that event stored (any title can be stored).
#![no_main]

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use sitetrail::capture::host::{serve, Host, HostConfig};
use sitetrail::capture::protocol::{read_frame, Frame, MAX_OUTGOING};
use sitetrail::store::StoreOptions;

/// One host on one database for the whole run (opening a database per input would be all the
/// fuzzer did).
fn host() -> &'static Mutex<(Host, tempfile::TempDir)> {
    static HOST: OnceLock<Mutex<(Host, tempfile::TempDir)>> = OnceLock::new();
    HOST.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let host = Host::new(HostConfig {
            browser: "chromium".into(),
            db: dir.path().join("fuzz.db"),
            store_options: StoreOptions::default(),
            ack_delay: Duration::ZERO,
        });
        Mutex::new((host, dir))
    })
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = u32::try_from(body.len()).expect("short").to_ne_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// The replies `input` gets, each checked for size and JSON.
fn replies(input: &[u8]) -> Vec<serde_json::Value> {
    let mut guard = host().lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    let _ = serve(&mut guard.0, input, &mut out);
    let mut r = &out[..];
    let mut all = Vec::new();
    while let Ok(Frame::Message(m)) = read_frame(&mut r) {
        assert!(m.len() <= MAX_OUTGOING, "a reply of {} bytes", m.len());
        all.push(serde_json::from_slice(&m).expect("every reply is JSON"));
    }
    all
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        for reply in replies(rest) {
            assert!(reply.get("type").is_some(), "{reply}");
        }
        return;
    }
    let mut title = String::new();
    for unit in rest.chunks(2) {
        let u = u16::from_le_bytes([unit[0], *unit.get(1).unwrap_or(&0)]);
        title.push_str(&format!("\\u{u:04x}"));
    }
    let body = format!(
        r#"{{"type":"events","batch":{mode},"events":[{{"id":"f","kind":"visit","url":"https://fuzz.test/","title":"{title}","at":1800000000000}}]}}"#
    );
    let got = replies(&framed(body.as_bytes()));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["type"], "ack", "{}", got[0]);
    assert_eq!(got[0]["batch"], u64::from(mode));
    assert_eq!(got[0]["stored"], serde_json::json!(["f"]), "{}", got[0]);
});
