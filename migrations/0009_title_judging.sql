-- Titles on the device (issue 20): the worker's local pass judges a website's built-in category
-- again from the titles of its pages, once it has a few titled visits and again when many more
-- have come. Only websites whose built-in answer came from the learned model or the weak rules
-- (never a list's, the user's or an AI's) have a row; the local pass adds it when it writes such
-- an answer, and deletes it after the last judging.
--
-- `titled` counts titled visits since the row's last judging, and stops counting at `due_at`, so
-- a visit costs a write here only while its website is on its way to a judging: a few writes per
-- website in its life. The titles themselves are never copied: the pass reads them from the visits
-- (through the search index), so forgetting a visit forgets its title for the pass too.
CREATE TABLE website_title_judging (
    website_id BLOB    NOT NULL PRIMARY KEY REFERENCES website (id) ON DELETE CASCADE,
    titled     INTEGER NOT NULL DEFAULT 0,
    due_at     INTEGER NOT NULL
) WITHOUT ROWID;

-- The rows due for a judging: partial, so the pass's look costs the same at any history size.
CREATE INDEX website_title_judging_due_idx ON website_title_judging (website_id)
    WHERE titled >= due_at;

CREATE TRIGGER visit_titled_inserted AFTER INSERT ON visit
    WHEN new.title IS NOT NULL
BEGIN
    UPDATE website_title_judging SET titled = titled + 1
    WHERE website_id = new.website_id AND titled < due_at;
END;

CREATE TRIGGER visit_titled_updated AFTER UPDATE OF title ON visit
    WHEN old.title IS NULL AND new.title IS NOT NULL
BEGIN
    UPDATE website_title_judging SET titled = titled + 1
    WHERE website_id = new.website_id AND titled < due_at;
END;

-- Forgetting deletes websites on a connection without foreign keys: the row goes with its website
-- all the same.
CREATE TRIGGER website_title_judging_deleted AFTER DELETE ON website
BEGIN
    DELETE FROM website_title_judging WHERE website_id = old.id;
END;
