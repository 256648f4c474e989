//! Sending what this device has for the account: the backfill of its own visits, then every
//! sealed and queued operation, healing the device when the hub's series no longer fits
//! ([`super::heal`]). Used by a sync ([`super::engine`]) and by leaving ([`super::link`]).

use std::path::Path;

use super::client::hub_lost_this_device;
use super::session::Session;
use super::{heal, push, reconcile};
use crate::blocking;
use crate::error::Result;
use crate::store::Store;

/// Queues this device's own visits the account may lack (in batches), to the last one.
async fn backfill(store: &Store) -> Result<()> {
    loop {
        let st = store.clone();
        if blocking::run(move || reconcile::backfill_step(&st)).await? {
            return Ok(());
        }
    }
}

/// Sends everything waiting (the backfill, then every sealed and queued operation). A push the
/// hub refuses as not fitting this device's series heals the device ([`heal`]) and sends again,
/// as the new device; a hub with no record of this device at all (restored from a dump taken
/// before it registered) gets it registered again under its id, once, and the push again.
/// Returns the session (a new one after a heal), whether it healed, and the records pushed.
pub(crate) async fn send_waiting(
    mut s: Session,
    store: &Store,
    key_dir: &Path,
) -> (Session, bool, Result<u64>) {
    let mut pushed = 0;
    let mut healed = false;
    let mut registered = false;
    loop {
        if let Err(e) = backfill(store).await {
            return (s, healed, Err(e));
        }
        match push::push(&s, store).await {
            Ok(push::Pushed::All(n)) => return (s, healed, Ok(pushed + n)),
            Ok(push::Pushed::Mismatch { pushed: n, why }) => {
                pushed += n;
                if healed {
                    return (s, healed, Err(heal::still_mismatched(why)));
                }
                match heal::heal(&s, store, key_dir, why).await {
                    Ok(new) => {
                        s = new;
                        healed = true;
                    }
                    Err(e) => return (s, healed, Err(e)),
                }
            }
            Err(e) if !registered && hub_lost_this_device(&e) => {
                tracing::warn!("the hub has no record of this device: registering it again");
                registered = true;
                if let Err(e) = s.client.register_device(s.link.device_id).await {
                    return (s, healed, Err(e));
                }
            }
            Err(e) => return (s, healed, Err(e)),
        }
    }
}
