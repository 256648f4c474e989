// The day timeline (ActivityWatch's timeline is the model): the time of day across, each visit a
// block from when it started for as long as it was in front of the user, in its category's colour.
// Hover (or focus) shows the site, title, time and duration; a click opens the visit in History.
// A visit with no known time is a thin outlined mark: it happened, for an unknown while.
import { call, describe, markOnce } from './api.js';
import { $, el, fmtSpent, categoryName, toast } from './dom.js';
import { colourOf } from './colours.js';
import { svg, legendKey, onResize } from './timecharts.js';
import { go } from './nav.js';
import { dateFormat } from './locale.js';

const timeOnly = dateFormat({ hour: '2-digit', minute: '2-digit' });
let shownDay = null;
let data = null;
let generation = 0;

export function init() {
  const box = $('#timeline');
  box.addEventListener('mouseleave', hideTip);
}

/** Loads and draws the timeline of `day` (yyyy-mm-dd); `asked`: its answer, when already asked for. */
export async function refresh(day, asked = call('get_timeline', { day })) {
  const gen = ++generation;
  let t;
  try {
    t = await asked;
    markOnce('timeline answer');
  } catch (e) {
    toast(`Could not load the day's timeline: ${describe(e)}`, true);
    return;
  }
  if (gen !== generation) return;
  shownDay = day;
  data = t;
  const box = $('#timeline');
  onResize(box, () => draw(box));
  draw(box);
}

/** The known time of a visit (ms) and whether it is an estimate; 0 for none. */
function durationOf(v) {
  if (v.active_ms !== null) return [v.active_ms, false];
  if (v.estimated_ms !== null) return [v.estimated_ms, true];
  return [0, false];
}

function startOfDay(day) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d).getTime();
}

function draw(box) {
  if (!data) return;
  const visits = data.visits;
  const dayStart = startOfDay(shownDay);
  if (visits.length === 0) {
    box.replaceChildren(el('p', { class: 'empty', text: 'No visits on this day.' }));
    return;
  }
  // The axis spans the visits, not the day: from the first start to the last end, rounded out to
  // the tick step, at least ten minutes. A morning of five minutes fills the width as a whole
  // day does, instead of a thin stripe on a fixed four-hour axis.
  const starts = visits.map((v) => new Date(v.visited_at).getTime());
  const ends = visits.map((v, i) => starts[i] + durationOf(v)[0]);
  const W = Math.max(280, box.clientWidth || 600);
  const left = 8;
  const right = 8;
  const top = 6;
  const laneH = 40;
  const H = top + laneH + 28;
  const { from, to, step } = axisSpan(Math.min(...starts) - dayStart, Math.max(...ends) - dayStart, W - left - right);
  const span = to - from;
  const x = (t) => left + ((t - dayStart - from) / span) * (W - left - right);
  const chart = svg('svg', { width: W, height: H, role: 'img' });
  chart.dataset.from = String(from);
  chart.dataset.to = String(to);
  const clock = (t) => timeOnly.format(new Date(dayStart + t));
  chart.append(svg('title', {}, `Visits from ${clock(from)} to ${clock(to)}`));
  // A tick every step, labelled while the labels have room (else every second or third).
  const ticks = Math.round(span / step);
  const every = [1, 2, 3, 4, 6].find((n) => ((W - left - right) / ticks) * n >= 72) || 6;
  for (let i = 0; i <= ticks; i += 1) {
    const t = from + i * step;
    const xx = x(dayStart + t);
    const labelled = i % every === 0;
    chart.append(svg('line', { x1: xx, x2: xx, y1: top, y2: top + laneH + 4, class: labelled ? 'grid-line' : 'grid-line faint' }));
    if (labelled) chart.append(svg('text', { x: xx, y: H - 8, class: 'n tick', 'text-anchor': i === 0 ? 'start' : i === ticks ? 'end' : 'middle' }, clock(t)));
  }
  chart.append(svg('line', { x1: left, x2: W - right, y1: top + laneH, y2: top + laneH, class: 'axis' }));
  visits.forEach((v, i) => {
    const [ms, est] = durationOf(v);
    const x1 = x(starts[i]);
    const w = Math.max(3, x(starts[i] + ms) - x1);
    const key = v.category || 'uncategorized';
    const block = svg('rect', {
      x: x1, y: top + 2, width: w, height: laneH - 4, rx: 2,
      fill: colourOf(key),
      class: `block${est ? ' est' : ''}${ms === 0 ? ' untimed' : ''}`,
      'data-visit': v.visit_id,
      'data-category': key,
      tabindex: '0',
      role: 'button',
      'aria-label': `${v.display}, ${timeOnly.format(new Date(v.visited_at))}, ${describeTime(ms, est)}`,
    });
    block.addEventListener('mouseenter', (e) => showTip(v, ms, est, e));
    block.addEventListener('mousemove', (e) => moveTip(e));
    block.addEventListener('focus', () => showTip(v, ms, est, null, block));
    block.addEventListener('blur', hideTip);
    block.addEventListener('click', () => openVisit(v));
    block.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') openVisit(v);
    });
    chart.append(block);
  });
  const cats = [...new Set(visits.map((v) => v.category || 'uncategorized'))];
  const legend = el('div', { class: 'legend' }, ...cats.map((k) => legendKey(k, null)));
  const notes = [];
  if (visits.some((v) => durationOf(v)[0] === 0)) notes.push('Outlined marks: visits with no known time.');
  if (visits.some((v) => durationOf(v)[1])) notes.push('Paler blocks: estimated from imported history.');
  if (data.truncated) notes.push(`Only the first ${visits.length} visits of the day are shown.`);
  notes.push('Click a block to open the visit in History.');
  box.replaceChildren(chart, legend, el('p', { class: 'line muted small', text: notes.join(' ') }));
}

/** Tick steps of the axis (minutes). */
const STEPS_MIN = [1, 2, 5, 10, 15, 30, 60, 120, 180];

/**
 * The axis for visits from `first` to `last` (ms after midnight) on `width` pixels: whole steps
 * of 1 minute to 3 hours, one every 80 px at most, at least 10 minutes, inside the day.
 */
export function axisSpan(first, last, width) {
  const DAY = 24 * 3_600_000;
  let lo = Math.max(0, first);
  let hi = Math.min(DAY, Math.max(last, lo + 1));
  const MIN_SPAN = 10 * 60_000;
  if (hi - lo < MIN_SPAN) {
    const mid = (lo + hi) / 2;
    lo = Math.max(0, mid - MIN_SPAN / 2);
    hi = Math.min(DAY, lo + MIN_SPAN);
    lo = Math.max(0, hi - MIN_SPAN);
  }
  const most = Math.max(2, Math.floor(width / 80));
  const step = (STEPS_MIN.find((m) => (hi - lo) / (m * 60_000) <= most) || 180) * 60_000;
  return { from: Math.floor(lo / step) * step, to: Math.min(DAY, Math.ceil(hi / step) * step), step };
}

function describeTime(ms, est) {
  if (ms === 0) return 'no known time';
  return est ? `about ${fmtSpent(ms)} (estimated)` : fmtSpent(ms);
}

function showTip(v, ms, est, e, anchor) {
  const tip = $('#timeline-tip');
  tip.replaceChildren(
    el('strong', { text: v.display }),
    el('span', { class: 'muted', text: ` · ${categoryName(v.category)}` }),
    el('div', { class: 't', text: v.title || v.url }),
    el('div', { class: 'muted', text: `${timeOnly.format(new Date(v.visited_at))} · ${describeTime(ms, est)}` }),
  );
  tip.hidden = false;
  if (e) moveTip(e);
  else if (anchor) {
    const r = anchor.getBoundingClientRect();
    place(tip, r.left + r.width / 2, r.bottom);
  }
}

function moveTip(e) {
  place($('#timeline-tip'), e.clientX, e.clientY + 14);
}

/** Puts the tip near (x, y) in the viewport, inside the window. CSSOM, not a style attribute. */
function place(tip, x, y) {
  const w = tip.offsetWidth;
  tip.style.left = `${Math.max(4, Math.min(window.innerWidth - w - 4, x - w / 2))}px`;
  tip.style.top = `${Math.min(window.innerHeight - tip.offsetHeight - 4, y)}px`;
}

function hideTip() {
  $('#timeline-tip').hidden = true;
}

function openVisit(v) {
  hideTip();
  go('history', { first: shownDay, last: shownDay, visit: v.visit_id });
}
