-- OAuth 2.1 for `gatehouse serve` (access::oauth). Keep in step with the
-- other backend's (PostgreSQL) 0022_oauth.sql.
--
-- Every secret (client secret, authorization code, access and refresh token,
-- consent CSRF token) is stored only as its SHA-256 in hex: each is 32 random
-- bytes, so a fast hash is enough and lookups stay one indexed read.
-- Times are Unix milliseconds, like every other table.

-- Clients: registered dynamically (RFC 7591; id random) or described by a
-- metadata document (id = the document's URL; the row caches it).
CREATE TABLE oauth_clients (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    name            TEXT NOT NULL,
    redirect_uris   TEXT NOT NULL,
    auth_method     TEXT NOT NULL,
    secret_hash     TEXT,
    created_at      BIGINT NOT NULL,
    -- A registration no grant has used lapses then; a document is refetched.
    expires_at      BIGINT,
    last_used_at    BIGINT,
    registered_from TEXT
);

-- Authorization requests waiting for the person's consent. A pairing code
-- (`pair_hash`) lets an admin approve one as a key (`approved_key_id`).
CREATE TABLE oauth_requests (
    id              TEXT PRIMARY KEY,
    csrf_hash       TEXT NOT NULL,
    pair_hash       TEXT,
    approved_key_id TEXT,
    client_id    TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    state        TEXT,
    challenge    TEXT NOT NULL,
    resource     TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);

-- Authorization codes: single use; `grant_id` names the grant the exchange
-- creates, so a replay can revoke what the first exchange produced.
CREATE TABLE oauth_codes (
    hash         TEXT PRIMARY KEY,
    grant_id     TEXT NOT NULL,
    client_id    TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    challenge    TEXT NOT NULL,
    resource     TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    created_from TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used_at      BIGINT
);

-- Grants: a client acting as a key's actor, narrowed to `scopes`, for one
-- resource. Revoking the key ends the grant (checked on every request).
CREATE TABLE oauth_grants (
    id             TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL,
    key_id         TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    resource       TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_from   TEXT,
    last_used_at   BIGINT,
    revoked_at     BIGINT,
    revoked_reason TEXT
);
CREATE INDEX oauth_grants_key ON oauth_grants (key_id);

-- Access and refresh tokens. A refresh token's `used_at` is set when it is
-- rotated; presenting it again revokes its grant.
CREATE TABLE oauth_tokens (
    hash       TEXT PRIMARY KEY,
    grant_id   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
