// History: newest visits first, keyset pages appended as you scroll, search and filters, and
// the per-website category dialog.
import { call, describe } from './api.js';
import { $, el, fmtWhen, fmtNumber, categoryCell, categoryName, confidenceLabel, toast } from './dom.js';
import { currentProvider } from './overview.js';
import { annotate } from './timecharts.js';

const PAGE = 100;
/** Rows kept in the page: older pages push the oldest-loaded (newest) rows out, so memory and
 * layout cost stay flat however far the user scrolls; "Back to newest" reloads from the top. */
const MAX_ROWS = 1500;
let trimmed = 0;
let cursor = null;
let done = false;
let loading = false;
let generation = 0;
let shown = 0;
let visible = false;
let staleTop = false;
/** domain -> rows showing it, to update a category everywhere at once. */
const rowsByDomain = new Map();

export function init(categories) {
  const sel = $('#h-category');
  const dialogSel = $('#cat-select');
  for (const c of categories) {
    sel.append(el('option', { value: c.id, text: c.name }));
    dialogSel.append(el('option', { value: c.id, text: c.name }));
  }
  let timer = null;
  $('#h-search').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(reload, 250);
  });
  $('#h-form').addEventListener('submit', (e) => {
    e.preventDefault();
    reload();
  });
  for (const id of ['#h-category', '#h-from', '#h-to']) $(id).addEventListener('change', reload);
  $('#h-clear').addEventListener('click', () => {
    $('#h-search').value = '';
    $('#h-category').value = '';
    $('#h-from').value = '';
    $('#h-to').value = '';
    reload();
  });
  $('#h-more').addEventListener('click', loadMore);
  $('#h-top').addEventListener('click', reload);
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadMore();
  }, { root: $('#h-scroll'), rootMargin: '600px' }).observe($('#h-sentinel'));
  // The observer reports changes only, and can miss one when rows are appended and the list is
  // scrolled again before the next frame: a scroll listener (one check per frame) covers that.
  let ticking = false;
  $('#h-scroll').addEventListener('scroll', () => {
    if (ticking) return;
    ticking = true;
    requestAnimationFrame(() => {
      ticking = false;
      if (nearEnd()) loadMore();
    });
  }, { passive: true });

  $('#cat-cancel').addEventListener('click', () => $('#cat-dialog').close());
  $('#cat-form').addEventListener('submit', (e) => {
    e.preventDefault();
    saveCategory();
  });
  $('#cat-reclassify').addEventListener('click', () => reclassify(false));
  $('#cat-reclassify-ai').addEventListener('click', () => reclassify(true));
}

export function show() {
  visible = true;
  if (shown === 0 || staleTop) reload();
}

export function hide() {
  visible = false;
}

export function onChange(ch) {
  // New visits or categories: refresh only if the user is at the top, never under their feet.
  if (!(ch.visits || ch.websites)) return;
  const atTop = $('#h-scroll').scrollTop < 40 && shown <= PAGE && trimmed === 0;
  if (visible && atTop) reload();
  else staleTop = true;
}

/** Local midnight of a yyyy-mm-dd input as RFC 3339 (end of day for `to`). */
function dayBound(value, end) {
  if (!value) return null;
  const [y, m, d] = value.split('-').map(Number);
  const t = end ? new Date(y, m - 1, d, 23, 59, 59, 999) : new Date(y, m - 1, d, 0, 0, 0, 0);
  return t.toISOString();
}

function query() {
  return {
    search: $('#h-search').value.trim() || null,
    category: $('#h-category').value || null,
    from: dayBound($('#h-from').value, false),
    to: dayBound($('#h-to').value, true),
    before: cursor,
    limit: PAGE,
  };
}

export function reload() {
  generation += 1;
  cursor = null;
  done = false;
  loading = false;
  shown = 0;
  staleTop = false;
  trimmed = 0;
  $('#h-top-row').hidden = true;
  rowsByDomain.clear();
  $('#h-rows').replaceChildren();
  $('#h-scroll').scrollTop = 0;
  loadMore();
}

async function loadMore() {
  if (loading || done) return;
  loading = true;
  const gen = generation;
  $('#h-status').textContent = shown === 0 ? 'Loading…' : $('#h-status').textContent;
  let page;
  try {
    page = await call('list_history', { query: query() });
  } catch (e) {
    loading = false;
    $('#h-status').textContent = `Could not load history: ${describe(e)}`;
    return;
  }
  if (gen !== generation) return; // a newer query started meanwhile
  const frag = document.createDocumentFragment();
  for (const r of page.rows) frag.append(row(r));
  $('#h-rows').append(frag);
  annotate(page.rows.map((r) => r.visit_id));
  shown += page.rows.length;
  $('#h-rows').dataset.loaded = String(shown);
  trim();
  cursor = page.next_cursor;
  done = !cursor;
  loading = false;
  $('#h-more').hidden = done;
  $('#h-status').textContent = shown === 0
    ? 'No visits match.'
    : `${fmtNumber(shown)} visit${shown === 1 ? '' : 's'} loaded${trimmed ? ` (the ${fmtNumber(trimmed)} newest scrolled out)` : ''}${done ? '' : ', newest first — scroll for more'}.`;
  // The observer only reports changes: if the end of the list is still in sight (the user kept
  // scrolling while this page loaded, or the window is tall), load the next page now.
  if (!done && nearEnd()) requestAnimationFrame(loadMore);
}

/** Drops the rows scrolled furthest past, keeping the view where it was. */
function trim() {
  const body = $('#h-rows');
  const extra = body.children.length - MAX_ROWS;
  if (extra <= 0) return;
  const scroller = $('#h-scroll');
  const keep = body.children[extra];
  const before = keep.getBoundingClientRect().top;
  for (let i = 0; i < extra; i += 1) {
    const tr = body.firstElementChild;
    const list = rowsByDomain.get(tr.dataset.domain);
    if (list) list.splice(list.indexOf(tr), 1);
    tr.remove();
  }
  trimmed += extra;
  $('#h-top-row').hidden = false;
  scroller.scrollTop -= before - keep.getBoundingClientRect().top;
}

function nearEnd() {
  const view = $('#h-scroll').getBoundingClientRect();
  return view.height > 0 && $('#h-sentinel').getBoundingClientRect().top < view.bottom + 600;
}

function row(r) {
  const tr = el('tr', { 'data-domain': r.domain },
    el('td', {},
      el('div', { class: 'site' },
        el('span', { class: 'd', text: r.domain, title: r.url }),
        el('span', { class: 't', text: r.title || r.url, title: r.title || r.url }))),
    el('td', { class: 'c' }, categoryCell(r.category, r.category_source, r.category_confidence)),
    el('td', { class: 'time', title: r.visited_at },
      el('span', { text: fmtWhen(r.visited_at) }),
      el('span', { class: 'spent', 'data-visit': r.visit_id })),
    el('td', {},
      el('button', {
        type: 'button', class: 'ghost small edit', 'aria-label': `Change category of ${r.domain}`,
        onclick: () => openDialog(r.domain, tr),
      }, 'Edit')));
  let list = rowsByDomain.get(r.domain);
  if (!list) rowsByDomain.set(r.domain, (list = []));
  list.push(tr);
  tr._cat = [r.category, r.category_source, r.category_confidence];
  return tr;
}

function updateDomain(domain, category, source, confidence) {
  for (const tr of rowsByDomain.get(domain) || []) {
    tr._cat = [category, source, confidence];
    tr.querySelector('td.c').replaceChildren(categoryCell(category, source, confidence));
  }
}

let editing = null;
function openDialog(domain, tr) {
  editing = domain;
  const [category, source, confidence] = tr._cat;
  $('#cat-domain').textContent = domain;
  const sure = confidence ? `, ${confidenceLabel(confidence)}` : '';
  $('#cat-current').textContent = category
    ? `Now: ${categoryName(category)} (set by ${{ ai: 'the AI', builtin: 'the built-in rules', user: 'you' }[source] || source}${sure}).`
    : 'Not classified yet.';
  // Only a remote provider can be asked again; the built-in rules answer "Classify again".
  const remote = currentProvider() && currentProvider() !== 'builtin';
  $('#cat-reclassify-ai').hidden = !remote;
  $('#cat-select').value = category || 'other';
  $('#cat-dialog').showModal();
  $('#cat-select').focus();
}

async function saveCategory() {
  const category = $('#cat-select').value;
  try {
    const w = await call('set_category', { domain: editing, category });
    updateDomain(w.domain, w.category, w.category_source, w.category_confidence);
    $('#cat-dialog').close();
    toast(`${w.domain} is now ${categoryName(w.category)} (your choice).`);
  } catch (e) {
    toast(`Could not set the category: ${describe(e)}`, true);
  }
}

async function reclassify(ai) {
  try {
    const w = await call('reclassify_website', { domain: editing, ai });
    updateDomain(w.domain, null, null, null);
    $('#cat-dialog').close();
    toast(ai
      ? `${w.domain} will be classified again by the AI (the built-in category shows meanwhile).`
      : `${w.domain} will be classified again.`);
  } catch (e) {
    toast(`Could not send it back: ${describe(e)}`, true);
  }
}
