-- Forward-only: never edit this file once released.

-- `jobs_integration` indexed every job by (integration_id, state), finished ones included, so
-- each state change of every job (queued → running → done) moved its entry between two places
-- of a large index: more pages written per commit on the busiest path. Its only users look for
-- an integration's queued, running or blocked jobs (blocking, disabling and unblocking an
-- integration), so it now holds just those; the delivery log keeps using
-- `jobs_integration_recent`.
DROP INDEX jobs_integration;
CREATE INDEX jobs_integration_unfinished ON jobs (integration_id)
    WHERE state IN ('queued', 'running', 'blocked');
