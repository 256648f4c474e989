// Sync in Settings: set up an account on a hub (the recovery key shown once, with Copy), join one
// with the key, the link's state (last sync, waiting changes, devices), Sync now and Leave, and
// the account as a whole: a new recovery key (shown once, as at setup) and deleting the account,
// each confirmed by typing the start of the account's id, as the CLI asks. The work is the
// backend's (`sitetrail::sync`, the same as `sitetrail sync ...`).
import { call, describe, listen, SYNC_STATUS } from './api.js';
import { el, fmtTime, toast } from './dom.js';

// Where the sync key is kept (`key_store`, as `sitetrail sync status --json` says it).
const KEY_STORES = {
  keyring: 'The sync key is in the OS keyring.',
  file: 'The sync key is in a file only you can read, in the config folder (the OS keyring is not in use here).',
  missing: 'The sync key is missing on this device: leave and join again with the recovery key.',
};

let listening = false;

/** Renders the Sync card's body into `container`, and keeps it current. */
export async function renderSync(container) {
  if (!listening) {
    listening = true;
    listen(SYNC_STATUS, () => {
      if (!container.querySelector('.recovery')) refresh(container);
    });
  }
  await refresh(container);
}

async function refresh(container) {
  let v;
  try {
    v = await call('get_sync_status');
  } catch (e) {
    container.replaceChildren(el('p', { class: 'err', text: `Could not read the sync state: ${describe(e)}` }));
    return;
  }
  if (v.link) drawLinked(container, v);
  else drawUnlinked(container);
}

function field(label, input) {
  return el('label', { class: 'field' }, el('span', { text: label }), input);
}

function drawUnlinked(container) {
  const hub = el('input', { type: 'url', id: 'sync-hub', placeholder: 'https://hub.example.org', autocomplete: 'off', spellcheck: 'false' });
  const name = el('input', { type: 'text', id: 'sync-name', placeholder: 'this computer\u2019s name (optional)', maxlength: '64' });
  const key = el('textarea', { id: 'sync-key', rows: '3', placeholder: 'the 24 words of your recovery key', autocomplete: 'off', spellcheck: 'false' });
  const status = el('p', { class: 'line small', role: 'status', 'aria-live': 'polite' });
  const setup = el('button', { type: 'button', id: 'sync-setup' }, 'Set up sync (first device)');
  const join = el('button', { type: 'button', id: 'sync-join', class: 'ghost' }, 'Join with a recovery key');
  const busy = (on) => { setup.disabled = on; join.disabled = on; };
  const deviceName = () => name.value.trim() || null;
  setup.addEventListener('click', async () => {
    busy(true);
    status.textContent = 'Creating the account on the hub…';
    try {
      const r = await call('sync_setup', { hub: hub.value, deviceName: deviceName() });
      drawKey(container, r.recovery_key);
    } catch (e) {
      status.textContent = `Could not set up sync: ${describe(e)}`;
      busy(false);
    }
  });
  join.addEventListener('click', async () => {
    busy(true);
    status.textContent = 'Joining…';
    try {
      const v = await call('sync_join', { hub: hub.value, deviceName: deviceName(), recoveryKey: key.value });
      key.value = '';
      toast('This device joined your account; your other devices\u2019 history is on its way.');
      drawLinked(container, v);
    } catch (e) {
      status.textContent = `Could not join: ${describe(e)}`;
      busy(false);
    }
  });
  container.replaceChildren(
    el('p', {}, 'Share this history with your other devices through a Sitetrail hub. Everything is encrypted on this device before it leaves: the hub sees no address, title or category.'),
    field('Hub URL', hub),
    field('Device name', name),
    el('div', { class: 'row-buttons' }, setup),
    field('Recovery key (to join an account set up on another device)', key),
    el('div', { class: 'row-buttons' }, join),
    status);
}

function drawKey(container, recoveryKey, after = null) {
  // Numbered, four to a row, as people write them down.
  const words = el('ol', { class: 'recovery-words', id: 'sync-recovery', 'aria-label': 'Recovery key' },
    ...recoveryKey.split(' ').map((w) => el('li', {}, el('code', { text: w }))));
  const copy = el('button', { type: 'button', id: 'sync-copy', class: 'small' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(recoveryKey);
      toast('Recovery key copied. Paste it somewhere safe, then clear the clipboard.');
    } catch {
      const range = document.createRange();
      range.selectNodeContents(words);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      toast('Copying is not allowed here: the key is selected, copy it with Ctrl+C.', true);
    }
  });
  const done = el('button', { type: 'button', id: 'sync-key-done' }, 'I have written it down');
  done.addEventListener('click', () => refresh(container));
  container.replaceChildren(el('div', { class: 'recovery' }, ...[
    el('p', { class: 'note warn', text: 'Your recovery key. It is shown only this once: write it down and keep it safe. You need it to join another device; anyone who has it can read your synced history, and without it nobody (not even the hub\u2019s operator) can recover it.' }),
    words,
    after ? el('p', { class: 'note', text: after }) : null,
    el('div', { class: 'row-buttons' }, copy, done)].filter(Boolean)));
}

/** Asks for the first 8 characters of the account's id after `what`; the typed answer, or null. */
function askAccountStart(l, what) {
  const short = String(l.account_id).replaceAll('-', '').slice(0, 8);
  return window.prompt(`${what} Type ${short} to go on:`, '');
}

function drawLinked(container, v) {
  const l = v.link;
  const rotate = el('button', { type: 'button', id: 'sync-rotate-key', class: 'ghost small' }, 'New recovery key');
  const remove = el('button', { type: 'button', id: 'sync-delete-account', class: 'ghost small danger' }, 'Delete the account');
  const now = el('button', { type: 'button', id: 'sync-now', class: 'small' }, 'Sync now');
  const leave = el('button', { type: 'button', id: 'sync-leave', class: 'ghost small' }, 'Leave');
  const status = el('p', { class: 'line small', role: 'status', 'aria-live': 'polite' });
  now.addEventListener('click', async () => {
    now.disabled = true;
    status.textContent = 'Syncing…';
    try {
      const r = await call('sync_now');
      toast(`Synced: ${r.pushed} record(s) sent, ${r.pulled} received.`);
      await refresh(container);
    } catch (e) {
      status.textContent = `Sync failed: ${describe(e)}`;
      now.disabled = false;
    }
  });
  leave.addEventListener('click', async () => {
    if (!window.confirm('Leave the account on this device? Its history stays here; the other devices keep what it sent. To sync again you need the recovery key.')) return;
    leave.disabled = true;
    try {
      await call('sync_leave', { force: false });
      toast('This device left the account.');
      await refresh(container);
    } catch (e) {
      if (window.confirm(`${describe(e)}\n\nLeave anyway, without telling the hub?`)) {
        await call('sync_leave', { force: true }).catch((err) => toast(describe(err), true));
        await refresh(container);
      } else {
        leave.disabled = false;
      }
    }
  });
  rotate.addEventListener('click', async () => {
    const answer = askAccountStart(l, `This makes a new recovery key, sends this device's history to a new account on ${l.hub} and deletes the account ${l.account_id} there: the old key, and every device that holds it, reads nothing more, and your other devices must join again with the new key (they keep what they recorded).`);
    if (answer === null) return;
    rotate.disabled = true;
    status.textContent = 'Moving the account to a new recovery key…';
    try {
      const r = await call('sync_rotate_key', { confirm: answer });
      toast(r.first_sync_error
        ? `The account moved to a new recovery key; this device's history is sent on the next sync (${r.first_sync_error}).`
        : 'The account moved to a new recovery key; the old account was deleted on the hub.');
      drawKey(container, r.recovery_key, 'The old key opens nothing any more. On each of your other devices: leave, then join again with this key (what they recorded meanwhile is sent then).');
    } catch (e) {
      status.textContent = `Could not replace the recovery key: ${describe(e)}`;
      rotate.disabled = false;
    }
  });
  remove.addEventListener('click', async () => {
    const answer = askAccountStart(l, `This deletes the account ${l.account_id} on ${l.hub} and everything of it there, for every device (the history on each device stays).`);
    if (answer === null) return;
    remove.disabled = true;
    try {
      await call('sync_delete_account', { confirm: answer });
      toast(`The account was deleted on ${l.hub}, with everything of it there; this device's history stays here. The other devices are told on their next sync.`);
      await refresh(container);
    } catch (e) {
      status.textContent = `Could not delete the account: ${describe(e)}`;
      remove.disabled = false;
    }
  });
  const removeButton = (d) => {
    const b = el('button', { type: 'button', class: 'ghost small', 'data-device': d.device_id }, 'Remove');
    b.addEventListener('click', async () => {
      if (!window.confirm(`Remove ${d.name || 'this device'} from the account? Use this for a lost, wiped or reinstalled device: it can send nothing more, and what it sent stays.`)) return;
      b.disabled = true;
      try {
        await call('sync_remove_device', { device: d.device_id });
        toast(`${d.name || 'The device'} was removed from the account.`);
        await refresh(container);
      } catch (e) {
        toast(describe(e), true);
        b.disabled = false;
      }
    });
    return b;
  };
  const devices = el('ul', { class: 'devices', id: 'sync-devices' },
    ...v.devices.map((d) => el('li', {}, d.name || 'a device',
      d.this_device ? ' (this one)' : ' ', d.this_device ? null : removeButton(d))));
  container.replaceChildren(...[
    el('p', {}, 'Syncing with ', el('code', { text: l.hub }), ' as ', el('strong', { id: 'sync-device-name', text: l.device_name }), '.'),
    el('p', { id: 'sync-last', text: l.last_sync_at ? `Last sync: ${fmtTime(l.last_sync_at)}.` : 'Not synced yet.' }),
    v.insecure_warning ? el('p', { class: 'note warn', id: 'sync-insecure', text: `Warning: ${v.insecure_warning}.` }) : null,
    v.quota_full
      ? el('p', { class: 'note warn', id: 'sync-quota', text: `${v.quota_full[0].toUpperCase()}${v.quota_full.slice(1)}.` })
      : (l.last_error ? el('p', { class: 'note warn', id: 'sync-error', text: `The last try failed: ${l.last_error}` }) : null),
    l.notice ? el('p', { class: 'note', id: 'sync-notice', text: `${l.notice_at ? `${fmtTime(l.notice_at)}: ` : ''}${l.notice}` }) : null,
    el('p', { id: 'sync-pending', text: v.pending ? `${v.pending} change(s) wait to be sent.` : 'Nothing waits to be sent.' }),
    v.unreadable && v.unreadable.count
      ? el('p', { class: 'note warn', id: 'sync-unreadable', text: `${v.unreadable.count} record(s) from other devices could not be read (damaged, too large, or not sealed with this account's key) and were skipped; everything else synced.` })
      : null,
    el('p', { id: 'sync-key-store', class: v.key_store === 'missing' ? 'note warn' : 'small', text: KEY_STORES[v.key_store] || '' }),
    el('p', {}, 'Devices:'),
    devices,
    el('div', { class: 'row-buttons' }, now, leave),
    el('p', { class: 'small' }, 'The account: a new recovery key locks out a lost or stolen device; deleting the account removes it from the hub for every device.'),
    el('div', { class: 'row-buttons' }, rotate, remove),
    status].filter(Boolean));
}
