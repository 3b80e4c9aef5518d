-- Forward-only: never edit this file once released.

-- Job and API token ids are never given twice. Without AUTOINCREMENT SQLite gives a new row the
-- largest id plus one, so once the newest rows were deleted (the job retention, an erasure, a
-- revoked token) their ids went to new ones. A webhook's `webhook-id` is `msg_porch_<job id>`
-- and receivers skip an id they have processed (docs/integrations/webhooks.md), so a reused job
-- id dropped a new event there; a token id in the audit log named two tokens. Ids deleted before
-- this migration may still be given once more: nothing records them.
--
-- SQLite cannot add AUTOINCREMENT to a table, so both are rebuilt (the runner turns foreign key
-- enforcement off while migrating, so dropping `jobs` does not cascade to `job_attempts`, and
-- checks every reference before committing). The columns keep their order, so `SELECT *` copies.

CREATE TABLE jobs_new (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO jobs_new SELECT * FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_unfinished ON jobs (state) WHERE state IN ('running', 'failed', 'blocked');
CREATE INDEX jobs_done ON jobs (finished_at) WHERE state = 'done';
CREATE UNIQUE INDEX jobs_unique ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('queued', 'running', 'blocked');
CREATE INDEX jobs_message ON jobs (json_extract(args, '$.message_id'))
    WHERE json_extract(args, '$.message_id') IS NOT NULL;
CREATE INDEX jobs_integration_recent ON jobs (integration_id, id);
CREATE INDEX jobs_integration_unfinished ON jobs (integration_id)
    WHERE state IN ('queued', 'running', 'blocked');
CREATE INDEX jobs_conversation ON jobs (json_extract(args, '$.conversation_id'))
    WHERE json_extract(args, '$.conversation_id') IS NOT NULL;
CREATE INDEX jobs_queued ON jobs (rate_key, id) WHERE state = 'queued';

CREATE TABLE api_tokens_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   BLOB NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    scope        TEXT NOT NULL DEFAULT 'read-write' CHECK (scope IN ('read', 'read-write')),
    -- Milliseconds since the epoch; NULL never expires.
    expires_at   INTEGER
) STRICT;
INSERT INTO api_tokens_new SELECT * FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
