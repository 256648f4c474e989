//! The hub serving HTTPS itself (`--tls-cert`, `--tls-key`) with a certificate from a private
//! certificate authority the test makes (rcgen): a device that trusts that authority
//! (`--ca-file`, kept in its link) syncs; one that does not refuses with a plain message and
//! sends nothing; a renewed certificate is served without a restart, and a broken renewal keeps
//! the one in use.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use sitetrail::sync::client::{Transport, Trust};
use sitetrail::sync::engine;
use sitetrail::ErrorKind;

use crate::support::{postgres, run_hub, Hub};
use crate::sync_support::Device;

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A certificate authority, and a certificate it signed for `localhost` and 127.0.0.1, as PEM
/// files in `dir`: (ca, cert, key).
fn pki(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("Sitetrail test CA {name}"));
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let paths = (
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-cert.pem")),
        dir.join(format!("{name}-key.pem")),
    );
    std::fs::write(&paths.0, pem("CERTIFICATE", ca.der())).unwrap();
    std::fs::write(&paths.1, pem("CERTIFICATE", cert.der())).unwrap();
    std::fs::write(&paths.2, pem("PRIVATE KEY", &key.serialize_der())).unwrap();
    paths
}

fn trusting(ca: Option<&Path>) -> Transport {
    Transport {
        trust: Trust::load(ca).unwrap(),
        ..Transport::default()
    }
}

fn tls_hub(url: &str, cert: &Path, key: &Path, extra: &[&str]) -> Hub {
    let mut args = vec![
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Hub::start_with(url, &args, &[])
}

#[test]
fn a_device_that_trusts_the_hubs_authority_syncs_and_one_that_does_not_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = pki(dir.path(), "one");
    let pg = postgres::shared();
    let db = pg.create_database("tls");
    let hub = tls_hub(&pg.url(&db), &cert, &key, &[]);
    assert!(hub.url.starts_with("https://127.0.0.1:"), "{}", hub.url);

    let a = Device::new();
    let (_, recovery) = a
        .block_on(engine::setup_with(
            &a.store,
            &a.key_dir,
            &hub.url,
            Some("a"),
            trusting(Some(&ca)),
        ))
        .unwrap();
    let link = a.store.with_conn(engine::get_link).unwrap().unwrap();
    assert_eq!(
        link.ca_file.as_deref(),
        Some(ca.to_str().unwrap()),
        "kept in the link"
    );
    a.record(0, 5);
    a.sync();

    // Without the authority: refused in plain words, nothing sent, nothing linked.
    let b = Device::new();
    let e = b
        .block_on(engine::join_with(
            &b.store,
            &b.key_dir,
            &hub.url,
            Some("b"),
            &recovery,
            trusting(None),
        ))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NeedsUser, "{e}");
    let said = e.to_string();
    assert!(
        said.contains("TLS certificate is not trusted")
            && said.contains("--ca-file")
            && said.contains("nothing was sent"),
        "{said}"
    );
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM device"), "1");
    assert!(b.store.with_conn(engine::get_link).unwrap().is_none());

    // With it: joins and gets the other device's visits.
    b.block_on(engine::join_with(
        &b.store,
        &b.key_dir,
        &hub.url,
        Some("b"),
        &recovery,
        trusting(Some(&ca)),
    ))
    .unwrap();
    while b.sync().pulled > 0 {}
    assert_eq!(b.urls(), a.urls());
    assert_eq!(b.urls().len(), 5);

    // Plain HTTP to the HTTPS port gets no answer: the login is never read in clear.
    let plain = hub.url.replace("https://", "http://");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let answer = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{plain}/v1/health"))
            .timeout(Duration::from_secs(15))
            .send()
            .await
    });
    assert!(answer.is_err(), "{answer:?}");
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart_and_a_broken_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = pki(dir.path(), "old");
    let (new_ca, new_cert, new_key) = pki(dir.path(), "new");
    let pg = postgres::shared();
    let db = pg.create_database("tls_reload");
    let hub = tls_hub(&pg.url(&db), &cert, &key, &["--tls-reload-interval", "1"]);

    // A device that trusts only the new authority cannot link yet.
    let a = Device::new();
    let link = |a: &Device| {
        a.block_on(engine::setup_with(
            &a.store,
            &a.key_dir,
            &hub.url,
            Some("a"),
            trusting(Some(&new_ca)),
        ))
    };
    assert_eq!(link(&a).unwrap_err().kind(), ErrorKind::NeedsUser);

    // The renewal: both files replaced, the hub keeps running.
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match link(&a) {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                assert_eq!(e.kind(), ErrorKind::NeedsUser, "{e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the renewed certificate was not served: {e}\n{}", hub.log()),
        }
    }
    assert!(hub.log().contains("TLS certificate reloaded"), "{}", hub.log());

    // A broken renewal is logged and the certificate in use stays.
    std::fs::write(&cert, "not a certificate").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !hub.log().contains("does not load") {
        assert!(Instant::now() < deadline, "{}", hub.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    a.record(0, 2);
    a.sync();
}

#[test]
fn a_certificate_that_does_not_load_stops_the_hub_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, _) = pki(dir.path(), "x");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "nothing here").unwrap();
    let pg = postgres::shared();
    let db = pg.create_database("tls_bad");
    let url = pg.url(&db);
    for (c, k) in [(&cert, &garbage), (&garbage, &cert)] {
        let (code, _, err) = run_hub(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--tls-cert",
                c.to_str().unwrap(),
                "--tls-key",
                k.to_str().unwrap(),
            ],
            &[("SITETRAIL_HUB_DATABASE_URL", url.as_str())],
        );
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("--tls-cert/--tls-key"), "{err}");
    }
    // One without the other is a usage error.
    let (code, _, err) = run_hub(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().unwrap(),
        ],
        &[("SITETRAIL_HUB_DATABASE_URL", url.as_str())],
    );
    assert_eq!(code, 2, "{err}");
}
