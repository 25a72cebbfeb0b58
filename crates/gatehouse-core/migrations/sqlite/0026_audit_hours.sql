-- The usage views find their window by seq, not by an index on the audit log.
-- Keep in step with the other backend's (PostgreSQL) 0026_audit_hours.sql.
--
-- (action, ts) served only the usage views' `action = 'mcp.tool_call' AND
-- ts >= $since`, yet every tool call wrote a leaf of it in the middle of the
-- index (other actions sort after `mcp.tool_call`), a third of the pages an
-- audit commit wrote. `audit_hours` holds, per hour of `ts`, the first seq
-- stored with a `ts` in that hour: every append records its hour, which
-- writes a row once an hour and nothing the rest of it (the server skips the
-- statement for an hour it recorded). Every entry with `ts >= $since` then
-- has a seq at least the smallest `first_seq` of the hours from `$since`'s
-- on, whatever order clocks stamped entries in, and a view reads the log
-- from that seq on, by its rowid. (A trigger would record the hours too, at
-- a cost per entry: a tenth of a group commit.)
CREATE TABLE audit_hours (
    hour       INTEGER PRIMARY KEY,
    first_seq  BIGINT NOT NULL
);
INSERT INTO audit_hours (hour, first_seq)
    SELECT ts / 3600000, MIN(seq) FROM audit_log GROUP BY ts / 3600000;
DROP INDEX audit_log_action_ts;
