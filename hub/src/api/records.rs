//! Pulling: `GET /v1/index` (the last index of every series of the account) and
//! `GET /v1/records` (a page of one series after an index), and the long-poll `GET /v1/index/wait`
//! (the index once another device has stored more).
//!
//! A page is a range of `record`'s primary key, at most `limit` rows and about
//! [`limits::MAX_PAGE_PAYLOAD_BYTES`] of payload: the query sums the payloads' lengths (read
//! from the out-of-line pointers, without fetching the values) and sends back only those that
//! fit, always at least one, so a page costs what it returns.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::{Extension, Json};
use sitetrail_sync_wire::{limits, IndexResponse, PageResponse, Payload, Record, SeriesHead, StoredRecord};

use crate::app::App;
use crate::auth::Authed;
use crate::error::HubResult;
use crate::request::{parse_page_query, parse_wait_query};
use crate::sql::Queries;
use tokio_postgres::types::Type;

/// The last index of every series the account holds.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn index(State(app): State<App>, authed: Authed) -> HubResult<Json<IndexResponse>> {
    Ok(Json(IndexResponse {
        series: read_index(&app, authed.account_id).await?,
    }))
}

/// The long-poll: the index once the other devices' records of a series add up to more than the
/// asker has seen, or when the wait is over (or the hub is stopping). It holds no database
/// connection and no request turn while it waits, is woken only by a push that puts it behind,
/// and then answers from the heads the push notified, without a read (`crate::notify`). Past a cap of waits (per
/// account, per address, in all) it answers the index at once with `Retry-After`: the wait's
/// time, which a device spends before asking again (an account asking past a cap more often than
/// `REFUSALS_PER_SECOND` is answered at that pace).
#[tracing::instrument(level = "debug", skip_all)]
pub async fn wait(
    State(app): State<App>,
    authed: Authed,
    peer: Option<Extension<crate::body::Peer>>,
    turn: Option<Extension<crate::turns::TurnSlot>>,
    headers: HeaderMap,
    uri: Uri,
) -> HubResult<(HeaderMap, Json<IndexResponse>)> {
    let wait = parse_wait_query(uri.query())?;
    let address = crate::body::client_address(peer.map(|p| p.0), &headers, app.real_ip_header.as_deref());
    let watch = match app.notifier.try_watch(authed.account_id, address) {
        Ok(watch) => {
            // It waits: its account's turn is for requests that work (crate::turns).
            if let Some(Extension(turn)) = turn {
                turn.release();
            }
            watch
        }
        Err(refused) => {
            crate::metrics::METRICS.wait_refused(refused.name());
            tracing::debug!(cap = refused.name(), "a wait past its cap answered at once");
            // Paced per account (crate::notify::REFUSALS_PER_SECOND), holding no turn meanwhile.
            let delay = app.notifier.refusal_delay(authed.account_id);
            if !delay.is_zero() {
                if let Some(Extension(turn)) = &turn {
                    turn.release();
                }
                tokio::time::sleep(delay).await;
            }
            let mut answer = HeaderMap::new();
            answer.insert(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(wait.wait.as_secs().max(1)),
            );
            let series = read_index(&app, authed.account_id).await?;
            return Ok((answer, Json(IndexResponse { series })));
        }
    };
    let _open = crate::metrics::METRICS.wait_open();
    let deadline = tokio::time::Instant::now() + wait.wait;
    let asker = crate::notify::Asker {
        device: authed.device_id,
        series: wait.series,
        seen: wait.seen,
    };
    loop {
        // The account's index as this process keeps it (read once for all its waits, then
        // moved by the heads each push notifies); registers the wait unless it is behind.
        let look = watch.look(&asker, || read_index(&app, authed.account_id)).await?;
        // An account deleted while its devices wait has no series: say it at once (401), as
        // every later request will, rather than at the end of the wait.
        if look.index.is_empty() && !account_exists(&app, authed.account_id).await? {
            return Err(crate::error::HubError::Unauthorized);
        }
        if look.behind || tokio::time::Instant::now() >= deadline || app.notifier.is_closed() {
            return Ok((
                HeaderMap::new(),
                Json(IndexResponse {
                    series: look.index.to_vec(),
                }),
            ));
        }
        tokio::select! {
            () = watch.woken() => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

async fn account_exists(app: &App, account_id: uuid::Uuid) -> HubResult<bool> {
    let client = app.pool.get().await?;
    let found = client
        .query_opt(
            "SELECT 1 AS found FROM account WHERE account_id = $1",
            &[(&account_id, Type::UUID)],
        )
        .await?;
    Ok(found.is_some())
}

async fn read_index(app: &App, account_id: uuid::Uuid) -> HubResult<Vec<SeriesHead>> {
    crate::metrics::METRICS.index_read();
    let client = app.pool.get().await?;
    let rows = client
        .query(
            r#"SELECT device_id, series, last_idx FROM series_head
               WHERE account_id = $1 AND last_idx > 0 ORDER BY device_id, series"#,
            &[(&account_id, Type::UUID)],
        )
        .await?;
    drop(client);
    let mut series = Vec::with_capacity(rows.len());
    for row in rows {
        let name: String = row.get("series");
        let last_idx: i64 = row.get("last_idx");
        series.push(SeriesHead {
            device_id: row.get("device_id"),
            // The column's CHECK keeps the name well formed; a row that is not is the database's
            // fault, answered 500.
            series: sitetrail_sync_wire::Series::new(&name).map_err(|_| corrupt("series_head.series"))?,
            last_idx: u64::try_from(last_idx).map_err(|_| corrupt("series_head.last_idx"))?,
        });
    }
    Ok(series)
}

fn corrupt(column: &str) -> crate::error::HubError {
    tracing::error!(column, "a stored value is outside its column's shape");
    crate::error::HubError::Internal
}

/// A page of a series: a range of `record`'s primary key (public for the plan test in
/// `hub/tests/schema.rs`).
pub const PAGE_QUERY: &str = r#"
    SELECT idx, record_id, received_at_ms,
           CASE WHEN running - size = 0 OR running <= $6 THEN payload END AS payload
    FROM (SELECT *, sum(size) OVER (ORDER BY idx) AS running
          FROM (SELECT idx, record_id, payload, octet_length(payload) AS size,
                       floor(extract(epoch FROM received_at) * 1000)::int8 AS received_at_ms
                FROM record
                WHERE account_id = $1 AND device_id = $2 AND series = $3 AND idx > $4
                ORDER BY idx LIMIT $5) AS page) AS sized
    ORDER BY idx"#;

/// A page of one series: consecutive records after `after`, and whether more follow.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn page(State(app): State<App>, authed: Authed, uri: Uri) -> HubResult<Json<PageResponse>> {
    let page = parse_page_query(uri.query())?;
    let client = app.pool.get().await?;
    let cap = i64::try_from(limits::MAX_PAGE_PAYLOAD_BYTES).unwrap_or(i64::MAX);
    let rows = client
        .query(
            PAGE_QUERY,
            &[
                (&authed.account_id, Type::UUID),
                (&page.device_id, Type::UUID),
                (&page.series.as_str(), Type::TEXT),
                (&page.after, Type::INT8),
                (&(i64::from(page.limit) + 1), Type::INT8),
                (&cap, Type::INT8),
            ],
        )
        .await?;
    let limit = usize::try_from(page.limit).unwrap_or(usize::MAX);
    let mut records = Vec::with_capacity(rows.len().min(limit));
    let mut more = false;
    for row in rows {
        let payload: Option<Vec<u8>> = row.get("payload");
        match payload {
            Some(payload) if records.len() < limit => {
                let idx: i64 = row.get("idx");
                records.push(StoredRecord {
                    record: Record {
                        record_id: row.get("record_id"),
                        device_id: page.device_id,
                        series: page.series.clone(),
                        idx: u64::try_from(idx).map_err(|_| corrupt("record.idx"))?,
                        payload: Payload(payload),
                    },
                    received_at_ms: row.get("received_at_ms"),
                });
            }
            _ => {
                more = true;
                break;
            }
        }
    }
    let bytes: usize = records.iter().map(|r| r.record.payload.0.len()).sum();
    crate::metrics::METRICS.pulled(records.len() as u64, bytes as u64);
    Ok(Json(PageResponse { records, more }))
}
