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
/// The background sync tried once (payload: `{report, error}`, the try's report or its error).
pub const SYNC_STATUS: &str = "sync-status";

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
    /// A limit or goal, the focus session or the reminder settings changed (here, in the CLI,
    /// the extension's popup, or on another device through sync).
    pub limits: bool,
}

impl StoreChanged {
    /// Everything, for when changes were missed (the receiver lagged).
    pub const ALL: StoreChanged = StoreChanged {
        visits: true,
        websites: true,
        outbox: true,
        worker: true,
        limits: true,
    };

    /// Adds `change` to the set.
    pub fn add(&mut self, change: Change) {
        match change {
            Change::Visits => self.visits = true,
            Change::Websites => self.websites = true,
            Change::Outbox => self.outbox = true,
            Change::Worker => self.worker = true,
            Change::Limits => self.limits = true,
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

    /// Every file under `dir` (from this crate's folder) whose name ends with `ext`, with its text.
    fn sources(dir: &str, ext: &str) -> Vec<(std::path::PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.to_string_lossy().ends_with(ext) {
                    let text = std::fs::read_to_string(&p).unwrap();
                    out.push((p, text));
                }
            }
        }
        assert!(!out.is_empty(), "no {ext} files under {dir}");
        out
    }

    /// The first argument of every call `name(` in `src` (the text up to its comma or bracket).
    fn first_arguments<'a>(src: &'a str, name: &str) -> Vec<&'a str> {
        src.match_indices(name)
            // `listen(` is not the end of `unlisten(`; `.emit(` follows its receiver.
            .filter(|(at, _)| {
                name.starts_with('.')
                    || !src[..*at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
            .map(|(at, _)| {
                let rest = src[at + name.len()..].trim_start();
                rest[..rest.find([',', ')']).unwrap_or(rest.len())].trim()
            })
            .collect()
    }

    /// Every event the app sends is a constant here, the UI names each in `ui/js/api.js` with the
    /// same name and value, and nothing else: every `emit` of the app (`.emit(NAME, ...)`) and
    /// every `listen` of the UI (`listen(NAME, ...)`) names one of them, never a bare string.
    #[test]
    fn the_ui_knows_every_event_by_the_same_name() {
        let ui = js_string_consts(include_str!("../../ui/js/api.js"));
        let ours = [
            ("STORE_CHANGED", STORE_CHANGED),
            ("IMPORT_PROGRESS", IMPORT_PROGRESS),
            ("SEARCH_INDEX_PROGRESS", SEARCH_INDEX_PROGRESS),
            ("SYNC_STATUS", SYNC_STATUS),
        ];
        for (name, value) in ours {
            assert_eq!(
                ui.get(name).map(String::as_str),
                Some(value),
                "{name} in ui/js/api.js"
            );
        }
        // Every string constant here is an event, and each is in the list above.
        let rust_names: Vec<&str> = include_str!("events.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter(|l| l.contains(": &str = "))
            .filter_map(|l| l.split(':').next())
            .collect();
        assert_eq!(
            rust_names,
            ours.map(|(n, _)| n),
            "every event constant here is checked above"
        );
        let is_event = |arg: &str| {
            let name = arg.rsplit("::").next().unwrap_or(arg);
            ours.iter().any(|(n, _)| *n == name)
        };
        // What the app emits: `.emit(` with one of the constants, in every source file (the
        // code, not its tests).
        let mut emits = 0;
        for (file, src) in sources("src", ".rs") {
            if file.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let src = src.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
            for arg in first_arguments(src, ".emit(") {
                emits += 1;
                assert!(
                    is_event(arg),
                    "{} emits {arg}: every event is a constant of events.rs",
                    file.display()
                );
            }
            for other in [".emit_to(", ".emit_filter(", ".emit_str("] {
                assert!(
                    !src.contains(other),
                    "{} sends an event with {other}",
                    file.display()
                );
            }
        }
        assert!(emits >= ours.len(), "every event's emit was found ({emits})");
        // What the UI listens to: `listen(` with one of api.js's constants.
        let mut listens = 0;
        for (file, src) in sources("../ui/js", ".js") {
            let defines_listen = file.ends_with("api.js");
            for arg in first_arguments(&src, "listen(") {
                if defines_listen && arg == "name" {
                    continue; // the wrapper's own parameter
                }
                listens += 1;
                assert!(
                    is_event(arg),
                    "{} listens to {arg}: every event is a constant of ui/js/api.js",
                    file.display()
                );
            }
            if !defines_listen {
                for (name, value) in js_string_consts(&src) {
                    assert!(
                        !ours.iter().any(|(_, v)| *v == value),
                        "{} names the event {value} as {name}: import it from api.js",
                        file.display()
                    );
                }
            }
        }
        assert!(
            listens >= ours.len(),
            "every event's listener was found ({listens})"
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
