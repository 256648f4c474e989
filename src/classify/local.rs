//! Hosts on the user's own machine or network, and names reserved for testing: `localhost` (and
//! `*.localhost`), private and loopback addresses (127/8, 10/8, 172.16/12, 192.168/16, 169.254/16,
//! `::1`, fc00::/7, fe80::/10), single-label names (`nas`, `router`) and the endings reserved for
//! such use (`.local`, `.test`, `.internal`, `.localhost`, `.lan`, `.localdomain`, `.home.arpa`).
//!
//! The built-in rules answer these with their own category ([`Category::LocalDev`], certain)
//! instead of a guess from their letters: `localhost` is not a government site. A public IP
//! address is not local. (What may be sent to a remote provider is a wider question, answered by
//! [`super::privacy::is_private_host`], which keeps every IP address and `.lan` name home too.)
//!
//! [`Category::LocalDev`]: crate::category::Category::LocalDev

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Endings that name something on a local network, or are reserved for tests (RFC 2606, 6761,
/// 6762, 8375 and ICANN's `.internal`).
const LOCAL_SUFFIXES: &[&str] = &[
    "localhost",
    "local",
    "test",
    "internal",
    "lan",
    "localdomain",
    "home.arpa",
];

/// True if `host` (a stored domain or a host as typed; an IPv6 address with or without brackets)
/// names the user's machine, a private network or a test name.
pub fn is_local_host(host: &str) -> bool {
    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = h.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return is_local_ip(ip);
    }
    if h.is_empty() {
        return false;
    }
    if !h.contains('.') {
        return true; // `localhost`, `nas`, `router`: no public name has one label
    }
    LOCAL_SUFFIXES
        .iter()
        .any(|s| h == *s || h.ends_with(&format!(".{s}")))
}

fn is_local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_local_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_local_v4(v4),
            None => is_local_v6(v6),
        },
    }
}

fn is_local_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
}

fn is_local_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00 // fc00::/7, unique local
        || (first & 0xffc0) == 0xfe80 // fe80::/10, link local
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_machines_networks_and_test_names_are_local() {
        for h in [
            "localhost",
            "LOCALHOST.",
            "app.localhost",
            "127.0.0.1",
            "127.8.9.10",
            "10.0.0.5",
            "172.16.4.4",
            "172.31.255.255",
            "192.168.1.10",
            "169.254.1.1",
            "0.0.0.0",
            "::1",
            "[::1]",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:192.168.0.1",
            "myprinter.local",
            "app.test",
            "api.internal",
            "nas.lan",
            "box.localdomain",
            "router.home.arpa",
            "nas",
        ] {
            assert!(is_local_host(h), "{h}");
        }
    }

    #[test]
    fn public_names_and_addresses_are_not() {
        for h in [
            "tagesschau.de",
            "news.ycombinator.com",
            "172.32.0.1",
            "172.15.255.255",
            "192.169.0.1",
            "11.0.0.1",
            "8.8.8.8",
            "2001:4860::8888",
            "[2a00:1450::1]",
            "::ffff:8.8.8.8",
            "localhost.com",
            "test.com",
            "local.example.org",
            "internal.company.com",
            "",
        ] {
            assert!(!is_local_host(h), "{h}");
        }
    }
}
