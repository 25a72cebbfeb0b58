-- Permissions and data exposure (issue 10). Keep in step with the other
-- backend's 0011_policy.sql.

-- A config entry the admin marked secret is never shown in clear to a client.
ALTER TABLE site_config ADD COLUMN secret BIGINT NOT NULL DEFAULT 0;

-- The only name anonymous readers see for an author; NULL shows "site author".
ALTER TABLE users ADD COLUMN display_name TEXT;

-- An edit of a published entry waits here, one per entry, while the published
-- text stays live; publishing the entry applies it.
CREATE TABLE content_pending (
    content_id  BIGINT PRIMARY KEY REFERENCES content(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    author      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
