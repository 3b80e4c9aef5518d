-- The widget's language per site (docs/widget.md, "Languages"): '' lets each visitor's browser
-- choose; a language code ('de', 'fr', ...) fixes it. The codes are checked where settings are
-- parsed (values::WIDGET_LOCALES), not here, so adding a language needs no migration.
ALTER TABLE sites ADD COLUMN locale TEXT NOT NULL DEFAULT '';

-- Greetings in other languages: the panel shows the one in its language instead of
-- sites.greeting (one row per site and language code; codes checked where settings are parsed).
CREATE TABLE site_greetings (
    site_id  INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    locale   TEXT NOT NULL,
    greeting TEXT NOT NULL,
    PRIMARY KEY (site_id, locale)
) STRICT, WITHOUT ROWID;
