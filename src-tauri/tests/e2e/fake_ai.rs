//! A fake OpenAI-compatible server on 127.0.0.1: answers `POST /chat/completions` with the JSON
//! shape the openai provider asks for (`{"results": [{"domain", "category", "confidence"}]}` in
//! `choices[0].message.content`), classifying each host of the user message from a fixed table.
//! Real HTTP over a real socket; one thread; `Connection: close` on every answer.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// The running server.
pub struct FakeAi {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    /// Chat requests answered.
    pub calls: Arc<AtomicUsize>,
    /// Every `Authorization` header received.
    pub auth: Arc<Mutex<Vec<String>>>,
}

impl FakeAi {
    /// Starts the server; hosts not in `answers` get `other`.
    pub fn start(answers: &[(&str, &str)]) -> FakeAi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake AI server");
        let port = listener.local_addr().expect("addr").port();
        let answers: HashMap<String, String> = answers
            .iter()
            .map(|(d, c)| (d.to_string(), c.to_string()))
            .collect();
        let calls = Arc::new(AtomicUsize::new(0));
        let auth = Arc::new(Mutex::new(Vec::new()));
        let (counter, seen) = (calls.clone(), auth.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = serve(stream, &answers, &counter, &seen);
            }
        });
        FakeAi {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            calls,
            auth,
        }
    }
}

fn serve(
    stream: TcpStream,
    answers: &HashMap<String, String>,
    calls: &AtomicUsize,
    auth: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            if k.eq_ignore_ascii_case("authorization") {
                if let Ok(mut a) = auth.lock() {
                    a.push(v.trim().to_owned());
                }
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let (status, answer) = if request_line.starts_with("POST") && request_line.contains("/chat/completions") {
        calls.fetch_add(1, Ordering::SeqCst);
        (200, completion(&body, answers))
    } else {
        (
            404,
            json!({"error": {"message": "not found", "code": "not_found"}}),
        )
    };
    let text = answer.to_string();
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    out.flush()
}

fn completion(body: &[u8], answers: &HashMap<String, String>) -> Value {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let user = request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    let results: Vec<Value> = user
        .lines()
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|host| {
            let category = answers.get(host).map(String::as_str).unwrap_or("other");
            json!({"domain": host, "category": category, "confidence": 0.9})
        })
        .collect();
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": request["model"],
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": json!({"results": results}).to_string()},
            "finish_reason": "stop"
        }]
    })
}
