//! The sync key in a real OS keyring: GNOME Keyring's Secret Service on a private D-Bus session
//! bus (its HOME and XDG folders in a temp dir, never the keyring of the person running the
//! tests), with the real `sitetrail` CLI against a real hub. Needs `dbus-daemon`,
//! `gnome-keyring-daemon` and `secret-tool` (scripts/setup installs them).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sitetrail::sync::crypto::AccountSecret;
use sitetrail::sync::keystore::KEYRING_SERVICE;

use crate::support::cli;
use crate::support::dbus::PrivateBus;
use crate::support::sync::{Device, TestHub};

/// A private session bus with an unlocked GNOME Keyring on it; both end when dropped.
struct Keyring {
    dir: tempfile::TempDir,
    address: String,
    _bus: PrivateBus,
    daemon: Option<Child>,
}

fn need(program: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "{program} is missing: run scripts/setup (it installs dbus-daemon, gnome-keyring and libsecret-tools)");
}

impl Keyring {
    fn start() -> Keyring {
        for p in ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"] {
            need(p);
        }
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "data", "config", "cache", "run"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::set_permissions(dir.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        // A bus of its own, without service activation: only the daemon started below answers
        // for the Secret Service (activation would start one with no unlocked keyring).
        let bus = PrivateBus::start();
        let address = bus.address.clone();
        let mut k = Keyring {
            dir,
            address,
            _bus: bus,
            daemon: None,
        };
        // The login keyring, made and unlocked with a known password read from stdin.
        let mut gkd = Command::new("gnome-keyring-daemon");
        let mut daemon = k
            .env(&mut gkd)
            .args(["--unlock", "--components=secrets", "--foreground"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        {
            let mut stdin = daemon.stdin.take().unwrap();
            stdin.write_all(b"a test password\n").unwrap();
        }
        k.daemon = Some(daemon);
        // Ready once it stores and finds an item.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if k.store("sitetrail-test-probe", "probe", "ready")
                && k.lookup("sitetrail-test-probe", "probe").as_deref() == Some("ready")
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "gnome-keyring-daemon did not answer on the private bus"
            );
            let ended = k.daemon.as_mut().map(|d| d.try_wait().unwrap());
            assert!(matches!(ended, Some(None)), "gnome-keyring-daemon ended");
            std::thread::sleep(Duration::from_millis(100));
        }
        k.clear("sitetrail-test-probe", "probe");
        k
    }

    /// `cmd` pointed at this keyring: the private bus and the temp HOME and XDG folders.
    fn env<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        let d = self.dir.path();
        cmd.env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("HOME", d.join("home"))
            .env("XDG_DATA_HOME", d.join("data"))
            .env("XDG_CONFIG_HOME", d.join("config"))
            .env("XDG_CACHE_HOME", d.join("cache"))
            .env("XDG_RUNTIME_DIR", d.join("run"))
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
    }

    fn store(&self, service: &str, user: &str, value: &str) -> bool {
        let mut c = Command::new("secret-tool");
        self.env(&mut c)
            .args([
                "store",
                "--label=sitetrail test",
                "service",
                service,
                "username",
                user,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let Ok(mut child) = c.spawn() else {
            return false;
        };
        let _ = child.stdin.take().unwrap().write_all(value.as_bytes());
        wait_a_while(&mut child)
    }

    /// The value stored for (service, user), if any.
    fn lookup(&self, service: &str, user: &str) -> Option<String> {
        let mut c = Command::new("secret-tool");
        let out = self
            .env(&mut c)
            .args(["lookup", "service", service, "username", user])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out.status.success() && !out.stdout.is_empty()).then(|| String::from_utf8(out.stdout).unwrap())
    }

    fn clear(&self, service: &str, user: &str) {
        let mut c = Command::new("secret-tool");
        let st = self
            .env(&mut c)
            .args(["clear", "service", service, "username", user])
            .status()
            .unwrap();
        assert!(st.success());
    }
}

fn wait_a_while(child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait().unwrap() {
            Some(st) => return st.success(),
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        for c in self.daemon.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The bus stops when `self._bus` is dropped, after the daemon on it.
    }
}

/// A device run through the CLI: its database and settings in a folder of its own.
struct CliDevice {
    dir: tempfile::TempDir,
}

impl CliDevice {
    fn new() -> CliDevice {
        CliDevice {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn db(&self) -> PathBuf {
        self.dir.path().join("sitetrail.db")
    }
    fn key_dir(&self) -> PathBuf {
        self.dir.path().join("config").join("sync")
    }
    fn key_files(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.key_dir()) {
            Ok(d) => d.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// `sitetrail sync ARGS --json` with the keyring `keyring` (on or off): (exit code, JSON,
    /// stderr).
    fn sync(&self, k: &Keyring, keyring: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
        let mut cmd = cli(&self.db());
        k.env(&mut cmd)
            .env("SITETRAIL_SYNC_KEYRING", keyring)
            .arg("--settings")
            .arg(self.dir.path().join("config").join("settings.json"))
            .arg("sync")
            .args(args)
            .arg("--json")
            .stdin(Stdio::null());
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn user(setup: &serde_json::Value) -> String {
    format!(
        "{}-{}",
        setup["account_id"].as_str().unwrap(),
        setup["device_id"].as_str().unwrap()
    )
}

fn visit(db: &Path, url: &str) {
    let store = sitetrail::Store::open(db).unwrap();
    crate::support::visit(&store, url);
}

#[test]
fn the_sync_key_lives_in_a_real_secret_service_and_leaves_with_the_device() {
    let k = Keyring::start();
    let hub = TestHub::start();
    let a = CliDevice::new();

    let (code, setup, err) = a.sync(
        &k,
        "on",
        &["setup", "--hub", &hub.url, "--device-name", "keyring"],
    );
    assert_eq!(code, 0, "{err}");
    let recovery = setup["recovery_key"].as_str().unwrap();
    assert!(
        a.key_files().is_empty(),
        "no key file with a keyring: {:?}",
        a.key_files()
    );
    let stored = k
        .lookup(KEYRING_SERVICE, &user(&setup))
        .expect("the keyring holds the device's entry");
    let from_recovery = AccountSecret::from_recovery_key(recovery).unwrap();
    assert_eq!(stored, from_recovery.to_hex(), "the entry is the account secret");
    assert!(!err.contains(&stored));
    let db_bytes = std::fs::read(a.db()).unwrap();
    assert!(
        !String::from_utf8_lossy(&db_bytes).contains(&stored),
        "never in the database"
    );
    let (code, status, err) = a.sync(&k, "on", &["status"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(status["key_store"], "keyring");

    // `sync now` works from the keyring's key: another device sees the visit.
    visit(&a.db(), "https://keyring.example/page");
    let (code, now, err) = a.sync(&k, "on", &["now"]);
    assert_eq!(code, 0, "{err}");
    assert!(now["pushed"].as_u64().unwrap() >= 1, "{now}");
    let b = Device::new();
    b.join(&hub, "other", recovery);
    b.sync();
    assert!(b.visits().iter().any(|v| v.1 == "https://keyring.example/page"));

    // With the keyring off, the CLI does not look in it: the key is missing, nothing changes.
    let (code, _, err) = a.sync(&k, "off", &["now"]);
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("not looked in"), "{err}");
    assert!(!err.contains(&stored));
    let (code, _, err) = a.sync(&k, "maybe", &["now"]);
    assert_ne!(code, 0, "a bad SITETRAIL_SYNC_KEYRING is refused: {err}");
    assert!(err.contains("SITETRAIL_SYNC_KEYRING"), "{err}");

    let (code, left, err) = a.sync(&k, "on", &["leave"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(left["left"], true);
    assert_eq!(
        k.lookup(KEYRING_SERVICE, &user(&setup)),
        None,
        "leave removes the entry"
    );
    assert!(a.key_files().is_empty());
}

#[test]
fn with_the_keyring_off_the_key_is_a_file_and_moves_into_the_keyring_when_it_is_on() {
    let k = Keyring::start();
    let hub = TestHub::start();
    let a = CliDevice::new();

    let (code, setup, err) = a.sync(&k, "off", &["setup", "--hub", &hub.url]);
    assert_eq!(code, 0, "{err}");
    let files = a.key_files();
    assert_eq!(
        files.len(),
        1,
        "SITETRAIL_SYNC_KEYRING=off keeps the key in a file"
    );
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let in_file = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(
        k.lookup(KEYRING_SERVICE, &user(&setup)),
        None,
        "the keyring is not touched"
    );
    let (_, status, _) = a.sync(&k, "off", &["status"]);
    assert_eq!(status["key_store"], "file");
    // Status only looks: the file stays where it is.
    let (_, status, _) = a.sync(&k, "on", &["status"]);
    assert_eq!(status["key_store"], "file");
    assert_eq!(a.key_files().len(), 1);

    // A device set up with a file keeps working once the keyring is on, and its key moves in.
    visit(&a.db(), "https://moved.example/");
    let (code, now, err) = a.sync(&k, "on", &["now"]);
    assert_eq!(code, 0, "{err}");
    assert!(now["pushed"].as_u64().unwrap() >= 1);
    assert_eq!(
        k.lookup(KEYRING_SERVICE, &user(&setup)).as_deref(),
        Some(in_file.trim()),
        "the file's key is in the keyring"
    );
    assert!(
        a.key_files().is_empty(),
        "and the file is gone once the keyring has it"
    );
    let (_, status, _) = a.sync(&k, "on", &["status"]);
    assert_eq!(status["key_store"], "keyring");
    let (code, _, err) = a.sync(&k, "on", &["now"]);
    assert_eq!(code, 0, "{err}");

    let (code, _, err) = a.sync(&k, "on", &["leave"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(k.lookup(KEYRING_SERVICE, &user(&setup)), None);
}
