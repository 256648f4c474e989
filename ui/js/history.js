// History: newest visits first under day headings (Today, Yesterday, weekday and date), the
// visits of one page in a row collapsed into one row with a count, each site's icon (imported
// from the browser; never fetched), keyset pages appended as you scroll, search and filters, the
// per-website category dialog, and forgetting (a row, a website, the last hour/day/everything).
import { call, describe, listen, SEARCH_INDEX_PROGRESS } from './api.js';
import { $, el, fmtNumber, fmtTime, categoryCell, categoryName, confidenceLabel, toast, showModal } from './dom.js';
import * as forget from './forget.js';
import { currentProvider } from './overview.js';
import { annotate } from './timecharts.js';
import * as rows from './rows.js';
import { go } from './nav.js';
import { importFile } from './firstrun.js';
import { dateFormat } from './locale.js';

const PAGE = 100;
/** Rows kept in the page (visit rows and day headings): older pages push the oldest-loaded
 * (newest) rows out, so memory and layout cost stay flat however far the user scrolls; "Back to
 * newest" reloads from the top. */
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
/** domain -> data: URL of its icon, or null for none (asked once per domain). */
const icons = new Map();

const dayName = dateFormat({ weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' });
const timeOnly = dateFormat({ timeStyle: 'short' });

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
  for (const id of ['#h-category', '#h-device', '#h-from', '#h-to']) $(id).addEventListener('change', reload);
  $('#h-clear').addEventListener('click', () => {
    $('#h-search').value = '';
    $('#h-category').value = '';
    $('#h-device').value = '';
    $('#h-from').value = '';
    $('#h-to').value = '';
    reload();
  });
  $('#h-more').addEventListener('click', loadMore);
  $('#h-top').addEventListener('click', reload);
  $('#h-forget').addEventListener('click', forget.forgetRecent);
  // The first-run card on the overview imports; Settings links the extension.
  $('#h-empty-import').addEventListener('click', () => go('overview'));
  $('#h-empty-file').addEventListener('click', importFile);
  document.addEventListener('sitetrail:imported', () => reload());
  $('#h-empty-link').addEventListener('click', () => {
    go('settings');
    $('#s-ext-title').scrollIntoView();
  });
  $('#h-blocked').addEventListener('click', forget.showBlocked);
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
  document.addEventListener('sitetrail:forgotten', (e) => forgotten(e.detail));
  rows.init();
  rows.initDetails();
  watchIndex();
}

export function show() {
  visible = true;
  loadDevices();
  if (shown === 0 || staleTop) reload();
}

/** A visit to bring into view once its page is loaded (opened from the day timeline). */
let wanted = null;

/**
 * Opens the history filtered from another view: `category` (an id or `uncategorized`), the days
 * `first`..`last` (yyyy-mm-dd), `search` words (a website's domain), and `visit`, a visit to show
 * and mark. Every other filter is cleared, so the list is exactly what was clicked.
 */
export function open({ category = '', first = '', last = '', search = '', visit = null } = {}) {
  $('#h-search').value = search || '';
  $('#h-category').value = category || '';
  $('#h-device').value = '';
  $('#h-from').value = first || '';
  $('#h-to').value = last || '';
  wanted = visit;
  visible = true;
  reload();
}

/** Marks and scrolls to the wanted visit's row once it is in the page. */
function reveal() {
  if (!wanted) return;
  const tr = [...document.querySelectorAll('#h-rows tr.visit')].find((r) => r._v.ids.includes(wanted));
  if (!tr) {
    if (done) wanted = null;
    return;
  }
  wanted = null;
  for (const old of document.querySelectorAll('#h-rows tr.marked')) old.classList.remove('marked');
  tr.classList.add('marked');
  tr.scrollIntoView({ block: 'center' });
  tr.querySelector('button.more').focus({ preventScroll: true });
}

export function hide() {
  visible = false;
}

/** A change came while a dialog was open: the list is looked at again once it closes. */
let afterDialog = false;

export function onChange(ch) {
  // New visits or categories: refresh only if the user is at the top, never under their feet:
  // not while rows are selected (a reload would drop the selection: shown next time), nor under
  // an open dialog (the rows under it would get their tooltips back: once it closes).
  if (!(ch.visits || ch.websites)) return;
  const dialog = document.querySelector('dialog[open]');
  if (visible && dialog) {
    if (!afterDialog) {
      afterDialog = true;
      dialog.addEventListener('close', () => {
        afterDialog = false;
        onChange(ch);
      }, { once: true });
    }
    return;
  }
  const atTop = $('#h-scroll').scrollTop < 40 && shown <= PAGE && trimmed === 0;
  if (visible && atTop && !rows.hasSelection()) reload();
  else staleTop = true;
}

/** An upgraded database builds its search index at the first start: say how far, until done. */
async function watchIndex() {
  const update = (s) => {
    const banner = $('#h-index');
    banner.hidden = s.complete;
    if (!s.complete) {
      const pct = s.total ? Math.floor((100 * s.done) / s.total) : 0;
      banner.textContent = `Building the search index: ${fmtNumber(s.done)} of ${fmtNumber(s.total)} visits (${pct}%). Search finds the newest visits first until it is done.`;
    } else if ($('#h-search').value.trim()) {
      reload();
    }
  };
  await listen(SEARCH_INDEX_PROGRESS, update);
  try {
    update(await call('get_search_index'));
  } catch (_) {
    // The banner is a courtesy; the history works without it.
  }
}

/** Local midnight of a yyyy-mm-dd input as RFC 3339 (end of day for `to`). */
function dayBound(value, end) {
  if (!value) return null;
  const [y, m, d] = value.split('-').map(Number);
  const t = end ? new Date(y, m - 1, d, 23, 59, 59, 999) : new Date(y, m - 1, d, 0, 0, 0, 0);
  return t.toISOString();
}

/** The device filter: shown once this device syncs with others, listing their names. */
async function loadDevices() {
  let v;
  try {
    v = await call('get_sync_status');
  } catch {
    return;
  }
  const sel = $('#h-device');
  const chosen = sel.value;
  const names = [...new Set(v.devices.map((d) => d.name).filter(Boolean))].sort();
  sel.replaceChildren(el('option', { value: '', text: 'All' }), ...names.map((n) => el('option', { value: n, text: n })));
  sel.value = names.includes(chosen) ? chosen : '';
  $('#h-device-label').hidden = names.length < 2;
}

function query() {
  return {
    search: $('#h-search').value.trim() || null,
    category: $('#h-category').value || null,
    device: $('#h-device').value || null,
    from: dayBound($('#h-from').value, false),
    to: dayBound($('#h-to').value, true),
    before: cursor,
    limit: PAGE,
  };
}

/** Marks empty date boxes, so they show no placeholder date (style.css). */
function markDates() {
  for (const id of ['#h-from', '#h-to']) {
    const box = $(id);
    box.classList.toggle('unset', !box.value);
    box.title = box.value ? '' : 'Any day';
  }
}

/** Set by `reload` until its first page arrives: the rows shown are replaced then, not before. */
let replacing = false;

/**
 * Starts the list again from the newest visit. The rows on screen stay until the new first page
 * has arrived, so a refresh (a website classified, a visit recorded) never blinks the list empty.
 */
export function reload() {
  markDates();
  generation += 1;
  cursor = null;
  done = false;
  loading = false;
  replacing = true;
  loadMore();
}

/** Empties the list and its bookkeeping, just before the first page of a reload is shown. */
function clearRows() {
  replacing = false;
  shown = 0;
  staleTop = false;
  trimmed = 0;
  $('#h-top-row').hidden = true;
  rowsByDomain.clear();
  rows.clearSelection();
  $('#h-rows').replaceChildren();
  $('#h-scroll').scrollTop = 0;
}

async function loadMore() {
  if (loading || done) return;
  loading = true;
  const gen = generation;
  if (shown === 0) $('#h-status').textContent = 'Loading…';
  let page;
  try {
    page = await call('list_history', { query: query() });
  } catch (e) {
    loading = false;
    $('#h-status').textContent = `Could not load history: ${describe(e)}`;
    return;
  }
  if (gen !== generation) return; // a newer query started meanwhile
  if (replacing) clearRows();
  append(page.rows);
  annotate(page.rows.map((r) => r.visit_id));
  shown += page.rows.length;
  $('#h-rows').dataset.loaded = String(shown);
  trim();
  cursor = page.next_cursor;
  done = !cursor;
  loading = false;
  $('#h-more').hidden = done;
  status();
  reveal();
  if (wanted && !done) requestAnimationFrame(loadMore);
  loadIcons(page.rows.map((r) => r.domain));
  // The observer only reports changes: if the end of the list is still in sight (the user kept
  // scrolling while this page loaded, or the window is tall), load the next page now.
  if (!done && nearEnd()) requestAnimationFrame(loadMore);
}

/** True while no search, category or date narrows the list. */
function unfiltered() {
  return !$('#h-search').value.trim() && !$('#h-category').value && !$('#h-device').value && !$('#h-from').value && !$('#h-to').value;
}

function status() {
  // An empty history (not an empty search) says where history comes from, instead of a table.
  const empty = shown === 0 && done && unfiltered();
  $('#h-empty').hidden = !empty;
  $('#h-table').hidden = empty;
  $('#h-status').textContent = shown === 0
    ? 'No visits match.'
    : `${fmtNumber(shown)} visit${shown === 1 ? '' : 's'} loaded${trimmed ? ' (the newest scrolled out)' : ''}${done ? '' : ', newest first — scroll for more'}.`;
}

/** yyyy-mm-dd of a time, in the local time zone. */
function dayKey(d) {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

function dayLabel(key) {
  const today = new Date();
  const yesterday = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 1);
  if (key === dayKey(today)) return 'Today';
  if (key === dayKey(yesterday)) return 'Yesterday';
  const [y, m, d] = key.split('-').map(Number);
  return dayName.format(new Date(y, m - 1, d));
}

function heading(key) {
  return el('tr', { class: 'day', 'data-day': key },
    el('th', { colspan: '5', scope: 'colgroup', text: dayLabel(key) }));
}

/** The last visit row in the page, and the day of the last row of any kind. */
function tail() {
  const last = $('#h-rows').lastElementChild;
  return { last: last && last.classList.contains('visit') ? last : null, day: last ? last.dataset.day : null };
}

/** Appends a page: a heading where the day changes, consecutive visits to one page in one row. */
function append(rows) {
  const body = $('#h-rows');
  let { last, day } = tail();
  const frag = document.createDocumentFragment();
  for (const r of rows) {
    const at = new Date(r.visited_at);
    const key = dayKey(at);
    if (last && last._v.url === r.url && last._v.day === key) {
      merge(last, r);
      continue;
    }
    if (key !== day) {
      frag.append(heading(key));
      day = key;
    }
    last = row(r, key, at);
    frag.append(last);
  }
  body.append(frag);
  if (!body.querySelector('tr.visit[tabindex="0"]')) {
    const first = body.querySelector('tr.visit');
    if (first) first.setAttribute('tabindex', '0');
  }
}

function merge(tr, r) {
  tr._v.ids.push(r.visit_id);
  tr._v.times.push(r.visited_at);
  const n = tr._v.ids.length;
  const count = tr.querySelector('.visits');
  count.textContent = `×${n}`;
  count.hidden = false;
  // The row stands for n visits: its time says from the first to the latest, not one of them.
  const [latest, first] = [new Date(tr._v.times[0]), new Date(tr._v.times[n - 1])];
  const range = timeRange(first, latest);
  tr.querySelector('.at').textContent = range;
  const cell = tr.querySelector('td.time');
  cell.title = `${n} visits to this page in a row, from ${fmtTime(tr._v.times[n - 1])} to ${fmtTime(tr._v.times[0])} (the latest)`;
  cell.setAttribute('aria-label', `${n} visits from ${range}`);
}

/** "10:47–10:51 AM", "10:47–10:51": two times of one day, the shared AM/PM said once. */
function timeRange(first, latest) {
  const a = timeOnly.formatToParts(first);
  const b = timeOnly.formatToParts(latest);
  const period = (parts) => (parts.find((p) => p.type === 'dayPeriod') || {}).value;
  let head = a;
  if (period(a) && period(a) === period(b)) {
    const i = a.findIndex((p) => p.type === 'dayPeriod');
    // The period and the space before it (12-hour English puts it last; other locales first).
    head = i > 0 && a[i - 1].type === 'literal' ? [...a.slice(0, i - 1), ...a.slice(i + 1)] : [...a.slice(0, i), ...a.slice(i + 2)];
  }
  return `${head.map((p) => p.value).join('').trim()}–${timeOnly.format(latest)}`;
}

/** Drops the rows scrolled furthest past, keeping the view where it was; the first row left is
 * always a day heading. */
function trim() {
  const body = $('#h-rows');
  const extra = body.children.length - MAX_ROWS;
  if (extra <= 0) return;
  const scroller = $('#h-scroll');
  const keep = body.children[extra];
  const before = keep.getBoundingClientRect().top;
  for (let i = 0; i < extra; i += 1) forgetRowState(body.firstElementChild, true);
  if (body.firstElementChild && body.firstElementChild.classList.contains('visit')) {
    body.prepend(heading(body.firstElementChild.dataset.day));
  }
  trimmed += extra;
  $('#h-top-row').hidden = false;
  scroller.scrollTop -= before - keep.getBoundingClientRect().top;
}

/** Removes a row (and its bookkeeping); `alone`: without tidying the day headings. */
function forgetRowState(tr, alone = false) {
  rows.dropped(tr);
  const list = rowsByDomain.get(tr.dataset.domain);
  if (list && list.includes(tr)) list.splice(list.indexOf(tr), 1);
  const prev = tr.previousElementSibling;
  tr.remove();
  if (alone || !prev || !prev.classList.contains('day')) return;
  // A heading left with no visit under it goes too.
  const next = prev.nextElementSibling;
  if (!next || next.classList.contains('day')) prev.remove();
}

function nearEnd() {
  const view = $('#h-scroll').getBoundingClientRect();
  return view.height > 0 && $('#h-sentinel').getBoundingClientRect().top < view.bottom + 600;
}

function row(r, key, at) {
  const icon = el('img', { class: 'fav', alt: '', width: '16', height: '16' });
  const url = icons.get(r.domain);
  if (url) icon.src = url;
  else icon.hidden = true;
  const tr = el('tr', { class: 'visit', 'data-domain': r.domain, 'data-day': key, 'data-visit': r.visit_id, tabindex: '-1', 'aria-selected': 'false' });
  const domainTitle = r.display === r.domain ? r.url : `${r.url} (${r.domain})`;
  // One line per row: the website (a link to its page), the page's title beside it, and the
  // actions behind one menu button, so a window of 800×600 shows a dozen rows.
  tr.append(
    el('td', {},
      el('div', { class: 'row-sel' },
        rows.checkbox(tr, `Select this visit to ${r.display}`),
        el('div', { class: 'site' },
          icon,
          el('button', {
            type: 'button', class: 'd dn linkish', 'data-tip': domainTitle, 'aria-label': `${r.display}: open the website's page`,
            onclick: () => go('website', { domain: r.domain }),
          }, r.display),
          el('span', { class: 't', text: r.title || r.url, 'data-tip': r.title || r.url }),
          r.device ? el('span', { class: 'dev muted small', title: 'Recorded on this device', text: r.device }) : null))),
    el('td', { class: 'c' }, categoryCell(r.category, r.category_source, r.category_confidence)),
    el('td', { class: 'spent-cell' }, el('span', { class: 'spent', 'data-visit': r.visit_id })),
    el('td', { class: 'time', title: fmtTime(r.visited_at) },
      el('span', { class: 'at', text: timeOnly.format(at) }),
      el('span', { class: 'visits', hidden: true })),
    el('td', { class: 'acts' }, rows.menuButton(tr, r.display)));
  tr._v = { ids: [r.visit_id], times: [r.visited_at], url: r.url, domain: r.domain, display: r.display, day: key };
  tr._row = r;
  tr._edit = () => editCategory(r.domain, tr._cat);
  let list = rowsByDomain.get(r.domain);
  if (!list) rowsByDomain.set(r.domain, (list = []));
  list.push(tr);
  tr._cat = [r.category, r.category_source, r.category_confidence];
  return tr;
}

/** Asks once for the icons of domains not asked about yet, then shows them on their rows. */
async function loadIcons(domains) {
  const ask = [...new Set(domains)].filter((d) => !icons.has(d));
  if (ask.length === 0) return;
  for (const d of ask) icons.set(d, null);
  let found;
  try {
    found = await call('get_favicons', { domains: ask });
  } catch (_) {
    return; // rows keep their text; an icon is a nicety
  }
  for (const [domain, url] of Object.entries(found)) {
    icons.set(domain, url);
    for (const tr of rowsByDomain.get(domain) || []) {
      const img = tr.querySelector('img.fav');
      img.src = url;
      img.hidden = false;
    }
  }
}

/** After a forgetting: take its rows out of the page (or start again for a time range). */
function forgotten(detail) {
  if (detail.kind === 'recent') {
    reload();
    return;
  }
  const ids = new Set(detail.ids || []);
  for (const domain of detail.domains || [detail.domain]) {
    for (const tr of [...(rowsByDomain.get(domain) || [])]) {
      if (detail.kind === 'website' || tr._v.ids.some((id) => ids.has(id))) {
        forgetRowState(tr);
        shown -= tr._v.ids.length;
      }
    }
  }
  if (detail.kind === 'website') icons.delete(detail.domain);
  status();
}

function updateDomain(domain, category, source, confidence) {
  for (const tr of rowsByDomain.get(domain) || []) {
    tr._cat = [category, source, confidence];
    tr.querySelector('td.c').replaceChildren(categoryCell(category, source, confidence));
  }
}

let editing = null;
/** Opens the category dialog of `domain`, whose category is now [category, source, confidence]. */
export function editCategory(domain, [category, source, confidence]) {
  editing = domain;
  $('#cat-domain').textContent = domain;
  const sure = confidence ? `, ${confidenceLabel(confidence)}` : '';
  $('#cat-current').textContent = category
    ? `Now: ${categoryName(category)} (set by ${{ ai: 'the AI', builtin: 'the built-in rules', user: 'you' }[source] || source}${sure}).`
    : 'Not classified yet.';
  // Only a remote provider can be asked again; the built-in rules answer "Classify again".
  const remote = currentProvider() && currentProvider() !== 'builtin';
  $('#cat-reclassify-ai').hidden = !remote;
  $('#cat-select').value = category || 'other';
  showModal($('#cat-dialog'));
  $('#cat-select').focus();
}

async function saveCategory() {
  const category = $('#cat-select').value;
  try {
    const w = await call('set_category', { domain: editing, category });
    updateDomain(w.domain, w.category, w.category_source, w.category_confidence);
    document.dispatchEvent(new CustomEvent('sitetrail:category', { detail: w }));
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
    document.dispatchEvent(new CustomEvent('sitetrail:category', { detail: w }));
    $('#cat-dialog').close();
    toast(ai
      ? `${w.domain} will be classified again by the AI (the built-in category shows meanwhile).`
      : `${w.domain} will be classified again.`);
  } catch (e) {
    toast(`Could not send it back: ${describe(e)}`, true);
  }
}
