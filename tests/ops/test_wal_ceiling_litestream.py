"""The WAL ceiling (`PORCH_WAL_LIMIT`) with a real Litestream, as an operator's drill found it:
Litestream is frozen (SIGSTOP) so its read transaction pins the WAL, the WAL grows past the
ceiling and Porch refuses writes; then Litestream is restarted, as docs/operations.md says to.
In between, a checkpoint and a write restarted the WAL (as Litestream's own checkpoint does when
it recovers), which leaves the file at its size; the new Litestream then holds its read
transaction for good, so no TRUNCATE can finish. Judged by the file, Porch refused writes
for as long as Litestream ran; judged by the frames in use, writes resume at once.
"""

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

from conftest import REPO, WAIT, Server, run

ORIGIN = "https://wal.example"
LIMIT = 128 << 20  # the smallest PORCH_WAL_LIMIT there is


def write(db_path, sql: str, *args) -> None:
    """Runs `sql` through a connection of its own, as another process's writes would."""
    db = sqlite3.connect(db_path, timeout=WAIT)
    db.execute(sql, *args)
    db.commit()
    db.close()


def grow_wal(db_path, megabytes: int) -> None:
    """Writes `megabytes` of pages, then deletes them again: while a reader pins the WAL, every
    page written lands in it."""
    write(db_path, "CREATE TABLE IF NOT EXISTS ops_ballast (b BLOB)")
    for _ in range(megabytes):
        write(db_path, "INSERT INTO ops_ballast VALUES (?)", (b"\x5a" * (1 << 20),))
    write(db_path, "DROP TABLE ops_ballast")


def restart_wal(db_path) -> None:
    """What Litestream's checkpoint does when it recovers: a PASSIVE checkpoint, then a write,
    which starts the WAL again from its beginning, with no `journal_size_limit` to shrink it."""
    db = sqlite3.connect(db_path, timeout=WAIT)
    deadline = time.monotonic() + WAIT
    # Busy while another checkpoint runs (Porch tries one a second while it refuses writes).
    while (result := db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())[0] != 0:
        assert time.monotonic() < deadline, result
        time.sleep(0.2)
    busy, frames, done = result
    assert frames == done, result
    db.close()
    write(db_path, "CREATE TABLE ops_restart (n INTEGER)")
    write(db_path, "DROP TABLE ops_restart")


async def send(ws, body: str) -> dict:
    await ws.send(json.dumps({"type": "message", "client_id": uuid.uuid4().hex, "body": body}))
    return json.loads(await asyncio.wait_for(ws.recv(), WAIT))


def pause_outside_a_checkpoint(process, db_path) -> None:
    """Pauses Porch (SIGSTOP) at a moment it holds no checkpoint: while it refuses writes it
    tries a TRUNCATE a second, waiting up to 500 ms for readers, and paused in one it would hold
    the checkpoint lock. The frozen Litestream still pins the WAL, so these tries all fail."""
    db = sqlite3.connect(db_path, timeout=WAIT)
    deadline = time.monotonic() + WAIT
    while True:
        process.send_signal(signal.SIGSTOP)
        if db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0] == 0:
            break
        process.send_signal(signal.SIGCONT)
        assert time.monotonic() < deadline, "Porch never left its checkpoint"
        time.sleep(0.6)
    db.close()


def holds_a_wal_reader(process, db_path) -> bool:
    """Whether `process` holds a read transaction that pins the WAL, read from the kernel's lock
    table: a reader of the WAL holds a shared lock on one of the read-mark bytes 124 to 127 of
    the `-shm` file (byte 123 is a reader of the database file alone, which pins nothing)."""
    shm = os.stat(f"{db_path}-shm")
    inode = f"{os.major(shm.st_dev):02x}:{os.minor(shm.st_dev):02x}:{shm.st_ino}"
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[-4:-2] == [str(process.pid), inode] and fields[-5] == "READ":
            start, end = int(fields[-2]), fields[-1]
            if start <= 127 and (end == "EOF" or int(end) >= 124):
                return True
    return False


def wait_for_its_reader(process, db_path, log_path) -> None:
    """Litestream gives no signal that it took its read transaction; the lock table does."""
    deadline = time.monotonic() + WAIT
    while not holds_a_wal_reader(process, db_path):
        assert process.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, "Litestream never took its read transaction"
        time.sleep(0.1)


def freeze_holding_its_reader(process, db_path, log_path) -> None:
    """Freezes Litestream (SIGSTOP) while it holds its read transaction. It lets go of it for a
    moment in each of its own checkpoints, so freeze, check, and thaw and retry if the freeze
    caught it without one."""
    deadline = time.monotonic() + WAIT
    while True:
        wait_for_its_reader(process, db_path, log_path)
        process.send_signal(signal.SIGSTOP)
        if holds_a_wal_reader(process, db_path):
            return
        process.send_signal(signal.SIGCONT)
        assert time.monotonic() < deadline, "Litestream never froze holding its read transaction"


def start_litestream(processes, litestream_bin, env, log_path):
    with open(log_path, "a") as log:
        return processes.start(
            [litestream_bin, "replicate", "-config", REPO / "docker" / "litestream.yml"],
            env=env, stdout=log, stderr=log)


def test_writes_resume_once_a_stuck_litestream_is_restarted(porch_bin, litestream_bin, processes, tmp_path):
    import websockets

    data = tmp_path / "data"
    run([porch_bin, "--data-dir", data, "migrate"])
    site = json.loads(run([porch_bin, "--data-dir", data, "site", "add", "--name", "Wal",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    server = Server(processes.start(
        [porch_bin, "--data-dir", data, "serve", "--listen", "127.0.0.1:0", "--log", "info"],
        env={"PORCH_WAL_LIMIT": str(LIMIT)}, stderr=subprocess.PIPE))
    server.wait_ready()
    env = {"PORCH_DATA_DIR": str(data), "LITESTREAM_REPLICA_URL": f"file://{tmp_path / 'replica'}",
           "LITESTREAM_SYNC_INTERVAL": "1s", "LITESTREAM_SOCKET": str(tmp_path / "ls.sock"),
           "LITESTREAM_METRICS_ADDR": ""}
    log_path = tmp_path / "litestream.log"
    db, wal = data / "porch.db", data / "porch.db-wal"

    async def scenario():
        url = f"ws://{server.addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["type"] == "welcome"
            litestream = start_litestream(processes, litestream_bin, env, log_path)
            assert (await send(ws, "before the stall"))["type"] == "ack"
            freeze_holding_its_reader(litestream, db, log_path)
            grow_wal(db, 140)
            assert wal.stat().st_size > LIMIT
            refused = await send(ws, "while the WAL is past the ceiling")
            assert (refused["type"], refused.get("code")) == ("error", "unavailable"), refused

            # `docker compose restart litestream`: the stuck one goes, a new one comes. Porch is
            # paused meanwhile, so that none of its own writes (a capacity sample, a job) gets
            # the TRUNCATE through in the gap, as none did in the drill.
            pause_outside_a_checkpoint(server.process, db)
            try:
                litestream.kill()
                litestream.wait(timeout=WAIT)
                restart_wal(db)
                assert wal.stat().st_size > LIMIT, "the restarted WAL keeps its file"
                wait_for_its_reader(start_litestream(processes, litestream_bin, env, log_path), db, log_path)
            finally:
                server.process.send_signal(signal.SIGCONT)

            started = time.monotonic()
            while (answer := await send(ws, "after the restart"))["type"] != "ack":
                # Refused (the WAL) or braked (this visitor's retries): wait as told.
                assert answer.get("code") in ("unavailable", "rate_limited"), answer
                assert time.monotonic() - started < WAIT, (
                    "writes never resumed:\n" + "".join(server.log[-20:]) + log_path.read_text()[-2000:])
                await asyncio.sleep(max(answer.get("retry_after_ms", 0), 500) / 1000)
            return time.monotonic() - started

    waited = asyncio.run(scenario())
    assert waited < 5, waited
    assert any("accepting writes again" in line for line in server.log), "".join(server.log[-20:])
