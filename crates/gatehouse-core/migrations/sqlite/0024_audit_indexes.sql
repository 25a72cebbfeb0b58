-- The audit log's indexes, matched to the statements that read it. Keep in
-- step with the other backend's (PostgreSQL) 0024_audit_indexes.sql.
--
-- The usage views count one action's entries since a time (`action = $n AND
-- ts >= $m`): on (action, seq) they read every entry of that action ever
-- written, so the keys screen slowed as the log grew; (action, ts) reads the
-- window only. No statement is served by (actor, seq): the audit screen's and
-- the activity count's actor filters compare a prefix (`substr`), which no
-- index serves, and the usage views' `LIKE` does not use it either; yet every
-- tool call wrote one of its pages (more when a leaf split). Dropped.
DROP INDEX audit_log_actor;
DROP INDEX audit_log_action;
CREATE INDEX audit_log_action_ts ON audit_log (action, ts);
