import test from 'node:test';
import assert from 'node:assert/strict';
import { Tracker, emptyState, MAX_GAP_MS, NO_WINDOW } from '../lib/tracker.js';
import { normalize } from '../lib/settings.js';
import { counter } from './fakes.js';

const S = 1000;

/** A tracker with one focused window (1) and an event log; `t` is the clock in ms. */
function setup({ settings = {}, incognitoAllowed = false, state = emptyState() } = {}) {
  const events = [];
  const tracker = new Tracker(state, {
    emit: (e) => events.push(e),
    newId: counter(),
    settings: normalize(settings),
    incognitoAllowed,
  });
  return { tracker, events };
}

/** The latest active-time total reported for each visit. */
function totals(events) {
  const out = {};
  for (const e of events) if (e.active_ms !== undefined) out[e.visit] = e.active_ms;
  return out;
}

/** Opens `url` in tab `tab` of window 1, active, at `t`. */
function open(tracker, tab, url, t) {
  tracker.activated(tab, 1, t);
  tracker.navigate({ tabId: tab, windowId: 1, url }, t);
}

test('a page counts while it is the active tab of the focused window and the user is present', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  const a = events[0].visit;
  assert.deepEqual(events[0], { id: a, kind: 'visit', visit: a, url: 'https://a.test/', title: null, at: 0 });
  tracker.activated(11, 1, 4 * S); // another tab (no page yet)
  tracker.activated(10, 1, 10 * S); // back
  tracker.focused(NO_WINDOW, 13 * S); // another application
  tracker.focused(1, 20 * S);
  tracker.idle('idle', 22 * S);
  tracker.idle('active', 40 * S);
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://b.test/' }, 41 * S);
  // 0-4, 10-13, 20-22, 40-41
  assert.equal(totals(events)[a], 10 * S);
});

test('audible tabs count while idle only with the option on', () => {
  for (const countAudible of [false, true]) {
    const { tracker, events } = setup({ settings: { countAudible } });
    tracker.focused(1, 0);
    open(tracker, 10, 'https://video.test/', 0);
    tracker.audible(10, true, 1 * S);
    tracker.idle('idle', 5 * S);
    tracker.idle('active', 65 * S);
    tracker.removed(10, 70 * S);
    assert.equal(totals(events)[events[0].visit], countAudible ? 70 * S : 10 * S, `countAudible ${countAudible}`);
  }
});

test('titles follow the page; a fragment change or a reload is the same visit', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/p', 0);
  tracker.title(10, 'https://a.test/p', 'Loading', 1);
  tracker.title(10, 'https://a.test/p#x', 'Final title', 2);
  tracker.title(10, 'https://other.test/', 'Not this page', 3);
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://a.test/p#section' }, 4);
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://a.test/p' }, 5);
  const visits = events.filter((e) => e.kind === 'visit');
  assert.equal(visits.length, 1);
  const titles = events.filter((e) => e.title).map((e) => e.title);
  assert.deepEqual(titles, ['Loading', 'Final title']);
});

test('the segment survives a service-worker restart: the time in between counts', () => {
  const first = setup();
  first.tracker.focused(1, 0);
  open(first.tracker, 10, 'https://a.test/', 0);
  const a = first.events[0].visit;
  first.tracker.tick(30 * S);
  // The worker is stopped; what it stored is all that is left.
  const stored = JSON.parse(JSON.stringify(first.tracker.state));
  const second = setup({ state: stored });
  const world = { tabs: [{ id: 10, windowId: 1, url: 'https://a.test/', title: 'A' }], focused: 1, active: { 1: 10 }, idle: 'active' };
  second.tracker.restore(world, 50 * S, { newSession: false });
  assert.equal(second.events.filter((e) => e.kind === 'visit').length, 0, 'same visit, not a new one');
  second.tracker.navigate({ tabId: 10, windowId: 1, url: 'https://b.test/' }, 60 * S);
  assert.equal(totals([...first.events, ...second.events])[a], 60 * S);
});

test('a gap longer than the limit (browser closed, computer asleep) is not counted', () => {
  const first = setup();
  first.tracker.focused(1, 0);
  open(first.tracker, 10, 'https://a.test/', 0);
  const a = first.events[0].visit;
  first.tracker.tick(20 * S);
  const stored = JSON.parse(JSON.stringify(first.tracker.state));
  const second = setup({ state: stored });
  const world = { tabs: [{ id: 10, windowId: 1, url: 'https://a.test/' }], focused: 1, active: { 1: 10 }, idle: 'active' };
  second.tracker.restore(world, 20 * S + MAX_GAP_MS + 1, { newSession: false });
  second.tracker.removed(10, 20 * S + MAX_GAP_MS + 1 + 5 * S);
  // 20 s before the gap, 5 s after it.
  assert.equal(totals([...first.events, ...second.events])[a], 25 * S);
});

test('the same gap while the worker keeps running is cut at the last heartbeat', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  tracker.tick(10 * S);
  tracker.tick(10 * S + MAX_GAP_MS + 1); // woke up from sleep
  assert.equal(totals(events)[events[0].visit], 10 * S);
});

test('after a browser restart the old tabs are closed at the last heartbeat and forgotten', () => {
  const first = setup();
  first.tracker.focused(1, 0);
  open(first.tracker, 10, 'https://a.test/', 0);
  first.tracker.tick(15 * S);
  const stored = JSON.parse(JSON.stringify(first.tracker.state));
  const second = setup({ state: stored });
  // Tab ids start over: tab 10 is now another page.
  second.tracker.restore({ tabs: [{ id: 10, windowId: 5, url: 'https://other.test/' }], focused: 5, active: { 5: 10 }, idle: 'active' }, 500 * S, { newSession: true });
  assert.equal(totals(first.events.concat(second.events))[first.events[0].visit], 15 * S);
  // The restored tab is recorded once looked at (it is), as a new visit.
  assert.equal(second.events.filter((e) => e.kind === 'visit').map((e) => e.url).join(), 'https://other.test/');
});

test('a navigation missed while the worker was down is recorded, and its late event adds nothing', () => {
  const first = setup();
  first.tracker.focused(1, 0);
  open(first.tracker, 10, 'https://a.test/', 0);
  const stored = JSON.parse(JSON.stringify(first.tracker.state));
  const second = setup({ state: stored });
  second.tracker.restore({ tabs: [{ id: 10, windowId: 1, url: 'https://b.test/', title: 'B' }], focused: 1, active: { 1: 10 }, idle: 'active' }, 8 * S, { newSession: false });
  second.tracker.navigate({ tabId: 10, windowId: 1, url: 'https://b.test/' }, 8 * S + 5);
  const visits = second.events.filter((e) => e.kind === 'visit');
  assert.deepEqual(visits.map((e) => [e.url, e.title]), [['https://b.test/', 'B']]);
  assert.equal(totals(second.events)[first.events[0].visit], 8 * S, 'a.test ran until the restart');
});

test('paused, excluded and private pages are not recorded', () => {
  const { tracker, events } = setup({ settings: { excludedHosts: ['bank.test'] } });
  tracker.focused(1, 0);
  open(tracker, 1, 'https://www.bank.test/login', 0);
  open(tracker, 2, 'https://app.bank.test/', 1);
  tracker.navigate({ tabId: 3, windowId: 1, url: 'https://private.test/', incognito: true }, 2);
  open(tracker, 4, 'chrome://settings/', 3);
  assert.deepEqual(events, []);
  tracker.applySettings(normalize({ paused: true }), 4);
  open(tracker, 5, 'https://a.test/', 5);
  assert.deepEqual(events, []);
  // Resumed while looking at a.test: it is recorded from then on.
  tracker.applySettings(normalize({ paused: false }), 9 * S);
  tracker.removed(5, 12 * S);
  assert.deepEqual(events.filter((e) => e.kind === 'visit').map((e) => [e.url, e.at]), [['https://a.test/', 9 * S]]);
  assert.equal(totals(events)[events[0].visit], 3 * S);
});

test('private pages are recorded when the user allowed the extension there', () => {
  const { tracker, events } = setup({ incognitoAllowed: true });
  tracker.focused(1, 0);
  tracker.navigate({ tabId: 3, windowId: 1, url: 'https://private.test/', incognito: true }, 2);
  assert.equal(events.length, 1);
});

test('excluding the page being looked at stops its clock', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  tracker.applySettings(normalize({ excludedHosts: ['a.test'] }), 7 * S);
  tracker.tick(60 * S);
  tracker.removed(10, 90 * S);
  assert.equal(totals(events)[events[0].visit], 7 * S);
});

test('ticks report the running total, in steps, as set-to values', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  tracker.tick(500);
  tracker.tick(30 * S);
  tracker.tick(60 * S);
  const reports = events.filter((e) => e.kind === 'update').map((e) => e.active_ms);
  assert.deepEqual(reports, [30 * S, 60 * S], 'under a second of change is not reported');
});

test("Chromium's error pages are not visits: the error comes first, then the tab shows the URL without a commit", () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  const a = events[0].visit;
  // The user goes from a.test to a host that cannot be reached, in the same tab.
  tracker.navigationStarted(10);
  tracker.failed(10, 'https://down.test/');
  assert.equal(events.filter((e) => e.kind === 'visit').length, 1, 'nothing yet: a.test is still shown');
  // The tab's URL changes to the error page (tabs.onUpdated, status complete): the background
  // passes it as a navigation, as it does for a page seen without a commit.
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://down.test/', title: 'down.test' }, 5 * S);
  tracker.title(10, 'https://down.test/', 'down.test', 5 * S + 1);
  // Chromium's error page tries again by itself, and fails again.
  tracker.navigationStarted(10);
  tracker.failed(10, 'https://down.test/');
  tracker.tick(30 * S);
  tracker.focused(NO_WINDOW, 40 * S);
  tracker.focused(1, 41 * S);
  tracker.applySettings(normalize({}), 42 * S);
  tracker.tick(60 * S);
  assert.deepEqual(events.filter((e) => e.kind === 'visit').map((e) => e.url), ['https://a.test/'], 'the error page is never a visit');
  assert.equal(totals(events)[a], 5 * S, 'a.test stopped counting when the error page replaced it');
  assert.equal(events.filter((e) => e.title).length, 0, 'no title event for the error page');
});

test("Firefox's error pages are not visits: the error comes first, then a commit of the same URL", () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  tracker.activated(10, 1, 0);
  for (const url of ['https://refused.test:7/', 'https://reset.test/', 'https://nxdomain.test/x#frag']) {
    tracker.navigationStarted(10);
    tracker.failed(10, url);
    tracker.navigate({ tabId: 10, windowId: 1, url }, 1 * S);
    tracker.title(10, url, 'Problem loading page', 1 * S);
  }
  tracker.tick(30 * S);
  assert.deepEqual(events, []);
});

test('trying again after an error records the page once it loads', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  tracker.activated(10, 1, 0);
  tracker.navigationStarted(10);
  tracker.failed(10, 'https://flaky.test/');
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://flaky.test/' }, 1 * S);
  // Reload: a new navigation starts, and this time the page loads (Chromium and Firefox alike).
  tracker.navigationStarted(10);
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://flaky.test/' }, 4 * S);
  tracker.removed(10, 10 * S);
  const visits = events.filter((e) => e.kind === 'visit');
  assert.deepEqual(visits.map((e) => [e.url, e.at]), [['https://flaky.test/', 4 * S]]);
  assert.equal(totals(events)[visits[0].visit], 6 * S);
});

test('a download or a stopped load leaves the page in front recorded and counting', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  tracker.navigationStarted(10);
  tracker.failed(10, 'https://a.test/file.zip'); // net::ERR_ABORTED: the tab still shows a.test
  tracker.tick(30 * S);
  tracker.removed(10, 40 * S);
  assert.deepEqual(events.filter((e) => e.kind === 'visit').map((e) => e.url), ['https://a.test/']);
  assert.equal(totals(events)[events[0].visit], 40 * S);
});

test("the frame's final state (Chromium's errorOccurred) keeps an error page out, also after a worker restart", () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  // Seen without its error event (the worker restarted in between): the browser's frame says it.
  tracker.navigate({ tabId: 10, windowId: 1, url: 'https://down.test/', failed: true }, 2 * S);
  tracker.tick(30 * S);
  const stored = JSON.parse(JSON.stringify(tracker.state));
  const second = setup({ state: stored });
  const world = {
    tabs: [
      { id: 10, windowId: 1, url: 'https://down.test/', title: 'down.test' },
      { id: 11, windowId: 1, url: 'https://gone.test/', title: 'gone.test', failed: true },
    ],
    focused: 1,
    active: { 1: 11 },
    idle: 'active',
  };
  second.tracker.restore(world, 40 * S, { newSession: false });
  second.tracker.tick(60 * S);
  second.tracker.activated(10, 1, 70 * S);
  second.tracker.tick(90 * S);
  assert.deepEqual([...events, ...second.events].filter((e) => e.kind === 'visit').map((e) => e.url), ['https://a.test/']);
  assert.equal(totals(events)[events[0].visit], 2 * S);
});

test("an error mark ends with the tab: a new tab with the same id records its pages", () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  tracker.activated(10, 1, 0);
  tracker.failed(10, 'https://x.test/');
  tracker.removed(10, 1 * S);
  assert.deepEqual(tracker.state.failed, {});
  // A state stored before error marks existed still loads.
  const old = { ...emptyState() };
  delete old.failed;
  const { tracker: t2, events: e2 } = setup({ state: old });
  t2.focused(1, 0);
  open(t2, 10, 'https://x.test/', 0);
  assert.equal(e2.length, 1);
  assert.equal(events.length, 0);
});

test('asking the browser stops the clock when another program has the focus, though no focus event came', () => {
  const { tracker, events } = setup();
  tracker.focused(1, 0);
  open(tracker, 10, 'https://a.test/', 0);
  assert.equal(tracker.counting(), true);
  // Another program takes the focus; the window manager tells the browser nothing, so no
  // focused(NO_WINDOW) event. The next poll asks: window 1 is the last focused, not focused now.
  assert.equal(tracker.presence({ focused: 1, idle: 'active' }, 5 * S), false, 'nothing new');
  assert.equal(tracker.presence({ focused: NO_WINDOW, idle: 'active' }, 10 * S), true);
  assert.equal(tracker.counting(), false);
  tracker.tick(40 * S);
  tracker.presence({ focused: NO_WINDOW, idle: 'active' }, 40 * S);
  tracker.tick(70 * S);
  assert.equal(totals(events)[events[0].visit], 10 * S, 'stopped at the answer, not at the next event');
  // Back: the focus event comes (Chromium sends that one), or the next answer says so.
  tracker.presence({ focused: 1, idle: 'active' }, 80 * S);
  tracker.tick(95 * S);
  assert.equal(totals(events)[events[0].visit], 25 * S);
});

test('asking the browser also stops the clock when the screen is locked or the user idle', () => {
  for (const idle of ['locked', 'idle']) {
    const { tracker, events } = setup();
    tracker.focused(1, 0);
    open(tracker, 10, 'https://a.test/', 0);
    assert.equal(tracker.presence({ focused: 1, idle }, 7 * S), true);
    tracker.tick(60 * S);
    tracker.removed(10, 90 * S);
    assert.equal(totals(events)[events[0].visit], 7 * S, idle);
  }
});
