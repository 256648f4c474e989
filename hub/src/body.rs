//! Reading a request's body within [`limits::MAX_BODY_BYTES`], and the client's network address.
//!
//! Invariant: a body is refused (413) by its `Content-Length` before a byte of it is read, and
//! reading stops at the limit whatever the client declared, so no request makes the hub buffer
//! more than the limit. A client that sends its body slowly is cut off by the request timeout
//! ([`crate::server`]).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::HeaderMap;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use sitetrail_sync_wire::limits;

use crate::error::HubError;

/// A request body, read whole and within the limit.
pub struct Body(pub Bytes);

fn too_large() -> HubError {
    HubError::TooLarge(format!(
        "a request body is at most {} bytes (MAX_BODY_BYTES)",
        limits::MAX_BODY_BYTES
    ))
}

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = HubError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let declared = req
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limits::MAX_BODY_BYTES as u64) {
            return Err(too_large());
        }
        match Limited::new(req.into_body(), limits::MAX_BODY_BYTES)
            .collect()
            .await
        {
            Ok(collected) => Ok(Body(collected.to_bytes())),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
            Err(_) => Err(HubError::BadRequest(
                "the request body could not be read to its end".into(),
            )),
        }
    }
}

/// The TCP peer of a connection, put in each request's extensions by the accept loop.
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub SocketAddr);

/// The address a request counts against for per-address limits: the TCP peer, or, behind a
/// proxy named by `--real-ip-header`, the right-most address in that header (the one the
/// nearest proxy saw). IPv4-mapped IPv6 addresses count as IPv4; an IPv6 address counts by its
/// /64, the block one customer usually has.
pub fn client_address(
    peer: Option<Peer>,
    headers: &HeaderMap,
    real_ip_header: Option<&str>,
) -> Option<IpAddr> {
    let from_header = real_ip_header
        .and_then(|name| headers.get_all(name).iter().next_back())
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .and_then(|v| v.trim().parse::<IpAddr>().ok());
    let address = from_header.or(peer.map(|p| p.0.ip()))?;
    Some(rate_limit_key(address))
}

fn rate_limit_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_count_by_peer_or_the_proxy_header() {
        let peer = Some(Peer("10.0.0.1:5000".parse().unwrap()));
        let mut headers = HeaderMap::new();
        assert_eq!(
            client_address(peer, &headers, None),
            Some("10.0.0.1".parse().unwrap())
        );
        headers.insert("x-forwarded-for", "203.0.113.9, 198.51.100.7".parse().unwrap());
        assert_eq!(
            client_address(peer, &headers, None),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(
            client_address(peer, &headers, Some("x-forwarded-for")),
            Some("198.51.100.7".parse().unwrap())
        );
        headers.insert("x-forwarded-for", "garbage".parse().unwrap());
        assert_eq!(
            client_address(peer, &headers, Some("x-forwarded-for")),
            Some("10.0.0.1".parse().unwrap())
        );
        let v6 = Some(Peer("[2001:db8:1:2:3:4:5:6]:1".parse().unwrap()));
        assert_eq!(
            client_address(v6, &HeaderMap::new(), None),
            Some("2001:db8:1:2::".parse().unwrap())
        );
        let mapped = Some(Peer("[::ffff:192.0.2.1]:1".parse().unwrap()));
        assert_eq!(
            client_address(mapped, &HeaderMap::new(), None),
            Some("192.0.2.1".parse().unwrap())
        );
    }
}
