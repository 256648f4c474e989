// The weekly report (`get_week_report`, the library's `week_report`: the numbers of
// `sitetrail report --week`): each category's measured active time this week against the week
// before, with the change, the trend of the whole, and each limit's and goal's state day by day.
// A week is Monday to Sunday; the current one counts up to today.
import { call, describe } from './api.js';
import { $, el, fmtSpent, toast } from './dom.js';
import { categoryLabel } from './colours.js';
import { dateFormat } from './locale.js';
import * as period from './period.js';
import { go } from './nav.js';
import { describeLimit, dayLabel, openDialog, stateChip, STATE_WORDS, targetLabel } from './limits.js';

let report = null;
let day = null;
let back = 'overview';
let visible = false;
let generation = 0;
const longDay = dateFormat({ weekday: 'short', day: 'numeric', month: 'short' });

/** "+25 min", "-1 h 05 min", "same": the CLI's words for a change. */
export function change(now, before) {
  const d = now - before;
  if (d === 0) return 'same';
  return d > 0 ? `+${fmtSpent(d)}` : `-${fmtSpent(-d)}`;
}

export function init() {
  $('#rp-back').addEventListener('click', () => go(back));
  $('#rp-prev').addEventListener('click', () => shift(-7));
  $('#rp-next').addEventListener('click', () => shift(7));
}

/** Opens the report of the week of `what.day` (yyyy-mm-dd; this week without it). */
export function open(what = {}) {
  day = what.day || null;
  back = what.from && what.from !== 'report' ? what.from : 'overview';
  load();
}

export function show() {
  visible = true;
}

export function hide() {
  visible = false;
}

export function onChange(ch) {
  if (visible && (ch.limits || ch.visits || ch.websites)) load();
}

function shift(days) {
  if (!report) return;
  const next = period.dayKey(period.addDays(period.parseDay(report.week_first_day), days));
  const thisMonday = period.dayKey(period.addDays(new Date(), -((new Date().getDay() + 6) % 7)));
  // This week is asked without a day: "so far", and no week after it.
  day = next >= thisMonday ? null : next;
  load();
}

async function load() {
  const gen = ++generation;
  let r;
  try {
    r = await call('get_week_report', day ? { day } : {});
  } catch (e) {
    toast(`Could not make the weekly report: ${describe(e)}`, true);
    return;
  }
  if (gen !== generation) return;
  report = r;
  draw();
}

function draw() {
  const r = report;
  const sofar = r.today !== r.week_last_day;
  $('#rp-title').textContent = `Week of ${longDay.format(period.parseDay(r.week_first_day))}${sofar ? ` (to ${longDay.format(period.parseDay(r.today))})` : ''}`;
  $('#view-report').dataset.week = r.week_first_day;
  $('#rp-next').disabled = day === null;
  const thisMs = r.categories.reduce((a, c) => a + c.this_week_ms, 0);
  const lastMs = r.categories.reduce((a, c) => a + c.last_week_ms, 0);
  const trend = $('#rp-trend');
  trend.textContent = r.categories.length === 0 ? ''
    : `${fmtSpent(thisMs)} this week${sofar ? ' so far' : ''}, ${fmtSpent(lastMs)} the week before (${change(thisMs, lastMs)}).`;
  trend.dataset.thisMs = String(thisMs);
  trend.dataset.lastMs = String(lastMs);
  $('#rp-cat-rows').replaceChildren(...r.categories.map((c) => el('tr', {
    'data-category': c.category, 'data-this-ms': String(c.this_week_ms), 'data-last-ms': String(c.last_week_ms),
  },
  el('td', {}, el('button', { type: 'button', class: 'linkish', title: `Set a limit or goal on ${c.name}`, onclick: () => c.category !== 'uncategorized' && openDialog({ category: c.category }) }, categoryLabel(c.category === 'uncategorized' ? null : c.category))),
  el('td', { class: 'num this', text: fmtSpent(c.this_week_ms) }),
  el('td', { class: 'num last', text: fmtSpent(c.last_week_ms) }),
  el('td', { class: 'num change', text: change(c.this_week_ms, c.last_week_ms) }))));
  $('#rp-cats-empty').hidden = r.categories.length > 0;
  $('#rp-cats').hidden = r.categories.length === 0;
  drawLimits(r);
}

function drawLimits(r) {
  const days = [...Array(7)].map((_, i) => period.dayKey(period.addDays(period.parseDay(r.week_first_day), i)));
  $('#rp-limit-head').replaceChildren(
    el('th', { scope: 'col' }, 'Target'),
    el('th', { scope: 'col', class: 'what' }, 'Limit or goal'),
    el('th', { scope: 'col', class: 'kept' }, 'Kept or met'),
    ...days.map((d) => el('th', { scope: 'col', class: 'day', text: dayLabel(d) })));
  $('#rp-limit-rows').replaceChildren(...r.limits.map((l) => {
    const unit = l.period === 'day' ? (l.periods.length === 1 ? 'day' : 'days') : 'week';
    const cells = l.period === 'week'
      ? [cell(l, l.periods[0], { colspan: '7', text: l.periods[0] ? `${STATE_WORDS[l.periods[0].state]} (${fmtSpent(l.periods[0].active_ms)})` : '' })]
      : days.map((d) => cell(l, l.periods.find((p) => p.first_day === d)));
    return el('tr', { 'data-target': l.target, 'data-kind': l.kind, 'data-period': l.period, 'data-kept': String(l.kept), 'data-counted': String(l.periods.length) },
      el('td', {}, targetLabel(l)),
      el('td', { class: 'what', text: describeLimit(l) }),
      el('td', { class: 'kept', text: `${l.kept} of ${l.periods.length} ${unit}` }),
      ...cells);
  }));
  $('#rp-limits-empty').hidden = r.limits.length > 0;
  $('#rp-limits').hidden = r.limits.length === 0;
}

/** A day's (or the week's) state; a day not counted (before it was set, after today) is blank. */
function cell(l, p, opts = {}) {
  if (!p) return el('td', { class: 'day' }, el('span', { class: 'state-chip none', text: '–', title: 'Not counted' }));
  const chip = stateChip(p.state, `${fmtSpent(p.active_ms)} of ${fmtSpent(l.minutes * 60_000)}`);
  if (opts.text) chip.textContent = opts.text;
  return el('td', { class: 'day', colspan: opts.colspan, 'data-day': p.first_day, 'data-state': p.state, 'data-active-ms': String(p.active_ms) }, chip);
}
