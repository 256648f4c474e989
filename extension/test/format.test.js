import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fmtEstimate, fmtSpent, siteLine } from '../lib/format.js';

/** The table the app, the CLI and the extension are all tested against. */
const table = JSON.parse(readFileSync(new URL('../../tests/fixtures/durations.json', import.meta.url), 'utf8'));

test('durations read as the shared table says (the same words as the app and the CLI)', () => {
  assert.ok(table.examples.length >= 10);
  for (const { ms, text, estimated } of table.examples) {
    assert.equal(fmtSpent(ms), text, `${ms} ms`);
    assert.equal(fmtEstimate(ms), estimated, `${ms} ms`);
  }
});

test("the popup's line says the category and today's time on the site", () => {
  const site = { category_name: 'News', today_active_ms: 25 * 60_000, today_estimated_ms: 0, today_visits: 3 };
  assert.equal(siteLine(site), 'News · 25 min today');
  assert.equal(siteLine({ ...site, today_active_ms: 0, today_estimated_ms: 161_536 }), 'News · ≈ 3 min today');
  assert.equal(siteLine({ ...site, today_active_ms: 0, today_visits: 1 }), 'News · 1 visit today, no time measured yet');
  assert.equal(siteLine({ ...site, category_name: null, today_active_ms: 0, today_visits: 0 }), 'Not classified yet · not visited today');
  assert.equal(siteLine(null), '');
});
