//! HTTPS served by the hub itself (`--tls-cert`, `--tls-key`): rustls, HTTP/1.1, the certificate
//! reloaded when its files change, so a renewal (e.g. by an ACME client) needs no restart.
//!
//! Invariants: a certificate and key that do not load at start stop the hub (exit 2, the
//! message says which file and why); a renewal that does not load keeps the certificate in use
//! and is logged (once per change of the files), never a hub without TLS. A connection's
//! handshake counts against the header timeout, so a client that opens connections and sends
//! nothing holds nothing longer than one that sends no request.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// The hub's TLS: the acceptor of the certificate in use, and where its files are.
pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    acceptor: RwLock<TlsAcceptor>,
    /// The files' modification times when they were last read.
    stamp: RwLock<(Option<SystemTime>, Option<SystemTime>)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Reads a PEM certificate chain and private key into a server configuration (HTTP/1.1 only).
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<rustls::ServerConfig, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the certificate file is not PEM certificates: {e}"))?;
    if chain.is_empty() {
        return Err("the certificate file holds no certificate (-----BEGIN CERTIFICATE-----)".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("the key file holds no PEM private key: {e}"))?;
    let mut config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("the certificate and key do not make a TLS identity: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn load(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let cert_pem = std::fs::read(cert).map_err(|e| format!("cannot read {}: {e}", cert.display()))?;
    let key_pem = std::fs::read(key).map_err(|e| format!("cannot read {}: {e}", key.display()))?;
    Ok(TlsAcceptor::from(Arc::new(server_config(&cert_pem, &key_pem)?)))
}

impl Tls {
    /// Loads the certificate and key (blocking file reads: call it before serving, or on the
    /// blocking pool).
    pub fn load(cert: &Path, key: &Path) -> Result<Arc<Tls>, String> {
        let stamp = (modified(cert), modified(key));
        let acceptor = load(cert, key)?;
        Ok(Arc::new(Tls {
            cert: cert.to_owned(),
            key: key.to_owned(),
            acceptor: RwLock::new(acceptor),
            stamp: RwLock::new(stamp),
        }))
    }

    /// The acceptor of the certificate in use.
    pub fn acceptor(&self) -> TlsAcceptor {
        self.acceptor
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reloads the certificate if either file changed since it was read; true if it did.
    fn reload_if_changed(&self) -> bool {
        let now = (modified(&self.cert), modified(&self.key));
        {
            let mut stamp = self.stamp.write().unwrap_or_else(PoisonError::into_inner);
            if *stamp == now {
                return false;
            }
            // Tried once per change: a broken renewal is logged once, not every interval.
            *stamp = now;
        }
        match load(&self.cert, &self.key) {
            Ok(acceptor) => {
                *self.acceptor.write().unwrap_or_else(PoisonError::into_inner) = acceptor;
                tracing::info!("TLS certificate reloaded");
                true
            }
            Err(why) => {
                tracing::warn!(%why, "the changed TLS certificate does not load: keeping the one in use");
                false
            }
        }
    }

    /// Looks at the files every `every` and reloads the certificate when they change, until
    /// the task is dropped.
    pub async fn watch(self: Arc<Self>, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            let this = self.clone();
            let _ = tokio::task::spawn_blocking(move || this.reload_if_changed()).await;
        }
    }
}
