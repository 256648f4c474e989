// Time spent: the overview's stacked bars of time per category per day (7 or 30 days) next to
// the visit counts, the top websites by time, and the time of each visit in the history list.
// A day with nothing recorded says so; a day with visits but no measured time says that instead
// of drawing a zero as if it had been measured.
import { call, describe } from './api.js';
import { $, el, fmtNumber, categoryName, toast } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
/** Distinct colours for the categories with the most time; the rest share one. */
const COLOURS = 6;
let summary = null;

/** "45 s", "12 min", "1 h 05 min"; "0 s" for zero. */
export function fmtSpent(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
}

const weekday = new Intl.DateTimeFormat(undefined, { weekday: 'short' });
const dayMonth = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' });
const longDay = new Intl.DateTimeFormat(undefined, { weekday: 'long', day: 'numeric', month: 'long' });

function dateOf(day) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d);
}

function svg(tag, attrs = {}, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

export function init() {
  for (const r of document.querySelectorAll('input[name="time-period"]')) r.addEventListener('change', draw);
}

/** Loads the time summary and draws it. */
export async function refresh() {
  try {
    summary = await call('get_time_summary');
  } catch (e) {
    toast(`Could not load the time spent: ${describe(e)}`, true);
    return;
  }
  draw();
  drawTop();
}

function total(row) {
  return row.active_ms + row.estimated_ms;
}

function draw() {
  const box = $('#time-chart');
  if (!box || !summary) return;
  const period = document.querySelector('input[name="time-period"]:checked').value;
  const days = period === '7' ? summary.days.slice(-7) : summary.days;
  // The categories with the most time in the window get their own colour.
  const perCategory = new Map();
  for (const d of days) for (const c of d.categories) perCategory.set(c.key, (perCategory.get(c.key) || 0) + total(c));
  const ranked = [...perCategory.entries()].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]).map(([k]) => k);
  const colour = (key) => {
    const i = ranked.indexOf(key);
    return i >= 0 && i < COLOURS ? `seg-${i + 1}` : 'seg-other';
  };
  const empty = days.filter((d) => d.total.visits === 0).length;
  const untimed = days.filter((d) => d.total.visits > 0 && total(d.total) === 0).length;
  const anyEstimate = days.some((d) => d.total.estimated_ms > 0);
  const max = Math.max(60_000, ...days.map((d) => total(d.total)));

  const W = 720;
  const H = 210;
  const top = 22;
  const bottom = 30;
  const left = 6;
  const slot = (W - left) / days.length;
  const barW = Math.max(4, Math.min(44, slot * 0.7));
  const plotH = H - top - bottom;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img' });
  chart.append(svg('title', {}, `Time per category per day, last ${days.length} days`));
  chart.append(svg('line', { x1: left, x2: W, y1: top + plotH, y2: top + plotH, class: 'axis' }));
  chart.append(svg('text', { x: left, y: 12, class: 'n' }, `scale: ${fmtSpent(max)} at the top`));

  days.forEach((d, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const g = svg('g', { class: 'day', 'data-day': d.day });
    const when = longDay.format(dateOf(d.day));
    if (d.total.visits === 0) {
      g.setAttribute('data-state', 'nothing');
      g.append(svg('rect', { x, y: top + plotH - 3, width: barW, height: 3, class: 'bar-nothing' }));
      g.append(svg('title', {}, `${when}: nothing recorded`));
      if (days.length <= 7) g.append(svg('text', { x: x + barW / 2, y: top + plotH - 8, class: 'none-label', 'text-anchor': 'middle' }, 'nothing recorded'));
    } else if (total(d.total) === 0) {
      g.setAttribute('data-state', 'untimed');
      g.append(svg('rect', { x, y: top + plotH - 3, width: barW, height: 3, class: 'bar-untimed' }));
      g.append(svg('title', {}, `${when}: ${fmtNumber(d.total.visits)} visits, no time measured`));
      if (days.length <= 7) g.append(svg('text', { x: x + barW / 2, y: top + plotH - 8, class: 'none-label', 'text-anchor': 'middle' }, 'no time measured'));
    } else {
      g.setAttribute('data-state', 'timed');
      let y = top + plotH;
      const lines = [];
      for (const c of d.categories) {
        for (const [ms, est] of [[c.active_ms, false], [c.estimated_ms, true]]) {
          if (ms <= 0) continue;
          const h = Math.max(1, (ms / max) * plotH);
          y -= h;
          const rect = svg('rect', { x, y, width: barW, height: h, class: `seg ${colour(c.key)}${est ? ' est' : ''}`, 'data-category': c.key });
          rect.append(svg('title', {}, `${categoryName(c.key === 'uncategorized' ? null : c.key)}: ${est ? 'about ' : ''}${fmtSpent(ms)}${est ? ' (estimated)' : ''}, ${fmtNumber(c.visits)} visits`));
          g.append(rect);
        }
        lines.push(`${categoryName(c.key === 'uncategorized' ? null : c.key)} ${fmtSpent(total(c))}`);
      }
      g.append(svg('title', {}, `${when}: ${fmtSpent(total(d.total))}, ${fmtNumber(d.total.visits)} visits — ${lines.join(', ')}`));
    }
    // The visit count above the bar, next to the time.
    if (d.total.visits > 0 && days.length <= 7) {
      // Above the bar; above the "no time measured" label on a day without time.
      const barTop = total(d.total) > 0 ? top + plotH - (total(d.total) / max) * plotH : top + plotH - 16;
      const n = d.total.visits;
      g.append(svg('text', { x: x + barW / 2, y: Math.max(top - 4, barTop - 4), class: 'n visits', 'text-anchor': 'middle' }, `${fmtNumber(n)} visit${n === 1 ? '' : 's'}`));
    }
    const label = days.length <= 7 ? `${weekday.format(dateOf(d.day))} ${dateOf(d.day).getDate()}` : i % 5 === 0 || i === days.length - 1 ? dayMonth.format(dateOf(d.day)) : '';
    const anchor = days.length > 7 && i === days.length - 1 ? 'end' : 'middle';
    if (label) g.append(svg('text', { x: anchor === 'end' ? x + barW : x + barW / 2, y: H - 10, class: 'n', 'text-anchor': anchor }, label));
    chart.append(g);
  });
  box.replaceChildren(chart);

  const legend = $('#time-legend');
  const keys = ranked.slice(0, COLOURS).map((k) => el('span', { class: 'key' }, el('span', { class: `swatch ${colour(k)}` }), categoryName(k === 'uncategorized' ? null : k)));
  if (ranked.length > COLOURS) keys.push(el('span', { class: 'key' }, el('span', { class: 'swatch seg-other' }), 'Other categories'));
  legend.replaceChildren(...keys);
  const notes = [];
  if (ranked.length === 0) {
    notes.push(`No time measured in the last ${days.length} days. Link the browser extension (Settings → Browser extension) to measure it; visits are counted either way.`);
  }
  if (empty) notes.push(`Nothing recorded on ${empty} of the ${days.length} days.`);
  if (untimed) notes.push(`${untimed} day${untimed === 1 ? '' : 's'} with visits but no time measured (imported Firefox or Safari history has none).`);
  if (anyEstimate) notes.push('Lighter parts are estimates from imported Chrome history (at most 10 minutes a visit).');
  $('#time-note').textContent = notes.join(' ');
}

function drawTop() {
  const list = $('#top-time');
  if (!list) return;
  list.replaceChildren();
  if (summary.top_websites.length === 0) {
    list.append(el('li', { class: 'muted', text: 'No time measured yet.' }));
    return;
  }
  for (const w of summary.top_websites) {
    const estimateOnly = w.active_ms === 0;
    list.append(el('li', {},
      el('span', { class: 'd', title: w.key, text: w.key }),
      el('span', { class: 'n', title: `${fmtNumber(w.visits)} visits${w.estimated_ms ? `, ${fmtSpent(w.estimated_ms)} of it estimated` : ''}`, text: `${estimateOnly ? '≈ ' : ''}${fmtSpent(total(w))}` })));
  }
}

/** Fills in the time spent of the history rows whose visits are `ids` (their `.spent` spans). */
export async function annotate(ids) {
  if (ids.length === 0) return;
  let times;
  try {
    times = await call('get_visit_times', { ids });
  } catch {
    return; // the list works without times
  }
  for (const t of times) {
    const measured = t.active_ms !== null;
    const ms = measured ? t.active_ms : t.estimated_ms;
    for (const span of document.querySelectorAll(`.spent[data-visit="${t.visit_id}"]`)) {
      span.textContent = `${measured ? '' : '≈ '}${fmtSpent(ms)}`;
      span.title = measured ? 'Time this page was in front of you' : 'Estimated from the browser’s history (how long the page stayed open, at most 10 minutes)';
      span.classList.toggle('est', !measured);
    }
  }
}
