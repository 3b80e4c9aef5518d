-- Forward-only: never edit this file once released.

-- Failed sign-ins aggregate per action, actor, address, minute and now also `detail` (the
-- refusal's reason): before, one row per minute took every failure of its actor and address,
-- showing the first one's detail, so a cheap refusal (a single sign-on callback with a bad
-- `state`) hid forged ID tokens that followed it in the same minute, and a refused SSO sign-in
-- of a disabled account read as wrong passwords. `detail` is never NULL (`DEFAULT '{}'`).
DROP INDEX audit_events_failure_minute;
CREATE UNIQUE INDEX audit_events_failure_minute
    ON audit_events (action, actor, ip, minute, detail) WHERE minute IS NOT NULL;
