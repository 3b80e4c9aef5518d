-- Known visitors (docs/widget.md#known-visitors): a site may vouch for its logged-in users with an
-- HMAC of the user's id under a per-site identity secret. Forward-only: never edit this file once
-- released.

-- The per-site identity secret, sealed like integration secrets (server/src/secrets, associated
-- data `porch:sites.identity_secret:<site id>`), so a copy of the database alone cannot forge a
-- user's identity. A separate table, not a column of `sites`: only sites that turned known
-- visitors on have a row, and the secret never travels with the site's settings.
CREATE TABLE site_identity_secrets (
    site_id    INTEGER PRIMARY KEY REFERENCES sites (id) ON DELETE CASCADE,
    secret     TEXT NOT NULL,
    rotated_at INTEGER NOT NULL
) STRICT;

-- The site's user id of a verified visitor. A verified user's visitor row is keyed by a
-- token_hash derived from the site and this id (never the hash of a browser's token), so every
-- browser that proves the same user reaches the same row; `name` and `email` then hold what the
-- site vouched for.
ALTER TABLE visitors ADD COLUMN user_id TEXT;
-- What a page claimed about the visitor without a valid user_hash: shown to agents as
-- unverified, never used to find or merge visitors.
ALTER TABLE visitors ADD COLUMN claimed_user_id TEXT;
ALTER TABLE visitors ADD COLUMN claimed_name TEXT;
ALTER TABLE visitors ADD COLUMN claimed_email TEXT;
