//! The hub's request reading (`sitetrail_hub::request`): the first byte picks what the rest is
//! read as (a push, a claim or settle request, an account, a page query, the login and device
//! headers, a device path, a long-poll's query). Whatever the bytes: no panic; what is accepted keeps every limit
//! of `sitetrail_sync_wire::limits`; a refusal is a 4xx whose message is short and never
//! repeats what was sent (the marker `ZQX`, which no message contains, never comes back).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitetrail_hub::error::HubError;
use sitetrail_hub::request::{
    parse_claims, parse_create_account, parse_credentials, parse_device_path, parse_page_query, parse_push,
    parse_settle, parse_wait_query,
};
use sitetrail_sync_wire::limits;

fn refused(e: HubError) {
    let (status, _) = e.status_and_code();
    assert!(status.is_client_error(), "{status} for {e:?}");
    let message = e.to_string();
    assert!(message.len() <= 300, "a long message: {message:?}");
    assert!(
        !message.contains("ZQX"),
        "a message repeats what was sent: {message:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = std::str::from_utf8(rest).ok();
    match which % 8 {
        0 => match parse_push(rest) {
            Ok(push) => {
                assert!(push.records.len() <= limits::MAX_RECORDS_PER_PUSH);
                let bytes: usize = push.records.iter().map(|r| r.payload.0.len()).sum();
                assert!(bytes <= limits::MAX_PUSH_PAYLOAD_BYTES);
                for r in &push.records {
                    assert!(r.check().is_ok(), "{r:?}");
                    assert!(i64::try_from(r.idx).is_ok());
                }
            }
            Err(e) => refused(e),
        },
        1 => match parse_claims(rest) {
            Ok(claims) => {
                assert!(claims.items.len() <= limits::MAX_CLAIM_ITEMS);
                assert!(limits::LEASE_MS.contains(&claims.lease_ms));
                for item in &claims.items {
                    let _ = sitetrail_hub::api::claims::token_bytes(&item.token);
                }
            }
            Err(e) => refused(e),
        },
        2 => match parse_settle(rest) {
            Ok(settle) => assert!(settle.claims.len() <= limits::MAX_CLAIM_ITEMS),
            Err(e) => refused(e),
        },
        3 => {
            if let Err(e) = parse_create_account(rest) {
                refused(e);
            }
        }
        4 => match parse_page_query(text) {
            Ok(page) => {
                assert!((1..=limits::MAX_PAGE_RECORDS).contains(&page.limit));
                assert!(page.after >= 0);
            }
            Err(e) => refused(e),
        },
        7 => match parse_wait_query(text) {
            Ok(wait) => {
                assert!(wait.wait.as_millis() <= u128::from(limits::MAX_WAIT_MS));
            }
            Err(e) => refused(e),
        },
        5 => {
            // Authorization, then the device header after the first NUL (if any).
            let mut parts = rest.splitn(2, |b| *b == 0);
            let auth = parts.next();
            let device = parts.next();
            if let Err(e) = parse_credentials(auth, device) {
                refused(e);
            }
        }
        _ => {
            if let Some(text) = text {
                if let Err(e) = parse_device_path(text) {
                    refused(e);
                }
            }
        }
    }
});
