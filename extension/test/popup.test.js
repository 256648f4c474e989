import test from 'node:test';
import assert from 'node:assert/strict';
import { openOptionsAndClose } from '../lib/popup-actions.js';

test('"Options" opens the options page, then closes the popup', async () => {
  const calls = [];
  let resolveOpen;
  const runtime = { openOptionsPage: () => { calls.push('open'); return new Promise((r) => { resolveOpen = r; }); } };
  const done = openOptionsAndClose(runtime, () => calls.push('close'));
  await Promise.resolve();
  assert.deepEqual(calls, ['open'], 'not closed before the page is open (closing first would cancel it)');
  resolveOpen();
  await done;
  assert.deepEqual(calls, ['open', 'close']);
});

test('the popup closes even when the options page cannot open', async () => {
  const calls = [];
  const runtime = { openOptionsPage: async () => { throw new Error('no options page'); } };
  const original = console.error;
  console.error = () => {};
  try {
    await openOptionsAndClose(runtime, () => calls.push('close'));
  } finally {
    console.error = original;
  }
  assert.deepEqual(calls, ['close']);
});

test("the popup's site button excludes a site, and records it again whatever entry excluded it", async () => {
  const { toggleExclusion, excludedBy, isExcluded } = await import('../lib/settings.js');
  assert.deepEqual(toggleExclusion('news.example', []), ['news.example']);
  assert.deepEqual(toggleExclusion('a.news.example', ['news.example', 'other.example', 'a.news.example']), ['other.example']);
  assert.deepEqual(excludedBy('', ['news.example']), []);
  assert.equal(isExcluded('https://www.a.news.example/x', ['news.example']), true);
  assert.equal(isExcluded('https://notnews.example/', ['news.example']), false);
});
