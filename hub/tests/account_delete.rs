//! Deleting an account: by its holder (`DELETE /v1/account`) and by the person running the hub
//! (`sitetrail-hub accounts delete`). Afterwards a dump of the database holds no row of it, in
//! any form its ids, login hash, tokens or payloads take there; the other accounts are intact.
//! And the operator's view of the accounts (`sitetrail-hub accounts list|show`).

use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use crate::support::{record, records, run_hub, setup, token, Account, Api, Setup};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What an account left in the database, in every form a dump could write it: the forms its
/// schema uses (uuid columns as hyphenated text, bytea as hex) must all be found before a delete
/// (so the check can see each kind of row), and no form at all after it.
struct Traces {
    forms: Vec<(String, String)>,
    /// How many of `forms` the schema uses (a uuid's hex without hyphens is not one of them).
    used: usize,
}

impl Traces {
    fn of(account: &Account) -> Traces {
        let mut t = Traces {
            forms: vec![],
            used: 0,
        };
        t.id("account id", account.id);
        let hash: [u8; 32] = sha2_of(account.login.as_bytes());
        t.bytes("login hash", &hash);
        t
    }

    /// A uuid as PostgreSQL's text (hyphenated) and as bytes (hex, as bytea is dumped).
    fn id(&mut self, what: &str, id: Uuid) {
        self.forms.push((what.into(), id.hyphenated().to_string()));
        self.used += 1;
        self.forms
            .push((format!("{what} (hex)"), id.simple().to_string()));
    }

    fn bytes(&mut self, what: &str, bytes: &[u8]) {
        self.forms.push((what.into(), hex(bytes)));
        self.used += 1;
    }

    /// The forms found in `dump`.
    fn found_in(&self, dump: &str) -> Vec<&str> {
        let dump = dump.to_lowercase();
        self.forms
            .iter()
            .filter(|(_, form)| dump.contains(form.as_str()))
            .map(|(what, _)| what.as_str())
            .collect()
    }
}

fn sha2_of(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// An account with two devices (one of them left), records of both, a claim held and a claim
/// done: every kind of row an account has. Returns its traces.
async fn busy_account(api: &Api) -> (Account, Uuid, Traces) {
    let (account, device) = api.account_with_device().await;
    let mut traces = Traces::of(&account);
    traces.id("device", device);
    let gone = Uuid::new_v4();
    api.register(&account, gone).await.expect(200);
    traces.id("left device", gone);
    let mut pushed = records(device, "ops", 1, 5, 300);
    pushed.push(record(gone, "ops", 1, 200));
    for r in &pushed {
        traces.id("record id", r.record_id);
        // A slice from the middle of the payload: as long as a hash, as unlikely by chance.
        traces.bytes("payload", &r.payload.0[100..132]);
    }
    assert!(api.push(&account, &pushed).await.all_acknowledged());
    api.leave(&account, gone).await.expect(204);
    let (held, done) = (token(), token());
    traces.bytes("held token", &hex_to_bytes(&held));
    traces.bytes("done token", &hex_to_bytes(&done));
    let claimed = api
        .claim(&account, device, 60_000, &[(held, false), (done.clone(), false)])
        .await;
    let claim_id = claimed.expect(200)["claims"][1]["claim_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let settled = api
        .settle(&account, device, "complete", &[(done, claim_id.clone())])
        .await;
    assert_eq!(settled.expect(200)["settled"], 1);
    traces.id("claim id", claim_id.parse().unwrap());
    (account, device, traces)
}

fn hex_to_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn dump(s: &Setup) -> String {
    s.pg.dump_data(&s.db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_deletes_the_account_and_no_row_of_it_stays() {
    let s = setup("delete_holder");
    let (account, device, traces) = busy_account(&s.api).await;
    let (other, other_device, other_traces) = busy_account(&s.api).await;
    let before = dump(&s);
    // The check can see each kind of row: before the delete, every form is in the dump.
    assert_eq!(
        traces.found_in(&before).len(),
        traces.used,
        "every trace is in the dump before: {:?}",
        traces.forms
    );

    // A device's header is not needed, and a wrong login deletes nothing.
    let thief = Account {
        login: Account::random().login,
        ..account.clone()
    };
    s.api
        .send(Method::DELETE, "/v1/account", Some(&thief), None, None)
        .await
        .expect(401);
    s.api
        .send(Method::DELETE, "/v1/account", None, None, None)
        .await
        .expect(401);
    assert_eq!(traces.found_in(&dump(&s)).len(), traces.used);

    s.api
        .send(Method::DELETE, "/v1/account", Some(&account), Some(device), None)
        .await
        .expect(204);
    let after = dump(&s);
    assert_eq!(
        traces.found_in(&after),
        Vec::<&str>::new(),
        "nothing of the account is left"
    );
    assert_eq!(
        other_traces.found_in(&after).len(),
        other_traces.used,
        "the other account is whole"
    );
    for table in ["account", "device", "series_head", "record", "claim_job"] {
        assert_eq!(
            s.pg.psql(
                &s.db,
                &format!("SELECT count(*) FROM {table} WHERE account_id = '{}'", account.id)
            ),
            "0",
            "{table}"
        );
    }

    // Its login opens nothing any more, on every route; a second delete is the same 401.
    s.api.index(&account).await.expect(401);
    assert_eq!(
        s.api
            .push(&account, &records(device, "ops", 6, 6, 10))
            .await
            .status,
        401
    );
    s.api
        .send(Method::DELETE, "/v1/account", Some(&account), None, None)
        .await
        .expect(401);
    // The other account still syncs.
    let page = s.api.page(&other, other_device, "ops", 0, None).await;
    assert_eq!(page.expect(200)["records"].as_array().unwrap().len(), 5);
    // The id is free again (the same recovery key can found it anew).
    s.api.create_account(&account).await.expect(201);
    s.api.index(&account).await.expect(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_wakes_the_accounts_long_polls() {
    let s = setup("delete_wait");
    let (account, device) = s.api.account_with_device().await;
    let waiting = {
        let api = s.api.clone();
        let account = account.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let answer = api
                .send(
                    Method::GET,
                    "/v1/index/wait?series=ops&seen=0&wait_ms=20000",
                    Some(&account),
                    Some(device),
                    None,
                )
                .await;
            (answer.status, started.elapsed())
        })
    };
    s.hub.wait_for_waits(1).await;
    s.api
        .send(Method::DELETE, "/v1/account", Some(&account), None, None)
        .await
        .expect(204);
    let (status, took) = waiting.await.unwrap();
    assert_eq!(status, 401);
    assert!(
        took.as_secs() < 10,
        "the wait ended with the delete, not its timeout: {took:?}"
    );
}

fn hub(s: &Setup, args: &[&str]) -> (i32, String, String) {
    let url = s.pg.url(&s.db);
    run_hub(args, &[("SITETRAIL_HUB_DATABASE_URL", url.as_str())])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_lists_shows_and_deletes_accounts() {
    let s = setup("delete_operator");
    let (account, device, traces) = busy_account(&s.api).await;
    let (other, _, other_traces) = busy_account(&s.api).await;
    let idle = Account::random();
    s.api.create_account(&idle).await.expect(201);

    let (code, out, err) = hub(&s, &["accounts", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let rows = listed["accounts"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{out}");
    let row = rows
        .iter()
        .find(|r| r["account_id"] == account.id.to_string())
        .unwrap();
    assert_eq!(row["devices"], 2);
    assert_eq!(row["active_devices"], 1);
    assert_eq!(row["records"], 6);
    assert_eq!(row["bytes"], 5 * 300 + 200);
    assert_eq!(row["claim_jobs"], 2);
    assert!(row["created_at_ms"].as_i64().unwrap() > 1_700_000_000_000);
    assert!(row["last_seen_at_ms"].as_i64().is_some());
    let idle_row = rows
        .iter()
        .find(|r| r["account_id"] == idle.id.to_string())
        .unwrap();
    assert_eq!(idle_row["records"], 0);
    assert_eq!(idle_row["last_seen_at_ms"], Value::Null);

    let (code, table, _) = hub(&s, &["accounts", "list"]);
    assert_eq!(code, 0);
    assert!(table.starts_with("ACCOUNT"), "{table}");
    let line = table
        .lines()
        .find(|l| l.starts_with(&account.id.to_string()))
        .unwrap();
    assert!(
        line.contains(" 1/2 ") && line.contains(" 1.7 KiB ") && line.contains(" UTC"),
        "{line}"
    );
    assert!(
        table.contains("never") && table.ends_with("3 account(s)\n"),
        "{table}"
    );

    let (code, shown, _) = hub(&s, &["accounts", "show", &account.id.to_string()]);
    assert_eq!(code, 0);
    assert!(
        shown.contains("records:   6") && shown.contains("(1700 bytes)"),
        "{shown}"
    );
    let (code, _, err) = hub(&s, &["accounts", "show", &Uuid::new_v4().to_string()]);
    assert_eq!(code, 1);
    assert!(err.contains("there is no account"), "{err}");
    let (code, _, err) = hub(&s, &["accounts", "show", "not-an-id"]);
    assert_eq!(code, 2, "{err}");

    let (code, out, err) = hub(&s, &["accounts", "delete", &account.id.to_string(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let deleted: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(deleted["devices"], 2);
    assert_eq!(deleted["records"], 6);
    assert_eq!(deleted["claim_jobs"], 2);
    let after = dump(&s);
    assert_eq!(traces.found_in(&after), Vec::<&str>::new());
    assert_eq!(other_traces.found_in(&after).len(), other_traces.used);
    // The running hub refuses its login at once.
    s.api.index(&account).await.expect(401);
    assert_eq!(s.api.register(&account, device).await.status, 401);
    s.api.index(&other).await.expect(200);

    let (code, _, err) = hub(&s, &["accounts", "delete", &account.id.to_string()]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing was deleted"), "{err}");
    let (_, out, _) = hub(&s, &["accounts", "list", "--json"]);
    let left: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(left["accounts"].as_array().unwrap().len(), 2);
}

#[test]
fn the_operators_commands_touch_only_a_hub_database_of_their_schema() {
    let pg = crate::support::postgres::shared();
    let empty = pg.create_database("delete_empty");
    let url = pg.url(&empty);
    let (code, _, err) = run_hub(
        &["accounts", "list", "--startup-wait", "0"],
        &[("SITETRAIL_HUB_DATABASE_URL", url.as_str())],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("not a hub's database"), "{err}");
    // Nothing was created: the empty database stays empty.
    assert_eq!(
        pg.psql(
            &empty,
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
        ),
        "0"
    );
}

/// True once `n` hub connections wait for a lock (within 30 s).
async fn hub_connections_wait(watcher: &tokio_postgres::Client, n: i64) -> bool {
    for _ in 0..1500 {
        let waiting: i64 = watcher
            .query_one(
                r#"SELECT count(*) FROM pg_stat_activity
                   WHERE application_name = 'sitetrail-hub' AND wait_event_type = 'Lock'"#,
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting >= n {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_in_flight_during_a_delete_leaves_nothing_behind() {
    let s = setup("delete_race");
    let (account, device) = s.api.account_with_device().await;
    assert!(s
        .api
        .push(&account, &records(device, "ops", 1, 1, 10))
        .await
        .all_acknowledged());
    // The next push is held inside its transaction (its device's row taken, waiting for the
    // series head this test locks).
    let url = s.pg.url(&s.db);
    let holder = crate::support::connect(&url).await;
    let watcher = crate::support::connect(&url).await;
    holder
        .batch_execute("BEGIN; SELECT 1 FROM series_head FOR UPDATE")
        .await
        .unwrap();
    let push = {
        let (api, account) = (s.api.clone(), account.clone());
        tokio::spawn(async move { api.push(&account, &records(device, "ops", 2, 3, 10)).await })
    };
    assert!(
        hub_connections_wait(&watcher, 1).await,
        "the push reached its lock"
    );
    let delete = {
        let (api, account) = (s.api.clone(), account.clone());
        tokio::spawn(async move {
            api.send(Method::DELETE, "/v1/account", Some(&account), None, None)
                .await
        })
    };
    // The delete waits behind the push's transaction: a second hub connection waits for a lock.
    assert!(
        hub_connections_wait(&watcher, 2).await,
        "the delete waits for the push in flight"
    );
    assert!(!delete.is_finished(), "the delete waits for the push in flight");
    holder.batch_execute("ROLLBACK").await.unwrap();
    let pushed = push.await.unwrap();
    assert_eq!(pushed.status, 200, "{:?}", pushed.body);
    assert!(pushed.all_acknowledged());
    delete.await.unwrap().expect(204);
    for table in ["account", "device", "series_head", "record", "claim_job"] {
        assert_eq!(
            s.pg.psql(&s.db, &format!("SELECT count(*) FROM {table}")),
            "0",
            "{table}: the push's records went with the account"
        );
    }
}
