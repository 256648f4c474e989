// Which page is being looked at, and for how long: the visits of each tab and the active-time
// accounting. No browser API here: the service worker feeds it what the browser reports and
// persists `state` after every change; tests feed it by hand with their own clock.
//
// A page's time counts while it is the active tab of the focused window and the user is not
// idle (or, with `countAudible`, while idle if the tab plays sound), and the extension is not
// paused. Focus and idle events are not enough: when another program takes the focus, what the
// browser hears depends on the window manager (with none, Chromium sends no focus event at all,
// yet `windows.getLastFocused()` says not focused), so the browser is also asked (`presence`) on
// every tick and, while a page is counted, every PRESENCE_POLL_MS: time stops within that.
//
// The time being counted is one open segment {tab, visit, since}, kept in `state`, so a service
// worker killed and restarted in the middle of it loses nothing: the restart goes on from
// `since`. A gap since the last heartbeat longer than MAX_GAP_MS means the browser or the computer
// was not running (closed, asleep): the segment is closed at the heartbeat instead.
//
// Every visit's active time is reported as a running total ("set to N ms", never "add N"), so a
// report delivered twice changes nothing.
//
// A visit is a page that loaded: a main-frame navigation that ended in an error (network, DNS,
// refused or reset connection, certificate, aborted, a download) leaves a mark on its tab
// (`failed(tab, url)`), and a page of that URL the tab then shows is the browser's error page, not
// a visit: Chromium shows it without a commit event (the tab's URL and status change), Firefox
// commits it after the error. The mark lasts until the tab's next navigation starts. Chromium
// also says it in the frame's final state (`webNavigation.getFrame().errorOccurred`), passed in
// as `failed` when the page is seen another way.

import { isRecordable, withoutFragment } from './settings.js';

/** Longer than this without a heartbeat, the browser was not running: do not count the gap. */
export const MAX_GAP_MS = 3 * 60 * 1000;
/** A running total is reported when it grew by at least this much since the last report. */
export const REPORT_STEP_MS = 1000;
/** While a page is counted, the browser is asked this often whether its window still has the
 * focus and the user is present (the 30 s alarm tick asks too, whatever is counted). */
export const PRESENCE_POLL_MS = 2000;
/** Tab ids for "no window focused" (chrome.windows.WINDOW_ID_NONE). */
export const NO_WINDOW = -1;

/** A fresh state. */
export function emptyState() {
  return {
    version: 1,
    /** tab id -> {url, title, visit (id or null), at, activeMs, reportedMs, audible, incognito, guessed} */
    tabs: {},
    /** window id -> active tab id */
    active: {},
    focused: NO_WINDOW,
    idle: 'active',
    segment: null,
    heartbeat: 0,
    /** tab id -> URL (without fragment) whose navigation in that tab ended in an error */
    failed: {},
  };
}

export class Tracker {
  /**
   * @param state     persisted state (from emptyState()), mutated in place
   * @param emit      called with each event to queue: {id, kind, visit, url?, title?, at?, active_ms?}
   * @param newId     makes event ids (crypto.randomUUID)
   */
  constructor(state, { emit, newId, settings, incognitoAllowed = false }) {
    this.state = state;
    // A state stored by a version without error marks.
    if (!state.failed) state.failed = {};
    this.emit = emit;
    this.newId = newId;
    this.settings = settings;
    this.incognitoAllowed = incognitoAllowed;
  }

  recordable(url, incognito) {
    return isRecordable(url, { settings: this.settings, incognito, incognitoAllowed: this.incognitoAllowed });
  }

  /** The tab whose time counts now, if any. */
  countingTab() {
    const s = this.state;
    if (this.settings.paused || s.focused === NO_WINDOW) return null;
    const tabId = s.active[s.focused];
    if (tabId === undefined) return null;
    const tab = s.tabs[tabId];
    if (!tab) return null;
    const present = s.idle === 'active' || (this.settings.countAudible && tab.audible && s.idle === 'idle');
    return present ? String(tabId) : null;
  }

  /** Starts a new visit of `tab` at `now` (if its page may be recorded). */
  startVisit(tabId, tab, now, guessed = false) {
    tab.visit = null;
    tab.activeMs = 0;
    tab.reportedMs = 0;
    tab.guessed = guessed;
    if (!this.recordable(tab.url, tab.incognito)) return;
    tab.visit = this.newId();
    tab.at = now;
    this.emit({ id: tab.visit, kind: 'visit', visit: tab.visit, url: tab.url, title: tab.title ?? null, at: now });
  }

  /** Ends the open segment at `at`, adding its time to its visit and reporting the new total. */
  closeSegment(at) {
    const seg = this.state.segment;
    if (!seg) return;
    this.state.segment = null;
    const tab = this.state.tabs[seg.tab];
    if (!tab || tab.visit !== seg.visit || !tab.visit) return;
    tab.activeMs += Math.max(0, at - seg.since);
    this.report(tab);
  }

  report(tab, total = tab.activeMs) {
    if (!tab.visit || total === tab.reportedMs) return;
    tab.reportedMs = total;
    this.emit({ id: this.newId(), kind: 'update', visit: tab.visit, active_ms: Math.round(total) });
  }

  /** Makes the open segment match who is being looked at now. */
  reconcile(now) {
    const s = this.state;
    const counting = this.countingTab();
    if (counting !== null) {
      const tab = s.tabs[counting];
      // A page that was open before the extension could record it (just installed, resumed
      // from pause) is recorded once it is looked at.
      if (!tab.visit && !tab.declined && !tab.failed && this.recordable(tab.url, tab.incognito)) this.startVisit(counting, tab, now);
      if (!tab.visit) tab.declined = true;
    }
    const seg = s.segment;
    const wanted = counting !== null && s.tabs[counting].visit ? { tab: counting, visit: s.tabs[counting].visit } : null;
    if (seg && (!wanted || seg.tab !== wanted.tab || seg.visit !== wanted.visit)) this.closeSegment(now);
    if (wanted && !s.segment) s.segment = { ...wanted, since: now };
    s.heartbeat = now;
  }

  /** A main-frame navigation in `tabId` starts: an error of an earlier one is over. */
  navigationStarted(tabId) {
    delete this.state.failed[String(tabId)];
  }

  /** A main-frame navigation in `tabId` to `url` ended in an error: if the tab goes on to show
   * `url`, it is the browser's error page. The page shown now (if any) goes on counting: a
   * download or a stopped load leaves it in place. */
  failed(tabId, url) {
    this.state.failed[String(tabId)] = withoutFragment(url);
  }

  /** Whether `url` in `tabId` is the error page of a failed navigation. */
  isErrorPage(tabId, url) {
    return this.state.failed[String(tabId)] === withoutFragment(url);
  }

  /** A committed main-frame navigation (or a history-API one) in `tabId`; `failed`: the browser
   * says it ended in an error (the page shown is its error page). */
  navigate({ tabId, windowId, url, title = null, incognito = false, failed = false }, now) {
    const s = this.state;
    const id = String(tabId);
    const tab = s.tabs[id];
    const errorPage = failed || this.isErrorPage(id, url);
    if (!errorPage && tab && tab.visit && withoutFragment(tab.url) === withoutFragment(url)) {
      // A reload, the same page committed again, or the late event of a navigation the restart
      // recovery already recorded: still the same visit.
      tab.url = url;
      tab.guessed = false;
      return this.reconcile(now);
    }
    if (s.segment && s.segment.tab === id) this.closeSegment(now);
    const next = {
      url,
      // A title that is only the URL (what a tab shows before its page has one) is no title.
      title: title && title !== url ? title : null,
      windowId,
      audible: tab ? tab.audible : false,
      incognito,
      visit: null,
      activeMs: 0,
      reportedMs: 0,
      failed: errorPage,
    };
    s.tabs[id] = next;
    if (!errorPage) this.startVisit(id, next, now);
    this.reconcile(now);
  }

  /** The page in `tabId` set its title (`url` is the tab's URL when it did). */
  title(tabId, url, title, now) {
    const tab = this.state.tabs[String(tabId)];
    if (!tab || typeof title !== 'string') return;
    if (url && withoutFragment(url) !== withoutFragment(tab.url)) return;
    if (tab.title === title) return;
    tab.title = title;
    if (tab.visit) this.emit({ id: this.newId(), kind: 'update', visit: tab.visit, title });
    this.state.heartbeat = now;
  }

  activated(tabId, windowId, now) {
    this.state.active[windowId] = String(tabId);
    this.reconcile(now);
  }

  focused(windowId, now) {
    this.state.focused = windowId;
    this.reconcile(now);
  }

  idle(state, now) {
    this.state.idle = state;
    this.reconcile(now);
  }

  /** What the browser answers when asked: the focused window (NO_WINDOW when none of its windows
   * has the focus) and the idle state ('active', 'idle', 'locked'). Time stops at `now` when the
   * answer says nobody is looking, whatever events did or did not come. Returns whether the
   * answer changed anything (else there is nothing new to store). */
  presence({ focused, idle }, now) {
    const s = this.state;
    const changed = s.focused !== focused || (Boolean(idle) && s.idle !== idle);
    s.focused = focused;
    if (idle) s.idle = idle;
    this.reconcile(now);
    return changed;
  }

  /** Whether a page's time is being counted (the worker asks the browser more often then). */
  counting() {
    return this.state.segment !== null;
  }

  audible(tabId, audible, now) {
    const tab = this.state.tabs[String(tabId)];
    if (tab) tab.audible = Boolean(audible);
    this.reconcile(now);
  }

  removed(tabId, now) {
    const id = String(tabId);
    if (this.state.segment && this.state.segment.tab === id) this.closeSegment(now);
    delete this.state.tabs[id];
    delete this.state.failed[id];
    for (const [w, t] of Object.entries(this.state.active)) if (t === id) delete this.state.active[w];
    this.reconcile(now);
  }

  replaced(addedTabId, removedTabId, now) {
    const from = String(removedTabId);
    const to = String(addedTabId);
    if (this.state.segment && this.state.segment.tab === from) this.closeSegment(now);
    if (this.state.tabs[from]) {
      this.state.tabs[to] = this.state.tabs[from];
      delete this.state.tabs[from];
    }
    delete this.state.failed[from];
    this.reconcile(now);
  }

  /** New settings (pause, exclusions, idle threshold): pages no longer recordable stop counting. */
  applySettings(settings, now) {
    this.settings = settings;
    for (const tab of Object.values(this.state.tabs)) {
      tab.declined = false;
      if (tab.visit && !this.recordable(tab.url, tab.incognito)) {
        if (this.state.segment && this.state.segment.visit === tab.visit) this.closeSegment(now);
        tab.visit = null;
      }
    }
    this.reconcile(now);
  }

  /** Periodic: reports the running total of the page being looked at. */
  tick(now) {
    const s = this.state;
    if (s.segment && now - s.heartbeat > MAX_GAP_MS) {
      // Nothing ran for a long time (the computer slept): the gap is not looked-at time.
      this.closeSegment(s.heartbeat);
    }
    const seg = s.segment;
    if (seg) {
      const tab = s.tabs[seg.tab];
      const total = tab.activeMs + Math.max(0, now - seg.since);
      if (total - tab.reportedMs >= REPORT_STEP_MS) this.report(tab, total);
    }
    this.reconcile(now);
  }

  /**
   * After a service-worker start: brings the state in line with what the browser shows now.
   * `world` = {tabs: [{id, windowId, url, title, audible, incognito, failed}], focused, active: {windowId: tabId}, idle};
   * a tab's `failed`: it shows the error page of a navigation that failed.
   * `newSession`: the browser itself (re)started, so the old tab ids mean nothing any more.
   */
  restore(world, now, { newSession }) {
    const s = this.state;
    const firstRun = s.heartbeat === 0;
    if (s.segment && (newSession || now - s.heartbeat > MAX_GAP_MS)) this.closeSegment(s.heartbeat);
    if (newSession) {
      s.tabs = {};
      s.active = {};
      s.failed = {};
    }
    const seen = new Set();
    for (const t of world.tabs) {
      const id = String(t.id);
      seen.add(id);
      const known = s.tabs[id];
      if (known && withoutFragment(known.url) === withoutFragment(t.url)) {
        known.audible = Boolean(t.audible);
        known.windowId = t.windowId;
        if (t.title && t.title !== known.title) this.title(id, t.url, t.title, now);
        continue;
      }
      if (known && s.segment && s.segment.tab === id) this.closeSegment(now);
      const failed = Boolean(t.failed) || this.isErrorPage(id, t.url);
      const tab = { url: t.url, title: t.title ?? null, windowId: t.windowId, audible: Boolean(t.audible), incognito: Boolean(t.incognito), visit: null, activeMs: 0, reportedMs: 0, failed };
      s.tabs[id] = tab;
      // A navigation missed while the worker was down is recorded now; on the very first run
      // (just installed) and after a browser restart, open tabs are recorded once looked at.
      if (!firstRun && !newSession && !failed) this.startVisit(id, tab, now, true);
    }
    for (const id of Object.keys(s.tabs)) {
      if (!seen.has(id)) {
        if (s.segment && s.segment.tab === id) this.closeSegment(Math.min(now, s.heartbeat));
        delete s.tabs[id];
      }
    }
    for (const id of Object.keys(s.failed)) if (!seen.has(id)) delete s.failed[id];
    s.active = {};
    for (const [w, t] of Object.entries(world.active)) s.active[w] = String(t);
    s.focused = world.focused;
    s.idle = world.idle;
    this.reconcile(now);
  }
}
