-- Forward-only: never edit this file once released.

-- What a `slack.post` job of a message with attachments has done in Slack so far, so a retry
-- (a 429 or 5xx from files.completeUploadExternal, a blocked integration resumed, a crash)
-- never posts the text or shares a file a second time. `part` is 'text' (`slack_ref` is the
-- reply's ts) or an attachment's public id (`slack_ref` is Slack's file id). A message without
-- attachments is one post and needs no row: the job's own state records it.
CREATE TABLE slack_file_shares (
    integration_id INTEGER NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    message_id     INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    part           TEXT NOT NULL,
    slack_ref      TEXT NOT NULL,
    done_at        INTEGER NOT NULL,
    PRIMARY KEY (integration_id, message_id, part)
) STRICT, WITHOUT ROWID;
CREATE INDEX slack_file_shares_message ON slack_file_shares (message_id);
