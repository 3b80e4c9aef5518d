"""The restore drill, as an operator would run it (docs/operations.md), with the real Litestream
and the repository's docker/litestream.yml: Porch takes chats over the widget protocol while
Litestream replicates to a local directory; both are killed with SIGKILL; the replica is restored
into a fresh directory, checked with `porch check`, served by a new Porch, and every message
acknowledged before Litestream's last confirmed sync is read back through the HTTP API.
"""

import asyncio
import json
import os
import re
import shlex
import time
import uuid
from pathlib import Path

from conftest import REPO, WAIT, run

ORIGIN = "http://drill.example"
# Visitors and messages per phase: within the default brakes (a visitor's burst is 10 messages,
# an IP address may open 20 conversations at once).
VISITORS_SYNCED, VISITORS_UNSYNCED, MESSAGES_EACH = 8, 4, 8


async def chat(addr: str, site: str, visitors: int, label: str) -> list[dict]:
    """Each visitor opens a conversation and sends MESSAGES_EACH messages; returns the acks."""
    import websockets

    async def visitor(n: int) -> list[dict]:
        acked = []
        url = f"ws://{addr}/widget/ws?site={site}"
        async with websockets.connect(url, origin=ORIGIN, open_timeout=WAIT) as ws:
            await ws.send(json.dumps({"type": "hello", "v": 1}))
            welcome = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
            assert welcome["type"] == "welcome", welcome
            for i in range(MESSAGES_EACH):
                body = f"{label} visitor {n} message {i}"
                client_id = uuid.uuid4().hex
                await ws.send(json.dumps({"type": "message", "client_id": client_id, "body": body}))
                answer = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
                assert answer["type"] == "ack", answer
                assert answer["client_id"] == client_id
                acked.append({"id": answer["id"], "body": body})
        return acked

    results = await asyncio.gather(*(visitor(n) for n in range(visitors)))
    return [ack for acks in results for ack in acks]


class Replicated:
    """Porch on `tmp_path/data` with a site, and Litestream replicating it to `tmp_path/replica`
    through docker/litestream.yml, started in compose's order."""

    def __init__(self, tmp_path, porch_bin, litestream_bin, processes):
        self.config = REPO / "docker" / "litestream.yml"
        self.data = tmp_path / "data"
        self.db = self.data / "porch.db"
        self.litestream_bin, self.porch_bin = litestream_bin, porch_bin
        self.env = {
            "PORCH_DATA_DIR": str(self.data),
            "LITESTREAM_REPLICA_URL": f"file://{tmp_path / 'replica'}",
            "LITESTREAM_SYNC_INTERVAL": "1s",
            "LITESTREAM_SOCKET": str(tmp_path / "litestream.sock"),
        }
        self.site = json.loads(run([porch_bin, "--data-dir", self.data, "site", "add", "--name",
                                    "Drill", "--origin", ORIGIN, "--json"]).stdout)["key"]
        self.server = processes.serve(porch_bin, self.data)
        self.server.wait_ready()
        with open(tmp_path / "litestream.log", "w") as log:
            self.litestream = processes.start(
                [litestream_bin, "replicate", "-config", self.config],
                env=self.env, stdout=log, stderr=log)
        deadline = time.monotonic() + WAIT
        while run([litestream_bin, "info", "-socket", self.env["LITESTREAM_SOCKET"]],
                  check=False).returncode != 0:
            assert self.litestream.poll() is None, "litestream exited"
            assert time.monotonic() < deadline, "litestream's control socket never answered"
            time.sleep(0.1)

    def sync_command(self) -> list:
        return [self.litestream_bin, "sync", "-wait", "-timeout", "20",
                "-socket", self.env["LITESTREAM_SOCKET"], self.db]

    def restore(self, output: Path, *flags) -> None:
        run([self.litestream_bin, "restore", "-config", self.config, *flags, "-o", output,
             self.db], env=self.env)


def read_back(porch_bin, processes, data_dir: Path) -> dict:
    """Every message of the database in `data_dir` as {id: body}, through a new Porch's API."""
    # One agent per directory: a restored file may hold the agent of an earlier read-back.
    email = f"drill-{data_dir.name}@example.com"
    run([porch_bin, "--data-dir", data_dir, "user", "add", "--email", email,
         "--name", "Drill", "--role", "agent"])
    token = run([porch_bin, "--data-dir", data_dir, "token", "add", "--user",
                 email]).stdout.strip()
    # As the drill says: a restored copy must not deliver production's queued jobs again.
    server = processes.serve(porch_bin, data_dir, "--pause-deliveries")
    server.wait_ready()
    status, listing = server.get("/api/v1/conversations", token)
    assert status == 200, listing
    found = {}
    for conversation in listing["conversations"]:
        status, messages = server.get(f"/api/v1/conversations/{conversation['id']}/messages", token)
        assert status == 200, messages
        found.update({m["id"]: m["body"] for m in messages["messages"]})
    return found


def test_messages_acked_before_the_last_sync_survive_kill_and_restore(
    tmp_path, porch_bin, litestream_bin, processes
):
    pair = Replicated(tmp_path, porch_bin, litestream_bin, processes)
    server, site, restored = pair.server, pair.site, tmp_path / "restored"
    timings = {}

    # Phase 1: chats, then a sync confirmed by Litestream. Everything acked so far must survive.
    synced = asyncio.run(chat(server.addr, site, VISITORS_SYNCED, "synced"))
    started = time.monotonic()
    run(pair.sync_command())
    timings["sync_wait_s"] = time.monotonic() - started

    # Phase 2: more chats, then SIGKILL at once. These may or may not have reached the replica.
    unsynced = asyncio.run(chat(server.addr, site, VISITORS_UNSYNCED, "unsynced"))
    processes.kill_all()

    started = time.monotonic()
    # Under the umask the drill sets: Litestream creates the copy with it, so no other user of
    # the machine can read it.
    umask = os.umask(0o077)
    try:
        pair.restore(restored / "porch.db")
    finally:
        os.umask(umask)
    timings["restore_s"] = time.monotonic() - started
    assert (restored / "porch.db").stat().st_mode & 0o777 == 0o600
    check = run([porch_bin, "check", "--db", restored / "porch.db"], check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "result          ok" in check.stdout

    found = read_back(porch_bin, processes, restored)
    missing = [ack for ack in synced if found.get(ack["id"]) != ack["body"]]
    assert not missing, f"{len(missing)} of {len(synced)} synced acks missing: {missing[:5]}"
    unsynced_restored = sum(1 for ack in unsynced if found.get(ack["id"]) == ack["body"])
    print(
        f"\nrestore drill: {len(synced)} acked before the sync, all restored; "
        f"{unsynced_restored} of {len(unsynced)} acked after it restored; "
        f"sync -wait {timings['sync_wait_s']:.2f}s, restore {timings['restore_s']:.2f}s"
    )


def test_a_rollback_restores_exactly_the_txid_noted_before_the_upgrade(
    tmp_path, porch_bin, litestream_bin, processes
):
    """docs/operations.md, Upgrade: Porch stopped, `sync -wait` prints the replica's txid in
    decimal, the documented awk turns it into the 16 hex digits `restore -txid` wants. Chats after
    that (the new version's) are replicated too; the rollback must bring back every message
    before the upgrade and none after, whatever the clock did. `-timestamp` (whole seconds,
    matched on file times) lost confirmed messages here."""
    pair = Replicated(tmp_path, porch_bin, litestream_bin, processes)
    before = asyncio.run(chat(pair.server.addr, pair.site, VISITORS_UNSYNCED, "before"))
    # Step 1 of the upgrade, the documented pipeline verbatim except for `docker compose exec`.
    noted = run(["sh", "-c", shlex.join(map(str, pair.sync_command()))
                 + " | awk '/^replica_txid:/ { printf \"%016x\\n\", $2 }'"]).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{16}", noted), noted
    # The new version runs and writes; all of it reaches the replica.
    after = asyncio.run(chat(pair.server.addr, pair.site, VISITORS_UNSYNCED, "after"))
    run(pair.sync_command())
    processes.kill_all()

    restored = tmp_path / "rolled-back"
    pair.restore(restored / "porch.db", "-txid", noted)
    found = read_back(porch_bin, processes, restored)
    missing = [ack for ack in before if found.get(ack["id"]) != ack["body"]]
    assert not missing, f"{len(missing)} of {len(before)} acks before the upgrade missing"
    leaked = [ack for ack in after if ack["id"] in found]
    assert not leaked, f"{len(leaked)} messages from after the noted txid restored"

    # Litestream goes on replicating the rolled-back file into the same replica: the latest state
    # is then the rolled-back one plus what came since, never the abandoned upgrade's writes.
    processes.kill_all()
    pair.env["PORCH_DATA_DIR"] = str(restored)
    pair.db = restored / "porch.db"
    with open(tmp_path / "litestream-after.log", "w") as log:
        processes.start([litestream_bin, "replicate", "-config", pair.config], env=pair.env,
                        stdout=log, stderr=log)
    server = processes.serve(porch_bin, restored)
    server.wait_ready()
    since = asyncio.run(chat(server.addr, pair.site, 2, "since"))
    deadline = time.monotonic() + WAIT
    while run(pair.sync_command(), check=False).returncode != 0:
        assert time.monotonic() < deadline, "litestream never synced the rolled-back file"
        time.sleep(0.1)
    processes.kill_all()
    latest = tmp_path / "latest"
    pair.restore(latest / "porch.db")
    found = read_back(porch_bin, processes, latest)
    assert all(found.get(ack["id"]) == ack["body"] for ack in before + since)
    assert not [ack for ack in after if found.get(ack["id"]) == ack["body"]]
