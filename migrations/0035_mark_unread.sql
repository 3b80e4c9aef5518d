-- An agent can mark a conversation unread again (docs/admin.md, "Unread"): a flag beside the
-- read marker, not a marker moved back, because the marker's maximum over agents is what the
-- visitor was told was "Seen", and that must not be taken back. The flag is cleared by the
-- agent's next read of the conversation.
-- Forward-only: never edit this file once released.
ALTER TABLE conversation_reads ADD COLUMN is_marked_unread INTEGER NOT NULL DEFAULT 0
    CHECK (is_marked_unread IN (0, 1));
