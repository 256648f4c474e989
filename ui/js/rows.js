// The history list as something to act on: select rows (checkbox, shift-click for a range,
// Ctrl/Cmd-A for all loaded, Escape to clear) and forget them at once after one confirmation
// that says how many; open a row (click or Enter) to see the visit's details with "open in
// browser", "copy URL" and "forget"; move with the arrow keys; Delete forgets. Each row's actions
// (its website's page, its category, forgetting it) are behind one menu button (also the
// context-menu key or Shift+F10 on a row).
import { call, describe } from './api.js';
import { $, el, fmtNumber, fmtTime, categoryCell, toast, showModal } from './dom.js';
import * as forget from './forget.js';
import { go } from './nav.js';
import { dateFormat } from './locale.js';

/** The selected rows (tr elements), in the order they were selected. */
const selected = new Set();
let anchor = null;

/** Every visit row now in the list, top to bottom. */
function visitRows() {
  return [...document.querySelectorAll('#h-rows tr.visit')];
}

function paintBar() {
  const bar = $('#h-selbar');
  const n = selected.size;
  bar.hidden = n === 0;
  // The bar takes the status line's place (the same slot), so the table never moves.
  $('#h-status').hidden = n > 0;
  if (n === 0) return;
  const visits = [...selected].reduce((a, tr) => a + tr._v.ids.length, 0);
  $('#h-sel-count').textContent = `${fmtNumber(n)} row${n === 1 ? '' : 's'} selected` +
    (visits === n ? '' : ` (${fmtNumber(visits)} visits)`);
}

/** Selects or unselects one row. */
export function setSelected(tr, on) {
  tr.classList.toggle('selected', on);
  tr.setAttribute('aria-selected', String(on));
  tr.querySelector('input.sel').checked = on;
  if (on) selected.add(tr);
  else selected.delete(tr);
  paintBar();
}

/** Selects every row from the anchor to `tr` (shift-click), like a file manager. */
function selectRange(tr, on) {
  const list = visitRows();
  const a = list.indexOf(anchor);
  const b = list.indexOf(tr);
  if (a < 0 || b < 0) return setSelected(tr, on);
  const [from, to] = a < b ? [a, b] : [b, a];
  for (let i = from; i <= to; i += 1) setSelected(list[i], on);
}

/** Forgets a removed row's selection. */
export function dropped(tr) {
  if (selected.delete(tr)) paintBar();
  if (anchor === tr) anchor = null;
}

/** Whether the user has rows selected (a reload would drop them). */
export function hasSelection() {
  return selected.size > 0;
}

export function clearSelection() {
  for (const tr of [...selected]) setSelected(tr, false);
  anchor = null;
}

/** The checkbox of a new row, wired. */
export function checkbox(tr, label) {
  const box = el('input', { type: 'checkbox', class: 'sel', 'aria-label': label, tabindex: '-1' });
  box.addEventListener('click', (e) => {
    e.stopPropagation();
    if (e.shiftKey && anchor) selectRange(tr, box.checked);
    else setSelected(tr, box.checked);
    anchor = tr;
  });
  return box;
}

/** The row whose menu is open, and the button that opened it (the focus goes back there). */
let menuOf = null;
let menuButtonOf = null;

/** The menu button of a new row. */
export function menuButton(tr, display) {
  return el('button', {
    type: 'button', class: 'ghost small more', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
    'aria-label': `Actions for this visit to ${display}`,
    onclick: (e) => openMenu(tr, e.currentTarget),
  }, '⋯');
}

function menuItems() {
  return [...document.querySelectorAll('#row-menu [role=menuitem]')];
}

/** Opens the row menu of `tr` under `button` (fixed, inside the window); focuses its first item. */
export function openMenu(tr, button) {
  const menu = $('#row-menu');
  if (menuOf === tr && !menu.hidden) return closeMenu(true);
  closeMenu(false);
  menuOf = tr;
  menuButtonOf = button || tr.querySelector('button.more');
  menuButtonOf.setAttribute('aria-expanded', 'true');
  $('#rm-edit').textContent = `Change the category of ${tr._v.display}…`;
  $('#rm-forget').textContent = tr._v.ids.length > 1 ? `Forget these ${tr._v.ids.length} visits…` : 'Forget this visit…';
  menu.hidden = false;
  const r = menuButtonOf.getBoundingClientRect();
  const w = menu.offsetWidth;
  const h = menu.offsetHeight;
  // CSSOM, not a style attribute (the CSP forbids inline styles).
  menu.style.left = `${Math.max(4, Math.min(window.innerWidth - w - 4, r.right - w))}px`;
  menu.style.top = `${r.bottom + h + 4 > window.innerHeight ? Math.max(4, r.top - h - 2) : r.bottom + 2}px`;
  menuItems()[0].focus();
}

/** Closes the row menu; `refocus`: the focus goes back to the button that opened it. */
function closeMenu(refocus) {
  const menu = $('#row-menu');
  if (menu.hidden) return;
  menu.hidden = true;
  if (menuButtonOf) {
    menuButtonOf.setAttribute('aria-expanded', 'false');
    if (refocus && menuButtonOf.isConnected) menuButtonOf.focus();
  }
}

function initMenu() {
  const menu = $('#row-menu');
  const act = (f) => () => {
    const tr = menuOf;
    closeMenu(true);
    if (tr) f(tr);
  };
  $('#rm-website').addEventListener('click', act((tr) => go('website', { domain: tr._v.domain })));
  $('#rm-edit').addEventListener('click', act((tr) => tr._edit()));
  $('#rm-forget').addEventListener('click', act((tr) => forget.forgetRow(tr._v)));
  menu.addEventListener('keydown', (e) => {
    const items = menuItems();
    const i = items.indexOf(document.activeElement);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      items[(i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length].focus();
    } else if (e.key === 'Home' || e.key === 'End') {
      e.preventDefault();
      items[e.key === 'Home' ? 0 : items.length - 1].focus();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      closeMenu(true);
    } else if (e.key === 'Tab') {
      closeMenu(false);
    }
  });
  // A press anywhere else, or the list scrolling away from under it, closes it.
  document.addEventListener('mousedown', (e) => {
    if (!menu.hidden && !menu.contains(e.target) && e.target !== menuButtonOf) closeMenu(false);
  });
  $('#h-scroll').addEventListener('scroll', () => closeMenu(false), { passive: true });
}

/** A click on a row itself (not on one of its controls): shift selects a range, else details. */
function onRowClick(e) {
  const tr = e.target.closest('tr.visit');
  if (!tr || e.target.closest('button, input, a, select')) return;
  if (e.shiftKey) {
    e.preventDefault();
    selectRange(tr, true);
    anchor = tr;
    return;
  }
  if (e.ctrlKey || e.metaKey) {
    setSelected(tr, !selected.has(tr));
    anchor = tr;
    return;
  }
  focusRow(tr);
  openDetails(tr);
}

function focusRow(tr) {
  for (const r of document.querySelectorAll('#h-rows tr.visit[tabindex="0"]')) r.setAttribute('tabindex', '-1');
  tr.setAttribute('tabindex', '0');
  tr.focus();
}

function onRowKey(e) {
  const tr = e.target.closest('tr.visit');
  if (!tr || e.target !== tr) return;
  const list = visitRows();
  const i = list.indexOf(tr);
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    e.preventDefault();
    const next = list[i + (e.key === 'ArrowDown' ? 1 : -1)];
    if (next) {
      if (e.shiftKey) {
        if (!anchor) anchor = tr;
        selectRange(next, true);
      }
      focusRow(next);
    }
  } else if (e.key === 'Home' || e.key === 'End') {
    e.preventDefault();
    focusRow(list[e.key === 'Home' ? 0 : list.length - 1]);
  } else if (e.key === 'Enter') {
    e.preventDefault();
    openDetails(tr);
  } else if (e.key === ' ') {
    e.preventDefault();
    setSelected(tr, !selected.has(tr));
    anchor = tr;
  } else if (e.key === 'ContextMenu' || (e.key === 'F10' && e.shiftKey)) {
    e.preventDefault();
    openMenu(tr);
  } else if (e.key === 'Delete' || e.key === 'Backspace') {
    e.preventDefault();
    if (selected.size > 0) forgetSelected();
    else forget.forgetRow(tr._v);
  }
}

/** Forgets the selected rows' visits after one confirmation. */
export function forgetSelected() {
  const rows = [...selected];
  if (rows.length === 0) return;
  forget.forgetVisits(rows.map((tr) => tr._v));
}

export function init() {
  const body = $('#h-rows');
  body.addEventListener('click', onRowClick);
  body.addEventListener('keydown', onRowKey);
  $('#h-sel-forget').addEventListener('click', forgetSelected);
  $('#h-sel-clear').addEventListener('click', clearSelection);
  document.addEventListener('keydown', (e) => {
    if ($('#view-history').hidden || document.querySelector('dialog[open]')) return;
    const typing = e.target.closest && e.target.closest('input, select, textarea');
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'a' && !typing) {
      e.preventDefault();
      for (const tr of visitRows()) setSelected(tr, true);
    } else if (e.key === 'Escape' && selected.size > 0 && !typing) {
      clearSelection();
    } else if (e.key === 'ArrowDown' && e.target === $('#h-search')) {
      // From the search box straight into the results.
      const first = visitRows()[0];
      if (first) {
        e.preventDefault();
        focusRow(first);
      }
    }
  });
  $('#vd-close').addEventListener('click', () => $('#visit-dialog').close());
  initMenu();
}

let detailsOf = null;

const timeOnly = dateFormat({ timeStyle: 'short' });

/** The visit details dialog of a row. */
export function openDetails(tr) {
  detailsOf = tr;
  const r = tr._row;
  const spent = tr.querySelector('.spent');
  const n = tr._v.ids.length;
  $('#vd-title').textContent = r.title || r.display;
  const dd = (label, ...value) => [el('dt', { text: label }), el('dd', {}, ...value)];
  const first = tr._v.times[n - 1];
  const source = el('span', { id: 'vd-source', text: sourceText(r.source) });
  $('#vd-body').replaceChildren(el('dl', { class: 'details' },
    ...dd('Address', el('span', { class: 'url', id: 'vd-url', text: r.url })),
    ...dd('Website', el('button', {
      type: 'button', class: 'linkish link', id: 'vd-website',
      onclick: () => {
        $('#visit-dialog').close();
        go('website', { domain: r.domain });
      },
    }, r.display === r.domain ? r.display : `${r.display} (${r.domain})`)),
    ...dd('Visited', fmtTime(r.visited_at), n > 1 ? `: the latest of ${n} visits in a row (the first at ${timeOnly.format(new Date(first))})` : ''),
    ...dd('Time spent', spent && spent.textContent ? `${spent.textContent}${spent.classList.contains('est') ? ' (estimated)' : ''}${n > 1 ? ' (the latest visit)' : ''}` : 'Not known'),
    ...dd('Category', categoryCell(...tr._cat)),
    ...dd('Recorded by', source),
    ...(r.device ? dd('Device', r.device) : []),
  ));
  showModal($('#visit-dialog'));
  $('#vd-open').focus();
  nameSource(r.source, source);
}

/** Where a visit came from, as people say it, before the backend has named the profile. */
function sourceText(source) {
  if (source === 'cli') return 'the sitetrail command';
  return names.get(source) || (source.startsWith('extension:') ? 'the Sitetrail extension' : 'a browser on this computer');
}

/** source id -> its name as people say it ("Google Chrome, profile Default"), asked once each. */
const names = new Map();

/** Asks the backend what `source` is (a browser profile found on this computer, an extension) and
 * writes it into `span`, unless the dialog shows another visit by then. */
async function nameSource(source, span) {
  if (names.has(source) || source === 'cli') return;
  try {
    names.set(source, await call('describe_source', { source }));
  } catch (_) {
    return; // the generic words stay
  }
  if (span.isConnected) span.textContent = names.get(source);
}

export function initDetails() {
  $('#vd-open').addEventListener('click', async () => {
    try {
      await call('open_url', { url: detailsOf._row.url });
      toast('Opened in your browser.');
    } catch (e) {
      toast(`Could not open it: ${describe(e)}`, true);
    }
  });
  $('#vd-copy').addEventListener('click', async () => {
    const url = detailsOf._row.url;
    try {
      await navigator.clipboard.writeText(url);
    } catch (_) {
      // Without the async clipboard: select the address and copy it the old way.
      const range = document.createRange();
      range.selectNodeContents($('#vd-url'));
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      document.execCommand('copy');
    }
    toast('Address copied.');
  });
  $('#vd-forget').addEventListener('click', () => {
    $('#visit-dialog').close();
    forget.forgetRow(detailsOf._v);
  });
}
