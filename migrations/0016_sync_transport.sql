-- How this device reaches its hub, as the user chose when linking it (`sitetrail sync setup|join`):
-- insecure_http: a plain http:// hub on a host that is not this machine is allowed
--   (`--allow-insecure-http`); without it such a hub is refused, since the login would cross the
--   network in clear. Said on every sync and in `sync status` while it holds.
-- ca_file: a PEM file of certificate authorities trusted for the hub besides the system's
--   (`--ca-file`), e.g. a private CA that signed the hub's certificate.
ALTER TABLE sync_link ADD COLUMN insecure_http INTEGER NOT NULL DEFAULT 0 CHECK (insecure_http IN (0, 1));
ALTER TABLE sync_link ADD COLUMN ca_file TEXT;
