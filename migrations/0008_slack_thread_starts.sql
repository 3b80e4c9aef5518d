-- Forward-only: never edit this file once released.

-- A conversation's Slack thread header that Porch set out to post, written (and committed) before
-- the post. A row without a `slack_threads` row means an attempt may have reached Slack without
-- Porch learning its `ts` (a timeout, a crash): the next attempt first looks for that header in
-- the channel's history, from `attempted_at` (ms) on, instead of posting a second one.
CREATE TABLE slack_thread_starts (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    team_id         TEXT NOT NULL,
    channel_id      TEXT NOT NULL,
    attempted_at    INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, team_id, channel_id)
) STRICT, WITHOUT ROWID;

-- Further thread roots of a conversation: headers that exist in Slack besides the one in
-- `slack_threads` (found in the history, or named by a reply in them). Porch posts only into
-- `slack_threads`; a reply in any of these still reaches the conversation.
CREATE TABLE slack_thread_roots (
    team_id         TEXT NOT NULL,
    channel_id      TEXT NOT NULL,
    thread_ts       TEXT NOT NULL,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    PRIMARY KEY (team_id, channel_id, thread_ts)
) STRICT, WITHOUT ROWID;
CREATE INDEX slack_thread_roots_conversation ON slack_thread_roots (conversation_id);
