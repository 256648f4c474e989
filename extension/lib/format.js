// How the extension says a duration: "45 s", "12 min", "1 h 05 min", the same words as the app
// (ui/js/dom.js fmtSpent). The extension is packaged and loaded on its own, so it cannot import the
// app's UI; both are checked against the same examples (extension/test/format.test.js and the
// app's e2e tests).

/** A duration in milliseconds as people read it; "0 s" for zero. */
export function fmtSpent(ms) {
  const s = Math.round(Math.max(0, ms) / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
}

/** The popup's line for a site Sitetrail knows: "News · 25 min today". */
export function siteLine(site) {
  if (!site) return '';
  const category = site.category_name || 'Not classified yet';
  const ms = site.today_active_ms + site.today_estimated_ms;
  if (ms > 0) return `${category} · ${site.today_active_ms > 0 ? '' : '≈ '}${fmtSpent(ms)} today`;
  if (site.today_visits > 0) return `${category} · ${site.today_visits} visit${site.today_visits === 1 ? '' : 's'} today, no time measured yet`;
  return `${category} · not visited today`;
}
