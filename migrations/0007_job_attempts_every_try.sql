-- Forward-only: never edit this file once released.

-- `job_attempts` was keyed by (job_id, attempt), but `attempt` is the retry budget's counter: a
-- 429 gives its attempt back and a manual retry starts again at 0, so the next try overwrote
-- the row of the one before (a run of Slack 429s left no `rate_limited` row at all). Every try
-- now gets its own row, keyed by `seq`, the try's place among all of the job's tries (1, 2, 3,
-- …); `attempt` stays the budget's count, so a rate-limited try shares its number with the try
-- after it. WITHOUT ROWID keyed by job as before: one B-tree per insert, and the next `seq` is
-- found by a seek in the very place the row goes.
CREATE TABLE job_attempts_by_try (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    attempt     INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('delivered', 'retry', 'rate_limited', 'failed', 'blocked')),
    http_status INTEGER,
    error       TEXT,
    PRIMARY KEY (job_id, seq)
) STRICT, WITHOUT ROWID;

-- The rows kept so far were one per (job, attempt); numbered in that order.
INSERT INTO job_attempts_by_try
    (job_id, seq, attempt, started_at, finished_at, outcome, http_status, error)
SELECT job_id, row_number() OVER (PARTITION BY job_id ORDER BY attempt), attempt, started_at,
       finished_at, outcome, http_status, error
  FROM job_attempts;

DROP TABLE job_attempts;
ALTER TABLE job_attempts_by_try RENAME TO job_attempts;
