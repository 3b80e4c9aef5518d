"""The rollback of docs/operations.md from the database's side: a backup restored from before an
upgrade has the older schema, and the binary that will serve it (`porch check`, then `porch
serve`) must take it: check passes with a note, serve migrates it. The older database is built
from the repository's own migrations, as the older Porch built it (one transaction each,
`user_version` set to its number)."""

import signal
import time

# Porch's own SQLite generation, not the system's: see requirements.txt.
from pysqlite3 import dbapi2 as sqlite3

from conftest import REPO, run

MIGRATIONS = sorted((REPO / "migrations").glob("*.sql"))


def older_database(path, version: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for number, migration in enumerate(MIGRATIONS[:version], start=1):
        conn.executescript("BEGIN IMMEDIATE;\n" + migration.read_text()
                           + f"\nPRAGMA user_version = {number};\nCOMMIT;")
    conn.close()


def serve_until_ready_then_stop(porch_bin, processes, data) -> None:
    """Starts `porch serve` on `data`, waits until it is ready (migrated), and stops it."""
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    server.process.terminate()
    server.process.wait(timeout=30)


def test_check_accepts_an_older_schema_and_serve_migrates_it(tmp_path, porch_bin, processes):
    latest = len(MIGRATIONS)
    data = tmp_path / "data"
    data.mkdir()
    older_database(data / "porch.db", latest - 1)

    check = run([porch_bin, "check", "--db", data / "porch.db"], check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (f"schema version  {latest - 1} (ok: older than this binary's {latest}, "
            "will be migrated on start)") in check.stdout, check.stdout
    assert "result          ok" in check.stdout

    serve_until_ready_then_stop(porch_bin, processes, data)
    check = run([porch_bin, "check", "--db", data / "porch.db"])
    assert f"schema version  {latest} (ok)" in check.stdout, check.stdout


def test_check_refuses_a_newer_schema(tmp_path, porch_bin):
    path = tmp_path / "porch.db"
    older_database(path, len(MIGRATIONS))
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.commit()
    conn.close()
    check = run([porch_bin, "check", "--db", path], check=False)
    assert check.returncode != 0
    assert "comes from a newer Porch" in check.stdout


def test_a_stop_during_an_upgrade_waits_for_the_migration_under_way_not_for_every_one_left(
        tmp_path, porch_bin, processes):
    """docs/operations.md, "Stopping": a signal while migrating lets the migration under way
    commit, then stops before the next one; the next start carries on from there."""
    latest = len(MIGRATIONS)
    data = tmp_path / "data"
    data.mkdir()
    older_database(data / "porch.db", 28)
    # Enough jobs that rebuilding their table (migration 29) takes a moment to stop in.
    conn = sqlite3.connect(data / "porch.db")
    conn.executemany(
        "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) "
        "VALUES ('webhook', 'webhook.deliver', ?, 'done', 8, 0, 0)",
        ((f'{{"event":"message.created","conversation_id":{n}}}',) for n in range(300_000)))
    conn.commit()
    conn.close()

    server = processes.serve(porch_bin, data)
    deadline = time.monotonic() + 30
    while not any("sealing key" in line for line in server.log):
        assert server.process.poll() is None and time.monotonic() < deadline, "".join(server.log)
        time.sleep(0.01)
    time.sleep(0.2)
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0
    time.sleep(0.2)  # the log reader catches up
    log = "".join(server.log)
    assert "stopped before serving" in log, log
    assert "migrating stopped between migrations" in log, log
    conn = sqlite3.connect(data / "porch.db")
    reached = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert 28 < reached < latest, f"stopped at {reached}:\n{log}"

    # The next start finishes the upgrade.
    serve_until_ready_then_stop(porch_bin, processes, data)
    check = run([porch_bin, "check", "--db", data / "porch.db"])
    assert f"schema version  {latest} (ok)" in check.stdout, check.stdout


def next_job_id(path) -> int:
    """Adds a job as Porch would (its id from the table's counter) and returns its id."""
    conn = sqlite3.connect(path)
    cursor = conn.execute(
        "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) "
        "VALUES ('webhook', 'webhook.deliver', '{}', 'done', 8, 0, 0)")
    conn.commit()
    conn.close()
    return cursor.lastrowid


def test_raise_ids_after_a_rollback_gives_no_id_the_abandoned_copy_gave(tmp_path, porch_bin):
    """docs/operations.md, "Rolling back": the restored file's counters are as old as the file;
    `porch raise-ids --past old/porch.db` moves them past the abandoned copy's, on the older
    schema, without migrating it. A job id is a webhook's `webhook-id`."""
    latest = len(MIGRATIONS)
    data = tmp_path / "data"
    data.mkdir()
    older_database(data / "porch.db", latest - 1)
    for _ in range(5):
        next_job_id(data / "porch.db")
    (tmp_path / "old").mkdir()
    abandoned = tmp_path / "old" / "porch.db"
    older_database(abandoned, latest)
    for _ in range(40):
        given = next_job_id(abandoned)
    assert given == 40

    raised = run([porch_bin, "raise-ids", "--data-dir", data, "--past", abandoned])
    assert "jobs                 next id 41 (was 6)" in raised.stdout, raised.stdout
    assert next_job_id(data / "porch.db") == 41
    conn = sqlite3.connect(data / "porch.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == latest - 1, "not migrated"
    conn.close()

    # The abandoned copy lost (a disaster): a margin instead.
    raised = run([porch_bin, "raise-ids", "--data-dir", data, "--by", "100000"])
    assert "jobs                 next id 100042 (was 42)" in raised.stdout, raised.stdout
    assert next_job_id(data / "porch.db") == 100042
    refused = run([porch_bin, "raise-ids", "--data-dir", data], check=False)
    assert refused.returncode == 2, refused.stdout + refused.stderr
