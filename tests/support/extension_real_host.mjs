// The extension's own queue and host link (extension/lib/) driven by node against the real
// `sitetrail native-host`, spoken to as a browser does (native-byte-order length, JSON written by
// JSON.stringify). Used by tests/capture/hostile.rs.
//
//   node extension_real_host.mjs <repo> <sitetrail binary> <db> <events.json>
//
// Queues the events, connects, and waits until the queue is empty (or 60 s pass); prints
// {"left": <events still queued>, "rejected": <events the popup counts as refused>}.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const [repo, bin, db, eventsFile] = process.argv.slice(2);
const { Queue } = await import(`${repo}/extension/lib/queue.js`);
const { HostLink } = await import(`${repo}/extension/lib/host.js`);

class MemoryStorage {
  constructor() {
    this.data = new Map();
  }
  async get(keys) {
    const out = {};
    for (const k of Array.isArray(keys) ? keys : [keys]) if (this.data.has(k)) out[k] = structuredClone(this.data.get(k));
    return out;
  }
  async set(items) {
    for (const [k, v] of Object.entries(items)) this.data.set(k, structuredClone(v));
  }
  async remove(keys) {
    for (const k of Array.isArray(keys) ? keys : [keys]) this.data.delete(k);
  }
}

/** chrome.runtime.Port over a spawned host: what Chromium does with connectNative. */
function connectNative() {
  const child = spawn(bin, ['--db', db, 'native-host', '--browser', 'chromium', 'chrome-extension://test/'], {
    stdio: ['pipe', 'pipe', 'ignore'],
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !['SITETRAIL_DB', 'SITETRAIL_LOG'].includes(k))),
  });
  const onMessage = [];
  const onDisconnect = [];
  let buf = Buffer.alloc(0);
  let gone = false;
  const port = {
    error: null,
    onMessage: { addListener: (f) => onMessage.push(f) },
    onDisconnect: { addListener: (f) => onDisconnect.push(f) },
    postMessage(m) {
      if (gone) throw new Error('Attempting to use a disconnected port object');
      const body = Buffer.from(JSON.stringify(m), 'utf8');
      const head = Buffer.alloc(4);
      head.writeUInt32LE(body.length);
      child.stdin.write(Buffer.concat([head, body]));
    },
    disconnect() {
      gone = true;
      child.stdin.end();
    },
  };
  child.stdout.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32LE(0)) {
      const n = buf.readUInt32LE(0);
      const msg = JSON.parse(buf.subarray(4, 4 + n).toString('utf8'));
      buf = buf.subarray(4 + n);
      for (const f of onMessage) f(msg);
    }
  });
  child.on('exit', () => {
    if (gone) return;
    gone = true;
    for (const f of onDisconnect) f(port);
  });
  return port;
}

const queue = await new Queue(new MemoryStorage()).load();
await queue.pushAll(JSON.parse(readFileSync(eventsFile, 'utf8')).map((e) => {
  // Titles arrive as the browser gives them; `cut` marks a title cut inside an emoji, as
  // `'Party 🎉'.slice(0, 7)` cuts it (a lone surrogate, which JSON.stringify writes as \ud83c).
  if (e.cut) e.title = `${e.title} ${'🎉'.slice(0, 1)} cut`;
  // `pad` makes a title of that many characters (a page that sets a huge title).
  if (e.pad) e.title = 'x'.repeat(e.pad);
  delete e.cut;
  delete e.pad;
  return e;
}));
let chain = Promise.resolve();
let status = {};
const link = new HostLink({
  queue,
  connect: connectNative,
  lastError: () => undefined,
  run: (fn) => (chain = chain.then(fn).catch((e) => console.error(e))),
  setStatus: async (s) => {
    status = s;
  },
  timers: { setTimeout, clearTimeout, now: Date.now },
  version: 'node',
});
link.connect();
const until = Date.now() + 60_000;
while (queue.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
if (link.port) link.port.disconnect();
console.log(JSON.stringify({ left: queue.size, rejected: status.rejected || 0 }));
process.exit(0);
