//! A record's plaintext as another device (or a hostile one holding the key) may send it: raw
//! bytes as the deflated contents, and as one operation's JSON. Whatever it is, no panic: damaged
//! contents are refused, unknown or malformed operations come back as `Op::Unknown`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitetrail::sync_log::ops::{pack, unpack, Op};

fuzz_target!(|data: &[u8]| {
    let _ = unpack(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if serde_json::from_str::<serde_json::Value>(text).is_ok() {
            let back = unpack(&pack(&[(1, text.to_owned())])).expect("a packed list unpacks");
            assert_eq!(back.len(), 1);
            // What came back serializes again (an Unknown too).
            let _ = back[0].op.to_json();
            if let Op::Visit { url, .. } = &back[0].op {
                let _ = sitetrail::domain::Domain::from_url(url);
            }
        }
    }
});
