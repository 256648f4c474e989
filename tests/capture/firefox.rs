//! The extension in a real Firefox (Debian's `firefox-esr`, headless, a temporary profile and
//! HOME): the package `scripts/firefox-extension` builds passes `web-ext lint` without a warning,
//! installs for good (the way an ESR user with signatures off installs it) and records through
//! the host `browser-link install --browser firefox` linked, also after Firefox restarts; and the
//! extension's own link code (`extension/lib/host.js`) turns each way the link breaks in Firefox
//! into the advice Chromium users get.
//!
//! The profile installs the package as a sideloaded add-on (`extensions/<id>.xpi`,
//! `extensions.autoDisableScopes = 0`, `xpinstall.signatures.required = false`): a permanent
//! install, not a temporary one, which is what "Install Add-on From File" makes.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::chromium_harness::PageServer;
use crate::support::{cli, run_ok, wait_for, TempDb};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const FIREFOX_ID: &str = sitetrail::capture::link::FIREFOX_EXTENSION_ID;

/// Preferences of a profile that starts quietly, offline apart from 127.0.0.1, and takes an
/// unsigned extension put in its `extensions/` folder without asking.
const USER_JS: &str = r#"user_pref("xpinstall.signatures.required", false);
user_pref("extensions.autoDisableScopes", 0);
user_pref("extensions.enabledScopes", 15);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.enabled", false);
user_pref("app.normandy.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("extensions.getAddons.cache.enabled", false);
user_pref("extensions.update.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("browser.newtabpage.enabled", false);
"#;

/// A headless Firefox ESR on `profile` with `home` as HOME (where it finds native hosts), in its
/// own process group, stopped with that group when dropped.
pub(crate) struct Firefox {
    child: Child,
}

impl Firefox {
    pub(crate) fn start(profile: &Path, home: &Path, url: &str, log: &Path) -> Firefox {
        Firefox::launch(profile, home, url, log, &[])
    }

    /// With WebDriver BiDi on 127.0.0.1:`port` (`ws://127.0.0.1:PORT/session`), for tests that
    /// drive it (open pages, read a tab's address and title).
    pub(crate) fn start_with_bidi(profile: &Path, home: &Path, log: &Path, port: u16) -> Firefox {
        Firefox::launch(
            profile,
            home,
            "about:blank",
            log,
            &["--remote-debugging-port", &port.to_string()],
        )
    }

    fn launch(profile: &Path, home: &Path, url: &str, log: &Path, extra: &[&str]) -> Firefox {
        let log = std::fs::File::create(log).unwrap();
        let child = Command::new("firefox-esr")
            .args(["--headless", "--no-remote", "--profile"])
            .arg(profile)
            .args(extra)
            .arg(url)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("MOZ_CRASHREPORTER_DISABLE", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("firefox-esr is needed for the Firefox tests (scripts/setup installs it)");
        Firefox { child }
    }
}

impl Drop for Firefox {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A new profile with `xpi` installed as Sitetrail's extension.
pub(crate) fn profile_with(dir: &Path, xpi: &Path) -> PathBuf {
    profile_with_prefs(dir, xpi, "")
}

/// [`profile_with`], with more preferences (`user_pref(...);` lines) after the usual ones.
pub(crate) fn profile_with_prefs(dir: &Path, xpi: &Path, more: &str) -> PathBuf {
    let profile = dir.join("profile");
    std::fs::create_dir_all(profile.join("extensions")).unwrap();
    std::fs::write(profile.join("user.js"), format!("{USER_JS}{more}")).unwrap();
    std::fs::copy(xpi, profile.join("extensions").join(format!("{FIREFOX_ID}.xpi"))).unwrap();
    profile
}

/// Builds the Firefox extension with `scripts/firefox-extension --out DIR`; returns the package.
pub(crate) fn build_package(dir: &Path) -> PathBuf {
    let out = Command::new(format!("{REPO}/scripts/firefox-extension"))
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let name = sitetrail::capture::link::firefox_package_name();
    let xpi = dir.join("dist").join(&name);
    assert!(xpi.is_file(), "{} not written", xpi.display());
    xpi
}

pub(crate) fn link_firefox(db: &Path, home: &Path) {
    run_ok(
        cli(db)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .args(["browser-link", "install", "--browser", "firefox"]),
    );
}

#[test]
fn the_firefox_package_is_built_reproducibly_and_passes_web_ext_lint_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let xpi = build_package(dir.path());
    let first = std::fs::read(&xpi).unwrap();
    // The time is what is tested: a build a second later has other file times, and the package
    // must not carry them.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        std::fs::read(build_package(dir.path())).unwrap(),
        first,
        "the same sources, the same bytes"
    );
    // Its manifest is the Firefox one, with the data it sends declared.
    let unzip = Command::new("unzip")
        .arg("-p")
        .arg(&xpi)
        .arg("manifest.json")
        .output()
        .unwrap();
    let manifest: Value = serde_json::from_slice(&unzip.stdout).unwrap();
    assert_eq!(manifest["browser_specific_settings"]["gecko"]["id"], FIREFOX_ID);
    assert!(
        manifest["browser_specific_settings"]["gecko"]["data_collection_permissions"]["required"].is_array()
    );
    let lint = Command::new("web-ext")
        .args([
            "lint",
            "--output",
            "json",
            "--no-config-discovery",
            "--source-dir",
        ])
        .arg(dir.path().join("target/firefox-extension"))
        .env("NO_UPDATE_NOTIFIER", "1")
        .output()
        .expect("web-ext is needed for the Firefox package test (scripts/setup installs it)");
    let report: Value = serde_json::from_slice(&lint.stdout)
        .unwrap_or_else(|e| panic!("web-ext lint: {e}: {}", String::from_utf8_lossy(&lint.stderr)));
    assert_eq!(
        report["summary"],
        serde_json::json!({"errors": 0, "notices": 0, "warnings": 0}),
        "{report:#}"
    );
}

#[test]
fn firefox_keeps_the_installed_package_and_records_through_it_across_a_restart() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    link_firefox(&db.path, &home);
    let profile = profile_with(dir.path(), &build_package(&dir.path().join("build")));
    let pages = PageServer::start();
    let titles = |store: &sitetrail::Store| -> Vec<String> {
        store
            .with_conn(|c| {
                let mut s = c.prepare(
                    "SELECT title FROM visit WHERE source = 'extension:firefox' AND title IS NOT NULL",
                )?;
                let rows = s.query_map([], |r| r.get::<_, String>(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap()
    };
    let store = db.open();
    for (round, title) in ["First%20start", "After%20a%20restart"].iter().enumerate() {
        let firefox = Firefox::start(
            &profile,
            &home,
            &pages.url("127.0.0.1", &format!("/page?title={title}")),
            &dir.path().join(format!("firefox-{round}.log")),
        );
        let want = title.replace("%20", " ");
        let seen = wait_for(Duration::from_secs(60), || titles(&store).contains(&want));
        drop(firefox);
        assert!(
            seen,
            "round {round}: {:?} not recorded; stored {:?}; Firefox said: {}",
            want,
            titles(&store),
            std::fs::read_to_string(dir.path().join(format!("firefox-{round}.log"))).unwrap_or_default()
        );
    }
}

/// (url, active_ms) of every visit the extension stored.
fn firefox_visits(store: &sitetrail::Store) -> Vec<(String, Option<i64>)> {
    store
        .with_conn(|c| {
            let mut s = c.prepare(
                "SELECT v.url, t.active_ms FROM visit v LEFT JOIN visit_time t ON t.visit_id = v.id
                 WHERE v.source = 'extension:firefox' ORDER BY v.id",
            )?;
            let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap()
}

#[test]
fn firefox_error_pages_are_never_stored() {
    let dir = tempfile::tempdir().unwrap();
    let xpi = build_package(&dir.path().join("build"));
    let pages = PageServer::start();
    let refused = format!(
        "http://127.0.0.1:{}/page?title=Refused",
        crate::support::chromium_harness::closed_port()
    );
    let reset = pages.url("127.0.0.1", "/reset");
    // Firefox commits its error page after the error (Chromium does not): a page that loads,
    // then goes (in its tab) to a place that fails.
    for (round, failing) in [refused, reset].iter().enumerate() {
        // A new profile and database each time: one first start, one page, one error.
        let db = TempDb::new();
        let round_dir = dir.path().join(format!("round-{round}"));
        let home = round_dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        link_firefox(&db.path, &home);
        let profile = profile_with(&round_dir, &xpi);
        let store = db.open();
        let before = pages.url(
            "127.0.0.1",
            &format!("/goto?title=Before{round}&ms=4000&to={failing}"),
        );
        let log = dir.path().join(format!("firefox-{round}.log"));
        let firefox = Firefox::start(&profile, &home, &before, &log);
        // The page's time is stored when the error page replaces it; a visit of the error page
        // would be stored in the same batch.
        let replaced = wait_for(Duration::from_secs(60), || {
            firefox_visits(&store)
                .iter()
                .any(|(url, ms)| *url == before && ms.is_some_and(|ms| ms > 0))
        });
        drop(firefox);
        let stored = firefox_visits(&store);
        assert!(
            replaced,
            "round {round}: {before} not stored with its time: {stored:?}; Firefox said: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(
            stored.iter().all(|(url, _)| url != failing),
            "round {round}: the error page of {failing} was stored: {stored:?}"
        );
        assert_eq!(stored.len(), 1, "round {round}: {stored:?}");
    }
}

/// The probe: Sitetrail's own `lib/host.js` connecting to each host name in turn, as Firefox
/// reports it; what each link showed is sent to the `app.sitetrail.report` host.
const PROBE_JS: &str = r#"import { HostLink } from './lib/host.js';

const HOSTS = ['app.sitetrail.missing', 'app.sitetrail.other', 'app.sitetrail.nolauncher', 'app.sitetrail.gone', 'app.sitetrail.host'];

function statusOf(name) {
  return new Promise((resolve) => {
    const link = new HostLink({
      queue: { release() {}, take: async () => [], ack: async () => 0 },
      connect: () => browser.runtime.connectNative(name),
      lastError: () => browser.runtime.lastError,
      run: (fn) => Promise.resolve().then(fn),
      setStatus: async (s) => {
        if (s.connected || s.reason) resolve(s);
      },
      timers: { setTimeout: () => null, clearTimeout: () => {}, now: () => Date.now() },
      version: 'probe',
      browser: 'firefox',
    });
    link.connect();
  });
}

(async () => {
  const results = {};
  for (const name of HOSTS) results[name] = await statusOf(name);
  browser.runtime.connectNative('app.sitetrail.report').postMessage(results);
})();
"#;

fn probe_manifest() -> String {
    serde_json::json!({
        "manifest_version": 3,
        "name": "Sitetrail link probe",
        "version": "1.0",
        "browser_specific_settings": {"gecko": {"id": FIREFOX_ID, "strict_min_version": "140.0",
            "data_collection_permissions": {"required": ["none"]}}},
        "permissions": ["nativeMessaging"],
        "background": {"scripts": ["probe.js"], "type": "module"}
    })
    .to_string()
}

fn host_manifest(hosts: &Path, name: &str, path: &Path, extension: &str) {
    let m = serde_json::json!({"name": name, "description": "test", "path": path, "type": "stdio",
                               "allowed_extensions": [extension]});
    std::fs::write(hosts.join(format!("{name}.json")), m.to_string()).unwrap();
}

fn executable(path: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn firefox_link_failures_read_as_the_advice_chromium_users_get() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The real link, for the host that works.
    link_firefox(&db.path, &home);
    let hosts = home.join(".mozilla/native-messaging-hosts");
    // app.sitetrail.missing has no manifest at all.
    host_manifest(
        &hosts,
        "app.sitetrail.other",
        Path::new("/bin/cat"),
        "someone@else.example",
    );
    host_manifest(
        &hosts,
        "app.sitetrail.nolauncher",
        Path::new("/nonexistent/sitetrail-native-host.sh"),
        FIREFOX_ID,
    );
    let gone = hosts.join("gone.sh");
    executable(
        &gone,
        "#!/bin/sh\nexec /nonexistent/sitetrail native-host --browser firefox \"$@\"\n",
    );
    host_manifest(&hosts, "app.sitetrail.gone", &gone, FIREFOX_ID);
    let report = dir.path().join("report.bin");
    let reporter = hosts.join("report.sh");
    executable(
        &reporter,
        &format!("#!/bin/sh\nexec cat > '{}'\n", report.display()),
    );
    host_manifest(&hosts, "app.sitetrail.report", &reporter, FIREFOX_ID);

    let probe = dir.path().join("probe");
    std::fs::create_dir_all(probe.join("lib")).unwrap();
    std::fs::copy(format!("{REPO}/extension/lib/host.js"), probe.join("lib/host.js")).unwrap();
    std::fs::write(probe.join("probe.js"), PROBE_JS).unwrap();
    std::fs::write(probe.join("manifest.json"), probe_manifest()).unwrap();
    let xpi = dir.path().join("probe.xpi");
    let zipped = Command::new("zip")
        .current_dir(&probe)
        .args(["-q", "-r"])
        .arg(&xpi)
        .arg(".")
        .status()
        .expect("zip (scripts/setup installs it)");
    assert!(zipped.success());
    let profile = profile_with(dir.path(), &xpi);

    let log = dir.path().join("firefox.log");
    let firefox = Firefox::start(&profile, &home, "about:blank", &log);
    // One native message: a 4-byte length, then that much JSON.
    let read = || -> Option<Value> {
        let bytes = std::fs::read(&report).ok()?;
        let len = u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        serde_json::from_slice(bytes.get(4..4 + len)?).ok()
    };
    let got = wait_for(Duration::from_secs(60), || read().is_some());
    drop(firefox);
    assert!(
        got,
        "no report from the probe; Firefox said: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let r = read().unwrap();
    let reason = |host: &str| r[host]["reason"].as_str().unwrap_or_default().to_owned();
    let detail = |host: &str| r[host]["detail"].as_str().unwrap_or_default().to_owned();

    // Not linked, and linked for another extension: Firefox says the same for both.
    for host in ["app.sitetrail.missing", "app.sitetrail.other"] {
        assert_eq!(
            detail(host),
            format!("No such native application {host}"),
            "{r:#}"
        );
        assert!(
            reason(host).contains("not linked") && reason(host).contains("another extension"),
            "{r:#}"
        );
        assert!(
            reason(host).contains("sitetrail browser-link install --browser firefox"),
            "{r:#}"
        );
    }
    // The launcher gone: "An unexpected error occurred". The program it runs gone: no reason at
    // all. Both: the program is missing.
    assert_eq!(
        detail("app.sitetrail.nolauncher"),
        "An unexpected error occurred",
        "{r:#}"
    );
    assert_eq!(detail("app.sitetrail.gone"), "closed without a reason", "{r:#}");
    for host in ["app.sitetrail.nolauncher", "app.sitetrail.gone"] {
        assert!(
            reason(host).contains("could not start") && reason(host).contains("browser-link status"),
            "{r:#}"
        );
    }
    // The host `browser-link install --browser firefox` linked answers.
    assert_eq!(r["app.sitetrail.host"]["connected"], true, "{r:#}");
    assert_eq!(r["app.sitetrail.host"]["host"]["browser"], "firefox", "{r:#}");
}
