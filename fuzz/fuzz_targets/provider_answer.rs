//! A provider's answer, status, headers and body together, read by the same pure functions the
//! providers use (`openai::read_answer`, `ollama::read_answer`).
//!
//! Input (text, so seeds are easy to write): a first line `STATUS [o] [j] [t] [kAT:FORM] [L]`
//! (`o` Ollama instead of OpenAI, `j` the json_object mode, `t` the body was cut at its cap,
//! `kAT:FORM` the API key put into the body at byte AT, written in FORM 0–5: plain, upper case,
//! `\u` escapes, `%XX`, the first 12 characters, the last 12; `L` the key in a `Location`
//! header), then header lines `name: value`, an empty line, and the body.
//!
//! Checked: nothing panics; an answer has one outcome per host; a rate-limit wait is at most
//! `MAX_RATE_LIMIT_WAIT`; no 8-character run of the key is in any message.
#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use libfuzzer_sys::fuzz_target;
use sitetrail::classify::http::{Answer, AnswerContext, MAX_RATE_LIMIT_WAIT};
use sitetrail::classify::secret::{ApiKey, Secrets};
use sitetrail::classify::{ollama, openai, ClassifyError};

const KEY: &str = "sk-fuzz-SECRET-7c1d2e9b";

fn key_in(form: u32) -> String {
    match form % 6 {
        0 => KEY.to_owned(),
        1 => KEY.to_uppercase(),
        2 => KEY.chars().map(|c| format!("\\u{:04x}", c as u32)).collect(),
        3 => KEY.bytes().map(|b| format!("%{b:02x}")).collect(),
        4 => KEY[..12].to_owned(),
        _ => KEY[KEY.len() - 12..].to_owned(),
    }
}

fn leaks(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    let key: Vec<char> = KEY.to_ascii_lowercase().chars().collect();
    key.windows(8)
        .any(|w| text.contains(&w.iter().collect::<String>()))
}

fuzz_target!(|data: &[u8]| {
    let (meta, rest) = split_line(data);
    let meta = String::from_utf8_lossy(meta);
    let mut words = meta.split_whitespace();
    let status = words
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let (mut ollama_answer, mut json_object, mut truncated, mut key_at, mut location) =
        (false, false, false, None, false);
    for w in words {
        match w {
            "o" => ollama_answer = true,
            "j" => json_object = true,
            "t" => truncated = true,
            "L" => location = true,
            _ => {
                if let Some((at, form)) = w.strip_prefix('k').and_then(|k| k.split_once(':')) {
                    key_at = at.parse::<usize>().ok().zip(form.parse::<u32>().ok());
                }
            }
        }
    }
    let mut headers = HeaderMap::new();
    let mut rest = rest;
    loop {
        let (line, after) = split_line(rest);
        rest = after;
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(line[..colon].trim_ascii()),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) {
            headers.append(name, value);
        }
    }
    if location {
        if let Ok(v) = HeaderValue::from_str(&format!("http://x.example/{KEY}")) {
            headers.insert(http::header::LOCATION, v);
        }
    }
    let mut body = rest.to_vec();
    if let Some((at, form)) = key_at {
        let at = at.min(body.len());
        body.splice(at..at, key_in(form).into_bytes());
    }

    let key = ApiKey::new(KEY);
    let secrets = Secrets::new(key.as_ref(), None);
    let endpoint = url::Url::parse("http://127.0.0.1:9/v1/chat/completions").unwrap();
    let ctx = AnswerContext {
        provider: "openai",
        endpoint: &endpoint,
        secrets: &secrets,
        now: chrono::DateTime::from_timestamp(1_750_000_000, 0).unwrap(),
    };
    let answer = Answer {
        status,
        headers: &headers,
        body: &body,
        truncated,
    };
    let domains: Vec<String> = ["a.example", "xn--mnchen-3ya.example", "b.example"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let result = if ollama_answer {
        ollama::read_answer(&ctx, &answer, &domains).map(Some)
    } else {
        openai::read_answer(&ctx, &answer, &domains, json_object)
    };
    match result {
        Ok(Some(outcomes)) => {
            assert_eq!(outcomes.len(), domains.len(), "one outcome per host");
            for o in outcomes {
                if let Err(m) = o {
                    assert!(!leaks(&m), "the key leaked: {m}");
                }
            }
        }
        Ok(None) => assert!(
            !ollama_answer && !json_object,
            "only a json_schema request is asked again"
        ),
        Err(e) => {
            if let ClassifyError::RateLimited {
                retry_after: Some(d), ..
            } = &e
            {
                assert!(*d <= MAX_RATE_LIMIT_WAIT, "wait {d:?}");
            }
            let shown = e.to_string();
            assert!(!leaks(&shown), "the key leaked: {shown}");
        }
    }
});

fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
