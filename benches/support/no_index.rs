//! "Without the index" for the benchmarks that measure what the search index costs: the FTS5
//! table is replaced by a view that swallows inserts (an `INSTEAD OF` trigger that does nothing),
//! so the write path runs unchanged, statement for statement, minus the index's work. The
//! index's settings (`search::IndexSetting`, which an import sets and restores) are swallowed
//! too, and read from an empty stand-in of FTS5's config table.

#![allow(dead_code)]

use sitetrail::Store;

pub fn drop_search_index(store: &Store) -> sitetrail::Result<()> {
    store.with_conn(|c| {
        c.execute_batch(
            r#"DROP TABLE visit_fts;
               CREATE VIEW visit_fts (rowid, domain, title, url, visit_fts, rank)
                   AS SELECT NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;
               CREATE TRIGGER visit_fts_noop INSTEAD OF INSERT ON visit_fts BEGIN SELECT 1; END;
               CREATE TABLE visit_fts_config (k PRIMARY KEY, v) WITHOUT ROWID;"#,
        )?;
        Ok(())
    })
}
