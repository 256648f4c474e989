// Failed classifications: every FAILED job with Retry per row and Retry all; a retried row
// follows its job live (waiting → working → done, with the category) without a reload.
import { call, describe } from './api.js';
import { $, el, fmtWhen, fmtNumber, categoryName, confidenceLabel, toast } from './dom.js';

/** job id -> row */
const rows = new Map();
/** job ids retried and not yet settled */
const tracking = new Set();
let visible = false;

export function init() {
  $('#f-retry-all').addEventListener('click', retryAll);
}

export function show() {
  visible = true;
  refresh();
}

export function hide() {
  visible = false;
}

export function onChange(ch) {
  if (!(ch.outbox || ch.websites)) return;
  if (tracking.size > 0) follow();
  // A website's category changes the row's "still has its provisional category" line.
  if (visible && (ch.outbox || ch.websites)) refresh();
}

function summary() {
  const failed = [...rows.values()].filter((tr) => tr.dataset.state === 'failed').length;
  $('#f-summary').textContent = failed === 0
    ? (rows.size ? 'Every retried job is back in the queue.' : '')
    : `${fmtNumber(failed)} website${failed === 1 ? '' : 's'} could not be classified.`;
  $('#f-retry-all').disabled = failed === 0;
  $('#f-empty').hidden = rows.size > 0;
  // Nothing failed: the words alone, no empty table.
  $('#f-table').closest('.table-wrap').hidden = rows.size === 0;
}

/** Adds FAILED jobs not shown yet; keeps rows that are being followed. */
export async function refresh() {
  let jobs;
  try {
    jobs = await call('list_failed_jobs');
  } catch (e) {
    $('#f-summary').textContent = `Could not load failed jobs: ${describe(e)}`;
    return;
  }
  const ids = new Set(jobs.map((j) => j.id));
  for (const [id, tr] of rows) {
    if (!ids.has(id) && !tracking.has(id) && tr.dataset.state === 'failed') {
      tr.remove();
      rows.delete(id);
    }
  }
  const body = $('#f-rows');
  for (const j of jobs) {
    const existing = rows.get(j.id);
    if (existing) {
      if (!tracking.has(j.id)) setFailed(existing, j);
      continue;
    }
    const tr = row(j);
    rows.set(j.id, tr);
    body.append(tr);
  }
  summary();
}

function row(j) {
  const tr = el('tr', { 'data-id': j.id, 'data-state': 'failed' },
    el('td', { class: 'domain', title: j.display === j.domain ? j.domain : `${j.display} (${j.domain})`, text: j.display }),
    el('td', { class: 'num attempts', text: String(j.attempt_count) }),
    el('td', {},
      el('div', { class: 'err', text: j.last_error_message || '' }),
      el('div', { class: 'keeps muted small' })),
    el('td', { class: 'time when', title: j.attempted_at || '', text: fmtWhen(j.attempted_at) }),
    el('td', {}, el('div', { class: 'status' })));
  setFailed(tr, j);
  return tr;
}

function setFailed(tr, j) {
  tr.dataset.state = 'failed';
  tr.querySelector('.attempts').textContent = String(j.attempt_count);
  tr.querySelector('.err').textContent = j.last_error_message || '';
  tr.querySelector('.keeps').textContent = keepsText(j);
  tr.querySelector('.when').textContent = fmtWhen(j.attempted_at);
  const domain = j.domain;
  tr.querySelector('.status').replaceChildren(
    el('button', { type: 'button', class: 'small retry', 'aria-label': `Retry ${domain}`, onclick: () => retry([j.id]) }, 'Retry'));
}

/** What the website shows meanwhile: its provisional built-in category, usually. */
function keepsText(j) {
  if (!j.category) return 'It has no category yet.';
  const sure = j.category_confidence ? `, ${confidenceLabel(j.category_confidence)}` : '';
  if (j.category_source === 'builtin') return `It still has its provisional category: ${categoryName(j.category)} (built-in${sure}).`;
  return `Its category: ${categoryName(j.category)}.`;
}

function setState(tr, state, text) {
  tr.dataset.state = state;
  tr.querySelector('.status').replaceChildren(el('span', { class: `state ${state}`, role: 'status', text }));
}

async function retry(ids) {
  await sendRetry(ids, async () => {
    await call('retry_jobs', { ids });
  });
}

async function retryAll() {
  const ids = [...rows.entries()].filter(([, tr]) => tr.dataset.state === 'failed').map(([id]) => id);
  if (ids.length === 0) return;
  await sendRetry(ids, async () => {
    const n = await call('retry_all_failed');
    toast(`${fmtNumber(n)} job${n === 1 ? '' : 's'} back in the queue.`);
  });
}

/** Marks `ids` as sent, runs `request`, then follows the jobs live (or reloads if it failed). */
async function sendRetry(ids, request) {
  for (const id of ids) {
    const tr = rows.get(id);
    if (tr) setState(tr, 'pending', 'Sending…');
  }
  try {
    await request();
  } catch (e) {
    toast(`Could not retry: ${describe(e)}`, true);
    refresh();
    return;
  }
  for (const id of ids) tracking.add(id);
  follow();
  summary();
}

/** Reads the followed jobs' state and shows it. */
async function follow() {
  if (tracking.size === 0) return;
  let jobs;
  try {
    jobs = await call('get_jobs', { ids: [...tracking] });
  } catch (e) {
    toast(`Could not follow the retried jobs: ${describe(e)}`, true);
    return;
  }
  for (const j of jobs) {
    const tr = rows.get(j.id);
    if (!tr) continue;
    if (j.status === 'PENDING') setState(tr, 'pending', 'Waiting in the queue…');
    else if (j.status === 'PROCESSING') setState(tr, 'processing', 'Classifying…');
    else if (j.status === 'COMPLETED') {
      tr.querySelector('.attempts').textContent = String(j.attempt_count);
      tr.querySelector('.err').textContent = '';
      tr.querySelector('.keeps').textContent = '';
      tr.querySelector('.when').textContent = fmtWhen(j.attempted_at);
      setState(tr, 'done', `Done: ${categoryName(j.category)}`);
      tracking.delete(j.id);
    } else if (j.status === 'FAILED') {
      tracking.delete(j.id);
      setFailed(tr, j);
    }
  }
  summary();
}
