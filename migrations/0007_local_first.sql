-- Local-first classification (issue 11): every website gets a built-in category with a
-- confidence at once; a remote provider refines the ones that are not certain.

-- How sure the category is, and which built-in rule gave it (NULL for AI and older rows). The
-- category_source CHECK of 0001 is left as it is: 'builtin' is the provisional source.
ALTER TABLE website ADD COLUMN category_confidence TEXT NULL
    CHECK (category_confidence IN ('high', 'medium', 'low'));
ALTER TABLE website ADD COLUMN category_rule TEXT NULL;

-- 1 when the user asked to classify the website again with the AI: the job then waits for the
-- remote provider even where the built-in answer is certain. Set by `reclassify --ai`, cleared
-- by a plain `reclassify`.
ALTER TABLE website_category_classification_outbox ADD COLUMN remote_requested INTEGER NOT NULL DEFAULT 0
    CHECK (remote_requested IN (0, 1));

-- Older categories: the user's are certain, an AI's are medium. Older built-in ones keep a NULL
-- confidence until the worker's local pass judges them again with the current rules.
UPDATE website SET category_confidence = 'high', category_rule = 'user' WHERE category_source = 'user';
UPDATE website SET category_confidence = 'medium' WHERE category_source = 'ai';

-- The websites the local pass has to judge: no category yet, or a category without a
-- confidence. Partial, so it holds only those (a new website enters it with its first visit and
-- leaves it at the worker's next local pass); the pass costs the same at any history size.
CREATE INDEX website_unjudged_idx ON website (created_at)
    WHERE category IS NULL OR category_confidence IS NULL;

-- Bumped in the same transaction as every change to a user's category (set, changed, cleared,
-- deleted), so a running worker sees the user's categories as they are with one read of one row
-- per tick instead of reloading them.
CREATE TABLE user_categories_version (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO user_categories_version (id, version) VALUES (1, 0);

CREATE TRIGGER website_user_category_inserted AFTER INSERT ON website
    WHEN new.category_source = 'user'
BEGIN
    UPDATE user_categories_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER website_user_category_updated AFTER UPDATE OF domain, category, category_source ON website
    WHEN old.category_source IS 'user' OR new.category_source IS 'user'
BEGIN
    UPDATE user_categories_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER website_user_category_deleted AFTER DELETE ON website
    WHEN old.category_source = 'user'
BEGIN
    UPDATE user_categories_version SET version = version + 1 WHERE id = 1;
END;
