// The extension's settings (chrome.storage.local key `settings`) and which pages are recorded.
// The popup and the options page write the settings; the service worker reacts to the change.

/** Defaults; every key is optional in storage. */
export const DEFAULTS = Object.freeze({
  /** Seconds without input after which the user counts as idle (chrome.idle; at least 15). */
  idleSeconds: 60,
  /** Count the active tab while the user is idle if it plays sound (a video, a call). */
  countAudible: false,
  /** Record nothing while paused. */
  paused: false,
  /** Hosts never recorded (each also covers its subdomains), lower case, without `www.`. */
  excludedHosts: [],
  /** Seconds the page shown instead of a site over its limit waits before offering "Continue". */
  limitPauseSeconds: 10,
  /** Minutes "Continue" lets the site open before its page is held back again. */
  limitContinueMinutes: 5,
  /** No "Continue" on that page at all. */
  strictLimits: false,
  /** The popup's "Focus" button: how long, and what it holds back (category ids or domains). */
  focusMinutes: 50,
  focusBlocks: ['social', 'video_streaming', 'games'],
});

/** The longest pause before "Continue" (a pause is a moment to think, not a lock). */
export const MAX_LIMIT_PAUSE_SECONDS = 120;

/** The longest "Continue" (more would be no limit at all). */
export const MAX_LIMIT_CONTINUE_MINUTES = 60;

/** chrome.idle accepts 15 s at least; more than an hour would make idle meaningless. */
export const MIN_IDLE_SECONDS = 15;
export const MAX_IDLE_SECONDS = 3600;

/** Longest URL recorded (bytes), the same limit as the Sitetrail database's. */
export const MAX_URL_BYTES = 32 * 1024;

/** The stored settings completed with the defaults, with bad values replaced by them. */
export function normalize(stored) {
  const s = { ...DEFAULTS, ...(stored && typeof stored === 'object' ? stored : {}) };
  const idle = Number(s.idleSeconds);
  s.idleSeconds = Number.isFinite(idle)
    ? Math.min(MAX_IDLE_SECONDS, Math.max(MIN_IDLE_SECONDS, Math.round(idle)))
    : DEFAULTS.idleSeconds;
  s.countAudible = s.countAudible === true;
  s.paused = s.paused === true;
  const pause = Number(s.limitPauseSeconds);
  s.limitPauseSeconds = Number.isFinite(pause)
    ? Math.min(MAX_LIMIT_PAUSE_SECONDS, Math.max(0, Math.round(pause)))
    : DEFAULTS.limitPauseSeconds;
  const minutesOn = Number(s.limitContinueMinutes);
  s.limitContinueMinutes = Number.isFinite(minutesOn)
    ? Math.min(MAX_LIMIT_CONTINUE_MINUTES, Math.max(1, Math.round(minutesOn)))
    : DEFAULTS.limitContinueMinutes;
  s.strictLimits = s.strictLimits === true;
  const minutes = Number(s.focusMinutes);
  s.focusMinutes = Number.isFinite(minutes) ? Math.min(720, Math.max(1, Math.round(minutes))) : DEFAULTS.focusMinutes;
  const blocks = Array.isArray(s.focusBlocks)
    ? [...new Set(s.focusBlocks.filter((b) => typeof b === 'string').map((b) => b.trim().toLowerCase()).filter(Boolean))].slice(0, 64)
    : [];
  s.focusBlocks = blocks.length ? blocks : [...DEFAULTS.focusBlocks];
  s.excludedHosts = Array.isArray(s.excludedHosts)
    ? [...new Set(s.excludedHosts.filter((h) => typeof h === 'string').map(siteOf).filter(Boolean))]
    : [];
  return s;
}

/** The site of a host name as the exclusion list keeps it: lower case, no trailing dot, no `www.`. */
export function siteOf(host) {
  let h = String(host || '').trim().toLowerCase().replace(/\.$/, '');
  if (h.startsWith('www.')) h = h.slice(4);
  return h;
}

/** The site of a URL, or '' if it has none. */
export function siteOfUrl(url) {
  try {
    return siteOf(new URL(url).hostname);
  } catch {
    return '';
  }
}

/** The entries of `excludedHosts` that exclude `host` (a site): itself, or a site it is under. */
export function excludedBy(host, excludedHosts) {
  if (!host) return [];
  return excludedHosts.filter((site) => host === site || host.endsWith(`.${site}`));
}

/** True if `url`'s host is excluded: it or a site it is under is on `excludedHosts`. */
export function isExcluded(url, excludedHosts) {
  return excludedBy(siteOfUrl(url), excludedHosts).length > 0;
}

/** The exclusion list after the popup's button for `site`: recorded again (every entry that
 * excludes it removed) if it was excluded, else added. */
export function toggleExclusion(site, excludedHosts) {
  const by = excludedBy(site, excludedHosts);
  return by.length ? excludedHosts.filter((h) => !by.includes(h)) : [...excludedHosts, site];
}

/** The URL without its fragment: `#...` changes are not new pages. */
export function withoutFragment(url) {
  const i = String(url || '').indexOf('#');
  return i < 0 ? String(url || '') : url.slice(0, i);
}

/** True for a page the extension may record under `settings`: an http(s) URL that is not too
 * long, not excluded, and (if `incognito`) only when the user allowed the extension there. */
export function isRecordable(url, { settings, incognito = false, incognitoAllowed = false }) {
  if (typeof url !== 'string') return false;
  if (!/^https?:\/\//i.test(url)) return false;
  if (new TextEncoder().encode(url).length > MAX_URL_BYTES) return false;
  if (incognito && !incognitoAllowed) return false;
  if (settings.paused) return false;
  return !isExcluded(url, settings.excludedHosts);
}
