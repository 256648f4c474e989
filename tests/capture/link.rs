//! `sitetrail browser-link`: the host manifest where each browser looks for it, the launcher it
//! names (which must really start the host on the right database), status and uninstall.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::capture::host::{batch, now_ms, visit_event};
use crate::support::{cli, count, run_ok, TempDb};

/// The CLI with HOME and XDG_CONFIG_HOME in `home`, and the system-wide folders read under
/// `home/system` (empty unless a test writes there), never the machine's own `/etc`.
pub fn link_cli(db: &Path, home: &Path) -> Command {
    let mut c = cli(db);
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("SITETRAIL_SYSTEM_ROOT", home.join("system"));
    c
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Sends `msgs` through `launcher` as a browser would (origin as the only argument) and returns
/// the replies.
fn talk_through(launcher: &Path, msgs: &[Value]) -> Vec<Value> {
    let mut input = Vec::new();
    for m in msgs {
        let body = serde_json::to_vec(m).unwrap();
        input.extend((body.len() as u32).to_ne_bytes());
        input.extend(body);
    }
    let mut child = Command::new(launcher)
        .arg("chrome-extension://moioghcmhlpjcbgjdgkcoipanbaniimb/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the browser can start the launcher");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let mut replies = Vec::new();
    let mut rest = &out.stdout[..];
    while rest.len() >= 4 {
        let n = u32::from_ne_bytes(rest[..4].try_into().unwrap()) as usize;
        replies.push(serde_json::from_slice(&rest[4..4 + n]).unwrap());
        rest = &rest[4 + n..];
    }
    replies
}

#[test]
fn install_in_a_user_data_dir_writes_a_manifest_whose_launcher_runs_the_host_on_the_database() {
    let db = TempDb::new();
    let home = tempfile::tempdir().unwrap();
    // A path with a space and a quote: the launcher must quote it.
    let profile = home.path().join("it's a profile");
    let out = run_ok(
        link_cli(&db.path, home.path())
            .args([
                "browser-link",
                "install",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(&profile),
    );
    assert!(out.contains("Load unpacked"), "{out}");
    let dir = profile.join("NativeMessagingHosts");
    let manifest = read_json(&dir.join("app.sitetrail.host.json"));
    assert_eq!(manifest["name"], "app.sitetrail.host");
    assert_eq!(manifest["type"], "stdio");
    assert_eq!(
        manifest["allowed_origins"],
        json!(["chrome-extension://moioghcmhlpjcbgjdgkcoipanbaniimb/"])
    );
    let launcher = Path::new(manifest["path"].as_str().unwrap()).to_path_buf();
    assert_eq!(launcher, dir.join("sitetrail-native-host.sh"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&launcher).unwrap().permissions().mode() & 0o777,
        0o755
    );

    // The browser starts the launcher with a bare environment: it must find the binary and the
    // database by itself.
    let replies = talk_through(
        &launcher,
        &[
            json!({"type": "hello"}),
            batch(
                1,
                vec![visit_event(
                    "v1",
                    "https://linked.test/",
                    Some("Linked"),
                    now_ms(),
                )],
            ),
        ],
    );
    assert_eq!(replies[0]["db"], db.path.display().to_string());
    assert_eq!(replies[0]["browser"], "chromium");
    assert_eq!(replies[1]["stored"], json!(["v1"]));
    assert_eq!(count(&db.open(), "visit"), 1);

    let status: Value = serde_json::from_str(&run_ok(
        link_cli(&db.path, home.path())
            .args([
                "browser-link",
                "status",
                "--json",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(&profile),
    ))
    .unwrap();
    assert_eq!(status[0]["linked"], true);
    assert_eq!(status[0]["db"], db.path.display().to_string());
    assert_eq!(status[0]["exe"], env!("CARGO_BIN_EXE_sitetrail"));
    assert_eq!(status[0]["problem"], Value::Null);

    let out = run_ok(
        link_cli(&db.path, home.path())
            .args([
                "browser-link",
                "uninstall",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(&profile),
    );
    assert!(out.contains("unlinked"), "{out}");
    assert!(!dir.join("app.sitetrail.host.json").exists() && !launcher.exists());
    let status: Value = serde_json::from_str(&run_ok(
        link_cli(&db.path, home.path())
            .args([
                "browser-link",
                "status",
                "--json",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(&profile),
    ))
    .unwrap();
    assert_eq!(status[0]["linked"], false);
}

#[test]
fn each_browser_is_linked_where_it_looks_for_the_current_user_and_status_lists_them() {
    let db = TempDb::new();
    let home = tempfile::tempdir().unwrap();
    for browser in ["chrome", "firefox"] {
        run_ok(link_cli(&db.path, home.path()).args(["browser-link", "install", "--browser", browser]));
    }
    let chrome = read_json(
        &home
            .path()
            .join(".config/google-chrome/NativeMessagingHosts/app.sitetrail.host.json"),
    );
    assert!(chrome["allowed_origins"].is_array());
    let firefox = read_json(
        &home
            .path()
            .join(".mozilla/native-messaging-hosts/app.sitetrail.host.json"),
    );
    assert_eq!(firefox["allowed_extensions"], json!(["sitetrail@sitetrail.app"]));
    assert!(firefox.get("allowed_origins").is_none());

    let status: Vec<Value> = serde_json::from_str(&run_ok(link_cli(&db.path, home.path()).args([
        "browser-link",
        "status",
        "--json",
    ])))
    .unwrap();
    let linked: Vec<(&str, bool)> = status
        .iter()
        .map(|s| (s["browser"].as_str().unwrap(), s["linked"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        linked,
        vec![
            ("chromium", false),
            ("chrome", true),
            ("brave", false),
            ("edge", false),
            ("vivaldi", false),
            ("firefox", true)
        ]
    );
    let text = run_ok(link_cli(&db.path, home.path()).args(["browser-link", "status"]));
    let rows = crate::support::table_rows(&text);
    assert_eq!(
        rows[0],
        ["BROWSER", "STATE", "EXTENSION", "DATABASE", "MANIFEST"],
        "{text}"
    );
    let chrome = crate::support::row_of(&rows, "chrome");
    assert_eq!(chrome[1..3], ["linked (yours)", "not heard from yet"], "{text}");
    assert!(chrome[4].ends_with("app.sitetrail.host.json"), "{text}");
    assert_eq!(
        crate::support::row_of(&rows, "brave")[1..],
        ["not linked", "-", "-", "-"],
        "{text}"
    );

    // A binary that is gone makes the link stale, and status says so.
    let launcher = home
        .path()
        .join(".config/google-chrome/NativeMessagingHosts/sitetrail-native-host.sh");
    let script = std::fs::read_to_string(&launcher).unwrap();
    std::fs::write(
        &launcher,
        script.replace(env!("CARGO_BIN_EXE_sitetrail"), "/nonexistent/sitetrail"),
    )
    .unwrap();
    let status: Vec<Value> = serde_json::from_str(&run_ok(link_cli(&db.path, home.path()).args([
        "browser-link",
        "status",
        "--json",
        "--browser",
        "chrome",
    ])))
    .unwrap();
    assert!(
        status[0]["problem"].as_str().unwrap().contains("gone"),
        "{}",
        status[0]
    );
}

#[test]
fn a_wrong_database_or_a_firefox_profile_dir_is_refused_and_nothing_is_written() {
    let db = TempDb::new();
    std::fs::write(&db.path, b"not a database".repeat(1000)).unwrap();
    let home = tempfile::tempdir().unwrap();
    let profile = home.path().join("profile");
    let out = link_cli(&db.path, home.path())
        .args([
            "browser-link",
            "install",
            "--browser",
            "chromium",
            "--user-data-dir",
        ])
        .arg(&profile)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sitetrail.db"), "{err}");
    assert!(
        !profile.exists(),
        "no manifest for a database the host could not use"
    );

    let good = TempDb::new();
    let out = link_cli(&good.path, home.path())
        .args([
            "browser-link",
            "install",
            "--browser",
            "firefox",
            "--user-data-dir",
        ])
        .arg(&profile)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Firefox"));
    assert!(!home.path().join(".mozilla").exists());
}
