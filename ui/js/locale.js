// The system's locale and clock for every date, time and number the UI shows: the web view's own
// default is US English with a 12-hour clock whatever the machine says, so the backend reads the
// machine's (LC_ALL, LC_TIME, LANG; the desktop's 24-hour setting where the person set one) and
// the formatters here use it, as the CLI does. Formatters are made on first use after
// `setLocale`, so modules can declare theirs at load time.
let locale;
let hour12;
const cache = new Map();

/** Sets the locale ("de-DE", or null for the web view's) and the clock (true: 12-hour, false: 24-hour, null: the locale's). */
export function setLocale(info) {
  locale = (info && info.locale) || undefined;
  hour12 = info && typeof info.hour12 === 'boolean' ? info.hour12 : undefined;
  cache.clear();
  if (locale) document.documentElement.lang = locale;
}

function options(opts) {
  const timed = opts.timeStyle || opts.hour;
  return hour12 !== undefined && timed ? { ...opts, hour12 } : opts;
}

function get(kind, opts) {
  const key = `${kind} ${JSON.stringify(opts)}`;
  let f = cache.get(key);
  if (!f) {
    try {
      f = kind === 'date' ? new Intl.DateTimeFormat(locale, options(opts)) : new Intl.NumberFormat(locale, opts);
    } catch (_) {
      // A locale the web view does not know: its default rather than nothing.
      f = kind === 'date' ? new Intl.DateTimeFormat(undefined, options(opts)) : new Intl.NumberFormat(undefined, opts);
    }
    cache.set(key, f);
  }
  return f;
}

/** A date and time formatter with `opts` (as Intl.DateTimeFormat's) in the system's locale and clock. */
export function dateFormat(opts) {
  return {
    format: (d) => get('date', opts).format(d),
    formatToParts: (d) => get('date', opts).formatToParts(d),
  };
}

/** A number formatter with `opts` in the system's locale. */
export function numberFormat(opts = {}) {
  return { format: (n) => get('number', opts).format(n) };
}
