-- Find a message's deliveries (the conversation page shows them per message) without scanning
-- every job: the message id lives in the job's JSON arguments.
CREATE INDEX jobs_message ON jobs (json_extract(args, '$.message_id'))
    WHERE json_extract(args, '$.message_id') IS NOT NULL;
