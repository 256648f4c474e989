-- Titled visits counted by the code that inserts visits (issue 31): the trigger that counted each
-- inserted titled visit for its website's judging with titles (`visit_titled_inserted`, migration
-- 0009) made every visit insert keep a statement journal of its own (a trigger's insert may have
-- to undo itself alone), half of an import's time when it came. Every visit insert now goes
-- through `title_judging::TitledVisits`, which counts a transaction's titled visits per website
-- and adds them with one statement before it commits, with the same rule: a row counts while
-- `titled < due_at` and stops at `due_at`. A title set later (`visit_titled_updated`) is still
-- counted by its trigger: updates are one visit at a time.
DROP TRIGGER visit_titled_inserted;
