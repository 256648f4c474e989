//! Reading what a client sends, before any of it reaches the database: the login and device
//! headers, each route's JSON body or query, and the limits of [`sitetrail_sync_wire::limits`]
//! that the shapes alone do not keep (counts, totals, ranges).
//!
//! Everything here is a pure function of bytes (fuzzed in `fuzz/fuzz_targets/hub_request.rs`):
//! no input panics it, nothing it allocates is larger than the body it was given (itself capped
//! before it is read), and no refusal's message copies what was sent: JSON errors are described
//! by field and by what was expected ([`describe_json_error`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use sitetrail_sync_wire::{
    limits, parse_authorization, ClaimRequest, CreateAccount, Login, PageQuery, PushRequest, Series,
    SettleRequest, WaitQuery,
};
use uuid::Uuid;

use crate::error::{HubError, HubResult};

/// Who is asking: the account and login from `Authorization`, and the device from
/// [`sitetrail_sync_wire::DEVICE_HEADER`] if it was sent. `Debug` hides the login.
#[derive(Clone, Debug)]
pub struct Credentials {
    /// The account the login is for.
    pub account_id: Uuid,
    /// The login (its SHA-256 is compared with the stored one).
    pub login: Login,
    /// The device that says it is asking, if any.
    pub device_id: Option<Uuid>,
}

/// Reads the `Authorization` and device headers (their raw bytes, if present). A missing or
/// malformed login is 401; a malformed device header is 400.
pub fn parse_credentials(authorization: Option<&[u8]>, device: Option<&[u8]>) -> HubResult<Credentials> {
    let header = authorization.ok_or(HubError::Unauthorized)?;
    let header = std::str::from_utf8(header).map_err(|_| HubError::Unauthorized)?;
    let (account_id, login) = parse_authorization(header).map_err(|_| HubError::Unauthorized)?;
    let device_id = device.map(parse_device_header).transpose()?;
    Ok(Credentials {
        account_id,
        login,
        device_id,
    })
}

fn parse_device_header(value: &[u8]) -> HubResult<Uuid> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| Uuid::try_parse(text.trim()).ok())
        .ok_or_else(|| {
            HubError::BadRequest(format!(
                "the {} header must be a device id (a UUID)",
                sitetrail_sync_wire::DEVICE_HEADER
            ))
        })
}

/// The device id at the end of `/v1/devices/{device_id}` (the part after the prefix).
pub fn parse_device_path(tail: &str) -> HubResult<Uuid> {
    Uuid::try_parse(tail).map_err(|_| HubError::NotFound("no such route: a device id is a UUID".into()))
}

/// `POST /v1/accounts`.
pub fn parse_create_account(body: &[u8]) -> HubResult<CreateAccount> {
    parse_json(body)
}

/// `POST /v1/records`, checked: at most [`limits::MAX_RECORDS_PER_PUSH`] records, each within
/// its limits ([`sitetrail_sync_wire::Record::check`]), at most
/// [`limits::MAX_PUSH_PAYLOAD_BYTES`] of payload in all, and at most
/// [`limits::MAX_SERIES_PER_DEVICE`] series per device.
pub fn parse_push(body: &[u8]) -> HubResult<PushRequest> {
    let push: PushRequest = parse_json(body)?;
    if push.records.len() > limits::MAX_RECORDS_PER_PUSH {
        return Err(HubError::BadRequest(format!(
            "a push carries at most {} records (MAX_RECORDS_PER_PUSH)",
            limits::MAX_RECORDS_PER_PUSH
        )));
    }
    let mut payload_bytes = 0usize;
    let mut series: BTreeMap<Uuid, BTreeSet<&Series>> = BTreeMap::new();
    for (i, record) in push.records.iter().enumerate() {
        record
            .check()
            .map_err(|why| HubError::BadRequest(format!("records[{i}]: {why}")))?;
        payload_bytes += record.payload.0.len();
        series.entry(record.device_id).or_default().insert(&record.series);
    }
    if payload_bytes > limits::MAX_PUSH_PAYLOAD_BYTES {
        return Err(HubError::TooLarge(format!(
            "a push carries at most {} bytes of payload (MAX_PUSH_PAYLOAD_BYTES); push fewer records at once",
            limits::MAX_PUSH_PAYLOAD_BYTES
        )));
    }
    if series
        .values()
        .any(|names| names.len() > limits::MAX_SERIES_PER_DEVICE)
    {
        return Err(series_limit());
    }
    Ok(push)
}

/// The refusal of a device's series past [`limits::MAX_SERIES_PER_DEVICE`].
pub fn series_limit() -> HubError {
    HubError::BadRequest(format!(
        "a device writes at most {} series (MAX_SERIES_PER_DEVICE)",
        limits::MAX_SERIES_PER_DEVICE
    ))
}

/// `GET /v1/records?…`, checked: `limit` defaults to [`limits::MAX_PAGE_RECORDS`] and is refused
/// outside `1..=MAX_PAGE_RECORDS`; `after` fits PostgreSQL's `bigint`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The series' device.
    pub device_id: Uuid,
    /// The series.
    pub series: Series,
    /// Records after this index.
    pub after: i64,
    /// At most this many.
    pub limit: u32,
}

/// Reads a page query (the URI's query string, if any).
pub fn parse_page_query(query: Option<&str>) -> HubResult<Page> {
    let query = query.unwrap_or("");
    let page: PageQuery = serde_urlencoded::from_str(query).map_err(|_| {
        HubError::BadRequest(
            "a page is asked for with ?device_id=<uuid>&series=<name>&after=<index>[&limit=<1-200>]".into(),
        )
    })?;
    let limit = page.limit.unwrap_or(limits::MAX_PAGE_RECORDS);
    if limit == 0 || limit > limits::MAX_PAGE_RECORDS {
        return Err(HubError::BadRequest(format!(
            "limit is 1 to {} records (MAX_PAGE_RECORDS)",
            limits::MAX_PAGE_RECORDS
        )));
    }
    let after = i64::try_from(page.after)
        .map_err(|_| HubError::BadRequest("after fits a signed 64-bit integer".into()))?;
    Ok(Page {
        device_id: page.device_id,
        series: page.series,
        after,
        limit,
    })
}

/// `GET /v1/index/wait?…`, checked: `wait_ms` defaults to [`limits::MAX_WAIT_MS`] and is refused
/// past it; `seen` is any count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The series counted.
    pub series: Series,
    /// The asker's count of the other devices' records.
    pub seen: u64,
    /// How long to wait at most.
    pub wait: std::time::Duration,
}

/// Reads a long-poll's query (the URI's query string, if any).
pub fn parse_wait_query(query: Option<&str>) -> HubResult<Wait> {
    let wait: WaitQuery = serde_urlencoded::from_str(query.unwrap_or("")).map_err(|_| {
        HubError::BadRequest(format!(
            "a wait is asked for with ?series=<name>&seen=<count>[&wait_ms=<0-{}>]",
            limits::MAX_WAIT_MS
        ))
    })?;
    let ms = wait.wait_ms.unwrap_or(limits::MAX_WAIT_MS);
    if ms > limits::MAX_WAIT_MS {
        return Err(HubError::BadRequest(format!(
            "wait_ms is at most {} (MAX_WAIT_MS)",
            limits::MAX_WAIT_MS
        )));
    }
    Ok(Wait {
        series: wait.series,
        seen: wait.seen,
        wait: std::time::Duration::from_millis(ms),
    })
}

/// `POST /v1/claims`, checked: at most [`limits::MAX_CLAIM_ITEMS`] items, a lease within
/// [`limits::LEASE_MS`].
pub fn parse_claims(body: &[u8]) -> HubResult<ClaimRequest> {
    let request: ClaimRequest = parse_json(body)?;
    if request.items.len() > limits::MAX_CLAIM_ITEMS {
        return Err(claim_items_limit());
    }
    if !limits::LEASE_MS.contains(&request.lease_ms) {
        return Err(HubError::BadRequest(format!(
            "lease_ms is {} to {} (LEASE_MS)",
            limits::LEASE_MS.start(),
            limits::LEASE_MS.end()
        )));
    }
    Ok(request)
}

/// `POST /v1/claims/complete` and `/release`, checked: at most [`limits::MAX_CLAIM_ITEMS`].
pub fn parse_settle(body: &[u8]) -> HubResult<SettleRequest> {
    let request: SettleRequest = parse_json(body)?;
    if request.claims.len() > limits::MAX_CLAIM_ITEMS {
        return Err(claim_items_limit());
    }
    Ok(request)
}

fn claim_items_limit() -> HubError {
    HubError::BadRequest(format!(
        "a claim or settle request carries at most {} items (MAX_CLAIM_ITEMS)",
        limits::MAX_CLAIM_ITEMS
    ))
}

/// Reads a JSON body into `T`; a refusal names the field and what it takes.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> HubResult<T> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| HubError::BadRequest(describe_json_error(&e)))?;
    de.end()
        .map_err(|e| HubError::BadRequest(describe_json_error_plain(&e)))?;
    Ok(value)
}

/// The field names of the request types: the only names a refusal may repeat (a key the
/// client made up is shown as `?`).
const FIELDS: &[&str] = &[
    "account_id",
    "again",
    "claim_id",
    "claims",
    "device_id",
    "idx",
    "items",
    "lease_ms",
    "login",
    "payload",
    "record_id",
    "records",
    "series",
    "token",
];

/// Describes a JSON error by where it is and what was expected, never by what was found.
pub fn describe_json_error(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let mut path = String::new();
    for segment in e.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => path.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key }
            | serde_path_to_error::Segment::Enum { variant: key } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(
                    FIELDS
                        .iter()
                        .find(|f| **f == key.as_str())
                        .copied()
                        .unwrap_or("?"),
                );
            }
            serde_path_to_error::Segment::Unknown => path.push_str(".?"),
        }
    }
    let reason = describe_json_error_plain(e.inner());
    if path.is_empty() {
        reason
    } else {
        format!("{path}: {reason}")
    }
}

fn describe_json_error_plain(e: &serde_json::Error) -> String {
    let at = format!(" (line {}, column {})", e.line(), e.column());
    let text = e.to_string();
    // serde_json appends " at line L column C" to its message.
    let message = text.rsplit_once(" at line ").map_or(text.as_str(), |(m, _)| m);
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            // serde_json's own fixed sentences ("expected value", "trailing characters", ...).
            if message.contains(['"', '`', '\'']) {
                format!("the body is not valid JSON{at}")
            } else {
                format!("the body is not valid JSON: {message}{at}")
            }
        }
        serde_json::error::Category::Io => "the body could not be read".to_owned(),
        serde_json::error::Category::Data => describe_data_error(message),
    }
}

fn describe_data_error(message: &str) -> String {
    let expected = message.rsplit_once(", expected ").map(|(_, e)| e);
    let safe = |text: &str| !text.contains(['"', '\'']) && text.len() <= 200;
    if message.starts_with("missing field `") && safe(message) {
        return message.to_owned();
    }
    if message.starts_with("invalid length ") && safe(message) {
        return message.to_owned();
    }
    if message.starts_with("invalid type: ") {
        return match expected {
            Some(e) if safe(e) => format!("wrong type, expected {e}"),
            _ => "wrong type".to_owned(),
        };
    }
    if message.starts_with("invalid value: ") || message.starts_with("unknown variant") {
        return match expected {
            Some(e) if safe(e) => format!("invalid value, expected {e}"),
            _ => "invalid value".to_owned(),
        };
    }
    if message.starts_with("UUID parsing failed") {
        return "not a UUID".to_owned();
    }
    // The wire types' own refusals ("a series name is ...", "a token is ...") are fixed sentences
    // that never include the value.
    if message.starts_with("a ") && message.len() <= 200 && !message.contains(['"', '`']) {
        return message.to_owned();
    }
    "invalid value".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sitetrail_sync_wire::{authorization, Payload, Record};

    fn message(e: HubError) -> String {
        e.to_string()
    }

    fn record(idx: u64, bytes: usize) -> Record {
        Record {
            record_id: Uuid::from_u128(u128::from(idx)),
            device_id: Uuid::from_u128(2),
            series: Series::new("visits").unwrap(),
            idx,
            payload: Payload(vec![7; bytes]),
        }
    }

    #[test]
    fn credentials_read_back_and_refuse_garbage() {
        let login = Login::new([3; 32]);
        let header = authorization(Uuid::from_u128(9), &login);
        let device = Uuid::from_u128(5).to_string();
        let c = parse_credentials(Some(header.as_bytes()), Some(device.as_bytes())).unwrap();
        assert_eq!(c.account_id, Uuid::from_u128(9));
        assert_eq!(c.login, login);
        assert_eq!(c.device_id, Some(Uuid::from_u128(5)));
        assert!(!format!("{c:?}").contains(&login.to_base64url()));
        for bad in [
            None,
            Some(&b"Bearer"[..]),
            Some(&b"\xff\xfe"[..]),
            Some(&b"Basic abc"[..]),
        ] {
            assert!(matches!(
                parse_credentials(bad, None),
                Err(HubError::Unauthorized)
            ));
        }
        let e = parse_credentials(Some(header.as_bytes()), Some(b"not-a-device")).unwrap_err();
        assert!(matches!(e, HubError::BadRequest(_)));
        assert!(!message(e).contains("not-a-device"));
    }

    #[test]
    fn pushes_keep_their_limits() {
        let ok = PushRequest {
            records: vec![record(1, 10), record(2, 10)],
        };
        let body = serde_json::to_vec(&ok).unwrap();
        assert_eq!(parse_push(&body).unwrap().records.len(), 2);

        let many = PushRequest {
            records: (1..=201).map(|i| record(i, 1)).collect(),
        };
        let e = parse_push(&serde_json::to_vec(&many).unwrap()).unwrap_err();
        assert!(message(e).contains("MAX_RECORDS_PER_PUSH"));

        let heavy = PushRequest {
            records: (1..=40).map(|i| record(i, 250 * 1024)).collect(),
        };
        let e = parse_push(&serde_json::to_vec(&heavy).unwrap()).unwrap_err();
        assert!(matches!(e, HubError::TooLarge(_)), "{e:?}");

        let zero = PushRequest {
            records: vec![record(0, 1)],
        };
        let e = parse_push(&serde_json::to_vec(&zero).unwrap()).unwrap_err();
        assert!(message(e).starts_with("records[0]: "));

        let series = PushRequest {
            records: (1..=17)
                .map(|i| Record {
                    series: Series::new(&format!("s{i}")).unwrap(),
                    ..record(1, 1)
                })
                .collect(),
        };
        let e = parse_push(&serde_json::to_vec(&series).unwrap()).unwrap_err();
        assert!(message(e).contains("MAX_SERIES_PER_DEVICE"));
    }

    #[test]
    fn refusals_never_copy_what_was_sent() {
        let marker = "MARKER-secret-value";
        let bodies = [
            format!(r#"{{"records":[{{"record_id":"{marker}"}}]}}"#),
            format!(r#"{{"records":"{marker}"}}"#),
            format!(r#"{{"records":[],"{marker}":{{"x":[1,2,}}}}"#),
            format!(
                r#"{{"records":[{{"record_id":"00000000-0000-0000-0000-000000000001","device_id":"00000000-0000-0000-0000-000000000001","series":"{marker}","idx":1,"payload":"AA=="}}]}}"#
            ),
            format!(
                r#"{{"records":[{{"record_id":"00000000-0000-0000-0000-000000000001","device_id":"00000000-0000-0000-0000-000000000001","series":"visits","idx":-1,"payload":"{marker}"}}]}}"#
            ),
            format!(r#"{{"records":[]}} {marker}"#),
            format!(r#"{{"{marker}": 1e999999}}"#),
        ];
        for body in bodies {
            let e = parse_push(body.as_bytes()).unwrap_err();
            let text = message(e);
            assert!(!text.contains("MARKER") && !text.contains("secret"), "{text}");
        }
        let e = parse_page_query(Some(&format!("device_id={marker}&series=visits&after=0"))).unwrap_err();
        assert!(!message(e).contains("MARKER"));
    }

    #[test]
    fn json_refusals_name_the_field() {
        let body = br#"{"records":[{"record_id":"00000000-0000-0000-0000-000000000001","device_id":"00000000-0000-0000-0000-000000000001","series":"Bad Name","idx":1,"payload":"AA=="}]}"#;
        let text = message(parse_push(body).unwrap_err());
        assert!(text.starts_with("records[0].series: a series name is"), "{text}");
        let text = message(parse_push(br#"{}"#).unwrap_err());
        assert_eq!(text, "missing field `records`");
        let text = message(
            parse_claims(
                br#"{"device_id":"00000000-0000-0000-0000-000000000001","lease_ms":"x","items":[]}"#,
            )
            .unwrap_err(),
        );
        assert!(text.starts_with("lease_ms: wrong type, expected u64"), "{text}");
    }

    #[test]
    fn pages_and_claims_keep_their_limits() {
        let device = Uuid::from_u128(1);
        let page = parse_page_query(Some(&format!("device_id={device}&series=visits&after=5"))).unwrap();
        assert_eq!((page.after, page.limit), (5, limits::MAX_PAGE_RECORDS));
        for bad in [
            format!("device_id={device}&series=visits&after=5&limit=0"),
            format!("device_id={device}&series=visits&after=5&limit=201"),
            format!("device_id={device}&series=visits&after={}", u64::MAX),
            format!("device_id={device}&series=Visits&after=0"),
            "series=visits&after=0".to_owned(),
        ] {
            assert!(
                matches!(parse_page_query(Some(&bad)), Err(HubError::BadRequest(_))),
                "{bad}"
            );
        }
        assert!(parse_page_query(None).is_err());

        let claims = |lease: u64, n: usize| {
            let items: Vec<_> = (0..n)
                .map(|_| serde_json::json!({"token": "ab".repeat(32)}))
                .collect();
            serde_json::to_vec(&serde_json::json!({"device_id": device, "lease_ms": lease, "items": items}))
                .unwrap()
        };
        assert!(parse_claims(&claims(1_000, 100)).is_ok());
        assert!(parse_claims(&claims(999, 1)).is_err());
        assert!(parse_claims(&claims(3_600_001, 1)).is_err());
        assert!(message(parse_claims(&claims(1_000, 101)).unwrap_err()).contains("MAX_CLAIM_ITEMS"));
    }
}
