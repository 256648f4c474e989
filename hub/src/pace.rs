//! Pushes of an account refused for a quota, paced: once a push is refused 507, the account's
//! next pushes in this process wait for a slot ([`REFUSED_PUSHES_PER_SECOND`]) before their
//! bodies are read, until one stores records again.
//!
//! Why: a push can only be refused for a quota once its body is read and parsed (a repeated push
//! of records already stored must still be acknowledged, so its size alone says nothing), and a
//! client that pushes 8 MiB bodies back to back at its quota spends the hub's CPU on parsing
//! what is refused (the load bench, `hub/benches/load.rs`). A device at its quota stops pushing
//! until space is made, so it never waits for a slot.
//!
//! The account is the one the `Authorization` header names (as for [`crate::turns`]): only an
//! account that was refused, after its login was checked, is ever paced.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

/// Pushes a second, per process, of an account refused for a quota.
pub const REFUSED_PUSHES_PER_SECOND: u32 = 1;

/// The longest a push waits for its slot.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// After this long without a push, an account's refusal is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// The accounts refused lately, and the slot of each one's next push.
static REFUSED: LazyLock<Mutex<HashMap<Uuid, Instant>>> = LazyLock::new(Mutex::default);

fn refused() -> std::sync::MutexGuard<'static, HashMap<Uuid, Instant>> {
    // The map holds instants only: a panic elsewhere cannot leave it half-written.
    REFUSED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A push of `account` was refused for a quota.
pub fn note_refused(account: Uuid) {
    note_refused_at(account, Instant::now());
}

fn note_refused_at(account: Uuid, now: Instant) {
    let mut refused = refused();
    if refused.len() > 10_000 {
        refused.retain(|_, slot| now.saturating_duration_since(*slot) < FORGET_AFTER);
    }
    refused
        .entry(account)
        .or_insert(now + Duration::from_secs(1) / REFUSED_PUSHES_PER_SECOND);
}

/// A push of `account` stored records: it is no longer paced.
pub fn note_stored(account: Uuid) {
    refused().remove(&account);
}

/// How long a push of `account` waits before its body is read: nothing unless the account was
/// refused for a quota lately; then until its next slot (at most [`MAX_DELAY`]).
pub fn delay(account: Uuid) -> Duration {
    delay_at(account, Instant::now())
}

fn delay_at(account: Uuid, now: Instant) -> Duration {
    let mut refused = refused();
    let Some(slot) = refused.get_mut(&account) else {
        return Duration::ZERO;
    };
    if now.saturating_duration_since(*slot) >= FORGET_AFTER {
        refused.remove(&account);
        return Duration::ZERO;
    }
    let start = (*slot).max(now);
    *slot = start + Duration::from_secs(1) / REFUSED_PUSHES_PER_SECOND;
    (start - now).min(MAX_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refused_account_is_paced_until_it_stores_again() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let step = Duration::from_secs(1) / REFUSED_PUSHES_PER_SECOND;
        let t0 = Instant::now();
        assert_eq!(delay_at(a, t0), Duration::ZERO);
        note_refused_at(a, t0);
        assert_eq!(delay_at(a, t0), step);
        assert_eq!(delay_at(a, t0), step * 2);
        assert_eq!(delay_at(b, t0), Duration::ZERO, "another account is not paced");
        // Long after, the refusal is forgotten.
        assert_eq!(delay_at(a, t0 + FORGET_AFTER * 2), Duration::ZERO);
        note_refused_at(a, t0);
        note_stored(a);
        assert_eq!(delay_at(a, t0), Duration::ZERO);
    }
}
