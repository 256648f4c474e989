// Review: the websites whose category is not certain, most visited first. "Right" keeps the
// shown category as the user's own; the picker sets another. Settled rows stay in place (marked)
// until the list is refreshed, so nothing jumps under the pointer.
import { call, describe, kindOf } from './api.js';
import { $, el, fmtNumber, categoryCell, categoryName, ruleLabel, toast } from './dom.js';

const LIMIT = 200;
let categories = [];
let visible = false;
let loading = 0;

export function init(list) {
  categories = list;
  for (const r of document.querySelectorAll('input[name="r-band"]')) r.addEventListener('change', refresh);
  $('#r-refresh').addEventListener('click', refresh);
}

export function show() {
  visible = true;
  refresh();
}

export function hide() {
  visible = false;
}

export function onChange(ch) {
  if (!(ch.websites || ch.visits)) return;
  if (visible && $('#r-rows').children.length === 0) refresh();
  else if (visible) $('#r-refresh').textContent = 'Refresh (new categories)';
}

function band() {
  const checked = document.querySelector('input[name="r-band"]:checked');
  return checked && checked.value ? checked.value : null;
}

export async function refresh() {
  const gen = ++loading;
  $('#r-refresh').textContent = 'Refresh';
  let items;
  try {
    items = await call('list_review', { query: { limit: LIMIT, confidence: band() } });
  } catch (e) {
    $('#r-summary').textContent = `Could not load the review list: ${describe(e)}`;
    return;
  }
  if (gen !== loading) return; // a newer refresh started meanwhile
  $('#r-rows').replaceChildren(...items.map(row));
  $('#r-rows').dataset.loaded = String(items.length);
  $('#r-empty').hidden = items.length > 0;
  // Nothing to review: the words alone, no empty table.
  $('#r-table').closest('.table-wrap').hidden = items.length === 0;
  summary();
}

function summary() {
  const open = document.querySelectorAll('#r-rows tr[data-state="open"]').length;
  $('#r-summary').textContent = open === 0
    ? ''
    : `${fmtNumber(open)} website${open === 1 ? '' : 's'} to check${open >= LIMIT ? ' (the most visited first)' : ''}.`;
}

function why(i) {
  if (i.category_source === 'ai') return 'the AI';
  const rule = ruleLabel(i.category_rule);
  return rule ? `built-in: ${rule}` : 'built-in rules';
}

function row(i) {
  const picker = el('select', { class: 'pick', 'aria-label': `Another category for ${i.display}` },
    el('option', { value: '', text: 'Another category…' }),
    ...categories.filter((c) => c.id !== i.category).map((c) => el('option', { value: c.id, text: c.name })));
  const tr = el('tr', { 'data-domain': i.domain, 'data-state': 'open' },
    el('td', {},
      el('div', { class: 'site' },
        el('span', { class: 'd', text: i.display, title: i.display === i.domain ? i.domain : `${i.display} (${i.domain})` }),
        el('span', { class: 't', text: i.waiting_for_ai ? `${why(i)} · waiting for the AI` : why(i) }))),
    el('td', { class: 'c' }, categoryCell(i.category, i.category_source, i.category_confidence)),
    el('td', { class: 'num', text: fmtNumber(i.visits) }),
    el('td', {},
      el('div', { class: 'review-actions' },
        el('button', {
          type: 'button', class: 'small right', 'aria-label': `Yes, ${i.display} is ${categoryName(i.category)}`,
          onclick: () => confirm(tr, i),
        }, 'Right'),
        picker)));
  picker.addEventListener('change', () => {
    if (picker.value) pick(tr, i, picker.value);
  });
  return tr;
}

function settled(tr, category) {
  tr.dataset.state = 'done';
  tr.querySelector('td.c').replaceChildren(categoryCell(category, 'user', 'high'));
  tr.querySelector('.review-actions').replaceChildren(
    el('span', { class: 'state done', role: 'status', text: `Kept as yours: ${categoryName(category)}` }));
  summary();
}

async function confirm(tr, i) {
  try {
    const w = await call('confirm_category', { domain: i.domain, category: i.category });
    settled(tr, w.category);
  } catch (e) {
    toast(`Could not keep the category: ${describe(e)}`, true);
    if (kindOf(e) === 'conflict') refresh();
  }
}

async function pick(tr, i, category) {
  try {
    const w = await call('set_category', { domain: i.domain, category });
    settled(tr, w.category);
  } catch (e) {
    toast(`Could not set the category: ${describe(e)}`, true);
  }
}
