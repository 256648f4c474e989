//! Website icons: stored locally (`website_favicon`), small raster images only, served to the UI.
//!
//! Icons come only from the browsers' own icon databases, imported with their history
//! (`import::favicons`); nothing is ever fetched from the network. An image is kept only if its
//! bytes are a PNG, ICO, JPEG, GIF or WebP ([`sniff`]) and at most [`MAX_ICON_BYTES`]: SVG and
//! anything else is left out (the UI shows them as `data:` images under a strict CSP).

use rusqlite::{named_params, Connection, Transaction};

use crate::error::Result;
use crate::ids::WebsiteId;
use crate::store::Store;
use crate::time::Timestamp;

/// Largest icon kept (bytes); the table refuses larger ones too.
pub const MAX_ICON_BYTES: usize = 16 * 1024;

/// Most domains one [`list_favicons`] call looks up.
pub const MAX_DOMAINS: usize = 500;

/// A website's icon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Favicon {
    /// The website's domain.
    pub domain: String,
    /// `image/png`, `image/x-icon`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: &'static str,
    /// The image.
    pub data: Vec<u8>,
}

/// The image type of `head` (an image's first bytes), if it is one kept.
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    match head {
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => Some("image/png"),
        [0, 0, 1, 0, ..] => Some("image/x-icon"),
        [0xff, 0xd8, 0xff, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

fn known_mime(mime: &str) -> &'static str {
    [
        "image/png",
        "image/x-icon",
        "image/jpeg",
        "image/gif",
        "image/webp",
    ]
    .into_iter()
    .find(|m| *m == mime)
    .unwrap_or("image/png")
}

/// Stores `data` as the icon of `website` unless it has one (true if stored), and records where
/// the browser had it from in `website.favicon_url`. `data` must have passed [`sniff`].
pub fn insert_favicon_in(
    tx: &Transaction<'_>,
    website: WebsiteId,
    mime: &str,
    data: &[u8],
    icon_url: Option<&str>,
    now: Timestamp,
) -> Result<bool> {
    if data.is_empty() || data.len() > MAX_ICON_BYTES {
        return Ok(false);
    }
    let stored = tx
        .prepare_cached(
            r#"INSERT INTO website_favicon (website_id, mime, data, updated_at)
               VALUES (:w, :mime, :data, :now)
               ON CONFLICT (website_id) DO NOTHING"#,
        )?
        .execute(named_params! { ":w": website, ":mime": known_mime(mime), ":data": data, ":now": now })?
        == 1;
    if stored {
        if let Some(url) = icon_url {
            tx.prepare_cached(
                r#"UPDATE website SET favicon_url = :url WHERE id = :w AND favicon_url IS NULL"#,
            )?
            .execute(named_params! { ":w": website, ":url": crate::error::truncate_chars(url, 2_000) })?;
        }
    }
    Ok(stored)
}

/// The icons of those of `domains` (at most [`MAX_DOMAINS`]) that have one.
pub fn list_favicons(conn: &Connection, domains: &[String]) -> Result<Vec<Favicon>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT f.mime, f.data FROM website w JOIN website_favicon f ON f.website_id = w.id
           WHERE w.domain = :d"#,
    )?;
    let mut out = Vec::new();
    for d in domains.iter().take(MAX_DOMAINS) {
        let mut rows = stmt.query(named_params! { ":d": d })?;
        if let Some(r) = rows.next()? {
            let mime: String = r.get("mime")?;
            out.push(Favicon {
                domain: d.clone(),
                mime: known_mime(&mime),
                data: r.get("data")?,
            });
        }
    }
    Ok(out)
}

impl Store {
    /// The icons of those of `domains` that have one.
    pub fn favicons(&self, domains: &[String]) -> Result<Vec<Favicon>> {
        self.with_conn(|c| list_favicons(c, domains))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_raster_images_are_recognised() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff(&[0, 0, 1, 0, 1, 0]), Some("image/x-icon"));
        assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a"), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"<svg xmlns="), None);
        assert_eq!(sniff(b"<html>"), None);
        assert_eq!(sniff(b""), None);
        assert_eq!(known_mime("text/html"), "image/png");
    }
}
