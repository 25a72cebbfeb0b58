-- The desktop admin screens (issue 12). Keep in step with the other backend's
-- 0016_admin_screens.sql.

-- A disabled user keeps its row (and its history in the audit log) but no
-- longer resolves as an actor. NULL: enabled.
ALTER TABLE users ADD COLUMN disabled_at BIGINT;

-- The Audit screen filters by actor and the Keys screen counts each key's
-- calls (audit entries whose actor is key:<id>), newest first.
CREATE INDEX audit_log_actor ON audit_log (actor, seq);
CREATE INDEX audit_log_action ON audit_log (action, seq);
