// A website's page, opened from any list or chart that names a website: its category with who set
// it and how sure it is, its time on each of the last 30 days, its newest visits, and what can be
// done about it (change the category, forget it, never record it).
import { call, describe } from './api.js';
import { $, el, fmtNumber, fmtSpent, fmtTime, confidenceLabel, ruleLabel, toast } from './dom.js';
import { categoryLabel } from './colours.js';
import { drawDays, total } from './timecharts.js';
import { editCategory } from './history.js';
import * as forget from './forget.js';
import { go } from './nav.js';

let domain = null;
let page = null;
let back = 'overview';
let visible = false;

export function init() {
  $('#w-back').addEventListener('click', () => go(back));
  $('#w-edit').addEventListener('click', () => {
    if (!page) return;
    const w = page.website;
    editCategory(w.domain, [w.category, w.category_source, w.category_confidence]);
  });
  $('#w-forget').addEventListener('click', () => domain && forget.forgetWebsite(domain, page ? page.display : domain));
  $('#w-block').addEventListener('click', () => domain && forget.neverRecord(domain, page ? page.display : domain));
  document.addEventListener('sitetrail:category', (e) => {
    if (visible && e.detail.domain === domain) load();
  });
  document.addEventListener('sitetrail:forgotten', (e) => {
    if (visible && e.detail.kind === 'website' && e.detail.domain === domain) go(back);
    else if (visible) load();
  });
}

/** Opens the page of `what.domain`; Back returns to `what.from` (the overview by default). */
export function open(what) {
  domain = what.domain;
  back = what.from || 'overview';
  page = null;
  $('#w-title').textContent = domain;
  $('#w-rows').replaceChildren();
  load();
}

export function show() {
  visible = true;
}

export function hide() {
  visible = false;
}

export function onChange(ch) {
  if (visible && domain && (ch.visits || ch.websites)) load();
}

async function load() {
  const asked = domain;
  let p;
  try {
    p = await call('get_website_page', { domain: asked });
  } catch (e) {
    toast(`Could not open ${asked}: ${describe(e)}`, true);
    return;
  }
  if (asked !== domain) return;
  page = p;
  draw();
}

function draw() {
  const w = page.website;
  $('#w-title').textContent = page.display;
  $('#w-title').title = page.display === w.domain ? w.domain : `${page.display} (${w.domain})`;
  $('#view-website').dataset.domain = w.domain;
  const cat = $('#w-category');
  cat.replaceChildren(categoryLabel(w.category));
  if (w.category) {
    const who = { ai: 'the AI', builtin: 'the built-in rules', user: 'you' }[w.category_source] || w.category_source;
    const sure = w.category_confidence ? `, ${confidenceLabel(w.category_confidence)}` : '';
    const rule = w.category_source === 'builtin' && w.category_rule ? ` (from ${ruleLabel(w.category_rule)})` : '';
    $('#w-category-how').textContent = `Set by ${who}${sure}${rule}.${w.category_source === 'user' ? ' Classifiers never overwrite it.' : ''}`;
  } else {
    $('#w-category-how').textContent = 'Not classified yet: it is waiting in the queue.';
  }
  const sum = page.days.reduce((a, d) => a + total(d), 0);
  const visits = page.days.reduce((a, d) => a + d.visits, 0);
  const est = page.days.reduce((a, d) => a + d.estimated_ms, 0);
  $('#w-total').textContent = visits === 0
    ? 'No visits in the last 30 days.'
    : `${sum > 0 ? fmtSpent(sum) : 'No time known'} over ${fmtNumber(visits)} visit${visits === 1 ? '' : 's'}${est > 0 ? ` (${fmtSpent(est)} of it estimated from imported history)` : ''}.`;
  drawDays($('#w-chart'), page.days, {
    category: w.category || 'uncategorized',
    onDay: (day) => go('history', { first: day, last: day, search: w.domain }),
  });
  const rows = $('#w-rows');
  rows.replaceChildren(...page.visits.map((v) => el('tr', { class: 'visit', 'data-visit': v.visit_id },
    el('td', {}, el('div', { class: 'site' },
      el('span', { class: 't', text: v.title || v.url, title: v.url }),
      el('span', { class: 'u muted small', text: v.url, title: v.url }))),
    el('td', { class: 'time', text: fmtTime(v.visited_at) }))));
  $('#w-empty').hidden = page.visits.length > 0;
}
