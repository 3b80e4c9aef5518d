-- Agents tag conversations (docs/admin.md, "Tags") to sort and find them: "refund", "vip".
-- A tag is a row of its own, so the inbox filters by a number (an index of its conversations)
-- and the list of tags to choose from is one small table. A tag no conversation has any more is
-- deleted with its last use (removed, or its conversation purged or erased).
-- Forward-only: never edit this file once released.
-- AUTOINCREMENT: a deleted tag's id is never given to a new one, so a live inbox list that
-- filters by the id it looked up never starts showing another tag's conversations.
CREATE TABLE tags (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Lower case, one space between words, at most 40 characters (values/tag.rs).
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE conversation_tags (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    tag_id          INTEGER NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
    PRIMARY KEY (conversation_id, tag_id)
) WITHOUT ROWID;

-- A tag's conversations, for the inbox's and the API's filter.
CREATE INDEX conversation_tags_tag ON conversation_tags (tag_id, conversation_id);
