#!/usr/bin/env python3
"""How long a fixed integration's resume holds SQLite's write lock with 1,000,000 blocked jobs.

Usage: resume.py PORCH_BINARY [JOBS]

Makes a scratch database with `porch migrate`, seeds JOBS blocked Slack jobs (default 1,000,000,
ten per conversation, one channel) for one broken integration, and on two copies of it times:

- `one`: the resume before 2026-12-03, one transaction (every blocked job queued, each rate key's
  oldest read back);
- `paged`: the resume since, the statement `store::requeue_blocked_jobs_of_integration` runs, a
  page of 1,000 jobs a transaction, the last marking the integration healthy (the server's check
  of the integration's mark before each page, one indexed read, is left out).

Each transaction is BEGIN IMMEDIATE ... COMMIT with synchronous=FULL in WAL mode, as the server's
writer runs them; the time from BEGIN to the end of COMMIT is how long the writer (and so every
visitor's acknowledgement) would wait behind it. Python's sqlite3 is not the server's bundled
SQLite, and the server's writer also runs other writes between pages: this times the statements.
"""
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

PAGE = 1000
PAGE_SQL = """UPDATE jobs SET state = 'queued', run_at = ?3 WHERE id IN
  (SELECT id FROM jobs INDEXED BY jobs_integration_unfinished
    WHERE integration_id = ?1 AND state IN ('queued', 'running', 'blocked')
      AND state = 'blocked' AND id > ?2 ORDER BY id LIMIT ?4)
RETURNING rate_key, id"""


def connect(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=wal")
    conn.execute("PRAGMA synchronous=full")
    return conn


def seed(porch, directory, jobs):
    subprocess.run([porch, "migrate", "--data-dir", directory], check=True,
                   stdout=subprocess.DEVNULL)
    conn = connect(os.path.join(directory, "porch.db"))
    conn.execute("INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0)")
    conn.execute("INSERT INTO integrations (id, site_id, kind, name, config, secrets, is_enabled,"
                 " status, created_at, updated_at)"
                 " VALUES (1, 1, 'slack', 'Slack', '{}', '', 1, 'broken', 0, 0)")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key,"
        " max_attempts, run_at, created_at)"
        " VALUES ('chat', 'slack.post', ?, 1, 'blocked', ?, 'slack:C1', 25, 0, 0)",
        ((json.dumps({"message_id": i, "conversation_id": i // 10}), f"conv:{i // 10}:int:1")
         for i in range(jobs)))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def held(conn, work):
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    result = work()
    conn.execute("COMMIT")
    return time.perf_counter() - start, result


def one(conn):
    def work():
        conn.execute("UPDATE integrations SET status = 'ok', last_error = NULL WHERE id = 1")
        count = conn.execute(
            "UPDATE jobs SET state = 'queued', run_at = 5 WHERE integration_id = 1"
            " AND state IN ('queued', 'running', 'blocked') AND state = 'blocked'").rowcount
        conn.execute("SELECT rate_key, min(id) FROM jobs WHERE integration_id = 1"
                     " AND state IN ('queued', 'running', 'blocked') AND state = 'queued'"
                     " GROUP BY rate_key").fetchall()
        return count
    seconds, count = held(conn, work)
    return {"jobs": count, "writes": 1, "longest_ms": seconds * 1e3, "total_s": seconds}


def paged(conn):
    holds, count, after = [], 0, 0
    while True:
        def work():
            rows = conn.execute(PAGE_SQL, (1, after, 5, PAGE)).fetchall()
            if len(rows) < PAGE:
                conn.execute("UPDATE integrations SET status = 'ok', last_error = NULL"
                             " WHERE id = 1")
            return rows
        seconds, rows = held(conn, work)
        holds.append(seconds)
        count += len(rows)
        if len(rows) < PAGE:
            break
        after = max(job_id for _, job_id in rows)
    holds.sort()
    return {"jobs": count, "writes": len(holds), "longest_ms": holds[-1] * 1e3,
            "p99_ms": holds[math.ceil(len(holds) * 0.99) - 1] * 1e3,
            "median_ms": statistics.median(holds) * 1e3, "total_s": sum(holds)}


def main():
    porch = sys.argv[1]
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    with tempfile.TemporaryDirectory() as scratch:
        seeded = os.path.join(scratch, "seeded")
        seed(porch, seeded, jobs)
        print(f"sqlite {sqlite3.sqlite_version}, {jobs} blocked jobs,"
              f" database {os.path.getsize(os.path.join(seeded, 'porch.db')) / 1e6:.0f} MB")
        for name, resume in (("one", one), ("paged", paged)):
            copy = os.path.join(scratch, name)
            shutil.copytree(seeded, copy)
            conn = connect(os.path.join(copy, "porch.db"))
            result = resume(conn)
            left = conn.execute("SELECT count(*) FROM jobs WHERE state = 'blocked'").fetchone()[0]
            status = conn.execute("SELECT status FROM integrations").fetchone()[0]
            conn.close()
            print(name, json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                    for k, v in result.items()}),
                  f"left blocked {left}, integration {status}")


if __name__ == "__main__":
    main()
