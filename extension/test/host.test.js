import test from 'node:test';
import assert from 'node:assert/strict';
import { HostLink, HOST_NAME, BACKOFF_MS, explain } from '../lib/host.js';
import { Queue } from '../lib/queue.js';
import { MemoryStorage, FakePort } from './fakes.js';

/** A link on a real queue with fake ports and timers; `run` executes at once, in order. */
async function setup() {
  const queue = await new Queue(new MemoryStorage()).load();
  const ports = [];
  const timers = [];
  let clock = 0;
  let chain = Promise.resolve();
  const statuses = [];
  let lastError = null;
  const link = new HostLink({
    queue,
    connect: (name) => {
      assert.equal(name, HOST_NAME);
      const p = new FakePort();
      ports.push(p);
      return p;
    },
    lastError: () => lastError,
    run: (fn) => (chain = chain.then(fn)),
    setStatus: async (s) => statuses.push(s),
    timers: {
      setTimeout: (f, ms) => timers.push({ f, at: clock + ms }) - 1,
      clearTimeout: (i) => { if (i !== null && i !== undefined && timers[i]) timers[i].f = null; },
      now: () => clock,
    },
    version: 'test',
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
  return { link, queue, ports, statuses, settle, advance, visit, setLastError: (e) => (lastError = e) };
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
