-- Foundation schema (SQLite). Keep in step with ../postgres/0001_foundation.sql:
-- same tables, same columns, same meaning. Timestamps are Unix milliseconds.

CREATE TABLE users (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    email       TEXT NOT NULL,
    email_norm  TEXT NOT NULL UNIQUE,
    roles       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    label        TEXT NOT NULL,
    roles        TEXT NOT NULL,
    hash         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    last_used_at BIGINT,
    revoked_at   BIGINT,
    replaced_by  TEXT
);

CREATE TABLE content (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    slug         TEXT NOT NULL UNIQUE,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('draft', 'published')),
    author       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    published_at BIGINT
);

CREATE TABLE content_redirects (
    old_slug    TEXT PRIMARY KEY,
    content_id  BIGINT NOT NULL REFERENCES content(id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL
);

-- Full-text index kept in the same transaction as every content write by triggers.
CREATE VIRTUAL TABLE content_fts USING fts5(title, body, content='content', content_rowid='id');
CREATE TRIGGER content_ai AFTER INSERT ON content BEGIN
    INSERT INTO content_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
END;
CREATE TRIGGER content_ad AFTER DELETE ON content BEGIN
    INSERT INTO content_fts(content_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
END;
CREATE TRIGGER content_au AFTER UPDATE ON content BEGIN
    INSERT INTO content_fts(content_fts, rowid, title, body) VALUES ('delete', old.id, old.title, old.body);
    INSERT INTO content_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
END;

CREATE TABLE media (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    filename    TEXT NOT NULL UNIQUE,
    mime_type   TEXT NOT NULL,
    size        BIGINT NOT NULL,
    sha256      TEXT NOT NULL,
    bytes       BLOB NOT NULL,
    uploaded_by TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE site_config (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE audit_log (
    seq        BIGINT PRIMARY KEY,
    ts         BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    detail     TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);

-- One row: the chain's last seq and hash. Every write transaction updates it first,
-- which serialises writers (and audit appends) across processes.
CREATE TABLE audit_head (
    id    BIGINT PRIMARY KEY CHECK (id = 1),
    seq   BIGINT NOT NULL,
    hash  TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
    VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
