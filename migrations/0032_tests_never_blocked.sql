-- Forward-only: never edit this file once released.

-- An admin's test message (`discord.test`, `email.test`) no longer waits blocked: one refused,
-- or queued when its integration was blocked or turned off, is failed with the reason
-- (docs/jobs.md). Blocked ones from before would otherwise go out when the integration is fixed.
UPDATE jobs SET state = 'failed', finished_at = coalesce(finished_at, created_at)
 WHERE state = 'blocked' AND kind LIKE '%.test';

-- The latest test of a destination, shown on its page (store::latest_test_job). Partial, so it
-- holds only the rare tests and a message's deliveries never write to it.
CREATE INDEX jobs_tests ON jobs (kind, integration_id, id) WHERE kind LIKE '%.test';
