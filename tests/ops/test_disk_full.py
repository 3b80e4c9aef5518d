"""A full disk, for real: Porch's data directory on a small tmpfs filled to the last byte. No
message is acknowledged that was not stored, readiness says `disk_full`, and once space returns
the same message goes through without a restart. Needs root (to mount the tmpfs), as CI has.
"""

import asyncio
import json
import os
import signal
import subprocess
import urllib.request
import time
import uuid

import pytest

from conftest import WAIT, run

ORIGIN = "https://full.example"


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk) -> None:
    """Writes a ballast file until the filesystem has no byte left (unbuffered, so the last
    partial write is not lost in a buffer)."""
    fd = os.open(disk / "ballast", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            block = b"\0" * size
            try:
                while os.write(fd, block) == size:
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)


async def send(ws, client_id: str, body: str) -> dict:
    await ws.send(json.dumps({"type": "message", "client_id": client_id, "body": body}))
    return json.loads(await asyncio.wait_for(ws.recv(), WAIT))


async def fill_until_refused(ws, disk, server) -> None:
    """Fills the disk, then sends large messages until one is refused (SQLite's page cache takes
    the first few); readiness then says `disk_full`."""
    fill(disk)
    for i in range(200):
        if (await send(ws, f"full-{i}", "x" * 3900))["type"] != "ack":
            break
    else:
        raise AssertionError("the full disk was never noticed")
    assert server.get("/readyz")[1].get("reason") == "disk_full"


def test_a_full_disk_refuses_without_acking_and_recovers_without_a_restart(porch_bin, processes, small_disk):
    import websockets

    site = json.loads(run([porch_bin, "--data-dir", small_disk, "site", "add", "--name", "Full",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    server = processes.serve(porch_bin, small_disk)
    server.wait_ready()

    async def scenario():
        url = f"ws://{server.addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["type"] == "welcome"
            first = await send(ws, "before", "stored before the disk fills")
            assert first["type"] == "ack", first

            fill(small_disk)
            acked, refused = [first], None
            # Larger bodies spill out of SQLite's page cache quickly; a few tries hit the wall.
            for i in range(200):
                answer = await send(ws, f"full-{i}", "x" * 3900)
                if answer["type"] == "ack":
                    acked.append(answer)
                    continue
                assert answer["code"] == "unavailable", answer
                assert answer["retry_after_ms"] > 0
                refused = answer
                break
            assert refused is not None, "the full disk was never noticed"
            status, body = server.get("/readyz")
            assert (status, body.get("reason")) == (503, "disk_full"), body
            assert server.get("/healthz")[0] == 200, "still alive"

            (small_disk / "ballast").unlink()
            again = await send(ws, refused["client_id"], "x" * 3900)
            assert again["type"] == "ack", again
            acked.append(again)
            assert server.get("/readyz")[0] == 200
            return acked

    acked = asyncio.run(scenario())
    processes.kill_all()
    report = run([porch_bin, "check", "--db", small_disk / "porch.db"]).stdout
    assert "ok" in report.lower(), report
    import sqlite3
    db = sqlite3.connect(small_disk / "porch.db")
    stored = {row[0] for row in db.execute("SELECT id FROM messages")}
    assert {a["id"] for a in acked} <= stored, "every acknowledged message is on disk"


def counted(log: list[str], line: str, summary: str) -> int:
    """The refusals `log` accounts for: one per `line`, plus the `left_out` field of each `line`
    and `summary` (the ones held back since the previous line)."""
    import re

    found = [entry for entry in log if line in entry or summary in entry]
    counts = [int(m.group(1)) for entry in found if (m := re.search(r"left_out=(\d+)", entry))]
    assert len(counts) == len(found), "a line without left_out:\n" + "".join(found)
    return sum(1 for entry in found if line in entry) + sum(counts)


def api_post(server, token: str, path: str, body: dict) -> int:
    request = urllib.request.Request(server.url(path), data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_a_full_disk_logs_few_errors_and_readiness_returns_without_traffic(porch_bin, processes, small_disk):
    """While the disk is full, failed batches and refused messages and requests are summed up
    instead of logged one by one, and every refusal is counted by the time the server stops; once
    space returns, readiness comes back by itself (a probe), without a message to commit."""
    import time

    import websockets

    site = json.loads(run([porch_bin, "--data-dir", small_disk, "site", "add", "--name", "Full",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    subprocess.run([str(porch_bin), "--data-dir", str(small_disk), "user", "add", "--email", "ana@example.com",
                    "--name", "Ana", "--role", "admin", "--password-stdin"],
                   input="correct horse battery staple\n", text=True, capture_output=True, timeout=WAIT, check=True)
    token = run([porch_bin, "--data-dir", small_disk, "token", "add", "--user", "ana@example.com"]).stdout.strip()
    # No brakes: every retry below must reach the writer and fail there, as under real load.
    import sqlite3
    with sqlite3.connect(small_disk / "porch.db") as db:
        db.execute("UPDATE sites SET visitor_messages_per_minute = 1000000, visitor_burst = 1000000, "
                   "flood_messages_per_minute = 1000000, flood_conversations_per_minute = 1000000")
    server = processes.serve(porch_bin, small_disk)
    server.wait_ready()

    async def scenario():
        url = f"ws://{server.addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["type"] == "welcome"
            # The conversation the API client answers in.
            assert (await send(ws, "before", "stored before the disk fills"))["type"] == "ack"
            await fill_until_refused(ws, small_disk, server)

            # Two seconds of a full disk with a visitor retrying all the time, and an API client.
            logged = len(server.log)
            refused = 0
            end = time.monotonic() + 2
            while time.monotonic() < end:
                answer = await send(ws, f"retry-{refused}", "x" * 3900)
                assert answer.get("code") == "unavailable", answer
                refused += 1
            posted = [api_post(server, token, "/api/v1/conversations/1/messages", {"body": f"reply {i}"})
                      for i in range(30)]
            assert posted == [503] * 30, posted
            # Neither the writer's lines nor the connections' and requests' (one per refusal before).
            errors = [line for line in server.log[logged:] if " ERROR " in line or " WARN " in line]
            assert refused > 100, f"only {refused} refusals: the test proves nothing"
            assert len(errors) <= 6, f"{len(errors)} lines for {refused + 30} refusals:\n" + "".join(errors[:20])
            return refused + 1  # and the one that found the disk full


    refused = asyncio.run(scenario())
    (small_disk / "ballast").unlink()
    # No traffic at all from here on: readiness must come back by itself.
    deadline = time.monotonic() + 5
    while server.get("/readyz")[0] != 200:
        assert time.monotonic() < deadline, "still not ready 5 s after space returned"
        time.sleep(0.05)
    # Stopped within seconds, so before any 10 s summary: what was held back is told at the stop.
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0
    time.sleep(0.2)  # the log reader's last lines
    told = counted(server.log, "a visitor message was not stored",
                   "visitor messages not stored, without a line of their own")
    assert told == refused, f"the log counts {told} of {refused} refused messages:\n" + "".join(server.log)
    told = counted(server.log, "storage unavailable error=", "requests refused (storage unavailable)")
    assert told == 30, f"the log counts {told} of 30 refused requests:\n" + "".join(server.log)


def test_a_commit_that_squeezes_in_does_not_make_a_full_disk_ready(porch_bin, processes, small_disk):
    """A small write can still commit on a disk with a few pages left (or in space the WAL file
    already holds). That must not make readiness say the box takes traffic again while the next
    real message cannot be stored: only room for a few batches clears `disk_full`."""
    import time

    import websockets

    site = json.loads(run([porch_bin, "--data-dir", small_disk, "site", "add", "--name", "Full",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    server = processes.serve(porch_bin, small_disk)
    server.wait_ready()

    async def scenario():
        url = f"ws://{server.addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["type"] == "welcome"
            await fill_until_refused(ws, small_disk, server)

            # Room for a short message, far from the 256 KiB that counts as room again.
            ballast = small_disk / "ballast"
            os.truncate(ballast, ballast.stat().st_size - 128 * 1024)
            small = await send(ws, "squeezed-in", "a")
            assert small["type"] == "ack", small
            for _ in range(3):
                status, body = server.get("/readyz")
                assert (status, body.get("reason")) == (503, "disk_full"), body
                await asyncio.sleep(0.5)
            with urllib.request.urlopen(server.url("/metrics"), timeout=5) as response:
                metrics = response.read().decode()
            gauge = [line for line in metrics.splitlines() if line.startswith("porch_writer_disk_full ")]
            assert gauge == ["porch_writer_disk_full 1"], gauge

            ballast.unlink()
            deadline = time.monotonic() + 5
            while server.get("/readyz")[0] != 200:
                assert time.monotonic() < deadline, "still not ready 5 s after space returned"
                await asyncio.sleep(0.05)

    asyncio.run(scenario())


def test_a_first_start_on_a_full_disk_leaves_no_key_file_and_starts_once_space_returns(porch_bin, processes, small_disk):
    """The sealing key is generated at the first start: on a full disk that start fails, and
    must leave no empty key file behind, which would stop every later start."""
    data = small_disk / "data"
    run([porch_bin, "--data-dir", data, "site", "add", "--name", "Full", "--origin", ORIGIN,
         "--public-url", "http://127.0.0.1"])
    fill(small_disk)
    failed = run([porch_bin, "--data-dir", data, "serve", "--listen", "127.0.0.1:0"], check=False)
    assert failed.returncode != 0, failed.stderr
    assert "secret.key" in failed.stderr, failed.stderr
    assert f"the disk holding {data} is full" in failed.stderr, failed.stderr
    assert sorted(p.name for p in data.iterdir() if "secret" in p.name) == [], list(data.iterdir())

    (small_disk / "ballast").unlink()
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    assert len((data / "secret.key").read_text().strip()) == 44


def test_a_restart_on_a_full_disk_says_the_disk_is_full(porch_bin, processes, small_disk):
    """A server stopped and started again once the disk filled up: SQLite alone says only
    "disk I/O error" (it cannot size the -shm file), which sends an operator after a broken
    disk. The error must name the cause and the directory, and the start must work once space
    returns."""
    data = small_disk / "data"
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=WAIT)
    fill(small_disk)
    failed = run([porch_bin, "--data-dir", data, "serve", "--listen", "127.0.0.1:0"], check=False)
    assert failed.returncode != 0, failed.stderr
    error = failed.stderr.strip().splitlines()[-1]
    assert error.startswith(f"error: the disk holding {data} is full: free some space on it"), error

    (small_disk / "ballast").unlink()
    processes.serve(porch_bin, data).wait_ready()


def test_a_restart_that_opens_on_a_full_disk_is_not_ready_until_there_is_room(porch_bin, processes, small_disk):
    """Killed (its -wal and -shm left in place), then started again on a disk filled meanwhile:
    SQLite opens the database without growing a file, so the start works. It must not say ready
    while nothing can be stored (an operator's drill found /readyz at 200 until the first write
    failed), and it must become ready by itself once space returns."""
    data = small_disk / "data"
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=WAIT)
    fill(small_disk)
    again = processes.serve(porch_bin, data)
    deadline = time.monotonic() + WAIT
    while True:
        try:
            status, body = again.get("/readyz")
            break
        except OSError:
            if again.process.poll() is not None:
                pytest.skip("this SQLite could not open the database on the full disk: "
                            "the start fails as the test above checks")
            assert time.monotonic() < deadline, "".join(again.log)
            time.sleep(0.05)
    assert (status, body.get("reason")) == (503, "disk_full"), body
    assert any("the disk holding the database is full" in line for line in again.log), "".join(again.log)

    (small_disk / "ballast").unlink()
    again.wait_ready()


def test_commands_on_a_full_disk_say_the_disk_is_full(porch_bin, small_disk):
    """An operator's commands on a full disk named SQLite's words only ("database or disk is
    full: Error code 13", "disk I/O error"); each says the cause and the directory first."""
    data = small_disk / "data"
    run([porch_bin, "--data-dir", data, "site", "add", "--name", "Full", "--origin", ORIGIN,
         "--public-url", "http://127.0.0.1"])
    subprocess.run([str(porch_bin), "--data-dir", str(data), "user", "add", "--email", "b@example.org",
                    "--name", "B", "--role", "admin", "--password-stdin"], input="pw-long-enough-1\n",
                   capture_output=True, text=True, timeout=WAIT, check=True)
    fill(small_disk)

    def last_error(args):
        failed = subprocess.run([str(porch_bin), "--data-dir", str(data), *args], input="pw-long-enough-1\n",
                                capture_output=True, text=True, timeout=WAIT)
        assert failed.returncode != 0, failed.stderr
        return failed.stderr.strip().splitlines()[-1]

    for args in (["user", "add", "--email", "a@example.org", "--name", "A", "--role", "admin"],
                 ["token", "add", "--user", "b@example.org"],
                 ["migrate"]):
        error = last_error(args)
        assert error.startswith(f"error: the disk holding {data} is full"), (args, error)
    # Nearly full (room to open the database, not for the disk probe's 256 KiB): a refusal that
    # is not the disk's is not blamed on it.
    ballast = small_disk / "ballast"
    os.truncate(ballast, ballast.stat().st_size - 128 * 1024)
    assert last_error(["token", "add", "--user", "nobody@example.org"]) == \
        "error: no user has the email nobody@example.org"


def test_uploads_stop_short_of_a_full_disk_while_messages_go_on(porch_bin, processes, small_disk):
    """Visitors' files are what strangers can store in bulk: with less than the reserve left (5 %
    of this 8 MiB disk), an upload is refused with 503 `unavailable`, while messages are still
    acknowledged; once space returns, uploads are taken again."""
    import websockets

    site = json.loads(run([porch_bin, "--data-dir", small_disk, "site", "add", "--name", "Full",
                           "--origin", ORIGIN, "--public-url", "http://127.0.0.1", "--json"]).stdout)["key"]
    server = processes.serve(porch_bin, small_disk)
    server.wait_ready()

    def upload(token: str) -> int:
        request = urllib.request.Request(
            f"http://{server.addr}/widget/attachments?site={site}&name=note.txt",
            data=b"a small file\n" * 80, method="POST",
            headers={"Origin": ORIGIN, "Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as answer:
                return answer.status
        except urllib.error.HTTPError as refused:
            assert refused.status != 503 or json.loads(refused.read())["error"]["code"] == "unavailable"
            return refused.status

    async def scenario():
        url = f"ws://{server.addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            token = json.loads(await asyncio.wait_for(ws.recv(), WAIT))["token"]
            assert upload(token) == 201

            # Leave about 300 KiB: under the reserve (5 % of 8 MiB is 410 KiB), room for messages.
            stats = os.statvfs(small_disk)
            ballast = stats.f_bavail * stats.f_frsize - 300 * 1024
            with open(small_disk / "ballast", "wb") as f:
                f.write(b"\0" * ballast)
            assert upload(token) == 503
            answer = await send(ws, "while-low", "a message still goes through")
            assert answer["type"] == "ack", answer

            (small_disk / "ballast").unlink()
            assert upload(token) == 201

    asyncio.run(scenario())


def test_a_full_export_on_a_full_disk_says_its_output_is_whole(porch_bin, processes, small_disk):
    """`porch export --all` beside a running server reads; on a full disk only its record in the
    audit log cannot be written. It says the output is whole, so a script keeps a good export."""
    data = small_disk / "data"
    run([porch_bin, "--data-dir", data, "site", "add", "--name", "Full", "--origin", ORIGIN,
         "--public-url", "http://127.0.0.1"])
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    fill(small_disk)
    export = subprocess.run([str(porch_bin), "--data-dir", str(data), "export", "--all"],
                            capture_output=True, text=True, timeout=WAIT)
    assert export.returncode == 1, export
    assert export.stdout == "", "no conversations, nothing cut short"
    assert export.stderr.startswith(f"error: the disk holding {data} is full"), export.stderr
    assert ("the export is complete (0 conversation(s), 0 message(s) written), but recording it in "
            "the audit log failed") in export.stderr, export.stderr
