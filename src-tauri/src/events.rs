//! Events the backend sends to the UI, and the task that turns committed store changes into them.
//!
//! Every event name lives here. The store notifies [`sitetrail::Change`]s only after the
//! transaction that made them committed; [`forward_changes`] gathers the changes of a short window
//! into one [`StoreChanged`] so that a worker classifying dozens of websites a second costs the UI
//! at most a few refreshes a second.

use std::time::Duration;

use serde::Serialize;
use sitetrail::Change;
use tauri::{Emitter, Runtime};
use tokio::sync::broadcast::{self, error::RecvError};

/// Something in the database changed (payload: [`StoreChanged`]).
pub const STORE_CHANGED: &str = "store-changed";
/// Progress of a browser import (payload: the import's progress record).
pub const IMPORT_PROGRESS: &str = "import-progress";
/// Progress of building the search index of an upgraded database (payload:
/// `sitetrail::search::IndexStatus`).
pub const SEARCH_INDEX_PROGRESS: &str = "search-index-progress";

/// Changes gathered over one window: at most one event per window reaches the UI.
pub const COALESCE_WINDOW: Duration = Duration::from_millis(300);

/// Which parts of the data changed since the last event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreChanged {
    /// Visits were added.
    pub visits: bool,
    /// A website's category changed.
    pub websites: bool,
    /// A classification job changed state.
    pub outbox: bool,
    /// The worker paused or resumed.
    pub worker: bool,
}

impl StoreChanged {
    /// Everything, for when changes were missed (the receiver lagged).
    pub const ALL: StoreChanged = StoreChanged {
        visits: true,
        websites: true,
        outbox: true,
        worker: true,
    };

    /// Adds `change` to the set.
    pub fn add(&mut self, change: Change) {
        match change {
            Change::Visits => self.visits = true,
            Change::Websites => self.websites = true,
            Change::Outbox => self.outbox = true,
            Change::Worker => self.worker = true,
        }
    }
}

/// Waits for the next change; `None` once the store is gone.
async fn next(rx: &mut broadcast::Receiver<Change>, into: &mut StoreChanged) -> Option<()> {
    match rx.recv().await {
        Ok(c) => into.add(c),
        Err(RecvError::Lagged(_)) => *into = StoreChanged::ALL,
        Err(RecvError::Closed) => return None,
    }
    Some(())
}

/// Forwards committed changes to the UI as [`STORE_CHANGED`] events, one per
/// [`COALESCE_WINDOW`] at most, until the store is dropped.
pub async fn forward_changes<R: Runtime>(app: tauri::AppHandle<R>, mut rx: broadcast::Receiver<Change>) {
    loop {
        let mut batch = StoreChanged::default();
        if next(&mut rx, &mut batch).await.is_none() {
            return;
        }
        let window = tokio::time::sleep(COALESCE_WINDOW);
        tokio::pin!(window);
        loop {
            tokio::select! {
                _ = &mut window => break,
                more = next(&mut rx, &mut batch) => if more.is_none() { break },
            }
        }
        if let Err(e) = app.emit(STORE_CHANGED, batch) {
            tracing::warn!(error = %e, "could not send a change event to the UI");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NAME = 'value'` pairs of `export const` string constants in JavaScript source.
    fn js_string_consts(src: &str) -> std::collections::BTreeMap<String, String> {
        src.lines()
            .filter_map(|l| l.trim().strip_prefix("export const "))
            .filter_map(|l| {
                let (name, rest) = l.split_once(" = '")?;
                Some((name.to_owned(), rest.split_once("';")?.0.to_owned()))
            })
            .collect()
    }

    /// The UI names the events in `ui/js/api.js`: the same names and values as here, every one.
    #[test]
    fn the_ui_knows_every_event_by_the_same_name() {
        let ui = js_string_consts(include_str!("../../ui/js/api.js"));
        let ours = [
            ("STORE_CHANGED", STORE_CHANGED),
            ("IMPORT_PROGRESS", IMPORT_PROGRESS),
            ("SEARCH_INDEX_PROGRESS", SEARCH_INDEX_PROGRESS),
        ];
        for (name, value) in ours {
            assert_eq!(
                ui.get(name).map(String::as_str),
                Some(value),
                "{name} in ui/js/api.js"
            );
        }
        // And nothing the UI listens to that is not sent from here.
        let rust_names: Vec<&str> = include_str!("events.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter(|l| l.contains(": &str = "))
            .filter_map(|l| l.split(':').next())
            .collect();
        assert_eq!(
            rust_names.len(),
            ours.len(),
            "every event constant here is checked above"
        );
        let ui_events: Vec<&String> = ui
            .keys()
            .filter(|k| ours.iter().all(|(n, _)| n != *k))
            .filter(|k| k.ends_with("_CHANGED") || k.ends_with("_PROGRESS"))
            .collect();
        assert!(
            ui_events.is_empty(),
            "the UI names events the app never sends: {ui_events:?}"
        );
    }

    #[test]
    fn a_batch_remembers_every_kind_of_change() {
        let mut b = StoreChanged::default();
        b.add(Change::Outbox);
        b.add(Change::Outbox);
        b.add(Change::Websites);
        assert_eq!(
            b,
            StoreChanged {
                outbox: true,
                websites: true,
                ..StoreChanged::default()
            }
        );
    }
}
