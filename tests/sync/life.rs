//! Sync through the events of a person's life with their devices (issue 27), on a real hub over a
//! real PostgreSQL: leaving and joining again with changes not yet sent (the hub up and down), a
//! database restored from a backup, a copy running on a second machine, a hub restored from its
//! `pg_dump`, lost devices filling the account, a join that fails half-way, a push the hub
//! refuses. Each ends with every device holding the same state, nothing lost and nothing twice.

use std::io::Write;
use std::process::Stdio;

use sitetrail::{Category, ErrorKind};

use crate::support::cli;
use crate::support::sync::{converge, postgres, Device, TestHub};

/// Every device holds the same visits (each once), times, categories, never-record list,
/// exclusions and websites.
fn same_state(devices: &[&Device]) {
    let first = devices[0];
    for d in &devices[1..] {
        assert_eq!(first.visits(), d.visits(), "visits");
        assert_eq!(first.times(), d.times(), "times");
        assert_eq!(first.blocked(), d.blocked(), "blocked");
        let categories = |d: &Device| {
            d.websites()
                .into_iter()
                .filter(|w| matches!(w.2.as_deref(), Some("user" | "ai")))
                .collect::<Vec<_>>()
        };
        assert_eq!(categories(first), categories(d), "categories");
        let domains = |d: &Device| d.websites().into_iter().map(|w| w.0).collect::<Vec<_>>();
        assert_eq!(domains(first), domains(d), "websites");
        assert_eq!(first.exclusions(), d.exclusions(), "exclusions");
    }
    let visits = first.visits();
    let mut ids: Vec<_> = visits.iter().map(|v| &v.0).collect();
    ids.dedup();
    assert_eq!(ids.len(), visits.len(), "each visit once");
}

fn urls(d: &Device) -> Vec<String> {
    let mut u: Vec<String> = d.visits().into_iter().map(|v| v.1).collect();
    u.sort();
    u
}

fn forget(d: &Device, domain: &str) {
    d.store
        .forget_website(domain, false, &Default::default(), &mut |_| {})
        .unwrap();
}

/// Syncs each device until every one of them went through a sync without an error.
fn converge_all(devices: &[&Device]) {
    for _ in 0..3 {
        for d in devices {
            d.sync();
        }
    }
    converge(devices);
}

#[test]
fn leaving_sends_what_was_queued_and_joining_again_sends_what_stayed_here() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://old.example/", "old", 10);
    a.visit_at("https://shared.example/", "shared", 11);
    let by_id = a.visit_at("https://by-id.example/", "by id", 12);
    a.visit_at("https://ranged.example/", "in a range", 50);
    a.store
        .set_user_category("shared.example", Category::News)
        .unwrap();
    converge(&[&a, &b]);

    // The hub is up: leaving first sends the visit and the forgetting made since the last sync.
    a.visit_at("https://unsent.example/", "unsent", 20);
    forget(&a, "old.example");
    let left = a.leave(false).unwrap();
    assert!(left.pushed >= 1, "{left:?}");
    assert_eq!(left.unsent, 0);
    b.sync();
    assert_eq!(
        urls(&b),
        [
            "https://by-id.example/",
            "https://ranged.example/",
            "https://shared.example/",
            "https://unsent.example/"
        ],
        "B got the visit and the forgetting"
    );

    // Meanwhile B changes the category: A's, sent again when it joins, is older and loses.
    b.store
        .set_user_category("shared.example", Category::Shopping)
        .unwrap();
    b.sync();
    // Not linked, A records and forgets; it joins again and sends all of it.
    a.visit_at("https://offline.example/", "made while not linked", 30);
    a.visit_at("https://dropped.example/", "dropped", 31);
    forget(&a, "dropped.example");
    a.store.forget_visits(&[by_id]).unwrap();
    a.store
        .forget_range(
            crate::support::sync::t(49),
            crate::support::sync::t(51),
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
    a.store.block_domain("ads.example").unwrap();
    a.store.exclude_host("bank.example").unwrap();
    a.join(&hub, "a again", &key);
    converge(&[&a, &b]);
    same_state(&[&a, &b]);
    // Every kind of change made while not linked arrived: a visit, forgetting by website, by id
    // and by range, blocking, an exclusion (same_state compares the exclusions).
    assert_eq!(b.blocked(), ["ads.example"]);
    assert_eq!(
        urls(&b),
        [
            "https://offline.example/",
            "https://shared.example/",
            "https://unsent.example/"
        ]
    );
    assert_eq!(
        b.store.website("shared.example").unwrap().category,
        Some(Category::Shopping),
        "a setting sent again keeps its old clock: the newer change on B stands"
    );
    assert_eq!(
        a.store.website("shared.example").unwrap().category,
        Some(Category::Shopping)
    );

    // The hub cannot be reached: leaving refuses, saying how many changes would stay here.
    a.visit_at("https://stranded.example/", "stranded", 40);
    forget(&a, "offline.example");
    a.set_hub_url("http://127.0.0.1:9");
    let e = a.leave(false).expect_err("the hub is down");
    assert_eq!(e.kind(), ErrorKind::Offline, "{e}");
    assert!(e.to_string().contains("would stay only on this device"), "{e}");
    assert!(e.to_string().contains("--force"), "{e}");
    assert!(a.link().is_some(), "still linked");
    let left = a.leave(true).unwrap();
    assert!(left.unsent >= 2, "the visit and the forgetting: {left:?}");
    assert!(a.link().is_none());
    // Joining again sends them.
    a.join(&hub, "a", &key);
    converge(&[&a, &b]);
    same_state(&[&a, &b]);
    assert_eq!(
        urls(&b),
        [
            "https://shared.example/",
            "https://stranded.example/",
            "https://unsent.example/"
        ]
    );
    // What was sent again is kept once: one tombstone per website forgotten (old, dropped,
    // offline), however often A linked since, and one per range and visit id.
    let tombstones = |kind: &str| -> i64 {
        b.store
            .with_conn(|c| {
                Ok(
                    c.query_row("SELECT count(*) FROM tombstone WHERE kind = ?1", [kind], |r| {
                        r.get(0)
                    })?,
                )
            })
            .unwrap()
    };
    assert_eq!(tombstones("website"), 3);
    assert_eq!(tombstones("range"), 1);
    assert_eq!(tombstones("visit"), 1);
}

#[test]
fn a_database_restored_from_a_backup_taken_before_its_last_push_goes_on_as_a_new_device() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://before-backup.example/", "1", 10);
    converge(&[&a, &b]);
    let backup = Device::copy_of(&a);
    a.visit_at("https://after-backup.example/", "2", 20);
    a.sync();
    let old_id = a.link().unwrap().device_id;
    // A's disk dies; the backup is restored on the same machine, and life goes on.
    drop(a);
    let a = backup;
    a.visit_at("https://after-restore.example/", "3", 30);
    forget(&a, "before-backup.example");
    let r = a.sync();
    assert!(r.healed, "{r:?}");
    let link = a.link().unwrap();
    assert_ne!(link.device_id, old_id, "a new device id");
    let notice = link.notice.expect("a notice");
    assert!(notice.contains("restored from a backup"), "{notice}");
    assert!(link.notice_at.is_some());
    converge_all(&[&a, &b]);
    same_state(&[&a, &b]);
    assert_eq!(
        urls(&a),
        ["https://after-backup.example/", "https://after-restore.example/"],
        "its own visit pushed after the backup came back from the hub"
    );
    // The old id is one of the others now, and was not told to leave.
    let devices = a.hub_devices();
    assert_eq!(devices.len(), 3);
    assert!(devices.iter().all(|d| d.left_at.is_none()));
    // The status says it, in words and in JSON.
    let out = cli(&a.db)
        .arg("--settings")
        .arg(a.settings())
        .args(["sync", "status", "--json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        status["notice"].as_str().unwrap().contains("new device"),
        "{status}"
    );
    assert!(status["notice_at"].is_string(), "{status}");
}

#[test]
fn a_copy_syncing_on_a_second_machine_becomes_a_second_device_and_neither_is_refused() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://shared-past.example/", "past", 10);
    converge(&[&a, &b]);
    // The whole profile is copied to a new laptop, and both go on.
    let c = Device::copy_of(&a);
    for round in 0..3 {
        a.visit_at(&format!("https://a{round}.example/"), "a", 100 + round);
        c.visit_at(&format!("https://c{round}.example/"), "c", 200 + round);
        a.store.block_domain(&format!("ads{round}.example")).unwrap();
        c.store.exclude_host(&format!("bank{round}.example")).unwrap();
        // Neither machine is ever refused.
        a.sync();
        c.sync();
        b.sync();
    }
    forget(&c, "a0.example");
    converge_all(&[&a, &b, &c]);
    same_state(&[&a, &b, &c]);
    assert_ne!(a.link().unwrap().device_id, c.link().unwrap().device_id);
    assert_eq!(urls(&b).len(), 6, "{:?}", urls(&b));
    let devices = b.hub_devices();
    assert!(devices.iter().all(|d| d.left_at.is_none()), "{devices:?}");
    assert_eq!(
        devices.len(),
        3,
        "a (keeping the id it shared with c), b, and c as a new device"
    );
    assert_eq!(a.blocked().len(), 3);
}

#[test]
fn a_hub_restored_from_its_dump_heals_every_device_that_pushed_since() {
    let pg = postgres::shared();
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://before-dump.example/", "1", 10);
    converge(&[&a, &b]);
    let dump = hub.dump();
    a.visit_at("https://a-after-dump.example/", "2", 20);
    a.store
        .set_user_category("before-dump.example", Category::Education)
        .unwrap();
    b.visit_at("https://b-after-dump.example/", "3", 30);
    b.visit_at("https://forgotten.example/", "4", 31);
    converge(&[&a, &b]);
    forget(&b, "forgotten.example");
    b.sync();
    a.sync();
    // The hub's machine is lost; the operator restores the dump.
    drop(hub);
    let restored = pg.create_database("restored");
    pg.restore(&restored, &dump);
    let hub = TestHub::start_on_database(pg, restored);
    a.set_hub_url(&hub.url);
    b.set_hub_url(&hub.url);
    let (ra, rb) = (a.sync(), b.sync());
    assert!(ra.healed && rb.healed, "{ra:?} {rb:?}");
    let notice = a.link().unwrap().notice.unwrap();
    assert!(notice.contains("hub had lost"), "{notice}");
    converge_all(&[&a, &b]);
    // A new device gets everything, though the hub lost it: the devices sent it again.
    let c = Device::new();
    c.join(&hub, "c", &key);
    converge_all(&[&a, &b, &c]);
    same_state(&[&a, &b, &c]);
    assert_eq!(
        urls(&c),
        [
            "https://a-after-dump.example/",
            "https://b-after-dump.example/",
            "https://before-dump.example/"
        ]
    );
    assert_eq!(
        c.store.website("before-dump.example").unwrap().category,
        Some(Category::Education)
    );
    // The old ids (only those devices wrote to them) no longer count.
    let active = c.hub_devices().iter().filter(|d| d.left_at.is_none()).count();
    assert_eq!(active, 3);
}

/// A device that joined after the hub's last dump is unknown to the hub restored from it: it is
/// not one that left (nothing tells it to join again), so leaving it, without `--force`, first
/// registers it again, heals it and sends what it recorded; leaving a second time (the hub now
/// unknowing again after another restore) has nothing to tell and simply leaves.
#[test]
fn a_device_unknown_to_a_restored_hub_leaves_it_without_force_and_loses_nothing() {
    let pg = postgres::shared();
    let hub = TestHub::start();
    let a = Device::new();
    let key = a.setup(&hub, "a");
    a.visit_at("https://before-dump.example/", "1", 10);
    a.sync();
    let dump = hub.dump();
    // B joins after the dump and records while the hub is down.
    let b = Device::new();
    b.join(&hub, "b", &key);
    drop(hub);
    b.visit_at("https://b-while-down.example/", "2", 20);
    let restored = pg.create_database("restored");
    pg.restore(&restored, &dump);
    let hub = TestHub::start_on_database(pg, restored);
    a.set_hub_url(&hub.url);
    b.set_hub_url(&hub.url);
    assert!(
        !b.hub_devices()
            .iter()
            .any(|d| Some(d.device_id) == b.link().map(|l| l.device_id)),
        "the restored hub knows nothing of B"
    );
    let left = b.leave(false).expect("a plain leave");
    assert_eq!(left.unsent, 0, "{left:?}");
    assert!(left.refused.is_none(), "{left:?}");
    a.sync();
    assert_eq!(
        urls(&a),
        ["https://b-while-down.example/", "https://before-dump.example/"]
    );
    // Joined again, then the hub restored once more from that same old dump: a leave with
    // nothing to send is told nothing, and is no error.
    b.join(&hub, "b", &key);
    b.sync();
    drop(hub);
    let again = pg.create_database("restored-again");
    pg.restore(&again, &dump);
    let hub = TestHub::start_on_database(pg, again);
    b.set_hub_url(&hub.url);
    let left = b.leave(false).expect("a plain leave, with nothing to send");
    assert_eq!(left.unsent, 0, "{left:?}");
    assert!(b.link().is_none());
}

#[test]
fn lost_devices_fill_the_account_until_they_are_removed_and_a_new_one_joins() {
    let hub = TestHub::start();
    let a = Device::new();
    let key = a.setup(&hub, "keeper");
    a.visit_at("https://kept.example/", "kept", 10);
    a.sync();
    // Machines wiped or reinstalled, never seen again: each registered, none left.
    let keys = sitetrail::sync::crypto::AccountSecret::from_recovery_key(&key)
        .unwrap()
        .keys();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut lost = 0;
    for _ in 0..70 {
        let id = uuid::Uuid::now_v7();
        let client =
            sitetrail::sync::client::HubClient::new(&hub.url, keys.account_id, keys.login.clone(), Some(id))
                .unwrap();
        if rt.block_on(client.register_device(id)).is_err() {
            break;
        }
        lost += 1;
    }
    assert!(lost < 70, "the account is full before 70");
    let new = Device::new();
    let e = new.try_join(&hub, &key).expect_err("the account is full");
    assert!(e.to_string().contains("leave first"), "{e}");
    assert!(new.link().is_none(), "a refused join leaves nothing here");

    // The CLI refuses an ambiguous name and this device, and removes one by id.
    let sync_cli = |args: &[&str]| {
        let out = cli(&a.db)
            .arg("--settings")
            .arg(a.settings())
            .arg("sync")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = sync_cli(&["devices", "remove", "keeper"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sync leave"), "{err}");
    let devices = a.hub_devices();
    let others: Vec<_> = devices.iter().filter(|d| !d.this_device).collect();
    assert_eq!(others.len(), lost);
    let first = others[0].device_id.to_string();
    let (code, removed, err) = sync_cli(&["devices", "remove", &first, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(removed["removed"], true);
    assert_eq!(removed["device"]["device_id"], first.as_str());
    for d in &others[1..] {
        a.remove_device(&d.device_id.to_string()).unwrap();
    }
    let (code, devices, _) = sync_cli(&["devices", "--json"]);
    assert_eq!(code, 0);
    let active = devices["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["left_at"].is_null())
        .count();
    assert_eq!(active, 1, "only the keeper counts");

    new.join(&hub, "new", &key);
    converge(&[&a, &new]);
    same_state(&[&a, &new]);
    assert_eq!(urls(&new), ["https://kept.example/"]);
}

#[test]
fn a_join_that_fails_after_registering_leaves_nothing_behind() {
    let hub = TestHub::start();
    let a = Device::new();
    let key = a.setup(&hub, "a");
    let b = Device::new();
    b.visit_at("https://b.example/", "b", 10);
    // B's key folder cannot be made (a file stands where its parent folder goes): the join
    // fails after the hub registered B.
    let config = b.key_dir.parent().unwrap().to_path_buf();
    std::fs::write(&config, b"not a folder").unwrap();
    let e = b.try_join(&hub, &key).expect_err("no key folder");
    assert!(b.link().is_none(), "no link: {e}");
    let status = b.store.with_conn(sitetrail::sync::engine::status).unwrap();
    assert_eq!(status.pending, 0);
    let devices = a.hub_devices();
    assert_eq!(devices.len(), 2, "B was registered");
    let b_on_hub = devices.iter().find(|d| !d.this_device).unwrap();
    assert!(b_on_hub.left_at.is_some(), "and removed again: {devices:?}");
    // Fixed, B joins, and `sync join` syncs at once.
    std::fs::remove_file(&config).unwrap();
    let mut join = cli(&b.db);
    join.arg("--settings")
        .arg(b.settings())
        .args(["sync", "join", "--hub", &hub.url, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = join.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{key}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let joined: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(joined["first_sync"]["pushed"].as_u64().unwrap() >= 1, "{joined}");
    assert!(joined["first_sync_error"].is_null(), "{joined}");
    a.sync();
    same_state(&[&a, &b]);
    assert_eq!(urls(&a), ["https://b.example/"]);
}

#[test]
fn a_push_the_hub_refuses_does_not_stop_the_pull() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    converge(&[&a, &b]);
    // The hub's database refuses A's records (a broken disk, a bad migration: anything).
    let a_id = a.link().unwrap().device_id;
    hub.psql(&format!(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no'; END $$;
         CREATE TRIGGER refuse BEFORE INSERT ON record FOR EACH ROW
             WHEN (NEW.device_id = '{a_id}') EXECUTE FUNCTION refuse();"
    ));
    b.visit_at("https://from-b.example/", "b", 10);
    b.sync();
    a.visit_at("https://from-a.example/", "a", 20);
    let e = a.try_sync().expect_err("A's push is refused");
    assert_eq!(e.kind(), ErrorKind::Offline, "{e}");
    assert_eq!(
        urls(&a),
        ["https://from-a.example/", "https://from-b.example/"],
        "the pull ran all the same"
    );
    let status = a.store.with_conn(sitetrail::sync::engine::status).unwrap();
    assert!(status.pending >= 1, "A's visit waits");
    assert!(status.link.unwrap().last_error.is_some());
    hub.psql("DROP TRIGGER refuse ON record");
    converge(&[&a, &b]);
    same_state(&[&a, &b]);
}
