import test from 'node:test';
import assert from 'node:assert/strict';
import { fmtSpent, siteLine } from '../lib/format.js';

test('durations read like the app: 45 s, 12 min, 1 h 05 min', () => {
  assert.equal(fmtSpent(0), '0 s');
  assert.equal(fmtSpent(45_000), '45 s');
  assert.equal(fmtSpent(12 * 60_000), '12 min');
  assert.equal(fmtSpent(65 * 60_000), '1 h 05 min');
  assert.equal(fmtSpent(-5), '0 s');
});

test("the popup's line says the category and today's time on the site", () => {
  const site = { category_name: 'News', today_active_ms: 25 * 60_000, today_estimated_ms: 0, today_visits: 3 };
  assert.equal(siteLine(site), 'News · 25 min today');
  assert.equal(siteLine({ ...site, today_active_ms: 0, today_estimated_ms: 180_000 }), 'News · ≈ 3 min today');
  assert.equal(siteLine({ ...site, today_active_ms: 0, today_visits: 1 }), 'News · 1 visit today, no time measured yet');
  assert.equal(siteLine({ ...site, category_name: null, today_active_ms: 0, today_visits: 0 }), 'Not classified yet · not visited today');
  assert.equal(siteLine(null), '');
});
