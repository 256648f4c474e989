//! Long-polls woken when an account's records grow, whichever hub process stored them.
//!
//! A push that stores records sends `NOTIFY sitetrail_records, '<account> <heads>'` in its
//! transaction (PostgreSQL delivers it at COMMIT, to every listening connection): the account and
//! each series head the push moved, as `device:series:last_idx` ([`payload`]). Each hub process
//! keeps one connection of its own that `LISTEN`s ([`listen`]) and hands the heads to the waits of
//! that account in this process ([`Notifier::changed`]); the pushing process hands them over at
//! once too, without the round trip.
//!
//! One index per account, kept while its waits are open: the first wait of an account reads the
//! index from the database (the others of the account wait for that read and share it), and from
//! then on each notification's heads are merged into it (a head only grows, so merging is a
//! maximum: order and repeats do not matter). A change wakes only the waits it puts behind (those
//! whose asker now has more to pull than it has seen), and a woken wait answers from the merged
//! index without reading the database. Many pushes in a burst wake a wait once: a woken wait
//! leaves the account's list until it asks again. So a push costs one pass over the account's
//! waits in memory, however many wait, and no read (measured by `hub/benches/hub.rs`, (f)).
//!
//! Invariants: a wait is registered before its index is read, and heads notified during a read
//! are merged into its result, so a push that commits meanwhile is never missed. A notification
//! that is not a list of heads (a bare account id: an account deleted, or a payload too long)
//! means "look again": the account's index is dropped and all its waits read it anew (one read
//! between them). A lost notification (the listening connection broke, or PostgreSQL is down)
//! never loses a wake for long: every account's index is dropped and its waits woken when the
//! connection is back ([`Notifier::wake_all`]), and an index older than [`RECHECK`] is read again
//! at the next look, whichever waits it wakes (so a lost change costs at most [`RECHECK`] and
//! one wait, never a record: the device's next wait or periodic sync reads the index again). No
//! wait holds a database connection or a request's turn while it waits.
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

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use sitetrail_sync_wire::{Series, SeriesHead};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_postgres::{AsyncMessage, NoTls};
use uuid::Uuid;

/// The channel pushes notify and hubs listen on.
pub const CHANNEL: &str = "sitetrail_records";

/// Waits of one account answered at once past a cap, per second and process; past it, each
/// waits for its slot (at most [`MAX_REFUSAL_DELAY`]).
pub const REFUSALS_PER_SECOND: u32 = 10;

/// The longest a wait past a cap waits for its slot.
pub const MAX_REFUSAL_DELAY: Duration = Duration::from_millis(sitetrail_sync_wire::limits::MAX_WAIT_MS);

/// An account's index kept longer than this is read again at the next look: the fallback for a
/// notification lost without the listening connection noticing.
pub const RECHECK: Duration = Duration::from_millis(sitetrail_sync_wire::limits::MAX_WAIT_MS);

/// The longest `NOTIFY` payload sent with heads (PostgreSQL refuses past 8,000 bytes); a push
/// whose heads do not fit sends the bare account ("look again").
pub const MAX_PAYLOAD: usize = 7_900;

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

/// A notification's payload: the account, then each head that moved as `device:series:last_idx`,
/// separated by spaces (series names are `[a-z0-9_-]`); the bare account when `heads` is empty or
/// does not fit in [`MAX_PAYLOAD`].
pub fn payload(account: Uuid, heads: &[SeriesHead]) -> String {
    use std::fmt::Write as _;
    let mut text = account.to_string();
    for head in heads {
        let _ = write!(text, " {}:{}:{}", head.device_id, head.series, head.last_idx);
    }
    if text.len() > MAX_PAYLOAD {
        return account.to_string();
    }
    text
}

/// What a notification says: the account, and the heads that moved (`None`: look again, the
/// bare account of a delete or of a push whose heads did not fit, or anything not understood).
/// `None` when it names no account.
pub fn parse_payload(text: &str) -> Option<(Uuid, Option<Vec<SeriesHead>>)> {
    let mut words = text.split(' ');
    let account = Uuid::try_parse(words.next()?).ok()?;
    let heads: Option<Vec<SeriesHead>> = words
        .map(|word| {
            let mut parts = word.split(':');
            let head = SeriesHead {
                device_id: Uuid::try_parse(parts.next()?).ok()?,
                series: Series::new(parts.next()?).ok()?,
                last_idx: parts.next()?.parse().ok()?,
            };
            parts.next().is_none().then_some(head)
        })
        .collect();
    Some((account, heads.filter(|h| !h.is_empty())))
}

/// What a wait waits for: the records of the other devices' `series` adding up to more than
/// `seen` (`sitetrail_sync_wire::records_of_others`).
#[derive(Clone, Debug)]
pub struct Asker {
    /// The asking device (`None`: every device counts).
    pub device: Option<Uuid>,
    /// The series counted.
    pub series: Series,
    /// How many records of the others' `series` the asker holds.
    pub seen: u64,
}

/// What a look found: the account's index, and whether the asker is behind it.
pub struct Look {
    /// The index as of the look.
    pub index: Arc<Vec<SeriesHead>>,
    /// The others' records add up to more than the asker has seen: answer now.
    pub behind: bool,
}

/// An account's index as known in this process: read once, merged with each notification since.
struct Known {
    heads: BTreeMap<(Uuid, Series), u64>,
    /// The sum of each series' heads over all devices.
    totals: HashMap<Series, u128>,
    /// The heads in answer order (by device, then series).
    list: Arc<Vec<SeriesHead>>,
    read_at: Instant,
}

impl Known {
    fn new(read: Vec<SeriesHead>, read_at: Instant) -> Known {
        let mut known = Known {
            heads: BTreeMap::new(),
            totals: HashMap::new(),
            list: Arc::new(Vec::new()),
            read_at,
        };
        for head in read {
            known.merge(&head);
        }
        known.list = known.listed();
        known
    }

    /// Takes `head` in if it is ahead of what is known; true if it was.
    fn merge(&mut self, head: &SeriesHead) -> bool {
        let known = self
            .heads
            .entry((head.device_id, head.series.clone()))
            .or_insert(0);
        if head.last_idx <= *known {
            return false;
        }
        let gained = u128::from(head.last_idx - *known);
        *known = head.last_idx;
        *self.totals.entry(head.series.clone()).or_insert(0) += gained;
        true
    }

    /// Takes `heads` in; true if any was ahead (the list is then rebuilt).
    fn merge_all(&mut self, heads: &[SeriesHead]) -> bool {
        let mut moved = false;
        for head in heads {
            moved |= self.merge(head);
        }
        if moved {
            self.list = self.listed();
        }
        moved
    }

    fn listed(&self) -> Arc<Vec<SeriesHead>> {
        Arc::new(
            self.heads
                .iter()
                .map(|((device_id, series), last_idx)| SeriesHead {
                    device_id: *device_id,
                    series: series.clone(),
                    last_idx: *last_idx,
                })
                .collect(),
        )
    }

    /// `records_of_others` over this index, without a pass over every head: the series' total
    /// less the asker's own head (`own`: the asker's device and the series).
    fn others(&self, series: &Series, own: Option<&(Uuid, Series)>) -> u64 {
        let total = self.totals.get(series).copied().unwrap_or(0);
        let own = own
            .and_then(|key| self.heads.get(key))
            .copied()
            .map_or(0, u128::from);
        u64::try_from(total - own).unwrap_or(u64::MAX)
    }
}

/// A wait registered on its account's index: woken once the index puts it behind.
struct Waiter {
    series: Series,
    /// The asking device's own head's key, if it named itself.
    own: Option<(Uuid, Series)>,
    seen: u64,
    wake: Arc<Notify>,
}

impl Waiter {
    fn new(asker: &Asker, wake: Arc<Notify>) -> Waiter {
        Waiter {
            series: asker.series.clone(),
            own: asker.device.map(|d| (d, asker.series.clone())),
            seen: asker.seen,
            wake,
        }
    }

    fn is_behind(&self, known: &Known) -> bool {
        known.others(&self.series, self.own.as_ref()) > self.seen
    }
}

/// What the waits of one account share.
#[derive(Default)]
struct AccountState {
    /// `None` until read, and after a look-again.
    known: Option<Known>,
    /// Moved by each look-again: a read that started before one is not kept.
    epoch: u64,
    /// A read is under way: heads notified meanwhile are merged into its result.
    reading: bool,
    pending: Vec<SeriesHead>,
    /// The waits of the account not yet behind, by [`Watch`] id.
    waiters: HashMap<u64, Waiter>,
}

impl AccountState {
    /// Wakes (and unregisters) the waits `known` puts behind; how many.
    fn wake_behind(&mut self) -> u64 {
        let AccountState { known, waiters, .. } = self;
        let Some(known) = known.as_ref() else {
            return 0;
        };
        let mut woken = 0;
        waiters.retain(|_, waiter| {
            if waiter.is_behind(known) {
                waiter.wake.notify_one();
                woken += 1;
                false
            } else {
                true
            }
        });
        woken
    }

    /// Look again: drops the index and wakes every wait of the account.
    fn forget(&mut self) -> u64 {
        self.known = None;
        self.epoch += 1;
        self.pending.clear();
        let woken = self.waiters.len() as u64;
        for (_, waiter) in self.waiters.drain() {
            waiter.wake.notify_one();
        }
        woken
    }
}

/// What the waits of one account share: its index and who waits on it.
#[derive(Default)]
pub struct Shared {
    state: Mutex<AccountState>,
    /// One read of the index at a time (the other waits of the account wait for it and share it).
    reading: tokio::sync::Mutex<()>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, AccountState> {
        // Each change to the state is whole before the lock is let go: a panic elsewhere cannot
        // leave it half-written.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
    /// Every wait, for the shutdown.
    all: Notify,
    closed: AtomicBool,
    next_watch: AtomicU64,
}

/// One registered wait: [`Watch::look`] at the index, then [`Watch::woken`]; unregisters when
/// dropped.
pub struct Watch {
    notifier: Arc<Notifier>,
    account: Uuid,
    address: Option<IpAddr>,
    /// Registered by [`Notifier::try_watch`]: counted against the caps.
    counted: bool,
    shared: Arc<Shared>,
    id: u64,
    wake: Arc<Notify>,
}

impl Notifier {
    fn accounts(&self) -> MutexGuard<'_, HashMap<Uuid, (Arc<Shared>, usize)>> {
        // The map holds counters only: a panic elsewhere cannot leave it half-written.
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A notifier whose waits are capped by `caps`.
    pub fn with_caps(caps: WaitCaps) -> Notifier {
        Notifier {
            caps,
            ..Notifier::default()
        }
    }

    fn new_watch(
        self: &Arc<Self>,
        account: Uuid,
        address: Option<IpAddr>,
        counted: bool,
        shared: Arc<Shared>,
    ) -> Watch {
        Watch {
            notifier: self.clone(),
            account,
            address,
            counted,
            shared,
            id: self.next_watch.fetch_add(1, Ordering::Relaxed),
            wake: Arc::new(Notify::new()),
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
        self.new_watch(account, None, false, shared)
    }

    /// Registers a wait for `account` from `address`, unless that would pass a cap.
    pub fn try_watch(self: &Arc<Self>, account: Uuid, address: Option<IpAddr>) -> Result<Watch, WaitRefused> {
        let shared = {
            let mut accounts = self.accounts();
            let mut addresses = self.addresses.lock().unwrap_or_else(PoisonError::into_inner);
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
            entry.0.clone()
        };
        Ok(self.new_watch(account, address, true, shared))
    }

    /// How long a wait of `account` refused by a cap waits before it is answered: nothing while
    /// the account's refusals in this process come at most [`REFUSALS_PER_SECOND`] a second, else
    /// until its slot (at most [`MAX_REFUSAL_DELAY`]).
    pub fn refusal_delay(&self, account: Uuid) -> Duration {
        self.refusal_delay_at(account, tokio::time::Instant::now())
    }

    /// [`Notifier::refusal_delay`] at `now`.
    fn refusal_delay_at(&self, account: Uuid, now: tokio::time::Instant) -> Duration {
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        if refusals.len() > 10_000 {
            // Accounts whose slots are past: nothing to remember.
            refusals.retain(|_, slot| *slot > now);
        }
        let slot = refusals.entry(account).or_insert(now);
        let start = (*slot).max(now);
        *slot = start + Duration::from_secs(1) / REFUSALS_PER_SECOND;
        (start - now).min(MAX_REFUSAL_DELAY)
    }

    fn shared(&self, account: Uuid) -> Option<Arc<Shared>> {
        self.accounts().get(&account).map(|(shared, _)| shared.clone())
    }

    /// `account`'s series `heads` moved (a push stored records): merged into the account's index
    /// if this process keeps one, waking only the waits it puts behind.
    pub fn changed(&self, account: Uuid, heads: &[SeriesHead]) {
        let Some(shared) = self.shared(account) else {
            return;
        };
        let woken = {
            let mut state = shared.state();
            if state.reading {
                state.pending.extend_from_slice(heads);
            }
            // Nothing new (this process's own push, heard again through LISTEN): no pass.
            let moved = state.known.as_mut().is_some_and(|known| known.merge_all(heads));
            if moved {
                state.wake_behind()
            } else {
                0
            }
        };
        crate::metrics::METRICS.waits_woken(woken);
    }

    /// Look again at `account`: its index is read anew and all its waits in this process woken
    /// (after a delete, or a change whose heads are not known).
    pub fn wake(&self, account: Uuid) {
        if let Some(shared) = self.shared(account) {
            let woken = shared.state().forget();
            crate::metrics::METRICS.waits_woken(woken);
        }
    }

    /// Look again at every account (after a reconnect: notifications may have been lost).
    pub fn wake_all(&self) {
        let all: Vec<Arc<Shared>> = self.accounts().values().map(|(s, _)| s.clone()).collect();
        let woken: u64 = all.iter().map(|shared| shared.state().forget()).sum();
        crate::metrics::METRICS.waits_woken(woken);
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

    /// How many waits of `account` are registered to be woken.
    #[cfg(test)]
    fn registered(&self, account: Uuid) -> usize {
        self.shared(account)
            .map_or(0, |shared| shared.state().waiters.len())
    }

    /// Makes `account`'s index look read `by` earlier than it was.
    #[cfg(test)]
    fn age(&self, account: Uuid, by: Duration) {
        if let Some(shared) = self.shared(account) {
            if let Some(known) = shared.state().known.as_mut() {
                known.read_at = known.read_at.checked_sub(by).expect("a clock past `by`");
            }
        }
    }

    /// How many waits are registered (for tests and the idle measurement).
    pub fn waiting(&self) -> usize {
        self.accounts().values().map(|(_, n)| n).sum()
    }
}

impl Watch {
    /// The account's index and whether `asker` is behind it; if it is not, the wait is registered
    /// to be woken ([`Watch::woken`]) once a change puts it behind. The index is the one this
    /// process keeps for the account, read by `read` when there is none (or it is older than
    /// [`RECHECK`]); the other waits of the account wait for that read and share it.
    pub async fn look<F, R, E>(&self, asker: &Asker, mut read: F) -> Result<Look, E>
    where
        F: FnMut() -> R,
        R: std::future::Future<Output = Result<Vec<SeriesHead>, E>>,
    {
        loop {
            if let Some(look) = self.look_known(asker) {
                return Ok(look);
            }
            let _reading = self.shared.reading.lock().await;
            if let Some(look) = self.look_known(asker) {
                return Ok(look);
            }
            let epoch = {
                let mut state = self.shared.state();
                state.reading = true;
                state.pending.clear();
                state.epoch
            };
            let mut underway = ReadUnderway {
                shared: &self.shared,
                done: false,
            };
            let read = read().await;
            let woken = {
                let mut state = self.shared.state();
                state.reading = false;
                underway.done = true;
                let pending = std::mem::take(&mut state.pending);
                let heads = read?;
                if state.epoch != epoch {
                    // Told to look again while reading: this read may predate what was lost.
                    continue;
                }
                let mut known = Known::new(heads, Instant::now());
                known.merge_all(&pending);
                state.known = Some(known);
                // A read after RECHECK: what it finds may put waits behind that no
                // notification woke.
                state.wake_behind()
            };
            crate::metrics::METRICS.waits_woken(woken);
        }
    }

    /// [`Watch::look`] at the index kept, if there is one fresh enough.
    fn look_known(&self, asker: &Asker) -> Option<Look> {
        let mut state = self.shared.state();
        let known = state.known.as_ref().filter(|k| k.read_at.elapsed() < RECHECK)?;
        let waiter = Waiter::new(asker, self.wake.clone());
        let look = Look {
            index: known.list.clone(),
            behind: waiter.is_behind(known),
        };
        if look.behind {
            state.waiters.remove(&self.id);
        } else {
            state.waiters.insert(self.id, waiter);
        }
        Some(look)
    }

    /// Completes once a change puts the wait behind (or the account is to be looked at again),
    /// at once if one did since the last [`Watch::look`] or the hub is stopping.
    pub async fn woken(&self) {
        let all = self.notifier.all.notified();
        tokio::pin!(all);
        all.as_mut().enable();
        if self.notifier.is_closed() {
            return;
        }
        tokio::select! {
            () = self.wake.notified() => {}
            () = all => {}
        }
    }
}

/// A read of the index under way: if its wait is dropped meanwhile (the client went away), the
/// heads kept for it are let go.
struct ReadUnderway<'a> {
    shared: &'a Shared,
    done: bool,
}

impl Drop for ReadUnderway<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.shared.state();
            state.reading = false;
            state.pending.clear();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.shared.state().waiters.remove(&self.id);
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
                .unwrap_or_else(PoisonError::into_inner);
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
/// `notifier`'s waits on each notification ([`parse_payload`]); reconnects with backoff when the connection breaks.
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
                            Some(Ok(AsyncMessage::Notification(n))) => match parse_payload(n.payload()) {
                                Some((account, Some(heads))) => woken.changed(account, &heads),
                                Some((account, None)) => woken.wake(account),
                                None => {}
                            },
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
                    "the connection listening for new records ended; long-polls wait for their timeout until it is back, then look again"
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
    use std::sync::atomic::AtomicUsize;

    fn head(device: Uuid, series: &str, last_idx: u64) -> SeriesHead {
        SeriesHead {
            device_id: device,
            series: Series::new(series).unwrap(),
            last_idx,
        }
    }

    fn asker(device: Uuid, seen: u64) -> Asker {
        Asker {
            device: Some(device),
            series: Series::new("visits").unwrap(),
            seen,
        }
    }

    /// A read of the index that answers `heads` and counts itself.
    fn reader(
        heads: &Arc<Mutex<Vec<SeriesHead>>>,
        reads: &Arc<AtomicUsize>,
    ) -> impl FnMut() -> std::future::Ready<Result<Vec<SeriesHead>, ()>> {
        let (heads, reads) = (heads.clone(), reads.clone());
        move || {
            reads.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(heads.lock().unwrap().clone()))
        }
    }

    async fn is_woken(watch: &Watch) -> bool {
        tokio::time::timeout(Duration::from_millis(50), watch.woken())
            .await
            .is_ok()
    }

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

    #[test]
    fn a_payload_carries_the_heads_or_says_look_again() {
        let account = Uuid::now_v7();
        let heads = vec![
            head(Uuid::now_v7(), "visits", 7),
            head(Uuid::now_v7(), "forget-2", 1),
        ];
        assert_eq!(
            parse_payload(&payload(account, &heads)),
            Some((account, Some(heads)))
        );
        // A delete's (and an older hub's) bare account: look again.
        assert_eq!(parse_payload(&account.to_string()), Some((account, None)));
        assert_eq!(parse_payload(&payload(account, &[])), Some((account, None)));
        // Too many heads for PostgreSQL's 8,000 bytes: the bare account.
        let many: Vec<SeriesHead> = (0..200).map(|i| head(Uuid::now_v7(), "visits", i + 1)).collect();
        assert_eq!(payload(account, &many), account.to_string());
        // Anything not understood after the account: look again; no account: nothing.
        for bad in [
            format!("{account} nope"),
            format!("{account} {}:visits", Uuid::now_v7()),
            format!("{account} {}:Bad:1", Uuid::now_v7()),
            format!("{account} {}:visits:-1", Uuid::now_v7()),
            format!("{account} {}:visits:1:2", Uuid::now_v7()),
        ] {
            assert_eq!(parse_payload(&bad), Some((account, None)), "{bad}");
        }
        assert_eq!(parse_payload("x"), None);
        assert_eq!(parse_payload(""), None);
    }

    #[tokio::test]
    async fn a_change_wakes_only_the_waits_it_puts_behind_and_they_read_nothing() {
        let n = Arc::new(Notifier::default());
        let (account, stranger) = (Uuid::now_v7(), Uuid::now_v7());
        let (laptop, desktop, phone) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let stored = Arc::new(Mutex::new(vec![head(laptop, "visits", 5)]));
        let reads = Arc::new(AtomicUsize::new(0));
        let mut read = reader(&stored, &reads);

        // 100 waits that will not be behind after the next record (they wait for more than 6),
        // and one that will (it has seen the laptop's 5).
        let ahead: Vec<Watch> = (0..100).map(|_| n.watch(account)).collect();
        for w in &ahead {
            assert!(!w.look(&asker(desktop, 6), &mut read).await.unwrap().behind);
        }
        let behind = n.watch(account);
        let look = behind.look(&asker(phone, 5), &mut read).await.unwrap();
        assert!(!look.behind);
        assert_eq!(look.index.as_ref(), &*stored.lock().unwrap());
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "the waits of an account share one read"
        );
        // A device's own records do not count for it.
        let own = n.watch(account);
        assert!(!own.look(&asker(laptop, 0), &mut read).await.unwrap().behind);

        // Another account's change wakes nothing here, nor does a series nobody waits for.
        n.changed(stranger, &[head(Uuid::now_v7(), "visits", 9)]);
        n.changed(account, &[head(laptop, "ops", 3)]);
        assert!(!is_woken(&behind).await);

        // The laptop's 6th record wakes the one wait it puts behind, which answers from the
        // heads notified without a read.
        *stored.lock().unwrap() = vec![head(laptop, "ops", 3), head(laptop, "visits", 6)];
        n.changed(account, &[head(laptop, "visits", 6)]);
        assert!(is_woken(&behind).await);
        let look = behind.look(&asker(phone, 5), &mut read).await.unwrap();
        assert!(look.behind);
        let mut index = look.index.to_vec();
        index.sort_by(|a, b| a.series.cmp(&b.series));
        assert_eq!(index, *stored.lock().unwrap());
        assert_eq!(
            n.registered(account),
            101,
            "only the wait the record puts behind left the list (the 100 and the own one wait on)"
        );
        // The 7th wakes the 100; never the laptop's own wait.
        n.changed(account, &[head(laptop, "visits", 7)]);
        for w in &ahead {
            assert!(is_woken(w).await);
            assert!(w.look(&asker(desktop, 6), &mut read).await.unwrap().behind);
        }
        assert!(!is_woken(&own).await, "a device's own records do not wake it");
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "woken waits answer from the heads notified"
        );
        drop(ahead);

        // A burst of pushes wakes a wait once; the same heads again (the push heard back through
        // LISTEN) wake nothing.
        let w = n.watch(account);
        assert!(!w.look(&asker(desktop, 7), &mut read).await.unwrap().behind);
        for i in 8..12 {
            n.changed(account, &[head(laptop, "visits", i)]);
        }
        n.changed(account, &[head(laptop, "visits", 8)]);
        assert!(is_woken(&w).await);
        assert!(!is_woken(&w).await, "woken once for the burst");
        let look = w.look(&asker(desktop, 7), &mut read).await.unwrap();
        assert!(look.behind);
        let visits = look.index.iter().find(|h| h.series.as_str() == "visits").unwrap();
        assert_eq!(visits.last_idx, 11);
        drop((w, behind, own));
        assert_eq!(n.waiting(), 0);
        assert!(n.accounts().is_empty());
    }

    #[tokio::test]
    async fn heads_notified_during_a_read_are_kept_and_a_look_again_reads_anew() {
        let n = Arc::new(Notifier::default());
        let account = Uuid::now_v7();
        let (laptop, desktop) = (Uuid::now_v7(), Uuid::now_v7());
        let w = n.watch(account);
        // The read's snapshot predates a push whose notification comes while it runs.
        let look = w
            .look(&asker(desktop, 1), || {
                n.changed(account, &[head(laptop, "visits", 2)]);
                std::future::ready(Ok::<_, ()>(vec![head(laptop, "visits", 1)]))
            })
            .await
            .unwrap();
        assert!(look.behind, "the head notified during the read counts");
        assert_eq!(look.index[0].last_idx, 2);

        // A look-again (a delete) while waiting: woken, and the next look reads.
        let stored = Arc::new(Mutex::new(vec![head(laptop, "visits", 2)]));
        let reads = Arc::new(AtomicUsize::new(0));
        let mut read = reader(&stored, &reads);
        assert!(!w.look(&asker(desktop, 2), &mut read).await.unwrap().behind);
        assert_eq!(reads.load(Ordering::SeqCst), 0);
        stored.lock().unwrap().clear();
        n.wake(account);
        assert!(is_woken(&w).await);
        assert!(w
            .look(&asker(desktop, 2), &mut read)
            .await
            .unwrap()
            .index
            .is_empty());
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_lost_notification_is_found_on_reconnect_and_by_the_recheck() {
        let n = Arc::new(Notifier::default());
        let account = Uuid::now_v7();
        let (laptop, desktop) = (Uuid::now_v7(), Uuid::now_v7());
        let stored = Arc::new(Mutex::new(vec![head(laptop, "visits", 1)]));
        let reads = Arc::new(AtomicUsize::new(0));
        let mut read = reader(&stored, &reads);
        let w = n.watch(account);
        assert!(!w.look(&asker(desktop, 1), &mut read).await.unwrap().behind);

        // A push whose notification never came (the LISTEN connection broke): the reconnect
        // looks again.
        *stored.lock().unwrap() = vec![head(laptop, "visits", 2)];
        assert!(!is_woken(&w).await);
        n.wake_all();
        assert!(is_woken(&w).await);
        assert!(w.look(&asker(desktop, 1), &mut read).await.unwrap().behind);

        // Lost without a reconnect: the index kept past RECHECK is read again at the next look,
        // and that read wakes the waits it puts behind.
        let other = n.watch(account);
        assert!(!w.look(&asker(desktop, 2), &mut read).await.unwrap().behind);
        assert!(!other.look(&asker(desktop, 2), &mut read).await.unwrap().behind);
        *stored.lock().unwrap() = vec![head(laptop, "visits", 3)];
        n.age(account, RECHECK / 2);
        assert!(
            !w.look(&asker(desktop, 2), &mut read).await.unwrap().behind,
            "fresh: kept"
        );
        let before = reads.load(Ordering::SeqCst);
        n.age(account, RECHECK);
        assert!(w.look(&asker(desktop, 2), &mut read).await.unwrap().behind);
        assert_eq!(reads.load(Ordering::SeqCst), before + 1);
        assert!(is_woken(&other).await, "the recheck's read woke the other wait");
    }

    #[tokio::test]
    async fn a_closed_notifier_does_not_wait() {
        let n = Arc::new(Notifier::default());
        let watch = n.watch(Uuid::now_v7());
        let waiting = {
            let n = n.clone();
            tokio::spawn(async move {
                n.watch(Uuid::now_v7()).woken().await;
            })
        };
        tokio::task::yield_now().await;
        n.close();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("close wakes a wait")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), watch.woken())
            .await
            .expect("a closed notifier does not wait");
    }
}
