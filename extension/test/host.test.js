import test from 'node:test';
import assert from 'node:assert/strict';
import { HostLink, HOST_NAME, BACKOFF_MS, ADVICE, UNANSWERED_LIMIT, explain } from '../lib/host.js';
import { Queue } from '../lib/queue.js';
import { MemoryStorage, FakePort } from './fakes.js';

/** A link on a real queue with fake ports (closing as `browser` closes them) and timers; `run`
 * executes at once, in order. */
async function setup({ browser = 'chromium' } = {}) {
  const queue = await new Queue(new MemoryStorage()).load();
  const ports = [];
  const timers = [];
  let clock = 0;
  let chain = Promise.resolve();
  const statuses = [];
  const changes = [];
  const runtime = { lastError: undefined };
  const link = new HostLink({
    queue,
    connect: (name) => {
      assert.equal(name, HOST_NAME);
      const p = new FakePort({ browser, runtime });
      ports.push(p);
      return p;
    },
    lastError: () => runtime.lastError,
    browser: browser === 'firefox' ? 'firefox' : null,
    run: (fn) => (chain = chain.then(fn)),
    setStatus: async (s) => statuses.push(s),
    timers: {
      setTimeout: (f, ms) => timers.push({ f, at: clock + ms }) - 1,
      clearTimeout: (i) => { if (i !== null && i !== undefined && timers[i]) timers[i].f = null; },
      now: () => clock,
    },
    version: 'test',
    changed: () => changes.push(clock),
  });
  const settle = async () => {
    for (let i = 0; i < 5; i += 1) await chain;
  };
  const advance = async (ms) => {
    clock += ms;
    for (const t of timers) if (t.f && t.at <= clock) { const f = t.f; t.f = null; f(); }
    await settle();
  };
  const visit = (id) => ({ id, kind: 'visit', visit: id, url: `https://${id}.test/`, at: 1 });
  return { link, queue, ports, statuses, changes, settle, advance, visit, setLastError: (e) => (runtime.lastError = e) };
}

test('events are sent after hello and deleted only when acknowledged', async () => {
  const t = await setup();
  await t.queue.push(t.visit('a'));
  t.link.connect();
  const port = t.ports[0];
  assert.deepEqual(port.sent, [{ type: 'hello', protocol: 1, extension_version: 'test' }]);
  port.answer({ type: 'hello', ok: true, db: '/x.db', host_version: '1', browser: 'chromium' });
  await t.settle();
  assert.equal(port.sent[1].type, 'events');
  assert.deepEqual(port.sent[1].events.map((e) => e.id), ['a']);
  assert.equal(t.queue.size, 1, 'still queued until the ack');
  port.answer({ type: 'ack', batch: port.sent[1].batch, stored: ['a'], rejected: [] });
  await t.settle();
  assert.equal(t.queue.size, 0);
  assert.equal(t.statuses.at(-1).connected, true);
  assert.equal(t.statuses.at(-1).host.db, '/x.db');
});

test('a host that dies with a batch in flight gets the same batch again after reconnecting', async () => {
  const t = await setup();
  await t.queue.push(t.visit('a'));
  await t.queue.push(t.visit('b'));
  t.link.connect();
  t.ports[0].answer({ type: 'hello', ok: true });
  await t.settle();
  const firstBatch = t.ports[0].sent[1];
  t.setLastError({ message: 'Native host has exited.' });
  t.ports[0].die();
  await t.settle();
  assert.equal(t.statuses.at(-1).connected, false);
  assert.match(t.statuses.at(-1).reason, /stopped/);
  assert.equal(t.ports.length, 1, 'no reconnect before the backoff');
  await t.advance(BACKOFF_MS[0]);
  assert.equal(t.ports.length, 2);
  t.ports[1].answer({ type: 'hello', ok: true });
  await t.settle();
  assert.deepEqual(t.ports[1].sent[1].events, firstBatch.events);
  // A late ack from the dead connection is ignored.
  t.ports[0].answer({ type: 'ack', batch: firstBatch.batch, stored: ['a', 'b'], rejected: [] });
  await t.settle();
  assert.equal(t.queue.size, 2);
  t.ports[1].answer({ type: 'ack', batch: t.ports[1].sent[1].batch, stored: ['a', 'b'], rejected: [] });
  await t.settle();
  assert.equal(t.queue.size, 0);
});

/** Plays a host that refuses every batch holding the event `poison` (answering as `answer` says)
 * and stores the rest; returns the batches it was sent. */
async function playPoisonedHost(t, poison, answer) {
  const seen = [];
  for (let round = 0; round < 200 && t.queue.size > 0; round += 1) {
    const port = t.ports.at(-1);
    const msg = port.sent.at(-1);
    if (msg.type === 'hello') {
      port.answer({ type: 'hello', ok: true });
      await t.settle();
      continue;
    }
    if (msg.type !== 'events' || port.disconnected) {
      await t.advance(60_000);
      continue;
    }
    const ids = msg.events.map((e) => e.id);
    seen.push(ids);
    if (ids.includes(poison)) {
      await answer(port, msg);
    } else {
      port.answer({ type: 'ack', batch: msg.batch, stored: ids, rejected: [] });
      await t.settle();
    }
  }
  return seen;
}

test('a batch refused as a whole is split until the event that causes it is alone, which is dropped and counted', async () => {
  const t = await setup();
  for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) await t.queue.push(t.visit(id));
  t.link.connect();
  const seen = await playPoisonedHost(t, 'e', async (port, msg) => {
    port.answer({ type: 'error', batch: msg.batch, kind: 'bad_json', message: 'lone surrogate' });
    await t.settle();
  });
  assert.equal(t.queue.size, 0, 'the queue moved on');
  assert.equal(t.statuses.at(-1).rejected, 1, 'one event dropped, counted for the popup');
  assert.deepEqual(seen[0], ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  assert.ok(seen.some((ids) => ids.length === 1 && ids[0] === 'e'), 'e was sent alone');
  assert.equal(new Set(seen.map((ids) => ids.join())).size, seen.length, 'no batch was sent twice unchanged');
  const stored = seen.filter((ids) => !ids.includes('e')).flat().sort();
  assert.deepEqual(stored, ['a', 'b', 'c', 'd', 'f', 'g']);
});

test('a batch the host never answers is split, and an event it never answers for is dropped', async () => {
  const t = await setup();
  for (const id of ['a', 'b', 'c', 'd']) await t.queue.push(t.visit(id));
  t.link.connect();
  const seen = await playPoisonedHost(t, 'b', async (port) => {
    // The host dies on it (a reply it cannot send, say) without a word.
    port.die();
    await t.settle();
  });
  assert.equal(t.queue.size, 0, 'the queue moved on');
  assert.equal(t.statuses.at(-1).rejected, 1);
  assert.equal(seen.filter((ids) => ids.length === 1 && ids[0] === 'b').length, UNANSWERED_LIMIT, 'b alone, tried that often');
  assert.deepEqual(seen.slice(0, UNANSWERED_LIMIT), Array(UNANSWERED_LIMIT).fill(['a', 'b', 'c', 'd']), 'resent as it was until the limit');
});

test('a missing host is explained, retried with growing waits, and events wait meanwhile', async () => {
  const t = await setup();
  t.setLastError({ message: 'Specified native messaging host not found.' });
  t.link.connect();
  t.ports[0].die();
  await t.settle();
  assert.match(t.statuses.at(-1).reason, /browser-link install/);
  await t.queue.push(t.visit('a'));
  t.link.kick(); // a new event: try again now (more than a second since the last try? no)
  assert.equal(t.ports.length, 1, 'not within a second of the last attempt');
  await t.advance(BACKOFF_MS[0]);
  assert.equal(t.ports.length, 2);
  t.ports[1].die();
  await t.settle();
  await t.advance(BACKOFF_MS[0]);
  assert.equal(t.ports.length, 2, 'the second wait is longer');
  await t.advance(BACKOFF_MS[1]);
  assert.equal(t.ports.length, 3);
  assert.equal(t.queue.size, 1);
});

test('a database problem keeps the batch and retries it; refused events are dropped and counted', async () => {
  const t = await setup();
  await t.queue.push(t.visit('a'));
  await t.queue.push(t.visit('b'));
  t.link.connect();
  const port = t.ports[0];
  port.answer({ type: 'hello', ok: true });
  await t.settle();
  port.answer({ type: 'error', batch: port.sent[1].batch, kind: 'database', message: 'database is locked' });
  await t.settle();
  assert.equal(t.queue.size, 2);
  assert.match(t.statuses.at(-1).reason, /locked/);
  await t.advance(BACKOFF_MS[0]);
  const retry = port.sent[2];
  assert.deepEqual(retry.events.map((e) => e.id), ['a', 'b']);
  port.answer({ type: 'ack', batch: retry.batch, stored: ['a'], rejected: [{ id: 'b', reason: 'bad url' }] });
  await t.settle();
  assert.equal(t.queue.size, 0);
  assert.equal(t.statuses.at(-1).rejected, 1);
});

test('a host whose database cannot open is left, and the reason shown', async () => {
  const t = await setup();
  t.link.connect();
  t.ports[0].answer({ type: 'hello', ok: false, problem: 'cannot open database /x: not a database' });
  await t.settle();
  assert.ok(t.ports[0].disconnected);
  assert.match(t.statuses.at(-1).reason, /not a database/);
});

test('errors read as advice', () => {
  assert.match(explain('Access to the specified native messaging host is forbidden.'), /extension id/);
});

/** Each way the link fails, as each browser reports it, and the advice the popup must show. */
const CASES = [
  // No host manifest.
  { browser: 'chromium', error: 'Specified native messaging host not found.', advice: ADVICE.notLinked(null) },
  { browser: 'firefox', error: 'No such native application app.sitetrail.host', advice: ADVICE.notLinkedOrOtherExtension('firefox') },
  // A manifest that names another extension (Firefox words it as above, on purpose).
  { browser: 'chromium', error: 'Access to the specified native messaging host is forbidden.', advice: ADVICE.otherExtension(null) },
  // The program missing: the launcher itself (Firefox: an unexpected error), or the binary the
  // launcher runs (Firefox: no reason at all, before the host answered).
  { browser: 'chromium', error: 'Native host has exited.', advice: ADVICE.program() },
  { browser: 'chromium', error: 'Failed to start native messaging host.', advice: ADVICE.program() },
  { browser: 'firefox', error: 'An unexpected error occurred', advice: ADVICE.program() },
  { browser: 'firefox', error: null, advice: ADVICE.program() },
];

for (const c of CASES) {
  test(`${c.browser}: "${c.error}" before the host answers reads as its advice`, async () => {
    const t = await setup({ browser: c.browser });
    t.link.connect();
    t.ports[0].die(c.error);
    await t.settle();
    const s = t.statuses.at(-1);
    assert.equal(s.connected, false);
    assert.equal(s.reason, c.advice);
    assert.equal(s.detail, c.error || 'closed without a reason', 'the browser\'s own words are kept');
    assert.doesNotMatch(s.reason, /closed the connection\.$/, 'never only "closed the connection"');
  });
}

test('the same cause gets the same advice in both browsers, with the browser named where known', () => {
  // Not linked: both say to run browser-link install; Firefox's names the browser.
  assert.match(explain('No such native application app.sitetrail.host', { browser: 'firefox' }), /browser-link install --browser firefox/);
  assert.match(explain('Specified native messaging host not found.'), /browser-link install --browser <chromium\|chrome\|brave\|edge\|vivaldi>/);
  assert.match(ADVICE.notLinkedOrOtherExtension('firefox'), /not linked/);
  assert.match(ADVICE.notLinkedOrOtherExtension('firefox'), /another extension/);
  // The program missing.
  assert.equal(explain('An unexpected error occurred'), explain('Native host has exited.'));
  assert.equal(explain('', { answered: false }), explain('Native host has exited.'));
  assert.match(ADVICE.program(), /sitetrail browser-link status/);
  // Anything else is shown as the browser said it.
  assert.equal(explain('Something new'), 'Something new');
});

test('firefox: the port\'s error is read, and comes before a stale runtime.lastError', async () => {
  const t = await setup({ browser: 'firefox' });
  t.setLastError({ message: 'Native host has exited.' }); // left over from something else
  t.link.connect();
  t.ports[0].die('No such native application app.sitetrail.host');
  await t.settle();
  assert.equal(t.statuses.at(-1).reason, ADVICE.notLinkedOrOtherExtension('firefox'));
});

test('firefox: a host that exits after answering is a closed connection, retried', async () => {
  const t = await setup({ browser: 'firefox' });
  await t.queue.push(t.visit('a'));
  t.link.connect();
  t.ports[0].answer({ type: 'hello', ok: true });
  await t.settle();
  t.ports[0].die(null);
  await t.settle();
  assert.equal(t.statuses.at(-1).reason, ADVICE.closed());
  await t.advance(BACKOFF_MS[0]);
  assert.equal(t.ports.length, 2, 'reconnects after the backoff');
  assert.equal(t.queue.size, 1, 'the event waits');
});

test("the popup's site question is answered by its number, and not at all when not connected", async () => {
  const t = await setup();
  assert.equal(await t.link.askSite('https://news.test/'), null, 'not connected: no question');
  t.link.connect();
  const port = t.ports[0];
  port.answer({ type: 'hello', ok: true, db: '/x.db', host_version: '1', browser: 'chromium' });
  await t.settle();
  const first = t.link.askSite('https://news.test/a');
  const second = t.link.askSite('https://never.test/');
  const asked = port.sent.filter((m) => m.type === 'site');
  assert.deepEqual(asked.map((m) => m.url), ['https://news.test/a', 'https://never.test/']);
  // Answers in any order find their question.
  port.answer({ type: 'site', query: asked[1].query, site: null });
  port.answer({ type: 'site', query: asked[0].query, site: { domain: 'news.test', category_name: 'News' } });
  await t.settle();
  assert.deepEqual(await first, { domain: 'news.test', category_name: 'News' });
  assert.equal(await second, null);
  // No answer: nothing after the timeout, and the batches are not disturbed.
  const late = t.link.askSite('https://slow.test/');
  await t.advance(3_000);
  assert.equal(await late, null);
});

test('the used-up limits are asked by number; an unreadable database or no link answers null; changes are told', async () => {
  const t = await setup();
  assert.equal(await t.link.askLimits(), null, 'not connected: nothing held back');
  t.link.connect();
  const port = t.ports[0];
  port.answer({ type: 'hello', ok: true, db: '/x.db', host_version: '1', browser: 'chromium' });
  await t.settle();
  assert.equal(t.changes.length, 1, 'connecting is a change');
  const limits = [{ target: 'social', domains: ['social.test'] }];
  const first = t.link.askLimits();
  const second = t.link.askLimits();
  const asked = port.sent.filter((m) => m.type === 'limits');
  assert.equal(asked.length, 2);
  port.answer({ type: 'limits', query: asked[0].query, ok: true, limits, focus: null });
  port.answer({ type: 'limits', query: asked[1].query, ok: false, limits: [] });
  await t.settle();
  assert.deepEqual(await first, { limits, focus: null });
  assert.equal(await second, null, 'the host could not read them: hold nothing back');
  // A batch stored is a change (the time toward a limit grew); a lost link is one too.
  await t.queue.pushAll([t.visit('a')]);
  await t.link.kick();
  const batch = port.sent.find((m) => m.type === 'events');
  port.answer({ type: 'ack', batch: batch.batch, stored: ['a'], rejected: [] });
  await t.settle();
  assert.equal(t.changes.length, 2);
  port.die('Native host has exited.');
  await t.settle();
  assert.equal(t.changes.length, 3);
});
