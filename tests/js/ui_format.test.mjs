// The app's formatting, tested with node on the real module (ui/js/dom.js), without a browser.
// Here, not in ui/, so the app's assets hold no tests; ui/package.json says ui/ is ES modules.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fmtDuration, fmtEstimate, fmtSpent } from '../../ui/js/dom.js';

/** The table the app, the CLI and the extension are all tested against. */
const table = JSON.parse(readFileSync(new URL('../../tests/fixtures/durations.json', import.meta.url), 'utf8'));

test('durations read as the shared table says (the same words as the CLI and the extension)', () => {
  assert.ok(table.examples.length >= 10);
  for (const { ms, text, estimated } of table.examples) {
    assert.equal(fmtSpent(ms), text, `${ms} ms`);
    assert.equal(fmtEstimate(ms), estimated, `${ms} ms`);
  }
});

test('a forecast says "about" the same duration', () => {
  assert.equal(fmtDuration(30), 'under a minute');
  assert.equal(fmtDuration(161.536), 'about 3 min');
  assert.equal(fmtDuration(3 * 86400), 'about 3 days');
});
