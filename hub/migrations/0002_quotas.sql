-- Quotas per account (`sitetrail-hub serve --quota-*`): what each account stores, kept on its
-- row by the writes that change it (a push adds its records' bytes and count, a claim the jobs it
-- creates), in their own transaction under the row's lock, so a quota is checked exactly without
-- counting rows. The accounts already stored get their figures here.
ALTER TABLE account
    ADD COLUMN bytes_stored   bigint NOT NULL DEFAULT 0 CHECK (bytes_stored >= 0),
    ADD COLUMN records_stored bigint NOT NULL DEFAULT 0 CHECK (records_stored >= 0),
    ADD COLUMN claim_jobs     bigint NOT NULL DEFAULT 0 CHECK (claim_jobs >= 0);

UPDATE account a SET bytes_stored = r.bytes, records_stored = r.n
FROM (SELECT account_id, sum(octet_length(payload))::int8 AS bytes, count(*)::int8 AS n
      FROM record GROUP BY account_id) r
WHERE r.account_id = a.account_id;

UPDATE account a SET claim_jobs = c.n
FROM (SELECT account_id, count(*)::int8 AS n FROM claim_job GROUP BY account_id) c
WHERE c.account_id = a.account_id;

-- The live leases of an account, counted among its claimed jobs only.
CREATE INDEX claim_job_claimed_idx ON claim_job (account_id, lease_until) WHERE state = 'claimed';
