//! `sitetrail sync delete-account`: asked first, the account and everything of it deleted on a
//! real hub over a real PostgreSQL (nothing of it left in a dump), this device's history kept and
//! its link and key removed; another device of the account told in plain words on its next sync,
//! its history kept too.

use sitetrail::ErrorKind;

use crate::support::sync::{postgres, Device, TestHub};

/// Runs the CLI's `sitetrail sync ARGS` on `d` with `stdin`: (exit code, stdout, stderr). For
/// every test that drives the sync commands as a person would (not in sync_support: the benches
/// share that file without the CLI's test helpers).
pub(crate) fn sync_cli(d: &Device, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut cmd = crate::support::cli(&d.db);
    cmd.arg("--settings").arg(d.settings()).arg("sync").args(args);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, stdin.as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn key_files(d: &Device) -> usize {
    std::fs::read_dir(&d.key_dir).map_or(0, Iterator::count)
}

#[test]
fn delete_account_asks_deletes_everything_on_the_hub_and_the_others_are_told() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "alpha");
    b.join(&hub, "beta", &key);
    a.visit_at("https://example.org/a", "A", 10);
    b.visit_at("https://example.org/b", "B", 20);
    a.sync();
    b.sync();
    a.sync();
    assert_eq!(a.visits().len(), 2);
    let account = a
        .store
        .with_conn(sitetrail::sync::engine::get_link)
        .unwrap()
        .unwrap()
        .account_id;
    let id = account.hyphenated().to_string();
    let in_dump = || postgres::shared().dump_data(&hub.database).contains(&id);
    assert!(in_dump(), "the account is in the hub's dump before");

    // A wrong answer (or none) deletes nothing.
    for answer in ["", "yes\n", "00000000\n"] {
        let (code, _, err) = sync_cli(&a, &["delete-account"], answer);
        assert_ne!(code, 0, "{err}");
        assert!(
            err.contains(&id[..8]) && err.contains("nothing was deleted"),
            "{err}"
        );
    }
    assert!(in_dump());
    assert_eq!(
        hub.psql(&format!("SELECT count(*) FROM record WHERE account_id = '{id}'")),
        "2"
    );
    a.sync();

    let (code, out, err) = sync_cli(&a, &["delete-account"], &format!("{}\n", &id[..8]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the account was deleted on"), "{out}");
    let dump = postgres::shared().dump_data(&hub.database);
    assert!(!dump.contains(&id) && !dump.contains(&account.simple().to_string()));
    assert_eq!(hub.psql("SELECT count(*) FROM record"), "0");
    assert_eq!(hub.psql("SELECT count(*) FROM device"), "0");

    // This device: its history stays, its link and key are gone.
    assert_eq!(a.visits().len(), 2);
    assert_eq!(key_files(&a), 0);
    let (code, status, _) = sync_cli(&a, &["status", "--json"], "");
    assert_eq!(code, 0);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["linked"], false);

    // The other device: told in plain words, nothing lost, and it keeps recording.
    b.visit_at("https://example.org/c", "C", 30);
    let e = b.try_sync().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NeedsUser);
    let said = e.to_string();
    assert!(
        said.contains("the account was deleted on the hub, or its recovery key was replaced")
            && said.contains("join again with the new key")
            && said.contains("nothing recorded here is lost"),
        "{said}"
    );
    assert_eq!(b.visits().len(), 3);
    let (_, status, _) = sync_cli(&b, &["status", "--json"], "");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert!(
        status["last_error"]
            .as_str()
            .unwrap()
            .contains("the account was deleted on the hub"),
        "{status}"
    );
    // A wrong key at join is still said as a wrong key.
    let c = Device::new();
    let e = c.try_join(&hub, &key).unwrap_err();
    assert!(e.to_string().contains("does not open an account"), "{e}");

    // A plain `leave` (no --force): the hub refuses B for good, so B says so and leaves here,
    // keeping everything; a join then sends what it holds.
    let (code, out, err) = sync_cli(&b, &["leave", "--json"], "");
    assert_eq!(code, 0, "{err}");
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["left"], true);
    assert!(
        out["refused"]
            .as_str()
            .is_some_and(|r| r.contains("the account was deleted on the hub")),
        "{out}"
    );
    assert!(
        out["unsent"].as_u64().unwrap() >= 1,
        "the visit to /c was never sent: {out}"
    );
    assert_eq!(key_files(&b), 0);
    assert_eq!(b.visits().len(), 3);
    let key = c.setup(&hub, "gamma");
    b.join(&hub, "beta", &key);
    crate::support::sync::converge(&[&b, &c]);
    let mut urls: Vec<String> = c.visits().into_iter().map(|v| v.1).collect();
    urls.sort();
    assert_eq!(
        urls,
        ["https://example.org/b", "https://example.org/c"],
        "B's own visits, /c (never sent) too, reached the new account"
    );
}

#[test]
fn a_removed_device_leaves_plainly_saying_why() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "alpha");
    b.join(&hub, "beta", &key);
    b.visit_at("https://example.org/b", "B", 20);
    a.remove_device(&b.link().unwrap().device_id.to_string()).unwrap();
    let (code, out, err) = sync_cli(&b, &["leave"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the hub no longer takes this device's changes")
            && out.contains("has left the account")
            && out.contains("stay only on this device"),
        "{out}"
    );
    assert!(b.link().is_none());
    assert_eq!(b.visits().len(), 1);
}

#[test]
fn delete_account_with_the_hub_unreachable_keeps_the_link_and_the_account() {
    let hub = TestHub::start();
    let a = Device::new();
    a.setup(&hub, "alpha");
    a.sync();
    let url = hub.url.clone();
    // Nothing listens there.
    a.set_hub_url("http://127.0.0.1:9");
    let (code, _, err) = sync_cli(&a, &["delete-account", "--yes"], "");
    assert_eq!(code, 6, "offline: {err}");
    assert_eq!(key_files(&a), 1);
    assert_eq!(hub.psql("SELECT count(*) FROM account"), "1");

    a.set_hub_url(&url);
    let (code, out, err) = sync_cli(&a, &["delete-account", "--yes", "--json"], "");
    assert_eq!(code, 0, "{err}");
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["deleted"], true);
    assert!(out["account_id"].is_string());
    assert_eq!(hub.psql("SELECT count(*) FROM account"), "0");
    assert_eq!(key_files(&a), 0);
    // Not linked any more: nothing to delete.
    let (code, _, err) = sync_cli(&a, &["delete-account", "--yes"], "");
    assert_ne!(code, 0);
    assert!(err.contains("not linked"), "{err}");
}
