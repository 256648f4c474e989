// The popup: connected or not (and why), events waiting, pause, a focus session, and "don't
// record this site".
// It reads what the service worker stores (status, queue) and changes settings in storage; the
// worker reacts to the change.
import { excludedBy, normalize, siteOfUrl, toggleExclusion } from './lib/settings.js';
import { MAX_EVENTS } from './lib/queue.js';
import { openOptionsAndClose } from './lib/popup-actions.js';
import { fmtClock, siteLine } from './lib/format.js';

const $ = (id) => document.getElementById(id);
const storage = chrome.storage.local;
let settings = normalize(undefined);
let site = '';

function plural(n, one, many) {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

async function render() {
  const got = await storage.get(['status', 'q:meta', 'settings', 'limitsNote']);
  settings = normalize(got.settings);
  const status = got.status || { connected: false, reason: 'Starting…' };
  const meta = got['q:meta'] || { head: 0, tail: 0, dropped: 0 };

  const state = $('state');
  state.textContent = status.connected ? 'Connected' : 'Not connected';
  state.className = `pill ${status.connected ? 'ok' : 'bad'}`;
  $('reason').hidden = status.connected || !status.reason;
  $('reason').textContent = status.reason || '';
  $('retry').hidden = status.connected;
  $('db').hidden = !(status.connected && status.host);
  if (status.host) $('db').textContent = `Storing in ${status.host.db}`;

  const waiting = meta.tail - meta.head;
  $('queue').textContent = waiting === 0
    ? 'Everything recorded is stored.'
    : `${plural(waiting, 'event', 'events')} waiting to be stored${status.connected ? '…' : ' (kept until Sitetrail is reachable).'}`;
  $('dropped').hidden = !meta.dropped;
  $('dropped').textContent = `${plural(meta.dropped || 0, 'event was', 'events were')} dropped: the queue was full (it keeps the newest ${MAX_EVENTS.toLocaleString()}).`;
  $('refused').hidden = !status.rejected;
  $('refused').textContent = `${plural(status.rejected || 0, 'event was', 'events were')} refused by Sitetrail (see the browser's extension errors).`;

  // Limits fail open: while the host cannot be asked, nothing is held back, and this says so.
  $('limits-note').hidden = !got.limitsNote;
  $('limits-note').textContent = got.limitsNote || '';

  $('paused').checked = settings.paused;
  const excluded = excludedBy(site, settings.excludedHosts).length > 0;
  $('site').textContent = site ? (excluded ? `${site} is not recorded` : site) : 'This page is not recorded (not a web page).';
  $('exclude').hidden = !site;
  $('exclude').textContent = excluded ? 'Record this site' : "Don't record this site";
  $('exclude').className = excluded ? '' : 'ghost';
}

/** The focus session (from the worker's last answer of the host) and the button to start one. */
function renderFocus(focus) {
  const until = focus ? fmtClock(focus.ends_at_ms) : '';
  $('focus-state').textContent = focus ? `Focusing until ${until}: ${focus.target_name}` : '';
  $('focus-start').hidden = Boolean(focus);
  $('focus-stop').hidden = !focus;
  $('focus-start').textContent = `Focus ${settings.focusMinutes} min (${settings.focusBlocks.join(', ')})`;
}

function askFocusState() {
  chrome.runtime.sendMessage({ type: 'focus-state' }, (answer) => {
    if (chrome.runtime.lastError) return;
    renderFocus(answer && answer.focus);
  });
}

function focus(minutes) {
  chrome.runtime.sendMessage({ type: 'focus', minutes, blocks: settings.focusBlocks }, (answer) => {
    if (chrome.runtime.lastError) return;
    $('focus-message').hidden = !answer || !answer.message;
    $('focus-message').textContent = (answer && answer.message) || '';
    askFocusState();
  });
}

async function save(patch) {
  await storage.set({ settings: { ...settings, ...patch } });
}

async function init() {
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  site = tab && /^https?:/i.test(tab.url || '') ? siteOfUrl(tab.url) : '';
  $('paused').addEventListener('change', (e) => save({ paused: e.target.checked }));
  $('exclude').addEventListener('click', () => save({ excludedHosts: toggleExclusion(site, settings.excludedHosts) }));
  $('retry').addEventListener('click', () => chrome.runtime.sendMessage({ type: 'reconnect' }));
  $('focus-start').addEventListener('click', () => focus(settings.focusMinutes));
  $('focus-stop').addEventListener('click', () => focus(0));
  $('options').addEventListener('click', (e) => {
    e.preventDefault();
    openOptionsAndClose(chrome.runtime, () => window.close());
  });
  chrome.storage.onChanged.addListener((_c, area) => area === 'local' && render());
  await render();
  askFocusState();
  // What Sitetrail knows of this site: its category and today's time on it.
  if (site) {
    chrome.runtime.sendMessage({ type: 'site-info', url: tab.url }, (info) => {
      if (chrome.runtime.lastError) return; // the worker is starting: nothing to show
      const line = siteLine(info);
      $('site-info').hidden = !line;
      $('site-info').textContent = line;
    });
  }
}

init();
