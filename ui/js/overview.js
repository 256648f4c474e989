// Overview: "where did my time go" for the chosen period. The headline (one total of measured and
// estimated time, its estimated share marked ≈ and explained, the change against the period
// before on the same basis; visits where no time is known at all), the split by
// category, the top websites by time and by visits, the time per day and, for one day, its
// timeline. Every category and website leads somewhere (the history filtered to it, the website's
// page). The classification queue is a compact line at the bottom, and an attention line at the
// top only while something needs the user (failures, a pause, unusable settings).
import { call, describe, markOnce } from './api.js';
import { $, el, fmtNumber, fmtDuration, fmtEstimate, fmtSpent, fmtTime, categoryName, toast } from './dom.js';
import { categoryLabel } from './colours.js';
import * as firstRun from './firstrun.js';
import * as period from './period.js';
import * as timeline from './timeline.js';
import { drawDays, drawDonut, legendKey, pct, total } from './timecharts.js';
import * as forget from './forget.js';
import { go } from './nav.js';

let lastProvider = null;
let visible = false;
let overview = null;
let generation = 0;
let refreshedAt = 0;
let pending = null;
/** Live changes redraw the figures at most this often (a burst of visits is one redraw). */
const MIN_INTERVAL_MS = 2_000;

/** The classifier the worker last reported ('builtin', 'openai', 'ollama'), once known. */
export function currentProvider() {
  return lastProvider;
}

export function init() {
  period.init($('#period-bar'));
  period.onChange(() => {
    if (visible) refresh();
  });
  timeline.init();
  // After a forgetting, the figures are out of date.
  document.addEventListener('sitetrail:forgotten', () => {
    if (visible) refresh();
  });
  $('#resume').addEventListener('click', async () => {
    try {
      await call('resume_worker');
      toast('The classifier will try again now.');
      refreshQueue();
    } catch (e) {
      toast(`Could not resume: ${describe(e)}`, true);
    }
  });
}

/** Shows the overview; the promise settles once its figures and queue line are drawn. */
export function show() {
  visible = true;
  return Promise.all([refreshQueue(), refresh()]);
}

export function hide() {
  visible = false;
}

/** Called with the backend's coalesced change set. */
export function onChange(ch) {
  if (ch.outbox || ch.worker || ch.visits) refreshQueue();
  if (!visible || !(ch.visits || ch.websites)) return;
  const wait = refreshedAt + MIN_INTERVAL_MS - Date.now();
  if (wait <= 0) refresh();
  else if (!pending) pending = setTimeout(() => { pending = null; if (visible) refresh(); }, wait);
}

/** Opens the history filtered to `category` over the chosen period. */
function openCategory(category) {
  const p = period.current();
  go('history', { category, first: p.first, last: p.last });
}

function openWebsite(domain) {
  go('website', { domain });
}

/**
 * Asks the backend for everything the overview of `p` shows, all at once: the period's figures,
 * for one day its week (the per-day chart) and its timeline. One round trip for all, not one
 * after another.
 */
function ask(p) {
  const asks = [call('get_period_overview', { first: p.first, days: p.days, compareFirst: p.compareFirst })];
  // One day: its week around it in the per-day chart, so the days next to it are a click away.
  if (p.days === 1) {
    const first = period.dayKey(period.addDays(period.parseDay(p.first), -6));
    asks.push(call('get_period_overview', { first, days: 7 }));
  }
  const figures = Promise.all(asks);
  const line = p.days === 1 ? call('get_timeline', { day: p.first }) : null;
  // Settled later (or dropped for a newer period): never an unhandled rejection meanwhile.
  figures.catch(() => {});
  if (line) line.catch(() => {});
  return { key: `${p.first}/${p.days}/${p.compareFirst}`, figures, line };
}

let early = null;

/**
 * Asks for the chosen period's figures now, before the views are set up (app.js calls it first
 * thing, beside its own first questions), so the first draw waits on one round trip that started
 * with the scripts.
 */
export function prefetch() {
  early = ask(period.current());
}

/** Loads the chosen period and draws everything; settles once drawn (or failed). */
export async function refresh() {
  refreshedAt = Date.now();
  const gen = ++generation;
  const p = period.current();
  const asked = early && early.key === `${p.first}/${p.days}/${p.compareFirst}` ? early : ask(p);
  early = null;
  let o;
  let week = null;
  try {
    [o, week] = await asked.figures;
    markOnce('overview answers');
  } catch (e) {
    toast(`Could not load the overview: ${describe(e)}`, true);
    return;
  }
  if (gen !== generation) return; // a newer period was chosen meanwhile
  overview = o;
  drawHeadline(o, p);
  drawSplit(o);
  drawTopTime(o);
  drawTopVisits(o);
  $('#time-title').textContent = p.days === 1 ? 'Time per day (the week up to this day)' : 'Time per day';
  drawDays($('#time-chart'), (week || o).per_day, {
    onDay: (day) => period.chooseDay(day),
    onCategory: openCategory,
    legend: $('#time-legend'),
    note: $('#time-note'),
    selected: p.days === 1 ? [p.first] : null,
  });
  $('#timeline-card').hidden = p.days !== 1;
  $('#view-overview').dataset.period = `${p.first}/${p.days}`;
  markOnce('overview drawn');
  if (asked.line) await timeline.refresh(p.first, asked.line);
}

/**
 * What the period's figures count, as the library decided for the headline (`o.headline.basis`):
 * 'time' (measured plus estimated, one total) or 'visits' (no time known). Every list on the
 * screen uses it, so the donut, the legend and the lists add up to the headline.
 */
function basisOf(o) {
  return o.headline ? o.headline.basis : total(o.total) > 0 ? 'time' : 'visits';
}

function valueOf(row, basis) {
  return basis === 'time' ? total(row) : row.visits;
}

/** A row's figure: "≈ 12 min" when any of its time is estimated, "12 min", "3 visits". */
function fmtValue(row, basis) {
  if (basis === 'visits') return `${fmtNumber(row.visits)} visit${row.visits === 1 ? '' : 's'}`;
  return row.estimated_ms > 0 ? fmtEstimate(total(row)) : fmtSpent(total(row));
}

/** "40 min more than yesterday (≈ 2 h 10 min)", "about the same as yesterday", "nothing recorded yesterday". */
export function changeText(h, than) {
  const c = h.comparison;
  if (c.kind === 'nothing_before') return `Nothing recorded ${than}.`;
  if (c.kind === 'no_time_before') {
    return `No time is known for ${than} (${fmtNumber(c.previous_visits)} visit${c.previous_visits === 1 ? '' : 's'}, imported without durations), so there is nothing to compare.`;
  }
  if (h.basis === 'visits') {
    const d = c.change;
    if (d === 0) return `The same number of visits as ${than}.`;
    return `${fmtNumber(Math.abs(d))} visit${Math.abs(d) === 1 ? '' : 's'} ${d > 0 ? 'more' : 'fewer'} than ${than}.`;
  }
  if (Math.abs(c.change) < 30_000) return `About the same as ${than}.`;
  // A difference with an estimate on either side is itself an estimate.
  const about = h.approximate || c.previous_approximate ? 'About ' : '';
  const figure = `${about}${fmtSpent(Math.abs(c.change))}`;
  return `${figure} ${c.change > 0 ? 'more' : 'less'} than ${than} (${c.previous_approximate ? '≈ ' : ''}${fmtSpent(c.previous)}).`;
}

/** What the ≈ of the headline means: how much of it is estimated, and from what. */
function estimateText(h) {
  if (!h.approximate) return '';
  const how = 'estimated from imported browser history (how long pages stayed open, at most 10 minutes each)';
  if (h.measured_ms === 0) return `≈ All of it is ${how}: no time was measured by the browser extension.`;
  return `≈ ${fmtSpent(h.estimated_ms)} of it (${h.estimated_percent} %) is ${how}; ${fmtSpent(h.measured_ms)} was measured by the browser extension.`;
}

function drawHeadline(o, p) {
  const h = o.headline;
  const when = p.label.toLowerCase();
  $('#hl-title').textContent = h.basis === 'visits' && o.total.visits > 0 ? `Visits, ${when}` : `Time spent, ${when}`;
  const empty = $('#hl-empty');
  empty.hidden = true;
  $('#hl-estimated').textContent = '';
  $('#hl-fallback').textContent = '';
  if (o.total.visits === 0) {
    $('#hl-time').textContent = 'Nothing recorded';
    $('#hl-time').dataset.ms = '0';
    $('#hl-time').title = '';
    $('#hl-change').textContent = o.previous.visits > 0 ? `${fmtValue(o.previous, basisOf({ total: o.previous }))} and ${fmtNumber(o.previous.visits)} visits ${p.compareLabel}.` : '';
    if (o.latest_visit) {
      const latest = new Date(o.latest_visit);
      const key = period.dayKey(latest);
      empty.hidden = false;
      empty.replaceChildren(
        el('span', { class: 'muted', text: `The latest visit was on ${fmtTime(o.latest_visit)}. ` }),
        el('button', { type: 'button', class: 'ghost small', id: 'hl-latest', onclick: () => period.chooseDay(key) }, 'Show that day'),
        ' ',
        el('button', { type: 'button', class: 'ghost small', id: 'hl-month', onclick: () => period.choose('last30') }, 'Show the last 30 days'),
      );
    }
    return;
  }
  $('#hl-time').textContent = fmtValue(o.total, h.basis);
  $('#hl-time').dataset.ms = String(h.basis === 'time' ? h.value : 0);
  $('#hl-time').title = h.basis === 'time'
    ? 'Time spent on the pages of this period: measured by the browser extension, or estimated (≈) from imported history where it was not measured'
    : '';
  $('#hl-change').textContent = changeText(h, p.compareLabel);
  $('#hl-estimated').textContent = estimateText(h);
  if (h.basis === 'visits') {
    $('#hl-fallback').textContent = 'No time is known for this period (imported Firefox or Safari history has none, and the browser extension was not recording), so it is counted in visits.';
  } else {
    const visits = `${fmtNumber(h.visits)} visit${h.visits === 1 ? '' : 's'}`;
    $('#hl-fallback').textContent = h.untimed_visits > 0 ? `${visits}, ${fmtNumber(h.untimed_visits)} of them without a known time.` : `${visits}.`;
  }
}

function drawSplit(o) {
  const basis = basisOf(o);
  const slices = o.categories
    .map((c) => ({ key: c.key, value: valueOf(c, basis), row: c }))
    .filter((s) => s.value > 0);
  const sum = slices.reduce((a, s) => a + s.value, 0);
  $('#split-title').textContent = basis === 'time' ? 'By category (time spent)' : 'By category (visits: no time known)';
  drawDonut($('#split-chart'), slices, {
    // The centre is the headline's figure: the slices add up to it.
    centre: sum > 0 ? fmtValue(o.total, basis) : '',
    describe: (s) => `${fmtValue(s.row, basis)}, ${pct(s.value, sum)}`,
    onCategory: openCategory,
  });
  const list = $('#split-legend');
  list.replaceChildren(...slices.map((s) => el('li', { 'data-category': s.key },
    legendKey(s.key, openCategory),
    el('span', { class: 'n', text: fmtValue(s.row, basis) }),
    el('span', { class: 'pct', text: pct(s.value, sum) }))));
  if (slices.length === 0) list.append(el('li', { class: 'muted', text: 'Nothing to split yet.' }));
  drawDevices(o, basis);
}

/** The period split by the device that recorded it (once this device syncs with others). */
function drawDevices(o, basis) {
  const rows = (o.devices || []).map((d) => ({ name: d.key, value: valueOf(d, basis), row: d })).filter((d) => d.value > 0);
  const sum = rows.reduce((a, d) => a + d.value, 0);
  const show = rows.length > 1;
  $('#split-devices-title').hidden = !show;
  const list = $('#split-devices');
  list.hidden = !show;
  list.replaceChildren(...(show ? rows.map((d) => el('li', { 'data-device': d.name },
    el('span', { class: 'd', text: d.name }),
    el('span', { class: 'n', text: fmtValue(d.row, basis) }),
    el('span', { class: 'pct', text: pct(d.value, sum) }))) : []));
}

function siteRow(w, figure, titleText) {
  return el('li', { 'data-domain': w.domain },
    // A name the window cuts shows whole on hover and on focus (tip.js).
    el('button', { type: 'button', class: 'd linkish', 'data-tip': w.display, 'aria-label': `${w.display}: open its page`, onclick: () => openWebsite(w.domain) }, w.display),
    el('button', { type: 'button', class: 'cat-link linkish', 'data-tip': categoryName(w.category), 'aria-label': `${categoryName(w.category)}: show its history`, onclick: () => openCategory(w.category || 'uncategorized') }, categoryLabel(w.category)),
    el('span', { class: 'n', title: titleText, text: figure }));
}

function drawTopTime(o) {
  const list = $('#top-time');
  list.replaceChildren();
  if (o.top_by_time.length === 0) {
    list.append(el('li', { class: 'muted', text: 'No time known in this period.' }));
    return;
  }
  for (const w of o.top_by_time) {
    // Marked ≈ as soon as any of it is estimated, as the headline is.
    const t = w.time;
    list.append(siteRow(w, fmtValue(t, 'time'),
      `${fmtNumber(t.visits)} visits${t.estimated_ms ? `, ${fmtSpent(t.estimated_ms)} of it estimated from imported history` : ''}`));
  }
}

function drawTopVisits(o) {
  const list = $('#top-sites');
  list.replaceChildren();
  if (o.top_by_visits.length === 0) {
    list.append(el('li', { class: 'muted', text: 'No visits in this period.' }));
    return;
  }
  for (const w of o.top_by_visits) {
    const li = siteRow(w, fmtNumber(w.time.visits), `${fmtNumber(w.time.visits)} visits`);
    li.append(el('button', {
      type: 'button', class: 'ghost small forget-site', 'aria-label': `Forget ${w.display}`,
      onclick: () => forget.forgetWebsite(w.domain, w.display),
    }, 'Forget'));
    list.append(li);
  }
}

function pauseText(q) {
  if (!q.pause) return null;
  const p = q.pause;
  const when = p.until ? `tries again at ${fmtTime(p.until)}` : 'waits for you (check Settings)';
  const what = { offline: 'offline', rate_limited: 'rate limited', needs_user: 'needs attention' }[p.kind] || p.kind;
  return `Paused (${what}): ${p.reason} — ${when}`;
}

/** Queue counts, pause and ETA: cheap, refreshed on every outbox change. */
export async function refreshQueue() {
  let q;
  try {
    q = await call('get_queue');
  } catch (e) {
    $('#worker-status').textContent = `Could not read the queue: ${describe(e)}`;
    return;
  }
  const s = q.queue;
  lastProvider = q.provider;
  $('#q-pending').textContent = fmtNumber(s.pending);
  $('#q-processing').textContent = fmtNumber(s.processing);
  $('#q-completed').textContent = fmtNumber(s.completed);
  $('#q-failed').textContent = fmtNumber(s.failed);
  $('#q-failed').parentElement.classList.toggle('bad', s.failed > 0);
  const badge = $('#failed-badge');
  badge.hidden = s.failed === 0;
  badge.textContent = String(s.failed);
  // The Failed tab is there only while something failed (or while it is open: retrying the last
  // one does not pull the view from under the user).
  $('#tab-failed').hidden = s.failed === 0 && $('#view-failed').hidden;

  const paused = pauseText(q);
  const pill = $('#worker-pill');
  pill.classList.toggle('paused', Boolean(paused));
  const provider = { builtin: 'built-in rules', openai: 'OpenAI-compatible', ollama: 'Ollama' }[q.provider] || q.provider;
  $('#resume').hidden = !(q.pause && q.pause.kind === 'needs_user');
  const attention = [];
  if (paused) {
    pill.textContent = 'Classifier paused';
    $('#worker-status').textContent = paused;
    attention.push(paused);
  } else if (q.problem) {
    pill.textContent = 'Check the classifier settings';
    pill.classList.add('paused');
    const text = `The saved classifier settings cannot be used (${q.problem}); the built-in rules classify meanwhile.`;
    $('#worker-status').textContent = text;
    attention.push(text);
  } else {
    const busy = s.pending + s.processing > 0;
    pill.textContent = busy ? `Classifying with ${provider}…` : `Up to date · ${provider}`;
    $('#worker-status').textContent = `Classifier: ${provider} — ${busy ? 'working' : 'idle, nothing waiting'}.` +
      (q.pause_supported ? '' : ' (Pause reasons are not available in this build yet.)');
  }
  if (q.crash) {
    const when = q.crash.at ? `, last at ${fmtTime(q.crash.at)}` : '';
    $('#worker-status').textContent += ` The classifier crashed ${fmtNumber(q.crash.count)} time${q.crash.count === 1 ? '' : 's'}${when} and restarted by itself` +
      (q.crash.message ? ` (${q.crash.message}).` : '.');
  }
  if (s.failed > 0) attention.push(`${fmtNumber(s.failed)} website${s.failed === 1 ? '' : 's'} could not be classified: see Failed.`);
  const box = $('#attention');
  box.hidden = attention.length === 0;
  box.textContent = attention.join(' ');
  const left = s.pending + s.processing;
  let eta = '';
  if (left > 0 && q.eta_seconds !== null) {
    const rate = q.rate_per_minute ? ` (${q.rate_per_minute.toFixed(q.rate_per_minute < 10 ? 1 : 0)} per minute)` : '';
    const basis = q.eta_basis === 'measured' ? `at the current pace${rate}` : 'at the configured pace';
    // With a remote provider, the websites waiting already show their built-in category.
    const what = q.provider === 'builtin' ? 'left to classify' : 'waiting for the AI (they show their built-in category meanwhile)';
    eta = `${fmtNumber(left)} website${left === 1 ? '' : 's'} ${what}: ${fmtDuration(q.eta_seconds)} ${basis}.`;
  } else if (left === 0 && q.visits > 0) {
    eta = `${fmtNumber(q.visits)} visits recorded; every website is classified or waiting for you in Failed.`;
  }
  $('#eta').textContent = eta;
  firstRun.update(q.visits);
}

/** The overview last drawn (for tests and other views). */
export function lastOverview() {
  return overview;
}
