-- Forward-only: never edit this file once released.

-- Since when the visitor has been waiting for an answer: the time of their oldest message that no
-- agent reply (author 'agent') has followed yet; NULL when the last visitor-visible word is an
-- agent's, or there is none. Notes and status lines are not answers. Kept by the message writes
-- (store/conversations.rs), so the inbox's "longest waiting" order is a column, not a scan.
ALTER TABLE conversations ADD COLUMN waiting_since INTEGER;

UPDATE conversations SET waiting_since = (
    SELECT min(m.created_at) FROM messages m
    WHERE m.conversation_id = conversations.id AND m.author = 'visitor'
      AND m.id > coalesce((SELECT max(a.id) FROM messages a
                           WHERE a.conversation_id = conversations.id AND a.author = 'agent'), 0));

-- The "longest waiting" order as two plain (virtual, computed on read) columns: waiting ones
-- (rank 0) by `waiting_since`, then answered ones (rank 1) by last activity. Columns rather than
-- expressions because SQLite seeks an index with a row value like (wait_rank, wait_at, id) > (…)
-- only over plain columns: that seek is what makes a later page as cheap as the first.
ALTER TABLE conversations ADD COLUMN wait_rank INTEGER
    GENERATED ALWAYS AS (waiting_since IS NULL) VIRTUAL;
ALTER TABLE conversations ADD COLUMN wait_at INTEGER
    GENERATED ALWAYS AS (coalesce(waiting_since, last_message_at)) VIRTUAL;

-- The inbox list's two orders, keyset-paged (store/inbox_list.rs).
CREATE INDEX conversations_inbox_recent ON conversations (status, last_message_at, id);
CREATE INDEX conversations_inbox_waiting ON conversations (status, wait_rank, wait_at, id);
