"""The litestream service's health check of docker/compose.yml, run as compose runs it (its
command, with the container's socket and database paths mapped to a temporary directory) against
a real Litestream using docker/litestream.yml and a file:// replica: healthy while replication
works, unhealthy as soon as a change cannot be shipped (the replica directory replaced by a
file, as an S3 answering 403 refuses every upload), healthy again once the replica is back."""

import sqlite3
import time

import yaml

from conftest import REPO, WAIT, run

DOCKER = REPO / "docker"


def write(db) -> None:
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO t (x) VALUES (randomblob(100))")
    conn.commit()
    conn.close()


def test_the_health_check_fails_while_the_replica_refuses_changes(
    tmp_path, litestream_bin, processes
):
    compose = yaml.safe_load((DOCKER / "compose.yml").read_text())
    service = compose["services"]["litestream"]
    container_socket = service["environment"]["LITESTREAM_SOCKET"]
    socket, db, replica = tmp_path / "ls.sock", tmp_path / "porch.db", tmp_path / "replica"
    check = [str(litestream_bin) if arg == "litestream" else arg
             for arg in service["healthcheck"]["test"][1:]]
    check = [str(socket) if arg == container_socket else
             str(db) if arg == "/data/porch.db" else arg for arg in check]

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    env = {"PORCH_DATA_DIR": str(tmp_path), "LITESTREAM_REPLICA_URL": f"file://{replica}",
           "LITESTREAM_SYNC_INTERVAL": "1s", "LITESTREAM_SOCKET": str(socket)}
    with open(tmp_path / "litestream.log", "w") as log:
        litestream = processes.start([litestream_bin, "replicate", "-config",
                                      DOCKER / "litestream.yml"], env=env, stdout=log, stderr=log)

    def healthy() -> bool:
        return run(check, check=False).returncode == 0

    deadline = time.monotonic() + WAIT
    while not healthy():
        assert litestream.poll() is None, (tmp_path / "litestream.log").read_text()
        assert time.monotonic() < deadline, "never healthy"
        time.sleep(0.1)
    write(db)
    assert healthy()
    while not replica.is_dir():
        assert time.monotonic() < deadline, "no replica written"
        time.sleep(0.1)

    # The replica refuses everything from now on; the next change cannot be shipped.
    replica.rename(tmp_path / "replica.ok")
    replica.write_text("not a directory")
    write(db)
    failed = run(check, check=False)
    assert failed.returncode != 0, failed.stdout
    assert "not a directory" in failed.stderr, failed.stderr

    replica.unlink()
    (tmp_path / "replica.ok").rename(replica)
    deadline = time.monotonic() + WAIT
    while not healthy():
        assert time.monotonic() < deadline, "never healthy again: " + run(check, check=False).stderr
        time.sleep(0.2)
