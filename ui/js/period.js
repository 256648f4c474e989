// The chosen period of the overview: today (the default), yesterday, this week, the last 7 or 30
// days, a day or a week picked on the calendar, moved with previous/next. Kept while moving between
// views (and across a reload of the window), and told to whoever listens when it changes.
//
// A period is whole local days: its first day (YYYY-MM-DD) and how many. It is compared with the
// period of the same length before it ("yesterday", "the 7 days before"); a week still running is
// compared with the same days of last week.
import { $, el } from './dom.js';
import { dateFormat } from './locale.js';

const KEY = 'sitetrail.period';
const listeners = [];
let state = load();

/** yyyy-mm-dd of a local date. */
export function dayKey(d) {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** The local date of a yyyy-mm-dd key. */
export function parseDay(key) {
  const [y, m, d] = key.split('-').map(Number);
  return new Date(y, m - 1, d);
}

export function addDays(d, n) {
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() + n);
}

function today() {
  const now = new Date();
  return new Date(now.getFullYear(), now.getMonth(), now.getDate());
}

/** Monday of the week of `d` (weeks start on Monday, as ISO 8601 has it). */
function mondayOf(d) {
  return addDays(d, -((d.getDay() + 6) % 7));
}

function daysBetween(a, b) {
  return Math.round((b - a) / 86_400_000);
}

function load() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY));
    if (s && typeof s.kind === 'string' && typeof s.first === 'string') return s;
  } catch (_) {
    // A damaged saved period is no period: start with today.
  }
  return { kind: 'today', first: dayKey(today()), days: 1 };
}

const shortDay = dateFormat({ weekday: 'short', day: 'numeric', month: 'short' });
const shortDayYear = dateFormat({ weekday: 'short', day: 'numeric', month: 'short', year: 'numeric' });
const dayMonth = dateFormat({ day: 'numeric', month: 'short' });

function fmtDay(d) {
  return (d.getFullYear() === today().getFullYear() ? shortDay : shortDayYear).format(d);
}

/** The period now chosen: {kind, first, days, label, compareFirst, compareLabel, last, includesToday}. */
export function current() {
  // "Today" and the rolling periods follow the clock: resolve them now, not when chosen.
  const t = today();
  let { kind, first, days } = state;
  if (kind === 'today') [first, days] = [dayKey(t), 1];
  else if (kind === 'yesterday') [first, days] = [dayKey(addDays(t, -1)), 1];
  else if (kind === 'this-week') {
    const monday = mondayOf(t);
    [first, days] = [dayKey(monday), daysBetween(monday, t) + 1];
  } else if (kind === 'last7' || kind === 'last30') {
    days = kind === 'last7' ? 7 : 30;
    first = dayKey(addDays(t, 1 - days));
  }
  const start = parseDay(first);
  const last = addDays(start, days - 1);
  let label;
  let compareFirst = dayKey(addDays(start, -days));
  let compareLabel;
  if (days === 1) {
    const n = daysBetween(start, t);
    label = n === 0 ? 'Today' : n === 1 ? 'Yesterday' : fmtDay(start);
    compareLabel = n === 0 ? 'yesterday' : 'the day before';
  } else if (kind === 'this-week' || kind === 'week') {
    const n = daysBetween(mondayOf(t), start) / 7;
    label = n === 0 ? 'This week' : n === -1 ? 'Last week' : `Week of ${fmtDay(start)}`;
    compareFirst = dayKey(addDays(start, -7));
    compareLabel = days < 7 ? 'the same days last week' : 'the week before';
  } else {
    label = kind === 'last7' ? 'Last 7 days' : kind === 'last30' ? 'Last 30 days' : `${dayMonth.format(start)} – ${dayMonth.format(last)}`;
    compareLabel = `the ${days} days before`;
  }
  return { kind, first, days, label, compareFirst, compareLabel, last: dayKey(last), includesToday: last >= t };
}

function set(next) {
  state = next;
  try {
    sessionStorage.setItem(KEY, JSON.stringify(state));
  } catch (_) {
    // Without storage the period still holds while the window is open.
  }
  paint();
  for (const f of listeners) f(current());
}

/** Chooses a preset: today, yesterday, this-week, last7, last30. */
export function choose(kind) {
  set({ kind, first: dayKey(today()), days: 1 });
}

/** Chooses one day (yyyy-mm-dd), e.g. a day clicked in a chart. */
export function chooseDay(key) {
  const n = daysBetween(parseDay(key), today());
  if (n === 0) return choose('today');
  if (n === 1) return choose('yesterday');
  return set({ kind: 'day', first: key, days: 1 });
}

/** Chooses the week (Monday to Sunday) of a day. */
export function chooseWeek(key) {
  const monday = mondayOf(parseDay(key));
  if (dayKey(monday) === dayKey(mondayOf(today()))) return choose('this-week');
  return set({ kind: 'week', first: dayKey(monday), days: 7 });
}

/** Moves one period back (-1) or forward (+1); never past today. */
export function shift(dir) {
  const p = current();
  if (dir > 0 && p.includesToday) return;
  if (p.days === 1) return chooseDay(dayKey(addDays(parseDay(p.first), dir)));
  if (p.kind === 'this-week' || p.kind === 'week') return chooseWeek(dayKey(addDays(parseDay(p.first), 7 * dir)));
  const first = addDays(parseDay(p.first), dir * p.days);
  const last = addDays(first, p.days - 1);
  if (daysBetween(last, today()) === 0 && (p.days === 7 || p.days === 30)) return choose(p.days === 7 ? 'last7' : 'last30');
  return set({ kind: 'range', first: dayKey(first), days: p.days });
}

/** Calls `f(period)` whenever the period changes. */
export function onChange(f) {
  listeners.push(f);
}

const PRESETS = [
  ['today', 'Today'],
  ['yesterday', 'Yesterday'],
  ['this-week', 'This week'],
  ['last7', 'Last 7 days'],
  ['last30', 'Last 30 days'],
];

/** Builds the period bar into `box` (once). */
export function init(box) {
  const prev = el('button', { type: 'button', class: 'ghost small', id: 'p-prev', 'aria-label': 'Previous period', onclick: () => shift(-1) }, '‹');
  const next = el('button', { type: 'button', class: 'ghost small', id: 'p-next', 'aria-label': 'Next period', onclick: () => shift(1) }, '›');
  const label = el('h2', { id: 'p-label', class: 'period-label', 'aria-live': 'polite' });
  const presets = el('div', { class: 'presets', role: 'group', 'aria-label': 'Period' },
    ...PRESETS.map(([kind, text]) => el('button', { type: 'button', class: 'ghost small', 'data-period': kind, onclick: () => choose(kind) }, text)));
  const picker = el('input', { type: 'date', id: 'p-day', 'aria-label': 'Pick a day', max: dayKey(today()) });
  picker.addEventListener('change', () => {
    if (!picker.value) return;
    if (weekPick.checked) chooseWeek(picker.value);
    else chooseDay(picker.value);
  });
  const weekPick = el('input', { type: 'checkbox', id: 'p-week' });
  weekPick.addEventListener('change', () => {
    if (picker.value) (weekPick.checked ? chooseWeek : chooseDay)(picker.value);
  });
  box.replaceChildren(
    el('div', { class: 'period-nav' }, prev, label, next),
    presets,
    el('div', { class: 'pick' },
      el('label', { class: 'inline' }, 'Pick ', picker),
      el('label', { class: 'check' }, weekPick, ' its whole week')),
  );
  paint();
}

function paint() {
  const p = current();
  const label = $('#p-label');
  if (!label) return;
  label.textContent = p.label;
  label.title = p.days === 1 ? fmtDay(parseDay(p.first)) : `${fmtDay(parseDay(p.first))} – ${fmtDay(parseDay(p.last))}`;
  $('#p-next').disabled = p.includesToday;
  for (const b of document.querySelectorAll('.presets [data-period]')) {
    b.setAttribute('aria-pressed', String(b.dataset.period === p.kind));
  }
  const picker = $('#p-day');
  picker.max = dayKey(today());
  // The picker always shows the period's first day: a real value, never a placeholder that
  // looks like a filter.
  picker.value = p.first;
}

/** The period's bounds as RFC 3339 instants, for the history's filters: [from, to]. */
export function bounds(p = current()) {
  const from = parseDay(p.first);
  const to = addDays(parseDay(p.last), 1);
  return { from: from.toISOString(), to: new Date(to.getTime() - 1).toISOString() };
}
