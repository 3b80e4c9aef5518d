"""The rollback of docs/operations.md from the database's side: a backup restored from before an
upgrade has the older schema, and the binary that will serve it (`porch check`, then `porch
serve`) must take it: check passes with a note, serve migrates it. The older database is built
from the repository's own migrations, as the older Porch built it (one transaction each,
`user_version` set to its number)."""

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

    server = processes.serve(porch_bin, data)
    server.wait_ready()
    server.process.terminate()
    server.process.wait(timeout=30)
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
