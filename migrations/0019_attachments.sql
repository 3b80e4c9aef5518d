-- Files and images that visitors and agents attach to messages (issue #16, docs/widget.md
-- "Attachments"). The bytes live in this database (BLOBs in `attachment_chunks`), so the one
-- Litestream replica of the file backs them up with everything else and an erasure deletes
-- them in the same transactions as the messages they belong to. Forward-only: never edit this
-- file once released.

-- The largest attachment a site accepts, in bytes (0 turns attachments off for the site).
-- The ceiling is Porch's hard cap on an upload (25 MiB).
ALTER TABLE sites ADD COLUMN attachment_max_bytes INTEGER NOT NULL DEFAULT 10485760
    CHECK (attachment_max_bytes BETWEEN 0 AND 26214400);

CREATE TABLE attachments (
    id              INTEGER PRIMARY KEY,
    -- What clients name: random and unguessable, so ids of other people's uploads cannot be
    -- enumerated (permission is still checked on every read).
    public_id       TEXT NOT NULL UNIQUE,
    site_id         INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    -- The uploader: a visitor (the SHA-256 of their token: an upload may come before their
    -- first message, when no visitor row exists yet) or an agent.
    token_hash      BLOB,
    user_id         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    -- Set once, when a message takes the upload; an upload still NULL after an hour is swept.
    message_id      INTEGER REFERENCES messages (id) ON DELETE CASCADE,
    conversation_id INTEGER REFERENCES conversations (id) ON DELETE CASCADE,
    -- Sanitised file name (no path, no control characters), as shown and downloaded.
    name            TEXT NOT NULL,
    -- Decided by sniffing the bytes, never taken from the client.
    content_type    TEXT NOT NULL,
    size            INTEGER NOT NULL,
    -- All chunks are written: only complete uploads can be attached or served.
    is_complete     INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX attachments_message ON attachments (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX attachments_unattached ON attachments (created_at) WHERE message_id IS NULL;
CREATE INDEX attachments_token ON attachments (token_hash) WHERE token_hash IS NOT NULL;

-- The bytes, in chunks of at most 256 KiB, each written in its own short writer transaction so
-- a large upload never holds a visitor's message behind it for long.
CREATE TABLE attachment_chunks (
    attachment_id INTEGER NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (attachment_id, seq)
) STRICT;
