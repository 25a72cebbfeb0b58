-- OAuth grants that act as a user (`gatehouse oauth approve CODE --as EMAIL`)
-- beside those that act as a key. Keep in step with the other backend's
-- (SQLite) 0023_oauth_user_grants.sql.
--
-- A code and a grant act as exactly one of `key_id` and `user_email`; a
-- pending request approved by pairing names one of `approved_key_id` and
-- `approved_email`.

ALTER TABLE oauth_requests ADD COLUMN approved_email TEXT;

ALTER TABLE oauth_codes ALTER COLUMN key_id DROP NOT NULL;
ALTER TABLE oauth_codes ADD COLUMN user_email TEXT;
ALTER TABLE oauth_codes ADD CONSTRAINT oauth_codes_one_principal
    CHECK ((key_id IS NULL) <> (user_email IS NULL));

ALTER TABLE oauth_grants ALTER COLUMN key_id DROP NOT NULL;
ALTER TABLE oauth_grants ADD COLUMN user_email TEXT;
ALTER TABLE oauth_grants ADD CONSTRAINT oauth_grants_one_principal
    CHECK ((key_id IS NULL) <> (user_email IS NULL));
CREATE INDEX oauth_grants_user ON oauth_grants (user_email);
