//! Importing website icons from the browser's icon database beside its history: Chromium's
//! `Favicons` next to `History`, Firefox's `favicons.sqlite` next to `places.sqlite`.
//!
//! The file goes through the same private, validated snapshot as the history (`snapshot.rs`):
//! copied, checked as a whole, read-only. A missing file means no icons; a damaged one is reported
//! in the import's report and costs the history nothing. Only websites without an icon get one:
//! for each, the browser's icon closest to 32 pixels that is a small raster image
//! (`favicon::sniff`, at most `favicon::MAX_ICON_BYTES`). Two passes keep memory flat: the first
//! picks each website's icon from sizes and first bytes, the second reads the chosen images.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{named_params, Connection};

use crate::domain::Domain;
use crate::error::Result;
use crate::favicon::{self, MAX_ICON_BYTES};
use crate::ids::WebsiteId;
use crate::store::{Change, Store};

use super::snapshot::{Schema, Snapshot};
use super::Browser;

/// Icons stored per transaction.
const BATCH: usize = 500;

/// Where a browser keeps its icons, and how to read them.
struct IconSpec {
    file_name: &'static str,
    hint: &'static str,
    schema: Schema,
    /// Rows `id` (what `data_sql` reads back), `page_url`, `icon_url`, `width`, `bytes`, `head`
    /// (the first 12 bytes of the image), only images of at most 16 KiB.
    candidates_sql: &'static str,
    /// The image of the row `:id`.
    data_sql: &'static str,
}

const CHROMIUM: IconSpec = IconSpec {
    file_name: "Favicons",
    hint: "a Chrome-family `Favicons` file",
    schema: &[
        ("icon_mapping", &["page_url", "icon_id"]),
        ("favicons", &["id", "url"]),
        ("favicon_bitmaps", &["id", "icon_id", "image_data", "width"]),
    ],
    candidates_sql: r#"SELECT b.id AS id, m.page_url AS page_url, f.url AS icon_url, b.width AS width,
                              length(b.image_data) AS bytes, substr(b.image_data, 1, 12) AS head
                       FROM icon_mapping m JOIN favicons f ON f.id = m.icon_id
                       JOIN favicon_bitmaps b ON b.icon_id = f.id
                       WHERE length(b.image_data) BETWEEN 1 AND 16384"#,
    data_sql: r#"SELECT image_data AS data FROM favicon_bitmaps WHERE id = :id"#,
};

const FIREFOX: IconSpec = IconSpec {
    file_name: "favicons.sqlite",
    hint: "a Firefox-family `favicons.sqlite` file",
    schema: &[
        ("moz_icons", &["id", "icon_url", "width", "root", "data"]),
        ("moz_pages_w_icons", &["id", "page_url"]),
        ("moz_icons_to_pages", &["page_id", "icon_id"]),
    ],
    // Icons of pages, and a site's root icon (`/favicon.ico`, `root = 1`), which Firefox does not
    // map to pages: its own URL names the site.
    candidates_sql: r#"SELECT i.id AS id, p.page_url AS page_url, i.icon_url AS icon_url, i.width AS width,
                              length(i.data) AS bytes, substr(i.data, 1, 12) AS head
                       FROM moz_pages_w_icons p JOIN moz_icons_to_pages t ON t.page_id = p.id
                       JOIN moz_icons i ON i.id = t.icon_id
                       WHERE length(i.data) BETWEEN 1 AND 16384
                       UNION ALL
                       SELECT id, icon_url, icon_url, width, length(data), substr(data, 1, 12)
                       FROM moz_icons WHERE root = 1 AND length(data) BETWEEN 1 AND 16384"#,
    data_sql: r#"SELECT data AS data FROM moz_icons WHERE id = :id"#,
};

fn spec(browser: Browser) -> Option<&'static IconSpec> {
    match browser {
        Browser::Chrome => Some(&CHROMIUM),
        Browser::Firefox => Some(&FIREFOX),
        // Safari keeps its icons in a cache directory of its own, not read here.
        Browser::Safari => None,
    }
}

/// How close an icon is to what a history row shows (lower is better): about 32 pixels.
fn score(width: i64, bytes: i64) -> (i64, i64) {
    let fit = match width {
        16..=64 => (width - 32).abs(),
        0 => 100,
        w => 200 + (w - 32).abs(),
    };
    (fit, bytes)
}

/// The chosen icon of a website.
struct Choice {
    score: (i64, i64),
    id: i64,
    mime: &'static str,
    icon_url: Option<String>,
}

/// Imports the icons of the websites that have none from the icon file beside `history`; returns
/// how many websites got one. `Err` only for a file that is there but cannot be read.
pub(super) fn import_favicons(store: &Store, browser: Browser, history: &Path) -> Result<u64> {
    let Some(spec) = spec(browser) else {
        return Ok(0);
    };
    let Some(path) = history.parent().map(|d| d.join(spec.file_name)) else {
        return Ok(0);
    };
    if !path.is_file() {
        return Ok(0);
    }
    let wanted: HashMap<String, WebsiteId> = store.with_conn(|c| {
        let mut stmt = c.prepare_cached(
            r#"SELECT w.id, w.domain FROM website w
               WHERE NOT EXISTS (SELECT 1 FROM website_favicon f WHERE f.website_id = w.id)"#,
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>("domain")?, r.get::<_, WebsiteId>("id")?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    })?;
    if wanted.is_empty() {
        return Ok(0);
    }
    let snapshot = Snapshot::take(&path, spec.schema, spec.hint)?;
    let read_failed = super::read_failed(&path, "icons");
    let choices = choose(snapshot.conn(), spec, &wanted).map_err(read_failed)?;
    let mut stored = 0;
    let choices: Vec<(WebsiteId, Choice)> = choices.into_iter().collect();
    for chunk in choices.chunks(BATCH) {
        let mut images = Vec::with_capacity(chunk.len());
        for (website, c) in chunk {
            let data: Option<Vec<u8>> = snapshot
                .conn()
                .query_row(spec.data_sql, named_params! { ":id": c.id }, |r| r.get("data"))
                .map_err(read_failed)?;
            if let Some(data) =
                data.filter(|d| d.len() <= MAX_ICON_BYTES && favicon::sniff(d) == Some(c.mime))
            {
                images.push((*website, c, data));
            }
        }
        let now = store.now();
        stored += store.write(Some(Change::Websites), |tx| {
            let mut n = 0;
            for (website, c, data) in &images {
                n += u64::from(favicon::insert_favicon_in(
                    tx,
                    *website,
                    c.mime,
                    data,
                    c.icon_url.as_deref(),
                    now,
                )?);
            }
            Ok(n)
        })?;
    }
    Ok(stored)
}

/// Pass one: for every wanted website, the best icon row (by size, from the first bytes only).
fn choose(
    conn: &Connection,
    spec: &IconSpec,
    wanted: &HashMap<String, WebsiteId>,
) -> rusqlite::Result<HashMap<WebsiteId, Choice>> {
    let mut best: HashMap<WebsiteId, Choice> = HashMap::new();
    let mut stmt = conn.prepare(spec.candidates_sql)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let Ok(page_url) = r.get::<_, String>("page_url") else {
            continue;
        };
        let Ok(domain) = Domain::from_url(&page_url) else {
            continue;
        };
        let Some(&website) = wanted.get(domain.as_str()) else {
            continue;
        };
        let head: Vec<u8> = r
            .get::<_, Option<Vec<u8>>>("head")
            .ok()
            .flatten()
            .unwrap_or_default();
        let Some(mime) = favicon::sniff(&head) else {
            continue;
        };
        let width: i64 = r.get::<_, Option<i64>>("width").ok().flatten().unwrap_or(0);
        let bytes: i64 = r.get::<_, Option<i64>>("bytes").ok().flatten().unwrap_or(0);
        let choice = Choice {
            score: score(width, bytes),
            id: r.get("id")?,
            mime,
            icon_url: r.get::<_, Option<String>>("icon_url").ok().flatten(),
        };
        match best.get(&website) {
            Some(old) if old.score <= choice.score => {}
            _ => {
                best.insert(website, choice);
            }
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icons_near_32_pixels_win() {
        assert!(score(32, 900) < score(16, 100));
        assert!(score(16, 100) < score(0, 10));
        assert!(score(0, 10) < score(192, 10));
        assert!(score(32, 100) < score(32, 900), "the smaller of two equal sizes");
    }
}
