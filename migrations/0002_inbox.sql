-- The admin inbox: per-agent read state, and one-time links for invitations and password resets.
-- Forward-only: never edit this file once released.

-- How far each agent has read each conversation. A conversation is unread for an agent while it
-- has a visitor message with an id above `last_read_id` (message ids only grow).
CREATE TABLE conversation_reads (
    user_id         INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    last_read_id    INTEGER NOT NULL,
    PRIMARY KEY (user_id, conversation_id)
) STRICT, WITHOUT ROWID;

-- Invitation and password-reset links. The link carries a random token; only its SHA-256 is kept,
-- so a copy of the database cannot be turned into working links. Single use (`used_at`), and
-- short-lived (`expires_at`).
CREATE TABLE account_links (
    token_hash BLOB PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('invite', 'reset')),
    created_by INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX account_links_user ON account_links (user_id);

-- Sessions of a disabled user are deleted, and `expires_at` is checked on every request; this
-- index keeps the periodic purge of expired sessions cheap.
CREATE INDEX sessions_expiry ON sessions (expires_at);
