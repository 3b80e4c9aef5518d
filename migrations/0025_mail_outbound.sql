-- Mails an agent started to a visitor from the conversation page
-- (docs/integrations/email.md#emailing-a-visitor). The message row is the mail's text, as the
-- agent's message in the conversation; this row marks it as sent by email and keeps the subject
-- the agent typed (the `email.agent` job reads it when sending, so every attempt sends the same
-- mail). Deleting the message (retention, erasure) deletes its row.
CREATE TABLE mail_outbound (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    subject    TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
