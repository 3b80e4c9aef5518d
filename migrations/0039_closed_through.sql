-- A site closed for a holiday (docs/widget.md#business-hours). Forward-only: never edit this
-- file once released.

-- The last day the site is closed, whatever its weekly hours say, as a date in the site's time
-- zone (`2026-12-31`); NULL when no closure is set. Kept beside the weekly hours so that a
-- holiday does not make the admin delete and retype them.
ALTER TABLE site_hours ADD COLUMN closed_through TEXT;
