// Moving between views from inside one (a click on a category opens the history filtered to it, a
// click on a website opens its page). Views do not import app.js: they ask through this event,
// and app.js shows the view and hands it what to open.
const NAVIGATE = 'sitetrail:navigate';

/** Opens `view` with `what` (the view's `open(what)` decides what that means). */
export function go(view, what = {}) {
  document.dispatchEvent(new CustomEvent(NAVIGATE, { detail: { view, what } }));
}

/** Calls `f(view, what)` for every navigation asked for. */
export function onNavigate(f) {
  document.addEventListener(NAVIGATE, (e) => f(e.detail.view, e.detail.what));
}
