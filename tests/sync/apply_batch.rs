//! Applying many calls of other devices' operations in one transaction (`sync::apply::Batch`, as
//! the pull does): what the batch remembers (the website of each domain met) never outlives a
//! forgetting applied in it, and the visits' search index rows all go in before the commit.

use sitetrail::ids::VisitId;
use sitetrail::sync::apply::Batch;
use sitetrail::sync_log::ops::{Op, Stamped};
use sitetrail::Timestamp;

/// The clock of a change made at `at` (milliseconds in the high bits, as the sync clock stamps).
fn hlc(at: Timestamp) -> i64 {
    (at.as_micros() / 1000) << 16
}

fn visit(n: u32, at: Timestamp) -> Stamped {
    Stamped {
        hlc: hlc(at),
        op: Op::Visit {
            id: VisitId::at(at),
            url: format!("https://a.example/{n}"),
            title: Some(format!("page {n}")),
            at: at.as_micros(),
            source: "extension".into(),
            active_ms: None,
            estimated_ms: None,
        },
    }
}

fn website_of(store: &sitetrail::Store, url: &str) -> Option<String> {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT hex(w.id) FROM visit v JOIN website w ON w.id = v.website_id WHERE v.url = ?1",
                [url],
                |r| r.get(0),
            )
            .ok())
        })
        .unwrap()
}

#[test]
fn a_batch_forgets_the_websites_a_forgetting_in_it_removed() {
    let db = crate::support::TempDb::new();
    let store = db.open();
    let device = uuid::Uuid::now_v7();
    let now = Timestamp::now();
    let (t1, t2, t3) = (
        now.minus(std::time::Duration::from_secs(300)),
        now.minus(std::time::Duration::from_secs(200)),
        now.minus(std::time::Duration::from_secs(100)),
    );
    let forget = Stamped {
        hlc: hlc(t2),
        op: Op::ForgetWebsite {
            domain: "a.example".into(),
            at: t2.as_micros(),
        },
    };
    let mut first_website = None;
    store
        .write(None, |tx| {
            let mut batch = Batch::begin(tx)?;
            batch.apply(tx, device, &[visit(1, t1)], store.now())?;
            first_website = Some(tx.query_row(
                "SELECT hex(website_id) FROM visit WHERE url = 'https://a.example/1'",
                [],
                |r| r.get::<_, String>(0),
            )?);
            batch.apply(tx, device, std::slice::from_ref(&forget), store.now())?;
            // The website the batch met first is gone: this visit gets a website that exists.
            batch.apply(tx, device, &[visit(3, t3)], store.now())?;
            batch.finish(tx)
        })
        .unwrap();
    assert_eq!(website_of(&store, "https://a.example/1"), None, "forgotten");
    let third = website_of(&store, "https://a.example/3").expect("the later visit, with its website");
    assert_ne!(Some(third), first_website, "not the forgotten website's id");
    let orphans: i64 = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM visit WHERE website_id NOT IN (SELECT id FROM website)",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(orphans, 0);
    // Its search index row went in with the batch.
    let query = sitetrail::history::HistoryQuery {
        search: Some("page".to_owned()),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(store.history(&query).unwrap().rows.len(), 1);
}
