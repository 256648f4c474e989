//! Where a start's time goes, from the process's start to the overview painted with today's
//! figures: the shell marks its own milestones ([`mark`]: `main`, the window created, the page's
//! load started and finished, the first IPC call, the first overview query done) and the page
//! reports its own when it has drawn the first view ([`first_view_painted`]: the navigation's
//! start, the scripts run, the first backend answers, the figures drawn). The shell then logs one
//! line (`first view painted N ms after the process started; ...`), once per process, which the
//! first-paint benchmark (`src-tauri/benches/first_paint.rs`) reads and a person can read in the
//! log of a slow start.
//!
//! Times are Unix milliseconds (the page's `performance.timeOrigin + now()` is on the same clock).
//! The process's start comes from `/proc/self/stat` (10 ms steps); elsewhere the line counts from
//! `main`.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::error::{CmdError, CmdResult};

/// The shell's milestones, in the order they were first reached.
static MARKS: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());
/// Set once the first view was reported: later reports (a reloaded page) are ignored.
static PAINTED: Mutex<bool> = Mutex::new(false);

/// Now, in Unix milliseconds.
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// Records the milestone `name` the first time it is reached (later calls do nothing: cheap
/// enough to call on every IPC request).
pub fn mark(name: &'static str) {
    if let Ok(mut marks) = MARKS.lock() {
        if !marks.iter().any(|(n, _)| *n == name) {
            marks.push((name, now_ms()));
        }
    }
}

/// The milestones recorded so far.
pub fn marks() -> Vec<(&'static str, f64)> {
    MARKS.lock().map(|m| m.clone()).unwrap_or_default()
}

/// When this process started, in Unix milliseconds (Linux: its start in clock ticks after boot
/// from `/proc/self/stat`, against the time since boot from `/proc/uptime`, both in 10 ms steps;
/// `None` elsewhere).
pub fn process_start_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name is in parentheses and may hold spaces: count fields after it.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let start_ticks: f64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let now = now_ms();
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // USER_HZ is 100 on every mainstream Linux configuration.
    Some(now - (uptime - start_ticks / 100.0) * 1000.0)
}

/// Most page milestones one report may name, and the longest name.
const MAX_PAGE_MARKS: usize = 32;
const MAX_MARK_NAME: usize = 60;

/// What the page reports once it has drawn the first view, each a Unix millisecond time.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageTimes {
    /// The navigation started (`performance.timeOrigin`).
    pub navigation: f64,
    /// The figures were drawn and two frames painted.
    pub painted: f64,
    /// The page's other milestones (the scripts fetched and run, the first answers, today's
    /// figures in and drawn, ...) by name; 0 for one not reached.
    #[serde(default)]
    pub marks: Vec<(String, f64)>,
}

impl PageTimes {
    fn named(&self) -> Vec<(&str, f64)> {
        let mut all = vec![("navigation started", self.navigation)];
        all.extend(self.marks.iter().map(|(n, t)| (n.as_str(), *t)));
        all.push(("painted", self.painted));
        all
    }
}

/// The log line of a first view: every milestone (the shell's and the page's) in ms after the
/// process's start (or after `main`), in time order, plus the painted time in Unix ms for a
/// benchmark that timed the start from outside.
pub fn summary(start: f64, shell: &[(&'static str, f64)], page: &PageTimes) -> String {
    let mut all: Vec<(&str, f64)> = shell.to_vec();
    all.extend(page.named().into_iter().filter(|(_, t)| *t > 0.0));
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    let steps: Vec<String> = all
        .iter()
        .map(|(name, t)| format!("{name} {:.0}", t - start))
        .collect();
    format!(
        "first view painted {:.0} ms after the process started; ms after start: {} (painted at unix ms {:.1})",
        page.painted - start,
        steps.join(", "),
        page.painted
    )
}

/// Checks the page's report: finite times within a day of now, in order of the page's own steps.
fn check(page: &PageTimes) -> CmdResult<()> {
    let now = now_ms();
    if page.marks.len() > MAX_PAGE_MARKS {
        return Err(CmdError::invalid(format!(
            "At most {MAX_PAGE_MARKS} page milestones, not {}.",
            page.marks.len()
        )));
    }
    for (name, _) in &page.marks {
        let plain = |c: char| c.is_ascii_alphanumeric() || c == ' ' || c == '-';
        if name.is_empty() || name.chars().count() > MAX_MARK_NAME || !name.chars().all(plain) {
            return Err(CmdError::invalid(
                "A page milestone's name is a few plain words (letters, digits, spaces, dashes).",
            ));
        }
    }
    for (name, t) in page.named() {
        // 0 is "not reached" (a step the page could not take, e.g. no figures on an error).
        if !t.is_finite() || (t != 0.0 && (t - now).abs() > 86_400_000.0) {
            return Err(CmdError::invalid(format!(
                "The page's time for \"{name}\" is not a time of today."
            )));
        }
    }
    if page.painted == 0.0 || page.navigation == 0.0 || page.painted < page.navigation {
        return Err(CmdError::invalid(
            "The page's first view must be painted after its navigation started.",
        ));
    }
    Ok(())
}

/// Logs where the start's time went, the first time the page reports its first view painted.
/// Returns the line logged (`None` for a later report).
pub fn first_view_painted(page: &PageTimes) -> CmdResult<Option<String>> {
    check(page)?;
    {
        let mut painted = PAINTED.lock().map_err(|_| CmdError::invalid("poisoned"))?;
        if *painted {
            return Ok(None);
        }
        *painted = true;
    }
    let shell = marks();
    let start = process_start_ms()
        .or_else(|| shell.iter().find(|(n, _)| *n == "main").map(|m| m.1))
        .unwrap_or(page.navigation);
    let line = summary(start, &shell, page);
    tracing::info!("{line}");
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_puts_every_step_in_time_order_after_the_start() {
        let page = PageTimes {
            navigation: 1300.0,
            painted: 1800.0,
            marks: vec![
                ("scripts run".into(), 1500.0),
                ("figures drawn".into(), 1700.0),
                ("first answers".into(), 1550.0),
                ("never reached".into(), 0.0),
            ],
        };
        let shell = [
            ("main", 1010.0),
            ("window created", 1250.0),
            ("first IPC", 1510.0),
        ];
        let line = summary(1000.0, &shell, &page);
        assert_eq!(
            line,
            "first view painted 800 ms after the process started; ms after start: main 10, \
             window created 250, navigation started 300, scripts run 500, first IPC 510, \
             first answers 550, figures drawn 700, painted 800 (painted at unix ms 1800.0)"
        );
    }

    #[test]
    fn a_report_that_is_not_a_time_of_today_or_not_plain_words_is_refused() {
        let now = now_ms();
        let good = PageTimes {
            navigation: now - 500.0,
            painted: now,
            marks: vec![("scripts run".into(), now - 300.0), ("not reached".into(), 0.0)],
        };
        assert!(check(&good).is_ok());
        let with_mark = |name: &str, t: f64| PageTimes {
            marks: vec![(name.to_owned(), t)],
            ..good.clone()
        };
        for bad in [
            PageTimes {
                painted: f64::NAN,
                ..good.clone()
            },
            PageTimes {
                painted: f64::INFINITY,
                ..good.clone()
            },
            PageTimes {
                painted: 0.0,
                ..good.clone()
            },
            PageTimes {
                navigation: now + 1000.0,
                ..good.clone()
            },
            with_mark("scripts run", 5.0),
            with_mark("scripts run", f64::NEG_INFINITY),
            with_mark("", now),
            with_mark("a\nforged log line", now),
            with_mark(&"x".repeat(61), now),
            PageTimes {
                marks: vec![("m".into(), now); 33],
                ..good.clone()
            },
        ] {
            let e = check(&bad).unwrap_err();
            assert_eq!(e.kind, sitetrail::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn a_milestone_keeps_its_first_time() {
        mark("test milestone");
        let first = marks().into_iter().find(|m| m.0 == "test milestone").unwrap().1;
        std::thread::sleep(std::time::Duration::from_millis(5));
        mark("test milestone");
        let again: Vec<_> = marks().into_iter().filter(|m| m.0 == "test milestone").collect();
        assert_eq!(again, vec![("test milestone", first)]);
    }

    #[test]
    fn this_process_has_a_start_time_before_now() {
        if cfg!(target_os = "linux") {
            let start = process_start_ms().expect("start time from /proc");
            assert!(start <= now_ms() + 20.0 && start > now_ms() - 86_400_000.0);
        }
    }
}
