//! One AI call per website for all of a person's devices: the workers of two devices, each with
//! the hub's claims as its gate and syncing in the background, against one fake provider on
//! 127.0.0.1; and a claim whose device died, taken by another after its lease.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wiremock::MockServer;

use sitetrail::sync::background::{self, Pace};
use sitetrail::sync::claims::HubClaims;
use sitetrail::worker::{ClaimGate, GateDecision, Worker};

use crate::support::fake_ai::{fast_config, hosts_asked, mount_openai_ok, openai};
use crate::support::sync::{Device, TestHub};

const DOMAINS: [&str; 6] = [
    "kwertyzop.net",
    "blorvistan.org",
    "quendral.info",
    "zupratix.io",
    "marlowquist.biz",
    "tenebrask.co",
];

fn sources(d: &Device) -> Vec<(String, Option<String>)> {
    d.websites().into_iter().map(|w| (w.0, w.2)).collect()
}

#[test]
fn two_devices_ask_the_provider_about_each_website_once_in_all() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    for (i, d) in DOMAINS.iter().enumerate() {
        let at = i64::try_from(i).unwrap();
        a.visit_at(&format!("https://{d}/"), "", at);
        b.visit_at(&format!("https://{d}/x"), "", 100 + at);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        mount_openai_ok(&server).await;
        server
    });
    let base = format!("{}/v1", server.uri());
    let pace = Pace {
        interval: Duration::from_millis(200),
        debounce: Duration::from_millis(20),
        max_backoff: Duration::from_secs(1),
        long_poll: None,
    };
    rt.block_on(async {
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        let mut workers = Vec::new();
        let mut syncers = Vec::new();
        for d in [&a, &b] {
            let wake = Arc::new(tokio::sync::Notify::new());
            let claims = HubClaims::new(
                d.store.clone(),
                d.key_dir.clone(),
                Duration::from_secs(30),
                wake.clone(),
            );
            let worker = Worker::new(d.store.clone(), openai(&base), fast_config(2))
                .unwrap()
                .with_gate(Arc::new(claims));
            workers.push(tokio::spawn(worker.run(stop.clone(), true)));
            syncers.push(tokio::spawn(background::run(
                d.store.clone(),
                d.key_dir.clone(),
                pace,
                wake,
                stop.clone(),
                |_| {},
            )));
        }
        for w in workers {
            tokio::time::timeout(Duration::from_secs(90), w)
                .await
                .expect("both workers finish: every job settled")
                .unwrap()
                .unwrap();
        }
        let _ = stop_tx.send(true);
        for s in syncers {
            s.await.unwrap();
        }
    });
    let asked = rt.block_on(hosts_asked(&server));
    let mut expected: Vec<String> = DOMAINS.iter().map(|d| (*d).to_owned()).collect();
    expected.sort();
    assert_eq!(
        asked, expected,
        "each website asked about once, by one device or the other"
    );
    for d in [&a, &b] {
        for (domain, source) in sources(d) {
            assert_eq!(
                source.as_deref(),
                Some("ai"),
                "{domain}: the AI's answer on both devices"
            );
        }
        assert_eq!(
            crate::support::fake_ai::count_status(&d.store, "COMPLETED"),
            DOMAINS.len()
        );
    }
}

#[test]
fn a_claim_whose_device_died_is_taken_by_another_after_its_lease() {
    // The devices ask for a second's lease (the shortest they may); the hub grants a fifth of one
    // (`--max-lease-ms`), so the test waits that out.
    let hub = TestHub::with_max_lease(Duration::from_millis(200));
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let gate = |d: &Device| {
        HubClaims::new(
            d.store.clone(),
            d.key_dir.clone(),
            Duration::from_millis(1_000),
            Arc::new(tokio::sync::Notify::new()),
        )
    };
    let (ga, gb) = (gate(&a), gate(&b));
    let domains = vec!["kwertyzop.net".to_owned()];
    rt.block_on(async {
        let claimed = Instant::now();
        assert_eq!(
            ga.decide(&domains).await,
            vec![GateDecision::Ask],
            "the first device gets the claim"
        );
        // A dies mid-call: it never settles. B waits while A's lease lives...
        assert!(
            matches!(gb.decide(&domains).await[0], GateDecision::Wait(_)),
            "B must wait for A's live claim"
        );
        // ...and asks once it ran out: not before the lease's 200 ms, not long after.
        let deadline = claimed + Duration::from_secs(20);
        while gb.decide(&domains).await != vec![GateDecision::Ask] {
            assert!(Instant::now() < deadline, "A's lease never ran out");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let waited = claimed.elapsed();
        assert!(
            waited >= Duration::from_millis(180),
            "B asked during A's lease: {waited:?}"
        );
        gb.settle(&domains, &[]).await;
        // Done: the next device to ask waits for the answer's record instead of asking.
        assert!(matches!(ga.decide(&domains).await[0], GateDecision::Wait(_)));
    });
    // A device that is not linked, or whose hub is gone, asks on its own: offline costs nothing.
    drop(hub);
    let lone = Device::new();
    let gl = gate(&lone);
    rt.block_on(async {
        assert_eq!(gb.decide(&domains).await, vec![GateDecision::Ask]);
        assert_eq!(gl.decide(&domains).await, vec![GateDecision::Ask]);
    });
}
