-- Jobs another process wrote (`porch erase`'s `visitor.erased` notices), noted for a running
-- server's runner, which reads them at its safety poll and then deletes the note (docs/jobs.md).
-- Its own jobs reach it at their commit; the poll's other read, of ids above the highest the
-- runner has seen, misses these whenever the server wrote a newer job first.
-- Forward-only: never edit this file once released.
CREATE TABLE jobs_from_elsewhere (
    job_id INTEGER PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE
) STRICT;
