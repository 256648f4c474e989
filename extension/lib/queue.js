// The durable event queue: every event waits in chrome.storage.local, in order, until the native
// host acknowledges it (which it does only after its database COMMIT). A service worker that is
// killed, a browser that quits, a host that is missing or crashed: nothing queued is lost.
//
// Layout in storage (one key per event, so adding an event never rewrites the others):
//   q:meta        {head, tail, dropped}: events are q:<head> .. q:<tail - 1>, oldest first
//   q:<seq>       one event
//   q:v:<visit>   seq of the newest not-yet-sent event of that visit, for merging
//
// Updates (a new title, a new active-time total) are "set" operations, so an update can be
// merged into the visit's event that is still waiting instead of queueing another one: while the
// host is away the queue grows by pages, not by heartbeats.
//
// Bounded: beyond `max` events the oldest are dropped (the newest kept) and counted in
// `dropped`, which the popup shows. Events of a batch in flight are never merged into or dropped.

/** Events kept at most (about 5,000 pages with their updates, a few MB). */
export const MAX_EVENTS = 10000;

const META = 'q:meta';
const key = (seq) => `q:${seq}`;
const visitKey = (visit) => `q:v:${visit}`;

export class Queue {
  /** `storage`: chrome.storage.local or anything with the same get/set/remove. */
  constructor(storage, { max = MAX_EVENTS } = {}) {
    this.storage = storage;
    this.max = max;
    this.meta = { head: 0, tail: 0, dropped: 0 };
    /** seq -> visit id of the events in the batch in flight (memory only: a restart resends). */
    this.inFlight = new Map();
  }

  async load() {
    const got = await this.storage.get(META);
    const m = got[META];
    if (m && Number.isInteger(m.head) && Number.isInteger(m.tail) && m.tail >= m.head) {
      this.meta = { head: m.head, tail: m.tail, dropped: Number(m.dropped) || 0 };
    }
    this.inFlight.clear();
    return this;
  }

  /** Events waiting (including a batch in flight). */
  get size() {
    return this.meta.tail - this.meta.head;
  }

  get dropped() {
    return this.meta.dropped;
  }

  /** Adds `event` ({id, kind: 'visit'|'update', visit, ...}). */
  async push(event) {
    return this.pushAll([event]);
  }

  /** Adds `events` in order, and writes `extra` keys in the same storage call (the caller's own
   * state, so the state and the events it produced are stored together or not at all). An
   * update is merged into its visit's waiting event when there is one that is not in flight. */
  async pushAll(events, extra = {}) {
    const writes = {};
    const meta = { ...this.meta };
    const read = async (k) => (k in writes ? writes[k] : (await this.storage.get(k))[k]);
    for (const event of events) {
      if (event.kind === 'update') {
        const seq = await read(visitKey(event.visit));
        const waiting = Number.isInteger(seq) && seq >= meta.head && !this.inFlight.has(seq) ? await read(key(seq)) : null;
        if (waiting && waiting.visit === event.visit) {
          const merged = { ...waiting };
          if (event.title !== undefined) merged.title = event.title;
          if (event.active_ms !== undefined) merged.active_ms = Math.max(waiting.active_ms ?? 0, event.active_ms);
          writes[key(seq)] = merged;
          continue;
        }
      }
      writes[key(meta.tail)] = event;
      writes[visitKey(event.visit)] = meta.tail;
      meta.tail += 1;
    }
    // Over the bound: drop the oldest (never a batch in flight, whose ack is coming; the queue
    // may then overshoot by one batch until it is answered).
    const removals = [];
    const over = meta.tail - meta.head - this.max;
    if (over > 0 && this.inFlight.size === 0) {
      const seqs = [];
      for (let s = meta.head; s < meta.head + over; s += 1) seqs.push(s);
      const old = await this.storage.get(seqs.map(key));
      for (const s of seqs) {
        const ev = old[key(s)];
        removals.push(key(s));
        if (ev && (await read(visitKey(ev.visit))) === s) removals.push(visitKey(ev.visit));
      }
      meta.head += over;
      meta.dropped += over;
    }
    writes[META] = meta;
    await this.storage.set({ ...writes, ...extra });
    this.meta = meta;
    if (removals.length) await this.storage.remove(removals);
  }

  /** The oldest waiting events, at most `maxEvents` and `maxBytes` of JSON (at least one), as
   * [{seq, event}]; marks them in flight. Empty while a batch is in flight. */
  async take(maxEvents, maxBytes) {
    if (this.inFlight.size > 0) return [];
    const seqs = [];
    for (let s = this.meta.head; s < this.meta.tail && seqs.length < maxEvents; s += 1) seqs.push(s);
    if (seqs.length === 0) return [];
    const entries = await this.storage.get(seqs.map(key));
    const batch = [];
    let bytes = 0;
    for (const seq of seqs) {
      const event = entries[key(seq)];
      if (!event) continue; // a hole: skipped by ack
      const size = JSON.stringify(event).length;
      if (batch.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      batch.push({ seq, event });
    }
    this.window = { from: this.meta.head, to: batch.length ? batch[batch.length - 1].seq : seqs[seqs.length - 1] };
    for (const { seq, event } of batch) this.inFlight.set(seq, event.visit);
    if (batch.length === 0) await this.ack([]);
    return batch;
  }

  /** Forgets the batch in flight without acknowledging it (the connection broke): it is sent
   * again. */
  release() {
    this.inFlight.clear();
  }

  /** The host stored (or refused for good) the in-flight events with these ids: deletes them,
   * and moves the head past every leading event that is gone. Events of the batch the host did
   * not answer for stay, and are sent again. */
  async ack(ids) {
    const done = new Set(ids);
    const seqs = [];
    const entries = await this.storage.get([...this.inFlight.keys()].map(key));
    for (const seq of this.inFlight.keys()) {
      const ev = entries[key(seq)];
      if (!ev || done.has(ev.id)) seqs.push(seq);
    }
    const gone = new Set(seqs);
    const owned = await this.storage.get(seqs.map((s) => visitKey(this.inFlight.get(s))));
    const stale = seqs
      .filter((s) => owned[visitKey(this.inFlight.get(s))] === s)
      .map((s) => visitKey(this.inFlight.get(s)));
    let head = this.meta.head;
    const to = this.window ? this.window.to : head - 1;
    while (head < this.meta.tail && head <= to && (gone.has(head) || !this.inFlight.has(head))) head += 1;
    const meta = { ...this.meta, head };
    await this.storage.set({ [META]: meta });
    this.meta = meta;
    await this.storage.remove([...seqs.map(key), ...stale]);
    this.inFlight.clear();
    this.window = null;
    return seqs.length;
  }
}
