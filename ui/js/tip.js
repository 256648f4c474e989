// The app's own tooltip, for text a narrow window cuts (a domain, a category name, a page title):
// an element with `data-tip` shows its full text below it on hover and on keyboard focus, where a
// native `title` shows on hover only (and stays drawn on top of a dialog opened meanwhile). It
// shows only when it adds something: when the element's text is cut, or when the tip says more
// than the text (a row's domain tips its address). It is an ordinary element, under every modal
// dialog (which is drawn in the top layer), and it hides when a dialog opens or the page scrolls.
import { $ } from './dom.js';

let shownFor = null;

/** True when `node`'s text is cut (its content is wider than its box). */
function cut(node) {
  return node.scrollWidth > node.clientWidth + 1;
}

function show(node) {
  const text = node.dataset.tip;
  if (!text || !(cut(node) || text !== node.textContent.trim())) return;
  const tip = $('#tip');
  tip.textContent = text;
  tip.hidden = false;
  shownFor = node;
  const r = node.getBoundingClientRect();
  const w = tip.offsetWidth;
  const h = tip.offsetHeight;
  // CSSOM, not a style attribute (the CSP forbids inline styles).
  tip.style.left = `${Math.max(4, Math.min(window.innerWidth - w - 4, r.left))}px`;
  tip.style.top = `${r.bottom + h + 6 > window.innerHeight ? Math.max(4, r.top - h - 4) : r.bottom + 4}px`;
}

function hide() {
  shownFor = null;
  $('#tip').hidden = true;
}

export function init() {
  const over = (e) => {
    const node = e.target.closest && e.target.closest('[data-tip]');
    if (node && node !== shownFor) show(node);
  };
  const out = (e) => {
    if (!shownFor) return;
    const to = e.relatedTarget;
    if (!to || !shownFor.contains(to)) hide();
  };
  document.addEventListener('mouseover', over);
  document.addEventListener('focusin', over);
  document.addEventListener('mouseout', out);
  document.addEventListener('focusout', out);
  // A scroll moves the element: the tip follows the one with the focus (focusing scrolls it
  // into view), and leaves one the pointer was over.
  document.addEventListener('scroll', () => {
    if (!shownFor) return;
    const node = shownFor;
    if (node === document.activeElement) {
      shownFor = null;
      show(node);
    } else hide();
  }, { capture: true, passive: true });
  document.addEventListener('sitetrail:modal', hide);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') hide();
  });
}
