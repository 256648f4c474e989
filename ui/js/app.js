// Entry point: loads the category list and app info, wires the views, routes between them, and
// fans the backend's coalesced change events out to the views. No timer: the backend announces
// every committed change, this process's and other processes' (the CLI, the native host), so an
// idle app does nothing.
import { call, describe, listen, markOnce, STORE_CHANGED } from './api.js';
import { $, setCategories, toast } from './dom.js';
import { setLocale } from './locale.js';
import * as overview from './overview.js';
import * as history from './history.js';
import * as failed from './failed.js';
import * as review from './review.js';
import * as settings from './settings.js';
import * as firstRun from './firstrun.js';
import * as forget from './forget.js';
import * as website from './website.js';
import * as limits from './limits.js';
import * as report from './report.js';
import { onNavigate } from './nav.js';
import * as tip from './tip.js';

const views = { overview, history, review, failed, settings, website, report };
/** The views with a tab, in tab order; the website page has none. Alt+1..5 pick the tabs shown
 * (Failed is one only while something failed). */
const TABS = ['overview', 'history', 'review', 'failed', 'settings'];
const shownTabs = () => TABS.filter((t) => !$(`#tab-${t}`).hidden);
let current = null;

function showView(name) {
  if (!views[name]) name = 'overview';
  if (current && current !== name) views[current].hide();
  // The website page and the weekly report belong to the view they were opened from.
  const tabView = name === 'website' || name === 'report' ? null : name;
  for (const tab of document.querySelectorAll('.tab')) {
    if (tab.dataset.view === tabView) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  for (const key of Object.keys(views)) $(`#view-${key}`).hidden = key !== name;
  current = name;
  // Leaving Failed with nothing failed left: its tab goes (overview.js shows it when a job fails).
  if (name !== 'failed' && $('#failed-badge').hidden) $('#tab-failed').hidden = true;
  return views[name].show();
}

/** performance.now() as Unix milliseconds, the backend's clock for the start's milestones. */
const unixMs = (t) => performance.timeOrigin + t;

/**
 * Tells the backend the first view is painted with today's figures, with the page's own
 * milestones (src-tauri/src/startup.rs logs where the start's time went; the first-paint
 * benchmark reads that line).
 */
function reportFirstView() {
  const nav = performance.getEntriesByType('navigation')[0];
  const at = (name) => { const m = performance.getEntriesByName(name)[0]; return m ? unixMs(m.startTime) : 0; };
  const marks = [
    ['scripts run', nav && nav.domContentLoadedEventEnd ? unixMs(nav.domContentLoadedEventEnd) : 0],
    ...performance.getEntriesByType('mark')
      .filter((m) => m.name.startsWith('sitetrail-') && m.name !== 'sitetrail-first-view')
      .map((m) => [m.name.slice('sitetrail-'.length), unixMs(m.startTime)]),
  ];
  call('first_view_painted', { times: { navigation: performance.timeOrigin, painted: at('sitetrail-first-view'), marks } })
    .catch(() => {});
}

async function start() {
  requestAnimationFrame(() => markOnce('first frame'));
  // Today's figures are asked for first, beside the app's own first answers: the overview's
  // queries are the longest wait of a start.
  overview.prefetch();
  let categories, info;
  try {
    let locale;
    [categories, info, locale] = await Promise.all([
      call('list_categories'),
      call('get_app_info'),
      // Without it, dates are in the web view's default: the app still works.
      call('get_locale').catch(() => null),
    ]);
    setLocale(locale);
  } catch (e) {
    toast(`Sitetrail could not start: ${describe(e)}`, true);
    return;
  }
  // The launch benchmark reads this: the first answers from the backend are in.
  markOnce('first answers');
  setCategories(categories);
  tip.init();
  overview.init();
  forget.init();
  history.init(categories);
  review.init(categories);
  failed.init();
  settings.init(info);
  website.init();
  limits.init(categories);
  report.init();
  onNavigate((name, what) => {
    const from = current;
    if (name === 'website' && !what.from) what.from = from === 'website' ? 'overview' : from;
    showView(name);
    if (views[name].open) views[name].open(what);
  });

  for (const tab of document.querySelectorAll('.tab')) {
    tab.addEventListener('click', () => showView(tab.dataset.view));
  }
  // Alt+1..5 switch views from anywhere.
  document.addEventListener('keydown', (e) => {
    const n = Number(e.key);
    if (e.altKey && n >= 1 && n <= shownTabs().length) {
      e.preventDefault();
      showView(shownTabs()[n - 1]);
    }
    // "/" and Ctrl/Cmd+F: the history's search, from any view.
    const typing = e.target.closest && e.target.closest('input, select, textarea');
    const find = (e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'f';
    const slash = e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey;
    if ((find || slash) && !document.querySelector('dialog[open]')) {
      e.preventDefault();
      if (current !== 'history') showView('history');
      $('#h-search').focus();
      $('#h-search').select();
    }
  });

  await listen(STORE_CHANGED, (changes) => {
    overview.onChange(changes);
    for (const [name, v] of Object.entries(views)) if (name !== 'overview') v.onChange(changes);
  });
  // After a first-run import, redraw the overview at once (counts, chart, top websites).
  document.addEventListener('sitetrail:imported', () => {
    if (current === 'overview') overview.show();
  });

  // Ready (for the e2e tests and the launch benchmarks) once today's figures are drawn and
  // two frames painted, not before.
  await showView('overview');
  markOnce('figures drawn');
  requestAnimationFrame(() => requestAnimationFrame(() => {
    performance.mark('sitetrail-first-view');
    document.body.dataset.ready = 'true';
    reportFirstView();
  }));
}

start();
