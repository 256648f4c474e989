// First run: with an empty database, offer to import the browsers found on this machine.
import { $, el } from './dom.js';

let features = [];
let shownFor = null;

export function setFeatures(list) {
  features = list;
}

/** Shows the welcome card while there are no visits. */
export function update(visits) {
  const card = $('#first-run');
  const empty = visits === 0;
  card.hidden = !empty;
  if (!empty || shownFor === 'done') return;
  if (shownFor === features.join()) return;
  shownFor = features.join();
  const body = $('#first-run-body');
  body.replaceChildren();
  if (!features.includes('import')) {
    body.append(
      el('p', { class: 'note' },
        'Importing browser history is not available in this build yet. Until then, record visits with ',
        el('code', { text: 'sitetrail visit URL' }), ' and they show up here as they are classified.'),
    );
  }
}
