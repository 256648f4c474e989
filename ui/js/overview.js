// Overview: queue counts, pause state, backlog ETA, visits per category chart, top websites.
import { call, describe } from './api.js';
import { $, el, fmtNumber, fmtDuration, fmtTime, categoryName, toast } from './dom.js';
import * as firstRun from './firstrun.js';
import * as timeCharts from './timecharts.js';
import * as forget from './forget.js';

let summary = null;
let lastProvider = null;

/** The classifier the worker last reported ('builtin', 'openai', 'ollama'), once known. */
export function currentProvider() {
  return lastProvider;
}
let summaryAt = 0;
let visible = false;
const SUMMARY_MIN_INTERVAL_MS = 10_000;
const SVG = 'http://www.w3.org/2000/svg';

export function init() {
  timeCharts.init();
  // After a forgetting, the chart and the top list are out of date.
  document.addEventListener('sitetrail:forgotten', () => {
    if (visible) refreshSummary(true);
  });
  for (const r of document.querySelectorAll('input[name="period"]')) {
    r.addEventListener('change', drawChart);
  }
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

export function show() {
  visible = true;
  refreshQueue();
  refreshSummary(true);
}

export function hide() {
  visible = false;
}

/** Called with the backend's coalesced change set. */
export function onChange(ch) {
  if (ch.outbox || ch.worker || ch.visits) refreshQueue();
  if (visible && (ch.visits || ch.websites)) refreshSummary(false);
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

  const paused = pauseText(q);
  const pill = $('#worker-pill');
  pill.classList.toggle('paused', Boolean(paused));
  const provider = { builtin: 'built-in rules', openai: 'OpenAI-compatible', ollama: 'Ollama' }[q.provider] || q.provider;
  const resume = $('#resume');
  resume.hidden = !(q.pause && q.pause.kind === 'needs_user');
  if (paused) {
    pill.textContent = 'Classifier paused';
    $('#worker-status').textContent = paused;
  } else if (q.problem) {
    pill.textContent = 'Check the classifier settings';
    pill.classList.add('paused');
    $('#worker-status').textContent = `The saved classifier settings cannot be used (${q.problem}); the built-in rules classify meanwhile.`;
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

/** The chart and top list: scan a month of visits, so at most every 10 s unless forced. */
async function refreshSummary(force) {
  const now = Date.now();
  if (!force && now - summaryAt < SUMMARY_MIN_INTERVAL_MS) return;
  summaryAt = now;
  try {
    summary = await call('get_summary');
  } catch (e) {
    toast(`Could not load the overview: ${describe(e)}`, true);
    return;
  }
  drawChart();
  drawTop();
  timeCharts.refresh();
}

function drawChart() {
  const box = $('#chart');
  box.replaceChildren();
  if (!summary) return;
  const days = document.querySelector('input[name="period"]:checked').value;
  const rows = days === '7' ? summary.categories_7d : summary.categories_30d;
  if (rows.length === 0) {
    box.append(el('p', { class: 'empty', text: `No visits in the last ${days} days.` }));
    return;
  }
  const max = Math.max(...rows.map((r) => r.visits));
  const rowH = 26;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('height', String(rows.length * rowH));
  const title = document.createElementNS(SVG, 'title');
  title.textContent = `Visits per category, last ${days} days`;
  svg.append(title);
  rows.forEach((r, i) => {
    const y = i * rowH;
    const label = document.createElementNS(SVG, 'text');
    label.setAttribute('x', '0');
    label.setAttribute('y', String(y + 17));
    label.textContent = categoryName(r.category);
    const bar = document.createElementNS(SVG, 'rect');
    const w = Math.max(0.5, (r.visits / max) * 52);
    bar.setAttribute('x', '36%');
    bar.setAttribute('y', String(y + 5));
    bar.setAttribute('height', '16');
    bar.setAttribute('rx', '3');
    bar.setAttribute('width', `${w}%`);
    bar.setAttribute('class', r.category ? 'bar' : 'bar none');
    const n = document.createElementNS(SVG, 'text');
    n.setAttribute('x', `${36 + w + 1}%`);
    n.setAttribute('y', String(y + 17));
    n.setAttribute('class', 'n');
    n.textContent = fmtNumber(r.visits);
    const tip = document.createElementNS(SVG, 'title');
    tip.textContent = `${categoryName(r.category)}: ${r.visits} visits, ${r.websites} websites`;
    bar.append(tip);
    svg.append(label, bar, n);
  });
  box.append(svg);
}

function drawTop() {
  const list = $('#top-sites');
  list.replaceChildren();
  if (summary.top_websites.length === 0) {
    list.append(el('li', { class: 'muted', text: 'No visits yet.' }));
    return;
  }
  for (const w of summary.top_websites) {
    list.append(
      el('li', {},
        el('span', { class: 'd', title: w.domain, text: w.domain }),
        el('span', { class: 'badge', title: w.category_confidence ? `Confidence: ${w.category_confidence}` : null, text: categoryName(w.category) }),
        el('span', { class: 'n', text: fmtNumber(w.visits) }),
        el('button', {
          type: 'button', class: 'ghost small forget-site', 'aria-label': `Forget ${w.domain}`,
          onclick: () => forget.forgetWebsite(w.domain),
        }, 'Forget')),
    );
  }
}
