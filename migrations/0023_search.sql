-- Forward-only: never edit this file once released.

-- Inbox search (docs/admin.md#search): two FTS5 indexes with external content, so the text is
-- stored once (in `messages` and `visitors`) and the index holds only tokens.

-- Messages an agent can look for: visitor messages, agent replies and private notes. Status
-- lines ('system') are the server's own words and are left out, so the content is a view.
CREATE VIEW message_search_content AS
    SELECT id, body FROM messages WHERE author <> 'system';

-- Tokenizer: porter over unicode61 with remove_diacritics 2, so "refunds" finds "refunded",
-- "resume" finds "résumé" and case never matters, all without prefix queries (FTS5 reads every
-- matching term's whole list for those: hundreds of milliseconds for a common word at a million
-- messages, docs/capacity.md#search). No prefix index for the same reason.
CREATE VIRTUAL TABLE message_search USING fts5(
    body,
    content = 'message_search_content',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Messages are indexed off the hot path: no trigger on insert. The background indexer
-- (chat/search_index.rs) indexes the messages after `last_message_id` in small deferred batches
-- and moves the watermark in the same transaction, so the index holds exactly the non-status
-- messages with id <= last_message_id (ids are AUTOINCREMENT: never reused). Starts at 0: on
-- an existing database the indexer catches up in the background instead of at start-up.
CREATE TABLE search_watermark (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    last_message_id INTEGER NOT NULL
) STRICT;
INSERT INTO search_watermark (id, last_message_id) VALUES (1, 0);

-- Deletes and edits change the index in the same transaction as the message, whoever writes
-- them (erasure, the retention purge, a cascade from a deleted conversation or site). An
-- external-content index must be told the exact old text to forget it, and only rows it holds:
-- hence the same WHEN on every trigger.
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages
WHEN old.author <> 'system'
 AND old.id <= (SELECT last_message_id FROM search_watermark WHERE id = 1) BEGIN
    INSERT INTO message_search (message_search, rowid, body) VALUES ('delete', old.id, old.body);
END;

-- One trigger, so forgetting the old text comes before indexing the new one (SQLite gives no
-- order between two triggers on the same event). A message not indexed yet is left to the
-- indexer, which will read its new text.
CREATE TRIGGER messages_search_update AFTER UPDATE OF body, author ON messages
WHEN old.id <= (SELECT last_message_id FROM search_watermark WHERE id = 1) BEGIN
    INSERT INTO message_search (message_search, rowid, body)
        SELECT 'delete', old.id, old.body WHERE old.author <> 'system';
    INSERT INTO message_search (rowid, body)
        SELECT new.id, new.body WHERE new.author <> 'system';
END;

-- Visitors by name and email ("jane@example.com" is the tokens jane, example, com; the search
-- box looks for them as a phrase). A small table written once per visitor, so it is kept
-- directly by triggers. Every visitor row is indexed; most have neither field, which costs one
-- empty entry on their first message.
CREATE VIRTUAL TABLE visitor_search USING fts5(
    name,
    email,
    content = 'visitors',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

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

-- An erased or purged message must leave no word behind (docs/privacy.md): with secure-delete
-- a deletion removes the message's entries from the index pages at once, instead of adding a
-- delete marker and keeping the old entries until a later merge.
INSERT INTO message_search (message_search, rank) VALUES ('secure-delete', 1);
INSERT INTO visitor_search (visitor_search, rank) VALUES ('secure-delete', 1);

-- Index the visitors an existing database already holds (one pass over a small table).
INSERT INTO visitor_search (visitor_search) VALUES ('rebuild');
