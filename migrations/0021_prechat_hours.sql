-- The pre-chat form (docs/widget.md#pre-chat-form) and business hours
-- (docs/widget.md#business-hours). Forward-only: never edit this file once released.

-- A separate table, not columns of `sites`: only sites with hours have a row, and a site without
-- one is always open. `days` holds the seven days' spans, Monday first, one line each, as the
-- admin page shows them (`09:00-12:00, 13:00-17:30`; an empty line is a closed day); the server
-- parses them with the time zone (an IANA name) when the site is loaded.
CREATE TABLE site_hours (
    site_id      INTEGER PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
    time_zone    TEXT NOT NULL,
    days         TEXT NOT NULL,
    away_message TEXT NOT NULL DEFAULT '',
    -- The away message in other languages, as typed on the hours page: `de: …`, one a line
    -- (codes checked where the page is parsed, as for site_greetings).
    away_messages TEXT NOT NULL DEFAULT '',
    -- 'email': ask for the visitor's address; 'accept': take chats with a "we reply by email" note.
    out_of_hours TEXT NOT NULL CHECK (out_of_hours IN ('email', 'accept')),
    updated_at   INTEGER NOT NULL
) STRICT;

-- A site's pre-chat form: which fields the widget asks before the first message, each 'off',
-- 'optional' or 'required', and the label of the site's own question. No row: no form.
CREATE TABLE site_prechat (
    site_id        INTEGER PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
    name_field     TEXT NOT NULL CHECK (name_field IN ('off', 'optional', 'required')),
    email_field    TEXT NOT NULL CHECK (email_field IN ('off', 'optional', 'required')),
    question       TEXT NOT NULL DEFAULT '',
    question_field TEXT NOT NULL CHECK (question_field IN ('off', 'optional', 'required')),
    updated_at     INTEGER NOT NULL
) STRICT;

-- A visitor's answers, stored once with their first message after the form was shown: the
-- question as it was asked and the answer (the name and email go to `name` and `email` where
-- those are still empty). `prechat_at` set means answered: the widget does not ask again.
ALTER TABLE visitors ADD COLUMN prechat_question TEXT;
ALTER TABLE visitors ADD COLUMN prechat_answer TEXT;
ALTER TABLE visitors ADD COLUMN prechat_at INTEGER;
