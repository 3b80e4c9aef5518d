-- Forward-only: never edit this file once released.

-- The runner holds a bounded window of each rate key's queued jobs in memory and reads the rest
-- from SQLite in id order as the window empties (docs/jobs.md), so queued jobs are looked up by
-- (rate_key, id). Nothing looked them up by (lane, run_at): the runner keeps that order in
-- memory. Swapping one partial index for the other keeps the pages each state change writes
-- the same.
DROP INDEX jobs_ready;
CREATE INDEX jobs_queued ON jobs (rate_key, id) WHERE state = 'queued';
