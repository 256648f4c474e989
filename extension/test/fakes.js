// Test doubles for the browser: chrome.storage.local's API over a Map, a clock, a native port.

/** chrome.storage.local's get/set/remove over a Map; values are copied like the real one. */
export class MemoryStorage {
  constructor() {
    this.data = new Map();
    this.writes = 0;
  }

  async get(keys) {
    const list = keys === null || keys === undefined ? [...this.data.keys()] : Array.isArray(keys) ? keys : [keys];
    const out = {};
    for (const k of list) if (this.data.has(k)) out[k] = structuredClone(this.data.get(k));
    return out;
  }

  async set(items) {
    this.writes += 1;
    for (const [k, v] of Object.entries(items)) this.data.set(k, structuredClone(v));
  }

  async remove(keys) {
    for (const k of Array.isArray(keys) ? keys : [keys]) this.data.delete(k);
  }
}

/** Ids e1, e2, ... */
export function counter(prefix = 'e') {
  let n = 0;
  return () => `${prefix}${(n += 1)}`;
}

/** A native port whose other end the test plays. */
export class FakePort {
  constructor() {
    this.sent = [];
    this.msgListeners = [];
    this.discListeners = [];
    this.disconnected = false;
    this.onMessage = { addListener: (f) => this.msgListeners.push(f) };
    this.onDisconnect = { addListener: (f) => this.discListeners.push(f) };
  }

  postMessage(m) {
    if (this.disconnected) throw new Error('Attempting to use a disconnected port object');
    this.sent.push(structuredClone(m));
  }

  disconnect() {
    this.disconnected = true;
  }

  /** The host answers. */
  answer(m) {
    for (const f of this.msgListeners) f(m);
  }

  /** The host goes away. */
  die() {
    this.disconnected = true;
    for (const f of this.discListeners) f();
  }
}
