//! The native-messaging host as the browser runs it: the real `sitetrail native-host` binary on
//! pipes, a real SQLite file. Framing, acknowledgements after COMMIT, idempotent retries, and
//! hostile input that must neither crash it nor leave anything half-written.

#![allow(unsafe_code)] // setrlimit in a child before exec

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{count, wait_for, TempDb};

/// A running host: its stdin, and its replies read by a thread.
pub struct HostProc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    replies: Receiver<Option<Value>>,
}

impl HostProc {
    pub fn start(db: &Path, env: &[(&str, &str)]) -> HostProc {
        HostProc::start_with(db, env, |_| {})
    }

    pub fn start_with(db: &Path, env: &[(&str, &str)], adjust: impl FnOnce(&mut Command)) -> HostProc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sitetrail"));
        cmd.arg("--db")
            .arg(db)
            .args(["native-host", "--browser", "chromium", "chrome-extension://test/"])
            .env_remove("SITETRAIL_DB")
            .env_remove("SITETRAIL_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        adjust(&mut cmd);
        let mut child = cmd.spawn().expect("start sitetrail native-host");
        let mut stdout = child.stdout.take().expect("stdout");
        let (tx, replies) = channel();
        std::thread::spawn(move || loop {
            let mut len = [0u8; 4];
            if stdout.read_exact(&mut len).is_err() {
                let _ = tx.send(None);
                return;
            }
            let n = u32::from_ne_bytes(len) as usize;
            assert!(
                n <= 1024 * 1024,
                "the host sent {n} bytes, over the browsers' limit"
            );
            let mut body = vec![0u8; n];
            if stdout.read_exact(&mut body).is_err() {
                let _ = tx.send(None);
                return;
            }
            let v: Value = serde_json::from_slice(&body).expect("the host's replies are JSON");
            if tx.send(Some(v)).is_err() {
                return;
            }
        });
        HostProc {
            stdin: child.stdin.take(),
            child,
            replies,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to host");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, msg: &Value) {
        let body = serde_json::to_vec(msg).unwrap();
        let mut framed = (body.len() as u32).to_ne_bytes().to_vec();
        framed.extend(body);
        self.send_raw(&framed);
    }

    /// The next reply (panics after 20 s, or if the host closed its output).
    pub fn recv(&self) -> Value {
        match self.replies.recv_timeout(Duration::from_secs(20)) {
            Ok(Some(v)) => v,
            Ok(None) => panic!("the host closed its output"),
            Err(_) => panic!("no reply from the host within 20 s"),
        }
    }

    /// True if the host closed its output (exited) within `timeout`.
    pub fn closed_within(&self, timeout: Duration) -> bool {
        matches!(self.replies.recv_timeout(timeout), Ok(None))
    }

    pub fn request(&mut self, msg: &Value) -> Value {
        self.send(msg);
        self.recv()
    }

    /// Closes stdin (the browser closed the port) and waits for the exit status.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait_exit(&mut self.child, Duration::from_secs(20))
    }
}

fn wait_exit(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let mut status = None;
    assert!(
        wait_for(timeout, || {
            status = child.try_wait().expect("wait");
            status.is_some()
        }),
        "the host did not exit"
    );
    status.expect("an exit status")
}

impl Drop for HostProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

pub fn visit_event(id: &str, url: &str, title: Option<&str>, at: i64) -> Value {
    json!({"id": id, "kind": "visit", "visit": id, "url": url, "title": title, "at": at})
}

pub fn update_event(id: &str, visit: &str, title: Option<&str>, active_ms: Option<i64>) -> Value {
    let mut v = json!({"id": id, "kind": "update", "visit": visit});
    if let Some(t) = title {
        v["title"] = json!(t);
    }
    if let Some(ms) = active_ms {
        v["active_ms"] = json!(ms);
    }
    v
}

pub fn batch(n: u64, events: Vec<Value>) -> Value {
    json!({"type": "events", "batch": n, "events": events})
}

/// (url, title, source_visit_id, active_ms) of a stored visit.
pub type StoredVisit = (String, Option<String>, Option<String>, Option<i64>);

/// Every visit, oldest first.
pub fn stored_visits(db: &Path) -> Vec<StoredVisit> {
    let store = sitetrail::Store::open(db).unwrap();
    store
        .with_conn(|c| {
            let mut st = c.prepare(
                "SELECT v.url, v.title, v.source_visit_id, t.active_ms FROM visit v
                 LEFT JOIN visit_time t ON t.visit_id = v.id ORDER BY v.id",
            )?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap()
}

#[test]
fn visits_titles_and_active_time_are_stored_and_acknowledged_after_commit() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let hello = host.request(&json!({"type": "hello", "protocol": 1, "extension_version": "t"}));
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["ok"], true);
    assert_eq!(hello["browser"], "chromium");
    assert_eq!(hello["db"], db.path.display().to_string());

    let t = now_ms();
    let ack = host.request(&batch(
        1,
        vec![
            visit_event("v1", "https://news.test/a", None, t),
            update_event("u1", "v1", Some("Final title"), None),
            update_event("u2", "v1", None, Some(4_000)),
            visit_event("v2", "https://shop.test/", Some("Shop"), t + 5_000),
        ],
    ));
    assert_eq!(ack["type"], "ack");
    assert_eq!(ack["batch"], 1);
    assert_eq!(ack["stored"], json!(["v1", "u1", "u2", "v2"]));
    // The ack came after COMMIT: another connection sees everything at once.
    let rows = stored_visits(&db.path);
    assert_eq!(
        rows,
        vec![
            (
                "https://news.test/a".into(),
                Some("Final title".into()),
                Some("v1".into()),
                Some(4_000)
            ),
            (
                "https://shop.test/".into(),
                Some("Shop".into()),
                Some("v2".into()),
                None
            ),
        ]
    );
    let store = db.open();
    assert_eq!(count(&store, "website"), 2);
    assert_eq!(
        count(&store, "website_category_classification_outbox"),
        2,
        "each new website is queued for classification with its visit"
    );
    assert!(host.finish().success());
}

#[test]
fn a_batch_sent_again_is_stored_once_and_an_older_total_never_lowers_a_newer_one() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    let events = vec![
        visit_event("v1", "https://a.test/", Some("A"), t),
        update_event("u1", "v1", None, Some(9_000)),
    ];
    for n in 1..=3 {
        let ack = host.request(&batch(n, events.clone()));
        assert_eq!(
            ack["stored"],
            json!(["v1", "u1"]),
            "resend {n} is acknowledged again"
        );
    }
    // The visit again, with an older running total merged in (sent late): the total stays.
    let mut late = visit_event("v1", "https://a.test/", Some("A"), t);
    late["active_ms"] = json!(3_000);
    host.request(&batch(4, vec![late]));
    assert_eq!(
        stored_visits(&db.path),
        vec![(
            "https://a.test/".into(),
            Some("A".into()),
            Some("v1".into()),
            Some(9_000)
        )]
    );
    assert!(host.finish().success());
}

#[test]
fn an_event_that_can_never_be_stored_is_refused_alone_and_leaves_nothing() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    let ack = host.request(&batch(
        7,
        vec![
            visit_event("ok1", "https://fine.test/", None, t),
            visit_event("bad1", "chrome://settings/", None, t),
            visit_event(
                "bad2",
                &format!("https://long.test/{}", "x".repeat(40_000)),
                None,
                t,
            ),
            visit_event("bad3", "https://old.test/", None, 5),
            json!({"id": "bad4", "kind": "visit", "url": 42}),
            json!("not an event"),
            update_event("upd", "never-sent", Some("x"), Some(5)),
            visit_event("ok2", "https://fine.test/2", None, t + 1),
        ],
    ));
    assert_eq!(ack["stored"], json!(["ok1", "upd", "ok2"]));
    let rejected: Vec<Option<&str>> = ack["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str())
        .collect();
    assert_eq!(
        rejected,
        vec![Some("bad1"), Some("bad2"), Some("bad3"), Some("bad4"), None]
    );
    for r in ack["rejected"].as_array().unwrap() {
        assert!(!r["reason"].as_str().unwrap().is_empty());
    }
    let store = db.open();
    assert_eq!(count(&store, "visit"), 2);
    assert_eq!(count(&store, "website"), 1, "no website for a refused visit");
    assert_eq!(count(&store, "visit_time"), 0);
    assert!(host.finish().success());
}

#[test]
fn malformed_and_oversized_messages_get_errors_and_the_host_reads_on() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    host.send_raw(&[3, 0, 0, 0]);
    host.send_raw(b"{x}");
    assert_eq!(host.recv()["kind"], "bad_json");
    assert_eq!(
        host.request(&json!({"type": "events", "batch": 2}))["kind"],
        "bad_message"
    );
    assert_eq!(host.request(&json!([1, 2, 3]))["kind"], "bad_message");
    // Over the host's 4 MiB limit but under the browser's 64 MiB: skipped, answered, and the
    // stream stays in step.
    let big = format!(
        r#"{{"type":"events","batch":3,"events":[{{"id":"huge","kind":"visit","url":"https://a.test/","title":"{}","at":1800000000000}}]}}"#,
        "t".repeat(5 * 1024 * 1024)
    );
    host.send_raw(&(big.len() as u32).to_ne_bytes());
    host.send_raw(big.as_bytes());
    let reply = host.recv();
    assert_eq!(reply["kind"], "too_large");
    assert_eq!(host.request(&json!({"type": "ping"}))["type"], "pong");
    let too_many: Vec<Value> = (0..1001)
        .map(|i| visit_event(&format!("e{i}"), "https://a.test/", None, now_ms()))
        .collect();
    let reply = host.request(&batch(4, too_many));
    assert_eq!(
        (reply["kind"].as_str(), reply["batch"].as_u64()),
        (Some("too_many_events"), Some(4))
    );
    assert_eq!(
        count(&db.open(), "visit"),
        0,
        "nothing of a refused message was stored"
    );
    assert!(host.finish().success());
}

#[test]
fn a_4_gib_length_prefix_ends_the_host_cleanly_without_allocating_it() {
    let db = TempDb::new();
    // An address-space limit far below 4 GiB: allocating the announced length would abort.
    let mut host = HostProc::start_with(&db.path, &[], |cmd| {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe; it only limits the child about to exec.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 1 << 30,
                    rlim_max: 1 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    host.request(&json!({"type": "hello"}));
    let pid = host.child.id();
    host.send_raw(&u32::MAX.to_ne_bytes());
    let reply = host.recv();
    assert_eq!(reply["kind"], "corrupt_stream");
    assert!(
        host.closed_within(Duration::from_secs(10)),
        "the host stops reading a corrupt stream"
    );
    let status = wait_exit(&mut host.child, Duration::from_secs(10));
    assert_eq!(
        status.code(),
        Some(1),
        "a clean error exit, not a crash (pid {pid})"
    );
}

#[test]
fn garbage_input_never_crashes_the_host() {
    let db = TempDb::new();
    let mut rng = fastrand::Rng::with_seed(9);
    for round in 0..20 {
        let mut host = HostProc::start(&db.path, &[]);
        // Frames of random bytes with honest lengths, then a ping that must still be answered.
        for _ in 0..20 {
            let len = rng.usize(0..300);
            let body: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            host.send_raw(&(len as u32).to_ne_bytes());
            host.send_raw(&body);
            assert_eq!(host.recv()["type"], "error", "round {round}");
        }
        assert_eq!(host.request(&json!({"type": "ping"}))["type"], "pong");
        // Then a prefix cut short: the host just ends.
        host.send_raw(&[1, 2]);
        let status = host.finish();
        assert!(status.success(), "round {round}: {status:?}");
    }
    assert_eq!(count(&db.open(), "visit"), 0);
}

#[test]
fn killed_between_commit_and_ack_the_resent_batch_is_stored_once() {
    let db = TempDb::new();
    let t = now_ms();
    let events: Vec<Value> = (0..5)
        .map(|i| visit_event(&format!("v{i}"), &format!("https://site{i}.test/"), None, t + i))
        .collect();
    {
        // The host commits, then waits before acknowledging: kill -9 it in between.
        let mut host = HostProc::start(&db.path, &[("SITETRAIL_NATIVE_HOST_ACK_DELAY_MS", "60000")]);
        host.send(&batch(1, events.clone()));
        let store = db.open();
        assert!(wait_for(Duration::from_secs(20), || count(&store, "visit") == 5));
        host.child.kill().unwrap();
        assert!(host.closed_within(Duration::from_secs(10)), "no ack was sent");
    }
    // The extension never saw an ack, so it sends the batch again to a new host.
    let mut host = HostProc::start(&db.path, &[]);
    let ack = host.request(&batch(1, events));
    assert_eq!(ack["stored"].as_array().unwrap().len(), 5);
    assert_eq!(count(&db.open(), "visit"), 5, "each page exactly once");
    assert!(host.finish().success());
}

#[test]
fn a_file_that_is_not_a_database_is_reported_not_damaged() {
    let db = TempDb::new();
    std::fs::write(&db.path, b"this is someone's notes, not a database\n".repeat(200)).unwrap();
    let before = std::fs::read(&db.path).unwrap();
    let mut host = HostProc::start(&db.path, &[]);
    let hello = host.request(&json!({"type": "hello"}));
    assert_eq!(hello["ok"], false);
    assert!(
        hello["problem"].as_str().unwrap().contains("sitetrail.db"),
        "{hello}"
    );
    let reply = host.request(&batch(
        1,
        vec![visit_event("v", "https://a.test/", None, now_ms())],
    ));
    assert_eq!(
        (reply["kind"].as_str(), reply["batch"].as_u64()),
        (Some("database"), Some(1))
    );
    assert!(host.finish().success());
    assert_eq!(std::fs::read(&db.path).unwrap(), before, "the file is untouched");
}

#[test]
fn the_host_a_worker_and_the_cli_share_one_file_at_once() {
    let db = TempDb::new();
    drop(db.open());
    // A worker classifying as fast as it can, in its own process.
    let mut worker = crate::support::cli(&db.path)
        .args(["worker", "--provider", "builtin", "--fixed-delay-ms", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The CLI records visits beside the host.
    let cli_db = db.path.clone();
    let cli_visits = std::thread::spawn(move || {
        for i in 0..20 {
            crate::support::run_ok(
                crate::support::cli(&cli_db).args(["visit", &format!("https://cli{i}.test/")]),
            );
        }
    });
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    for b in 0..20u64 {
        let events: Vec<Value> = (0..10)
            .map(|i| {
                let id = format!("b{b}-{i}");
                visit_event(
                    &id,
                    &format!("https://host{b}-{i}.test/"),
                    None,
                    t + (b * 10 + i) as i64,
                )
            })
            .collect();
        let ack = host.request(&batch(b, events));
        assert_eq!(ack["stored"].as_array().map(Vec::len), Some(10), "{ack}");
    }
    cli_visits.join().unwrap();
    assert!(host.finish().success());
    let store = db.open();
    assert!(
        wait_for(Duration::from_secs(60), || {
            store
                .queue_status()
                .is_ok_and(|s| s.pending == 0 && s.processing == 0 && s.completed == 220)
        }),
        "every website classified: {:?}",
        store.queue_status()
    );
    let _ = worker.kill();
    let _ = worker.wait();
    assert_eq!(count(&store, "visit"), 220);
    assert_eq!(count(&store, "website"), 220);
}

/// The host stores a page's URL as `visit` does: control characters percent-encoded, no user
/// name or password (a page loaded as `https://user:pw@host/` keeps them in the tab's URL).
#[test]
fn the_host_stores_urls_percent_encoded_and_without_credentials() {
    let db = TempDb::new();
    let mut host = HostProc::start(&db.path, &[]);
    let t = now_ms();
    let ack = host.request(&batch(
        1,
        vec![
            visit_event("v1", "https://alice:hunter2@mail.test/inbox", Some("Inbox"), t),
            visit_event("v2", "https://evil.test/\u{1b}]0;x\u{7}\nline", None, t + 1),
        ],
    ));
    assert_eq!(ack["stored"], json!(["v1", "v2"]), "{ack}");
    assert!(host.finish().success());
    let urls: Vec<String> = stored_visits(&db.path).into_iter().map(|v| v.0).collect();
    assert_eq!(
        urls,
        ["https://mail.test/inbox", "https://evil.test/%1B]0;x%07line"]
    );
    let mut bytes = std::fs::read(&db.path).unwrap();
    bytes.extend(std::fs::read(db.path.with_extension("db-wal")).unwrap_or_default());
    assert!(
        !bytes.windows(7).any(|w| w == b"hunter2"),
        "the password is in the database file"
    );
}
