-- Deliveries beyond Slack: Discord forum threads and outgoing webhooks.
-- Forward-only: never edit this file once released.

-- The Discord thread of a conversation in a forum channel, per integration (a webhook URL
-- belongs to one channel). Created by the conversation's first post (`thread_name`); every later
-- post goes to it with `?thread_id=`.
CREATE TABLE discord_threads (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    integration_id  INTEGER NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    thread_id       TEXT NOT NULL,
    PRIMARY KEY (conversation_id, integration_id)
) STRICT, WITHOUT ROWID;

-- The delivery log of a webhook endpoint lists its jobs newest first.
CREATE INDEX jobs_integration_recent ON jobs (integration_id, id);

-- Conversations the unanswered-conversation digest already told agents about, so each is in one
-- digest only.
CREATE TABLE email_alerts (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    sent_at         INTEGER NOT NULL
) STRICT;
