-- Forward-only: never edit this file once released.

-- Deliveries waiting for another try after an error, per integration: a destination is Failing
-- while one of them waits, even when newer deliveries went out (docs/admin.md, "health"). A job
-- enters on its first failed try and leaves when it runs again, so the hot path's inserts
-- (attempt 0) and first tries never touch this index.
CREATE INDEX jobs_integration_retrying ON jobs (integration_id, id)
    WHERE state = 'queued' AND attempt > 0;
