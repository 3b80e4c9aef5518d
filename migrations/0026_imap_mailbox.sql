-- The IMAP mailbox of replies by email as set on the email page, one row at most, for every site
-- (docs/integrations/email.md#replies-by-email). PORCH_IMAP_URL, when set, wins over it and this
-- row is left unused. The password is sealed with the install's key (associated data
-- `porch:imap_mailbox.password`), re-sealed by `porch secrets rotate`, and never shown again.
-- Forward-only: never edit this file once released.
CREATE TABLE imap_mailbox (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    host       TEXT NOT NULL,
    port       INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    -- Implicit TLS (993) or none (143, for a server on the same host); no STARTTLS.
    tls        TEXT NOT NULL CHECK (tls IN ('implicit', 'none')),
    user       TEXT NOT NULL,
    password   TEXT NOT NULL,
    folder     TEXT NOT NULL,
    -- The interval between looks, 1 s to 1 h as the page and PORCH_IMAP_POLL allow.
    poll_ms    INTEGER NOT NULL CHECK (poll_ms BETWEEN 1000 AND 3600000),
    updated_at INTEGER NOT NULL
);
