-- Consent to spawn a stored connection (issue 12). Keep in step with the other
-- backend's 0013_connection_consent.sql. One row per connection name: the
-- SHA-256 of the exact definition (spec + limits) an admin agreed to run.
-- Editing the definition changes its hash, so the desktop app asks again.
CREATE TABLE mcp_connection_consents (
    name               TEXT PRIMARY KEY,
    definition_sha256  TEXT NOT NULL,
    granted_by         TEXT NOT NULL,
    granted_at         BIGINT NOT NULL
);
