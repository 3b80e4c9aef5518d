-- Forward-only: never edit this file once released.

-- Every message rewrites each index on `conversations.last_message_at` (the entry's old place and
-- its new one), so each such index costs the writer on the hottest path. `conversations_site_recent`
-- (site_id, last_message_at) had no query of its own: the inbox's orders use
-- `conversations_inbox_recent` and `conversations_inbox_waiting`, and what looks conversations up
-- by site (the retention purge, counts before a site is deleted, the site's foreign key) uses
-- `conversations_last_active`, which also starts with site_id (docs/capacity.md, "Twenty
-- thousand a second").
DROP INDEX conversations_site_recent;
