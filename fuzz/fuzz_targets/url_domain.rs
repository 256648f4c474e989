//! URL → domain, and typed host names → domain: whatever the text, no panic, and a domain is
//! non-empty, ASCII, lower case and without a trailing dot (the form websites are stored in).
//! Also the base-URL helpers, which see the user's `--base-url`, and the built-in rules on every
//! domain.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitetrail::classify::builtin::classify_domain;
use sitetrail::classify::http::{display_url, normalise_base_url};
use sitetrail::classify::privacy::is_private_host;
use sitetrail::domain::Domain;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    for d in [Domain::from_url(s), Domain::parse(s), Domain::parse_host(s)]
        .into_iter()
        .flatten()
    {
        let d = d.as_str();
        assert!(!d.is_empty(), "empty domain from {s:?}");
        assert!(
            d.is_ascii() && !d.bytes().any(|b| b.is_ascii_uppercase()),
            "{d:?} from {s:?}"
        );
        assert!(!d.ends_with('.'), "{d:?} from {s:?}");
        let _ = is_private_host(d);
        let _ = classify_domain(d);
    }
    let _ = classify_domain(s);
    let _ = normalise_base_url(s);
    let shown = display_url(s);
    if let Ok(u) = url::Url::parse(s) {
        if u.password().is_some() || !u.username().is_empty() {
            let again = url::Url::parse(&shown).expect("a shown URL still parses");
            assert!(
                again.password().is_none() && again.username() == "***",
                "{shown:?} from {s:?}"
            );
        }
    }
});
