-- Forward-only: never edit this file once released.

-- Single sign-on (issue #14): which OpenID Connect account (issuer and subject, the provider's
-- stable id for a person) belongs to which Porch user. Written on a user's first SSO sign-in;
-- after that the same user only signs in through SSO with this subject, so an account at the
-- provider whose email later changes to a colleague's cannot take the colleague's place.
-- One link per user and one user per subject. Nothing else from the provider is stored.
CREATE TABLE oidc_links (
    user_id    INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (issuer, subject)
) STRICT;
