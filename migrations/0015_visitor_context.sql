-- What the widget tells about the visitor's browser, shown to agents beside the conversation:
-- where they came from (the referrer of the page they first chatted on), their language and
-- their time zone (so agents see the visitor's local time). All optional; see
-- docs/widget-protocol.md (hello). Forward-only: never edit this file once released.
ALTER TABLE visitors ADD COLUMN referrer TEXT;
ALTER TABLE visitors ADD COLUMN language TEXT;
ALTER TABLE visitors ADD COLUMN time_zone TEXT;
