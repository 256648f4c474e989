// How the extension says a duration: "45 s", "12 min", "1 h 05 min", the same words and rounding
// as the app (ui/js/dom.js fmtSpent) and the CLI (src/cli/human.rs). The extension is packaged and
// loaded on its own, so it cannot import the app's UI; all three are tested against one table of
// examples, tests/fixtures/durations.json (here by extension/test/format.test.js).

/** A duration in milliseconds as people read it; "0 s" for zero. Under a minute, whole seconds to
 * the nearest; from 59.5 s on, whole minutes to the nearest (rounded once); halves go up. */
export function fmtSpent(ms) {
  const t = Math.max(0, Number(ms) || 0);
  const s = Math.floor((t + 500) / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor((t + 30_000) / 60_000);
  if (min < 60) return `${min} min`;
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
}

/** The mark of a figure estimated from a browser's own history (how long pages stayed open), not
 * measured: the app's and the CLI's too. */
export const ESTIMATE_MARK = '≈';

/** An estimated duration: "≈ 3 min". */
export function fmtEstimate(ms) {
  return `${ESTIMATE_MARK} ${fmtSpent(ms)}`;
}

/** The popup's line for a site Sitetrail knows: "News · 25 min today". */
export function siteLine(site) {
  if (!site) return '';
  const category = site.category_name || 'Not classified yet';
  const ms = site.today_active_ms + site.today_estimated_ms;
  if (ms > 0) return `${category} · ${site.today_active_ms > 0 ? fmtSpent(ms) : fmtEstimate(ms)} today`;
  if (site.today_visits > 0) return `${category} · ${site.today_visits} visit${site.today_visits === 1 ? '' : 's'} today, no time measured yet`;
  return `${category} · not visited today`;
}

/** A time of day in the browser's locale, hours and minutes: "14:50" (or "2:50 PM"). */
export function fmtClock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}
