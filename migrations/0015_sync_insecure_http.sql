-- Whether the user allowed this device's hub to be reached over plain http:// on a host that is
-- not this machine (`sitetrail sync setup|join --allow-insecure-http`): without it such a hub is
-- refused, since the login would cross the network in clear. Said on every sync and in `sync
-- status` while it holds.
ALTER TABLE sync_link ADD COLUMN insecure_http INTEGER NOT NULL DEFAULT 0 CHECK (insecure_http IN (0, 1));
