-- Business hours (docs/widget.md#business-hours): a site's time zone, weekly opening spans and
-- what the widget does while closed. Forward-only: never edit this file once released.

-- A separate table, not columns of `sites`: only sites with hours have a row, and a site without
-- one is always open. `days` holds the seven days' spans, Monday first, one line each, as the
-- admin page shows them (`09:00-12:00, 13:00-17:30`; an empty line is a closed day); the server
-- parses them with the time zone (an IANA name) when the site is loaded.
CREATE TABLE site_hours (
    site_id      INTEGER PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
    time_zone    TEXT NOT NULL,
    days         TEXT NOT NULL,
    away_message TEXT NOT NULL DEFAULT '',
    -- 'email': ask for the visitor's address; 'accept': take chats with a "we reply by email" note.
    out_of_hours TEXT NOT NULL CHECK (out_of_hours IN ('email', 'accept')),
    updated_at   INTEGER NOT NULL
) STRICT;
