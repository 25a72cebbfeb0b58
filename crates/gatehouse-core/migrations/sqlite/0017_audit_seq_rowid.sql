-- The audit log keyed by its rowid: `seq BIGINT PRIMARY KEY` was a separate
-- unique index beside SQLite's rowid tree, one more B-tree page written by
-- every audit append (the hot path of every tool call). `INTEGER PRIMARY KEY`
-- makes seq the rowid itself. Rows are copied as they are: the chain's
-- hashes cover the values, not the storage.
CREATE TABLE audit_log_by_seq (
    seq        INTEGER PRIMARY KEY,
    ts         BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    detail     TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);
INSERT INTO audit_log_by_seq (seq, ts, actor, action, subject, detail, prev_hash, hash)
    SELECT seq, ts, actor, action, subject, detail, prev_hash, hash FROM audit_log ORDER BY seq;
DROP TABLE audit_log;
ALTER TABLE audit_log_by_seq RENAME TO audit_log;
CREATE INDEX audit_log_actor ON audit_log (actor, seq);
CREATE INDEX audit_log_action ON audit_log (action, seq);
