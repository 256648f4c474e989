// Focus sessions from the app: the dialog that starts one (how long, the categories and websites
// held back in the browser on every synced device), the overview's line while one runs (until
// when, what it holds back) with Stop, redrawn when it ends on its own or changes elsewhere.
import { call, describe } from './api.js';
import { $, el, fmtSpent, fmtWhen, showModal, toast } from './dom.js';

/** Held back unless the person chooses otherwise: what "focus" usually keeps away. */
const DEFAULT_BLOCKS = ['social', 'video_streaming', 'games'];
/** While a session runs, its line says the minutes left this often. */
const TICK_MS = 30_000;

let session = null;
let timer = null;
let generation = 0;

function draw() {
  clearTimeout(timer);
  timer = null;
  const bar = $('#focus-bar');
  $('#l-focus').textContent = session && session.active ? 'Focus again…' : 'Focus…';
  if (!session || !session.active) {
    bar.hidden = true;
    $('#limits-card').dataset.focus = 'off';
    return;
  }
  const left = Math.max(0, Date.parse(session.ends_at) - Date.now());
  const names = session.blocks.map((b) => b.target_name).join(', ');
  $('#focus-status').textContent = `Focusing until ${fmtWhen(session.ends_at)} (${fmtSpent(left)} left): ${names} held back in the browser.`;
  bar.hidden = false;
  $('#limits-card').dataset.focus = 'on';
  // It ends on its own: the line goes when it does, and says the time left meanwhile.
  timer = setTimeout(() => (left <= TICK_MS ? refresh() : draw()), Math.min(TICK_MS, left + 500));
}

/** Asks the backend what runs and redraws. */
export async function refresh() {
  const gen = ++generation;
  try {
    const s = await call('get_focus');
    if (gen !== generation) return;
    session = s;
  } catch (e) {
    toast(`Could not read the focus session: ${describe(e)}`, true);
    return;
  }
  draw();
}

function showError(message) {
  $('#fd-error').textContent = message || '';
  $('#fd-error').hidden = !message;
  $('#fd-duration').setAttribute('aria-invalid', message ? 'true' : 'false');
}

function open() {
  showError('');
  const held = session && session.active ? session.blocks : null;
  for (const box of document.querySelectorAll('#fd-cats input')) {
    box.checked = held ? held.some((b) => b.target_type === 'category' && b.target === box.value) : DEFAULT_BLOCKS.includes(box.value);
  }
  $('#fd-sites').value = held ? held.filter((b) => b.target_type === 'domain').map((b) => b.target).join(', ') : '';
  showModal($('#focus-dialog'));
  $('#fd-duration').focus();
  $('#fd-duration').select();
}

async function start() {
  const blocks = [...document.querySelectorAll('#fd-cats input:checked')].map((b) => b.value)
    .concat($('#fd-sites').value.split(/[\s,]+/).filter(Boolean));
  $('#fd-start').disabled = true;
  try {
    session = await call('start_focus', { duration: $('#fd-duration').value, blocks });
    $('#focus-dialog').close();
    draw();
  } catch (e) {
    showError(describe(e));
    $('#fd-duration').focus();
  } finally {
    $('#fd-start').disabled = false;
  }
}

async function stop() {
  $('#focus-stop').disabled = true;
  try {
    session = await call('stop_focus');
    toast('Focus stopped: nothing is held back any more.');
    draw();
  } catch (e) {
    toast(`Could not stop the focus session: ${describe(e)}`, true);
  } finally {
    $('#focus-stop').disabled = false;
  }
}

export function init(categories) {
  $('#fd-cats').replaceChildren(...categories.map((c) => el('label', {},
    el('input', { type: 'checkbox', value: c.id }), c.name)));
  $('#l-focus').addEventListener('click', open);
  $('#fd-cancel').addEventListener('click', () => $('#focus-dialog').close());
  $('#fd-form').addEventListener('submit', (e) => {
    e.preventDefault();
    start();
  });
  $('#focus-stop').addEventListener('click', stop);
}
