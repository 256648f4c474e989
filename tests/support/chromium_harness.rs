//! A real Chromium with the extension loaded, for the end-to-end capture tests and the capture
//! benchmark: Debian's `chromium` in `--headless=new` (native messaging works there, the window
//! counts as focused and `chrome.idle` reports the user present), a temporary `--user-data-dir`,
//! `--load-extension=extension/`, pages served by a hand-written HTTP server on 127.0.0.1 under
//! any `*.test` host name (`--host-resolver-rules`; names under `nowhere.test` resolve to nothing),
//! and tabs opened, activated, listed and closed through the DevTools HTTP endpoints (`/json/new`,
//! `/json/activate`, `/json/list`, `/json/close`).
//!
//! With a `Display` (Xvfb, optionally openbox), Chromium has a real window instead, which another
//! program's window (xmessage) can take the focus from, through `xdotool`.
//!
//! Self-contained (no `crate::support`), so `benches/capture.rs` can include it with `#[path]`.
//! `Drop` stops the browser's process group; a test binary killed outright takes the browser with
//! it (`PR_SET_PDEATHSIG`).

#![allow(unsafe_code)] // prctl, kill and setpgid for child cleanup
#![allow(dead_code)] // shared by the tests and the bench; each uses part of it

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The polling helper every test crate shares (waits for a condition, never a guessed time).
/// Included here as well as in `tests/support` because the capture bench includes this file
/// without `common`.
#[allow(clippy::duplicate_mod)]
#[path = "poll.rs"]
pub mod poll;

/// The extension's directory in this repository.
pub const EXTENSION_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/extension");

/// Pages for the browser, served on 127.0.0.1 under any host name:
/// - `/page?title=T`: a page titled T;
/// - `/retitle?first=A&final=B&ms=N`: titled A, then B after N ms (what a web app does);
/// - `/spa?title=T&to=/path&ms=N`: titled T, then `history.pushState` to `/path` after N ms;
/// - `/goto?title=T&to=URL&ms=N`: titled T, then goes to URL after N ms (`location.href`);
/// - `/reset`: no answer, the connection is reset (RST);
/// - any page with `frame=URL` embeds URL in an iframe.
///   Every request's time is kept (host + path), to measure the delay to the database.
pub struct PageServer {
    pub port: u16,
    served: Arc<Mutex<HashMap<String, Instant>>>,
}

fn query_param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.replace('+', " ").replace("%20", " "))
    })
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}

fn page_for(path: &str) -> String {
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    let q = |k: &str, d: &str| query_param(query, k).unwrap_or_else(|| d.to_owned());
    let title = html_escape(&q("title", "A page"));
    let script = match route {
        "/retitle" => format!(
            "setTimeout(() => {{ document.title = {:?}; }}, {});",
            q("final", "Final"),
            q("ms", "500").parse::<u64>().unwrap_or(500)
        ),
        "/spa" => format!(
            "setTimeout(() => history.pushState(null, '', {:?}), {});",
            q("to", "/spa/next"),
            q("ms", "500").parse::<u64>().unwrap_or(500)
        ),
        "/goto" => format!(
            "setTimeout(() => {{ location.href = {:?}; }}, {});",
            q("to", "about:blank"),
            q("ms", "500").parse::<u64>().unwrap_or(500)
        ),
        _ => String::new(),
    };
    let first = if route == "/retitle" {
        html_escape(&q("first", "First"))
    } else {
        title
    };
    // `frame=URL`: the page embeds URL in an iframe (a subframe, which is not a visit).
    let frame = query_param(query, "frame")
        .map(|src| format!("<iframe src=\"{}\"></iframe>", html_escape(&src)))
        .unwrap_or_default();
    format!(
        "<!doctype html><html><head><meta charset=utf-8><title>{first}</title></head>\
         <body><p>Test page {route}</p>{frame}<script>{script}</script></body></html>"
    )
}

impl PageServer {
    pub fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind page server");
        let port = listener.local_addr().unwrap().port();
        let served: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
        let log = served.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve_one(stream, &log));
            }
        });
        PageServer { port, served }
    }

    /// `http://<host>:<port><path>`.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// When `host` + `path` was first served.
    pub fn served_at(&self, host: &str, path: &str) -> Option<Instant> {
        self.served.lock().unwrap().get(&format!("{host}{path}")).copied()
    }

    /// Whether any request for `host` whose path (with its query) starts with `prefix` came in.
    pub fn was_asked(&self, host: &str, prefix: &str) -> bool {
        let key = format!("{host}{prefix}");
        self.served.lock().unwrap().keys().any(|k| k.starts_with(&key))
    }
}

fn serve_one(stream: TcpStream, log: &Mutex<HashMap<String, Instant>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut host = String::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some(v) = h.strip_prefix("Host: ").or_else(|| h.strip_prefix("host: ")) {
            host = v.trim().split(':').next().unwrap_or("").to_owned();
        }
    }
    log.lock()
        .unwrap()
        .entry(format!("{host}{path}"))
        .or_insert_with(Instant::now);
    if path == "/reset" {
        reset(reader.into_inner());
        return;
    }
    let (status, body) = if path == "/favicon.ico" {
        ("404 Not Found", String::new())
    } else {
        ("200 OK", page_for(&path))
    };
    let mut stream = reader.into_inner();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Closes `stream` with a reset (RST) instead of an orderly close: SO_LINGER with a zero timeout.
fn reset(stream: TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setting a plain option on a socket this function owns, with a correctly sized value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(stream);
}

/// A port on 127.0.0.1 where nothing listens (bound, then closed): a connection is refused.
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().unwrap().port()
}

/// A plain HTTP/1.1 request to 127.0.0.1:`port`; returns the body (read by its Content-Length:
/// DevTools keeps the connection open).
fn http(port: u16, method: &str, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to DevTools");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(s);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read DevTools answer") == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).expect("read DevTools body");
    String::from_utf8_lossy(&body).into_owned()
}

/// A running Chromium.
pub struct Chromium {
    child: Child,
    devtools: u16,
    pub user_data_dir: PathBuf,
}

/// Makes a child die with its parent and lead its own process group.
fn contain(cmd: &mut Command) -> &mut Command {
    // SAFETY: prctl is async-signal-safe; it only affects the child about to exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.process_group(0)
}

impl Chromium {
    /// Starts Chromium on `user_data_dir` with the extension loaded; `env` is added to its
    /// environment (and so to the native host's, which inherits it).
    pub fn start(user_data_dir: &Path, env: &[(&str, &str)], log: &Path) -> Chromium {
        Chromium::launch(user_data_dir, env, log, None)
    }

    /// Starts Chromium with a window on `display` (not headless: its window can lose the focus).
    pub fn start_on(display: &Display, user_data_dir: &Path, env: &[(&str, &str)], log: &Path) -> Chromium {
        Chromium::launch(user_data_dir, env, log, Some(display))
    }

    fn launch(user_data_dir: &Path, env: &[(&str, &str)], log: &Path, display: Option<&Display>) -> Chromium {
        let out = std::fs::File::create(log).expect("browser log");
        let mut cmd = Command::new("chromium");
        match display {
            Some(d) => cmd.env("DISPLAY", &d.name),
            None => cmd.arg("--headless=new"),
        };
        contain(&mut cmd)
            .arg(format!("--user-data-dir={}", user_data_dir.display()))
            .arg(format!("--load-extension={EXTENSION_DIR}"))
            .args([
                "--disable-features=DisableLoadExtensionCommandLineSwitch",
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--host-resolver-rules=MAP *.nowhere.test ~NOTFOUND, MAP *.test 127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ])
            .env_remove("SITETRAIL_DB")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .expect("start chromium (apt-get install chromium; scripts/setup does)");
        let port_file = user_data_dir.join("DevToolsActivePort");
        let devtools = poll::poll(Duration::from_secs(60), Duration::from_millis(50), || {
            let text = std::fs::read_to_string(&port_file).ok()?;
            text.lines().next().and_then(|l| l.trim().parse().ok())
        })
        .expect("chromium did not start (no DevToolsActivePort within 60 s)");
        Chromium {
            child,
            devtools,
            user_data_dir: user_data_dir.to_path_buf(),
        }
    }

    /// Opens `url` in a new tab (which becomes the active one); returns the tab's DevTools id.
    pub fn open(&self, url: &str) -> String {
        // DevTools unescapes the query as the URL: escape what would end or split it.
        let escaped: String = url
            .chars()
            .map(|c| match c {
                '%' => "%25".to_owned(),
                '&' => "%26".to_owned(),
                '?' => "%3F".to_owned(),
                '#' => "%23".to_owned(),
                ' ' => "%20".to_owned(),
                c => c.to_string(),
            })
            .collect();
        let body = http(self.devtools, "PUT", &format!("/json/new?{escaped}"));
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("/json/new: {e}: {body}"));
        v["id"].as_str().expect("target id").to_owned()
    }

    /// Makes the tab with DevTools id `id` the active one.
    pub fn activate(&self, id: &str) {
        http(self.devtools, "GET", &format!("/json/activate/{id}"));
    }

    /// The open tabs' (URL, title), as DevTools lists its page targets.
    pub fn tabs(&self) -> Vec<(String, String)> {
        let body = http(self.devtools, "GET", "/json/list");
        let list: Vec<Value> = serde_json::from_str(&body).unwrap_or_default();
        list.iter()
            .filter(|t| t["type"] == "page")
            .map(|t| {
                let s = |k: &str| t[k].as_str().unwrap_or("").to_owned();
                (s("url"), s("title"))
            })
            .collect()
    }

    /// The (URL, title) of the tab with DevTools id `id`, if it is open.
    pub fn tab(&self, id: &str) -> Option<(String, String)> {
        let body = http(self.devtools, "GET", "/json/list");
        let list: Vec<Value> = serde_json::from_str(&body).unwrap_or_default();
        list.iter().find(|t| t["id"] == id).map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_owned();
            (s("url"), s("title"))
        })
    }

    /// The browser's process id, which leads the process group of all its processes.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The extension's origin (`chrome-extension://ID`), from its service worker's DevTools target.
    pub fn extension_origin(&self) -> Option<String> {
        let body = http(self.devtools, "GET", "/json/list");
        let list: Vec<Value> = serde_json::from_str(&body).unwrap_or_default();
        list.iter().find_map(|t| {
            let url = t["url"].as_str()?;
            let origin = url.strip_suffix("/background.js")?;
            origin
                .starts_with("chrome-extension://")
                .then(|| origin.to_owned())
        })
    }

    /// The port of the DevTools endpoints (and of each tab's DevTools protocol WebSocket).
    pub fn devtools_port(&self) -> u16 {
        self.devtools
    }

    /// Closes the tab with DevTools id `id`.
    pub fn close(&self, id: &str) {
        http(self.devtools, "GET", &format!("/json/close/{id}"));
    }

    /// Pids of this browser's processes whose command line contains `needle`.
    pub fn processes_with(&self, needle: &str) -> Vec<i32> {
        let dir = self.user_data_dir.display().to_string();
        processes(|cmdline| cmdline.contains(needle) && cmdline.contains(&dir))
    }

    /// The pid of the extension's renderer process (where its service worker runs).
    pub fn extension_process(&self) -> Option<i32> {
        self.processes_with("--extension-process").into_iter().next()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling our own child's process group.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let child = &mut self.child;
        poll::poll(Duration::from_secs(5), Duration::from_millis(50), || {
            child.try_wait().ok().flatten()
        });
        // SAFETY: as above.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// A virtual X display (Xvfb, the number it picks), with or without a window manager (openbox),
/// where Chromium's window and another program's can take the focus from each other (`xdotool`).
pub struct Display {
    /// `:N`.
    pub name: String,
    xvfb: Child,
    others: Vec<Child>,
    window_manager: bool,
}

impl Display {
    /// Starts Xvfb, and openbox on it when `window_manager`.
    pub fn start(window_manager: bool) -> Display {
        let mut cmd = Command::new("Xvfb");
        let mut xvfb = contain(&mut cmd)
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb (scripts/setup installs xvfb)");
        let mut line = String::new();
        BufReader::new(xvfb.stdout.take().expect("Xvfb stdout"))
            .read_line(&mut line)
            .expect("read the display number from Xvfb");
        assert!(!line.trim().is_empty(), "Xvfb did not say its display");
        let mut display = Display {
            name: format!(":{}", line.trim()),
            xvfb,
            others: Vec::new(),
            window_manager,
        };
        if window_manager {
            let wm = display.spawn("openbox", &[]);
            display.others.push(wm);
            let ready = poll::poll(Duration::from_secs(20), Duration::from_millis(100), || {
                display.has_window_manager().then_some(())
            });
            assert!(ready.is_some(), "openbox did not start");
        }
        display
    }

    fn spawn(&self, program: &str, args: &[&str]) -> Child {
        let mut cmd = Command::new(program);
        contain(&mut cmd)
            .args(args)
            .env("DISPLAY", &self.name)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {program} (scripts/setup installs it): {e}"))
    }

    /// Whether a window manager (EWMH) manages the screen: `_NET_SUPPORTING_WM_CHECK` is set.
    fn has_window_manager(&self) -> bool {
        let out = Command::new("xprop")
            .args(["-root", "_NET_SUPPORTING_WM_CHECK"])
            .env("DISPLAY", &self.name)
            .output()
            .expect("xprop (x11-utils)");
        String::from_utf8_lossy(&out.stdout).contains("window id")
    }

    fn xdotool(&self, args: &[&str]) -> std::process::Output {
        Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.name)
            .output()
            .expect("xdotool (scripts/setup installs it)")
    }

    /// The first visible window of the X class `class`, once there is one.
    pub fn window_of(&self, class: &str) -> String {
        poll::poll(Duration::from_secs(30), Duration::from_millis(100), || {
            let out = self.xdotool(&["search", "--onlyvisible", "--class", class]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.lines().next().map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no visible {class} window"))
    }

    /// Opens another program's window (xmessage) at 600,500; returns its window id.
    pub fn other_program(&mut self) -> String {
        let child = self.spawn("xmessage", &["-geometry", "300x100+600+500", "Another program"]);
        self.others.push(child);
        self.window_of("xmessage")
    }

    /// Gives `window` the focus: through the window manager (`_NET_ACTIVE_WINDOW`) when there is
    /// one, else straight from X (`XSetInputFocus`: no window manager sends anything).
    pub fn focus(&self, window: &str) {
        let how = if self.window_manager {
            "windowactivate"
        } else {
            "windowfocus"
        };
        let out = self.xdotool(&[how, "--sync", window]);
        assert!(
            out.status.success(),
            "xdotool {how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Moves the pointer to (x, y): input, so the user counts as present (not idle).
    pub fn move_pointer(&self, x: u32, y: u32) {
        self.xdotool(&["mousemove", &x.to_string(), &y.to_string()]);
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        for child in self.others.iter_mut().chain(std::iter::once(&mut self.xvfb)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Pids of every process whose NUL-separated command line (joined with spaces) satisfies `f`.
pub fn processes(f: impl Fn(&str) -> bool) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(raw) = std::fs::read(e.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
            if f(&cmdline) {
                out.push(pid);
            }
        }
    }
    out
}

/// Pids of the native hosts running on `db`.
pub fn host_processes(db: &Path) -> Vec<i32> {
    let db = db.display().to_string();
    processes(|c| c.contains("native-host") && c.contains(&db))
}

/// SIGKILLs `pid`.
pub fn kill9(pid: i32) {
    // SAFETY: `pid` is a process this test started (directly or through the browser).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// (VmRSS, private memory) of `pid` in KiB, from /proc (private = Private_Clean + Private_Dirty
/// + Swap of smaps_rollup: close to what Chromium's task manager calls the memory footprint).
pub fn memory_kib(pid: i32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let field = |name: &str| -> u64 {
        rollup
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Some((
        rss,
        field("Private_Clean:") + field("Private_Dirty:") + field("Swap:"),
    ))
}

/// User + system CPU time `pid` has used, in seconds (/proc/PID/stat), or None once it is gone.
pub fn cpu_seconds(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces, inside parentheses).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 / per_second)
}

/// Pids of the processes in process group `pgid` (a browser started by [`Chromium`] leads its own).
pub fn group_processes(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let group = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<i32>().ok());
        if group == Some(pgid) {
            out.push(pid);
        }
    }
    out
}
