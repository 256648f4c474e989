// The bridge to the Rust side: commands, events, and turning {kind, message} errors into words.
const tauri = window.__TAURI__;

/**
 * Marks a step of the first start in the page's performance timeline (`sitetrail-NAME`), once:
 * the start's report (app.js, src-tauri/src/startup.rs) names where its time went.
 */
export function markOnce(name) {
  const full = `sitetrail-${name}`;
  if (performance.getEntriesByName(full).length === 0) performance.mark(full);
}

/** Calls a backend command; rejects with the backend's {kind, message}. */
export function call(cmd, args = {}) {
  return tauri.core.invoke(cmd, args);
}

/**
 * What a person can do about a failure, by its kind: the library's one vocabulary
 * (sitetrail::ErrorKind in src/error.rs). The UI branches on `kind`, never on message text.
 */
const HINTS = {
  busy: 'Try again in a moment.',
  offline: 'Check the network and the provider\'s address.',
  rate_limited: 'The provider asked to slow down; try again later.',
  provider_failed: 'The provider failed; try again later.',
  needs_user: 'Check the API key, the quota and the model.',
};

/** The kind of an error from `call` (`invalid_input`, `not_found`, `offline`, ...), or null. */
export function kindOf(err) {
  return err && typeof err === 'object' && typeof err.kind === 'string' ? err.kind : null;
}

/** Plain words for an error from `call` (or anything thrown), with what to do where that helps. */
export function describe(err) {
  if (err && typeof err === 'object' && typeof err.message === 'string') {
    const hint = HINTS[kindOf(err)];
    return hint ? `${err.message} ${hint}` : err.message;
  }
  return String(err);
}

/** Name of the event the backend sends after committed changes (see src-tauri/src/events.rs). */
export const STORE_CHANGED = 'store-changed';
/** Name of the browser-import progress event. */
export const IMPORT_PROGRESS = 'import-progress';
/** Name of the event that reports the search index being built (an upgraded database). */
export const SEARCH_INDEX_PROGRESS = 'search-index-progress';
/** Name of the event the background sync sends after each try (payload: {report, error}). */
export const SYNC_STATUS = 'sync-status';

/** Listens to a backend event; returns a promise of the unlisten function. */
export function listen(name, handler) {
  return tauri.event.listen(name, (e) => handler(e.payload));
}
