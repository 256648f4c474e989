//! Turns per account (`sitetrail-hub serve --max-requests-per-account`): at most so many requests
//! of one account are worked on at once in this process; the account's others wait for one of
//! its turns, in order, before they take one of the process's turns (`--max-requests`) or touch
//! the database.
//!
//! Why: the process's turns and the pool's connections are first come, first served, so without
//! this one account that sends requests by the hundred (pushes past its quota, or long-polls past
//! their cap asked again the moment they are answered) fills the queues, and every other
//! account's requests wait behind it (seen in the load bench, `hub/benches/load.rs`).
//!
//! The account is the one the `Authorization` header names, read before the login is checked
//! (checking it is itself a database query). Someone who knows an account's id but not its login
//! can therefore take that account's turns, each for one failed login check: they delay that
//! account only, where without turns per account they delay everyone. Requests without a
//! well-formed header (account creation, health) take no account turn.
//!
//! Invariants: a long-poll gives its turn back once it is registered and waits ([`Turn::release`]
//! from the handler), so waiting devices never hold their account's turns; a turn is given back
//! when its request ends, however it ends (dropped with the request); the map holds only the
//! accounts that have a request in flight or waiting.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// The turns of every account with a request in flight, in one process.
pub struct AccountTurns {
    per_account: usize,
    accounts: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
}

/// One request's turn of its account; given back when dropped or released.
pub struct Turn {
    turns: Arc<AccountTurns>,
    account: Uuid,
    held: Option<(Arc<Semaphore>, OwnedSemaphorePermit)>,
}

/// A request's turn, held by the server until the answer, and where its handler can give it back
/// (a long-poll, once it waits): a copy is carried in the request's extensions.
#[derive(Clone)]
pub struct TurnSlot(Arc<Mutex<Option<Turn>>>);

impl AccountTurns {
    /// `per_account` turns for each account (at least 1).
    pub fn new(per_account: usize) -> Arc<AccountTurns> {
        Arc::new(AccountTurns {
            per_account: per_account.max(1),
            accounts: Mutex::default(),
        })
    }

    fn accounts(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<Semaphore>>> {
        // The map holds semaphores only: a panic elsewhere cannot leave it half-written.
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits for one of `account`'s turns (in the order asked).
    pub async fn take(self: &Arc<Self>, account: Uuid) -> Turn {
        let semaphore = self
            .accounts()
            .entry(account)
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_account)))
            .clone();
        let mut turn = Turn {
            turns: self.clone(),
            account,
            held: None,
        };
        // Never closed: acquiring cannot fail. Should it, the request goes on without a turn.
        if let Ok(permit) = semaphore.clone().acquire_owned().await {
            turn.held = Some((semaphore, permit));
        } else {
            turn.forget(semaphore);
        }
        turn
    }

    /// How many accounts have a request in flight or waiting for a turn (for tests).
    pub fn accounts_in_flight(&self) -> usize {
        self.accounts().len()
    }
}

impl Turn {
    /// Drops the account's entry if nothing else holds or waits for one of its turns.
    fn forget(&self, semaphore: Arc<Semaphore>) {
        let mut accounts = self.turns.accounts();
        // The map's and ours: nobody else holds it, and new askers clone it under this lock.
        if accounts
            .get(&self.account)
            .is_some_and(|s| Arc::ptr_eq(s, &semaphore))
            && Arc::strong_count(&semaphore) == 2
        {
            accounts.remove(&self.account);
        }
    }

    /// Gives the turn back now (a long-poll about to wait).
    pub fn release(&mut self) {
        if let Some((semaphore, permit)) = self.held.take() {
            drop(permit);
            self.forget(semaphore);
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.release();
    }
}

impl TurnSlot {
    /// A slot holding `turn`.
    pub fn new(turn: Option<Turn>) -> TurnSlot {
        TurnSlot(Arc::new(Mutex::new(turn)))
    }

    /// Gives the request's account turn back, if it holds one.
    pub fn release(&self) {
        let turn = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        drop(turn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_account_past_its_turns_waits_and_others_do_not_and_the_map_empties() {
        let turns = AccountTurns::new(2);
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = turns.take(a).await;
        let mut second = turns.take(a).await;
        // A third of the same account waits; another account's does not.
        let waiting = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.take(a).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        let other = tokio::time::timeout(Duration::from_secs(5), turns.take(b))
            .await
            .expect("another account has turns of its own");
        // Released (a long-poll that waits): the waiting one goes on.
        second.release();
        let third = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a released turn is taken by the next")
            .unwrap();
        assert_eq!(turns.accounts_in_flight(), 2);
        drop((first, second, third, other));
        assert_eq!(turns.accounts_in_flight(), 0);
        // A slot gives its turn back once, however often asked.
        let slot = TurnSlot::new(Some(turns.take(a).await));
        slot.release();
        slot.release();
        assert_eq!(turns.accounts_in_flight(), 0);
    }
}
