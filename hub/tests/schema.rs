//! The hub's database: migrated once by any number of processes starting at once, a foreign or
//! newer database refused untouched, and, after a sync, nothing in it but what docs/SYNC.md
//! says the hub stores.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::support::{b64, postgres, random_bytes, run_hub, setup, token, Account};

#[test]
fn hubs_starting_at_once_apply_each_migration_once() {
    let pg = postgres::shared();
    let db = pg.create_database("concurrent");
    let url = pg.url(&db);
    let runs: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(crate::support::HUB)
                .args(["migrate", "--database-url", &url, "--startup-wait", "0"])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let latest = sitetrail_hub::migrate::latest_version();
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*), count(DISTINCT version), max(version) FROM sitetrail_hub_migrations"
        ),
        format!("{latest}|{latest}|{latest}")
    );
}

#[test]
fn a_database_that_is_not_the_hubs_is_refused_untouched() {
    let pg = postgres::shared();
    let db = pg.create_database("foreign");
    pg.psql(
        &db,
        "CREATE TABLE invoices (id int PRIMARY KEY, total numeric); INSERT INTO invoices VALUES (1, 9.5)",
    );
    let dump = || {
        // pg_dump writes a random `\restrict` key into every dump: leave it out.
        String::from_utf8(pg.dump(&db))
            .unwrap()
            .lines()
            .filter(|l| !l.contains("restrict "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let before = dump();
    let url = pg.url(&db);
    for args in [
        vec!["migrate", "--database-url", &url],
        vec!["serve", "--database-url", &url, "--listen", "127.0.0.1:0"],
    ] {
        let (code, _, stderr) = run_hub(&args, &[]);
        assert_eq!(code, 3, "{args:?}: {stderr}");
        assert!(
            stderr.contains("not the hub's") && stderr.contains("invoices"),
            "{stderr}"
        );
    }
    assert!(dump() == before, "nothing was changed");
}

#[test]
fn a_schema_newer_than_the_hub_is_refused() {
    let pg = postgres::shared();
    let db = pg.create_database("newer");
    let url = pg.url(&db);
    assert_eq!(run_hub(&["migrate", "--database-url", &url], &[]).0, 0);
    pg.psql(
        &db,
        "INSERT INTO sitetrail_hub_migrations (version, name) VALUES (999, 'from_the_future')",
    );
    for args in [
        vec!["migrate", "--database-url", &url],
        vec!["serve", "--database-url", &url, "--listen", "127.0.0.1:0"],
    ] {
        let (code, _, stderr) = run_hub(&args, &[]);
        assert_eq!(code, 4, "{stderr}");
        assert!(stderr.contains("newer") && stderr.contains("999"), "{stderr}");
    }
}

#[test]
fn an_unreachable_database_is_exit_5_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://hub:hunter2-secret@127.0.0.1:{port}/hub");
    let (code, stdout, stderr) = run_hub(
        &["serve", "--startup-wait", "0"],
        &[("SITETRAIL_HUB_DATABASE_URL", url.as_str())],
    );
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains("cannot reach PostgreSQL") && stderr.contains(&port.to_string()),
        "{stderr}"
    );
    assert!(
        !stderr.contains("hunter2") && !stdout.contains("hunter2"),
        "{stderr}"
    );
    let (code, _, stderr) = run_hub(&["migrate", "--database-url", "not a url at all ::"], &[]);
    assert_eq!(code, 2, "{stderr}");
}

/// A toy cipher for the test: the hub cannot tell it from the real one (it never opens a
/// payload); what matters is that the plaintext is nowhere in what the hub stores.
fn seal(plain: &[u8], key: &[u8]) -> Vec<u8> {
    let mut sealed = random_bytes(24);
    sealed.extend(plain.iter().zip(key.iter().cycle()).map(|(p, k)| p ^ k));
    sealed
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dump_after_a_sync_holds_only_what_the_hub_stores() {
    let s = setup("dump");
    let (account, laptop) = s.api.account_with_device().await;
    let desktop = Uuid::new_v4();
    s.api.register(&account, desktop).await.expect(200);
    let markers = [
        "https://bank.example/statement?id=4242",
        "Salary review, private",
        "bank.example",
        "finance",
        "Laptop of Ana",
    ];
    let key = random_bytes(4096);
    let mut pushed = Vec::new();
    for (device, n) in [(laptop, 12u64), (desktop, 8)] {
        let mut batch = Vec::new();
        for idx in 1..=n {
            let plain = serde_json::json!({"url": markers[0], "title": markers[1], "domain": markers[2], "category": markers[3], "device": markers[4], "n": idx});
            let mut r = crate::support::record(device, "visits", idx, 1);
            r.payload.0 = seal(&serde_json::to_vec(&plain).unwrap(), &key);
            batch.push(r);
        }
        s.api.push(&account, &batch).await.expect(200);
        pushed.extend(batch);
    }
    let tokens: Vec<(String, bool)> = (0..5).map(|_| (token(), false)).collect();
    s.api.claim(&account, laptop, 60_000, &tokens).await.expect(200);
    s.api.create_account(&Account::random()).await.expect(201);

    let dump = String::from_utf8(s.pg.dump(&s.db)).unwrap();
    for marker in markers {
        for form in [marker.to_owned(), hex(marker.as_bytes()), b64(marker.as_bytes())] {
            assert!(!dump.contains(&form), "{form:?} is in the dump");
        }
    }
    for form in [
        account.login.to_base64url(),
        hex(account.login.as_bytes()),
        b64(account.login.as_bytes()),
    ] {
        assert!(!dump.contains(&form), "the login is in the dump");
    }
    // The dump does hold the records (so the test would see them): as the bytes pushed.
    for r in &pushed {
        assert!(
            dump.contains(&hex(&r.payload.0)),
            "a payload is missing from the dump"
        );
    }

    // And the schema holds nothing but docs/SYNC.md's list: routing, sizes, times, tokens.
    let columns = s.pg.psql(
        &s.db,
        "SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1",
    );
    let mut by_table: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in columns.lines() {
        let (table, column) = line.split_once('.').unwrap();
        by_table
            .entry(table.to_owned())
            .or_default()
            .insert(column.to_owned());
    }
    let expected: BTreeMap<String, BTreeSet<String>> = [
        (
            "account",
            &[
                "account_id",
                "login_sha256",
                "created_at",
                "bytes_stored",
                "records_stored",
                "claim_jobs",
            ][..],
        ),
        ("account_creation", &["address", "at"]),
        (
            "claim_job",
            &[
                "account_id",
                "token",
                "state",
                "claim_id",
                "device_id",
                "lease_until",
                "attempts",
                "done_at",
                "updated_at",
            ],
        ),
        (
            "device",
            &["account_id", "device_id", "created_at", "last_seen_at", "left_at"],
        ),
        (
            "record",
            &[
                "account_id",
                "device_id",
                "series",
                "idx",
                "record_id",
                "payload",
                "received_at",
            ],
        ),
        ("series_head", &["account_id", "device_id", "series", "last_idx"]),
        ("sitetrail_hub_migrations", &["version", "name", "applied_at"]),
    ]
    .into_iter()
    .map(|(t, cs)| (t.to_owned(), cs.iter().map(|c| (*c).to_owned()).collect()))
    .collect();
    assert_eq!(by_table, expected);
}

#[test]
fn hot_queries_are_served_by_primary_keys() {
    let pg = postgres::shared();
    let db = pg.create_database("plans");
    assert_eq!(run_hub(&["migrate", "--database-url", &pg.url(&db)], &[]).0, 0);
    // 50 accounts, each a device with two series of 200 records and 200 claim jobs.
    pg.psql(
        &db,
        r"INSERT INTO account SELECT md5('a' || a)::uuid, sha256(a::text::bytea) FROM generate_series(1, 50) a;
          INSERT INTO device (account_id, device_id) SELECT md5('a' || a)::uuid, md5('d' || a)::uuid FROM generate_series(1, 50) a;
          INSERT INTO series_head SELECT md5('a' || a)::uuid, md5('d' || a)::uuid, s, 200
            FROM generate_series(1, 50) a, unnest(ARRAY['visits', 'state']) s;
          INSERT INTO record (account_id, device_id, series, idx, record_id, payload)
            SELECT md5('a' || a)::uuid, md5('d' || a)::uuid, s, i, gen_random_uuid(), '\x00'
            FROM generate_series(1, 50) a, unnest(ARRAY['visits', 'state']) s, generate_series(1, 200) i;
          INSERT INTO claim_job (account_id, token)
            SELECT md5('a' || a)::uuid, sha256((a * 1000 + t)::text::bytea) FROM generate_series(1, 50) a, generate_series(1, 200) t;
          ANALYZE",
    );
    let (account, device) = ("md5('a7')::uuid", "md5('d7')::uuid");
    let plans = [
        (
            "record",
            sitetrail_hub::api::records::PAGE_QUERY,
            format!("{account}, {device}, 'visits', 150, 51, 8388608"),
        ),
        (
            "claim_job",
            sitetrail_hub::api::claims::LOCK_JOBS,
            format!("{account}, ARRAY[sha256('7005'::bytea), sha256('7006'::bytea)]"),
        ),
        (
            "record",
            sitetrail_hub::api::push::STORED_IDS,
            format!("{account}, ARRAY[{device}, {device}], ARRAY['visits', 'state'], ARRAY[3, 4]::int8[]"),
        ),
    ];
    for (table, sql, args) in plans {
        let plan = pg.psql(&db, &format!("PREPARE q AS {sql}; EXPLAIN EXECUTE q({args})"));
        assert!(
            plan.contains(&format!("Index Scan using {table}_pkey")),
            "{sql}\n{plan}"
        );
        assert!(!plan.contains("Seq Scan"), "{sql}\n{plan}");
    }
}
