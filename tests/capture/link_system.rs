//! `sitetrail browser-link` with the package's system-wide links (issue 28, "linked means what the
//! browser will read"): a fake home and a fake system root (`SITETRAIL_SYSTEM_ROOT`, read by debug
//! builds only) holding the links `sitetrail::capture::system_link` writes for the package. Status
//! tells a per-user link, a system-wide one and none apart, and says "recording" only once the
//! extension has talked to the host through the link.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::capture::link::link_cli;
use crate::support::run_ok;

/// A fake home and system root, with the package's links installed in the system root as the
/// Debian package installs them, running this build's `sitetrail`.
struct System {
    dir: tempfile::TempDir,
}

impl System {
    fn new() -> System {
        System {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    fn root(&self) -> PathBuf {
        self.home().join("system")
    }

    /// The user's default database, where the package's launcher makes the host write.
    fn default_db(&self) -> PathBuf {
        self.home().join(".local/share/sitetrail/sitetrail.db")
    }

    /// The CLI on the default database, as a person runs it.
    fn cli(&self) -> Command {
        let mut c = link_cli(&self.default_db(), self.home());
        c.env("XDG_DATA_HOME", self.home().join(".local/share"));
        c
    }

    /// What the package installs, under the fake root: a manifest per browser folder and the
    /// launchers it names, which run `exe` (installed at the same path under the root).
    fn install_package(&self) {
        let exe = Path::new(env!("CARGO_BIN_EXE_sitetrail"));
        sitetrail::capture::system_link::write_system_links(
            &self.root(),
            exe,
            Path::new("/usr/lib/sitetrail/native-host"),
        )
        .unwrap();
        let staged = self.root().join(exe.strip_prefix("/").unwrap());
        std::fs::create_dir_all(staged.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(exe, staged).unwrap();
    }

    fn status(&self) -> Vec<Value> {
        serde_json::from_str(&run_ok(self.cli().args(["browser-link", "status", "--json"]))).unwrap()
    }

    /// Starts the package's launcher for `browser` as the browser would, in the user's
    /// environment, says hello, and returns the host's answer.
    fn hello_through_the_package(&self, browser: &str) -> Value {
        let launcher = self.root().join("usr/lib/sitetrail/native-host").join(browser);
        let body = serde_json::to_vec(&json!({"type": "hello", "extension_version": "0.1.0"})).unwrap();
        let mut input = (body.len() as u32).to_ne_bytes().to_vec();
        input.extend(body);
        let mut child = Command::new(&launcher)
            .arg("chrome-extension://moioghcmhlpjcbgjdgkcoipanbaniimb/")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.home())
            .env("XDG_DATA_HOME", self.home().join(".local/share"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the browser can start the package's launcher");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{:?}", out.status);
        let n = u32::from_ne_bytes(out.stdout[..4].try_into().unwrap()) as usize;
        serde_json::from_slice(&out.stdout[4..4 + n]).unwrap()
    }
}

fn of<'a>(list: &'a [Value], browser: &str) -> &'a Value {
    list.iter().find(|s| s["browser"] == browser).unwrap()
}

#[test]
fn status_tells_the_users_link_the_system_wide_one_and_none_apart_and_recording_needs_a_contact() {
    let sys = System::new();
    // Nothing installed: no link, nothing recording, and no database made for the asking.
    for s in sys.status() {
        assert_eq!(
            (&s["linked"], &s["scope"]),
            (&json!(false), &json!("none")),
            "{s}"
        );
        assert_eq!(s["system_manifest"], Value::Null);
        assert_eq!((&s["recording"], &s["heard_at"]), (&json!(false), &Value::Null));
    }
    assert!(!sys.default_db().exists());

    // The package's links: every browser reads one (Brave and Vivaldi Chrome's folder).
    sys.install_package();
    let list = sys.status();
    for s in &list {
        assert_eq!(
            (&s["linked"], &s["scope"]),
            (&json!(true), &json!("system")),
            "{s}"
        );
        assert_eq!(s["problem"], Value::Null, "{s}");
        assert_eq!(s["db"], sys.default_db().display().to_string(), "{s}");
        assert_eq!(s["manifest"], s["system_manifest"]);
        assert_eq!(s["recording"], false, "a manifest alone records nothing: {s}");
    }
    assert_eq!(
        of(&list, "brave")["manifest"],
        sys.root()
            .join("etc/opt/chrome/native-messaging-hosts/app.sitetrail.host.json")
            .display()
            .to_string()
    );
    let text = run_ok(sys.cli().args(["browser-link", "status"]));
    let rows = crate::support::table_rows(&text);
    assert_eq!(
        crate::support::row_of(&rows, "chromium")[1..3],
        ["linked (system-wide)", "not heard from yet"],
        "{text}"
    );

    // The extension talks to the host through the package's link: now it records, and only
    // that browser does.
    let hello = sys.hello_through_the_package("chromium");
    assert_eq!(hello["db"], sys.default_db().display().to_string(), "{hello}");
    let list = sys.status();
    let chromium = of(&list, "chromium");
    assert_eq!(chromium["recording"], true, "{chromium}");
    assert!(chromium["heard_at"].is_string(), "{chromium}");
    assert_eq!(chromium["extension_version"], "0.1.0");
    assert_eq!(of(&list, "chrome")["recording"], false);
    let text = run_ok(sys.cli().args(["browser-link", "status"]));
    let rows = crate::support::table_rows(&text);
    let row = crate::support::row_of(&rows, "chromium");
    assert!(row[2].starts_with("recording (last heard "), "{text}");

    // Asked about another database, the same browser records nothing there.
    let other = sys.home().join("other.db");
    let status: Vec<Value> = serde_json::from_str(&run_ok(link_cli(&other, sys.home()).args([
        "browser-link",
        "status",
        "--json",
        "--browser",
        "chromium",
    ])))
    .unwrap();
    assert_eq!(
        (&status[0]["scope"], &status[0]["recording"]),
        (&json!("system"), &json!(false))
    );

    // The user's own link comes first; the system-wide one is still named, and the install
    // says it already served this database.
    let out = run_ok(
        sys.cli()
            .args(["browser-link", "install", "--browser", "chromium"]),
    );
    assert!(out.contains("already served this database"), "{out}");
    let list = sys.status();
    let chromium = of(&list, "chromium");
    assert_eq!(chromium["scope"], "user");
    assert_eq!(
        chromium["manifest"],
        sys.home()
            .join(".config/chromium/NativeMessagingHosts/app.sitetrail.host.json")
            .display()
            .to_string()
    );
    assert!(chromium["system_manifest"]
        .as_str()
        .unwrap()
        .starts_with(sys.root().to_str().unwrap()));
    assert_eq!(
        chromium["recording"], true,
        "the same database, heard from: {chromium}"
    );

    // Unlinking removes the user's own link only, and says the package's remains.
    let out = run_ok(
        sys.cli()
            .args(["browser-link", "uninstall", "--browser", "chromium"]),
    );
    assert!(
        out.contains("still linked for every user by the sitetrail package"),
        "{out}"
    );
    assert_eq!(of(&sys.status(), "chromium")["scope"], "system");
    let out = run_ok(sys.cli().args(["browser-link", "uninstall", "--browser", "edge"]));
    assert!(
        out.contains("had no link of yours") && out.contains("still linked"),
        "{out}"
    );
}

#[test]
fn a_system_wide_link_whose_program_is_gone_is_a_problem_and_records_nothing() {
    let sys = System::new();
    sys.install_package();
    sys.hello_through_the_package("firefox");
    let exe = Path::new(env!("CARGO_BIN_EXE_sitetrail"));
    std::fs::remove_file(sys.root().join(exe.strip_prefix("/").unwrap())).unwrap();
    let firefox = of(&sys.status(), "firefox").clone();
    assert_eq!(firefox["scope"], "system");
    assert!(
        firefox["problem"]
            .as_str()
            .unwrap()
            .contains("reinstall the sitetrail package"),
        "{firefox}"
    );
    assert_eq!(
        firefox["recording"], false,
        "heard from, but the link is broken: {firefox}"
    );
    assert!(firefox["heard_at"].is_string());
}
