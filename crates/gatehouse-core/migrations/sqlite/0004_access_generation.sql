-- The access generation (issue 11). Keep in step with the other backend's file.
-- Every write that can change what an actor may do (a key minted, revoked or
-- retired; a user created, changed or removed; an import) adds one to `gen` in
-- its own transaction. A long-running server compares it on each call and
-- re-reads the actor only when it moved: one cheap read per call instead of a
-- key or user lookup.
CREATE TABLE access_generation (
    id  BIGINT PRIMARY KEY CHECK (id = 1),
    gen BIGINT NOT NULL
);
INSERT INTO access_generation (id, gen) VALUES (1, 0);
