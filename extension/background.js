// Sitetrail's service worker: turns what the browser reports (navigations, titles, tab and window
// focus, idle state) into visits and active time, queues them durably, and delivers them to the
// native host. The logic is in lib/ (tested with node); this file only wires browser events to it.
//
// MV3 stops this worker when it is idle and starts it again on the next event, so nothing lives
// only in memory: the tracker's state (with the segment being counted) and the queue are in
// chrome.storage.local, written in one call after every event. Listeners are registered at the
// top level, synchronously, so the event that wakes the worker is delivered; every handler runs
// on one promise chain, after start-up, in the order the events came.

import { Queue } from './lib/queue.js';
import { Tracker, emptyState, NO_WINDOW, PRESENCE_POLL_MS } from './lib/tracker.js';
import { HostLink } from './lib/host.js';
import { normalize } from './lib/settings.js';
import { FAIL_OPEN_NOTE, SAVED_LIMITS, holdsFrom, limitFor, liveAllowed, ruleUpdate, rulesFor, siteOfPage } from './lib/limits.js';

const storage = chrome.storage.local;
/** 'firefox' in Firefox (the name `browser-link --browser` takes); unknown in the Chromium family. */
const BROWSER = typeof browser !== 'undefined' && browser.runtime && typeof browser.runtime.getBrowserInfo === 'function' ? 'firefox' : null;
const STATE = 't:state';
const TICK = 'sitetrail-tick';
/** storage.session: the used-up limits the rules were made from, and the sites "Continue" let
 * through until when ({limits, allowed}); gone when the browser quits, like the rules. */
const LIMITS = SAVED_LIMITS;

let chain = Promise.resolve();
/** Runs `fn` after everything queued before it; errors are logged, never break the chain. */
function run(fn) {
  const p = chain.then(fn);
  chain = p.catch((e) => console.error('sitetrail:', e));
  return chain;
}

let settings = normalize(undefined);
let queue = null;
let tracker = null;
let link = null;
let pending = [];

/** Stores what the last handler produced: its events and the tracker's state, in one write. */
async function commit() {
  const events = pending;
  pending = [];
  await queue.pushAll(events, { [STATE]: tracker.state });
  if (events.length) await link.kick();
}

function now() {
  return Date.now();
}

/** Whether the main frame of `tabId` shows the error page of a failed navigation to `url`, as
 * Chromium keeps it (`errorOccurred`; Firefox does not: its error marks come from the events). */
async function showsError(tabId, url) {
  try {
    const frame = await chrome.webNavigation.getFrame({ tabId, frameId: 0 });
    return Boolean(frame && frame.errorOccurred && frame.url.split('#')[0] === url.split('#')[0]);
  } catch {
    return false;
  }
}

/** Which window has the focus (NO_WINDOW when none of the browser's), and the idle state. */
async function askPresence() {
  const win = await chrome.windows.getLastFocused().catch(() => null);
  return {
    focused: win && win.focused ? win.id : NO_WINDOW,
    idle: await chrome.idle.queryState(settings.idleSeconds),
  };
}

async function readWorld() {
  const tabs = await chrome.tabs.query({});
  const failed = await Promise.all(tabs.map((t) => (t.url ? showsError(t.id, t.url) : false)));
  const active = {};
  for (const t of tabs) if (t.active) active[t.windowId] = t.id;
  return {
    tabs: tabs.map((t, i) => ({ id: t.id, windowId: t.windowId, url: t.url || '', title: t.title, audible: t.audible, incognito: t.incognito, failed: failed[i] })),
    active,
    ...(await askPresence()),
  };
}

async function isIncognitoAllowed() {
  try {
    return Boolean(await chrome.extension.isAllowedIncognitoAccess());
  } catch {
    return false;
  }
}

async function start() {
  const got = await storage.get(['settings', STATE]);
  settings = normalize(got.settings);
  queue = await new Queue(storage).load();
  const state = got[STATE] && got[STATE].version === 1 ? got[STATE] : emptyState();
  tracker = new Tracker(state, {
    emit: (e) => pending.push(e),
    newId: () => crypto.randomUUID(),
    settings,
    incognitoAllowed: await isIncognitoAllowed(),
  });
  link = new HostLink({
    queue,
    connect: (name) => chrome.runtime.connectNative(name),
    lastError: () => chrome.runtime.lastError,
    browser: BROWSER,
    run,
    setStatus: (status) => storage.set({ status }),
    timers: { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (t) => clearTimeout(t), now },
    version: chrome.runtime.getManifest().version,
    changed: () => refreshLimits(),
  });
  chrome.idle.setDetectionInterval(settings.idleSeconds);
  // storage.session is emptied when the browser quits, not when this worker stops: its marker
  // tells a browser restart (tab ids start over) from a worker restart.
  const session = await chrome.storage.session.get('alive');
  await chrome.storage.session.set({ alive: true });
  tracker.restore(await readWorld(), now(), { newSession: !session.alive });
  await commit();
  link.connect();
  await chrome.alarms.create(TICK, { periodInMinutes: 0.5 });
  setInterval(pollPresence, PRESENCE_POLL_MS);
}

/** While a page is counted: does the browser still have the focus, is the user still there?
 * (The alarm tick asks too: a worker stopped and started again has lost this timer until then.) */
function pollPresence() {
  if (!tracker || !tracker.counting()) return;
  run(async () => {
    if (!tracker.counting()) return;
    const presence = await askPresence();
    if (tracker.presence(presence, now())) await commit();
  });
}

/** Settled once start() has run (the settings read): what a question that does not wait for the
 * tracker's events waits for. */
const started = run(start);

let limitsChain = Promise.resolve();
/** Runs `fn` after every rule change queued before it (rule updates must not interleave). */
function serialLimits(fn) {
  const p = limitsChain.then(fn);
  limitsChain = p.catch((e) => console.error('sitetrail: limits:', e));
  return limitsChain;
}

async function savedLimits() {
  const got = await chrome.storage.session.get(LIMITS);
  const saved = got[LIMITS] || {};
  return { limits: Array.isArray(saved.limits) ? saved.limits : [], allowed: saved.allowed || {} };
}

/** What keeping the rules in step has cost since this worker started: questions to the host and
 * rule updates made (the `limits-stats` message; benches/limits.rs reads it). */
const limitsStats = { asked: 0, updated: 0 };

let focusEnds = null;
/** Sets the redirect rules for `limits` (what holdsFrom lists; null: the host could not say, so
 * none: fail open) and the sites "Continue" let through; writes nothing when nothing changed. */
function applyLimits(limits) {
  return serialLimits(async () => {
    const saved = await savedLimits();
    const t = now();
    const held = limits || [];
    // A focus session ends on its own: ask again then (the alarm's tick does too).
    const focus = held.find((l) => l.focus);
    clearTimeout(focusEnds);
    if (focus && focus.ends_at_ms > t) focusEnds = setTimeout(() => refreshLimits(), focus.ends_at_ms - t + 500);
    const allowed = liveAllowed(saved.allowed, t);
    const update = ruleUpdate(
      await chrome.declarativeNetRequest.getSessionRules(),
      rulesFor(held, allowed, chrome.runtime.getURL('paused.html'), t),
    );
    if (update) {
      await chrome.declarativeNetRequest.updateSessionRules(update);
      limitsStats.updated += 1;
    }
    await chrome.storage.session.set({ [LIMITS]: { limits: held, allowed } });
    const note = limits ? null : FAIL_OPEN_NOTE;
    if (((await storage.get('limitsNote')).limitsNote || null) !== note) await storage.set({ limitsNote: note });
  });
}

let limitsAsking = null;
let limitsAgain = false;
/** Asks the host which limits are used up and keeps the rules in step. Not on the serial chain:
 * the answer arrives through it. A call while one is asking asks once more after it. */
function refreshLimits() {
  if (limitsAsking) {
    limitsAgain = true;
    return limitsAsking;
  }
  limitsAsking = (async () => {
    do {
      limitsAgain = false;
      limitsStats.asked += 1;
      const holds = link ? await link.askLimits() : null;
      await applyLimits(holds ? holdsFrom(holds) : null);
    } while (limitsAgain);
  })().finally(() => {
    limitsAsking = null;
  });
  return limitsAsking;
}

/** "Continue for 5 minutes" (the options' minutes) on the paused page: `url`'s site opens until
 * then. */
async function continueTo(url) {
  const site = siteOfPage(url);
  if (!site || settings.strictLimits) return false;
  const span = settings.limitContinueMinutes * 60_000;
  await serialLimits(async () => {
    const saved = await savedLimits();
    saved.allowed = { ...liveAllowed(saved.allowed, now()), [site]: now() + span };
    await chrome.storage.session.set({ [LIMITS]: saved });
  });
  await applyLimits((await savedLimits()).limits);
  // Taken back when it runs out (the alarm's tick does it too, should this worker stop meanwhile).
  setTimeout(() => refreshLimits(), span + 1000);
  return true;
}

/** The tab of a main-frame navigation event, or null for frames, prerendering and non-tabs. */
async function navigatedTab(d) {
  if (d.frameId !== 0) return null;
  if (d.documentLifecycle && d.documentLifecycle !== 'active') return null; // prerender, bfcache-in
  if (d.frameType && d.frameType !== 'outermost_frame') return null;
  try {
    return await chrome.tabs.get(d.tabId);
  } catch {
    return null; // a tab that is not (yet) in the strip: prerendering
  }
}

/** A main-frame navigation. A history-API one keeps its document, so its title is the tab's
 * current one; a committed one has a new document whose title comes in a later update. */
function onNavigation(d, sameDocument) {
  run(async () => {
    const tab = await navigatedTab(d);
    if (!tab) return;
    const title = sameDocument ? tab.title : null;
    tracker.navigate({ tabId: d.tabId, windowId: tab.windowId, url: d.url, title, incognito: tab.incognito }, now());
    await commit();
  });
}

/** A main-frame navigation event that is not a prerender's (those tabs are not in the strip). */
function isMainFrame(d) {
  return d.frameId === 0 && d.documentLifecycle !== 'prerender';
}

// A visit is a page that loaded: a navigation that ends in an error marks its tab, so the error
// page it then shows (without a commit in Chromium, after a commit in Firefox) is not recorded.
chrome.webNavigation.onBeforeNavigate.addListener((d) => {
  if (!isMainFrame(d)) return;
  run(async () => {
    tracker.navigationStarted(d.tabId);
    await commit();
  });
});

chrome.webNavigation.onErrorOccurred.addListener((d) => {
  if (!isMainFrame(d)) return;
  run(async () => {
    tracker.failed(d.tabId, d.url);
    await commit();
  });
});

chrome.webNavigation.onCommitted.addListener((d) => onNavigation(d, false));
chrome.webNavigation.onHistoryStateUpdated.addListener((d) => onNavigation(d, true));

chrome.tabs.onUpdated.addListener((tabId, change, tab) => {
  if (!('title' in change) && !('audible' in change) && change.status !== 'complete') return;
  run(async () => {
    const t = now();
    if (change.status === 'complete' && tab.url) {
      const known = tracker.state.tabs[String(tabId)];
      // A page shown without a commit event reaching us (a prerendered page activated, an event
      // lost to a worker restart): record it now, unless it is an error page.
      if (!known || known.url.split('#')[0] !== tab.url.split('#')[0]) {
        const failed = await showsError(tabId, tab.url);
        tracker.navigate({ tabId, windowId: tab.windowId, url: tab.url, title: tab.title, incognito: tab.incognito, failed }, t);
      }
    }
    if ('title' in change) tracker.title(tabId, tab.url, change.title, t);
    if ('audible' in change) tracker.audible(tabId, change.audible, t);
    await commit();
  });
});

chrome.tabs.onActivated.addListener(({ tabId, windowId }) => {
  run(async () => {
    tracker.activated(tabId, windowId, now());
    await commit();
  });
});

chrome.tabs.onRemoved.addListener((tabId) => {
  run(async () => {
    tracker.removed(tabId, now());
    await commit();
  });
});

chrome.tabs.onReplaced.addListener((added, removed) => {
  run(async () => {
    tracker.replaced(added, removed, now());
    await commit();
  });
});

chrome.windows.onFocusChanged.addListener((windowId) => {
  run(async () => {
    tracker.focused(windowId, now());
    await commit();
  });
});

chrome.idle.onStateChanged.addListener((state) => {
  run(async () => {
    tracker.idle(state, now());
    await commit();
  });
});

chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name !== TICK) return;
  run(async () => {
    const presence = await askPresence();
    const t = now();
    tracker.tick(t);
    tracker.presence(presence, t);
    await commit();
    await link.kick();
    refreshLimits();
  });
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== 'local' || !changes.settings) return;
  // At once, for the questions answered off the chain (the paused page's); the tracker and the
  // idle detection take the newest settings in their turn.
  settings = normalize(changes.settings.newValue);
  run(async () => {
    chrome.idle.setDetectionInterval(settings.idleSeconds);
    tracker.applySettings(settings, now());
    await commit();
  });
});

chrome.runtime.onMessage.addListener((msg, _sender, reply) => {
  if (msg && msg.type === 'site-info' && typeof msg.url === 'string') {
    // Not on the serial chain: the host's answer comes through it.
    link.askSite(msg.url).then(reply);
    return true;
  }
  if (msg && msg.type === 'limit-for' && typeof msg.url === 'string') {
    // The paused page: which used-up limit holds this page back, and how it may go on. Not on the
    // serial chain: the navigation that brought the page queued the tracker's events there, and
    // the page's sentence must not wait for them to be written.
    started.then(async () => {
      const { limits } = await savedLimits();
      reply({
        limit: limitFor(limits, msg.url),
        pauseSeconds: settings.limitPauseSeconds,
        continueMinutes: settings.limitContinueMinutes,
        strict: settings.strictLimits,
      });
    });
    return true;
  }
  if (msg && msg.type === 'focus' && Number.isFinite(msg.minutes) && Array.isArray(msg.blocks)) {
    // The popup starts (or, with 0 minutes, stops) a focus session; the host writes it.
    (link ? link.askFocus(msg.minutes, msg.blocks) : Promise.resolve(null)).then(async (answer) => {
      await refreshLimits();
      reply(answer || { ok: false, message: 'Sitetrail cannot be reached from this browser.' });
    });
    return true;
  }
  if (msg && msg.type === 'focus-state') {
    savedLimits().then(({ limits }) => reply({ focus: limits.find((l) => l.focus) || null }));
    return true;
  }
  if (msg && msg.type === 'continue' && typeof msg.url === 'string') {
    run(async () => reply({ ok: await continueTo(msg.url) }));
    return true;
  }
  if (msg && msg.type === 'limits-stats') {
    reply({ ...limitsStats });
    return false;
  }
  if (msg && msg.type === 'reconnect') {
    run(async () => {
      link.ensure();
      reply({ ok: true });
    });
    return true;
  }
  return false;
});
