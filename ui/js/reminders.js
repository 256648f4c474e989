// Reminders of limits and goals: Settings' form (on or off, a warning point, quiet hours) and the
// overview's one question, asked once a limit exists and never again once answered either way.
// Off until the person turns them on.
import { call, describe } from './api.js';
import { $, toast } from './dom.js';

let current = null;
let onAnswered = () => {};

function draw() {
  if (!current) return;
  $('#s-rem-on').checked = current.enabled;
  $('#s-rem-warn').value = current.warn_percent ?? '';
  const [from, until] = current.quiet ? current.quiet.split('-') : ['', ''];
  $('#s-rem-from').value = from;
  $('#s-rem-until').value = until;
  $('#s-rem-form').dataset.asked = String(current.asked);
}

/** Reads the saved settings and redraws the form (not while the person is editing it). */
export async function refresh() {
  try {
    current = await call('get_reminders');
  } catch (e) {
    toast(`Could not read the reminder settings: ${describe(e)}`, true);
    return;
  }
  if (!$('#s-rem-form').contains(document.activeElement)) draw();
}

function showError(message) {
  $('#s-rem-error').textContent = message || '';
  $('#s-rem-error').hidden = !message;
}

async function send(args) {
  current = await call('set_reminders', args);
  draw();
  onAnswered();
}

async function save() {
  showError('');
  $('#s-rem-status').textContent = '';
  const warn = $('#s-rem-warn').value.trim();
  const [from, until] = [$('#s-rem-from').value, $('#s-rem-until').value];
  if (Boolean(from) !== Boolean(until)) {
    showError('Quiet hours need a start and an end (22:00 to 07:00, say); leave both empty for none.');
    (from ? $('#s-rem-until') : $('#s-rem-from')).focus();
    return;
  }
  const args = { enabled: $('#s-rem-on').checked, warnPercent: warn === '' ? null : Number(warn), quiet: from ? `${from}-${until}` : null };
  if (warn !== '' && !Number.isInteger(args.warnPercent)) {
    showError('The warning is a whole number of percent, 1 to 99.');
    $('#s-rem-warn').focus();
    return;
  }
  $('#s-rem-save').disabled = true;
  try {
    await send(args);
    $('#s-rem-status').textContent = current.enabled ? 'Saved: reminders are on.' : 'Saved: reminders are off.';
  } catch (e) {
    showError(describe(e));
  } finally {
    $('#s-rem-save').disabled = false;
  }
}

/** The overview's question: either answer is saved, so it is asked once. */
async function answer(on) {
  try {
    const keep = current || { warn_percent: null, quiet: null };
    await send({ enabled: on, warnPercent: keep.warn_percent, quiet: keep.quiet });
    toast(on ? 'Reminders are on. Settings has the warning point and quiet hours.' : 'No reminders. You can turn them on in Settings.');
  } catch (e) {
    toast(`Could not save that: ${describe(e)}`, true);
  }
}

/** `answered()` is called once the settings are saved (the overview's question then goes). */
export function init(answered) {
  onAnswered = answered;
  $('#s-rem-form').addEventListener('submit', (e) => {
    e.preventDefault();
    save();
  });
  $('#l-ask-on').addEventListener('click', () => answer(true));
  $('#l-ask-off').addEventListener('click', () => answer(false));
  $('#tab-settings').addEventListener('click', refresh);
}
