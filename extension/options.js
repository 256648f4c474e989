// Options: idle threshold, audible tabs, the pause before continuing past a limit, and the list of
// sites never recorded.
import { normalize } from './lib/settings.js';

const $ = (id) => document.getElementById(id);
const storage = chrome.storage.local;
let settings = normalize(undefined);

async function save(patch) {
  settings = normalize({ ...settings, ...patch });
  await storage.set({ settings });
  $('saved').textContent = 'Saved.';
  render();
}

function render() {
  $('idle').value = String(settings.idleSeconds);
  $('audible').checked = settings.countAudible;
  $('limit-pause').value = String(settings.limitPauseSeconds);
  $('limit-continue').value = String(settings.limitContinueMinutes);
  $('strict-limits').checked = settings.strictLimits;
  $('focus-minutes').value = String(settings.focusMinutes);
  $('focus-blocks').value = settings.focusBlocks.join(', ');
  const list = $('excluded');
  list.replaceChildren();
  for (const host of settings.excludedHosts) {
    const li = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'ghost';
    button.textContent = 'Record again';
    button.addEventListener('click', () => save({ excludedHosts: settings.excludedHosts.filter((h) => h !== host) }));
    li.append(`${host} `, button);
    list.append(li);
  }
  $('none').hidden = settings.excludedHosts.length > 0;
}

async function init() {
  settings = normalize((await storage.get('settings')).settings);
  $('idle').addEventListener('change', (e) => save({ idleSeconds: Number(e.target.value) }));
  $('audible').addEventListener('change', (e) => save({ countAudible: e.target.checked }));
  $('limit-pause').addEventListener('change', (e) => save({ limitPauseSeconds: Number(e.target.value) }));
  $('limit-continue').addEventListener('change', (e) => save({ limitContinueMinutes: Number(e.target.value) }));
  $('strict-limits').addEventListener('change', (e) => save({ strictLimits: e.target.checked }));
  $('focus-minutes').addEventListener('change', (e) => save({ focusMinutes: Number(e.target.value) }));
  $('focus-blocks').addEventListener('change', (e) => save({ focusBlocks: e.target.value.split(',') }));
  render();
}

init();
