//! Classification claims: exactly one device is granted a token at a time, a lease that runs
//! out goes to the next device, `again` re-grants a done job, and settling is guarded by the
//! claim id.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use uuid::Uuid;

use crate::support::{setup, token, Account, Api};

fn states(answer: &Value) -> HashMap<String, Value> {
    answer["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["token"].as_str().unwrap().to_owned(), c.clone()))
        .collect()
}

/// Two devices ask for the same fresh tokens at the same moment, round after round: each token
/// is granted to exactly one of them and held for the other.
pub async fn race(api_a: &Api, api_b: &Api, account: &Account, a: Uuid, b: Uuid, rounds: usize) {
    for round in 0..rounds {
        let tokens: Vec<(String, bool)> = (0..30).map(|_| (token(), false)).collect();
        let mut reversed = tokens.clone();
        reversed.reverse();
        let (first, second) = tokio::join!(
            api_a.claim(account, a, 60_000, &tokens),
            api_b.claim(account, b, 60_000, &reversed)
        );
        let (first, second) = (states(first.expect(200)), states(second.expect(200)));
        for (t, _) in &tokens {
            let pair = [
                first[t]["state"].as_str().unwrap(),
                second[t]["state"].as_str().unwrap(),
            ];
            assert!(
                pair == ["granted", "held"] || pair == ["held", "granted"],
                "round {round}: token answered {pair:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_devices_asking_at_once_get_each_token_once() {
    let s = setup("claimrace");
    let (account, a) = s.api.account_with_device().await;
    let b = Uuid::new_v4();
    s.api.register(&account, b).await.expect(200);
    race(&s.api, &s.api.clone(), &account, a, b, 15).await;
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*), max(attempts) FROM claim_job"),
        "450|1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_runs_out_goes_to_the_next_device() {
    let s = setup("lease");
    let (account, a) = s.api.account_with_device().await;
    let b = Uuid::new_v4();
    s.api.register(&account, b).await.expect(200);
    let t = token();
    let one = vec![(t.clone(), false)];

    let granted = s.api.claim(&account, a, 1_000, &one).await;
    let first = granted.expect(200)["claims"][0].clone();
    assert_eq!(
        (first["state"].as_str(), first["attempts"].as_u64()),
        (Some("granted"), Some(1))
    );
    let held = s.api.claim(&account, b, 1_000, &one).await;
    let held = &held.expect(200)["claims"][0];
    assert_eq!(held["state"], "held");
    assert_eq!(
        held["retry_after_ms"], 1_000,
        "at least a second, however little is left"
    );

    // A goes silent; once its lease has run out, B is granted it, as attempt 2.
    let taken = loop {
        let answer = s.api.claim(&account, b, 60_000, &one).await;
        let c = answer.expect(200)["claims"][0].clone();
        if c["state"] == "granted" {
            break c;
        }
        assert_eq!(c["state"], "held");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(taken["attempts"], 2);
    assert_ne!(taken["claim_id"], first["claim_id"]);
    // A wakes up: its claim is stale, completing or releasing it changes nothing.
    let a_claim = vec![(t.clone(), first["claim_id"].as_str().unwrap().to_owned())];
    let stale = s.api.settle(&account, a, "complete", &a_claim).await;
    assert_eq!(
        (
            stale.expect(200)["settled"].as_u64(),
            stale.body["stale"].as_u64()
        ),
        (Some(0), Some(1))
    );
    s.api.settle(&account, a, "release", &a_claim).await.expect(200);
    let a_asks = s.api.claim(&account, a, 60_000, &one).await;
    let a_asks = &a_asks.expect(200)["claims"][0];
    assert_eq!(a_asks["state"], "held");
    assert!(
        a_asks["retry_after_ms"].as_u64().unwrap() > 50_000,
        "B's lease: {a_asks}"
    );

    // B answers: done for everyone, until someone asks again.
    let b_claim = vec![(t.clone(), taken["claim_id"].as_str().unwrap().to_owned())];
    let done = s.api.settle(&account, b, "complete", &b_claim).await;
    assert_eq!(
        (done.expect(200)["settled"].as_u64(), done.body["stale"].as_u64()),
        (Some(1), Some(0))
    );
    let twice = s.api.settle(&account, b, "complete", &b_claim).await;
    assert_eq!(twice.expect(200)["stale"], 1, "settled before");
    for device in [a, b] {
        let answer = s.api.claim(&account, device, 60_000, &one).await;
        let c = &answer.expect(200)["claims"][0];
        assert_eq!(c["state"], "done");
        assert!(c["done_at_ms"].as_i64().unwrap() > 1_700_000_000_000);
    }
    let again = s.api.claim(&account, a, 60_000, &[(t.clone(), true)]).await;
    let again = &again.expect(200)["claims"][0];
    assert_eq!(
        (again["state"].as_str(), again["attempts"].as_u64()),
        (Some("granted"), Some(3))
    );
    let b_again = s.api.claim(&account, b, 60_000, &[(t, true)]).await;
    assert_eq!(
        b_again.expect(200)["claims"][0]["state"],
        "held",
        "again does not take a live claim"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_claim_keeps_its_id_and_a_released_one_goes_to_another() {
    let s = setup("release");
    let (account, a) = s.api.account_with_device().await;
    let b = Uuid::new_v4();
    s.api.register(&account, b).await.expect(200);
    let tokens: Vec<(String, bool)> = (0..3).map(|_| (token(), false)).collect();
    // The same token twice in one request gets one answer.
    let mut asked = tokens.clone();
    asked.push(tokens[0].clone());
    let first = s.api.claim(&account, a, 5_000, &asked).await;
    let first = first.expect(200)["claims"].as_array().unwrap().clone();
    assert_eq!(first.len(), 4);
    assert_eq!(first[0], first[3]);
    let renewed = s.api.claim(&account, a, 60_000, &tokens).await;
    let renewed = renewed.expect(200)["claims"].as_array().unwrap().clone();
    for (before, after) in first.iter().zip(&renewed) {
        assert_eq!(
            (&before["claim_id"], before["attempts"].as_u64()),
            (&after["claim_id"], Some(1)),
            "renewed, not re-granted"
        );
    }
    let settle: Vec<(String, String)> = renewed
        .iter()
        .map(|c| {
            (
                c["token"].as_str().unwrap().to_owned(),
                c["claim_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // B cannot release A's claims with A's ids: the claim is the device's.
    let not_b = s.api.settle(&account, b, "release", &settle).await;
    assert_eq!(not_b.expect(200)["stale"], 3);
    let released = s.api.settle(&account, a, "release", &settle).await;
    assert_eq!(released.expect(200)["settled"], 3);
    let b_asks = s.api.claim(&account, b, 60_000, &tokens).await;
    for c in b_asks.expect(200)["claims"].as_array().unwrap() {
        assert_eq!(
            (c["state"].as_str(), c["attempts"].as_u64()),
            (Some("granted"), Some(2))
        );
    }
    let late = s.api.settle(&account, a, "complete", &settle).await;
    assert_eq!(late.expect(200)["stale"], 3);
    assert_eq!(
        s.pg.psql(
            &s.db,
            "SELECT count(*) FROM claim_job WHERE state = 'claimed' AND device_id IS NOT NULL"
        ),
        "3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_lease_ms_shortens_the_lease_a_device_asked_for() {
    let pg = crate::support::postgres::shared();
    let db = pg.create_database("lease_cap");
    let hub = crate::support::Hub::start_with(&pg.url(&db), &["--max-lease-ms", "300"], &[]);
    let api = Api::new(&hub.url);
    let (account, a) = api.account_with_device().await;
    let b = Uuid::new_v4();
    api.register(&account, b).await.expect(200);
    let one = vec![(token(), false)];

    // A asks for an hour; the hub grants 300 ms, which is all it holds the token for.
    let asked = std::time::Instant::now();
    let granted = api.claim(&account, a, 3_600_000, &one).await;
    assert_eq!(granted.expect(200)["claims"][0]["state"], "granted");
    let held = api.claim(&account, b, 3_600_000, &one).await;
    let held = &held.expect(200)["claims"][0];
    assert_eq!(held["state"], "held", "{held}");
    assert_eq!(
        held["retry_after_ms"], 1_000,
        "what is left, at least a second: {held}"
    );
    let taken = loop {
        let answer = api.claim(&account, b, 3_600_000, &one).await;
        let c = answer.expect(200)["claims"][0].clone();
        if c["state"] == "granted" {
            break c;
        }
        assert!(
            asked.elapsed() < Duration::from_secs(30),
            "A's lease was not cut: {c}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(taken["attempts"], 2);
    assert!(
        asked.elapsed() >= Duration::from_millis(250),
        "{:?}",
        asked.elapsed()
    );
}
