//! What another party sends cannot stop a device syncing (issue 27): a record that does not
//! open, does not inflate or parse, or would inflate past its cap is skipped, counted in
//! `sync status` (per device and index), and never applied, while the rest of its series and
//! every other series apply; and a page of records that inflate to their caps is applied within
//! a bounded memory (the device's `sync now` measured as a child process).
//!
//! The records are pushed by a "rogue" device: a device id registered with the account's login
//! (anyone holding the recovery key can), pushing through the hub's HTTP API what it likes.

use std::time::Duration;

use serde_json::Value;
use sitetrail::sync::client::HubClient;
use sitetrail::sync::crypto::{AccountKeys, AccountSecret, Place};
use sitetrail::sync_log::ops::{self, Op};
use sitetrail_sync_wire as wire;
use uuid::Uuid;

use crate::support::sync::{Device, TestHub};
use crate::support::{cli, run_ok};

/// A device of the account that pushes whatever the test gives it.
struct Rogue {
    rt: tokio::runtime::Runtime,
    keys: AccountKeys,
    client: HubClient,
    device: Uuid,
}

/// What a rogue record carries.
enum Content {
    /// Operations, packed and sealed as a device would.
    Ops(Vec<Op>),
    /// Plaintext sealed as is (opens, but may not inflate or parse).
    Plain(Vec<u8>),
    /// Bytes that are not a sealed record at all.
    Garbage(Vec<u8>),
    /// Operations sealed for another index (moved).
    SealedFor(u64, Vec<Op>),
}

impl Rogue {
    fn new(hub: &TestHub, recovery_key: &str) -> Rogue {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let keys = AccountSecret::from_recovery_key(recovery_key).unwrap().keys();
        let device = Uuid::now_v7();
        let client = HubClient::new(&hub.url, keys.account_id, keys.login.clone(), Some(device)).unwrap();
        rt.block_on(client.register_device(device)).unwrap();
        Rogue {
            rt,
            keys,
            client,
            device,
        }
    }

    fn sealed(&self, idx: u64, record_id: Uuid, plain: &[u8]) -> Vec<u8> {
        let series = wire::Series::new("ops").unwrap();
        self.keys.seal(
            &Place {
                device_id: self.device,
                series: &series,
                idx,
                record_id,
            },
            plain,
        )
    }

    /// Pushes `contents` as this device's records `first..`.
    fn push(&self, first: u64, contents: Vec<Content>) {
        let records = contents
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let idx = first + i as u64;
                let record_id = Uuid::now_v7();
                let payload = match c {
                    Content::Ops(list) => self.sealed(idx, record_id, &pack(&list)),
                    Content::Plain(p) => self.sealed(idx, record_id, &p),
                    Content::Garbage(g) => g,
                    Content::SealedFor(other, list) => self.sealed(other, record_id, &pack(&list)),
                };
                wire::Record {
                    record_id,
                    device_id: self.device,
                    series: wire::Series::new("ops").unwrap(),
                    idx,
                    payload: wire::Payload(payload),
                }
            })
            .collect();
        let results = self.rt.block_on(self.client.push(records)).unwrap();
        assert!(results.iter().all(|r| r.status.is_acknowledged()), "{results:?}");
    }
}

fn pack(list: &[Op]) -> Vec<u8> {
    let stamped: Vec<(i64, String)> = list
        .iter()
        .enumerate()
        .map(|(i, op)| (1_000 + i as i64, op.to_json()))
        .collect();
    ops::pack(&stamped)
}

fn visit(url: &str) -> Op {
    Op::Visit {
        id: sitetrail::ids::VisitId::new(),
        url: url.to_owned(),
        title: Some("from the rogue".into()),
        at: crate::support::sync::t(5).0,
        source: "extension".into(),
        active_ms: None,
        estimated_ms: None,
    }
}

fn deflated(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn status_json(d: &Device) -> Value {
    let out = run_ok(
        cli(&d.db)
            .arg("--settings")
            .arg(d.settings())
            .args(["sync", "status", "--json"]),
    );
    serde_json::from_str(&out).unwrap()
}

fn urls(d: &Device) -> Vec<String> {
    let mut u: Vec<String> = d.visits().into_iter().map(|v| v.1).collect();
    u.sort();
    u
}

#[test]
fn a_record_that_cannot_be_read_is_skipped_and_shown_and_everything_else_applies() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://a-before.example/", "before", 1);
    a.sync();

    // One rogue series with a garbage record in the middle, and records that open but do not
    // inflate, do not parse, would inflate past the cap, or were sealed for another index.
    let r = Rogue::new(&hub, &key);
    let too_large = vec![b' '; usize::try_from(ops::MAX_INFLATED_BYTES).unwrap() + 1];
    r.push(
        1,
        vec![
            Content::Ops(vec![visit("https://rogue-1.example/")]),
            Content::Garbage(vec![0x5a; 64]),
            Content::Ops(vec![visit("https://rogue-3.example/")]),
            Content::Plain(b"not deflate".to_vec()),
            Content::Plain(deflated(b"{\"not\": \"a list\"}")),
            Content::Plain(deflated(&too_large)),
            Content::SealedFor(99, vec![visit("https://moved.example/")]),
            Content::Ops(vec![visit("https://rogue-8.example/")]),
        ],
    );
    // A second rogue whose very first record is garbage.
    let r2 = Rogue::new(&hub, &key);
    r2.push(
        1,
        vec![
            Content::Garbage(b"sixty-four bytes of nothing in particular, not a record at all".to_vec()),
            Content::Ops(vec![visit("https://second-2.example/")]),
        ],
    );
    a.visit_at("https://a-after.example/", "after", 2);
    a.sync();

    let report = b.sync();
    assert_eq!(report.unreadable, 6, "{report:?}");
    let expected = [
        "https://a-after.example/",
        "https://a-before.example/",
        "https://rogue-1.example/",
        "https://rogue-3.example/",
        "https://rogue-8.example/",
        "https://second-2.example/",
    ];
    assert_eq!(
        urls(&b),
        expected,
        "every readable record of every series applied, nothing else"
    );

    // Shown per device and index, for scripts and for people.
    let s = status_json(&b);
    assert_eq!(s["unreadable_count"], 6, "{s}");
    let mut listed: Vec<(String, u64, String)> = s["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            assert_eq!(u["series"], "ops");
            (
                u["device_id"].as_str().unwrap().to_owned(),
                u["idx"].as_u64().unwrap(),
                u["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    listed.sort();
    let (rd, r2d) = (r.device.to_string(), r2.device.to_string());
    let mut want = vec![
        (rd.clone(), 2, "does_not_open".to_owned()),
        (rd.clone(), 4, "damaged".to_owned()),
        (rd.clone(), 5, "damaged".to_owned()),
        (rd.clone(), 6, "too_large".to_owned()),
        (rd.clone(), 7, "does_not_open".to_owned()),
        (r2d.clone(), 1, "does_not_open".to_owned()),
    ];
    want.sort();
    assert_eq!(listed, want);
    let human = run_ok(
        cli(&b.db)
            .arg("--settings")
            .arg(b.settings())
            .args(["sync", "status"]),
    );
    assert!(
        human.contains("could not be read: 6 record(s) of other devices were skipped"),
        "{human}"
    );

    // The next syncs go on: nothing counted twice, new records arrive, from the rogue too.
    a.visit_at("https://a-later.example/", "later", 3);
    a.sync();
    r.push(9, vec![Content::Ops(vec![visit("https://rogue-9.example/")])]);
    let again = b.sync();
    assert_eq!(again.unreadable, 0, "{again:?}");
    assert!(urls(&b).contains(&"https://a-later.example/".to_owned()));
    assert!(urls(&b).contains(&"https://rogue-9.example/".to_owned()));
    assert_eq!(status_json(&b)["unreadable_count"], 6);

    // A device joining now gets the same, and is told the same.
    let c = Device::new();
    c.join(&hub, "c", &key);
    let first = c.sync();
    assert_eq!(first.unreadable, 6, "{first:?}");
    assert_eq!(urls(&c), urls(&b));
}

/// Peak resident memory (KiB) of a child process, read from `/proc/<pid>/status` (`VmHWM`, the
/// high-water mark) until it exits; `during` runs while it does.
fn run_measured(cmd: &mut std::process::Command, during: impl FnOnce()) -> (std::process::Output, u64) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(kib) = std::fs::read_to_string(&status).ok().and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("VmHWM:"))
                        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
                }) {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    during();
    let out = child.wait_with_output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, watcher.join().unwrap())
}

#[test]
fn a_page_of_records_inflating_to_their_caps_is_applied_within_a_bounded_memory() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    b.sync();
    // Records of 1,000 operations each whose contents inflate to just under the cap (16 MiB):
    // device names of ~16 KiB (cut to 64 characters when applied).
    let cap = usize::try_from(ops::MAX_INFLATED_BYTES).unwrap();
    let per_op = cap / 1_000 - 64;
    let big = |record: u64| -> Vec<Op> {
        (0..1_000)
            .map(|i| Op::Device {
                name: format!("{record:03}-{i:04}{}", "n".repeat(per_op - 8)),
            })
            .collect()
    };
    let plain = pack(&big(0));
    let inflated = ops::inflate(&plain).unwrap().len();
    assert!(inflated > cap - cap / 100 && inflated <= cap, "{inflated}");
    let r = Rogue::new(&hub, &key);
    let records = 10;
    r.push(1, (0..records).map(|i| Content::Ops(big(i))).collect());
    r.push(
        records + 1,
        vec![Content::Ops(vec![visit("https://after-the-big-ones.example/")])],
    );

    // Once the first record is applied, another writer (the browser's, another process) holds
    // the write lock for 3 s: the pull cannot apply meanwhile, and must not read ahead past its
    // budget (all of the page would be over 200 MiB).
    let rogue = r.device;
    let hold_the_lock = || {
        let applied = || -> i64 {
            b.store
                .with_conn(|c| {
                    Ok(c.query_row(
                        "SELECT coalesce(max(last_idx), 0) FROM sync_applied WHERE device_id = ?1",
                        [rogue.as_bytes().as_slice()],
                        |r| r.get(0),
                    )
                    .unwrap_or(0))
                })
                .unwrap()
        };
        assert!(crate::support::wait_for(Duration::from_secs(60), || applied() >= 1));
        let conn = rusqlite::Connection::open(&b.db).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        std::thread::sleep(Duration::from_secs(3));
        conn.execute_batch("COMMIT").unwrap();
    };
    let (out, peak_kib) = run_measured(
        cli(&b.db)
            .arg("--settings")
            .arg(b.settings())
            .args(["sync", "now", "--json"]),
        hold_the_lock,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["pulled"], records + 1, "{report}");
    assert_eq!(report["unreadable"], 0, "{report}");
    assert_eq!(urls(&b), ["https://after-the-big-ones.example/"]);
    eprintln!("sync now applying {records} records of {inflated} bytes each: peak RSS {peak_kib} KiB");
    // The budget (64 MiB of records read and not applied) and the process itself.
    assert!(peak_kib > 0, "the child's memory was read");
    assert!(
        peak_kib < 128 * 1024,
        "peak RSS {peak_kib} KiB: more than the budget allows"
    );
}
