-- Tool pinning (issue 10 §6). Keep in step with the other backend's file.
-- Per stored connection: the approved tool list (canonical JSON) with its
-- SHA-256 and the SHA-256 of the definition it came from; a change waiting
-- for `gatehouse connections approve` (the offered list and why).
CREATE TABLE mcp_tool_pins (
    name              TEXT PRIMARY KEY,
    definition_sha256 TEXT NOT NULL,
    tools_sha256      TEXT NOT NULL,
    tools             TEXT NOT NULL,
    pending_tools     TEXT,
    pending_reason    TEXT,
    pinned_at         BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
