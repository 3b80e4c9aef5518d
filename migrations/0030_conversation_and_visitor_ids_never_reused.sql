-- Forward-only: never edit this file once released.

-- Conversation and visitor ids are never given twice, as message, job and token ids already are
-- (0001, 0029). Without AUTOINCREMENT, erasing or purging the newest visitor gave the next one
-- the same visitor and conversation ids: a webhook receiver keyed on `data.conversation.id` then
-- merged two people, and an old link to /conversations/8 in Slack, Discord or an email opened
-- someone else's chat.
--
-- Both tables are rebuilt, as 0029 did (foreign key enforcement is off while migrating; every
-- reference is checked before committing). Ids deleted before this migration are not all
-- recorded, but some are: the audit log names erased visitors and acted-on conversations, and
-- jobs name their conversation. The counters start above those too.

CREATE TABLE visitors_new (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    site_id          INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    token_hash       BLOB NOT NULL UNIQUE,
    name             TEXT,
    email            TEXT,
    first_page       TEXT,
    last_page        TEXT,
    user_agent       TEXT,
    ip               TEXT,
    first_seen_at    INTEGER NOT NULL,
    last_seen_at     INTEGER NOT NULL,
    referrer         TEXT,
    language         TEXT,
    time_zone        TEXT,
    user_id          TEXT,
    claimed_user_id  TEXT,
    claimed_name     TEXT,
    claimed_email    TEXT,
    prechat_question TEXT,
    prechat_answer   TEXT,
    prechat_at       INTEGER
) STRICT;
INSERT INTO visitors_new SELECT * FROM visitors;
DROP TABLE visitors;
ALTER TABLE visitors_new RENAME TO visitors;
CREATE INDEX visitors_email ON visitors (email COLLATE NOCASE) WHERE email IS NOT NULL;

-- Dropped with the old table; as in 0023. The search index's rows keep their ids, so it stays
-- in step.
CREATE TRIGGER visitors_search_insert AFTER INSERT ON visitors BEGIN
    INSERT INTO visitor_search (rowid, name, email) VALUES (new.id, new.name, new.email);
END;
CREATE TRIGGER visitors_search_delete AFTER DELETE ON visitors BEGIN
    INSERT INTO visitor_search (visitor_search, rowid, name, email)
        VALUES ('delete', old.id, old.name, old.email);
END;
-- Only name and email: the upsert on every first message of a conversation touches
-- last_seen_at and last_page, which must not cost an index write.
CREATE TRIGGER visitors_search_update AFTER UPDATE OF name, email ON visitors BEGIN
    INSERT INTO visitor_search (visitor_search, rowid, name, email)
        VALUES ('delete', old.id, old.name, old.email);
    INSERT INTO visitor_search (rowid, name, email) VALUES (new.id, new.name, new.email);
END;

CREATE TABLE conversations_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    site_id         INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    visitor_id      INTEGER NOT NULL REFERENCES visitors (id) ON DELETE CASCADE,
    status          TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    assignee_id     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at      INTEGER NOT NULL,
    last_message_at INTEGER NOT NULL,
    closed_at       INTEGER,
    -- As in 0011: when the visitor started waiting for an answer, and the inbox's two orders.
    waiting_since   INTEGER,
    wait_rank       INTEGER GENERATED ALWAYS AS (waiting_since IS NULL) VIRTUAL,
    wait_at         INTEGER GENERATED ALWAYS AS (coalesce(waiting_since, last_message_at)) VIRTUAL
) STRICT;
-- Named columns: generated ones cannot be inserted into.
INSERT INTO conversations_new (id, site_id, visitor_id, status, assignee_id, created_at,
                               last_message_at, closed_at, waiting_since)
    SELECT id, site_id, visitor_id, status, assignee_id, created_at, last_message_at, closed_at,
           waiting_since
    FROM conversations;
DROP TABLE conversations;
ALTER TABLE conversations_new RENAME TO conversations;
-- A visitor has at most one open conversation; their next message joins it.
CREATE UNIQUE INDEX conversations_open_per_visitor ON conversations (visitor_id) WHERE status = 'open';
CREATE INDEX conversations_visitor ON conversations (visitor_id);
CREATE INDEX conversations_site_recent ON conversations (site_id, last_message_at DESC);
CREATE INDEX conversations_inbox_recent ON conversations (status, last_message_at, id);
CREATE INDEX conversations_inbox_waiting ON conversations (status, wait_rank, wait_at, id);
CREATE INDEX conversations_last_active
    ON conversations (site_id, max(last_message_at, coalesce(closed_at, 0)));

-- The counters start above every id known to have been given, also of rows already deleted.
DELETE FROM sqlite_sequence WHERE name IN ('visitors', 'conversations');
INSERT INTO sqlite_sequence (name, seq) SELECT 'visitors', max(
    coalesce((SELECT max(id) FROM visitors), 0),
    coalesce((SELECT max(CAST(target_id AS INTEGER)) FROM audit_events
              WHERE target_type = 'visitor'), 0));
INSERT INTO sqlite_sequence (name, seq) SELECT 'conversations', max(
    coalesce((SELECT max(id) FROM conversations), 0),
    coalesce((SELECT max(CAST(target_id AS INTEGER)) FROM audit_events
              WHERE target_type = 'conversation'), 0),
    coalesce((SELECT max(json_extract(args, '$.conversation_id')) FROM jobs), 0));
