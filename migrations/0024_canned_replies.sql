-- Forward-only: never edit this file once released.

-- Canned replies (docs/admin.md#canned-replies): text an agent inserts into the reply box by
-- its shortcut. Shared ones (owner_id NULL) are managed by admins and offered to everyone;
-- personal ones belong to one user and go with them.
CREATE TABLE canned_replies (
    id         INTEGER PRIMARY KEY,
    owner_id   INTEGER REFERENCES users (id) ON DELETE CASCADE,
    -- Lowercase letters, digits, '-' and '_' (checked by the domain, chat/canned.rs).
    shortcut   TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- One shortcut means one reply per owner, and once among the shared ones (NULLs are distinct
-- in a plain UNIQUE, hence the expression). A personal reply may reuse a shared shortcut: the
-- picker shows both, labelled.
CREATE UNIQUE INDEX canned_replies_shortcut ON canned_replies (coalesce(owner_id, 0), shortcut);
