-- Block entries typed as `*.suffix` before block patterns were parsed (issue 18) were stored as
-- written and matched no domain: `blocked add '*.wild.test'` said "blocked" and blocked nothing.
-- They now mean what the exclusion list means by them: the suffix and everything under it, which
-- is what an entry `wild.test` blocks.
INSERT INTO blocked_domain (domain, blocked_at)
    SELECT substr(domain, 3), blocked_at FROM blocked_domain
    WHERE domain LIKE '*.%' AND length(domain) > 2 AND instr(substr(domain, 3), '*') = 0
    ON CONFLICT (domain) DO NOTHING;
DELETE FROM blocked_domain WHERE domain LIKE '%*%';

-- As `block_in` does: no live job is left for a blocked website.
UPDATE website_category_classification_outbox
SET status = 'COMPLETED', next_attempt_at = NULL, lease_until = NULL, worker_id = NULL,
    version = version + 1
WHERE status <> 'COMPLETED'
  AND website_id IN (
      SELECT w.id FROM website w JOIN blocked_domain b
        ON w.domain = b.domain OR substr(w.domain, -length(b.domain) - 1) = '.' || b.domain
  );
