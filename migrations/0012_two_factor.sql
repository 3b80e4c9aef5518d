-- Forward-only: never edit this file once released.

-- Two-factor sign-in with TOTP (issue #14). One row per user who started or finished setting it
-- up. `secret` is the shared HMAC key (20 bytes), read and written only through
-- `store::save_totp_secret` / `store::load_totp_secret` so it can be sealed at rest there.
-- `confirmed_at` is NULL while the setup waits for a first correct code (a pending secret, not
-- yet asked for at sign-in). `last_step` is the last 30-second step a code was accepted for: a
-- code is accepted only for a later step, so a code (or an earlier one) cannot be replayed.
CREATE TABLE user_totp (
    user_id      INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret       BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    confirmed_at INTEGER,
    last_step    INTEGER
) STRICT;

-- Recovery codes: only their SHA-256 (each has 50 random bits, so a fast hash is enough, like
-- session and link tokens). Each works once (`used_at`); a new set replaces the old one.
CREATE TABLE recovery_codes (
    user_id   INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash BLOB NOT NULL,
    used_at   INTEGER,
    PRIMARY KEY (user_id, code_hash)
) STRICT, WITHOUT ROWID;
