// Small DOM and formatting helpers shared by the views.
import { categoryName, setCategories } from './categories.js';
import { swatch } from './colours.js';
import { dateFormat, numberFormat } from './locale.js';

/** Creates an element: el('td', {class: 'x', title: 't'}, child, 'text', ...). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export const $ = (sel) => document.querySelector(sel);

const dateTime = dateFormat({ dateStyle: 'medium', timeStyle: 'short' });
const timeOnly = dateFormat({ timeStyle: 'short' });
const number = numberFormat();

/** "29 Nov 2026, 10:00" from an RFC 3339 string; '–' for none. */
export function fmtTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
}

/** "10:00" today, else the full date. */
export function fmtWhen(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date();
  return d.toDateString() === today.toDateString() ? timeOnly.format(d) : dateTime.format(d);
}

export function fmtNumber(n) {
  return n === null || n === undefined ? '–' : number.format(n);
}

/**
 * A duration as people read it, the one format of the whole UI: "45 s", "12 min", "1 h 05 min"
 * ("0 s" for zero). Never "0:50", which reads as minutes or hours. Under a minute, whole seconds
 * to the nearest; from 59.5 s on, whole minutes to the nearest (from the milliseconds, rounded
 * once); halves go up. The CLI (src/cli/human.rs) and the extension's popup say the same:
 * tests/fixtures/durations.json is the table all three are tested against.
 */
export function fmtSpent(ms) {
  const t = Math.max(0, Number(ms) || 0);
  const s = Math.floor((t + 500) / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor((t + 30_000) / 60_000);
  if (min < 60) return `${min} min`;
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
}

/** The mark of a figure estimated from a browser's own history (how long pages stayed open), not
 * measured: the CLI's and the extension popup's too. */
export const ESTIMATE_MARK = '≈';

/** An estimated duration: "≈ 3 min". */
export function fmtEstimate(ms) {
  return `${ESTIMATE_MARK} ${fmtSpent(ms)}`;
}

/** A forecast ("about 3 min", "about 1 h 05 min", "under a minute"): fmtSpent with "about". */
export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '';
  if (seconds < 60) return 'under a minute';
  if (seconds >= 48 * 3600) return `about ${Math.round(seconds / 86400)} days`;
  return `about ${fmtSpent(seconds * 1000)}`;
}

// The categories' names live in categories.js, below this file and colours.js (which needs them
// too); re-exported here, where the views have always found them.
export { categoryName, setCategories };

/** Who set a category, as users say it. */
export function sourceLabel(src) {
  return { ai: 'AI', builtin: 'built-in', user: 'you' }[src] || '';
}

/** How sure a category is, as users say it. */
export function confidenceLabel(confidence) {
  return { high: 'certain', medium: 'likely', low: 'a guess' }[confidence] || '';
}

/** Which built-in rule gave a category, as users say it. */
export function ruleLabel(rule) {
  return {
    user: 'your category for this site',
    user_name: 'your category for the same site under another ending',
    map: 'a well-known website',
    map_name: 'a well-known website under another ending',
    open_table: 'the open domain list',
    local: 'a local or test address',
    subdomain: 'the subdomain',
    word: 'a word in the name',
    ending: 'the domain ending',
    nothing: 'nothing matched',
  }[rule] || '';
}

/** A category badge with its source and how sure it is. */
export function categoryCell(category, source, confidence) {
  const conf = category && confidence
    ? el('span', { class: `conf ${confidence}`, title: `Confidence: ${confidence}`, text: confidenceLabel(confidence) })
    : null;
  return el(
    'span',
    { class: 'cat' },
    el('span', { class: category ? 'badge' : 'badge none', 'data-category': category || 'uncategorized', 'data-tip': categoryName(category) }, swatch(category), categoryName(category)),
    source ? el('span', { class: `src ${source}`, text: sourceLabel(source) }) : null,
    conf,
  );
}

/**
 * Opens `dialog` as a modal. While it is open, the elements outside it lend their `title` to
 * `data-modal-title`: a native tooltip shown when the dialog opened (the pointer resting on a
 * button) would otherwise stay drawn on top of it, and WebKit draws it above everything. The
 * titles come back when the dialog closes. The app's own tooltip (tip.js) hides by itself.
 */
export function showModal(dialog) {
  for (const node of document.querySelectorAll('[title]')) {
    if (dialog.contains(node)) continue;
    node.dataset.modalTitle = node.getAttribute('title');
    node.removeAttribute('title');
  }
  document.dispatchEvent(new CustomEvent('sitetrail:modal'));
  dialog.addEventListener('close', restoreTitles, { once: true });
  dialog.showModal();
}

function restoreTitles() {
  if (document.querySelector('dialog[open]')) return; // another modal is still up
  for (const node of document.querySelectorAll('[data-modal-title]')) {
    // An element whose title was set again meanwhile keeps the new one.
    if (!node.hasAttribute('title')) node.setAttribute('title', node.dataset.modalTitle);
    delete node.dataset.modalTitle;
  }
}

let toastTimer = null;
/** Shows a short message at the bottom; errors stay longer. */
export function toast(message, bad = false) {
  const t = $('#toast');
  t.textContent = message;
  t.className = bad ? 'toast bad' : 'toast';
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), bad ? 8000 : 3500);
}
