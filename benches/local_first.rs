//! Local-first benchmark (issue 11): prints, in one run,
//! (a) built-in classifications per second with the rules alone and with the open domain table
//!     (alternating rounds, median of the per-round ratio), and with 1,000 user categories on top;
//! (b) the open table's one-time decoding (time, heap);
//! (c) the local pass: new websites given their built-in category per second, through
//!     `LocalFirst::pass` on a real SQLite file (20,000 websites);
//! (d) the review list at 1,000,000 visits over 20,000 websites (median and worst of 10 runs);
//! (e) the remote calls saved on the typical-browsing list: its 188 websites visited, the real
//!     worker draining them against a fake OpenAI-compatible server on 127.0.0.1 that counts the
//!     hosts it is asked about;
//! (f) `sitetrail classify --provider builtin --json` on 50,000 domains, the whole process timed
//!     (`CLI_BENCH_BASELINE=path/to/an/older/sitetrail` measures that build too, alternating).
//!
//! Run: `cargo bench --bench local_first` (`-- --visits N` for another history size in (d)).

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

#[path = "support/args.rs"]
mod args;
#[path = "support/rng.rs"]
mod rng;

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{named_params, TransactionBehavior};
use sitetrail::classify::builtin::{judge, parse_domain_map, Builtin, RuleOptions};
use sitetrail::classify::open_table::{self, OpenTable, TABLE_GZ};
use sitetrail::classify::user_rules::UserCategories;
use sitetrail::ids::{OutboxId, VisitId, WebsiteId};
use sitetrail::review::ReviewQuery;
use sitetrail::worker::LocalFirst;
use sitetrail::{Category, NewVisit, Store, Timestamp};

use rng::Rng;

const TYPICAL: &str = include_str!("data/typical_domains.tsv");
const TEST: &str = include_str!("data/labelled_domains.tsv");
const DEV: &str = include_str!("data/dev_domains.tsv");

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The domains classified in (a): the three hand-labelled lists, a sample of the open table's
/// own domains (hits), and made-up long-tail names with subdomains (misses that go through every
/// rule): about 6,000, the mix a history's distinct websites might have.
fn workload() -> Vec<String> {
    let mut out: Vec<String> = [TYPICAL, TEST, DEV]
        .iter()
        .flat_map(|t| parse_domain_map(t).expect("list"))
        .map(|(d, _)| d.to_owned())
        .collect();
    let table: Vec<&str> = open_table::table().iter().map(|(d, _)| d).collect();
    let mut rng = Rng(0x1f2e_3d4c_5b6a_7988);
    for _ in 0..1_500 {
        out.push(table[rng.below(table.len())].to_owned());
    }
    let words = [
        "blue", "river", "atelier", "kanzlei", "studio", "north", "quick", "maple",
    ];
    for i in 0..3_000 {
        let a = words[rng.below(words.len())];
        let b = words[rng.below(words.len())];
        let sub = if i % 3 == 0 {
            "www."
        } else if i % 3 == 1 {
            "shop."
        } else {
            ""
        };
        out.push(format!("{sub}{a}{b}{i}.example-{}.de", i % 13));
    }
    out
}

fn rate(domains: &[String], user: Option<&UserCategories>, opts: RuleOptions) -> f64 {
    let start = Instant::now();
    for d in domains {
        black_box(judge(black_box(d), user, opts));
    }
    domains.len() as f64 / start.elapsed().as_secs_f64()
}

fn classification_rates() {
    let domains = workload();
    open_table::warm();
    let user = UserCategories::new(
        (0..1_000)
            .map(|i| (format!("mine{i}.example"), Category::ALL[i % Category::ALL.len()]))
            .collect::<HashMap<_, _>>(),
    );
    let rules_only = RuleOptions {
        open_table: false,
        model: false,
        ..RuleOptions::default()
    };
    let before = RuleOptions::WITHOUT_MODEL;
    let shipped = RuleOptions::default();
    sitetrail::classify::model::warm();
    let (mut a, mut b, mut c, mut ratio, mut ratio_user) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut m, mut ratio_model) = (vec![], vec![]);
    for _ in 0..9 {
        let ra = rate(&domains, None, rules_only);
        let rb = rate(&domains, None, before);
        let rm = rate(&domains, None, shipped);
        let rc = rate(&domains, Some(&user), shipped);
        ratio.push(rb / ra);
        ratio_model.push(rm / rb);
        ratio_user.push(rc / rm);
        a.push(ra);
        b.push(rb);
        m.push(rm);
        c.push(rc);
    }
    println!(
        "(a) built-in classifications per second, {} domains, 9 alternating rounds (medians):",
        domains.len()
    );
    println!(
        "    rules alone (as before this issue's table)    {:>10.0} /s",
        median(a)
    );
    println!(
        "    with the open table (before the model)        {:>10.0} /s  = {:.2}x the rules alone",
        median(b),
        median(ratio)
    );
    println!(
        "    with the learned model (shipped)              {:>10.0} /s  = {:.2}x before the model",
        median(m),
        median(ratio_model)
    );
    println!(
        "    with the model and 1,000 user categories      {:>10.0} /s  = {:.2}x without them",
        median(c),
        median(ratio_user)
    );
    // The table's own part: one binary search per name level.
    let table = open_table::table();
    let mut lookups = Vec::new();
    for _ in 0..9 {
        let start = Instant::now();
        let mut n = 0usize;
        for d in &domains {
            let mut rest = d.as_str();
            loop {
                black_box(table.get(black_box(rest)));
                n += 1;
                match rest.split_once('.') {
                    Some((_, p)) if p.contains('.') => rest = p,
                    _ => break,
                }
            }
        }
        lookups.push(n as f64 / start.elapsed().as_secs_f64());
    }
    println!(
        "    open-table lookups alone (each name level)    {:>10.0} /s  = {:.2} µs each",
        median(lookups.clone()),
        1e6 / median(lookups)
    );
}

/// The learned model's one-time cost: decoding its weights and word list, and what they hold.
fn model_decoding() {
    use sitetrail::classify::model::{segment, Model, WEIGHTS_GZ};
    let (mut times, mut heap) = (Vec::new(), 0);
    for _ in 0..5 {
        let t = Instant::now();
        let m = Model::decode_gz(WEIGHTS_GZ).expect("weights");
        let w = segment::WordList::decode(segment::WORDS_GZ).expect("words");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        heap = m.heap_bytes() + w.heap_bytes();
        black_box((m, w));
    }
    println!(
        "(b2) learned model: {:.0} KiB weights + {:.0} KiB word list embedded (gzip); decoded once in {:.1} ms (median of 5) into {:.1} MiB",
        WEIGHTS_GZ.len() as f64 / 1024.0,
        segment::WORDS_GZ.len() as f64 / 1024.0,
        median(times),
        heap as f64 / (1024.0 * 1024.0)
    );
}

/// `sitetrail classify --provider builtin --json` on 50,000 domains (half from the open table,
/// half made-up long-tail names the model and the rules must judge), the whole process timed.
fn cli_throughput() {
    let table: Vec<&str> = open_table::table().iter().map(|(d, _)| d).collect();
    let mut rng = Rng(0x0bad_cafe_f00d_1234);
    let words = [
        "blue",
        "river",
        "casino",
        "kanzlei",
        "recipes",
        "north",
        "stadtwerke",
        "maple",
    ];
    let mut domains: Vec<String> = (0..25_000)
        .map(|_| table[rng.below(table.len())].to_owned())
        .collect();
    for i in 0..25_000 {
        let a = words[rng.below(words.len())];
        let b = words[rng.below(words.len())];
        domains.push(format!("{a}{b}{i}.example-{}.de", i % 13));
    }
    // CLI_BENCH_BASELINE=path/to/an/older/sitetrail measures it too, in alternating rounds, so
    // both are measured under the same load.
    let mut builds = vec![("this build", env!("CARGO_BIN_EXE_sitetrail").to_owned())];
    if let Some(b) = std::env::var("CLI_BENCH_BASELINE").ok().filter(|b| !b.is_empty()) {
        builds.push(("baseline", b));
    }
    let mut rates = vec![Vec::new(); builds.len()];
    for _ in 0..5 {
        for ((_, bin), rates) in builds.iter().zip(&mut rates) {
            let t = Instant::now();
            let out = std::process::Command::new(bin)
                .args(["classify", "--provider", "builtin", "--json"])
                .args(&domains)
                .env("SITETRAIL_SETTINGS", "/nonexistent/sitetrail-bench-settings.json")
                .output()
                .expect("run sitetrail");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            rates.push(domains.len() as f64 / t.elapsed().as_secs_f64());
        }
    }
    let medians: Vec<f64> = rates.into_iter().map(median).collect();
    for ((label, _), rate) in builds.iter().zip(&medians) {
        println!(
            "(f) `sitetrail classify --provider builtin --json`, {} domains in one process (start, decoding and JSON included), {label}: {rate:.0} domains/s (median of 5)",
            domains.len(),
        );
    }
    if let [this, baseline] = medians[..] {
        println!("(f) this build / baseline: {:.2}x", this / baseline);
    }
}

fn table_decoding() {
    let mut times = Vec::new();
    let mut heap = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let table = OpenTable::decode(TABLE_GZ).expect("table");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        heap = table.heap_bytes();
        black_box(table);
    }
    println!(
        "(b) open table: {} domains, {:.0} KiB embedded (gzip); decoded once in {:.1} ms (median of 5) into {:.1} MiB",
        open_table::ROWS,
        TABLE_GZ.len() as f64 / 1024.0,
        median(times),
        heap as f64 / (1024.0 * 1024.0)
    );
}

fn local_pass(dir: &tempfile::TempDir) -> sitetrail::Result<()> {
    let store = Store::open(dir.path().join("local.db"))?;
    let n = 20_000;
    let now = Timestamp::now();
    for i in 0..n {
        store.record_visit(&NewVisit {
            url: &format!("https://site{i}.example-{}.com/", i % 11),
            title: None,
            // A millisecond each: a visit's id tells apart at most 4,096 in one millisecond.
            visited_at: now.minus(Duration::from_millis(i as u64)),
            source: "bench",
            source_visit_id: None,
        })?;
    }
    let local = LocalFirst::new(Arc::new(Builtin));
    open_table::warm();
    let start = Instant::now();
    let mut judged = 0;
    loop {
        let out = local.pass(&store)?;
        if out.judged == 0 {
            break;
        }
        judged += out.judged;
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(judged, n);
    println!(
        "(c) local pass: {n} new websites judged and their jobs completed in {:.2} s = {:.0} websites/s (transactions of 500)",
        secs,
        n as f64 / secs
    );
    Ok(())
}

/// 20,000 websites (a third low, a third medium, a third certain or the user's) and `visits`
/// visits, popular websites visited most, with plain SQL in one transaction.
fn build_history(store: &Store, visits: usize) -> sitetrail::Result<()> {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let now = Timestamp::now();
    let span = Duration::from_secs(2 * 365 * 86_400);
    let start = now.minus(span);
    let mut conn = store.conn()?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let sites = 20_000;
    let mut ids = Vec::with_capacity(sites);
    {
        let mut site = tx.prepare(
            r#"INSERT INTO website (id, domain, category, category_source, category_confidence, classified_at, created_at, version)
               VALUES (:id, :domain, :category, :source, :confidence, :at, :at, 1)"#,
        )?;
        let mut job = tx.prepare(
            r#"INSERT INTO website_category_classification_outbox
                   (id, website_id, status, attempt_count, attempted_at, created_at, version)
               VALUES (:id, :w, 'COMPLETED', 1, :at, :at, 2)"#,
        )?;
        for i in 0..sites {
            let id = WebsiteId::new();
            let (source, confidence) = match i % 6 {
                0 | 1 => ("builtin", "low"),
                2 => ("builtin", "medium"),
                3 => ("ai", "medium"),
                4 => ("builtin", "high"),
                _ => ("user", "high"),
            };
            site.execute(named_params! {
                ":id": id, ":domain": format!("site{i}.example"),
                ":category": Category::ALL[i % Category::ALL.len()].id(),
                ":source": source, ":confidence": confidence, ":at": start,
            })?;
            job.execute(named_params! { ":id": OutboxId::new(), ":w": id, ":at": start })?;
            ids.push(id);
        }
        let mut visit = tx.prepare(
            r#"INSERT INTO visit (id, website_id, url, title, visited_at, source)
               VALUES (:id, :w, :url, NULL, :at, 'bench')"#,
        )?;
        let step = span.as_micros() as i64 / visits as i64;
        for i in 0..visits {
            let spread = 1 + rng.below(sites);
            let w = rng.below(spread);
            let at = Timestamp(start.as_micros() + i as i64 * step + rng.below(1000) as i64);
            visit.execute(named_params! {
                ":id": VisitId::at(at), ":w": ids[w], ":url": format!("https://site{w}.example/{i}"), ":at": at,
            })?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn review(dir: &tempfile::TempDir, visits: usize) -> sitetrail::Result<()> {
    let store = Store::open(dir.path().join("review.db"))?;
    let t = Instant::now();
    build_history(&store, visits)?;
    let built = t.elapsed().as_secs_f64();
    let mut times = Vec::new();
    let mut n = 0;
    for _ in 0..10 {
        let t = Instant::now();
        n = store.review(&ReviewQuery::default())?.len();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "(d) review list ({n} rows of 13,334 candidates) at {visits} visits (built in {built:.1} s): median {:.0} ms, worst {:.0} ms",
        times[times.len() / 2],
        times[times.len() - 1]
    );
    Ok(())
}

fn remote_calls_saved(dir: &tempfile::TempDir) -> sitetrail::Result<()> {
    use wiremock::{matchers::method, Mock, MockServer, Request, ResponseTemplate};
    let store = Store::open(dir.path().join("typical.db"))?;
    let typical = parse_domain_map(TYPICAL).expect("typical list");
    for (d, _) in &typical {
        store.record_visit(&NewVisit {
            url: &format!("https://{d}/"),
            title: None,
            visited_at: Timestamp::now(),
            source: "bench",
            source_visit_id: None,
        })?;
    }
    let rt = tokio::runtime::Runtime::new()?;
    let (requests, hosts) = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(|req: &Request| {
                let body: serde_json::Value = req.body_json().unwrap_or_default();
                let user = body["messages"][1]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let results: Vec<serde_json::Value> = user
                    .lines()
                    .map(|h| serde_json::json!({"domain": h, "category": "other", "confidence": 0.9}))
                    .collect();
                let content = serde_json::json!({ "results": results }).to_string();
                ResponseTemplate::new(200).set_body_json(serde_json::json!({
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}]
                }))
            })
            .mount(&server)
            .await;
        let classifier = Arc::new(sitetrail::classify::openai::OpenAi::new(
            sitetrail::classify::openai::OpenAiConfig {
                base_url: format!("{}/v1", server.uri()),
                model: "bench".into(),
                api_key: None,
                http: sitetrail::classify::http::HttpOptions {
                    connect_timeout: Duration::from_secs(2),
                    total_timeout: Duration::from_secs(10),
                },
            },
        )?);
        let config = sitetrail::worker::WorkerConfig {
            fixed_delay: Duration::ZERO,
            batch_size: 20,
            ..Default::default()
        };
        let (_tx, rx) = tokio::sync::watch::channel(false);
        sitetrail::worker::Worker::new(store.clone(), classifier, config)?
            .run(rx, true)
            .await?;
        let received = server.received_requests().await.unwrap_or_default();
        let hosts: usize = received
            .iter()
            .map(|r| {
                let body: serde_json::Value = r.body_json().unwrap_or_default();
                body["messages"][1]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .count()
            })
            .sum();
        Ok::<_, sitetrail::Error>((received.len(), hosts))
    })?;
    let n = typical.len();
    println!(
        "(e) typical browsing through the real worker: {n} websites, {hosts} sent to the remote provider in {requests} requests of up to 20; {} answered locally = {:.1}% of the remote calls saved",
        n - hosts,
        100.0 * (n - hosts) as f64 / n as f64
    );
    Ok(())
}

fn main() -> sitetrail::Result<()> {
    let visits = args::visits();
    let dir = tempfile::tempdir()?;
    table_decoding();
    model_decoding();
    classification_rates();
    cli_throughput();
    local_pass(&dir)?;
    remote_calls_saved(&dir)?;
    review(&dir, visits)?;
    Ok(())
}
