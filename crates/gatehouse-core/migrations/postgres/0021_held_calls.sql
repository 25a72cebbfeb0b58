-- Held calls. Keep in step with the other backend's (SQLite)
-- 0021_held_calls.sql.

-- A tool call the approval policy holds until a person says yes
-- (access::approvals). `arguments` is what the decider is shown, secrets
-- redacted; `args_sha256` binds the decision to the exact arguments and
-- `base_sha256` to the entry as it was when the call was held. `holder`
-- names the waiting server and `heartbeat_at` says it still waits: a hold
-- whose heartbeat stopped is recorded as not run, never run later.
CREATE TABLE held_calls (
    id TEXT PRIMARY KEY,
    actor TEXT NOT NULL,
    tool TEXT NOT NULL,
    summary TEXT NOT NULL,
    arguments TEXT NOT NULL,
    args_sha256 TEXT NOT NULL,
    diff TEXT,
    base_sha256 TEXT,
    decider TEXT NOT NULL,
    status TEXT NOT NULL,
    holder TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    decided_at BIGINT,
    decided_by TEXT
);
CREATE INDEX held_calls_status ON held_calls (status, created_at);
