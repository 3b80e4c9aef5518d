-- An agent can snooze an open conversation (docs/admin.md, "Snooze"): it leaves the Open list
-- and the unread counts until `snoozed_until` (Unix ms), or until the visitor writes, whichever
-- comes first. NULL: not snoozed. Only open conversations are snoozed; closing one clears it.
-- The partial index serves the alarm's "which snooze ends next" and stays as small as the
-- number of snoozed conversations.
-- Forward-only: never edit this file once released.
ALTER TABLE conversations ADD COLUMN snoozed_until INTEGER;
CREATE INDEX conversations_snoozed ON conversations (snoozed_until) WHERE snoozed_until IS NOT NULL;
