//! The HTTP server: the routes of `sitetrail_sync_wire::routes`, and the accept loop that bounds
//! what clients can hold.
//!
//! Invariants (each a number in [`Limits`], set by `sitetrail-hub serve`'s flags):
//! - at most `max_connections` client connections; past it the hub stops accepting (the
//!   kernel's backlog queues them) instead of spending memory on them;
//! - a request's headers must arrive within `header_timeout` of the connection (or of the
//!   previous answer on a kept-alive one) and be at most [`MAX_HEADER_BYTES`]: the slow-loris
//!   bound;
//! - at most `max_requests` requests are worked on at once (the others wait for a turn, within
//!   their timeout), so the memory of bodies in flight is bounded by `max_requests` times the
//!   body limit;
//! - at most `max_requests_per_account` of them are one account's ([`crate::turns`]): an
//!   account's other requests wait for one of its own turns before they take one of the
//!   process's, so one account cannot fill the queue that every account's requests share;
//! - every request is answered within `request_timeout`, body reading included (503 past it);
//! - a panic in a handler is answered 500 and logged; it never takes the process down.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use sitetrail_sync_wire::routes;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::api;
pub use crate::app::App;
use crate::body::Peer;
use crate::error::HubError;

/// The most header bytes the hub buffers for one request.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// How long in-flight requests get to finish once the hub is told to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The server's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Client connections open at once.
    pub max_connections: usize,
    /// Requests worked on at once.
    pub max_requests: usize,
    /// Requests of one account worked on at once (0: no limit).
    pub max_requests_per_account: usize,
    /// Longest time to answer one request, reading its body included.
    pub request_timeout: Duration,
    /// Longest time for a request's headers to arrive (an idle kept-alive connection included).
    pub header_timeout: Duration,
}

/// The routes, with their logging and panic handling.
pub fn router(app: App) -> Router {
    Router::new()
        .route(routes::ACCOUNTS, post(api::accounts::create))
        .route(routes::ACCOUNT, delete(api::accounts::delete))
        .route(routes::DEVICES, get(api::devices::list))
        .route(
            routes::DEVICE,
            put(api::devices::register).delete(api::devices::leave),
        )
        .route(routes::RECORDS, post(api::push::push).get(api::records::page))
        .route(routes::INDEX, get(api::records::index))
        .route(routes::INDEX_WAIT, get(api::records::wait))
        .route(routes::CLAIMS, post(api::claims::claim))
        .route(routes::CLAIMS_COMPLETE, post(api::claims::complete))
        .route(routes::CLAIMS_RELEASE, post(api::claims::release))
        .route(routes::QUOTA, get(api::quota::quota))
        .route(routes::HEALTH, get(api::health::health))
        .fallback(no_route)
        .method_not_allowed_fallback(no_route)
        .with_state(app)
        .layer(middleware::from_fn(log_request))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
}

async fn no_route() -> HubError {
    HubError::NotFound("no such route (see docs/SYNC.md for the hub's API)".into())
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    HubError::Internal.into_response()
}

/// Logs each request's route (the pattern, never the path's ids, a query, a header or a body),
/// status and time.
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let response = next.run(request).await;
    let status = response.status();
    let route = route.as_deref().unwrap_or("(no route)");
    let took = started.elapsed();
    crate::metrics::METRICS.request(route, method.as_str(), status.as_u16(), took);
    let ms = took.as_millis();
    if status.is_server_error() {
        tracing::warn!(%method, route, status = status.as_u16(), ms, "request failed");
    } else {
        tracing::debug!(%method, route, status = status.as_u16(), ms, "request");
    }
    response
}

/// Serves `router` on `listener` within `limits` until `shutdown` resolves, then lets the
/// requests in flight finish (at most [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    serve_with(listener, router, limits, None, shutdown).await;
}

/// [`serve`], over TLS when `tls` is given (each connection's handshake within the header
/// timeout, on its own task, so a slow handshake never holds the accept loop).
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<Arc<crate::tls::Tls>>,
    shutdown: impl Future<Output = ()>,
) {
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let requests = Arc::new(Semaphore::new(limits.max_requests.max(1)));
    let account_turns = (limits.max_requests_per_account > 0)
        .then(|| crate::turns::AccountTurns::new(limits.max_requests_per_account));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_HEADER_BYTES)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a moment instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = RequestService {
            router: router.clone(),
            requests: requests.clone(),
            account_turns: account_turns.clone(),
            limits,
            peer,
        };
        let Some(tls) = &tls else {
            let connection = http.serve_connection(TokioIo::new(stream), service);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                // A connection's errors (a client that went away, a header timeout) are the client's.
                let _ = connection.await;
                drop(permit);
            });
            continue;
        };
        let (acceptor, http, watcher) = (tls.acceptor(), http.clone(), graceful.watcher());
        tokio::spawn(async move {
            // A failed handshake (a client that does not trust the certificate, or speaks plain
            // HTTP) is the client's: the connection is closed.
            if let Ok(Ok(stream)) = tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await
            {
                let connection = http.serve_connection(TokioIo::new(stream), service);
                let _ = watcher.watch(connection).await;
            }
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!("requests still in flight after the shutdown grace: stopping anyway");
        }
    }
}

/// The size of a request's line and headers, as sent.
fn header_bytes<B>(request: &Request<B>) -> usize {
    let line = request.method().as_str().len() + request.uri().to_string().len();
    request
        .headers()
        .iter()
        .fold(line, |n, (name, value)| n + name.as_str().len() + value.len() + 4)
}

/// One connection's service: the request's turn, its timeout, its peer address.
#[derive(Clone)]
struct RequestService {
    router: Router,
    requests: Arc<Semaphore>,
    account_turns: Option<Arc<crate::turns::AccountTurns>>,
    limits: Limits,
    peer: SocketAddr,
}

impl hyper::service::Service<Request<hyper::body::Incoming>> for RequestService {
    type Response = Response;
    type Error = Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: Request<hyper::body::Incoming>) -> Self::Future {
        if header_bytes(&request) > MAX_HEADER_BYTES {
            // hyper bounds its buffer near this already; the answer makes the bound exact.
            let body = HubError::TooLarge(format!(
                "a request's headers are at most {MAX_HEADER_BYTES} bytes"
            ));
            let mut response = body.into_response();
            *response.status_mut() = axum::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
            return Box::pin(async move { Ok(response) });
        }
        request.extensions_mut().insert(Peer(self.peer));
        // The account the login names, before it is checked (see crate::turns).
        let account = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| sitetrail_sync_wire::parse_authorization(v).ok())
            .map(|(account, _)| account);
        let this = self.clone();
        Box::pin(async move {
            // A long-poll waits without a turn of the process (it holds no body and, while
            // waiting, no database connection), and gets its wait on top of the timeout. It
            // takes one of its account's turns, and gives it back once it waits.
            let long_poll = request.uri().path() == routes::INDEX_WAIT;
            let timeout = if long_poll {
                this.limits.request_timeout + Duration::from_millis(sitetrail_sync_wire::limits::MAX_WAIT_MS)
            } else {
                this.limits.request_timeout
            };
            let answer = tokio::time::timeout(timeout, async {
                let account_turn = crate::turns::TurnSlot::new(match (&this.account_turns, account) {
                    (Some(turns), Some(account)) => Some(turns.take(account).await),
                    _ => None,
                });
                // Held here to the answer (an extractor that takes the body drops the request's
                // extensions); the handler's copy lets a long-poll give it back once it waits.
                request.extensions_mut().insert(account_turn.clone());
                let _turn = if long_poll {
                    None
                } else {
                    this.requests.clone().acquire_owned().await.ok()
                };
                let answer = this.router.oneshot(request.map(axum::body::Body::new)).await;
                drop(account_turn);
                answer
            })
            .await;
            Ok(match answer {
                Ok(Ok(response)) => response,
                Ok(Err(infallible)) => match infallible {},
                Err(_) => {
                    let mut response = HubError::Unavailable(format!(
                        "the request took longer than {} s; try again",
                        timeout.as_secs()
                    ))
                    .into_response();
                    // The client may still be sending: do not keep the connection for it.
                    response.headers_mut().insert(
                        axum::http::header::CONNECTION,
                        axum::http::HeaderValue::from_static("close"),
                    );
                    response
                }
            })
        })
    }
}
