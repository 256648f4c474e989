//! No login crosses a network in clear by accident: a device refuses a plain `http://` hub on
//! another machine unless the user passed `--allow-insecure-http` when linking; that choice is kept
//! in the link and said on every sync and in `sync status`. A hub on this machine (`localhost`,
//! 127.0.0.0/8, ::1) is fine over http. Tested against a real hub reached through this machine's
//! own network address (a relay on it), so the allowed link really syncs.

use std::net::{IpAddr, TcpListener, TcpStream, UdpSocket};

use sitetrail::ErrorKind;

use crate::support::cli;
use crate::support::sync::{Device, TestHub};
use crate::sync::account::sync_cli;

/// This machine's address on its network (not a loopback one): the source address of a route
/// to a documentation network (a UDP "connect" sends nothing).
fn own_address() -> IpAddr {
    for target in ["192.0.2.1:9", "10.255.255.254:9", "198.51.100.1:9"] {
        let Ok(socket) = UdpSocket::bind("0.0.0.0:0") else {
            continue;
        };
        if socket.connect(target).is_ok() {
            if let Ok(addr) = socket.local_addr() {
                if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
                    return addr.ip();
                }
            }
        }
    }
    panic!("this machine has no network address other than the loopback");
}

/// A TCP relay on this machine's network address to the hub: `http://ADDRESS:PORT`.
fn relay_to(hub: &TestHub) -> String {
    let target = hub.url.trim_start_matches("http://").to_owned();
    let listener = TcpListener::bind((own_address(), 0)).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    url
}

fn status(d: &Device) -> serde_json::Value {
    let (code, out, err) = sync_cli(d, &["status", "--json"], "");
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_plain_http_hub_on_another_machine_is_refused_unless_the_user_allows_it() {
    let hub = TestHub::start();
    let away = relay_to(&hub);
    let (a, b) = (Device::new(), Device::new());

    // Refused before anything is sent: no account on the hub, no link here.
    let (code, _, err) = sync_cli(&a, &["setup", "--hub", &away], "");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("plain http://") && err.contains("in clear") && err.contains("--allow-insecure-http"),
        "{err}"
    );
    assert_eq!(hub.psql("SELECT count(*) FROM account"), "0");
    assert_eq!(status(&a)["linked"], false);
    // The library (as the app calls it) refuses too.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let e = rt
        .block_on(sitetrail::sync::engine::setup(
            &a.store,
            &a.key_dir,
            &away,
            Some("app"),
        ))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);

    // Allowed: linked, said at once, kept in the link, said in status and on every sync.
    let (code, out, err) = sync_cli(
        &a,
        &["setup", "--hub", &away, "--allow-insecure-http", "--json"],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: the hub is reached over plain http://"),
        "{err}"
    );
    let key = serde_json::from_str::<serde_json::Value>(&out).unwrap()["recovery_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status(&a)["insecure_http"], true);
    assert_eq!(
        status(&a)["insecure_warning"],
        sitetrail::sync::client::INSECURE_WARNING
    );
    let (_, human, _) = sync_cli(&a, &["status"], "");
    assert!(
        human.contains("warning: the hub is reached over plain http://"),
        "{human}"
    );
    a.visit_at("https://example.org/a", "A", 10);
    let (code, _, err) = sync_cli(&a, &["now"], "");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("the login crosses the network in clear"), "{err}");

    // Joining needs the same permission.
    let (code, _, err) = sync_cli(&b, &["join", "--hub", &away], &format!("{key}\n"));
    assert_eq!(code, 2, "{err}");
    assert_eq!(hub.psql("SELECT count(*) FROM device"), "1");
    let (code, _, err) = sync_cli(
        &b,
        &["join", "--hub", &away, "--allow-insecure-http"],
        &format!("{key}\n"),
    );
    assert_eq!(code, 0, "{err}");
    b.sync();
    assert_eq!(b.visits().len(), 1, "the allowed link syncs");
}

#[test]
fn a_hub_on_this_machine_needs_no_permission_and_a_link_moved_away_is_refused() {
    let hub = TestHub::start();
    let a = Device::new();
    let port = hub.url.rsplit(':').next().unwrap().to_owned();
    let (code, _, err) = sync_cli(&a, &["setup", "--hub", &format!("http://localhost:{port}")], "");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    let s = status(&a);
    assert_eq!(s["insecure_http"], false);
    assert_eq!(s["insecure_warning"], serde_json::Value::Null);
    a.sync();

    // A link made without the permission (before this rule, or edited) that now points away
    // from this machine is refused on its next sync, and says what to do.
    a.set_hub_url(&relay_to(&hub));
    let e = a.try_sync().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("--allow-insecure-http"), "{e}");
}

#[test]
fn a_certificate_authority_file_that_is_not_usable_is_refused_before_anything_is_sent() {
    let a = Device::new();
    let garbage = a.dir.path().join("ca.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    for (args, env) in [
        (vec!["--ca-file", garbage.to_str().unwrap()], None),
        (vec![], Some("/nonexistent/ca.pem")),
    ] {
        let mut cmd = cli(&a.db);
        cmd.arg("--settings")
            .arg(a.settings())
            .args(["sync", "setup", "--hub", "https://127.0.0.1:9"])
            .args(&args);
        match env {
            Some(v) => cmd.env("SITETRAIL_SYNC_CA_FILE", v),
            None => cmd.env_remove("SITETRAIL_SYNC_CA_FILE"),
        };
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("certificate authority file") && err.contains("not usable"),
            "{err}"
        );
    }
    assert_eq!(status(&a)["linked"], false);
}
