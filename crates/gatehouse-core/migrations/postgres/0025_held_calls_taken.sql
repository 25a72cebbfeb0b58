-- When the waiting server took an approved hold to run it. Keep in step with
-- the other backend's (SQLite) 0025_held_calls_taken.sql.
--
-- An approved owner's hold never taken, whose server's heartbeat stopped, is
-- one no server will run (its server died in the seconds before the yes):
-- the sweep (at a server's start, and when the queue is read) records it as
-- not run. Holds approved before this
-- column existed were run or answered then: they count as taken.
ALTER TABLE held_calls ADD COLUMN taken_at BIGINT;
UPDATE held_calls SET taken_at = decided_at WHERE status = 'approved';
