-- Where an imported site's history came from. Keep in step with the other
-- backend's (SQLite) 0027_audit_imports.sql, which says why.
CREATE TABLE audit_imports (
    id           BIGSERIAL PRIMARY KEY,
    upto_seq     BIGINT NOT NULL,
    imported_at  BIGINT NOT NULL,
    trust        TEXT NOT NULL,
    signed_by    TEXT
);
