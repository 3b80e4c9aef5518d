-- Forward-only: never edit this file once released.

-- Integration and canned reply ids are never given twice, as message, job, token, conversation
-- and visitor ids already are (0001, 0029, 0030). Without AUTOINCREMENT, deleting the newest
-- integration gave the next one its id: the audit log then named two integrations (a Slack one
-- and a webhook) with one id, and a Slack app still configured with the old Events URL
-- (`/integrations/slack/{id}/events`) pointed at whatever integration took the id. Canned replies
-- are audited by id too.
--
-- Both tables are rebuilt, as 0029 did (foreign key enforcement is off while migrating; every
-- reference is checked before committing). The columns keep their order, so `SELECT *` copies.

CREATE TABLE integrations_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    site_id    INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('slack', 'discord', 'webhook', 'email')),
    name       TEXT NOT NULL DEFAULT '',
    -- Non-secret settings as JSON (channel id, events, …).
    config     TEXT NOT NULL DEFAULT '{}',
    -- Tokens and signing secrets as JSON, kept apart so they are never rendered or logged with config.
    secrets    TEXT NOT NULL DEFAULT '{}',
    is_enabled INTEGER NOT NULL DEFAULT 1 CHECK (is_enabled IN (0, 1)),
    -- 'broken' when the destination refused us for a reason only an admin can fix (revoked token, …).
    status     TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'broken')),
    last_error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
INSERT INTO integrations_new SELECT * FROM integrations;
DROP TABLE integrations;
ALTER TABLE integrations_new RENAME TO integrations;
CREATE INDEX integrations_site ON integrations (site_id) WHERE is_enabled = 1;

CREATE TABLE canned_replies_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id   INTEGER REFERENCES users (id) ON DELETE CASCADE,
    -- Lowercase letters, digits, '-' and '_' (checked by the domain, chat/canned.rs).
    shortcut   TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
INSERT INTO canned_replies_new SELECT * FROM canned_replies;
DROP TABLE canned_replies;
ALTER TABLE canned_replies_new RENAME TO canned_replies;
CREATE UNIQUE INDEX canned_replies_shortcut ON canned_replies (coalesce(owner_id, 0), shortcut);

-- The counters start above every id known to have been given, also of rows already deleted.
DELETE FROM sqlite_sequence WHERE name IN ('integrations', 'canned_replies');
INSERT INTO sqlite_sequence (name, seq) SELECT 'integrations', max(
    coalesce((SELECT max(id) FROM integrations), 0),
    coalesce((SELECT max(CAST(target_id AS INTEGER)) FROM audit_events
              WHERE target_type = 'integration'), 0),
    coalesce((SELECT max(integration_id) FROM jobs), 0));
INSERT INTO sqlite_sequence (name, seq) SELECT 'canned_replies', max(
    coalesce((SELECT max(id) FROM canned_replies), 0),
    coalesce((SELECT max(CAST(target_id AS INTEGER)) FROM audit_events
              WHERE target_type = 'canned_reply'), 0));
