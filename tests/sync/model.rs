//! A model-based test of sync: random operations on three devices (visits, titles, categories,
//! blocking, limits set, changed and removed, forgetting a website or a time range) interleaved
//! with random syncs and the events of a device's life (leaving and joining again, a backup taken
//! and, after the device synced, restored: it goes on as a new device); afterwards,
//! once every device synced, all three hold the same state, and that state keeps every
//! deletion: no visit of a website recorded (on any device) before that website was forgotten,
//! none in a forgotten range. Each device's clock may be off, from the year 1970 to the year
//! 9999 (issue 27): the devices still converge, and a forgetting still removes every visit its
//! device held when it forgot (with right clocks, every visit recorded before it, on any device).
//! One real hub on a real PostgreSQL; each case is a new account.
//! `PROPTEST_CASES` sets the number of cases (8 by default, to keep CI short).

use proptest::prelude::*;
use sitetrail::Category;

use crate::support::sync::{converge, offset_to, t, Device, TestHub};

const DOMAINS: [&str; 4] = ["a.example", "b.example", "c.example", "d.example"];
const CATEGORIES: [Category; 3] = [Category::News, Category::Shopping, Category::DevTech];

#[derive(Clone, Debug)]
enum Step {
    Visit {
        dev: usize,
        domain: usize,
        at: i64,
    },
    Title {
        dev: usize,
        domain: usize,
    },
    Categorize {
        dev: usize,
        domain: usize,
        category: usize,
    },
    Block {
        dev: usize,
        domain: usize,
        on: bool,
    },
    /// Sets a daily limit on a website (`Some` minutes) or removes it.
    Limit {
        dev: usize,
        domain: usize,
        minutes: Option<u32>,
    },
    ForgetWebsite {
        dev: usize,
        domain: usize,
    },
    ForgetRange {
        dev: usize,
        from: i64,
        len: i64,
    },
    Sync {
        dev: usize,
    },
    /// The device leaves (the hub is up: it sends what it queued first) and joins again.
    Rejoin {
        dev: usize,
    },
    /// A copy of the device's files is kept.
    Backup {
        dev: usize,
    },
    /// The device syncs, then its files are replaced by its last backup (if any).
    Restore {
        dev: usize,
    },
}

/// How far a device's clock is off.
#[derive(Clone, Copy, Debug)]
enum Skew {
    Right,
    /// The year 1970.
    FarPast,
    /// The year 9999.
    FarFuture,
    /// Some seconds either way (up to three days).
    Seconds(i64),
}

impl Skew {
    fn micros(self) -> i64 {
        match self {
            Skew::Right => 0,
            Skew::FarPast => offset_to("1970-01-02T00:00:00Z"),
            Skew::FarFuture => offset_to("9999-06-01T00:00:00Z"),
            Skew::Seconds(s) => s * 1_000_000,
        }
    }
}

fn skew() -> impl Strategy<Value = Skew> {
    prop_oneof![
        4 => Just(Skew::Right),
        1 => Just(Skew::FarPast),
        1 => Just(Skew::FarFuture),
        1 => (-259_200i64..259_200).prop_map(Skew::Seconds),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let dev = 0..3usize;
    let domain = 0..DOMAINS.len();
    prop_oneof![
        6 => (dev.clone(), domain.clone(), 0..100i64).prop_map(|(dev, domain, at)| Step::Visit { dev, domain, at }),
        1 => (dev.clone(), domain.clone()).prop_map(|(dev, domain)| Step::Title { dev, domain }),
        2 => (dev.clone(), domain.clone(), 0..CATEGORIES.len())
            .prop_map(|(dev, domain, category)| Step::Categorize { dev, domain, category }),
        1 => (dev.clone(), domain.clone(), any::<bool>()).prop_map(|(dev, domain, on)| Step::Block { dev, domain, on }),
        2 => (dev.clone(), domain.clone(), proptest::option::of(1..3u32))
            .prop_map(|(dev, domain, minutes)| Step::Limit { dev, domain, minutes }),
        1 => (dev.clone(), domain.clone()).prop_map(|(dev, domain)| Step::ForgetWebsite { dev, domain }),
        1 => (dev.clone(), 0..100i64, 0..20i64).prop_map(|(dev, from, len)| Step::ForgetRange { dev, from, len }),
        4 => dev.clone().prop_map(|dev| Step::Sync { dev }),
        1 => dev.clone().prop_map(|dev| Step::Rejoin { dev }),
        1 => dev.clone().prop_map(|dev| Step::Backup { dev }),
        1 => dev.prop_map(|dev| Step::Restore { dev }),
    ]
}

type State = (
    Vec<(String, String, Option<String>, i64)>,
    Vec<(String, Option<String>, Option<String>)>,
    Vec<String>,
    Vec<(String, Option<i64>, Option<i64>)>,
    Vec<(String, u32)>,
);

fn state(d: &Device) -> State {
    let users: Vec<_> = d
        .websites()
        .into_iter()
        .map(|w| {
            if w.2.as_deref() == Some("user") {
                w
            } else {
                (w.0, None, None)
            }
        })
        .collect();
    let limits = d
        .store
        .limits()
        .unwrap()
        .into_iter()
        .map(|l| (l.target, l.minutes))
        .collect();
    (d.visits(), users, d.blocked(), d.times(), limits)
}

/// Returns once the wall clock's millisecond has moved on (a millisecond at most).
fn next_millisecond() {
    let ms = || chrono::Utc::now().timestamp_millis();
    let start = ms();
    while ms() == start {
        std::thread::yield_now();
    }
}

fn run(hub: &TestHub, steps: &[Step], skews: [Skew; 3]) {
    let mut devices = skews.map(|s| Device::with_clock(s.micros()));
    let mut backups: [Option<Device>; 3] = [None, None, None];
    let right_clocks = skews.iter().all(|s| matches!(s, Skew::Right));
    // The visits each forgetting's device held when it forgot: gone everywhere afterwards.
    let mut seen_forgotten: Vec<String> = Vec::new();
    let key = devices[0].setup(hub, "d0");
    devices[1].join(hub, "d1", &key);
    devices[2].join(hub, "d2", &key);
    let mut forgotten_sites = Vec::new();
    let mut forgotten_ranges = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        // The sync clock counts milliseconds: two devices' changes in the same one are concurrent
        // (either may win), while the model orders every step. One step per millisecond keeps
        // the model's order the clock's.
        next_millisecond();
        match s {
            Step::Visit { dev, domain, at } => {
                // Refused (blocked, in a forgotten range) is what one device does too.
                let _ = devices[*dev].store.record_visit(&sitetrail::NewVisit {
                    url: &format!("https://{}/{n}", DOMAINS[*domain]),
                    title: Some(&format!("visit {n}")),
                    visited_at: t(*at),
                    source: "model",
                    source_visit_id: None,
                });
            }
            Step::Title { dev, domain } => {
                let d = &devices[*dev];
                let last = d
                    .visits()
                    .into_iter()
                    .rev()
                    .find(|v| v.1.contains(DOMAINS[*domain]));
                if let Some((id, ..)) = last {
                    let id = sitetrail::ids::VisitId(uuid::Uuid::parse_str(&id).unwrap());
                    d.store
                        .write(Some(sitetrail::Change::Visits), |tx| {
                            sitetrail::visits::update_title_in(tx, id, Some(&format!("retitled {n}")))
                        })
                        .unwrap();
                }
            }
            Step::Categorize {
                dev,
                domain,
                category,
            } => {
                let _ = devices[*dev]
                    .store
                    .set_user_category(DOMAINS[*domain], CATEGORIES[*category]);
            }
            Step::Block { dev, domain, on } => {
                if *on {
                    devices[*dev].store.block_domain(DOMAINS[*domain]).unwrap();
                } else {
                    devices[*dev].store.unblock_domain(DOMAINS[*domain]).unwrap();
                }
            }
            Step::Limit { dev, domain, minutes } => {
                let target = sitetrail::limits::Target::Domain(DOMAINS[*domain].to_owned());
                let (day, max) = (sitetrail::limits::Period::Day, sitetrail::limits::Kind::Max);
                let store = &devices[*dev].store;
                match minutes {
                    Some(m) => {
                        store.set_limit(&target, day, max, *m).unwrap();
                    }
                    None => {
                        store.remove_limits(&target, None).unwrap();
                    }
                }
            }
            Step::ForgetWebsite { dev, domain } => {
                let held: Vec<String> = devices[*dev]
                    .visits()
                    .into_iter()
                    .map(|v| v.1)
                    .filter(|u| u.starts_with(&format!("https://{}/", DOMAINS[*domain])))
                    .collect();
                if devices[*dev]
                    .store
                    .forget_website(DOMAINS[*domain], false, &Default::default(), &mut |_| {})
                    .is_ok()
                {
                    forgotten_sites.push((DOMAINS[*domain], n));
                    seen_forgotten.extend(held);
                }
            }
            Step::ForgetRange { dev, from, len } => {
                devices[*dev]
                    .store
                    .forget_range(t(*from), t(from + len), &Default::default(), &mut |_| {})
                    .unwrap();
                forgotten_ranges.push((t(*from).as_micros(), t(from + len).as_micros()));
            }
            Step::Sync { dev } => {
                devices[*dev].sync();
            }
            Step::Rejoin { dev } => {
                devices[*dev].leave(false).unwrap();
                devices[*dev].join(hub, &format!("d{dev}"), &key);
                // A backup from before is linked to the id that left: restored, it would be told
                // to join again (a device that left never comes back by itself).
                backups[*dev] = None;
            }
            Step::Backup { dev } => {
                backups[*dev] = Some(Device::copy_of(&devices[*dev]));
            }
            Step::Restore { dev } => {
                devices[*dev].sync();
                if let Some(backup) = backups[*dev].take() {
                    devices[*dev] = backup;
                }
            }
        }
    }
    let all: Vec<&Device> = devices.iter().collect();
    converge(&all);
    let first = state(&devices[0]);
    for d in &devices[1..] {
        assert_eq!(state(d), first, "every device holds the same state");
    }
    // The search index is whole on every device (its rows are added per batch of applied
    // operations, before any title or forgetting touches it), and finds every visit.
    for d in &devices {
        d.store
            .with_conn(|c| {
                c.execute("INSERT INTO visit_fts (visit_fts) VALUES ('integrity-check')", [])?;
                Ok(())
            })
            .expect("the search index is whole");
        let found: usize = DOMAINS.iter().map(|domain| d.search(domain)).sum();
        assert_eq!(found, first.0.len(), "the search finds every visit");
    }
    for (_, url, _, at) in &first.0 {
        assert!(
            !seen_forgotten.contains(url),
            "{url}: a device held it when it forgot its website"
        );
        assert!(
            !forgotten_ranges.iter().any(|(a, b)| a <= at && at <= b),
            "{url} at {at} lies in a forgotten range"
        );
        if !right_clocks {
            // A device's clock off: the steps' order is not the clock's (a visit stamped ahead
            // of a forgetting it did not see stays, as it would with two devices offline).
            continue;
        }
        // A visit's URL ends with the step that recorded it: no forgetting of its website may
        // come after that step (the sync clock orders them as the steps ran).
        let (site, step) = url
            .strip_prefix("https://")
            .and_then(|u| u.split_once('/'))
            .map(|(s, n)| (s, n.parse::<usize>().unwrap()))
            .unwrap();
        assert!(
            !forgotten_sites.iter().any(|(s, m)| *s == site && *m > step),
            "{url}: its website was forgotten after it was recorded"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(8),
        ..ProptestConfig::default()
    })]

    #[test]
    fn three_devices_converge_and_every_deletion_wins(
        steps in proptest::collection::vec(step(), 1..40),
        skews in proptest::array::uniform3(skew()),
    ) {
        with_hub(|hub| run(hub, &steps, skews));
    }
}

/// A hub for the next case: a new one every few cases, as the hub lets one address create only
/// `ACCOUNTS_PER_ADDRESS_PER_MINUTE` accounts a minute.
fn with_hub(f: impl FnOnce(&TestHub)) {
    static HUB: std::sync::Mutex<Option<(TestHub, u32)>> = std::sync::Mutex::new(None);
    let mut slot = HUB.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let limit = sitetrail_sync_wire::limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE;
    if slot.as_ref().is_none_or(|(_, used)| *used >= limit) {
        *slot = None;
        *slot = Some((TestHub::start(), 0));
    }
    let (hub, used) = slot.as_mut().unwrap();
    *used += 1;
    f(hub);
}
