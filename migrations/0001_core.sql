-- Porch core schema. Forward-only: never edit this file once released; add 0002_… instead.
-- Times are Unix milliseconds (INTEGER). Tables are STRICT so a wrong type is an error, not a surprise.

-- Install-wide values, such as the secret that signs visitor tokens (so tokens survive restarts).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;

CREATE TABLE sites (
    id         INTEGER PRIMARY KEY,
    -- Public key that the embed snippet carries; not a secret.
    key        TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    greeting   TEXT NOT NULL DEFAULT 'Hi! How can we help?',
    color      TEXT NOT NULL DEFAULT '#2563eb',
    position   TEXT NOT NULL DEFAULT 'right' CHECK (position IN ('left', 'right')),
    -- Brakes (see docs/widget-protocol.md, "The flood brake"). Per site so a busy shop and a quiet
    -- blog can each be tuned without touching the other.
    visitor_messages_per_minute    INTEGER NOT NULL DEFAULT 30 CHECK (visitor_messages_per_minute > 0),
    visitor_burst                  INTEGER NOT NULL DEFAULT 10 CHECK (visitor_burst > 0),
    flood_messages_per_minute      INTEGER NOT NULL DEFAULT 600 CHECK (flood_messages_per_minute > 0),
    flood_conversations_per_minute INTEGER NOT NULL DEFAULT 60 CHECK (flood_conversations_per_minute > 0),
    created_at INTEGER NOT NULL
) STRICT;

-- Origins (scheme://host[:port]) allowed to open the widget websocket for a site.
CREATE TABLE site_origins (
    site_id INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    origin  TEXT NOT NULL,
    PRIMARY KEY (site_id, origin)
) STRICT, WITHOUT ROWID;

-- Anonymous website visitors. The browser keeps a signed token; we keep only its SHA-256.
CREATE TABLE visitors (
    id            INTEGER PRIMARY KEY,
    site_id       INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    token_hash    BLOB NOT NULL UNIQUE,
    name          TEXT,
    email         TEXT,
    first_page    TEXT,
    last_page     TEXT,
    user_agent    TEXT,
    ip            TEXT,
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL
) STRICT;

-- Agents and admins of the inbox.
CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    name          TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'agent')),
    -- argon2id PHC string; NULL while an invited user has not chosen a password.
    password_hash TEXT,
    is_disabled   INTEGER NOT NULL DEFAULT 0 CHECK (is_disabled IN (0, 1)),
    created_at    INTEGER NOT NULL
) STRICT;

-- Browser sessions of the admin UI. Only a hash of the cookie value is stored.
CREATE TABLE sessions (
    id_hash      BLOB PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions (user_id);

-- Bearer tokens for the HTTP API and scripts. Only a hash is stored.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   BLOB NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
) STRICT;

CREATE TABLE conversations (
    id              INTEGER PRIMARY KEY,
    site_id         INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    visitor_id      INTEGER NOT NULL REFERENCES visitors (id) ON DELETE CASCADE,
    status          TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    assignee_id     INTEGER REFERENCES users (id) ON DELETE SET NULL,
    created_at      INTEGER NOT NULL,
    last_message_at INTEGER NOT NULL,
    closed_at       INTEGER
) STRICT;
-- A visitor has at most one open conversation; their next message joins it.
CREATE UNIQUE INDEX conversations_open_per_visitor ON conversations (visitor_id) WHERE status = 'open';
CREATE INDEX conversations_visitor ON conversations (visitor_id);
CREATE INDEX conversations_site_recent ON conversations (site_id, last_message_at DESC);

CREATE TABLE messages (
    -- AUTOINCREMENT so an id is never reused after a delete: clients resume "after id N".
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    author          TEXT NOT NULL CHECK (author IN ('visitor', 'agent', 'note', 'system')),
    visitor_id      INTEGER REFERENCES visitors (id) ON DELETE CASCADE,
    user_id         INTEGER REFERENCES users (id) ON DELETE SET NULL,
    -- Display name at the time of writing (agents get renamed; Slack users may have no account).
    author_name     TEXT,
    -- Chosen by the sender; makes a resend after a reconnect return the first row.
    client_id       TEXT,
    body            TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    CHECK (author <> 'visitor' OR (visitor_id IS NOT NULL AND client_id IS NOT NULL))
) STRICT;
CREATE INDEX messages_conversation ON messages (conversation_id, id);
CREATE UNIQUE INDEX messages_visitor_client ON messages (visitor_id, client_id) WHERE visitor_id IS NOT NULL;
CREATE UNIQUE INDEX messages_user_client ON messages (user_id, client_id)
    WHERE user_id IS NOT NULL AND client_id IS NOT NULL;

-- Destinations a site delivers to. Rows, not columns: one row per Slack/Discord/webhook/email setup.
CREATE TABLE integrations (
    id         INTEGER PRIMARY KEY,
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
CREATE INDEX integrations_site ON integrations (site_id) WHERE is_enabled = 1;

-- Durable deliveries, written in the same transaction as the message that causes them.
-- Design: shared/reference/integrations.md §7; the runner keeps the ready set in memory.
CREATE TABLE jobs (
    id             INTEGER PRIMARY KEY,
    lane           TEXT NOT NULL CHECK (lane IN ('chat', 'webhook', 'email', 'maint')),
    kind           TEXT NOT NULL,
    -- JSON of ids only (message_id, integration_id): the payload is built when delivering.
    args           TEXT NOT NULL,
    integration_id INTEGER REFERENCES integrations (id) ON DELETE CASCADE,
    state          TEXT NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'running', 'done', 'failed', 'blocked')),
    -- Strict FIFO group, for example 'conv:42:int:7'; NULL means unordered.
    order_key      TEXT,
    -- Pacing group for 429 pauses, for example 'slack:T1:C9'.
    rate_key       TEXT,
    -- Deduplication of debounced jobs (alert digests), for example 'alert:conv:42'.
    unique_key     TEXT,
    attempt        INTEGER NOT NULL DEFAULT 0,
    max_attempts   INTEGER NOT NULL,
    run_at         INTEGER NOT NULL,
    -- Give up after this time even if attempts remain.
    deadline_at    INTEGER,
    -- Set when a previous attempt may have had side effects (crash while running).
    is_uncertain   INTEGER NOT NULL DEFAULT 0 CHECK (is_uncertain IN (0, 1)),
    last_error     TEXT,
    -- What the destination returned: Slack ts, Discord message id, SMTP response.
    external_ref   TEXT,
    created_at     INTEGER NOT NULL,
    finished_at    INTEGER
) STRICT;
CREATE INDEX jobs_ready ON jobs (lane, run_at, id) WHERE state = 'queued';
CREATE INDEX jobs_unfinished ON jobs (state) WHERE state IN ('running', 'failed', 'blocked');
CREATE INDEX jobs_integration ON jobs (integration_id, state);
CREATE INDEX jobs_done ON jobs (finished_at) WHERE state = 'done';
CREATE UNIQUE INDEX jobs_unique ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('queued', 'running', 'blocked');

-- One row per delivery attempt, for the delivery log and the job page.
CREATE TABLE job_attempts (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('delivered', 'retry', 'rate_limited', 'failed', 'blocked')),
    http_status INTEGER,
    error       TEXT,
    PRIMARY KEY (job_id, attempt)
) STRICT, WITHOUT ROWID;

-- Slack thread per (conversation, team, channel), so a site's channel can change without
-- breaking old threads.
CREATE TABLE slack_threads (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    team_id         TEXT NOT NULL,
    channel_id      TEXT NOT NULL,
    thread_ts       TEXT NOT NULL,
    PRIMARY KEY (conversation_id, team_id, channel_id)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX slack_threads_by_ts ON slack_threads (team_id, channel_id, thread_ts);

-- Inbound Slack events already handled (Slack retries; a replay must create nothing).
CREATE TABLE slack_events (
    event_id    TEXT PRIMARY KEY,
    received_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
