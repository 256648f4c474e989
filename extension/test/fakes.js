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

/**
 * A native port whose other end the test plays, reporting a close the way `browser` does
 * (seen in Chromium 156 and Firefox ESR 153):
 * - 'chromium': `runtime.lastError` is set while the onDisconnect listeners run (and only then);
 *   the port has no `error`;
 * - 'firefox': the port's `error` is set (an Error, or null when the host just exited) and passed
 *   port to the listeners; `runtime.lastError` stays unset.
 * `runtime` is the fake `chrome.runtime` whose `lastError` the link reads.
 */
export class FakePort {
  constructor({ browser = 'chromium', runtime = { lastError: undefined } } = {}) {
    this.browser = browser;
    this.runtime = runtime;
    this.sent = [];
    this.msgListeners = [];
    this.discListeners = [];
    this.disconnected = false;
    this.error = null;
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

  /** The host goes away, for the reason the browser gives (`message`, or none). Without a
   * message a Chromium port keeps whatever `runtime.lastError` the test set. */
  die(message) {
    this.disconnected = true;
    if (this.browser === 'firefox') {
      this.error = message ? new Error(message) : null;
      for (const f of this.discListeners) f(this);
      return;
    }
    const before = this.runtime.lastError;
    if (message) this.runtime.lastError = { message };
    try {
      for (const f of this.discListeners) f(this);
    } finally {
      if (message) this.runtime.lastError = before;
    }
  }
}
