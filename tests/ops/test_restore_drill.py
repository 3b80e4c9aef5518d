"""The restore drill, as an operator would run it (docs/operations.md), with the real Litestream
and the repository's docker/litestream.yml: Porch takes chats over the widget protocol while
Litestream replicates to a local directory; both are killed with SIGKILL; the replica is restored
into a fresh directory, checked with `porch check`, served by a new Porch, and every message
acknowledged before Litestream's last confirmed sync is read back through the HTTP API.
"""

import asyncio
import json
import time
import uuid

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


def test_messages_acked_before_the_last_sync_survive_kill_and_restore(
    tmp_path, porch_bin, litestream_bin, processes
):
    config = REPO / "docker" / "litestream.yml"
    data, replica, restored = tmp_path / "data", tmp_path / "replica", tmp_path / "restored"
    db = data / "porch.db"
    litestream_env = {
        "PORCH_DATA_DIR": str(data),
        "LITESTREAM_REPLICA_URL": f"file://{replica}",
        "LITESTREAM_SYNC_INTERVAL": "1s",
        "LITESTREAM_SOCKET": str(tmp_path / "litestream.sock"),
    }
    timings = {}

    # A site, then Porch, then Litestream attached to the database Porch created (compose's order).
    site = json.loads(run([porch_bin, "--data-dir", data, "site", "add", "--name", "Drill",
                           "--origin", ORIGIN, "--json"]).stdout)["key"]
    server = processes.serve(porch_bin, data)
    server.wait_ready()
    with open(tmp_path / "litestream.log", "w") as log:
        litestream = processes.start([litestream_bin, "replicate", "-config", config],
                                     env=litestream_env, stdout=log, stderr=log)
    deadline = time.monotonic() + WAIT
    while run([litestream_bin, "info", "-socket", litestream_env["LITESTREAM_SOCKET"]],
              check=False).returncode != 0:
        assert litestream.poll() is None, "litestream exited"
        assert time.monotonic() < deadline, "litestream's control socket never answered"
        time.sleep(0.1)

    # Phase 1: chats, then a sync confirmed by Litestream. Everything acked so far must survive.
    synced = asyncio.run(chat(server.addr, site, VISITORS_SYNCED, "synced"))
    started = time.monotonic()
    run([litestream_bin, "sync", "-wait", "-timeout", "20",
         "-socket", litestream_env["LITESTREAM_SOCKET"], db])
    timings["sync_wait_s"] = time.monotonic() - started

    # Phase 2: more chats, then SIGKILL at once. These may or may not have reached the replica.
    unsynced = asyncio.run(chat(server.addr, site, VISITORS_UNSYNCED, "unsynced"))
    processes.kill_all()

    started = time.monotonic()
    run([litestream_bin, "restore", "-config", config, "-o", restored / "porch.db", db],
        env=litestream_env)
    timings["restore_s"] = time.monotonic() - started
    check = run([porch_bin, "check", "--db", restored / "porch.db"], check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "result          ok" in check.stdout

    # Porch on the restored file, read back through the API with a new agent's token.
    run([porch_bin, "--data-dir", restored, "user", "add", "--email", "drill@example.com",
         "--name", "Drill", "--role", "agent"])
    token = run([porch_bin, "--data-dir", restored, "token", "add", "--user",
                 "drill@example.com"]).stdout.strip()
    server = processes.serve(porch_bin, restored)
    server.wait_ready()
    status, listing = server.get("/api/v1/conversations", token)
    assert status == 200, listing
    found = {}
    for conversation in listing["conversations"]:
        status, messages = server.get(f"/api/v1/conversations/{conversation['id']}/messages", token)
        assert status == 200, messages
        found.update({m["id"]: m["body"] for m in messages["messages"]})

    missing = [ack for ack in synced if found.get(ack["id"]) != ack["body"]]
    assert not missing, f"{len(missing)} of {len(synced)} synced acks missing: {missing[:5]}"
    unsynced_restored = sum(1 for ack in unsynced if found.get(ack["id"]) == ack["body"])
    print(
        f"\nrestore drill: {len(synced)} acked before the sync, all restored; "
        f"{unsynced_restored} of {len(unsynced)} acked after it restored; "
        f"sync -wait {timings['sync_wait_s']:.2f}s, restore {timings['restore_s']:.2f}s"
    )
