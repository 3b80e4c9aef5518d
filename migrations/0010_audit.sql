-- Forward-only: never edit this file once released.

-- The audit log (issue #14): who did what, when, from where. One row per audited change, written
-- in the same transaction as the change. `actor` is the label as it was (an email, or `cli`), so
-- the row still reads after the user is deleted (`actor_id` then becomes NULL). `action` is a
-- stable dotted code (docs/admin.md). `ip` is the client address, or `cli` for the command line.
-- `detail` is a small JSON object that never holds passwords, tokens or integration secrets.
-- Failed sign-ins are aggregated: one row per attempted email, address and minute (`minute`,
-- NULL for every other row), with `count` attempts, the last at `last_at`.
CREATE TABLE audit_events (
    id           INTEGER PRIMARY KEY,
    at           INTEGER NOT NULL,
    actor_id     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    target_type  TEXT,
    target_id    TEXT,
    target_label TEXT,
    ip           TEXT NOT NULL,
    detail       TEXT NOT NULL DEFAULT '{}',
    count        INTEGER NOT NULL DEFAULT 1,
    last_at      INTEGER NOT NULL,
    minute       INTEGER
) STRICT;
-- Retention deletes by age; the page filters by time and pages by id (ids grow with time).
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_action ON audit_events (action, id);
CREATE UNIQUE INDEX audit_events_failure_minute
    ON audit_events (action, actor, ip, minute) WHERE minute IS NOT NULL;
