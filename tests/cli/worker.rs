//! The real `sitetrail` binary as a worker against a fake provider: isolated from the user's
//! settings and environment, logs to a file, stopped by the test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{cli, wait_for};

/// `sitetrail --db DB --settings <a file in DB's folder>` with no classifier settings from the
/// outside world. The settings file need not exist.
pub fn isolated(db: &Path) -> Command {
    let mut c = cli(db);
    for var in [
        "SITETRAIL_BASE_URL",
        "SITETRAIL_MODEL",
        "SITETRAIL_API_KEY",
        "SITETRAIL_SETTINGS",
    ] {
        c.env_remove(var);
    }
    c.arg("--settings").arg(settings_path(db));
    c
}

/// The settings file `isolated` points at.
pub fn settings_path(db: &Path) -> PathBuf {
    db.with_file_name("settings.json")
}

/// `worker --provider openai --base-url BASE` with the test key and millisecond delays, and more
/// arguments.
pub fn openai_worker(db: &Path, base: &str, extra: &[&str]) -> Command {
    let mut c = isolated(db);
    c.env("SITETRAIL_API_KEY", crate::support::fake_ai::KEY)
        .args(["worker", "--provider", "openai", "--base-url", base])
        .args([
            "--fixed-delay-ms",
            "0",
            "--retry-delay-ms",
            "1",
            "--retry-max-delay-ms",
            "1",
        ])
        .args(extra);
    c
}

/// A worker process whose log goes to a file.
pub struct Running {
    pub child: Child,
    log: PathBuf,
}

impl Running {
    /// Starts `cmd`, its stderr in `log`.
    pub fn start(mut cmd: Command, log: PathBuf) -> Running {
        let file = std::fs::File::create(&log).expect("log file");
        let child = cmd
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start sitetrail");
        Running { child, log }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// True while the process runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits until `cond` holds while the process is alive; panics (with the log) if it died or
    /// the condition did not come within 20 s.
    pub fn wait_alive(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let mut died = false;
        let held = wait_for(Duration::from_secs(20), || {
            if cond() {
                return true;
            }
            died = !self.alive();
            died
        });
        assert!(
            held && !died,
            "{what}: the worker died or never got there; log:\n{}",
            self.log()
        );
    }

    /// Stops the process (SIGKILL) and returns its log.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log()
    }
}

/// True if some 8-character run of `secret` is in `text`, ASCII case ignored.
pub fn leaks(text: &str, secret: &str) -> bool {
    let text = text.to_ascii_lowercase();
    let s: Vec<char> = secret.to_ascii_lowercase().chars().collect();
    s.windows(8).any(|w| text.contains(&w.iter().collect::<String>()))
}
