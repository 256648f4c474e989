//! A browser's remote protocol over a WebSocket on 127.0.0.1, for what the DevTools HTTP endpoints
//! cannot do: Chromium's DevTools protocol on one tab (`Runtime.evaluate`, a real mouse click with
//! `Input.dispatchMouseEvent`) and Firefox's WebDriver BiDi (`browsingContext.navigate`,
//! `script.evaluate`). Both are JSON commands with an `id`, answered by a message with the same
//! `id`, among events.
//!
//! The WebSocket client is the least RFC 6455 needs for a local test: the upgrade request, masked
//! text frames out, unmasked frames in (fragmented ones joined, pings answered). No TLS, no
//! extensions. Self-contained (no `crate::support`), so `benches/limits.rs` can include it.

#![allow(dead_code)] // shared by the tests and the bench; each uses part of it

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A WebSocket client connection.
pub struct WebSocket {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl WebSocket {
    /// Connects to `ws://127.0.0.1:PORT/PATH`.
    pub fn connect(url: &str) -> std::io::Result<WebSocket> {
        let rest = url
            .strip_prefix("ws://")
            .ok_or_else(|| std::io::Error::other(format!("not a ws:// URL: {url}")))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let stream = TcpStream::connect(authority)?;
        stream.set_nodelay(true)?;
        let mut writer = stream.try_clone()?;
        // A fixed key: the server's accept value is not checked (a local test server).
        write!(
            writer,
            "GET /{path} HTTP/1.1\r\nHost: {authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )?;
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status)?;
        if !status.contains(" 101 ") {
            return Err(std::io::Error::other(format!("no WebSocket upgrade: {status}")));
        }
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
        }
        Ok(WebSocket { reader, writer })
    }

    fn send_frame(&mut self, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
        let mut frame = vec![0x80 | opcode];
        let len = payload.len();
        if len < 126 {
            frame.push(0x80 | len as u8);
        } else if len <= 0xffff {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
        let mask: [u8; 4] = fastrand::u32(..).to_be_bytes();
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.writer.write_all(&frame)
    }

    /// Sends one text message.
    pub fn send(&mut self, text: &str) -> std::io::Result<()> {
        self.send_frame(0x1, text.as_bytes())
    }

    /// The next text message, waiting at most `timeout` (None when none came in time).
    pub fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<String>> {
        self.reader
            .get_ref()
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            match self.reader.read_exact(&mut head) {
                Ok(()) => {}
                Err(e)
                    if message.is_empty()
                        && matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(e),
            }
            // A frame has begun: read the rest of it whatever the time.
            self.reader
                .get_ref()
                .set_read_timeout(Some(Duration::from_secs(30)))?;
            let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0f);
            let mut len = u64::from(head[1] & 0x7f);
            if len == 126 {
                let mut b = [0u8; 2];
                self.reader.read_exact(&mut b)?;
                len = u64::from(u16::from_be_bytes(b));
            } else if len == 127 {
                let mut b = [0u8; 8];
                self.reader.read_exact(&mut b)?;
                len = u64::from_be_bytes(b);
            }
            let mut payload = vec![0u8; len as usize];
            self.reader.read_exact(&mut payload)?;
            match opcode {
                0x8 => return Err(std::io::Error::other("the browser closed the WebSocket")),
                0x9 => self.send_frame(0xA, &payload)?,
                0xA => {}
                _ => {
                    message.extend_from_slice(&payload);
                    if fin {
                        return Ok(Some(String::from_utf8_lossy(&message).into_owned()));
                    }
                }
            }
        }
    }
}

/// Commands with an `id`, each waiting for its answer; the events that come meanwhile are kept.
pub struct Rpc {
    socket: WebSocket,
    next: u64,
    /// Events received and not yet taken, oldest first.
    pub events: Vec<Value>,
}

impl Rpc {
    /// Connects to `url` (a tab's `webSocketDebuggerUrl`, or Firefox's `ws://.../session`).
    pub fn connect(url: &str) -> std::io::Result<Rpc> {
        Ok(Rpc {
            socket: WebSocket::connect(url)?,
            next: 0,
            events: Vec::new(),
        })
    }

    /// Sends `method` with `params`; the answer's `result`, or its `error` (CDP) / `error` and
    /// `message` (BiDi) as an Err.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next += 1;
        let id = self.next;
        self.socket
            .send(&json!({"id": id, "method": method, "params": params}).to_string())
            .map_err(|e| format!("{method}: {e}"))?;
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("{method}: no answer within 60 s"));
            }
            let Some(text) = self.socket.recv(left).map_err(|e| format!("{method}: {e}"))? else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("{method}: {e}: {text}"))?;
            if v["id"].as_u64() == Some(id) {
                if v.get("error").is_some_and(|e| !e.is_null()) {
                    return Err(format!("{method}: {v}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Waits up to `timeout` for an event named `method` (one already received counts), and takes it.
    pub fn event(&mut self, method: &str, timeout: Duration) -> Option<Value> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
                return Some(self.events.remove(i));
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let text = self.socket.recv(left).ok()??;
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if v.get("method").is_some() {
                    self.events.push(v);
                }
            }
        }
    }
}

/// Chromium's DevTools protocol on one tab.
pub struct Tab {
    pub rpc: Rpc,
}

impl Tab {
    /// Attaches to the tab whose DevTools target id is `id`, on the browser's DevTools `port`.
    pub fn attach(port: u16, id: &str) -> std::io::Result<Tab> {
        Ok(Tab {
            rpc: Rpc::connect(&format!("ws://127.0.0.1:{port}/devtools/page/{id}"))?,
        })
    }

    /// The value of `expression` in the tab's page (awaited if it is a promise), as JSON.
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.rpc.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(e) = r.get("exceptionDetails") {
            return Err(format!("{expression}: {e}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// A left click with the mouse at the middle of the element `selector` (a real input event:
    /// a disabled button ignores it, as it would ignore a person's).
    pub fn click(&mut self, selector: &str) -> Result<(), String> {
        let at = self.eval(&format!(
            "(() => {{ const r = document.querySelector({selector:?}).getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ))?;
        let (x, y) = (at[0].as_f64().unwrap_or(0.0), at[1].as_f64().unwrap_or(0.0));
        for kind in ["mousePressed", "mouseReleased"] {
            self.rpc.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )?;
        }
        Ok(())
    }
}
