// The page shown instead of a site over its limit (or held back by a focus session, with no
// "Continue"): the time and the limit, "Close tab", and after
// a deliberate pause (the options' seconds; none when strict) "Continue for 5 minutes" (the
// options' minutes). The
// blocked URL is after the `#` (the redirect rule puts it there).
import { SAVED_LIMITS, continueLabel, continueState, limitFor, pausedLine, siteOfPage } from './lib/limits.js';
import { fmtSpent } from './lib/format.js';
import { normalize } from './lib/settings.js';

const $ = (id) => document.getElementById(id);
const url = location.hash.slice(1);
const shownAt = Date.now();

function ask(message) {
  return new Promise((resolve) => {
    chrome.runtime.sendMessage(message, (answer) => resolve(chrome.runtime.lastError ? null : answer));
  });
}

/** Which used-up limit holds `url` back, and how it may go on: read here from what the service
 * worker keeps (the rules' source in storage.session, the options in storage.local) rather than
 * asked of it, so the sentence does not wait for the worker, busy with the navigation's events;
 * asked of it if the storage cannot be read. */
async function lookUp(url) {
  try {
    const [session, local] = await Promise.all([chrome.storage.session.get(SAVED_LIMITS), chrome.storage.local.get('settings')]);
    const saved = session[SAVED_LIMITS] || {};
    const s = normalize(local.settings);
    return {
      limit: limitFor(Array.isArray(saved.limits) ? saved.limits : [], url),
      pauseSeconds: s.limitPauseSeconds,
      continueMinutes: s.limitContinueMinutes,
      strict: s.strictLimits,
    };
  } catch {
    return ask({ type: 'limit-for', url });
  }
}

async function closeTab() {
  const tab = await chrome.tabs.getCurrent();
  if (tab) await chrome.tabs.remove(tab.id);
}

function showContinue({ pauseSeconds, continueMinutes, strict, limit }) {
  const button = $('continue');
  const tick = () => {
    const s = continueState({ pauseSeconds, strict, elapsedMs: Date.now() - shownAt, focus: Boolean(limit.focus) });
    button.hidden = !s.offered;
    $('strict').hidden = s.offered || Boolean(limit.focus);
    button.disabled = !s.ready;
    button.textContent = s.ready ? continueLabel(continueMinutes || 5) : `Continue in ${s.secondsLeft} s`;
    if (s.offered && !s.ready) setTimeout(tick, 250);
  };
  tick();
}

async function init() {
  $('close').addEventListener('click', closeTab);
  $('continue').addEventListener('click', async () => {
    const answer = await ask({ type: 'continue', url });
    if (answer && answer.ok) location.replace(url);
  });
  $('close').focus();
  if (!siteOfPage(url)) {
    $('line').textContent = 'There is no page to go on to.';
    return;
  }
  $('address').textContent = url;
  const answer = await lookUp(url);
  if (!answer || !answer.limit) {
    // Not over a limit any more (a new day, a limit removed): nothing to hold back.
    location.replace(url);
    return;
  }
  document.title = answer.limit.focus ? 'Focusing · Sitetrail' : `Paused: ${answer.limit.target_name || answer.limit.target} · Sitetrail`;
  $('line').textContent = pausedLine(answer.limit, fmtSpent);
  // When the page says why, from the navigation's start (benches/limits.rs reads it).
  performance.mark('sitetrail:pause-shown');
  showContinue(answer);
}

init();
