-- The usage views find their window by seq, not by an index on the audit log.
-- Keep in step with the other backend's (SQLite) 0026_audit_hours.sql, which
-- says why.
CREATE TABLE audit_hours (
    hour       BIGINT PRIMARY KEY,
    first_seq  BIGINT NOT NULL
);
INSERT INTO audit_hours (hour, first_seq)
    SELECT ts / 3600000, MIN(seq) FROM audit_log GROUP BY ts / 3600000;
DROP INDEX audit_log_action_ts;
