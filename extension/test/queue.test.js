import test from 'node:test';
import assert from 'node:assert/strict';
import { Queue } from '../lib/queue.js';
import { MemoryStorage } from './fakes.js';

const visit = (id, extra = {}) => ({ id, kind: 'visit', visit: id, url: `https://${id}.test/`, at: 1, ...extra });
const update = (id, v, extra) => ({ id, kind: 'update', visit: v, ...extra });

test('events wait in storage, in order, and survive a new Queue on the same storage', async () => {
  const storage = new MemoryStorage();
  const q = await new Queue(storage).load();
  await q.push(visit('a'));
  await q.push(visit('b'));
  const again = await new Queue(storage).load(); // the service worker restarted
  assert.equal(again.size, 2);
  const batch = await again.take(10, 1e6);
  assert.deepEqual(batch.map((b) => b.event.id), ['a', 'b']);
});

test('an event is deleted only when acknowledged; a broken connection sends it again', async () => {
  const q = await new Queue(new MemoryStorage()).load();
  await q.push(visit('a'));
  await q.push(visit('b'));
  let batch = await q.take(10, 1e6);
  assert.equal(batch.length, 2);
  assert.deepEqual(await q.take(10, 1e6), [], 'nothing more while a batch is in flight');
  q.release(); // the host died before answering
  batch = await q.take(10, 1e6);
  assert.deepEqual(batch.map((b) => b.event.id), ['a', 'b']);
  await q.ack(['a']); // only a was stored
  assert.equal(q.size, 1);
  batch = await q.take(10, 1e6);
  assert.deepEqual(batch.map((b) => b.event.id), ['b']);
  await q.ack(['b']);
  assert.equal(q.size, 0);
  assert.deepEqual(await q.take(10, 1e6), []);
});

test('updates merge into their visit while it waits, never into a batch in flight', async () => {
  const storage = new MemoryStorage();
  const q = await new Queue(storage).load();
  await q.push(visit('v1'));
  await q.push(update('u1', 'v1', { title: 'First' }));
  await q.push(update('u2', 'v1', { active_ms: 5000 }));
  await q.push(update('u3', 'v1', { active_ms: 3000, title: 'Final' }));
  assert.equal(q.size, 1, 'one event for the page');
  let batch = await q.take(10, 1e6);
  assert.deepEqual(batch[0].event, { ...visit('v1'), title: 'Final', active_ms: 5000 });
  // While v1 is in flight, a new update is queued on its own.
  await q.push(update('u4', 'v1', { active_ms: 9000 }));
  assert.equal(q.size, 2);
  await q.ack(['v1']);
  batch = await q.take(10, 1e6);
  assert.deepEqual(batch.map((b) => [b.event.id, b.event.active_ms]), [['u4', 9000]]);
  await q.ack(['u4']);
  assert.deepEqual([...storage.data.keys()], ['q:meta'], 'nothing left behind');
});

test('batches respect the event and byte limits, but always hold one event', async () => {
  const q = await new Queue(new MemoryStorage()).load();
  for (const id of ['a', 'b', 'c', 'd']) await q.push(visit(id, { title: 'x'.repeat(100) }));
  assert.equal((await q.take(3, 1e6)).length, 3);
  q.release();
  assert.equal((await q.take(10, 250)).length, 1, 'each event is ~150 bytes');
  q.release();
  assert.equal((await q.take(10, 1)).length, 1, 'an event bigger than the limit still goes alone');
});

test('beyond the bound the oldest are dropped, the newest kept, and the drops counted', async () => {
  const storage = new MemoryStorage();
  const q = await new Queue(storage, { max: 3 }).load();
  for (const id of ['a', 'b', 'c', 'd', 'e']) await q.push(visit(id));
  assert.equal(q.size, 3);
  assert.equal(q.dropped, 2);
  const batch = await q.take(10, 1e6);
  assert.deepEqual(batch.map((b) => b.event.id), ['c', 'd', 'e']);
  assert.ok(!storage.data.has('q:v:a') && !storage.data.has('q:0'), 'dropped events leave no keys');
  assert.equal((await new Queue(storage).load()).dropped, 2, 'the count survives a restart');
});

test('the caller state is written in the same storage call as its events', async () => {
  const storage = new MemoryStorage();
  const q = await new Queue(storage).load();
  const before = storage.writes;
  await q.pushAll([visit('a'), update('u', 'a', { title: 'T' })], { 't:state': { n: 1 } });
  assert.equal(storage.writes - before, 1);
  assert.deepEqual(storage.data.get('t:state'), { n: 1 });
  assert.equal(storage.data.get('q:0').title, 'T');
});
