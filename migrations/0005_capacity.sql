-- Capacity: per-minute rollups of the sampler's per-second figures, and load-test runs.
-- Forward-only: never edit this file once released.

-- One row per minute (`at` = start of the minute, Unix ms): the mean and the max over that
-- minute's seconds of each figure the sampler records (server/src/metrics/series.rs lists them
-- in this order). NULL where the minute had nothing to measure (no message: no ack latency).
-- Columns rather than a JSON blob so the 24-hour and 7-day graphs can aggregate in SQL; at about
-- 450 bytes a row, the 30 days kept (43,200 rows) take some 20 MB. Pruned by the sampler.
CREATE TABLE metrics_minutes (
    at      INTEGER PRIMARY KEY,
    samples INTEGER NOT NULL,
    messages_per_sec_mean REAL,
    messages_per_sec_max REAL,
    ack_p50_ms_mean REAL,
    ack_p50_ms_max REAL,
    ack_p99_ms_mean REAL,
    ack_p99_ms_max REAL,
    ack_max_ms_mean REAL,
    ack_max_ms_max REAL,
    widget_connections_mean REAL,
    widget_connections_max REAL,
    agent_connections_mean REAL,
    agent_connections_max REAL,
    cpu_pct_mean REAL,
    cpu_pct_max REAL,
    rss_mb_mean REAL,
    rss_mb_max REAL,
    loop_lag_p99_ms_mean REAL,
    loop_lag_p99_ms_max REAL,
    loop_lag_max_ms_mean REAL,
    loop_lag_max_ms_max REAL,
    runtime_busy_pct_mean REAL,
    runtime_busy_pct_max REAL,
    writer_batch_mean REAL,
    writer_batch_max REAL,
    commit_mean_ms_mean REAL,
    commit_mean_ms_max REAL,
    commit_max_ms_mean REAL,
    commit_max_ms_max REAL,
    writer_queue_mean REAL,
    writer_queue_max REAL,
    writer_busy_per_sec_mean REAL,
    writer_busy_per_sec_max REAL,
    job_lag_p99_ms_mean REAL,
    job_lag_p99_ms_max REAL,
    job_lag_max_ms_mean REAL,
    job_lag_max_ms_max REAL,
    deliveries_chat_per_sec_mean REAL,
    deliveries_chat_per_sec_max REAL,
    deliveries_webhook_per_sec_mean REAL,
    deliveries_webhook_per_sec_max REAL,
    deliveries_email_per_sec_mean REAL,
    deliveries_email_per_sec_max REAL,
    deliveries_maint_per_sec_mean REAL,
    deliveries_maint_per_sec_max REAL,
    rate_limited_per_sec_mean REAL,
    rate_limited_per_sec_max REAL,
    failures_per_sec_mean REAL,
    failures_per_sec_max REAL,
    open_fds_mean REAL,
    open_fds_max REAL
) STRICT;

-- A `porch loadtest` run, recorded into the live database when the load test finds it (the
-- run itself uses a scratch database). `report` is the run's full JSON result; the other
-- columns are what the capacity page lists without parsing it.
CREATE TABLE loadtest_runs (
    id          INTEGER PRIMARY KEY,
    started_at  INTEGER NOT NULL,
    -- Highest passing stair of the `porch` series, messages a second; NULL if none passed.
    capacity    INTEGER,
    -- Whether every stair of every series passed.
    is_passed   INTEGER NOT NULL,
    -- Median server CPU µs per message over the `porch` stairs that passed.
    us_per_msg  REAL,
    report      TEXT NOT NULL
) STRICT;

CREATE INDEX loadtest_runs_recent ON loadtest_runs (started_at);
