-- MCP client (issue 4). Keep in step with the other backend's 0003_client.sql.
-- Timestamps are Unix milliseconds; booleans are BIGINT 0/1; JSON is TEXT.

-- Connection definitions shared by the CLI and the desktop app. `spec` is the
-- ChildSpec as JSON (program, args, env); secrets are stored only as the name
-- of a host variable to read at connect time, never as values.
CREATE TABLE mcp_connections (
    name        TEXT PRIMARY KEY,
    spec        TEXT NOT NULL,
    limits      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

-- One row per connection run (spawn to teardown); written at connect, replaced at close.
CREATE TABLE mcp_connection_runs (
    connection_id         TEXT PRIMARY KEY,
    name                  TEXT,
    program               TEXT NOT NULL,
    pid                   BIGINT,
    era                   TEXT,
    protocol_version      TEXT,
    server_name           TEXT,
    server_version        TEXT,
    end_reason            TEXT,
    exit_code             BIGINT,
    exit_signal           BIGINT,
    stderr_bytes_seen     BIGINT NOT NULL,
    stderr_bytes_retained BIGINT NOT NULL,
    stderr_truncated      BIGINT NOT NULL,
    stderr_excerpt        TEXT,
    stdout_end            TEXT NOT NULL,
    stderr_end            TEXT NOT NULL,
    protocol_violations   BIGINT NOT NULL,
    started_at            BIGINT NOT NULL,
    ended_at              BIGINT
);

-- One row per call; each lifecycle transition replaces it, so the row holds the
-- last state written (the attempt is written before dispatch).
CREATE TABLE mcp_calls (
    call_id               TEXT PRIMARY KEY,
    connection_id         TEXT NOT NULL,
    tool                  TEXT NOT NULL,
    state                 TEXT NOT NULL,
    effect                TEXT,
    request_id            BIGINT,
    args_bytes            BIGINT NOT NULL,
    error                 TEXT,
    exit_code             BIGINT,
    exit_signal           BIGINT,
    stderr_bytes_seen     BIGINT NOT NULL,
    stderr_bytes_retained BIGINT NOT NULL,
    stderr_truncated      BIGINT NOT NULL,
    stdout_end            TEXT NOT NULL,
    stderr_end            TEXT NOT NULL,
    received_at           BIGINT NOT NULL,
    dispatched_at         BIGINT,
    finished_at           BIGINT
);

CREATE INDEX mcp_calls_by_connection ON mcp_calls (connection_id, received_at);
CREATE INDEX mcp_calls_by_state ON mcp_calls (state);
