// The time charts: stacked bars of time per category per day (the overview's days and a website's
// days), the donut of the split by category, and the time of each visit in the history list.
//
// Charts are drawn in the container's own pixels (not a scaled viewBox), so text keeps its size at
// every window size, and are redrawn when the container changes width. Every colour is the
// category's own (colours.js) and every chart names its colours in a legend. A day with nothing
// recorded says so; a day with visits but no measured time says that instead of drawing a zero
// as if it had been measured.
import { call } from './api.js';
import { el, fmtEstimate, fmtNumber, fmtSpent, categoryName } from './dom.js';
import { colourOf, swatch } from './colours.js';
import { dateFormat } from './locale.js';

const SVG = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs = {}, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

/** Measured plus estimated time of a time row. */
export function total(row) {
  return row.active_ms + row.estimated_ms;
}

const weekday = dateFormat({ weekday: 'short' });
const dayMonth = dateFormat({ day: 'numeric', month: 'short' });
const longDay = dateFormat({ weekday: 'long', day: 'numeric', month: 'long' });

function dateOf(day) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d);
}

/** Steps of a time axis, smallest first (ms). */
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720].map((m) => m * 60_000);

/** The axis' step and top for values up to `max`: at most 5 gridlines, round units. */
export function axisFor(max) {
  const step = STEPS.find((s) => max / s <= 5) || STEPS[STEPS.length - 1];
  return { step, top: Math.max(step, Math.ceil(max / step) * step) };
}

/** A compact axis label: "30 min", "2 h", "1 h 30". */
function axisLabel(ms) {
  const min = Math.round(ms / 60_000);
  if (min < 60) return `${min} min`;
  return min % 60 === 0 ? `${min / 60} h` : `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')}`;
}

/** Redraws `draw` whenever `box` changes width (the window was resized). */
const observed = new WeakMap();
export function onResize(box, draw) {
  if (observed.has(box)) {
    observed.get(box).draw = draw;
    return;
  }
  const entry = { draw, width: box.clientWidth };
  observed.set(box, entry);
  new ResizeObserver(() => {
    if (box.clientWidth === entry.width || box.clientWidth === 0) return;
    entry.width = box.clientWidth;
    entry.draw();
  }).observe(box);
}

/**
 * Stacked bars of time per category per day into `box`. `days`: [{day, total, categories}] (a
 * website's days have no categories: pass `category` for their one colour). `onDay(day)` makes a
 * day clickable, `onCategory(key)` the legend's entries. Returns the categories drawn, most first.
 */
export function drawDays(box, days, opts = {}) {
  const draw = () => drawDaysNow(box, days, opts);
  onResize(box, draw);
  return draw();
}

function drawDaysNow(box, days, { onDay, onCategory, legend, note, category, selected } = {}) {
  const rows = days.map((d) => ({
    day: d.day || d.key,
    total: d.total || d,
    categories: d.categories || (d.visits ? [{ ...d, key: category || 'uncategorized' }] : []),
  }));
  const perCategory = new Map();
  for (const d of rows) for (const c of d.categories) perCategory.set(c.key, (perCategory.get(c.key) || 0) + total(c));
  const ranked = [...perCategory.entries()].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]).map(([k]) => k);
  const empty = rows.filter((d) => d.total.visits === 0).length;
  const untimed = rows.filter((d) => d.total.visits > 0 && total(d.total) === 0).length;
  const anyEstimate = rows.some((d) => d.total.estimated_ms > 0);
  const { step, top: scaleTop } = axisFor(Math.max(60_000, ...rows.map((d) => total(d.total))));

  const W = Math.max(280, box.clientWidth || 600);
  const H = 220;
  const top = 14;
  const bottom = 26;
  const left = 54;
  const few = rows.length <= 7;
  const slot = (W - left - 4) / rows.length;
  const barW = Math.max(3, Math.min(44, slot * 0.7));
  const plotH = H - top - bottom;
  const y = (ms) => top + plotH - (ms / scaleTop) * plotH;
  const chart = svg('svg', { width: W, height: H, role: 'img' });
  chart.append(svg('title', {}, `Time per day, ${rows.length} days; the scale is in ${axisLabel(step)} steps`));
  for (let v = 0; v <= scaleTop; v += step) {
    chart.append(svg('line', { x1: left, x2: W, y1: y(v), y2: y(v), class: v === 0 ? 'axis' : 'grid-line' }));
    chart.append(svg('text', { x: left - 6, y: y(v) + 4, class: 'n tick', 'text-anchor': 'end' }, axisLabel(v)));
  }

  rows.forEach((d, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const g = svg('g', { class: `day${onDay ? ' clickable' : ''}${selected && selected.includes(d.day) ? ' selected' : ''}`, 'data-day': d.day });
    const when = longDay.format(dateOf(d.day));
    // The whole column is the click target, not just the bar.
    g.append(svg('rect', { x: left + i * slot, y: top, width: slot, height: plotH, class: 'hit' }));
    if (d.total.visits === 0) {
      g.setAttribute('data-state', 'nothing');
      g.append(svg('rect', { x, y: top + plotH - 3, width: barW, height: 3, class: 'bar-nothing' }));
      g.append(svg('title', {}, `${when}: nothing recorded`));
      if (few && slot > 70) g.append(svg('text', { x: x + barW / 2, y: top + plotH - 8, class: 'none-label', 'text-anchor': 'middle' }, 'nothing recorded'));
    } else if (total(d.total) === 0) {
      g.setAttribute('data-state', 'untimed');
      g.append(svg('rect', { x, y: top + plotH - 3, width: barW, height: 3, class: 'bar-untimed' }));
      g.append(svg('title', {}, `${when}: ${fmtNumber(d.total.visits)} visits, no time measured`));
      if (few && slot > 70) g.append(svg('text', { x: x + barW / 2, y: top + plotH - 8, class: 'none-label', 'text-anchor': 'middle' }, 'no time measured'));
    } else {
      g.setAttribute('data-state', 'timed');
      let yy = top + plotH;
      const lines = [];
      for (const c of d.categories) {
        for (const [ms, est] of [[c.active_ms, false], [c.estimated_ms, true]]) {
          if (ms <= 0) continue;
          const h = Math.max(1, (ms / scaleTop) * plotH);
          yy -= h;
          const rect = svg('rect', { x, y: yy, width: barW, height: h, fill: colourOf(c.key), class: `seg${est ? ' est' : ''}`, 'data-category': c.key });
          rect.append(svg('title', {}, `${when}, ${categoryName(c.key)}: ${est ? 'about ' : ''}${fmtSpent(ms)}${est ? ' (estimated)' : ''}, ${fmtNumber(c.visits)} visits`));
          g.append(rect);
        }
        lines.push(`${categoryName(c.key)} ${fmtSpent(total(c))}`);
      }
      g.append(svg('title', {}, `${when}: ${fmtSpent(total(d.total))}, ${fmtNumber(d.total.visits)} visits — ${lines.join(', ')}`));
      // The day's total above its bar where there is room.
      if (few && slot > 60) g.append(svg('text', { x: x + barW / 2, y: Math.max(top + 10, y(total(d.total)) - 4), class: 'n total', 'text-anchor': 'middle' }, fmtSpent(total(d.total))));
    }
    const every = Math.ceil(rows.length / Math.max(1, Math.floor((W - left) / 56)));
    const label = few ? `${weekday.format(dateOf(d.day))} ${dateOf(d.day).getDate()}` : i % every === 0 ? dayMonth.format(dateOf(d.day)) : '';
    if (label) g.append(svg('text', { x: x + barW / 2, y: H - 8, class: 'n', 'text-anchor': 'middle' }, label));
    if (onDay) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', `Open ${when}`);
      g.addEventListener('click', () => onDay(d.day));
      g.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          onDay(d.day);
        }
      });
    }
    chart.append(g);
  });
  box.replaceChildren(chart);

  if (legend) {
    legend.replaceChildren(...ranked.map((k) => legendKey(k, onCategory)));
    if (anyEstimate) legend.append(el('span', { class: 'key muted' }, 'Paler: estimated from imported history'));
  }
  if (note) {
    const notes = [];
    if (ranked.length === 0) {
      notes.push(`No time measured on these ${rows.length} days. Link the browser extension (Settings → Browser extension) to measure it; visits are counted either way.`);
    }
    if (empty) notes.push(`Nothing recorded on ${empty} of the ${rows.length} days.`);
    if (untimed) notes.push(`${untimed} day${untimed === 1 ? '' : 's'} with visits but no time measured (imported Firefox or Safari history has none).`);
    if (onDay) notes.push('Click a day to open it.');
    note.textContent = notes.join(' ');
  }
  return ranked;
}

/** A legend entry: the colour and the category's name; a button when it leads somewhere. */
export function legendKey(key, onCategory) {
  const parts = [swatch(key), categoryName(key)];
  return onCategory
    ? el('button', { type: 'button', class: 'key linkish', 'data-category': key, title: `Show the history of ${categoryName(key)}`, onclick: () => onCategory(key) }, ...parts)
    : el('span', { class: 'key', 'data-category': key }, ...parts);
}

/** A donut's centre text in lines: a duration breaks after its hours, a count before its word. */
export function centreLines(text) {
  const hours = text.match(/^(.* h) (.+)$/);
  if (hours) return [hours[1], hours[2]];
  const count = text.match(/^(\S+) (visits?)$/);
  if (count) return [count[1], count[2]];
  return [text];
}

/**
 * The donut of `slices` ([{key, value}], value > 0) into `box`, with `centre` text. Each slice
 * clicks through with `onCategory(key)`. Slices are in the categories' fixed colours.
 */
export function drawDonut(box, slices, { centre, describe, onCategory }) {
  const size = 168;
  const r = 80;
  const inner = 54;
  const c = size / 2;
  const sum = slices.reduce((a, s) => a + s.value, 0);
  const chart = svg('svg', { width: size, height: size, viewBox: `0 0 ${size} ${size}` });
  chart.append(svg('title', {}, 'The split by category'));
  if (sum <= 0) {
    chart.append(svg('circle', { cx: c, cy: c, r: (r + inner) / 2, class: 'donut-empty', 'stroke-width': r - inner, fill: 'none' }));
  }
  let angle = -Math.PI / 2;
  for (const s of slices) {
    const a = (s.value / sum) * Math.PI * 2;
    let shape;
    if (slices.length === 1) {
      // The whole ring, filled (a stroked circle would take the slices' outline style instead).
      shape = svg('path', {
        d: `M ${c} ${c - r} A ${r} ${r} 0 1 1 ${c} ${c + r} A ${r} ${r} 0 1 1 ${c} ${c - r} Z `
          + `M ${c} ${c - inner} A ${inner} ${inner} 0 1 0 ${c} ${c + inner} A ${inner} ${inner} 0 1 0 ${c} ${c - inner} Z`,
        fill: colourOf(s.key),
        'fill-rule': 'evenodd',
      });
    } else {
      const [x1, y1] = [c + r * Math.cos(angle), c + r * Math.sin(angle)];
      const [x2, y2] = [c + r * Math.cos(angle + a), c + r * Math.sin(angle + a)];
      const [x3, y3] = [c + inner * Math.cos(angle + a), c + inner * Math.sin(angle + a)];
      const [x4, y4] = [c + inner * Math.cos(angle), c + inner * Math.sin(angle)];
      const large = a > Math.PI ? 1 : 0;
      shape = svg('path', {
        d: `M ${x1} ${y1} A ${r} ${r} 0 ${large} 1 ${x2} ${y2} L ${x3} ${y3} A ${inner} ${inner} 0 ${large} 0 ${x4} ${y4} Z`,
        fill: colourOf(s.key),
      });
    }
    shape.setAttribute('class', 'slice');
    shape.setAttribute('data-category', s.key);
    shape.append(svg('title', {}, `${categoryName(s.key)}: ${describe(s)}`));
    if (onCategory) shape.addEventListener('click', () => onCategory(s.key));
    chart.append(shape);
    angle += a;
  }
  // The centre figure on at most two short lines ("≈ 2 h" over "21 min", "1,234" over "visits"),
  // so it sits inside the hole with room around it instead of touching the ring.
  const lines = centreLines(centre || '');
  const text = svg('text', { x: c, y: c + 5 - (lines.length - 1) * 8, class: 'centre', 'text-anchor': 'middle' });
  // (A space ends every line but the last, so the text reads whole: "≈ 2 h 21 min".)
  lines.forEach((line, i) => text.append(svg('tspan', { x: c, dy: i === 0 ? 0 : 16 }, i < lines.length - 1 ? `${line} ` : line)));
  chart.dataset.inner = String(inner);
  chart.append(text);
  box.replaceChildren(chart);
}

/** "42 %", "< 1 %" of `part` in `whole`. */
export function pct(part, whole) {
  if (whole <= 0) return '';
  const p = (100 * part) / whole;
  return p > 0 && p < 1 ? '< 1 %' : `${Math.round(p)} %`;
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
      span.textContent = measured ? fmtSpent(ms) : fmtEstimate(ms);
      span.title = measured ? 'Time this page was in front of you' : 'Estimated from the browser’s history (how long the page stayed open, at most 10 minutes)';
      span.classList.toggle('est', !measured);
    }
  }
}
