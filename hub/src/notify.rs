//! Long-polls woken when an account's records grow, whichever hub process stored them.
//!
//! A push that stores records sends `NOTIFY sitetrail_records, '<account>'` in its transaction
//! (PostgreSQL delivers it at COMMIT, to every listening connection). Each hub process keeps one
//! connection of its own that `LISTEN`s ([`listen`]) and wakes the long-polls of that account
//! waiting in this process ([`Notifier`]). The hub stays stateless: what a wait compares is read
//! from the database, a notification only says "look again".
//!
//! Invariants: a wait registers before it reads the database, so a push that commits between
//! the read and the wait still wakes it; a lost notification (the listening connection broke, or
//! PostgreSQL is down) costs at most one wait's time, never a record (the device's next wait or
//! periodic sync reads the index again), and every wait is woken when the connection is back;
//! no wait holds a database connection or a request's turn while it waits.
//!
//! One read per wake: the waits of one account share its index. A wake moves the account's
//! generation; the first wait to look at a generation reads the index (the others of the
//! account wait for that read and take its answer), so a push costs one read per waiting
//! account, not one per wait.
//!
//! Fairness ([`WaitCaps`], `sitetrail-hub serve --max-waits*`): at most so many waits per account,
//! per client address and in all are registered at once; a wait past a cap is answered at once
//! (the caller says so with `Retry-After`), so one account or address cannot hold the
//! connections the others need, and a share of `--max-connections` stays for other requests.
//! Answers past a cap are paced per account ([`Notifier::refusal_delay`]): at most
//! [`REFUSALS_PER_SECOND`] a second at once in a process, the others after their slot, so a
//! client that asks again the moment it is answered (ignoring `Retry-After`) cannot turn its waits
//! into a stream of database reads that the other accounts' requests queue behind (measured by
//! `hub/benches/load.rs`). A device asks again only after `Retry-After`: it never waits for a slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls};
use uuid::Uuid;

/// The channel pushes notify and hubs listen on.
pub const CHANNEL: &str = "sitetrail_records";

/// Waits of one account answered at once past a cap, per second and process; past it, each
/// waits for its slot (at most [`MAX_REFUSAL_DELAY`]).
pub const REFUSALS_PER_SECOND: u32 = 10;

/// The longest a wait past a cap waits for its slot.
pub const MAX_REFUSAL_DELAY: Duration = Duration::from_millis(sitetrail_sync_wire::limits::MAX_WAIT_MS);

/// The most waits registered at once (`None`: no cap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitCaps {
    /// Of one account.
    pub per_account: Option<usize>,
    /// From one client address (an IPv6 address by its /64).
    pub per_address: Option<usize>,
    /// In this process.
    pub total: Option<usize>,
}

/// Which cap a wait was refused by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitRefused {
    /// The account's.
    Account,
    /// The address's.
    Address,
    /// The process's.
    Total,
}

impl WaitRefused {
    /// Its name, for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            WaitRefused::Account => "account",
            WaitRefused::Address => "address",
            WaitRefused::Total => "total",
        }
    }
}

/// What the waits of one account share: the wake, and the index read for the latest generation.
#[derive(Default)]
pub struct Shared {
    notify: Notify,
    /// Moved by every wake of the account (or of all).
    generation: std::sync::atomic::AtomicU64,
    /// The index read at a generation; one read at a time (the others wait for it).
    index: tokio::sync::Mutex<Option<(u64, Arc<Vec<sitetrail_sync_wire::SeriesHead>>)>>,
}

/// The waits of one process, by account.
#[derive(Default)]
pub struct Notifier {
    accounts: Mutex<HashMap<Uuid, (Arc<Shared>, usize)>>,
    /// Waits by client address, and in all (counted under the `accounts` lock).
    addresses: Mutex<(HashMap<IpAddr, usize>, usize)>,
    /// The next free slot of each account's answers past a cap.
    refusals: Mutex<HashMap<Uuid, tokio::time::Instant>>,
    caps: WaitCaps,
    /// Every wait, for "look again" after a reconnect and for the shutdown.
    all: Notify,
    closed: AtomicBool,
}

/// One registered wait: arm it ([`Watch::arm`]) before each read; unregisters when dropped.
pub struct Watch {
    notifier: Arc<Notifier>,
    account: Uuid,
    address: Option<IpAddr>,
    /// Registered by [`Notifier::try_watch`]: counted against the caps.
    counted: bool,
    shared: Arc<Shared>,
}

impl Notifier {
    fn accounts(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (Arc<Shared>, usize)>> {
        // The map holds counters only: a panic elsewhere cannot leave it half-written.
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A notifier whose waits are capped by `caps`.
    pub fn with_caps(caps: WaitCaps) -> Notifier {
        Notifier {
            caps,
            ..Notifier::default()
        }
    }

    /// Registers a wait for `account` (no cap applies).
    pub fn watch(self: &Arc<Self>, account: Uuid) -> Watch {
        let shared = {
            let mut accounts = self.accounts();
            let entry = accounts.entry(account).or_default();
            entry.1 += 1;
            entry.0.clone()
        };
        Watch {
            notifier: self.clone(),
            account,
            address: None,
            counted: false,
            shared,
        }
    }

    /// Registers a wait for `account` from `address`, unless that would pass a cap.
    pub fn try_watch(self: &Arc<Self>, account: Uuid, address: Option<IpAddr>) -> Result<Watch, WaitRefused> {
        let mut accounts = self.accounts();
        let mut addresses = self
            .addresses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let of_account = accounts.get(&account).map_or(0, |e| e.1);
        if self.caps.per_account.is_some_and(|cap| of_account >= cap) {
            return Err(WaitRefused::Account);
        }
        if self.caps.total.is_some_and(|cap| addresses.1 >= cap) {
            return Err(WaitRefused::Total);
        }
        if let Some(address) = address {
            let of_address = addresses.0.get(&address).copied().unwrap_or(0);
            if self.caps.per_address.is_some_and(|cap| of_address >= cap) {
                return Err(WaitRefused::Address);
            }
            *addresses.0.entry(address).or_default() += 1;
        }
        addresses.1 += 1;
        let entry = accounts.entry(account).or_default();
        entry.1 += 1;
        Ok(Watch {
            notifier: self.clone(),
            account,
            address,
            counted: true,
            shared: entry.0.clone(),
        })
    }

    /// How long a wait of `account` refused by a cap waits before it is answered: nothing while
    /// the account's refusals in this process come at most [`REFUSALS_PER_SECOND`] a second, else
    /// until its slot (at most [`MAX_REFUSAL_DELAY`]).
    pub fn refusal_delay(&self, account: Uuid) -> Duration {
        self.refusal_delay_at(account, tokio::time::Instant::now())
    }

    /// [`Notifier::refusal_delay`] at `now`.
    fn refusal_delay_at(&self, account: Uuid, now: tokio::time::Instant) -> Duration {
        let mut refusals = self
            .refusals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if refusals.len() > 10_000 {
            // Accounts whose slots are past: nothing to remember.
            refusals.retain(|_, slot| *slot > now);
        }
        let slot = refusals.entry(account).or_insert(now);
        let start = (*slot).max(now);
        *slot = start + Duration::from_secs(1) / REFUSALS_PER_SECOND;
        (start - now).min(MAX_REFUSAL_DELAY)
    }

    /// Wakes the waits of `account` in this process.
    pub fn wake(&self, account: Uuid) {
        if let Some((shared, _)) = self.accounts().get(&account) {
            shared.generation.fetch_add(1, Ordering::SeqCst);
            shared.notify.notify_waiters();
        }
    }

    /// Wakes every wait (each account's index is read again).
    pub fn wake_all(&self) {
        for (shared, _) in self.accounts().values() {
            shared.generation.fetch_add(1, Ordering::SeqCst);
        }
        self.all.notify_waiters();
    }

    /// The hub is stopping: every wait answers now, and new ones do not wait.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.all.notify_waiters();
    }

    /// True once [`Notifier::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// How many waits are registered (for tests and the idle measurement).
    pub fn waiting(&self) -> usize {
        self.accounts().values().map(|(_, n)| n).sum()
    }
}

impl Watch {
    /// Both wake futures, enabled now: await the returned future after reading the database.
    pub fn arm(&self) -> Armed<'_> {
        let mut armed = Armed {
            mine: Box::pin(self.shared.notify.notified()),
            all: Box::pin(self.notifier.all.notified()),
            closed: &self.notifier.closed,
        };
        armed.mine.as_mut().enable();
        armed.all.as_mut().enable();
        armed
    }
}

impl Watch {
    /// The account's index as of the latest wake: read by `read` if no wait of the account has
    /// read it since (the others wait for that read and share it). Call it after [`Watch::arm`],
    /// so a wake after the read still wakes the wait.
    pub async fn index<F, E>(&self, read: F) -> Result<Arc<Vec<sitetrail_sync_wire::SeriesHead>>, E>
    where
        F: std::future::Future<Output = Result<Vec<sitetrail_sync_wire::SeriesHead>, E>>,
    {
        let generation = self.shared.generation.load(Ordering::SeqCst);
        let mut cached = self.shared.index.lock().await;
        if let Some((at, index)) = cached.as_ref() {
            if *at == generation {
                return Ok(index.clone());
            }
        }
        let index = Arc::new(read.await?);
        *cached = Some((generation, index.clone()));
        Ok(index)
    }
}

/// A wake armed before the database was read ([`Watch::arm`]).
pub struct Armed<'a> {
    mine: std::pin::Pin<Box<tokio::sync::futures::Notified<'a>>>,
    all: std::pin::Pin<Box<tokio::sync::futures::Notified<'a>>>,
    closed: &'a AtomicBool,
}

impl Armed<'_> {
    /// Completes at the first wake since [`Watch::arm`] (at once if the hub is stopping).
    pub async fn woken(self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let Armed { mine, all, .. } = self;
        tokio::select! {
            () = mine => {}
            () = all => {}
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut accounts = self.notifier.accounts();
        if let Some(entry) = accounts.get_mut(&self.account) {
            entry.1 = entry.1.saturating_sub(1);
            if entry.1 == 0 {
                accounts.remove(&self.account);
            }
        }
        if self.counted {
            let mut addresses = self
                .notifier
                .addresses
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(address) = self.address {
                if let Some(n) = addresses.0.get_mut(&address) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        addresses.0.remove(&address);
                    }
                }
            }
            addresses.1 = addresses.1.saturating_sub(1);
        }
    }
}

/// Keeps a `LISTEN` connection to PostgreSQL open for as long as the process runs, waking
/// `notifier`'s waits on each notification; reconnects with backoff when the connection breaks.
pub async fn listen(config: tokio_postgres::Config, notifier: Arc<Notifier>) {
    let mut backoff = Duration::from_secs(1);
    loop {
        if notifier.is_closed() {
            return;
        }
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let woken = notifier.clone();
                let driver = tokio::spawn(async move {
                    loop {
                        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                if let Ok(account) = Uuid::try_parse(n.payload()) {
                                    woken.wake(account);
                                }
                            }
                            Some(Ok(_)) => {}
                            // Its SQLSTATE only: a message's detail can quote a row.
                            Some(Err(e)) => {
                                return Some(e.code().map_or("a connection error", |c| c.code()).to_owned())
                            }
                            None => return None,
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    Ok(()) => {
                        backoff = Duration::from_secs(1);
                        tracing::debug!("listening for new records");
                        // Anything stored while this process was not listening: look again.
                        notifier.wake_all();
                    }
                    Err(e) => {
                        tracing::warn!(sqlstate = ?e.code().map(tokio_postgres::error::SqlState::code), "LISTEN failed");
                    }
                }
                let ended = driver.await.ok().flatten();
                drop(client);
                tracing::warn!(
                    why = ended.as_deref().unwrap_or("closed"),
                    "the connection listening for new records ended; long-polls fall back to their timeout until it is back"
                );
            }
            Err(_) => {
                // db::pool's checkouts log the outage; this only waits for its end.
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_past_their_rate_wait_for_their_slot_per_account() {
        let n = Notifier::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let step = Duration::from_secs(1) / REFUSALS_PER_SECOND;
        let t0 = tokio::time::Instant::now();
        assert_eq!(n.refusal_delay_at(a, t0), Duration::ZERO);
        assert_eq!(n.refusal_delay_at(a, t0), step);
        assert_eq!(n.refusal_delay_at(a, t0), step * 2);
        // Another account has slots of its own.
        assert_eq!(n.refusal_delay_at(b, t0), Duration::ZERO);
        // Once the slots are past, an answer is at once again.
        assert_eq!(n.refusal_delay_at(a, t0 + step * 3), Duration::ZERO);
        // However many ask, none waits longer than the cap.
        for _ in 0..1_000 {
            assert!(n.refusal_delay_at(a, t0) <= MAX_REFUSAL_DELAY);
        }
    }

    #[tokio::test]
    async fn a_wake_between_arming_and_waiting_is_not_lost_and_watches_unregister() {
        let n = Arc::new(Notifier::default());
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let watch = n.watch(a);
        let other = n.watch(b);
        assert_eq!(n.waiting(), 2);
        let armed = watch.arm();
        n.wake(a);
        tokio::time::timeout(Duration::from_secs(5), armed.woken())
            .await
            .expect("the wake before the wait counts");
        // Another account's wake does not wake this one.
        let armed = watch.arm();
        n.wake(b);
        assert!(tokio::time::timeout(Duration::from_millis(50), armed.woken())
            .await
            .is_err());
        let armed = watch.arm();
        n.wake_all();
        tokio::time::timeout(Duration::from_secs(5), armed.woken())
            .await
            .expect("wake_all wakes every wait");
        drop(other);
        drop(watch);
        assert_eq!(n.waiting(), 0);
        assert!(n.accounts().is_empty());
        n.close();
        let watch = n.watch(a);
        tokio::time::timeout(Duration::from_secs(5), watch.arm().woken())
            .await
            .expect("a closed notifier does not wait");
    }
}
