-- Key restrictions. Keep in step with the other backend's (PostgreSQL)
-- 0020_key_restrictions.sql.

-- What a key may do beyond its roles, narrowed: a tool allowlist, read-only,
-- a content scope and a call rate, as JSON (access::restrictions). NULL
-- restricts nothing. Read with the key on every call, so no join is needed.
ALTER TABLE api_keys ADD COLUMN restrictions TEXT;
