-- Email as a channel (docs/integrations/email.md#replies-by-email).

-- The unguessable token of a conversation's mails to its visitor. Every Message-ID Porch puts on
-- those mails ends in it (`<porch.message-42.{token}@domain>`), so a reply's In-Reply-To or
-- References names it; a guessed conversation or message number alone threads nothing.
CREATE TABLE mail_threads (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    token           TEXT NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL
);

-- Every mail the IMAP reader took from the mailbox, by its Message-ID (UNIQUE: a re-poll or a
-- restart between the commit and marking the mail seen finds it here and posts nothing), with
-- what became of it: posted into a conversation, refused (not a reply to a Porch mail, or from
-- another sender than the visitor) or skipped (too large, malformed, automatic, empty), and why.
-- The admins see the latest on the email page. Rows older than 30 days are deleted by the reader.
CREATE TABLE mail_inbound (
    id              INTEGER PRIMARY KEY,
    mail_id         TEXT NOT NULL UNIQUE,
    sender          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    conversation_id INTEGER REFERENCES conversations(id) ON DELETE SET NULL,
    message_id      INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('posted', 'refused', 'skipped')),
    reason          TEXT NOT NULL,
    received_at     INTEGER NOT NULL
);
CREATE INDEX mail_inbound_received ON mail_inbound(received_at);
-- Deleting a conversation or a message (retention, erasure) looks its rows up here.
CREATE INDEX mail_inbound_conversation ON mail_inbound(conversation_id);
CREATE INDEX mail_inbound_message ON mail_inbound(message_id);
