//! The native-messaging wire format, as the browsers define it: each message is UTF-8 JSON
//! preceded by its length in bytes as a 32-bit unsigned integer in native byte order. Chromium
//! sends at most 64 MiB per message and accepts at most 1 MB from the host.
//!
//! Invariants:
//! - Memory for a message is allocated only once its length is known to be within
//!   [`MAX_INCOMING`]: a length prefix of 4 GiB allocates nothing.
//! - A message longer than [`MAX_INCOMING`] but within what a browser can send is read past in
//!   small chunks and answered with an error, so the stream stays in step; a longer prefix cannot
//!   come from a browser, so the stream is corrupt ([`FrameError::Corrupt`]) and the host stops.
//! - Nothing longer than [`MAX_OUTGOING`] is ever written: [`write_frame`] refuses it.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// Largest message the host reads (4 MiB of JSON). The extension sends batches of at most
/// 256 KiB; anything longer is refused with a `too_large` error and skipped.
pub const MAX_INCOMING: u32 = 4 * 1024 * 1024;

/// Largest message a browser sends (Chromium's limit, 64 MiB): a longer length prefix means the
/// stream is not native messaging at all.
pub const BROWSER_MAX_INCOMING: u32 = 64 * 1024 * 1024;

/// Largest message the host may send (the browsers accept at most 1 MB).
pub const MAX_OUTGOING: usize = 1024 * 1024;

/// How much of a message over [`MAX_INCOMING`] is read for its batch number.
const TOO_LARGE_HEAD: usize = 256;

/// Version of the message vocabulary below; `hello` carries it both ways.
pub const PROTOCOL_VERSION: u32 = 1;

/// One frame read from the browser.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A message within [`MAX_INCOMING`]: its bytes.
    Message(Vec<u8>),
    /// A message of `len` bytes, longer than [`MAX_INCOMING`]; it was read past, unparsed, except
    /// for the batch number its first bytes name (so that its refusal can name it).
    TooLarge {
        /// Its length.
        len: u32,
        /// The batch number it names near its start, if any.
        batch: Option<u64>,
    },
}

/// Why no frame could be read.
#[derive(Debug)]
pub enum FrameError {
    /// The input ended cleanly between two messages: the browser closed the port.
    Closed,
    /// The input ended inside a length prefix or a message.
    Truncated,
    /// A length prefix longer than any browser sends.
    Corrupt(u32),
    /// Reading failed.
    Io(io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Closed => f.write_str("the browser closed the connection"),
            FrameError::Truncated => f.write_str("the input ended inside a message"),
            FrameError::Corrupt(n) => write!(
                f,
                "a message length of {n} bytes is more than a browser ever sends ({BROWSER_MAX_INCOMING}): \
                 this is not a native-messaging stream"
            ),
            FrameError::Io(e) => write!(f, "reading from the browser failed: {e}"),
        }
    }
}

/// Reads the next frame.
pub fn read_frame(r: &mut impl Read) -> Result<Frame, FrameError> {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < prefix.len() {
        match r.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(FrameError::Truncated),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    let len = u32::from_ne_bytes(prefix);
    if len > BROWSER_MAX_INCOMING {
        return Err(FrameError::Corrupt(len));
    }
    let mut body = r.take(u64::from(len));
    if len > MAX_INCOMING {
        // The extension writes `{"type":"events","batch":N,` first: the head names the batch.
        let mut head = Vec::with_capacity(TOO_LARGE_HEAD);
        (&mut body)
            .take(TOO_LARGE_HEAD as u64)
            .read_to_end(&mut head)
            .map_err(FrameError::Io)?;
        let skipped = io::copy(&mut body, &mut io::sink()).map_err(FrameError::Io)?;
        return if head.len() as u64 + skipped < u64::from(len) {
            Err(FrameError::Truncated)
        } else {
            Ok(Frame::TooLarge {
                len,
                batch: batch_number(&head),
            })
        };
    }
    // Within MAX_INCOMING, so this allocation is bounded.
    let mut buf = Vec::with_capacity(len as usize);
    body.read_to_end(&mut buf).map_err(FrameError::Io)?;
    if buf.len() < len as usize {
        return Err(FrameError::Truncated);
    }
    Ok(Frame::Message(buf))
}

/// Writes one message (`json`, already serialized) with its length prefix, and flushes.
pub fn write_frame(w: &mut impl Write, json: &[u8]) -> io::Result<()> {
    if json.len() > MAX_OUTGOING {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a reply of {} bytes is over the browsers' {MAX_OUTGOING}-byte limit",
                json.len()
            ),
        ));
    }
    // Checked just above; `try_from` only so that no cast can wrap.
    let len = u32::try_from(json.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a reply over 4 GiB"))?;
    w.write_all(&len.to_ne_bytes())?;
    w.write_all(json)?;
    w.flush()
}

/// Longest reason or message the host puts in a reply, in bytes. Refusal reasons quote what was
/// refused (serde's `invalid type: string "…"`), so without a bound a 2 MB field would make a
/// 2 MB reply, which no browser accepts.
pub const MAX_REASON: usize = 300;

/// Largest batch number the host accepts: the extension's numbers are JavaScript numbers, exact
/// up to 2^53 - 1 (`Number.MAX_SAFE_INTEGER`).
pub const MAX_BATCH: u64 = (1 << 53) - 1;

/// `text` cut to at most [`MAX_REASON`] bytes (on a character boundary, with `…` when cut), its
/// control characters made spaces (each would take six bytes as a JSON escape).
pub fn bounded(text: impl Into<String>) -> String {
    let mut text = text.into();
    if text.chars().any(char::is_control) {
        text = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
    }
    if text.len() > MAX_REASON {
        let mut end = MAX_REASON - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// A message's bytes made readable as JSON text, as a browser reads such text: invalid UTF-8
/// becomes U+FFFD, and so does a lone UTF-16 surrogate escape (`"\uD800"`, what
/// `JSON.stringify` writes for a string cut in the middle of an emoji), which serde_json refuses.
/// Borrowed when there is nothing to mend (the usual case).
pub fn mend_text(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let text: Cow<'_, [u8]> = match String::from_utf8_lossy(bytes) {
        Cow::Borrowed(_) => Cow::Borrowed(bytes),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    };
    let lone = lone_surrogates(&text);
    if lone.is_empty() {
        return text;
    }
    let mut owned = text.into_owned();
    for at in lone {
        // `\uD800` and `\uFFFD` are both six bytes: patched in place.
        owned[at..at + 6].copy_from_slice(br"\uFFFD");
    }
    Cow::Owned(owned)
}

/// The four hex digits at `at` as a number, if they are four hex digits.
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    if !text.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

/// Where a `\uXXXX` escape of a lone surrogate starts, in the strings of JSON text `b`.
fn lone_surrogates(b: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut in_string = false;
    let mut i = 0;
    while i < b.len() {
        match (in_string, b[i]) {
            (false, b'"') => in_string = true,
            (true, b'"') => in_string = false,
            (true, b'\\') => {
                if b.get(i + 1) != Some(&b'u') {
                    i += 2;
                    continue;
                }
                match hex4(b, i + 2) {
                    Some(0xD800..=0xDBFF) => {
                        let low = (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                            .then(|| hex4(b, i + 8))
                            .flatten();
                        if matches!(low, Some(0xDC00..=0xDFFF)) {
                            i += 12; // a pair: one character
                            continue;
                        }
                        found.push(i);
                    }
                    Some(0xDC00..=0xDFFF) => found.push(i),
                    _ => {}
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The batch number a message names at its top level (`{"batch": 7, ...}`), read without parsing
/// the rest, so that even a message that is not valid JSON further on is refused by its number
/// (the extension then knows which batch was refused). `None` if it names none, or not one
/// within [`MAX_BATCH`].
pub fn batch_number(b: &[u8]) -> Option<u64> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let key = b.get(start..j)?;
                i = j + 1;
                if depth == 1 && key == b"batch" {
                    let rest = b.get(i..)?;
                    let rest = rest.trim_ascii_start().strip_prefix(b":")?.trim_ascii_start();
                    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                    let n: u64 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
                    return (n <= MAX_BATCH).then_some(n);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A message from the extension. Unknown fields are ignored (a newer extension may send more).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// The first message after connecting.
    Hello {
        /// The extension's protocol version.
        #[serde(default)]
        protocol: Option<u32>,
        /// The extension's version, for the log.
        #[serde(default)]
        extension_version: Option<String>,
    },
    /// Events to store, oldest first; answered by one [`Reply::Ack`] or [`Reply::Error`].
    Events {
        /// The extension's number for this batch, echoed in the answer.
        batch: u64,
        /// The events, each read on its own so one malformed event cannot hold up the others.
        events: Vec<serde_json::Value>,
    },
    /// Liveness check; answered by [`Reply::Pong`].
    Ping,
    /// What Sitetrail knows of the site of `url` (the popup's "News · 25 min today"); answered by
    /// [`Reply::Site`] with the same `query`.
    Site {
        /// The extension's number for this question, echoed in the answer.
        query: u64,
        /// The page's URL (only its site is looked up).
        url: String,
    },
    /// The limits used up now and the focus session, with the websites each covers (what the
    /// extension holds back);
    /// answered by [`Reply::Limits`] with the same `query`.
    Limits {
        /// The extension's number for this question, echoed in the answer.
        query: u64,
    },
    /// Starts a focus session of `minutes` on `blocks` (category ids or domains), or stops the
    /// one running when `minutes` is 0; answered by [`Reply::Focus`] with the same `query`.
    Focus {
        /// The extension's number for this question, echoed in the answer.
        query: u64,
        /// How long; 0 to stop.
        minutes: u32,
        /// What to hold back: category ids (`social`) or domains (`youtube.com`).
        #[serde(default)]
        blocks: Vec<String>,
    },
}

/// What an event is.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A page was shown: a new visit, with its URL, title, time and (if merged in) active time.
    Visit,
    /// A visit already sent has a new title or a new active-time total.
    Update,
}

/// One event. Every event has an id the extension made (its idempotency key); a visit's id is
/// the visit's id for later updates.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Event {
    /// The event's id.
    pub id: String,
    /// What it is.
    pub kind: EventKind,
    /// For an update, the id of the visit event it updates.
    #[serde(default)]
    pub visit: Option<String>,
    /// For a visit: the page's URL.
    #[serde(default)]
    pub url: Option<String>,
    /// The page's title (latest known).
    #[serde(default)]
    pub title: Option<String>,
    /// For a visit: when the page was shown, milliseconds since the Unix epoch.
    #[serde(default)]
    pub at: Option<i64>,
    /// The visit's active time so far (milliseconds): a running total, never an increment.
    #[serde(default)]
    pub active_ms: Option<i64>,
}

/// Longest event or visit id accepted.
pub const MAX_ID_LEN: usize = 64;

/// True for an id the extension could have made: 1 to [`MAX_ID_LEN`] ASCII letters, digits, `-`
/// and `_`.
pub fn valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An event the host will never store, and why (the extension drops it: retrying cannot help).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Rejected {
    /// The event's id, if it had a readable one.
    pub id: Option<String>,
    /// Why.
    pub reason: String,
}

/// A message to the extension.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// The answer to [`Request::Hello`]: whether the database is usable.
    Hello {
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
        /// The host's version.
        host_version: &'static str,
        /// The browser this host was linked for (`browser-link install --browser`).
        browser: String,
        /// The database file the host writes to.
        db: String,
        /// True if the database is open and events can be stored.
        ok: bool,
        /// Why events cannot be stored now, if they cannot.
        problem: Option<String>,
    },
    /// A batch was committed: `stored` are safe in the database (or were already), `rejected`
    /// will never be stored. Sent only after COMMIT.
    Ack {
        /// The batch's number.
        batch: u64,
        /// Ids of the events stored (newly or before).
        stored: Vec<String>,
        /// Events refused for good.
        rejected: Vec<Rejected>,
    },
    /// Nothing of the message was stored.
    Error {
        /// The batch's number, if the message was a readable batch.
        batch: Option<u64>,
        /// `bad_json`, `bad_message`, `too_large`, `too_many_events`, `database` (retry later) or
        /// `corrupt_stream` (the host stops).
        kind: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The answer to [`Request::Ping`].
    Pong,
    /// The answer to [`Request::Site`]: `site` is `None` for a page that is not a website or a
    /// website never recorded.
    Site {
        /// The question's number.
        query: u64,
        /// What is known of the site.
        site: Option<SiteInfo>,
    },
    /// The answer to [`Request::Limits`]: `ok` false (and no limits) if the database could not be
    /// read, so the extension holds nothing back rather than something stale.
    Limits {
        /// The question's number.
        query: u64,
        /// True if the limits could be read.
        ok: bool,
        /// The limits used up now (`holds`), at most `MAX_DOMAINS` domains in all.
        limits: Vec<crate::holds::Reached>,
        /// The focus session running, if any.
        focus: Option<crate::holds::FocusHold>,
    },
    /// The answer to [`Request::Focus`].
    Focus {
        /// The question's number.
        query: u64,
        /// True if the session was started (or stopped).
        ok: bool,
        /// What happened, in words for the popup.
        message: String,
    },
}

/// A website as the extension's popup shows it: its category and today's time on it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct SiteInfo {
    /// The domain, as stored.
    pub domain: String,
    /// The domain as people read it (Unicode).
    pub display: String,
    /// Its category id, once classified.
    pub category: Option<crate::category::Category>,
    /// The category's name (`News`).
    pub category_name: Option<&'static str>,
    /// Today's measured time on it (ms, local calendar day).
    pub today_active_ms: i64,
    /// Today's estimated time on it (ms; imported durations).
    pub today_estimated_ms: i64,
    /// Today's visits to it.
    pub today_visits: i64,
}

impl Reply {
    /// The reply as JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing these plain structs cannot fail; an empty object is a safe fallback.
        serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec())
    }

    /// The reply as messages of at most [`MAX_OUTGOING`] bytes each. Bounded ids and reasons keep
    /// every reply well within it (`the_longest_possible_ack_fits_one_message`); should one still
    /// be longer, an ack is split into acks of the same batch (the extension takes the first and
    /// sends the rest again, which are then acknowledged as already stored), and anything else
    /// becomes a short error.
    pub fn to_frames(&self) -> Vec<Vec<u8>> {
        let json = self.to_json();
        if json.len() <= MAX_OUTGOING {
            return vec![json];
        }
        match self {
            Reply::Ack {
                batch,
                stored,
                rejected,
            } if stored.len() + rejected.len() > 1 => {
                let half_stored = stored.len() / 2;
                let half_rejected = rejected.len() / 2;
                let first = Reply::Ack {
                    batch: *batch,
                    stored: stored[..half_stored].to_vec(),
                    rejected: rejected[..half_rejected].to_vec(),
                };
                let second = Reply::Ack {
                    batch: *batch,
                    stored: stored[half_stored..].to_vec(),
                    rejected: rejected[half_rejected..].to_vec(),
                };
                let mut frames = first.to_frames();
                frames.extend(second.to_frames());
                frames
            }
            _ => vec![Reply::Error {
                batch: match self {
                    Reply::Ack { batch, .. } => Some(*batch),
                    Reply::Error { batch, .. } => *batch,
                    _ => None,
                },
                kind: "too_large",
                message: "the answer was too long to send".into(),
            }
            .to_json()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(json: &[u8]) -> Vec<u8> {
        let mut v = u32::try_from(json.len()).unwrap().to_ne_bytes().to_vec();
        v.extend_from_slice(json);
        v
    }

    #[test]
    fn frames_round_trip_in_native_byte_order() {
        let mut out = Vec::new();
        write_frame(&mut out, br#"{"type":"pong"}"#).unwrap();
        assert_eq!(&out[..4], &15u32.to_ne_bytes());
        let mut r = &out[..];
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Frame::Message(br#"{"type":"pong"}"#.to_vec())
        );
        assert!(matches!(read_frame(&mut r), Err(FrameError::Closed)));
    }

    #[test]
    fn several_frames_in_one_read_are_split_by_their_lengths() {
        let mut input = framed(b"{}");
        input.extend(framed(b"[1,2]"));
        input.extend(framed(b""));
        let mut r = &input[..];
        assert_eq!(read_frame(&mut r).unwrap(), Frame::Message(b"{}".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), Frame::Message(b"[1,2]".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), Frame::Message(Vec::new()));
        assert!(matches!(read_frame(&mut r), Err(FrameError::Closed)));
    }

    /// A reader that hands out one byte per call, as a pipe may.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    #[test]
    fn a_frame_arriving_byte_by_byte_is_read_whole() {
        let input = framed(br#"{"type":"ping"}"#);
        let mut r = Trickle(&input);
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Frame::Message(br#"{"type":"ping"}"#.to_vec())
        );
    }

    #[test]
    fn input_ending_inside_a_prefix_or_a_message_is_truncated() {
        let mut r: &[u8] = &[5, 0];
        assert!(matches!(read_frame(&mut r), Err(FrameError::Truncated)));
        let mut short = 10u32.to_ne_bytes().to_vec();
        short.extend_from_slice(b"abc");
        let mut r = &short[..];
        assert!(matches!(read_frame(&mut r), Err(FrameError::Truncated)));
    }

    /// An endless reader that counts what was read from it.
    struct Zeros(u64);
    impl Read for Zeros {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(0);
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
    }

    #[test]
    fn a_4_gib_length_is_refused_before_anything_is_read_or_allocated() {
        let prefix = u32::MAX.to_ne_bytes();
        let mut r = prefix.chain(Zeros(0));
        match read_frame(&mut r) {
            Err(FrameError::Corrupt(n)) => assert_eq!(n, u32::MAX),
            other => panic!("expected Corrupt, got {other:?}"),
        }
        let (_, zeros) = r.into_inner();
        assert_eq!(zeros.0, 0, "not one byte of the body was read");
    }

    #[test]
    fn a_message_over_the_limit_is_skipped_and_the_next_one_is_read() {
        let big = vec![b' '; MAX_INCOMING as usize + 1];
        let mut input = framed(&big);
        input.extend(framed(br#"{"type":"ping"}"#));
        let mut r = &input[..];
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Frame::TooLarge {
                len: MAX_INCOMING + 1,
                batch: None
            }
        );
        // One that starts like a batch is refused by its number.
        let mut big = br#"{"type":"events","batch":41,"events":["#.to_vec();
        big.resize(MAX_INCOMING as usize + 10, b' ');
        let input = framed(&big);
        assert_eq!(
            read_frame(&mut &input[..]).unwrap(),
            Frame::TooLarge {
                len: MAX_INCOMING + 10,
                batch: Some(41)
            }
        );
        assert_eq!(
            read_frame(&mut r).unwrap(),
            Frame::Message(br#"{"type":"ping"}"#.to_vec())
        );
        // Exactly at the limit is still a message.
        let at = vec![b' '; MAX_INCOMING as usize];
        let input = framed(&at);
        assert!(matches!(read_frame(&mut &input[..]).unwrap(), Frame::Message(m) if m.len() == at.len()));
    }

    #[test]
    fn a_reply_over_one_megabyte_is_never_written() {
        let mut out = Vec::new();
        let err = write_frame(&mut out, &vec![b'x'; MAX_OUTGOING + 1]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(out.is_empty(), "nothing written");
        write_frame(&mut out, &vec![b'x'; MAX_OUTGOING]).unwrap();
        assert_eq!(out.len(), MAX_OUTGOING + 4);
    }

    #[test]
    fn requests_parse_and_unknown_fields_are_ignored() {
        let r: Request =
            serde_json::from_slice(br#"{"type":"events","batch":3,"events":[{"id":"a"}],"extra":1}"#)
                .unwrap();
        assert_eq!(
            r,
            Request::Events {
                batch: 3,
                events: vec![serde_json::json!({"id":"a"})]
            }
        );
        let r: Request = serde_json::from_slice(br#"{"type":"hello"}"#).unwrap();
        assert_eq!(
            r,
            Request::Hello {
                protocol: None,
                extension_version: None
            }
        );
        assert!(serde_json::from_slice::<Request>(br#"{"type":"launch_missiles"}"#).is_err());
        let e: Event = serde_json::from_value(serde_json::json!({
            "id": "e1", "kind": "visit", "url": "https://a.test/", "at": 1, "future": true
        }))
        .unwrap();
        assert_eq!(e.kind, EventKind::Visit);
    }

    #[test]
    fn lone_surrogates_and_bad_utf8_are_mended_and_everything_else_left_alone() {
        let mended = |b: &[u8]| -> String {
            let v: serde_json::Value = serde_json::from_slice(&mend_text(b)).unwrap();
            v.as_str().unwrap().to_owned()
        };
        assert_eq!(mended(br#""a\ud800b""#), "a\u{FFFD}b");
        assert_eq!(mended(br#""\udc00""#), "\u{FFFD}");
        assert_eq!(mended(br#""\ud83c\ud83c\udf89""#), "\u{FFFD}🎉");
        assert_eq!(mended(br#""end \uD83C""#), "end \u{FFFD}");
        // An escaped backslash before "ud800" is text, not an escape; a pair is one character.
        assert!(matches!(
            mend_text(br#""\\ud800 \ud83c\udf89""#),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(mended(b"\"caf\xe9\""), "caf\u{FFFD}");
        // Outside strings nothing is touched (it is not JSON text to mend).
        assert!(matches!(mend_text(br#"{"a":1}"#), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn the_batch_number_is_read_from_the_top_level_only() {
        assert_eq!(
            batch_number(br#"{"type":"events","batch":7,"events":[}"#),
            Some(7)
        );
        assert_eq!(batch_number(br#"{"events":[{"batch":1}],"batch" : 9"#), Some(9));
        assert_eq!(batch_number(br#"{"title":"\"batch\":3"}"#), None);
        assert_eq!(batch_number(br#"{"batch":"7"}"#), None);
        assert_eq!(batch_number(br#"{"batch":99999999999999999999}"#), None);
        assert_eq!(
            batch_number(format!(r#"{{"batch":{}}}"#, MAX_BATCH + 1).as_bytes()),
            None
        );
        assert_eq!(batch_number(b"\"unterminated"), None);
    }

    #[test]
    fn bounded_reasons_are_short_and_plain() {
        let long = bounded("é".repeat(1000));
        assert!(long.len() <= MAX_REASON && long.ends_with('…'));
        assert_eq!(bounded("a\u{1b}]0;x\u{7}b"), "a ]0;x b");
        assert_eq!(bounded("short"), "short");
    }

    /// A number the extension's `lib/host.js` exports (`export const NAME = 123_456;` or an
    /// expression of products like `256 * 1024`).
    fn js_number(src: &str, name: &str) -> u64 {
        let line = src
            .lines()
            .find_map(|l| l.strip_prefix(&format!("export const {name} = ")))
            .unwrap_or_else(|| panic!("lib/host.js exports {name}"));
        line.trim_end_matches(';')
            .split('*')
            .map(|n| n.trim().replace('_', "").parse::<u64>().expect("a number"))
            .product()
    }

    /// The extension's side of the protocol is written in JavaScript: its constants must agree
    /// with these, or batches would be refused (or the host never found).
    #[test]
    fn the_extensions_host_constants_agree_with_the_host() {
        let js = include_str!("../../extension/lib/host.js");
        assert!(js.contains(&format!(
            "export const HOST_NAME = '{}';",
            crate::capture::link::HOST_NAME
        )));
        assert_eq!(js_number(js, "PROTOCOL"), u64::from(PROTOCOL_VERSION));
        assert!(js_number(js, "BATCH_EVENTS") <= super::super::events::MAX_EVENTS_PER_BATCH as u64);
        // A batch of BATCH_BYTES of events, with its envelope, is well within what the host reads.
        assert!(js_number(js, "BATCH_BYTES") * 2 <= u64::from(MAX_INCOMING));
    }

    #[test]
    fn ids_are_short_and_plain() {
        assert!(valid_id("0192c1f2-7b3a-7c4e-9d2f-1a2b3c4d5e6f"));
        assert!(!valid_id(""));
        assert!(!valid_id(&"a".repeat(MAX_ID_LEN + 1)));
        assert!(!valid_id("a b"));
        assert!(!valid_id("é"));
    }

    #[test]
    fn replies_are_tagged_json() {
        let v: serde_json::Value = serde_json::from_slice(
            &Reply::Ack {
                batch: 7,
                stored: vec!["a".into()],
                rejected: vec![],
            }
            .to_json(),
        )
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type":"ack","batch":7,"stored":["a"],"rejected":[]})
        );
    }
}
