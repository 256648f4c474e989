//! The app's one import slot: at most one import runs at a time. Held by the app state
//! ([`crate::state`]) and taken by an import run ([`crate::import`]), below both.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// At most one import at a time, owned by the app state. A run holds an [`ImportRun`] for as long
/// as its blocking work goes, and dropping it frees the slot, so a command whose future is
/// dropped (the window closed) cannot leave the slot taken for ever.
#[derive(Debug, Default)]
pub struct ImportSlot(Arc<AtomicBool>);

/// Proof that this run has the [`ImportSlot`]; frees it when dropped.
#[derive(Debug)]
pub struct ImportRun(Arc<AtomicBool>);

impl ImportSlot {
    /// Takes the slot, or `None` while another run has it.
    pub fn try_begin(&self) -> Option<ImportRun> {
        (!self.0.swap(true, Ordering::SeqCst)).then(|| ImportRun(self.0.clone()))
    }
}

impl Drop for ImportRun {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}
