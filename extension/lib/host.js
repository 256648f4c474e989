// The connection to Sitetrail's native-messaging host (`sitetrail native-host`, started by the
// browser). Sends the queue's oldest events as one batch at a time and deletes them only when the
// host acknowledges them, which it does after its database COMMIT. Any failure (host missing,
// crashed, database busy) leaves the events queued; they are sent again after a backoff.
//
// An open native port also keeps the MV3 service worker alive, so while the host runs the worker
// is not stopped for being idle.

export const HOST_NAME = 'app.sitetrail.host';
export const PROTOCOL = 1;
/** At most this many events, and this many bytes of JSON, per batch (the host takes 4 MiB). */
export const BATCH_EVENTS = 200;
export const BATCH_BYTES = 256 * 1024;
/** A batch not answered within this time counts as lost: reconnect and send it again. */
export const ACK_TIMEOUT_MS = 30_000;
/** How long the popup waits for what Sitetrail knows of a site before showing nothing. */
export const SITE_TIMEOUT_MS = 3_000;
/** Waits before reconnecting after consecutive failures. */
export const BACKOFF_MS = [1000, 2000, 5000, 10_000, 30_000, 60_000];
/** Refusals of a whole batch (nothing in it stored, and sending it again cannot help): the batch
 * is split, and a single event refused this way is dropped and counted. `database` is not one
 * of them: the same batch is sent again after a wait. */
export const WHOLE_BATCH_REFUSALS = new Set(['bad_json', 'bad_message', 'too_large', 'too_many_events']);
/** A batch the host never answered (it exited, or said nothing for ACK_TIMEOUT_MS) this many
 * times in a row is split; a single event this many times is dropped and counted, so no event
 * can stop the queue for good. */
export const UNANSWERED_LIMIT = 3;

/** The browser name `sitetrail browser-link install --browser` takes, where the extension knows
 * it (Firefox); the Chromium family cannot tell its members apart. */
function browserArg(browser) {
  return browser || '<chromium|chrome|brave|edge|vivaldi>';
}

/** What to do, for each way the link to the host fails: the same words in every browser. */
export const ADVICE = {
  notLinked: (browser) =>
    `Sitetrail is not linked to this browser. Run \`sitetrail browser-link install --browser ${browserArg(browser)}\` (or use Settings → Browser extension in the app).`,
  otherExtension: (browser) =>
    `The Sitetrail host does not allow this extension (its manifest names another extension id). Run \`sitetrail browser-link install --browser ${browserArg(browser)}\` again.`,
  // Firefox says the same for both (on purpose: an extension must not learn which hosts exist).
  notLinkedOrOtherExtension: (browser) =>
    `Sitetrail is not linked to this browser, or its link was made for another extension id. Run \`sitetrail browser-link install --browser ${browserArg(browser)}\` (or use Settings → Browser extension in the app).`,
  program: () =>
    'The Sitetrail host stopped or could not start; retrying. If this lasts, check that the sitetrail program it runs still exists (`sitetrail browser-link status`), or link the browser again.',
  closed: () => 'The Sitetrail host closed the connection; retrying.',
};

/**
 * Plain words (and what to do) for the reason a native port closed. Chromium and Firefox word
 * the same causes differently; each cause gets the same advice:
 * - no host manifest: Chromium "Specified native messaging host not found.", Firefox "No such
 *   native application app.sitetrail.host" (also when the manifest names another extension);
 * - a manifest for another extension: Chromium "Access to the specified native messaging host
 *   is forbidden.";
 * - the program missing or failing: Chromium "Native host has exited." / "Failed to start native
 *   messaging host." / "Error when communicating with the native messaging host.", Firefox "An
 *   unexpected error occurred" (the launcher is gone) or no reason at all before the host
 *   answered (the launcher ran, the program it starts is gone).
 *
 * @param message   the browser's reason ('' when it gave none)
 * @param browser   the browser's name for `browser-link --browser`, if known
 * @param answered  whether the host had answered on this connection
 */
export function explain(message, { browser = null, answered = false } = {}) {
  const m = String(message || '');
  if (/no such native application/i.test(m)) return ADVICE.notLinkedOrOtherExtension(browser);
  if (/not found/i.test(m)) return ADVICE.notLinked(browser);
  if (/forbidden/i.test(m)) return ADVICE.otherExtension(browser);
  if (/exited|failed to start|error when communicating|unexpected error/i.test(m)) return ADVICE.program();
  if (!m) return answered ? ADVICE.closed() : ADVICE.program();
  return m;
}

/** Why a native port closed, as the browser reports it: Firefox sets the port's `error` and
 * leaves `runtime.lastError` unset; Chromium sets `runtime.lastError` during the event. The
 * port's error comes first where there is one. '' if neither says. */
export function disconnectReason(port, lastError) {
  const err = (port && port.error) || lastError;
  if (!err) return '';
  return String(err.message || err);
}

export class HostLink {
  /**
   * @param queue       the durable Queue
   * @param connect     (name) => Port, chrome.runtime.connectNative
   * @param lastError   () => chrome.runtime.lastError
   * @param run         (fn) => schedules fn on the worker's serial chain
   * @param setStatus   (status) => persists the status the popup shows
   * @param timers      {setTimeout, clearTimeout, now}
   * @param browser     the browser's name for `browser-link --browser`, if known (Firefox)
   * @param changed     () => called (not awaited) when the link connects or fails and after each
   *                    batch stored: what the host knows may have changed (the limits)
   */
  constructor({ queue, connect, lastError, run, setStatus, timers, version = '0', browser = null, changed = () => {} }) {
    Object.assign(this, { queue, connectFn: connect, lastError, run, setStatusFn: setStatus, timers, version, browser, changed });
    this.port = null;
    this.state = 'disconnected';
    this.failures = 0;
    this.batchNo = 0;
    this.sent = null;
    this.retryTimer = null;
    this.ackTimer = null;
    this.lastAttempt = -Infinity;
    this.batchBytes = BATCH_BYTES;
    this.batchEvents = BATCH_EVENTS;
    /** The batch in flight: its events' ids, oldest first. */
    this.sentIds = [];
    /** The first event of the batch last left unanswered, and how many times in a row. */
    this.unanswered = { id: null, times: 0 };
    this.status = { connected: false, reason: 'Not connected yet.', host: null, rejected: 0, lastStoredAt: null };
    this.queryNo = 0;
    /** query number -> resolve, for the questions (site, limits, focus) waiting for their answer. */
    this.asked = new Map();
  }

  /**
   * What Sitetrail knows of the site of `url` ({domain, display, category, category_name,
   * today_active_ms, today_estimated_ms, today_visits}), or null: not connected, not a website
   * Sitetrail has recorded, or no answer within SITE_TIMEOUT_MS. Never waits on the worker's
   * serial chain (the answer arrives through it).
   */
  askSite(url) {
    return this.ask({ type: 'site', url }, (msg) => msg.site || null);
  }

  /**
   * What is held back now: {limits, focus}, the limits used up each with its domains (`sitetrail
   * limits`) and the focus session running (`sitetrail focus`), or null: not connected, the
   * database unreadable, or no answer within SITE_TIMEOUT_MS. Never waits on the serial chain.
   */
  askLimits() {
    return this.ask({ type: 'limits' }, (msg) =>
      msg.ok && Array.isArray(msg.limits) ? { limits: msg.limits, focus: msg.focus || null } : null,
    );
  }

  /**
   * Starts a focus session of `minutes` on `blocks` (category ids or domains), or stops the one
   * running (`minutes` 0): {ok, message}, or null when the host cannot be asked.
   */
  askFocus(minutes, blocks) {
    return this.ask({ type: 'focus', minutes, blocks }, (msg) => ({ ok: Boolean(msg.ok), message: msg.message || '' }));
  }

  /** Sends a question numbered `query` and resolves with `read(answer)`, or null as above. */
  ask(message, read) {
    if (this.state !== 'connected' || !this.port) return Promise.resolve(null);
    this.queryNo += 1;
    const query = this.queryNo;
    return new Promise((resolve) => {
      const timer = this.timers.setTimeout(() => {
        this.asked.delete(query);
        resolve(null);
      }, SITE_TIMEOUT_MS);
      this.asked.set(query, (msg) => {
        this.timers.clearTimeout(timer);
        resolve(read(msg));
      });
      try {
        this.port.postMessage({ ...message, query });
      } catch {
        this.asked.delete(query);
        resolve(null);
      }
    });
  }

  setStatus(patch) {
    this.status = { ...this.status, ...patch, at: this.timers.now() };
    return this.setStatusFn(this.status);
  }

  /** Connects unless connected or connecting; with `soon`, only if no attempt was made in the
   * last second (new events arriving while the host is missing must not spin). */
  ensure({ soon = false } = {}) {
    if (this.port) return;
    if (soon && this.timers.now() - this.lastAttempt < 1000) return;
    this.connect();
  }

  connect() {
    this.timers.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.lastAttempt = this.timers.now();
    let port;
    try {
      port = this.connectFn(HOST_NAME);
    } catch (e) {
      this.failed(String(e && e.message ? e.message : e));
      return;
    }
    this.port = port;
    this.state = 'connecting';
    port.onMessage.addListener((msg) => this.run(() => this.onMessage(port, msg)));
    // Read at once: Chromium's lastError exists only during this event.
    port.onDisconnect.addListener((p) => {
      const reason = disconnectReason(p || port, this.lastError());
      this.run(() => this.onDisconnect(port, reason));
    });
    port.postMessage({ type: 'hello', protocol: PROTOCOL, extension_version: this.version });
  }

  async failed(reason) {
    const advice = explain(reason, { browser: this.browser, answered: this.state === 'connected' });
    this.port = null;
    this.state = 'disconnected';
    if (this.sent) await this.unansweredBatch();
    this.queue.release();
    this.sent = null;
    this.timers.clearTimeout(this.ackTimer);
    const delay = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)];
    this.failures += 1;
    this.timers.clearTimeout(this.retryTimer);
    this.retryTimer = this.timers.setTimeout(() => this.run(() => this.ensure()), delay);
    this.changed();
    return this.setStatus({ connected: false, reason: advice, detail: reason || 'closed without a reason' });
  }

  async onDisconnect(port, reason) {
    if (port !== this.port) return;
    await this.failed(reason);
  }

  /** Drops the connection (the host will exit) and reconnects after the backoff. */
  async drop(port, reason) {
    if (port !== this.port) return;
    try {
      port.disconnect();
    } catch {
      // already gone
    }
    await this.failed(reason);
  }

  /** The batch in flight got no answer (the host exited or stayed silent): after UNANSWERED_LIMIT
   * times in a row it is split, and a single event is dropped and counted. */
  async unansweredBatch() {
    const first = this.sentIds[0];
    const times = this.unanswered.id === first ? this.unanswered.times + 1 : 1;
    this.unanswered = { id: first, times };
    if (times < UNANSWERED_LIMIT) return;
    this.unanswered = { id: null, times: 0 };
    if (this.sentIds.length > 1) {
      this.batchEvents = Math.max(1, Math.floor(this.sentIds.length / 2));
      return;
    }
    await this.dropEvents(this.sentIds, 'the Sitetrail host never answered for it');
  }

  /** Deletes the in-flight events `ids` for good (refused, and sending them again cannot help)
   * and counts them in the popup's "refused" line. */
  async dropEvents(ids, why) {
    console.warn(`sitetrail: ${ids.length} event(s) dropped: ${why}`, ids);
    await this.queue.ack(ids);
    this.batchEvents = BATCH_EVENTS;
    this.batchBytes = BATCH_BYTES;
    await this.setStatus({ rejected: this.status.rejected + ids.length });
  }

  async onMessage(port, msg) {
    if (port !== this.port || !msg || typeof msg !== 'object') return;
    if (msg.type === 'hello') {
      if (!msg.ok) {
        await this.drop(port, `Sitetrail cannot store events: ${msg.problem || 'unknown problem'}`);
        return;
      }
      this.state = 'connected';
      this.failures = 0;
      await this.setStatus({ connected: true, reason: null, detail: null, host: { version: msg.host_version, db: msg.db, browser: msg.browser } });
      this.changed();
      await this.flush();
      return;
    }
    if (msg.type === 'site' || msg.type === 'limits' || msg.type === 'focus') {
      const answer = this.asked.get(msg.query);
      this.asked.delete(msg.query);
      if (answer) answer(msg);
      return;
    }
    if (!this.sent || msg.batch !== this.sent) return; // an answer to a batch we gave up on
    this.timers.clearTimeout(this.ackTimer);
    this.sent = null;
    this.unanswered = { id: null, times: 0 };
    if (msg.type === 'ack') {
      const rejected = Array.isArray(msg.rejected) ? msg.rejected : [];
      const ids = [...(msg.stored || []), ...rejected.map((r) => r.id).filter(Boolean)];
      const n = await this.queue.ack(ids);
      if (rejected.length) console.warn('sitetrail: events refused by the host', rejected);
      this.batchBytes = BATCH_BYTES;
      this.batchEvents = BATCH_EVENTS;
      await this.setStatus({ rejected: this.status.rejected + rejected.length, lastStoredAt: n ? this.timers.now() : this.status.lastStoredAt });
      if (n) this.changed();
      await this.flush();
      return;
    }
    // An error: nothing of the batch was stored.
    if (WHOLE_BATCH_REFUSALS.has(msg.kind)) {
      // Something in the batch makes the host refuse all of it: halve until the event that does
      // is alone, then drop that one (a batch is never sent again unchanged).
      if (this.sentIds.length === 1) {
        await this.dropEvents(this.sentIds, `${msg.kind}: ${msg.message}`);
      } else {
        this.queue.release();
        this.batchEvents = Math.max(1, Math.floor(this.sentIds.length / 2));
        if (msg.kind === 'too_large') this.batchBytes = Math.max(1024, Math.floor(this.batchBytes / 2));
      }
      await this.flush();
      return;
    }
    this.queue.release();
    await this.setStatus({ reason: `Sitetrail did not store the last events (${msg.message}); retrying.` });
    this.timers.clearTimeout(this.retryTimer);
    const delay = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)];
    this.failures += 1;
    this.retryTimer = this.timers.setTimeout(() => this.run(() => this.flush()), delay);
  }

  /** Sends the next batch if connected and none is waiting for its answer. */
  async flush() {
    if (this.state !== 'connected' || this.sent) return;
    const batch = await this.queue.take(this.batchEvents, this.batchBytes);
    if (batch.length === 0) return;
    this.batchNo += 1;
    this.sent = this.batchNo;
    this.sentIds = batch.map((b) => b.event.id);
    const port = this.port;
    try {
      port.postMessage({ type: 'events', batch: this.batchNo, events: batch.map((b) => b.event) });
    } catch (e) {
      await this.drop(port, String(e && e.message ? e.message : e));
      return;
    }
    this.timers.clearTimeout(this.ackTimer);
    this.ackTimer = this.timers.setTimeout(
      () => this.run(() => this.drop(port, 'The Sitetrail host did not answer in time.')),
      ACK_TIMEOUT_MS,
    );
  }

  /** New events were queued, or a periodic check: deliver them. */
  async kick() {
    if (!this.port) {
      this.ensure({ soon: true });
      return;
    }
    await this.flush();
  }
}
