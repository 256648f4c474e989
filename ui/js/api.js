// The bridge to the Rust side: commands, events, and turning {kind, message} errors into words.
const tauri = window.__TAURI__;

/** Calls a backend command; rejects with the backend's {kind, message}. */
export function call(cmd, args = {}) {
  return tauri.core.invoke(cmd, args);
}

/** Plain words for an error from `call` (or anything thrown). */
export function describe(err) {
  if (err && typeof err === 'object' && typeof err.message === 'string') return err.message;
  return String(err);
}

/** Name of the event the backend sends after committed changes (see src-tauri/src/events.rs). */
export const STORE_CHANGED = 'store-changed';
/** Name of the browser-import progress event. */
export const IMPORT_PROGRESS = 'import-progress';

/** Listens to a backend event; returns a promise of the unlisten function. */
export function listen(name, handler) {
  return tauri.event.listen(name, (e) => handler(e.payload));
}
