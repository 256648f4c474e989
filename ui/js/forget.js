// Forgetting, from the history and the overview: one dialog for visits, a website (optionally
// never recorded again), the last hour / day / everything, and the list of blocked domains.
// Nothing is forgotten without the dialog's confirmation, and only by a click on (or Enter on)
// its destructive button: that button is never focused first and is not the form's submit button,
// so Enter in the dialog never forgets. Its words say where the forgetting reaches: this computer,
// or all the devices of the sync account this one is linked to. When something was forgotten, a
// `sitetrail:forgotten` event tells the views ({kind, ids, domain, report}).
import { call, describe } from './api.js';
import { $, el, fmtNumber, fmtTime, toast, showModal } from './dom.js';

let confirmAction = null;
/** Where a forgetting reaches, as the last dialog found it: 'here', 'everywhere' or 'unknown'. */
let reach = 'here';

export function init() {
  $('#fg-cancel').addEventListener('click', () => $('#forget-dialog').close());
  // Enter in a field submits the form: that never forgets (only the button does).
  $('#fg-form').addEventListener('submit', (e) => e.preventDefault());
  $('#fg-confirm').addEventListener('click', async () => {
    if (!confirmAction) return;
    const action = confirmAction;
    $('#fg-confirm').disabled = true;
    try {
      await action();
      $('#forget-dialog').close();
    } catch (err) {
      toast(`Could not forget: ${describe(err)}`, true);
    } finally {
      $('#fg-confirm').disabled = false;
    }
  });
}

/** Whether this database is linked to a sync account, so forgetting reaches every device. */
async function findReach() {
  try {
    const v = await call('get_sync_status');
    return v.link ? 'everywhere' : 'here';
  } catch {
    return 'unknown';
  }
}

async function open(title, body, confirmLabel, action) {
  reach = await findReach();
  for (const p of body) if (p.classList && p.classList.contains('fg-warning')) p.textContent = warningText();
  $('#fg-title').textContent = title;
  $('#fg-body').replaceChildren(...body);
  $('#fg-confirm').textContent = confirmLabel;
  $('#fg-confirm').hidden = !action;
  // "Cancel" where pressing it leaves everything as it was; "Close" where the dialog's own
  // buttons already did their work (the blocked list).
  $('#fg-cancel').textContent = action ? 'Cancel' : 'Close';
  confirmAction = action;
  showModal($('#forget-dialog'));
  // Never the destructive button first: the first choice, else Cancel.
  ($('#fg-body input') || $('#fg-cancel')).focus();
}

function announce(kind, detail, report) {
  document.dispatchEvent(new CustomEvent('sitetrail:forgotten', { detail: { kind, ...detail, report } }));
  const what = `${fmtNumber(report.visits)} visit${report.visits === 1 ? '' : 's'}`;
  const sites = report.websites ? ` and ${fmtNumber(report.websites)} website${report.websites === 1 ? '' : 's'}` : '';
  const where = reach === 'everywhere' ? ' on all your devices' : '';
  toast(`Forgot ${what}${sites}${where}.${report.blocked ? ` ${report.blocked} will never be recorded again.` : ''}`);
}

/** What forgetting does, where it reaches. */
function warningText() {
  const what = 'from the history, the search and any later export. It cannot be undone.';
  if (reach === 'everywhere') return `This deletes them on all your devices for good (sync is on: here now, on the others when they next sync), ${what}`;
  if (reach === 'unknown') return `This deletes them for good, here and on any device this one syncs with, ${what}`;
  return `This deletes them from this computer for good: ${what}`;
}

const warning = () => el('p', { class: 'muted small fg-warning', id: 'fg-warning' });

/** A history row: its visits, or everything from its website. */
export function forgetRow(visit) {
  const n = visit.ids.length;
  const choiceVisits = el('input', { type: 'radio', name: 'fg-what', value: 'visits', checked: true });
  const choiceSite = el('input', { type: 'radio', name: 'fg-what', value: 'site' });
  const block = el('input', { type: 'checkbox', id: 'fg-block' });
  const name = visit.display || visit.domain;
  const blockLabel = el('label', { class: 'check' }, block, ` Never record ${name} again (nor its subdomains)`);
  blockLabel.hidden = true;
  for (const r of [choiceVisits, choiceSite]) {
    r.addEventListener('change', () => (blockLabel.hidden = !choiceSite.checked));
  }
  open(
    'Forget',
    [
      el('div', { class: 'choices' },
        el('label', { class: 'check' }, choiceVisits, n === 1 ? ' This visit' : ` These ${n} visits to this page`),
        el('label', { class: 'check' }, choiceSite, ` Everything from ${name}`)),
      blockLabel,
      warning(),
    ],
    'Forget',
    async () => {
      if (choiceSite.checked) return forgetWebsiteNow(visit.domain, block.checked);
      const report = await call('forget_visits', { ids: visit.ids });
      announce('visits', { ids: visit.ids, domain: visit.domain }, report);
    },
  );
}

/** Most ids one forget_visits call takes (the command's limit). */
const MAX_IDS = 1000;

/** Several history rows at once (a selection): one confirmation that says how many. */
export function forgetVisits(list) {
  const ids = list.flatMap((v) => v.ids);
  const domains = [...new Set(list.map((v) => v.domain))];
  const n = ids.length;
  const sites = domains.length === 1 ? (list[0].display || domains[0]) : `${fmtNumber(domains.length)} websites`;
  open(
    `Forget ${fmtNumber(n)} visit${n === 1 ? '' : 's'}?`,
    [el('p', { id: 'fg-count', text: `The ${fmtNumber(n)} selected visit${n === 1 ? '' : 's'} to ${sites}.` }), warning()],
    `Forget ${fmtNumber(n)} visit${n === 1 ? '' : 's'}`,
    async () => {
      const total = { visits: 0, websites: 0, blocked: null };
      for (let i = 0; i < ids.length; i += MAX_IDS) {
        const report = await call('forget_visits', { ids: ids.slice(i, i + MAX_IDS) });
        total.visits += report.visits;
        total.websites += report.websites || 0;
      }
      announce('visits', { ids, domain: domains[0], domains }, total);
    },
  );
}

async function forgetWebsiteNow(domain, block) {
  const report = await call('forget_website', { domain, block });
  announce('website', { domain }, report);
}

/** Every visit to a website (from the overview's top list, say). */
export function forgetWebsite(domain, name = domain) {
  const block = el('input', { type: 'checkbox', id: 'fg-block' });
  open(
    `Forget ${name}?`,
    [
      el('p', { text: `Every visit to ${name}, its category and its icon.` }),
      el('label', { class: 'check' }, block, ` Never record ${name} again (nor its subdomains)`),
      warning(),
    ],
    'Forget website',
    () => forgetWebsiteNow(domain, block.checked),
  );
}

/** Puts a website on the never-record list (its past visits stay until forgotten). */
export function neverRecord(domain, name = domain) {
  open(
    `Never record ${name}?`,
    [el('p', { text: `Visits to ${name} and its subdomains will not be recorded or classified from now on. Its past visits stay until you forget them; Never recorded… in History takes it off the list.` })],
    'Never record',
    async () => {
      const r = await call('block_domain', { domain });
      document.dispatchEvent(new CustomEvent('sitetrail:blocked', { detail: { domain: r.domain } }));
      toast(`${r.domain} will never be recorded again.`);
    },
  );
}

const PERIODS = [['hour', 'The last hour'], ['day', 'The last 24 hours'], ['all', 'Everything']];

/** The last hour, day, or everything. */
export function forgetRecent() {
  const radios = PERIODS.map(([value, label], i) => {
    const r = el('input', { type: 'radio', name: 'fg-period', value, checked: i === 0 });
    return el('label', { class: 'check' }, r, ` ${label}`);
  });
  open(
    'Forget recent history',
    [el('div', { class: 'choices', role: 'radiogroup', 'aria-label': 'What to forget' }, ...radios), warning()],
    'Forget',
    async () => {
      const period = document.querySelector('input[name="fg-period"]:checked').value;
      const report = await call('forget_recent', { period });
      announce('recent', { period }, report);
    },
  );
}

/** The never-record list: see it, take a domain off it, add one. */
export async function showBlocked() {
  let list;
  try {
    list = await call('list_blocked');
  } catch (e) {
    toast(`Could not read the blocked list: ${describe(e)}`, true);
    return;
  }
  const items = el('ul', { class: 'blocked', id: 'fg-blocked' });
  const render = () => {
    items.replaceChildren(...(list.length === 0
      ? [el('li', { class: 'muted', text: 'No domain is blocked.' })]
      : list.map((b) => el('li', { 'data-domain': b.domain },
        el('span', { class: 'd', text: b.domain, title: `Blocked since ${fmtTime(b.blocked_at)}` }),
        el('button', {
          type: 'button', class: 'ghost small unblock', 'aria-label': `Record ${b.domain} again`,
          onclick: async () => {
            try {
              await call('unblock_domain', { domain: b.domain });
              list = list.filter((x) => x.domain !== b.domain);
              render();
              toast(`${b.domain} is recorded again.`);
            } catch (e) {
              toast(`Could not unblock: ${describe(e)}`, true);
            }
          },
        }, 'Allow again')))));
  };
  render();
  const input = el('input', { type: 'text', id: 'fg-add', placeholder: 'example.com', autocomplete: 'off', maxlength: '253' });
  const add = el('button', {
    type: 'button', class: 'ghost', onclick: async () => {
      const domain = input.value.trim();
      if (!domain) return;
      try {
        const r = await call('block_domain', { domain });
        if (!list.some((b) => b.domain === r.domain)) list.push({ domain: r.domain, blocked_at: new Date().toISOString() });
        list.sort((a, b) => a.domain.localeCompare(b.domain));
        input.value = '';
        render();
      } catch (e) {
        toast(`Could not block it: ${describe(e)}`, true);
      }
    },
  }, 'Block');
  open(
    'Never recorded',
    [
      el('p', { class: 'muted small', text: 'Visits to these domains and their subdomains are never recorded and never classified. Their past visits stay until you forget them.' }),
      items,
      el('div', { class: 'add-row' }, el('label', { class: 'grow' }, 'Block a domain', input), add),
    ],
    '',
    null,
  );
}
