//! The API key and the credentials of a base URL, kept out of logs, errors, `Debug` output and
//! the database.
//!
//! [`ApiKey`] is the only place the key lives. Its `Debug` and `Display` print `ApiKey(***)`; the
//! key itself is read only by the HTTP providers when they build the `Authorization` header
//! ([`ApiKey::expose`]). Credentials written into a base URL (`http://user:pass@host`) are taken
//! out of it into a [`BasicAuth`], redacted the same way.
//!
//! Whatever text comes back from a server goes through [`Secrets::clean`] before it becomes part
//! of an error, and `clean` redacts *before* it cuts: a server that echoes a secret cannot leak
//! it, wherever the secret falls in its text. A hostile echo is assumed: the text is first decoded
//! (JSON `\u` escapes, `%XX`, `&#NN;`, a few rounds for double encoding), control characters become
//! spaces and invisible ones are dropped, and then every run of 8 or more characters that is part
//! of a secret (ASCII case ignored) is replaced by `***`, so a key that is cut, echoed in part,
//! upper-cased, escaped or split across escapes is still found. Only then is the text cut.

use std::fmt;

use base64::Engine as _;

/// A secret API key. Never printed, never serialised.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

/// What is printed instead of a secret.
pub const REDACTED: &str = "***";

/// Secret runs shorter than this are not searched for in server text (every 8-character run of a
/// longer secret is). Shorter secrets are searched for whole.
pub const SECRET_WINDOW: usize = 8;

/// Secrets shorter than this are not searched for at all: a 3-letter password would match
/// ordinary words everywhere, and cannot be kept secret by redaction anyway.
const MIN_SECRET_CHARS: usize = 4;

/// Characters of server text looked at. Error messages keep a few hundred; this bound makes a
/// multi-megabyte answer cost no more than a short one.
const MAX_SCANNED_CHARS: usize = 64 * 1024;

/// Rounds of decoding, for text encoded several times over (`%2573`).
const DECODE_ROUNDS: usize = 4;

impl ApiKey {
    /// Wraps `key`; `None` for an empty or blank string (an unset variable is the same as none).
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into().trim().to_owned();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    /// The key itself, for the `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the key redacted (see [`Secrets::clean`]), not cut.
    pub fn redact(&self, text: &str) -> String {
        Secrets::new(Some(self), None).clean(text, usize::MAX)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({REDACTED})")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// User name and password taken out of a base URL, sent as HTTP Basic authentication (what
/// reqwest does with credentials in a URL). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub(crate) username: String,
    pub(crate) password: Option<String>,
}

impl BasicAuth {
    /// The credentials of `url`, percent-decoded, and `url` without them; `None` if it has none.
    pub fn take_from(url: &mut url::Url) -> Option<BasicAuth> {
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let username = decode(url.username());
        let password = url.password().map(decode);
        if username.is_empty() && password.is_none() {
            return None;
        }
        // Both only fail for URLs that cannot have credentials, and this one had some.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        Some(BasicAuth { username, password })
    }

    /// The `Authorization: Basic` token, as a server could echo it.
    fn token(&self) -> String {
        let plain = format!("{}:{}", self.username, self.password.as_deref().unwrap_or(""));
        base64::engine::general_purpose::STANDARD.encode(plain)
    }
}

impl fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BasicAuth({REDACTED})")
    }
}

/// Every secret a provider holds, to take out of server text. `Debug` prints only how many.
#[derive(Clone, Default)]
pub struct Secrets {
    /// The secrets, lower-cased (ASCII), as characters.
    whole: Vec<Vec<char>>,
    /// The longest secret, in characters.
    longest: usize,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} redacted)", self.whole.len())
    }
}

impl Secrets {
    /// The secrets of a provider: its API key and its base URL's credentials.
    pub fn new(key: Option<&ApiKey>, basic: Option<&BasicAuth>) -> Secrets {
        let mut all: Vec<String> = Vec::new();
        if let Some(k) = key {
            all.push(k.0.clone());
        }
        if let Some(b) = basic {
            all.push(b.username.clone());
            all.extend(b.password.clone());
            all.push(b.token());
        }
        let mut out = Secrets::default();
        for s in all {
            let chars: Vec<char> = s.chars().map(|c| c.to_ascii_lowercase()).collect();
            if chars.len() < MIN_SECRET_CHARS {
                continue;
            }
            out.longest = out.longest.max(chars.len());
            out.whole.push(chars);
        }
        out
    }

    /// True if there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.whole.is_empty()
    }

    /// Server text made safe to store, log and show, then cut to at most `max_chars` characters:
    /// decoded, control characters turned into spaces, invisible ones dropped, every secret run
    /// replaced by `***` (see the module doc). Redaction comes first, so no cut can split a secret
    /// into pieces that escape it.
    pub fn clean(&self, text: &str, max_chars: usize) -> String {
        let mut chars: Vec<char> = text.chars().take(MAX_SCANNED_CHARS + 1).collect();
        let scanned_all = chars.len() <= MAX_SCANNED_CHARS;
        chars.truncate(MAX_SCANNED_CHARS);
        let encoded = |chars: &[char]| chars.iter().any(|c| matches!(c, '%' | '\\' | '&'));
        for _ in 0..DECODE_ROUNDS {
            if !encoded(&chars) {
                break;
            }
            let decoded = decode_once(&chars);
            if decoded == chars {
                break;
            }
            chars = decoded;
        }
        let mut chars = visible(chars);
        if !scanned_all {
            // The end of what was scanned may be the start of a secret cut short: drop it.
            let keep = chars.len().saturating_sub(self.longest);
            chars.truncate(keep);
        }
        let covered = self.covered(&chars);
        let mut out = String::with_capacity(chars.len());
        let mut i = 0;
        while i < chars.len() {
            if covered[i] {
                out.push_str(REDACTED);
                while i < chars.len() && covered[i] {
                    i += 1;
                }
            } else {
                out.push(chars[i]);
                i += 1;
            }
        }
        crate::error::truncate_chars(&out, max_chars)
    }

    /// Which characters of `text` belong to a secret run: for each secret, the longest run
    /// ending at each character that is also a run of the secret (one row of the classic
    /// longest-common-substring table at a time), marked once it is [`SECRET_WINDOW`] long (or
    /// the whole of a shorter secret). O(text × secret), no allocation per character.
    fn covered(&self, text: &[char]) -> Vec<bool> {
        let mut covered = vec![false; text.len()];
        if self.is_empty() {
            return covered;
        }
        let lower: Vec<char> = text.iter().map(char::to_ascii_lowercase).collect();
        for secret in &self.whole {
            let need = secret.len().min(SECRET_WINDOW);
            let mut prev = vec![0usize; secret.len() + 1];
            let mut cur = vec![0usize; secret.len() + 1];
            for (i, c) in lower.iter().enumerate() {
                for (j, s) in secret.iter().enumerate() {
                    cur[j + 1] = if c == s { prev[j] + 1 } else { 0 };
                    if cur[j + 1] >= need {
                        covered[i + 1 - need..=i].iter_mut().for_each(|x| *x = true);
                    }
                }
                std::mem::swap(&mut prev, &mut cur);
            }
        }
        covered
    }
}

/// `text` with control characters as spaces and invisible formatting characters (zero-width
/// spaces and joiners, soft hyphens, direction marks, byte-order marks) dropped: they could hide
/// a secret from the search, or a terminal escape from a person reading the log.
fn visible(text: Vec<char>) -> Vec<char> {
    text.into_iter()
        .filter(|c| {
            !matches!(c, '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}'
                | '\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFF8}' | '\u{E0000}'..='\u{E0FFF}')
        })
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// One round of decoding: JSON string escapes (`\uXXXX`, `\n`, `\"`...), percent-encoding
/// (`%XX`, as UTF-8) and numeric HTML character references (`&#115;`, `&#x73;`). Anything that is
/// not a valid escape stays as it is.
fn decode_once(text: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes: Vec<u8> = Vec::new(); // a run of %XX, decoded together as UTF-8
    let flush = |bytes: &mut Vec<u8>, out: &mut Vec<char>| {
        if !bytes.is_empty() {
            out.extend(String::from_utf8_lossy(bytes).chars());
            bytes.clear();
        }
    };
    let hex = |s: &[char]| -> Option<u32> {
        if s.is_empty() {
            return None;
        }
        s.iter()
            .try_fold(0u32, |acc, c| Some(acc.checked_mul(16)? + c.to_digit(16)?))
    };
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if c == '%' {
            if let Some(b) = text
                .get(i + 1..i + 3)
                .and_then(hex)
                .and_then(|b| u8::try_from(b).ok())
            {
                bytes.push(b);
                i += 3;
                continue;
            }
        }
        flush(&mut bytes, &mut out);
        match c {
            '\\' => match text.get(i + 1) {
                Some('u') => {
                    let (decoded, used) = json_unicode(text, i, hex);
                    out.push(decoded.unwrap_or('\\'));
                    i += if decoded.is_some() { used } else { 1 };
                }
                Some(e @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                    out.push(match e {
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        other => *other,
                    });
                    i += 2;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            },
            '&' if text.get(i + 1) == Some(&'#') => {
                let (digits_from, radix) = match text.get(i + 2) {
                    Some('x' | 'X') => (i + 3, 16),
                    _ => (i + 2, 10),
                };
                let end = text[digits_from..]
                    .iter()
                    .take(8)
                    .position(|c| *c == ';')
                    .map(|p| digits_from + p);
                let decoded = end.and_then(|end| {
                    let digits: String = text[digits_from..end].iter().collect();
                    let n = u32::from_str_radix(&digits, radix).ok()?;
                    char::from_u32(n).map(|ch| (ch, end + 1))
                });
                match decoded {
                    Some((ch, next)) => {
                        out.push(ch);
                        i = next;
                    }
                    None => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    flush(&mut bytes, &mut out);
    out
}

/// The character of a `\uXXXX` escape at `i` (a surrogate pair counts as one), and how many
/// characters it used.
fn json_unicode(text: &[char], i: usize, hex: impl Fn(&[char]) -> Option<u32>) -> (Option<char>, usize) {
    let Some(hi) = text.get(i + 2..i + 6).and_then(&hex) else {
        return (None, 0);
    };
    if (0xD800..0xDC00).contains(&hi) {
        let lo = (text.get(i + 6) == Some(&'\\') && text.get(i + 7) == Some(&'u'))
            .then(|| text.get(i + 8..i + 12).and_then(&hex))
            .flatten()
            .filter(|lo| (0xDC00..0xE000).contains(lo));
        if let Some(lo) = lo {
            let c = char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
            return (c, 12);
        }
        return (Some('\u{FFFD}'), 6);
    }
    (Some(char::from_u32(hi).unwrap_or('\u{FFFD}')), 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-SECRET-4f9a1c";

    fn secrets() -> Secrets {
        Secrets::new(ApiKey::new(KEY).as_ref(), None)
    }

    /// True if some `SECRET_WINDOW`-character run of `secret` is in `text`.
    fn leaks(text: &str, secret: &str) -> bool {
        let s: Vec<char> = secret.chars().collect();
        s.windows(SECRET_WINDOW)
            .any(|w| text.contains(&w.iter().collect::<String>()))
    }

    #[test]
    fn the_key_is_never_formatted() {
        let key = ApiKey::new("sk-secret-123").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        assert_eq!(format!("{key}"), "***");
        assert_eq!(
            key.redact("bad key sk-secret-123, again sk-secret-123"),
            "bad key ***, again ***"
        );
        assert!(ApiKey::new("  ").is_none());
        assert_eq!(format!("{:?}", secrets()), "Secrets(1 redacted)");
    }

    #[test]
    fn a_key_cut_anywhere_is_redacted_before_the_cut() {
        let s = secrets();
        for len in [0, 7, 50, 199, 200, 201, 299, 300, 301, 650] {
            let filler: String = "abcdefghij".chars().cycle().take(len).collect();
            for offset in 0..=len {
                let text = format!("{}{KEY}{}", &filler[..offset], &filler[offset..]);
                for max in [60, 200, 300] {
                    let out = s.clean(&text, max);
                    assert!(!leaks(&out, KEY), "len {len} offset {offset} max {max}: {out}");
                    assert!(out.chars().count() <= max);
                }
            }
        }
    }

    #[test]
    fn partial_encoded_and_disguised_keys_are_redacted() {
        let s = secrets();
        let escaped: String = KEY.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
        let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        let double: String = KEY.bytes().map(|b| format!("%25{b:02X}")).collect();
        let entities: String = KEY.chars().map(|c| format!("&#{};", c as u32)).collect();
        let zero_width: String = KEY.chars().flat_map(|c| [c, '\u{200B}']).collect();
        for text in [
            format!("key {} was wrong", &KEY[..12]),
            format!("key …{} was wrong", &KEY[KEY.len() - 9..]),
            format!("KEY {}", KEY.to_uppercase()),
            format!("{{\"k\":\"{escaped}\"}}"),
            "sk-test-SE\\u0043RET-4f9a1c".to_owned(),
            format!("echo {percent}"),
            format!("echo {double}"),
            format!("echo {entities}"),
            format!("echo {zero_width}"),
            format!("{KEY}{KEY}{KEY}"),
        ] {
            let out = s.clean(&text, 400);
            assert!(
                !leaks(&out.to_ascii_lowercase(), &KEY.to_ascii_lowercase()),
                "{text:?} → {out}"
            );
            assert!(out.contains(REDACTED), "{text:?} → {out}");
        }
        // Seven characters of the key are not a secret run: ordinary text stays readable.
        assert_eq!(s.clean("sk-test is a prefix", 400), "sk-test is a prefix");
        assert_eq!(s.clean("line\nbreak\u{1b}[31m", 400), "line break [31m");
    }

    #[test]
    fn url_credentials_are_secrets_too() {
        let mut url = url::Url::parse("http://alice:pa%24%24word-long@host.example/v1").unwrap();
        let basic = BasicAuth::take_from(&mut url).unwrap();
        assert_eq!(url.as_str(), "http://host.example/v1");
        assert_eq!(basic.password.as_deref(), Some("pa$$word-long"));
        assert_eq!(format!("{basic:?}"), "BasicAuth(***)");
        let s = Secrets::new(None, Some(&basic));
        let token = basic.token();
        let out = s.clean(
            &format!("user alice, password pa$$word-long, header Basic {token}"),
            400,
        );
        assert!(
            !out.contains("alice") && !leaks(&out, "pa$$word-long") && !leaks(&out, &token),
            "{out}"
        );
        assert!(BasicAuth::take_from(&mut url::Url::parse("http://host.example/").unwrap()).is_none());
    }

    #[test]
    fn a_huge_text_costs_only_its_scanned_prefix() {
        let s = secrets();
        let huge = format!("{}{KEY}", "x".repeat(MAX_SCANNED_CHARS - 10));
        let out = s.clean(&huge, usize::MAX);
        assert!(!leaks(&out, KEY));
        assert!(out.chars().count() <= MAX_SCANNED_CHARS);
    }
}
