// The one definition of each category's colour: the same in every chart and legend, on every
// render, in the light and the dark theme (a colour is never picked by rank, so a category never
// changes colour when another one gains time).
//
// The palette is colour-blind-safe where it matters most: the seven most common categories get
// the Okabe-Ito colours (distinguishable with every common colour-vision deficiency), the others
// Paul Tol's "muted" and "light" sets; no two neighbours in the list share a hue family. With 23
// categories no palette keeps every pair apart for everyone, so every chart also names each colour
// in its legend and in the hover text, and slices and bars are separated by a gap.
import { categoryName } from './categories.js';

const SVG = 'http://www.w3.org/2000/svg';

/** Category id -> colour. `uncategorized` is a websites not classified yet. */
export const CATEGORY_COLOURS = Object.freeze({
  search_reference: '#0072B2',
  social: '#CC79A7',
  communication: '#56B4E9',
  news: '#E69F00',
  video_streaming: '#D55E00',
  dev_tech: '#009E73',
  shopping: '#F0E442',
  productivity: '#44AA99',
  music_audio: '#AA4499',
  games: '#117733',
  finance: '#999933',
  education: '#88CCEE',
  jobs: '#DDCC77',
  travel_maps: '#CC6677',
  health: '#EE8866',
  government_law: '#77AADD',
  sports: '#BBCC33',
  lifestyle_hobbies: '#FFAABB',
  adult: '#882255',
  gambling: '#AAAA00',
  ads_infra: '#6E7B8B',
  other: '#A0A0A0',
  local_dev: '#332288',
  uncategorized: '#D4D4D4',
});

/** The colour of a category id (`null` or `uncategorized`: not classified yet). */
export function colourOf(category) {
  return CATEGORY_COLOURS[category || 'uncategorized'] || CATEGORY_COLOURS.other;
}

/** A small square of a category's colour (SVG: the CSP allows no inline styles). */
export function swatch(category) {
  const s = document.createElementNS(SVG, 'svg');
  s.setAttribute('class', 'swatch');
  s.setAttribute('width', '10');
  s.setAttribute('height', '10');
  s.setAttribute('aria-hidden', 'true');
  const r = document.createElementNS(SVG, 'rect');
  r.setAttribute('width', '10');
  r.setAttribute('height', '10');
  r.setAttribute('rx', '2');
  r.setAttribute('fill', colourOf(category));
  s.append(r);
  return s;
}

/** A category's name with its colour in front, for lists. */
export function categoryLabel(category) {
  const span = document.createElement('span');
  span.className = 'cat-label';
  span.dataset.category = category || 'uncategorized';
  span.append(swatch(category), document.createTextNode(categoryName(category)));
  return span;
}
