-- A holiday closure that starts on a later day (docs/widget.md#business-hours). Forward-only:
-- never edit this file once released.

-- The first day of the closure, as a date in the site's time zone (`2026-12-24`); NULL closes
-- from the save, as every closure saved before this column did.
ALTER TABLE site_hours ADD COLUMN closed_from TEXT;
