-- Forward-only: never edit this file once released.

-- Deliveries being retried after an error, per integration: a destination is Failing while one
-- of them waits or is being sent again, even when newer deliveries went out (docs/admin.md,
-- "Destination health"). A job is in it when queued after at least one try (a failed try, a 429's
-- wait, or a try a restart cut short) or running a second or later try; the query reading it
-- keeps those whose last try was a `retry`. A first insert (attempt 0) and a first try (running
-- at attempt 1) are not in it, so the hot path never touches it.
CREATE INDEX jobs_integration_retrying ON jobs (integration_id, id)
    WHERE (state = 'queued' AND attempt > 0) OR (state = 'running' AND attempt > 1);
