// Settings: classifier provider and pacing, API key (OS keyring), exclusions, auto-import,
// where the data lives, and exports through a save dialog opened by the backend.
import { call, describe } from './api.js';
import { $, el, fmtNumber, categoryName, toast } from './dom.js';
import { refreshQueue } from './overview.js';
import { renderLinks } from './capture.js';
import { showBlocked } from './forget.js';
import { renderSync } from './sync.js';

let current = null;

export function init(info) {
  $('#s-blocked').addEventListener('click', showBlocked);
  $('#s-db-path').textContent = info.db_path;
  $('#s-config-dir').textContent = info.config_dir;
  renderAbout(info);
  for (const b of document.querySelectorAll('[data-export]')) {
    b.addEventListener('click', () => exportData(b.dataset.export, b.dataset.format, b));
  }
  $('#s-form').addEventListener('submit', (e) => {
    e.preventDefault();
    save();
  });
}

let shown = false;

export function show() {
  shown = true;
  load();
}

export function hide() {
  shown = false;
}

/** New visits may be an extension's first pages: its link then reads "recording live". */
export function onChange(ch) {
  if (shown && ch.visits) renderLinks($('#s-ext-body'));
}

/** The About section: version, and the open data shipped with its licence and attribution. */
function renderAbout(info) {
  $('#s-version').textContent = info.version;
  const data = info.open_data || [];
  // One line per data file; the attributions and licence terms behind "Licences".
  $('#s-open-data').replaceChildren(
    ...data.map((d) => el('p', { class: 'open-data' }, el('strong', { text: d.name }), ` — ${fmtNumber(d.entries)} ${d.unit || 'domains'}; ${d.source}.`)),
    data.length === 0 ? null : el('details', { id: 's-licences' },
      el('summary', {}, 'Licences'),
      ...data.map((d) => el('div', { class: 'licence' },
        el('p', { class: 'small' }, el('strong', { text: d.name })),
        el('p', { class: 'muted small attribution', text: d.attribution }))),
      el('p', { class: 'muted small', text: 'Each is a separate data file under its own licence (CC BY-SA 4.0: share alike applies to it and changes to it, not to Sitetrail\'s code).' })),
  );
}

function field(label, input, wide = false, hint = null) {
  return el('label', { class: wide ? 'wide' : null }, label, input, hint ? el('span', { class: 'hint small', text: hint }) : null);
}

function numberInput(id, value, min, max, placeholder = '') {
  return el('input', { type: 'number', id, min: String(min), max: String(max), step: '1', value: value ?? '', placeholder, inputmode: 'numeric' });
}

async function load() {
  try {
    current = await call('get_settings');
  } catch (e) {
    toast(`Could not load the settings: ${describe(e)}`, true);
    return;
  }
  renderClassifier(current);
  let imp = null;
  try {
    imp = await call('get_import_settings');
  } catch (e) {
    toast(`Could not load the import settings: ${describe(e)}`, true);
  }
  renderImport(imp);
  renderLinks($('#s-ext-body'));
  renderSync($('#s-sync-body'));
}

/** Display names for the provider choices (the choices themselves come from the schema). */
const PROVIDER_NAMES = { builtin: 'Built-in rules (offline)', ollama: 'Ollama (local model)', openai: 'OpenAI-compatible server' };

/**
 * The settings the classifier form draws: the provider's and the worker's. The schema also holds
 * the import's (drawn by the import section, with its detected browsers) and how the database is
 * opened (set in the settings file or SITETRAIL_SYNCHRONOUS, read when the app starts).
 */
const classifierSpecs = (schema) => schema.filter((spec) => spec.scope === 'provider' || spec.scope === 'worker');

/** The form field's id for a setting: `s-` and the name with dashes (`s-fixed-delay-ms`). */
const fieldId = (name) => `s-${name.replace(/_/g, '-')}`;

/**
 * Delays and timeouts are kept in milliseconds (the settings file's keys and units are a contract)
 * and shown and entered in seconds: "1.5", not "1500".
 */
const inSeconds = (spec) => spec.unit === 'ms';
const toShown = (spec, v) => (v === null || v === undefined || !inSeconds(spec) ? v : v / 1000);
const fromShown = (spec, v) => (v === null || !inSeconds(spec) ? v : Math.round(v * 1000));

/** Placeholders longer than this go under the field as a hint: a narrow field would cut them. */
const PLACEHOLDER_MAX = 24;

/** What an empty optional field means, when too long for a placeholder. */
function unsetHint(spec) {
  return spec.optional && spec.unset && spec.unset.length > PLACEHOLDER_MAX ? `Empty: ${spec.unset}.` : null;
}

/** One input for a setting, drawn from its spec (kind, limits, unit, what unset means). */
function input(spec, value, effective) {
  const id = fieldId(spec.name);
  const k = spec.kind;
  const title = spec.help;
  const placeholder = spec.optional && !unsetHint(spec) ? spec.unset : '';
  switch (k.type) {
    case 'choice': {
      const select = el('select', { id, title },
        ...k.choices.map((c) => el('option', { value: c, text: spec.name === 'provider' ? (PROVIDER_NAMES[c] || c) : c })));
      select.value = value;
      return select;
    }
    case 'integer':
    case 'number':
      if (inSeconds(spec)) {
        return el('input', {
          type: 'number', id, title, min: String(k.min / 1000), max: String(k.max / 1000), step: 'any',
          value: toShown(spec, value) ?? '', placeholder, inputmode: 'decimal',
        });
      }
      return el('input', {
        type: 'number', id, title, min: String(k.min), max: String(k.max), step: k.type === 'integer' ? '1' : 'any',
        value: value ?? '', placeholder, inputmode: k.type === 'integer' ? 'numeric' : 'decimal',
      });
    case 'hosts':
      return el('textarea', { id, title, rows: '3', text: (value || []).join('\n') });
    default: // text, url
      return el('input', {
        type: k.type === 'url' ? 'url' : 'text', id, title, value: value ?? '',
        placeholder: effective || placeholder,
      });
  }
}

/** Units as a label says them. */
const UNIT_NAMES = { ms: 'seconds', min: 'minutes' };

function labelOf(spec) {
  const unit = spec.unit ? ` (${UNIT_NAMES[spec.unit] || spec.unit})` : '';
  const note = spec.kind.type === 'hosts' ? ' (one per line: example.com or *.corp.example; kept on all your devices)' : '';
  return `${spec.label}${unit}${note}`;
}

function renderClassifier(s) {
  const c = s.settings;
  const note = $('#s-classifier-note');
  const notes = [];
  if (s.problem) notes.push(`The saved settings cannot be used (${s.problem}); the built-in rules classify until this is fixed.`);
  if (s.env_overrides.length) notes.push(`Set by the environment for this run (they win over what you save): ${s.env_overrides.join(', ')}.`);
  note.hidden = notes.length === 0;
  note.className = s.problem ? 'note warn' : 'note';
  note.textContent = notes.join(' ');

  const effective = { base_url: s.effective.base_url, model: s.effective.model };
  const fieldFor = (spec) => field(labelOf(spec), input(spec, c[spec.name], effective[spec.name]), spec.kind.type === 'hosts', unsetHint(spec));
  const key = el('input', { type: 'password', id: 's-api-key', autocomplete: 'off', placeholder: keyPlaceholder(s.key) });
  const keyNote = el('p', { class: s.key.keyring_available ? 'muted small' : 'note warn small', id: 's-key-note', text: keyText(s.key) });
  const testOut = el('p', { class: 'line small', id: 's-test-result', role: 'status', 'aria-live': 'polite' });
  const form = classifierSpecs(s.schema);
  const provider = form.filter((spec) => spec.scope === 'provider' && !spec.advanced && spec.kind.type !== 'hosts');
  const basic = form.filter((spec) => !spec.advanced && !provider.includes(spec));
  const advanced = form.filter((spec) => spec.advanced);
  $('#s-classifier-fields').replaceChildren(
    ...provider.map(fieldFor),
    field('API key', key),
    el('div', { class: 'wide', id: 's-key-area' }, keyNote,
      el('div', { class: 'row-buttons' },
        el('button', { type: 'button', class: 'ghost', id: 's-key-save', onclick: saveKey }, 'Store key'),
        el('button', { type: 'button', class: 'ghost', id: 's-key-delete', onclick: deleteKey }, 'Forget key'),
        el('button', { type: 'button', class: 'ghost', id: 's-test', onclick: testConnection }, 'Test connection')),
      testOut),
    ...basic.map(fieldFor),
    el('details', { class: 'wide', id: 's-advanced' },
      el('summary', {}, 'Advanced: retries, timeouts'),
      el('div', { class: 'fields' }, ...advanced.map(fieldFor))),
  );
  // The key, its buttons and the keyring notice matter only for a remote provider.
  const remoteOnly = () => {
    const remote = $('#s-provider').value !== 'builtin';
    $('#s-key-area').hidden = !remote;
    $('#s-api-key').closest('label').hidden = !remote;
  };
  $('#s-provider').addEventListener('change', remoteOnly);
  remoteOnly();
  $('#s-actions').replaceChildren(
    el('button', { type: 'submit', id: 's-save', form: 's-form' }, 'Save settings'),
    el('span', { class: 'muted small', id: 's-save-status', role: 'status', 'aria-live': 'polite' }));
}

function keyPlaceholder(k) {
  return { environment: 'set by SITETRAIL_API_KEY', keyring: 'stored in the keyring', session: 'kept for this session', none: 'none' }[k.source];
}

function keyText(k) {
  if (k.keyring_available) {
    return k.source === 'environment'
      ? 'The key comes from SITETRAIL_API_KEY. A key you store goes to the OS keyring, never to a file.'
      : 'Keys are stored in the OS keyring, never in the database or the settings file.';
  }
  return `The OS keyring is not available here (${k.keyring_problem}). A key you store is kept in memory until the app quits; ` +
    'to keep one across restarts, start Sitetrail with the SITETRAIL_API_KEY environment variable.';
}

function numberOrNull(id) {
  const v = $(id).value.trim();
  return v === '' ? null : Number(v);
}

/**
 * The form as `{name: value}` for every setting it draws; the backend checks each value against
 * the same spec. An empty required number keeps the saved value (it is left out).
 */
function formSettings() {
  const out = {};
  for (const spec of classifierSpecs(current.schema)) {
    const node = $(`#${fieldId(spec.name)}`);
    if (!node) continue;
    switch (spec.kind.type) {
      case 'integer':
      case 'number': {
        const v = fromShown(spec, numberOrNull(`#${fieldId(spec.name)}`));
        if (v !== null || spec.optional) out[spec.name] = v;
        break;
      }
      case 'hosts':
        out[spec.name] = node.value.split('\n').map((x) => x.trim()).filter(Boolean);
        break;
      default:
        out[spec.name] = node.value.trim() || null;
    }
  }
  return out;
}

async function save() {
  const status = $('#s-save-status');
  try {
    current = await call('save_settings', { settings: formSettings() });
    renderClassifier(current);
    renderImport(await call('save_import_settings', { settings: formImport() }));
    $('#s-save-status').textContent = 'Saved. The classifier restarted with the new settings.';
    refreshQueue();
  } catch (e) {
    if (status) status.textContent = '';
    toast(`Settings not saved: ${describe(e)}`, true);
  }
}

async function saveKey() {
  try {
    const k = await call('set_api_key', { key: $('#s-api-key').value });
    $('#s-api-key').value = '';
    $('#s-api-key').placeholder = keyPlaceholder(k);
    $('#s-key-note').textContent = keyText(k);
    toast(k.source === 'keyring' ? 'Key stored in the OS keyring.' : 'Key kept for this session.');
    refreshQueue();
  } catch (e) {
    toast(`Key not stored: ${describe(e)}`, true);
  }
}

async function deleteKey() {
  const k = await call('delete_api_key');
  $('#s-api-key').placeholder = keyPlaceholder(k);
  $('#s-key-note').textContent = keyText(k);
  toast('Stored key forgotten.');
}

async function testConnection() {
  const out = $('#s-test-result');
  out.className = 'line small';
  out.textContent = 'Asking the provider…';
  try {
    const r = await call('test_connection', { settings: formSettings() });
    out.textContent = `It works: ${r.domain} is ${categoryName(r.category)} (${r.provider}, ${fmtNumber(r.millis)} ms).`;
  } catch (e) {
    out.className = 'line small err';
    out.textContent = `It did not work: ${describe(e)}`;
  }
}

/** The schema's entry for a setting (labels, help and limits are defined there once). */
const specOf = (name) => current.schema.find((spec) => spec.name === name);

function renderImport(imp) {
  const body = $('#s-import-body');
  if (!imp) {
    body.replaceChildren(el('p', { class: 'note', text: 'The import settings could not be read: see the message above.' }));
    return;
  }
  const chosen = new Set(imp.settings.import_profiles);
  const minutes = specOf('auto_import_minutes');
  const profilesSpec = specOf('import_profiles');
  const interval = numberInput('s-auto-import', imp.settings.auto_import_minutes, minutes.kind.min, minutes.kind.max);
  interval.title = minutes.help;
  body.replaceChildren(
    el('div', { class: 'fields' },
      field(labelOf(minutes), interval, false, '0: never.')),
    el('p', { class: 'muted small', text: 'Browsers linked to the extension (above) are recorded live, so they are left out of these imports.' }),
    imp.profiles.length === 0
      ? el('p', { class: 'muted', text: 'No browser profiles found on this computer.' })
      : el('fieldset', { class: 'checks' }, el('legend', { class: 'small', text: `${profilesSpec.label} (none ticked: all)`, title: profilesSpec.help }),
        ...imp.profiles.map((b) => el('label', {},
          el('input', { type: 'checkbox', value: b.id, checked: chosen.has(b.id) }),
          b.name))),
  );
}

function formImport() {
  const profiles = [...document.querySelectorAll('#s-import-body input[type=checkbox]:checked')].map((c) => c.value);
  return { auto_import_minutes: numberOrNull('#s-auto-import') ?? 0, import_profiles: profiles };
}

async function exportData(kind, format, button) {
  const status = $('#s-export-status');
  button.disabled = true;
  status.textContent = 'Choose where to save…';
  try {
    const r = await call('export_data', { kind, format });
    status.textContent = r ? `Exported ${fmtNumber(r.rows)} rows to ${r.path}.` : 'Export cancelled.';
  } catch (e) {
    status.textContent = '';
    toast(`Export failed: ${describe(e)}`, true);
  } finally {
    button.disabled = false;
  }
}
