// Limits and goals: the overview's card (each limit and goal with its progress in its period, and
// per day when the overview shows a week), the dialog that sets one (from the overview, a
// website's page, the history of a category, the weekly report and Settings), Settings' list with
// Remove, and the website page's line. Targets and durations are parsed by the library (30m, 2h,
// 1h30m, 1:30); its words are shown under the form and nothing is stored on bad input. Every
// screen redraws when the backend says limits changed (here, in the CLI, the extension's popup or
// on another device through sync) and, for the progress, when visits were recorded.
import { call, describe, listen, STORE_CHANGED } from './api.js';
import { $, el, fmtSpent, showModal, toast } from './dom.js';
import { categoryLabel } from './colours.js';
import { dateFormat } from './locale.js';
import * as period from './period.js';
import { go } from './nav.js';
import * as focus from './focus.js';
import * as reminders from './reminders.js';

/** The last answer of `list_limits`: {limits: [...progress], reminders_asked}. */
let view = null;
/** The report of the week the overview shows, when it shows one (Monday to Sunday). */
let week = null;
let generation = 0;
let refreshedAt = 0;
let pending = null;
/** New visits redraw the progress at most this often. */
const MIN_INTERVAL_MS = 2_000;
const dayName = dateFormat({ weekday: 'short' });

export const KIND_WORDS = { max: 'at most', min: 'at least' };
export const PER_WORDS = { day: 'a day', week: 'a week' };
/** A state as people say it: the CLI's words. */
export const STATE_WORDS = { kept: 'kept', over: 'over', met: 'met', not_yet: 'not yet' };

/** "at most 30 min a day". */
export function describeLimit(l) {
  return `${KIND_WORDS[l.kind]} ${fmtSpent(l.minutes * 60_000)} ${PER_WORDS[l.period]}`;
}

/** A limit's target as a label: a category with its colour, or the website. */
export function targetLabel(l) {
  return l.target_type === 'category'
    ? categoryLabel(l.target)
    : el('span', { class: 'site-name', text: l.target_name, title: l.target });
}

export function stateChip(state, title = null) {
  return el('span', { class: `state-chip ${state}`, text: STATE_WORDS[state] || state, title });
}

/** "Mon", from a yyyy-mm-dd key. */
export function dayLabel(key) {
  return dayName.format(period.parseDay(key));
}

const SVG = 'http://www.w3.org/2000/svg';
/** How far a limit's time has gone into it: an SVG bar (the CSP allows no inline styles). */
function bar(activeMs, limitMs) {
  const pct = limitMs > 0 ? Math.min(100, (100 * activeMs) / limitMs) : 100;
  const s = document.createElementNS(SVG, 'svg');
  s.setAttribute('class', 'lbar');
  s.setAttribute('viewBox', '0 0 100 6');
  s.setAttribute('preserveAspectRatio', 'none');
  s.setAttribute('aria-hidden', 'true');
  for (const [cls, w] of [['track', 100], ['fill', pct]]) {
    const r = document.createElementNS(SVG, 'rect');
    r.setAttribute('class', cls);
    r.setAttribute('width', String(w));
    r.setAttribute('height', '6');
    r.setAttribute('rx', '3');
    s.append(r);
  }
  return s;
}

/** "40 min of 30 min: over", "12 min of 2 h 00 min: 1 h 48 min to go". */
export function figures(kind, state, activeMs, limitMs) {
  const of = `${fmtSpent(activeMs)} of ${fmtSpent(limitMs)}`;
  if (state === 'kept') return `${of}, ${fmtSpent(limitMs - activeMs)} left`;
  if (state === 'not_yet') return `${of}, ${fmtSpent(limitMs - activeMs)} to go`;
  return of;
}

function keyOf(l) {
  return `${l.target_type}:${l.target}:${l.period}:${l.kind}`;
}

function item(l, extra = []) {
  return el('li', {
    'data-target': l.target, 'data-kind': l.kind, 'data-period': l.period,
  }, ...extra);
}

/** One limit with its progress in the current period. */
function progressItem(p) {
  const li = item(p,
    [el('span', { class: 'what' }, targetLabel(p), ` ${describeLimit(p)}`),
      el('span', { class: 'figures' }, `${figures(p.kind, p.state, p.active_ms, p.limit_ms)} `, stateChip(p.state)),
      bar(p.active_ms, p.limit_ms)]);
  li.dataset.state = p.state;
  li.dataset.activeMs = String(p.active_ms);
  return li;
}

/** One limit over the week the overview shows: its state each day (or the week's). */
function weekItem(l) {
  const last = l.periods[l.periods.length - 1];
  const state = last ? last.state : 'kept';
  const unit = l.period === 'day' ? (l.periods.length === 1 ? 'day' : 'days') : 'week';
  const li = item(l, [
    el('span', { class: 'what' }, targetLabel(l), ` ${describeLimit(l)}`),
    el('span', { class: 'figures', text: `${l.kind === 'max' ? 'kept' : 'met'} ${l.kept} of ${l.periods.length} ${unit}` }),
    el('span', { class: 'days' }, ...l.periods.map((p) => {
      const when = l.period === 'day' ? dayLabel(p.first_day) : 'This week';
      const chip = stateChip(p.state, `${when}: ${figures(l.kind, p.state, p.active_ms, l.minutes * 60_000)}`);
      chip.textContent = `${when} ${STATE_WORDS[p.state]}`;
      chip.dataset.day = p.first_day;
      chip.dataset.state = p.state;
      return chip;
    })),
  ]);
  li.dataset.state = state;
  return li;
}

/** The overview shows a week (Monday to Sunday; this one up to today): the limits are drawn day by day. */
function shownWeek() {
  const p = period.current();
  return p.kind === 'this-week' || p.kind === 'week' ? p.first : null;
}

function drawCard() {
  if (!view) return;
  const list = $('#l-list');
  if (week) {
    list.replaceChildren(...week.limits.map(weekItem));
    $('#l-period').textContent = 'Day by day in the week shown; measured active time only.';
  } else {
    list.replaceChildren(...view.limits.map(progressItem));
    $('#l-period').textContent = view.limits.length ? 'Today for daily ones, this week for weekly ones; measured active time only.' : '';
  }
  $('#l-empty').hidden = view.limits.length > 0;
  $('#limits-card').dataset.view = week ? 'week' : 'now';
  $('#l-ask').hidden = view.reminders_asked || view.limits.length === 0;
}

/** The settings list: each limit with Remove. */
function drawSettings() {
  if (!view) return;
  $('#s-limit-list').replaceChildren(...view.limits.map((p) => item(p, [
    el('span', { class: 'what' }, targetLabel(p), ` ${describeLimit(p)}`),
    el('span', { class: 'acts' },
      el('button', { type: 'button', class: 'ghost small', onclick: () => openDialog({ limit: p }) }, 'Change…'),
      el('button', { type: 'button', class: 'ghost small remove', 'aria-label': `Remove ${p.target_name} ${describeLimit(p)}`, onclick: (e) => remove(p, e.target) }, 'Remove')),
  ])));
  $('#s-limits-empty').hidden = view.limits.length > 0;
}

/** The website page's limits: those on its domain. */
function drawWebsite() {
  const box = $('#w-limits');
  const domain = $('#view-website').dataset.domain;
  if (!view || !domain) return box.replaceChildren();
  box.replaceChildren(...view.limits.filter((l) => l.target_type === 'domain' && l.target === domain).map(progressItem));
}

function draw() {
  drawCard();
  drawSettings();
  drawWebsite();
}

/** Loads the limits (and the week's report when the overview shows a week) and redraws. */
export async function refresh() {
  refreshedAt = Date.now();
  const gen = ++generation;
  const first = shownWeek();
  try {
    const [v, w] = await Promise.all([
      call('list_limits'),
      first ? call('get_week_report', { day: first }) : null,
    ]);
    if (gen !== generation) return;
    view = v;
    week = w;
  } catch (e) {
    if (gen === generation) toast(`Could not load the limits: ${describe(e)}`, true);
    return;
  }
  draw();
}

function refreshSoon() {
  const wait = refreshedAt + MIN_INTERVAL_MS - Date.now();
  if (wait <= 0) refresh();
  else if (!pending) pending = setTimeout(() => { pending = null; refresh(); }, wait);
}

async function remove(l, button) {
  button.disabled = true;
  try {
    view = await call('remove_limit', { target: l.target, kind: l.kind, period: l.period });
    toast(`Removed: ${l.target_name} ${describeLimit(l)}.`);
    refresh();
  } catch (e) {
    button.disabled = false;
    toast(`Could not remove it: ${describe(e)}`, true);
  }
}

// The dialog.
const SITE = '__site';

function showError(message) {
  const e = $('#ld-error');
  e.textContent = message || '';
  e.hidden = !message;
  $('#ld-duration').setAttribute('aria-invalid', message ? 'true' : 'false');
}

function syncSite() {
  $('#ld-site-label').hidden = $('#ld-target').value !== SITE;
}

/**
 * Opens the dialog for `category` (an id), `domain`, or an existing `limit` (to change its time).
 * The first field to fill is focused; Save is the form's submit.
 */
export function openDialog({ category = null, domain = null, limit = null } = {}) {
  showError('');
  const target = $('#ld-target');
  const site = $('#ld-site');
  if (limit) {
    if (limit.target_type === 'category') target.value = limit.target;
    else { target.value = SITE; site.value = limit.target; }
    document.querySelector(`input[name=ld-kind][value=${limit.kind}]`).checked = true;
    $('#ld-period').value = limit.period;
    $('#ld-duration').value = fmtSpent(limit.minutes * 60_000).replace(/ /g, '');
  } else {
    if (domain) { target.value = SITE; site.value = domain; } else {
      target.value = category || target.options[0].value;
      site.value = '';
    }
    $('#ld-duration').value = '';
  }
  syncSite();
  showModal($('#limit-dialog'));
  (category || domain || limit ? $('#ld-duration') : target).focus();
}

async function save() {
  const target = $('#ld-target').value === SITE ? $('#ld-site').value.trim() : $('#ld-target').value;
  const kind = document.querySelector('input[name=ld-kind]:checked').value;
  const args = { target, kind, period: $('#ld-period').value, duration: $('#ld-duration').value };
  $('#ld-save').disabled = true;
  try {
    view = await call('set_limit', args);
    $('#limit-dialog').close();
    toast('Saved. It counts on all your synced devices.');
    refresh();
  } catch (e) {
    // The library's words, under the form; nothing was stored.
    showError(describe(e));
    ($('#ld-target').value === SITE && !target ? $('#ld-site') : $('#ld-duration')).focus();
  } finally {
    $('#ld-save').disabled = false;
  }
}

/** The history's "Limit or goal…" shows while it is filtered to one category. */
function syncHistoryButton() {
  const c = $('#h-category').value;
  $('#h-limit').hidden = !c || c === 'uncategorized';
}

export function init(categories) {
  const target = $('#ld-target');
  target.append(...categories.map((c) => el('option', { value: c.id, text: c.name })),
    el('option', { value: SITE, text: 'A website…' }));
  target.addEventListener('change', () => {
    syncSite();
    if (target.value === SITE) $('#ld-site').focus();
  });
  $('#ld-cancel').addEventListener('click', () => $('#limit-dialog').close());
  $('#ld-form').addEventListener('submit', (e) => {
    e.preventDefault();
    save();
  });
  $('#l-add').addEventListener('click', () => openDialog());
  $('#s-limit-add').addEventListener('click', () => openDialog());
  $('#l-report').addEventListener('click', () => go('report', { day: shownWeek(), from: 'overview' }));
  $('#w-limit').addEventListener('click', () => {
    const d = $('#view-website').dataset.domain;
    if (d) openDialog({ domain: d });
  });
  $('#h-limit').addEventListener('click', () => openDialog({ category: $('#h-category').value }));
  // The history's category filter changes by hand or when the history is opened filtered.
  $('#h-category').addEventListener('change', syncHistoryButton);
  new MutationObserver(syncHistoryButton).observe($('#h-rows'), { childList: true });
  // The website page draws its domain into the view's data; its limits follow.
  new MutationObserver(drawWebsite).observe($('#view-website'), { attributes: true, attributeFilter: ['data-domain'] });
  period.onChange(() => refresh());
  $('#tab-overview').addEventListener('click', refreshSoon);
  $('#tab-settings').addEventListener('click', refresh);
  focus.init(categories);
  reminders.init(refresh);
  listen(STORE_CHANGED, (ch) => {
    if (ch.limits) {
      refresh();
      focus.refresh();
      reminders.refresh();
    } else if (ch.visits || ch.websites) refreshSoon();
  });
  // After the first view is drawn: the startup path waits for nothing here.
  requestAnimationFrame(() => setTimeout(() => { refresh(); focus.refresh(); reminders.refresh(); }, 0));
}
