// Limits in the browser: the pages of a website or category whose limit is used up are replaced,
// before they load, by the extension's own page (paused.html), through declarativeNetRequest
// session rules kept in step with what the native host says is used up (`sitetrail limits`).
// Pure functions here (tested with node); background.js applies them.
//
// - One redirect rule per used-up limit, for the main frame only, naming the limit's domains
//   (`requestDomains` covers their subdomains too), so the blocked site's server is never asked.
// - "Continue for 5 minutes" (the options' minutes) on the page adds an allow rule of a higher
//   priority for that site, until it runs out.
// - A focus session (`sitetrail focus start`) holds back its categories and websites the same way,
//   above any "Continue", until it ends.
// - Fail open: when the host cannot be asked, every rule is removed (a broken link must never
//   lock a person out of the web) and the popup says why.

import { fmtClock } from './format.js';

/** Rule ids: redirects from REDIRECT_BASE, allows from ALLOW_BASE (the browser wants numbers). */
export const REDIRECT_BASE = 1000;
export const ALLOW_BASE = 100_000;
/** How long "Continue" lets a site open by default (the options' `limitContinueMinutes`). */
export const CONTINUE_MS = 5 * 60_000;
/** The storage.session key of what the rules were made from ({limits, allowed}): the service
 * worker writes it, the paused page reads it. */
export const SAVED_LIMITS = 'l:limits';
/** The note the popup shows while limits cannot be enforced. */
export const FAIL_OPEN_NOTE = 'Limits are not enforced now: Sitetrail cannot be reached from this browser, so every page opens.';

/** The site of a host as rules name it: lower case, no trailing dot, no `www.`. */
function siteOfHost(host) {
  let h = String(host || '').toLowerCase().replace(/\.$/, '');
  if (h.startsWith('www.')) h = h.slice(4);
  return h;
}

/** The site of an http(s) URL, or '' for any other. */
export function siteOfPage(url) {
  try {
    const u = new URL(url);
    return /^https?:$/.test(u.protocol) ? siteOfHost(u.hostname) : '';
  } catch {
    return '';
  }
}

/** True if `site` is `domain` or under it. */
function under(site, domain) {
  return site === domain || site.endsWith(`.${domain}`);
}

/**
 * What the browser holds back, from the host's `limits` answer: the focus session first (an entry
 * with `focus: true`, its targets' names and when it ends), then each limit used up.
 */
export function holdsFrom({ limits = [], focus = null } = {}) {
  const entries = [];
  if (focus && Array.isArray(focus.domains)) {
    entries.push({
      focus: true,
      target_name: (focus.target_names || []).join(', '),
      ends_at_ms: Number(focus.ends_at_ms) || 0,
      domains: focus.domains,
    });
  }
  return entries.concat(Array.isArray(limits) ? limits : []);
}

/** The used-up limit or focus session (as holdsFrom lists them) that covers `url`, or null. */
export function limitFor(limits, url) {
  const site = siteOfPage(url);
  if (!site) return null;
  return (limits || []).find((l) => Array.isArray(l.domains) && l.domains.some((d) => under(site, d))) || null;
}

/** The sites allowed by "Continue" that have not run out at `now`. */
export function liveAllowed(allowed, now) {
  const out = {};
  for (const [site, until] of Object.entries(allowed || {})) if (Number(until) > now) out[site] = Number(until);
  return out;
}

/**
 * The session rules for `limits` (used up, from the host) and `allowed` (site -> until), given the
 * paused page's URL (`chrome.runtime.getURL('paused.html')`): the page gets the blocked URL after
 * its `#`.
 */
export function rulesFor(limits, allowed, pausedPage, now) {
  const rules = [];
  (limits || []).forEach((l, i) => {
    const domains = (l.domains || []).filter((d) => typeof d === 'string' && d);
    if (!domains.length) return;
    rules.push({
      id: REDIRECT_BASE + i,
      // A focus session is above "Continue": nothing lets its pages through while it runs.
      priority: l.focus ? 3 : 1,
      action: { type: 'redirect', redirect: { regexSubstitution: `${pausedPage}#\\0` } },
      condition: { regexFilter: '^https?://.*$', requestDomains: domains, resourceTypes: ['main_frame'] },
    });
  });
  Object.keys(liveAllowed(allowed, now))
    .sort()
    .forEach((site, i) => {
      rules.push({
        id: ALLOW_BASE + i,
        priority: 2,
        action: { type: 'allow' },
        condition: { requestDomains: [site], resourceTypes: ['main_frame'] },
      });
    });
  return rules;
}

/** What a rule says, as far as rulesFor sets it. The browser gives its rules back with its own key
 * order (Chromium: sorted) and may add the defaults it fills in (Firefox), so rules are compared
 * by this, not by their JSON as given. */
function ruleKey(r) {
  const c = r.condition || {};
  const a = r.action || {};
  const sorted = (list) => [...(list || [])].sort();
  return JSON.stringify([
    r.id,
    r.priority,
    a.type,
    (a.redirect && a.redirect.regexSubstitution) || null,
    c.regexFilter || null,
    sorted(c.requestDomains),
    sorted(c.resourceTypes),
  ]);
}

/** The update that turns the `current` session rules into `wanted` (null when they are the
 * same: no call, so keeping in step costs nothing while nothing changes). */
export function ruleUpdate(current, wanted) {
  const key = (rules) => [...rules].sort((a, b) => a.id - b.id).map(ruleKey).join('\n');
  if (key(current || []) === key(wanted)) return null;
  return { removeRuleIds: (current || []).map((r) => r.id), addRules: wanted };
}

/** Where the paused page's "Continue" stands `elapsedMs` after it was shown (never offered for a
 * focus session, nor when strict). */
export function continueState({ pauseSeconds, strict, elapsedMs, focus = false }) {
  if (strict || focus) return { offered: false, ready: false, secondsLeft: 0 };
  const left = Math.max(0, Math.ceil((pauseSeconds * 1000 - elapsedMs) / 1000));
  return { offered: true, ready: left === 0, secondsLeft: left };
}

/** The paused page's button once the pause is over: "Continue for 5 minutes". */
export function continueLabel(minutes) {
  return `Continue for ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}`;
}

/** The paused page's sentence for a limit: "Social networks: 32 min today; your limit is 30 min a day." */
export function pausedLine(limit, fmt, clock = fmtClock) {
  if (limit.focus) return `You are focusing until ${clock(limit.ends_at_ms)}: ${limit.target_name} wait until then.`;
  const period = limit.period === 'week' ? 'this week' : 'today';
  const per = limit.period === 'week' ? 'a week' : 'a day';
  const name = limit.target_name || limit.target;
  if (limit.limit_ms === 0) return `${name}: you set a limit of none at all ${per}.`;
  return `${name}: ${fmt(limit.active_ms)} ${period}; your limit is ${fmt(limit.limit_ms)} ${per}.`;
}
