-- Who has read a conversation how far, looked up by conversation: the live inbox reads one
-- conversation's markers for every watching agent at once (one read per event, not one per
-- agent). Forward-only: never edit this file once released.
CREATE INDEX conversation_reads_conversation ON conversation_reads (conversation_id, user_id, last_read_id);
