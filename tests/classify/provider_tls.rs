//! A provider whose TLS certificate cannot be verified (issue 8, item 6): a real TLS server on
//! 127.0.0.1 with a self-signed certificate, the real `sitetrail` binary with verification on.
//! The call is refused before anything is sent, and the worker pauses for the user.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_rustls::rustls;

use sitetrail::worker::state::PauseKind;

use crate::cli::worker::*;
use crate::support::fake_ai::*;
use crate::support::{run_ok, visit, TempDb};

/// A TLS server for `localhost` and 127.0.0.1 with a fresh self-signed certificate. Counts TLS
/// handshakes started and requests bytes received after a completed handshake.
struct SelfSignedServer {
    port: u16,
    handshakes: Arc<AtomicUsize>,
    plaintext_reads: Arc<AtomicUsize>,
}

impl SelfSignedServer {
    async fn start() -> SelfSignedServer {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("self-signed certificate");
        let cert = certified.cert.der().clone();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
        let config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = SelfSignedServer {
            port: listener.local_addr().unwrap().port(),
            handshakes: Arc::default(),
            plaintext_reads: Arc::default(),
        };
        let (handshakes, reads) = (server.handshakes.clone(), server.plaintext_reads.clone());
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                handshakes.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                let reads = reads.clone();
                tokio::spawn(async move {
                    if let Ok(mut tls) = acceptor.accept(sock).await {
                        let mut buf = [0u8; 1024];
                        if matches!(tls.read(&mut buf).await, Ok(n) if n > 0) {
                            reads.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        server
    }

    fn base_url(&self) -> String {
        format!("https://127.0.0.1:{}/v1", self.port)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_certificate_pauses_for_the_user_and_sends_nothing() {
    let server = SelfSignedServer::start().await;
    let db = TempDb::new();
    let out = isolated(&db.path)
        .env("SITETRAIL_API_KEY", KEY)
        .args([
            "classify",
            "--provider",
            "openai",
            "--base-url",
            &server.base_url(),
            "x.example",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("certificate was refused"), "{err}");
    assert!(!err.contains("offline"), "{err}");

    let store = db.open();
    visit(&store, "https://one.example/");
    let mut w = Running::start(
        openai_worker(&db.path, &server.base_url(), &[]),
        db.dir.path().join("log"),
    );
    w.wait_alive("paused", || {
        store.worker_state().unwrap().paused_kind == Some(PauseKind::NeedsUser)
    });
    let status: Value = serde_json::from_str(&run_ok(isolated(&db.path).args(["status", "--json"]))).unwrap();
    let text = run_ok(isolated(&db.path).arg("status"));
    let log = w.stop();
    assert_eq!(status["paused_kind"], "needs_user", "{status}");
    let reason = status["paused_reason"].as_str().unwrap();
    assert!(
        reason.contains("certificate was refused") && reason.contains("sitetrail resume"),
        "{reason}"
    );
    assert!(text.contains("until you run `sitetrail resume`"), "{text}");
    assert_eq!(jobs(&store)[0].2, 0, "a refused certificate costs no attempt");
    assert!(
        server.handshakes.load(Ordering::SeqCst) >= 2,
        "both tried to connect"
    );
    assert_eq!(
        server.plaintext_reads.load(Ordering::SeqCst),
        0,
        "no request got through the refused handshake"
    );
    assert!(!log.contains(KEY));
}
