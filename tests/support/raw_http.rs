//! A hand-written HTTP server on 127.0.0.1 for answers wiremock cannot give: a connection reset or
//! closed before any answer, a body of hundreds of MiB streamed until the client hangs up.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::fake_ai::{answer_for, completion, user_message};

/// What the server does with one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Closes the connection as soon as it is accepted, without reading.
    CloseAtOnce,
    /// Reads the request, then closes without a byte of answer (EOF before a status line).
    CloseAfterRequest,
    /// Reads the request, then resets the connection (RST).
    ResetAfterRequest,
    /// Reads the request, sends half a status line, then resets.
    ResetMidStatusLine,
    /// Answers correctly (OpenAI shape), then closes.
    Answer,
    /// Streams a chunked 200 answer of `n` MiB of JSON-looking text, or until the client hangs up.
    HugeChunked(u64),
    /// Sends a 200 with `content-length` of `n` MiB and streams that many bytes.
    HugeSized(u64),
    /// Streams a chunked answer with this error status and `n` MiB of body.
    HugeError(u16, u64),
    /// Reads the whole request, writes these bytes as they are (anything, HTTP or not), closes
    /// its sending side and reads until the client hangs up: never a reset, so the client sees
    /// exactly these bytes and then the end.
    Raw(&'static str),
}

/// The server: its address, and what it saw.
#[derive(Clone)]
pub struct RawServer {
    pub addr: SocketAddr,
    /// Connections accepted.
    pub connections: Arc<AtomicUsize>,
    /// Requests read in full.
    pub requests: Arc<AtomicUsize>,
    /// Bytes of answer the server managed to write (before the client hung up).
    pub written: Arc<AtomicU64>,
}

impl RawServer {
    /// Starts a server whose `i`-th connection (from 0) gets `plan(i)`.
    pub async fn start(plan: impl Fn(usize) -> Behaviour + Send + Sync + 'static) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let server = RawServer {
            addr: listener.local_addr().expect("addr"),
            connections: Arc::default(),
            requests: Arc::default(),
            written: Arc::default(),
        };
        let plan = Arc::new(plan);
        let s = server.clone();
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let i = s.connections.fetch_add(1, Ordering::SeqCst);
                let behaviour = plan(i);
                let s = s.clone();
                tokio::spawn(async move { s.serve(sock, behaviour).await });
            }
        });
        server
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    async fn serve(&self, mut sock: TcpStream, behaviour: Behaviour) {
        if behaviour == Behaviour::CloseAtOnce {
            reset(&sock);
            return;
        }
        let Some(body) = read_request(&mut sock).await else {
            return;
        };
        self.requests.fetch_add(1, Ordering::SeqCst);
        match behaviour {
            Behaviour::CloseAtOnce => {}
            Behaviour::CloseAfterRequest => {
                let _ = sock.shutdown().await;
            }
            Behaviour::ResetAfterRequest => {
                reset(&sock);
            }
            Behaviour::ResetMidStatusLine => {
                let _ = sock.write_all(b"HTTP/1.1 2").await;
                let _ = sock.flush().await;
                reset(&sock);
            }
            Behaviour::Answer => {
                let hosts: Vec<String> = serde_json::from_slice::<Value>(&body)
                    .map(|v| user_message(&v).lines().map(str::to_owned).collect())
                    .unwrap_or_default();
                let json = completion(&answer_for(&hosts)).to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    json.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(json.as_bytes()).await;
                let _ = sock.shutdown().await;
            }
            Behaviour::HugeChunked(mib) => self.stream(&mut sock, 200, mib, true).await,
            Behaviour::HugeSized(mib) => self.stream(&mut sock, 200, mib, false).await,
            Behaviour::HugeError(code, mib) => self.stream(&mut sock, code, mib, true).await,
            Behaviour::Raw(answer) => {
                let _ = sock.write_all(answer.as_bytes()).await;
                let _ = sock.shutdown().await;
                let mut rest = [0u8; 16 * 1024];
                let drain = async { while matches!(sock.read(&mut rest).await, Ok(n) if n > 0) {} };
                let _ = tokio::time::timeout(Duration::from_secs(10), drain).await;
            }
        }
    }

    /// Writes a `status` answer of `mib` MiB (`{"error": {"message": "aaaa…`), counting the
    /// bytes that got out, until done or the client hangs up.
    async fn stream(&self, sock: &mut TcpStream, status: u16, mib: u64, chunked: bool) {
        let total = mib * 1024 * 1024;
        let framing = if chunked {
            "transfer-encoding: chunked".to_owned()
        } else {
            format!("content-length: {total}")
        };
        let head =
            format!("HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\n{framing}\r\n\r\n");
        if sock.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let mut piece = vec![b'a'; 64 * 1024];
        piece[..22].copy_from_slice(br#"{"error":{"message":"a"#);
        let mut sent = 0u64;
        while sent < total {
            let mut out = Vec::with_capacity(piece.len() + 16);
            if chunked {
                out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            }
            out.extend_from_slice(&piece);
            if chunked {
                out.extend_from_slice(b"\r\n");
            }
            if sock.write_all(&out).await.is_err() {
                return;
            }
            sent += piece.len() as u64;
            self.written.fetch_add(piece.len() as u64, Ordering::SeqCst);
            piece[..22].fill(b'a');
        }
        if chunked {
            let _ = sock.write_all(b"0\r\n\r\n").await;
        }
    }
}

/// Makes dropping `sock` reset the connection (RST) instead of closing it. A zero linger time
/// never blocks, which is what tokio's deprecation of `set_linger` is about.
#[allow(deprecated)]
fn reset(sock: &TcpStream) {
    let _ = sock.set_linger(Some(Duration::ZERO));
}

/// Reads one request (head, then `content-length` bytes of body); `None` if the client went away.
async fn read_request(sock: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf[head_end..head_end + len].to_vec())
}
