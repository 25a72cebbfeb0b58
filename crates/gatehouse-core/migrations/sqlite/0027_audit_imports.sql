-- Where an imported site's history came from. Keep in step with the other
-- backend's (PostgreSQL) 0027_audit_imports.sql.
--
-- `site import` writes the dump's audit log byte for byte and appends nothing
-- (export → import → export gives the same file), so without this row nothing
-- on the site tells that its entries up to `upto_seq` were taken on the word
-- of a signature (`trust` 'this_machine' or 'trusted_key', `signed_by` the
-- key) or of the admin alone ('unsigned', `signed_by` NULL). This machine's
-- checkpoints sign the chain from then on and vouch for nothing older.
-- Not exported: it is this site's provenance, not the source's.
CREATE TABLE audit_imports (
    id           INTEGER PRIMARY KEY,
    upto_seq     BIGINT NOT NULL,
    imported_at  BIGINT NOT NULL,
    trust        TEXT NOT NULL,
    signed_by    TEXT
);
