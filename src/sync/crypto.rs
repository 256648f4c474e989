//! The account secret and everything derived from it (docs/SYNC.md, "The account secret").
//!
//! One secret per account: 32 random bytes, shown once as a 24-word recovery key (BIP-39 English,
//! with its checksum). HKDF-SHA256 (salt `sitetrail-sync-v1`) derives the account id, the hub
//! login, the record key (XChaCha20-Poly1305) and the domain-token key (HMAC-SHA256). A record's
//! routing fields are bound in as associated data, so a record moved or replayed elsewhere fails
//! to open. The secret and the keys are zeroed when dropped and never printed (`Debug` says
//! `***`).

use chacha20poly1305::aead::{Aead, KeyInit, OsRng, Payload};
use chacha20poly1305::{AeadCore, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;
use zeroize::{Zeroize, ZeroizeOnDrop};

use sitetrail_sync_wire::{Login, Series, Token};

/// The salt of every derivation.
const SALT: &[u8] = b"sitetrail-sync-v1";
/// The first bytes of every record's associated data.
const AAD_PREFIX: &[u8] = b"sitetrail-record-v1";
/// Nonce length of XChaCha20-Poly1305.
pub const NONCE_BYTES: usize = 24;

/// Why a recovery key was refused (the words themselves are never repeated).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not 24 words of the list, or a checksum that does not match (a mistyped word).
    #[error("{0}")]
    Malformed(String),
}

/// The account secret. Zeroed on drop; its `Debug` shows nothing of it.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct AccountSecret([u8; 32]);

impl std::fmt::Debug for AccountSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccountSecret(***)")
    }
}

impl AccountSecret {
    /// A new random secret (the operating system's generator).
    pub fn generate() -> AccountSecret {
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&key);
        AccountSecret(bytes)
    }

    /// The 24-word recovery key.
    pub fn recovery_key(&self) -> String {
        // 32 bytes is a valid BIP-39 entropy length: this cannot fail.
        bip39::Mnemonic::from_entropy(&self.0)
            .map(|m| m.to_string())
            .unwrap_or_default()
    }

    /// Reads a recovery key: 24 words separated by any white space, any case.
    pub fn from_recovery_key(text: &str) -> Result<AccountSecret, KeyError> {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        if words.len() != 24 {
            return Err(KeyError::Malformed(format!(
                "a recovery key is 24 words; this one has {}",
                words.len()
            )));
        }
        let m = bip39::Mnemonic::parse_in(bip39::Language::English, words.join(" ")).map_err(|e| {
            KeyError::Malformed(match e {
                bip39::Error::UnknownWord(i) => {
                    format!("word {} of the recovery key is not a recovery-key word", i + 1)
                }
                bip39::Error::InvalidChecksum => {
                    "the recovery key's words do not fit together (a word is mistyped)".to_owned()
                }
                _ => "this is not a recovery key".to_owned(),
            })
        })?;
        let entropy = m.to_entropy();
        let bytes: [u8; 32] = entropy
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::Malformed("a recovery key is 24 words".into()))?;
        Ok(AccountSecret(bytes))
    }

    /// The secret as hex, for the keystore only (the keyring entry or the key file).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads [`AccountSecret::to_hex`].
    pub fn from_hex(text: &str) -> Option<AccountSecret> {
        let text = text.trim();
        if text.len() != 64 || !text.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(AccountSecret(bytes))
    }

    fn derive<const N: usize>(&self, info: &str) -> [u8; N] {
        let hk = Hkdf::<Sha256>::new(Some(SALT), &self.0);
        let mut out = [0u8; N];
        // N is at most 32 here, far below HKDF-SHA256's limit of 255 * 32 bytes.
        let _ = hk.expand(info.as_bytes(), &mut out);
        out
    }

    /// Everything a device needs, derived once.
    pub fn keys(&self) -> AccountKeys {
        let mut id: [u8; 16] = self.derive("account-id");
        // A version-8 (custom) UUID: version and variant bits set.
        id[6] = (id[6] & 0x0f) | 0x80;
        id[8] = (id[8] & 0x3f) | 0x80;
        AccountKeys {
            account_id: Uuid::from_bytes(id),
            login: Login::new(self.derive("login")),
            record_key: RecordKey(self.derive("record-key")),
            token_key: RecordKey(self.derive("domain-token")),
        }
    }
}

/// A 32-byte key, zeroed on drop.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct RecordKey([u8; 32]);

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordKey(***)")
    }
}

/// The account id, login and keys derived from the secret.
#[derive(Clone, Debug)]
pub struct AccountKeys {
    /// The account's id on the hub.
    pub account_id: Uuid,
    /// The hub login (the hub keeps its SHA-256).
    pub login: Login,
    record_key: RecordKey,
    token_key: RecordKey,
}

/// Where a record sits: what its associated data binds.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    /// The device whose series it is in.
    pub device_id: Uuid,
    /// The series.
    pub series: &'a Series,
    /// Its index in the series.
    pub idx: u64,
    /// Its id.
    pub record_id: Uuid,
}

/// A record that did not open: tampered with, moved, or of another account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a record does not open with this account's key (changed, moved or not this account's)")]
pub struct OpenError;

impl AccountKeys {
    fn aad(&self, place: &Place<'_>) -> Vec<u8> {
        let series = place.series.as_str().as_bytes();
        let mut aad = Vec::with_capacity(AAD_PREFIX.len() + 16 + 16 + 1 + series.len() + 8 + 16);
        aad.extend_from_slice(AAD_PREFIX);
        aad.extend_from_slice(self.account_id.as_bytes());
        aad.extend_from_slice(place.device_id.as_bytes());
        // Series names are at most 32 bytes (the wire crate checks).
        aad.push(u8::try_from(series.len()).unwrap_or(u8::MAX));
        aad.extend_from_slice(series);
        aad.extend_from_slice(&place.idx.to_be_bytes());
        aad.extend_from_slice(place.record_id.as_bytes());
        aad
    }

    /// `nonce ‖ ciphertext` of `plain` at `place`.
    pub fn seal(&self, place: &Place<'_>, plain: &[u8]) -> Vec<u8> {
        let cipher = XChaCha20Poly1305::new((&self.record_key.0).into());
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = self.aad(place);
        // Encryption fails only for plaintexts past 256 GiB; records are capped far below.
        let sealed = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plain,
                    aad: &aad,
                },
            )
            .unwrap_or_default();
        let mut out = Vec::with_capacity(NONCE_BYTES + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`AccountKeys::seal`] made at the same place.
    pub fn open(&self, place: &Place<'_>, payload: &[u8]) -> Result<Vec<u8>, OpenError> {
        if payload.len() < NONCE_BYTES + 16 {
            return Err(OpenError);
        }
        let (nonce, sealed) = payload.split_at(NONCE_BYTES);
        let cipher = XChaCha20Poly1305::new((&self.record_key.0).into());
        let aad = self.aad(place);
        cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: &aad,
                },
            )
            .map_err(|_| OpenError)
    }

    /// The blinded token of `domain` for hub claims: HMAC-SHA256 under the domain-token key, so
    /// the hub sees an opaque value, the same on every device of the account.
    pub fn domain_token(&self, domain: &str) -> Option<Token> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.token_key.0).ok()?;
        mac.update(domain.as_bytes());
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Token::new(&hex).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(series: &Series) -> Place<'_> {
        Place {
            device_id: Uuid::from_u128(7),
            series,
            idx: 3,
            record_id: Uuid::from_u128(9),
        }
    }

    #[test]
    fn the_recovery_key_round_trips_and_names_the_same_account() {
        let s = AccountSecret::generate();
        let words = s.recovery_key();
        assert_eq!(words.split(' ').count(), 24);
        let back = AccountSecret::from_recovery_key(&format!("  {}\n", words.to_uppercase())).unwrap();
        assert_eq!(back.keys().account_id, s.keys().account_id);
        assert_eq!(back.keys().login, s.keys().login);
        assert_eq!(
            AccountSecret::from_hex(&s.to_hex()).unwrap().keys().account_id,
            s.keys().account_id
        );
        assert_ne!(AccountSecret::generate().keys().account_id, s.keys().account_id);
        assert_eq!(s.keys().account_id.get_version_num(), 8);
    }

    #[test]
    fn a_mistyped_or_short_key_is_told_apart_and_not_echoed() {
        let s = AccountSecret::generate();
        let words = s.recovery_key();
        let mut list: Vec<&str> = words.split(' ').collect();
        let e = AccountSecret::from_recovery_key(&list[..23].join(" ")).unwrap_err();
        assert!(e.to_string().contains("24 words"), "{e}");
        list[5] = "notaword";
        let e = AccountSecret::from_recovery_key(&list.join(" ")).unwrap_err();
        assert!(e.to_string().contains("word 6"), "{e}");
        assert!(!e.to_string().contains("notaword"));
        // Swapping two words keeps every word valid but breaks the checksum (almost always).
        let mut swapped: Vec<&str> = words.split(' ').collect();
        swapped.swap(0, 23);
        if swapped.join(" ") != words {
            if let Err(e) = AccountSecret::from_recovery_key(&swapped.join(" ")) {
                assert!(e.to_string().contains("mistyped"), "{e}");
            }
        }
        assert_eq!(format!("{s:?}"), "AccountSecret(***)");
        assert!(!format!("{:?}", s.keys()).contains(&s.to_hex()));
    }

    #[test]
    fn a_record_opens_only_at_its_own_place_and_unchanged() {
        let keys = AccountSecret::generate().keys();
        let series = Series::new("ops").unwrap();
        let p = place(&series);
        let sealed = keys.seal(&p, b"hello");
        assert_eq!(keys.open(&p, &sealed).unwrap(), b"hello");
        for moved in [
            Place { idx: 4, ..p },
            Place {
                device_id: Uuid::from_u128(8),
                ..p
            },
            Place {
                record_id: Uuid::from_u128(10),
                ..p
            },
        ] {
            assert_eq!(keys.open(&moved, &sealed), Err(OpenError));
        }
        let other = Series::new("opt").unwrap();
        assert_eq!(keys.open(&place(&other), &sealed), Err(OpenError));
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(keys.open(&p, &flipped), Err(OpenError));
        assert_eq!(AccountSecret::generate().keys().open(&p, &sealed), Err(OpenError));
        assert_eq!(keys.open(&p, &sealed[..10]), Err(OpenError));
    }

    #[test]
    fn tokens_are_stable_per_account_and_blind() {
        let s = AccountSecret::generate();
        let a = s.keys().domain_token("example.com").unwrap();
        assert_eq!(a, s.keys().domain_token("example.com").unwrap());
        assert_ne!(a, s.keys().domain_token("example.org").unwrap());
        assert_ne!(
            a,
            AccountSecret::generate()
                .keys()
                .domain_token("example.com")
                .unwrap()
        );
        assert!(!a.as_str().contains("example"));
    }
}
