-- API tokens get a scope and an optional expiry (issue #14). Tokens made before keep what they
-- could do: read-write, never expiring.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'read-write'
    CHECK (scope IN ('read', 'read-write'));
-- Milliseconds since the epoch; NULL never expires.
ALTER TABLE api_tokens ADD COLUMN expires_at INTEGER;
