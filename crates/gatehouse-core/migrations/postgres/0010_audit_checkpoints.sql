-- Signed checkpoints of the audit chain's head (issue 10). The signing key is
-- kept outside the database (the user's config directory), so rows here can be
-- deleted by someone with database access but not forged; each machine also
-- keeps its own latest checkpoint beside its key.
CREATE TABLE audit_checkpoints (
    seq         BIGINT NOT NULL,
    hash        TEXT NOT NULL,
    ts          BIGINT NOT NULL,
    public_key  TEXT NOT NULL,
    signature   TEXT NOT NULL,
    PRIMARY KEY (seq, public_key)
);
