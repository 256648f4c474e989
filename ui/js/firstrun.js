// First run: with an empty database, offer to import the browsers found on this machine, with
// progress.
import { call, describe, listen, IMPORT_PROGRESS } from './api.js';
import { $, el, fmtNumber, toast } from './dom.js';
import { renderLinks } from './capture.js';

let rendered = false;
let importing = false;

/** Imports a browser history file the user picks in the system's open dialog. */
export async function importFile() {
  let r;
  try {
    r = await call('import_history_file');
  } catch (e) {
    toast(`Could not import it: ${describe(e)}`, true);
    return;
  }
  if (!r) return; // cancelled
  toast(`Imported ${fmtNumber(r.imported)} visits from the ${{ chrome: 'Chrome-family', firefox: 'Firefox', safari: 'Safari' }[r.browser] || r.browser} history file; classifying their websites now.`);
  document.dispatchEvent(new CustomEvent('sitetrail:imported'));
}

/** Shows the welcome card while there are no visits. */
export function update(visits) {
  const card = $('#first-run');
  card.hidden = visits !== 0 && !importing;
  if (visits !== 0 || rendered) return;
  rendered = true;
  const ext = $('#first-run-extension');
  renderLinks(ext, { firstRun: true });
  const body = $('#first-run-body');
  body.replaceChildren(el('p', { class: 'muted', text: 'Looking for browsers…' }));
  offerImport(body);
}

async function offerImport(body) {
  let profiles;
  try {
    profiles = await call('detect_browsers');
  } catch (e) {
    body.replaceChildren(el('p', { class: 'err', text: `Could not look for browsers: ${describe(e)}` }));
    return;
  }
  if (profiles.length === 0) {
    body.replaceChildren(
      el('p', { class: 'note', text: 'No browser history was found where browsers keep it on this computer (Chrome, Chromium, Edge, Brave, Vivaldi, Opera, Firefox, LibreWolf, Waterfox, Safari). If yours is elsewhere, or copied from another computer, pick its history file: History (Chrome family), places.sqlite (Firefox) or History.db (Safari).' }),
      el('div', { class: 'actions' }, el('button', { type: 'button', id: 'first-run-file', onclick: importFile }, 'Import a history file…')),
    );
    return;
  }
  const boxes = profiles.map((p) => el('label', {}, el('input', { type: 'checkbox', value: p.id, checked: true }), p.name));
  const bar = el('progress', { class: 'progress', max: '1', value: '0', hidden: true, 'aria-label': 'Import progress' });
  const status = el('p', { class: 'line small', role: 'status', 'aria-live': 'polite' });
  const button = el('button', { type: 'button', id: 'first-run-import' }, 'Import history');
  button.addEventListener('click', async () => {
    const ids = boxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
    if (ids.length === 0) {
      status.textContent = 'Choose at least one browser.';
      return;
    }
    importing = true;
    button.disabled = true;
    bar.hidden = false;
    const unlisten = await listen(IMPORT_PROGRESS, (p) => {
      bar.max = String(Math.max(1, p.total));
      bar.value = String(p.read);
      status.textContent = `Importing ${p.profile}: ${fmtNumber(p.read)} of ${fmtNumber(p.total)} visits`;
    });
    try {
      const results = await call('import_browsers', { ids });
      const n = results.reduce((a, r) => a + r.imported, 0);
      const failed = results.filter((r) => r.error);
      status.textContent = `Imported ${fmtNumber(n)} visits.` +
        (failed.length ? ` Not imported: ${failed.map((r) => `${r.profile.name} (${r.error})`).join('; ')}` : '');
      toast(`Imported ${fmtNumber(n)} visits; classifying their websites now.`);
      button.hidden = n > 0;
      document.dispatchEvent(new CustomEvent('sitetrail:imported'));
    } catch (e) {
      status.textContent = `Import failed: ${describe(e)}`;
      button.disabled = false;
    } finally {
      unlisten();
      importing = false;
    }
  });
  body.replaceChildren(
    el('fieldset', { class: 'checks' }, el('legend', { class: 'small', text: 'Browsers found' }), ...boxes),
    el('div', { class: 'actions' }, button),
    bar,
    status,
  );
}
