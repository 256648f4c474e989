//! A WebDriver session on the real app: its own Xvfb, tauri-driver (which starts WebKitWebDriver,
//! which starts the app) and plain W3C calls over HTTP with reqwest.
//!
//! Needs `Xvfb` (package xvfb), `WebKitWebDriver` (package webkit2gtk-driver) and `tauri-driver`
//! (`cargo install tauri-driver --locked`; found via $TAURI_DRIVER, $PATH, then ~/.cargo/bin).
//! `E2E_DISPLAY=:0` uses an existing display instead of starting Xvfb.
//!
//! `Drop` deletes the WebDriver session, then SIGTERMs tauri-driver's process group (tauri-driver
//! stops WebKitWebDriver only on SIGTERM/SIGINT), then SIGKILLs what is left, then stops Xvfb:
//! also when a test fails. `PR_SET_PDEATHSIG` covers a test binary killed outright.

#![allow(unsafe_code)] // prctl and kill for child cleanup
#![allow(dead_code)] // shared by the e2e tests and the app bench; each uses part of it

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "../../../tests/support/poll.rs"]
mod poll;

pub const APP: &str = env!("CARGO_BIN_EXE_sitetrail-app");
/// W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A driver (and display) that can open app sessions with a given environment.
pub struct Harness {
    http: reqwest::blocking::Client,
    base: String,
    /// http://127.0.0.1:PORT/session/ID
    session_url: Option<String>,
    driver: Option<Child>,
    xvfb: Option<Child>,
    /// The X display the app's windows are on (":N").
    display: String,
    /// The binary of the app launched last (`APP` unless `launch_app` named another).
    app: String,
}

impl Harness {
    /// Starts Xvfb and tauri-driver; the app inherits `env` (plus the display). The driver's and
    /// the app's output go to `log` (so a test can check what the app logged).
    pub fn start(env: &[(&str, String)], log: &Path) -> Harness {
        let mut h = Harness {
            http: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(90))
                .build()
                .expect("http client"),
            base: String::new(),
            session_url: None,
            driver: None,
            xvfb: None,
            display: String::new(),
            app: APP.to_owned(),
        };
        let display = match std::env::var("E2E_DISPLAY") {
            Ok(d) if !d.is_empty() => d,
            _ => {
                let (child, display) = start_xvfb();
                h.xvfb = Some(child);
                display
            }
        };
        h.display = display.clone();
        let (port, native_port) = (free_port(), free_port());
        let mut cmd = Command::new(tauri_driver_path());
        die_with_parent(&mut cmd)
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native_port.to_string(),
            ])
            .env("DISPLAY", &display)
            .env_remove("WAYLAND_DISPLAY")
            // No session bus: the app must fall back from the keyring by itself, and nothing
            // autolaunches a dbus-daemon that would outlive the test.
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("NO_AT_BRIDGE", "1")
            .env_remove("SITETRAIL_PROVIDER")
            .env_remove("SITETRAIL_BASE_URL")
            .env_remove("SITETRAIL_MODEL")
            .env_remove("SITETRAIL_API_KEY")
            .env_remove("SITETRAIL_SETTINGS")
            // Sync keys in files: the tests never touch the keyring of the person running them.
            .env("SITETRAIL_SYNC_KEYRING", "off")
            .process_group(0)
            .stdin(Stdio::null());
        let out = std::fs::File::create(log).expect("create driver log");
        cmd.stdout(out.try_clone().expect("log handle")).stderr(out);
        for (k, v) in env {
            cmd.env(k, v);
        }
        h.driver = Some(
            cmd.spawn()
                .expect("start tauri-driver (cargo install tauri-driver --locked)"),
        );
        // 127.0.0.1, not localhost: WebKitWebDriver listens on 127.0.0.1 only.
        h.base = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        loop {
            if let Some(status) = h.driver.as_mut().and_then(|d| d.try_wait().ok().flatten()) {
                panic!("tauri-driver exited early: {status}");
            }
            let ready = h
                .http
                .get(format!("{}/status", h.base))
                .send()
                .and_then(reqwest::blocking::Response::json::<Value>)
                .map(|v| v["value"]["ready"] == true)
                .unwrap_or(false);
            if ready {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "tauri-driver not ready after 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        h
    }

    /// Launches the app in a new session and waits for its first view.
    pub fn launch(&mut self) {
        self.launch_app(APP);
    }

    /// Launches the app binary `app` (another build, for benchmarks) like [`Harness::launch`].
    pub fn launch_app(&mut self, app: &str) {
        assert!(self.session_url.is_none(), "one session at a time");
        app.clone_into(&mut self.app);
        let resp = self.request(
            reqwest::Method::POST,
            &format!("{}/session", self.base),
            Some(json!({
                "capabilities": { "alwaysMatch": {
                    "browserName": "wry",
                    "tauri:options": { "application": app }
                }}
            })),
        );
        let id = resp["sessionId"].as_str().expect("sessionId").to_string();
        self.session_url = Some(format!("{}/session/{id}", self.base));
        self.wait_for(Duration::from_secs(60), || {
            (self.exec(
                "return document.body && document.body.dataset.ready === 'true'",
                json!([]),
            ) == true)
                .then_some(())
        });
        // From here on, record CSP violations: a blocked IPC fetch falls back silently, so only
        // this catches a wrong connect-src.
        self.exec(
            "window.__csp = []; document.addEventListener('securitypolicyviolation', e => \
             window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));",
            json!([]),
        );
    }

    /// Closes the app (ends the session); the app exits and stops its worker.
    pub fn quit(&mut self) {
        if let Some(url) = self.session_url.take() {
            let _ = self.http.delete(&url).timeout(Duration::from_secs(30)).send();
        }
    }

    /// Asserts that no CSP violation happened in this session.
    pub fn assert_no_csp_violations(&self) {
        assert_eq!(
            self.exec("return window.__csp", json!([])),
            json!([]),
            "CSP violations"
        );
    }

    fn request(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method.clone(), url);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status();
        let json: Value = resp.json().unwrap_or(Value::Null);
        if !status.is_success() {
            panic!("{method} {url} -> {status}: {json}");
        }
        json["value"].clone()
    }

    fn session(&self) -> &str {
        self.session_url.as_deref().expect("session")
    }

    pub fn get(&self, path: &str) -> Value {
        self.request(reqwest::Method::GET, &format!("{}/{path}", self.session()), None)
    }

    pub fn post(&self, path: &str, body: Value) -> Value {
        self.request(
            reqwest::Method::POST,
            &format!("{}/{path}", self.session()),
            Some(body),
        )
    }

    /// Runs a script in the page and returns its value.
    pub fn exec(&self, script: &str, args: Value) -> Value {
        self.post("execute/sync", json!({"script": script, "args": args}))
    }

    /// Element id for a CSS selector (panics if none).
    pub fn find(&self, css: &str) -> String {
        let v = self.post("element", json!({"using": "css selector", "value": css}));
        v[ELEMENT].as_str().expect("element id").to_string()
    }

    /// How many elements match. Counted in the page: WebDriver's "find elements" fails with
    /// "stale element reference" when the list is being redrawn at that moment.
    pub fn count(&self, css: &str) -> usize {
        self.exec(
            "return document.querySelectorAll(arguments[0]).length",
            json!([css]),
        )
        .as_u64()
        .unwrap_or(0) as usize
    }

    /// Clicks the element, as a user would. A view may redraw the element between finding and
    /// clicking it ("stale element reference"), or show it a moment after it is in the page (the
    /// selection's bar: "element not interactable", seen on a loaded machine): then find it again,
    /// for up to 2 s, as a person waits for the button to appear.
    pub fn click(&self, css: &str) {
        for _ in 0..20 {
            let id = self.find(css);
            let resp = self
                .http
                .post(format!("{}/element/{id}/click", self.session()))
                .json(&json!({}))
                .send()
                .unwrap_or_else(|e| panic!("click {css}: {e}"));
            if resp.status().is_success() {
                return;
            }
            let body: Value = resp.json().unwrap_or(Value::Null);
            let error = body["value"]["error"].as_str().unwrap_or_default();
            assert!(
                error == "stale element reference" || error == "element not interactable",
                "click {css}: {body}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("click {css}: the element kept going stale or could not be clicked for 2 s");
    }

    /// Types into an input, as a user would (key events, so `input` listeners fire).
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.post(&format!("element/{id}/clear"), json!({}));
        self.post(&format!("element/{id}/value"), json!({ "text": text }));
    }

    /// Presses and releases `key` (a WebDriver key code, e.g. `\u{E007}` for Enter) on whatever
    /// has the focus, as a user's keyboard would: trusted events, with the browser's own default
    /// actions (a button's activation, a form's implicit submission).
    pub fn press_key(&self, key: &str) {
        self.post(
            "actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
                {"type": "keyDown", "value": key},
                {"type": "keyUp", "value": key},
            ]}]}),
        );
        self.request(
            reqwest::Method::DELETE,
            &format!("{}/actions", self.session()),
            None,
        );
    }

    /// The rendered text of the first element matching `css` (panics if none). Read through
    /// `innerText`: WebKitWebDriver's "get element text" answered "" for table cells.
    pub fn text(&self, css: &str) -> String {
        self.try_text(css)
            .unwrap_or_else(|| panic!("no element matches {css}"))
    }

    /// Like [`Harness::text`], `None` if nothing matches (yet).
    pub fn try_text(&self, css: &str) -> Option<String> {
        let v = self.exec(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : null;",
            json!([css]),
        );
        v.as_str().map(str::to_owned)
    }

    /// Polls `f` every 100 ms until it returns Some; panics after `timeout`.
    pub fn wait_for<T>(&self, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
        self.try_wait_for(timeout, f)
            .unwrap_or_else(|| panic!("timed out after {timeout:?}"))
    }

    /// Like [`Harness::wait_for`], `None` after `timeout`.
    pub fn try_wait_for<T>(&self, timeout: Duration, f: impl FnMut() -> Option<T>) -> Option<T> {
        poll::poll(timeout, Duration::from_millis(100), f)
    }

    /// Resizes the window (W3C set window rect); false if the driver cannot.
    pub fn resize(&self, width: u32, height: u32) -> bool {
        let before = self.exec("return [window.innerWidth, window.innerHeight]", json!([]));
        let r = self
            .http
            .post(format!("{}/window/rect", self.session()))
            .json(&json!({"width": width, "height": height}))
            .send();
        let ok = r.map(|r| r.status().is_success()).unwrap_or(false);
        // The driver answers before the page is laid out at the new size: wait for the page's
        // `resize` (or a size already changed), then two animation frames for layout. A window
        // already of that size has no event: its wait ends after 3 s.
        self.post(
            "execute/async",
            json!({
                "script": "const [w, h] = arguments[0]; const done = arguments[arguments.length - 1];\
                           const frames = () => requestAnimationFrame(() => requestAnimationFrame(() => done(true)));\
                           if (window.innerWidth !== w || window.innerHeight !== h) frames();\
                           else { window.addEventListener('resize', frames, { once: true }); setTimeout(() => done(false), 3000); }",
                "args": [before]
            }),
        );
        ok
    }

    /// Saves a screenshot of the window as target/screenshots/NAME and returns its path: the
    /// X server's pixels of the app's window (ImageMagick's `import`), what a person sees.
    /// WebDriver's own screenshot (WebKit's snapshot of the page) never answered, for most
    /// tests, once WebKit painted without hardware acceleration (the app's choice where OpenGL is
    /// software: `src/painting.rs`). The page can lag the DOM: two animation frames first.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        self.post(
            "execute/async",
            json!({
                "script": "const done = arguments[arguments.length - 1];\
                           requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                "args": []
            }),
        );
        let window = self.window_id().expect("the app's window on the display");
        let shot = Command::new("import")
            .args(["-display", &self.display, "-window", &window, "png:-"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .expect("run import (apt-get install imagemagick)");
        let png = shot.stdout;
        assert!(shot.status.success(), "import failed: {:?}", shot.status);
        assert!(png.len() > 8 && &png[..8] == b"\x89PNG\r\n\x1a\n", "not a PNG");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        let path = dir.join(name);
        std::fs::write(&path, &png).expect("write screenshot");
        eprintln!("screenshot: {}", path.display());
        path
    }

    /// The X window id of the app's main window ("Sitetrail"), from `xwininfo`'s tree.
    fn window_id(&self) -> Option<String> {
        let tree = Command::new("xwininfo")
            .args(["-display", &self.display, "-root", "-tree"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        String::from_utf8_lossy(&tree.stdout)
            .lines()
            .find(|l| l.contains("\"Sitetrail\""))
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_owned)
    }

    /// The app's process id (the WebKitWebDriver child that is our binary).
    pub fn app_pid(&self) -> Option<u32> {
        let name = Path::new(&self.app)
            .file_name()?
            .to_str()?
            .chars()
            .take(15)
            .collect::<String>();
        let driver = self.driver.as_ref()?.id() as i32;
        let pgid = unsafe { libc::getpgid(driver) };
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let same_group = unsafe { libc::getpgid(pid as i32) } == pgid;
            (comm.trim() == name && same_group).then_some(pid)
        })
    }
}

/// target/screenshots (beside target/tmp).
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|t| t.join("screenshots"))
        .unwrap_or_else(|| PathBuf::from("target/screenshots"))
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.quit();
        if let Some(child) = self.driver.take() {
            stop_group(child);
        }
        if let Some(child) = self.xvfb.take() {
            stop_group(child);
        }
    }
}

/// SIGTERM the child if the thread that spawned it dies (the test binary was SIGKILLed).
fn die_with_parent(cmd: &mut Command) -> &mut Command {
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        })
    }
}

fn stop_group(mut child: Child) {
    let pgid = child.id() as libc::pid_t;
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
}

/// Starts Xvfb on a free display (full HD, so full-HD screenshots fit); returns it and ":N".
fn start_xvfb() -> (Child, String) {
    let mut child = die_with_parent(&mut Command::new("Xvfb"))
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1920x1080x24",
            "-nolisten",
            "tcp",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start Xvfb (apt-get install xvfb)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("Xvfb stdout"))
        .read_line(&mut line)
        .expect("read display number from Xvfb");
    let n = line.trim();
    assert!(!n.is_empty(), "Xvfb did not report a display");
    (child, format!(":{n}"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

fn tauri_driver_path() -> PathBuf {
    if let Some(p) = std::env::var_os("TAURI_DRIVER") {
        return p.into();
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("tauri-driver"))
        .find(|p| p.is_file());
    on_path.unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo/bin/tauri-driver")
    })
}
