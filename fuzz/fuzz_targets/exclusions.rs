//! Exclusion patterns (one a line): whatever the text, no panic; a pattern that is accepted
//! matches the domain it names (and, for `*.suffix`, the names under it), in the stored form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitetrail::classify::privacy::{is_private_host, normalise_pattern, Exclusions};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let lines: Vec<&str> = s.lines().collect();
    let Ok(ex) = Exclusions::parse(&lines) else { return };
    for line in lines {
        let (suffix, name) = normalise_pattern(line).expect("accepted as part of the list");
        assert!(ex.matches(&name), "{line:?} (as {name:?}) does not match itself");
        if suffix {
            assert!(
                ex.matches(&format!("sub.{name}")),
                "{line:?} does not match under it"
            );
        }
        let _ = is_private_host(&name);
    }
});
