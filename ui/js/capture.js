// Linking browsers to Sitetrail's extension (settings and the first-run card): which browsers are
// linked, Link/Unlink, and how to load the extension. The linking itself is the backend's (the
// same as `sitetrail browser-link install`).
import { call, describe } from './api.js';
import { el, fmtWhen, toast } from './dom.js';

/** True when the browser reads a working link here and its extension has talked to this database
 * (the backend's `recording`; never on the strength of a manifest file alone). */
function live(l) {
  return Boolean(l.recording);
}

/** The link the browser reads: the user's own, the package's (for every user), or none. */
function linkText(l) {
  return l.scope === 'system' ? 'linked for every user by the Sitetrail package' : 'linked';
}

function stateText(l) {
  if (!l.linked) return l.heard_at ? `not linked (its extension last wrote here ${fmtWhen(l.heard_at)})` : 'not linked';
  if (l.problem) return `${linkText(l)}, but: ${l.problem}`;
  if (!l.this_db) return `${linkText(l)}, to another database (${l.db})`;
  if (!l.recording) return `${linkText(l)}; the extension has not connected yet (load it in this browser)`;
  return `connected: recording live (last heard from ${fmtWhen(l.heard_at)})${l.scope === 'system' ? ', through the Sitetrail package\u2019s link' : ''}`;
}

const names = (list) => list.map((l) => l.product).join(' or ');

/** The one step left, said plainly: link a browser, load the extension, or wait for a page. */
function nextStep(v, firstRun) {
  if (v.problem) return null;
  const set = v.links.filter((l) => l.linked && l.this_db && !l.problem);
  const heard = set.filter((l) => l.recording);
  if (set.length === 0) return 'Step left: link your browser (Link, below).';
  if (heard.length === 0) return `Step left: load the extension in ${names(set)} (step 2 below). Sitetrail has not heard from it yet.`;
  return firstRun
    ? `${names(heard)}: connected. Waiting for the first page: open any website there.`
    : null;
}

function steps(v) {
  return el('ol', { class: 'steps' },
    el('li', {}, 'Link the browser here. Sitetrail writes a small file where the browser looks for helper programs, so the extension can hand it what you visit; nothing goes anywhere else.'),
    el('li', {}, 'Load the extension: open the browser’s extensions page (chrome://extensions, brave://extensions, edge://extensions, vivaldi://extensions), turn on Developer mode, choose Load unpacked and pick ',
      el('code', { text: v.extension_dir || 'the extension folder of Sitetrail' }), '.'),
    el('li', {}, 'Firefox: install the Sitetrail extension package',
      v.firefox_package ? el('span', {}, ' ', el('code', { text: v.firefox_package })) : ' (sitetrail-firefox-….xpi)',
      ' so that it stays installed: in Firefox ESR, Developer Edition or Nightly, set xpinstall.signatures.required to false in about:config, then open about:addons → gear menu → Install Add-on From File and pick the package. Release Firefox installs only extensions signed by Mozilla, which Sitetrail\u2019s is not yet. (about:debugging → Load Temporary Add-on works for trying it, but Firefox removes a temporary add-on when it quits, and recording stops.)'),
    el('li', {}, 'The extension’s toolbar button shows whether it is connected, how many events wait, and lets you pause or skip a site.'));
}

/** Renders the browser list with Link/Unlink buttons and the steps into `container`. */
export async function renderLinks(container, { firstRun = false } = {}) {
  let v;
  try {
    v = await call('get_browser_links');
  } catch (e) {
    container.replaceChildren(el('p', { class: 'err', text: `Could not read the browser links: ${describe(e)}` }));
    return;
  }
  draw(container, v, firstRun);
}

function draw(container, v, firstRun) {
  const list = el('ul', { class: 'links' });
  for (const l of v.links) {
    // Offered only where it changes something: Unlink for a link of the user's own, Link where
    // no link serves this database (none, or the package's one is broken or elsewhere).
    const unlink = l.can_unlink;
    let button = null;
    if (unlink || l.can_link) {
      button = el('button', {
        type: 'button',
        class: unlink ? 'ghost small' : 'small',
        'data-browser': l.browser,
        disabled: Boolean(v.problem) && !unlink,
      }, unlink ? 'Unlink' : 'Link');
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          const next = await call(unlink ? 'unlink_browser' : 'link_browser', { browser: l.browser });
          toast(unlink ? `${l.product} unlinked.` : `${l.product} linked. Now load the extension in it (see the steps).`);
          draw(container, next, firstRun);
        } catch (e) {
          toast(`Could not ${unlink ? 'unlink' : 'link'} ${l.product}: ${describe(e)}`, true);
          button.disabled = false;
        }
      });
    }
    list.append(el('li', { 'data-browser': l.browser, 'data-scope': l.scope, class: l.linked ? 'linked' : null },
      el('span', { class: 'd', text: l.product }),
      el('span', { class: `state ${live(l) ? 'done' : l.linked ? 'pending' : ''}`, title: l.extension_version ? `Extension ${l.extension_version}` : null, text: stateText(l) }),
      button || el('span', { class: 'no-action' })));
  }
  const parts = [list, steps(v)];
  const step = nextStep(v, firstRun);
  if (step) parts.unshift(el('p', { class: 'note next-step', text: step }));
  if (v.problem) parts.unshift(el('p', { class: 'note warn', text: v.problem }));
  container.replaceChildren(...parts);
}
