-- OAuth grants that act as a user (`gatehouse oauth approve CODE --as EMAIL`)
-- beside those that act as a key. Keep in step with the other backend's
-- (PostgreSQL) 0023_oauth_user_grants.sql.
--
-- A code and a grant act as exactly one of `key_id` and `user_email`; a
-- pending request approved by pairing names one of `approved_key_id` and
-- `approved_email`. SQLite cannot drop a NOT NULL in place, so the two
-- tables are rebuilt (they are small: one row per consent and per grant).

ALTER TABLE oauth_requests ADD COLUMN approved_email TEXT;

CREATE TABLE oauth_codes_new (
    hash         TEXT PRIMARY KEY,
    grant_id     TEXT NOT NULL,
    client_id    TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    challenge    TEXT NOT NULL,
    resource     TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    key_id       TEXT,
    created_from TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used_at      BIGINT,
    user_email   TEXT,
    CHECK ((key_id IS NULL) <> (user_email IS NULL))
);
INSERT INTO oauth_codes_new (hash, grant_id, client_id, redirect_uri, challenge, resource, scopes, key_id, created_from, created_at, expires_at, used_at)
    SELECT hash, grant_id, client_id, redirect_uri, challenge, resource, scopes, key_id, created_from, created_at, expires_at, used_at FROM oauth_codes;
DROP TABLE oauth_codes;
ALTER TABLE oauth_codes_new RENAME TO oauth_codes;

CREATE TABLE oauth_grants_new (
    id             TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL,
    key_id         TEXT,
    scopes         TEXT NOT NULL,
    resource       TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_from   TEXT,
    last_used_at   BIGINT,
    revoked_at     BIGINT,
    revoked_reason TEXT,
    user_email     TEXT,
    CHECK ((key_id IS NULL) <> (user_email IS NULL))
);
INSERT INTO oauth_grants_new (id, client_id, key_id, scopes, resource, redirect_uri, created_at, created_from, last_used_at, revoked_at, revoked_reason)
    SELECT id, client_id, key_id, scopes, resource, redirect_uri, created_at, created_from, last_used_at, revoked_at, revoked_reason FROM oauth_grants;
DROP TABLE oauth_grants;
ALTER TABLE oauth_grants_new RENAME TO oauth_grants;
CREATE INDEX oauth_grants_key ON oauth_grants (key_id);
CREATE INDEX oauth_grants_user ON oauth_grants (user_email);
