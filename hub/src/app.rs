//! What every handler shares ([`App`]): below the server that routes to the handlers and the
//! handlers themselves, so neither reaches back into the other.

use std::sync::Arc;

use crate::sql::Pool;

/// What every handler shares: the pool, and how to find a client's address behind a proxy.
#[derive(Clone)]
pub struct App {
    /// The PostgreSQL pool.
    pub pool: Pool,
    /// The header a trusted proxy puts the client's address in (`--real-ip-header`), if any.
    pub real_ip_header: Option<String>,
    /// The long-polls waiting in this process (woken by `crate::notify::listen`).
    pub notifier: Arc<crate::notify::Notifier>,
    /// The quotas per account (`--quota-*`, `--max-new-accounts-per-hour`).
    pub quotas: crate::quota::Quotas,
    /// The longest lease a claim is granted, in milliseconds (`--max-lease-ms`); `None`: the
    /// lease the device asks for.
    pub max_lease_ms: Option<u64>,
}
