-- Forward-only: never edit this file once released.

-- Retention per site (issue #18): conversations are deleted this many days after they were last
-- active (their last message, or their closing if later). NULL keeps everything, the default.
-- At most 100 years, so a typo cannot overflow the cutoff arithmetic.
ALTER TABLE sites ADD COLUMN retention_days INTEGER
    CHECK (retention_days IS NULL OR retention_days BETWEEN 1 AND 36500);

-- The retention purge asks "which conversations of this site were last active before the
-- cutoff?" with exactly this expression (store/purge.rs), so the index answers it without a scan.
CREATE INDEX conversations_last_active
    ON conversations (site_id, max(last_message_at, coalesce(closed_at, 0)));

-- Mail and webhook jobs name their conversation in `args` (chat posts name only the message, which
-- `jobs_message` indexes). A purge or an erasure deletes a conversation's jobs through this index
-- instead of scanning every job.
CREATE INDEX jobs_conversation ON jobs (json_extract(args, '$.conversation_id'))
    WHERE json_extract(args, '$.conversation_id') IS NOT NULL;

-- Finding a person by email address (the admin's privacy page, `porch export --email`).
CREATE INDEX visitors_email ON visitors (email COLLATE NOCASE) WHERE email IS NOT NULL;
